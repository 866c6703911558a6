"""Portals (core/compile/vis/portals.py) against independent ground truth (tests/core/portal_truth.py):

- areas: for every empty cell, its portals + its structural faces (+ what it shares with cells
  wholly inside detail) add up to the boundary area of its polytope (the world box cut by its
  ancestors' half-spaces, built by scipy);
- dense sampling: points on every portal lie on both its cells' polytopes, and nudged 1e-4 m to
  either side they land (point tree) in the portal's two clusters and outside every structural
  brush (brute force);
- windings: convex, counter-clockwise from the front, on their plane, clusters ordered;
- every sample scene and map (the three biggest maps are marked slow), hypothesis scenes of random
  boxes and polytopes (structural and detail), and hand-made scenes with known answers.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.compile.vis.portals import build_portals, cell_portals
from brushbake.core.errors import CancelledError, DegenerateBrushError
from brushbake.core.model.brushes import Contents, box_brush, brush_from_planes
from brushbake.core.model.scene import Scene, Settings

import portal_truth as pt

BIG_MAPS = {"e3m4.map", "q1_mountain.map", "lq_e0m3.map"}


def structural(scene):
    return [b for b in scene.brushes if b.contents == Contents.SOLID]


def check_level(scene, level, truth, seed=0, per_portal=20):
    portals = build_portals(level)
    problems = pt.check_windings(level, portals)
    area_problems, cells = pt.check_areas(level, portals, cell_portals(level))
    problems += area_problems
    sample_problems, judged = pt.check_samples(level, portals, truth.brush_arrays(structural(scene)), truth,
                                               np.random.default_rng(seed), per_portal=per_portal)
    problems += sample_problems
    return portals, problems, cells, judged


def _check_compiled(compiled, truth, name):
    portals, problems, cells, judged = check_level(compiled.scene, compiled.level, truth, zlib.crc32(name.encode()))
    assert not problems, f"{name}:\n" + "\n".join(problems[:20])
    assert cells == portals.num_clusters  # every empty cluster's cell was checked
    assert portals.num_portals == 0 or judged > 0


def test_sample_scene_portals_agree_with_ground_truth(sample_path, levels, truth):
    _check_compiled(levels.get(sample_path), truth, sample_path.name)


def test_map_portals_agree_with_ground_truth(map_path, levels, truth):
    if map_path.name in BIG_MAPS:
        pytest.skip("a big map: test_big_map_portals_agree_with_ground_truth checks it (-m slow)")
    _check_compiled(levels.get(map_path), truth, map_path.name)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BIG_MAPS))
def test_big_map_portals_agree_with_ground_truth(name, map_named, levels, truth, request):
    if "slow" not in (request.config.getoption("-m") or ""):
        pytest.skip("20-30 s each: run with -m slow")
    _check_compiled(levels.get(map_named(name)), truth, name)


# --------------------------------------------------------------------------------------------
# Random scenes

CONTENTS = [Contents.SOLID] * 4 + [Contents.DETAIL] * 2
grid = st.integers(-8, 8).map(lambda k: k * 0.25)
extent = st.integers(1, 8).map(lambda k: k * 0.25)
normal = st.one_of(st.tuples(st.integers(-2, 2), st.integers(-2, 2), st.integers(-2, 2)).filter(any),
                   st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 3).filter(lambda v: sum(x * x for x in v) > 0.05))


@st.composite
def brush_specs(draw):
    lo = np.array([draw(grid) for _ in range(3)])
    size = np.array([draw(extent) for _ in range(3)])
    cuts = draw(st.lists(st.tuples(normal, st.floats(0.15, 0.95)), max_size=3))
    return lo, size, tuple(cuts), draw(st.sampled_from(CONTENTS))


def build(spec, name):
    lo, size, cuts, contents = spec
    if not cuts:
        return box_brush(lo, lo + size, name, contents)
    centre, half = lo + size / 2, size / 2
    normals = [*np.eye(3), *-np.eye(3)]
    dists = [*(centre + half), *-(centre - half)]
    for n, frac in cuts:
        n = np.array(n, float) / np.linalg.norm(n)
        normals.append(n)
        dists.append(float(n @ centre) + frac * float(np.abs(n) @ half))
    try:
        return brush_from_planes(normals, dists, name, contents)
    except DegenerateBrushError:
        return None


@settings(max_examples=40, deadline=None, derandomize=True, report_multiple_bugs=False,
          phases=[Phase.explicit, Phase.generate, Phase.shrink], suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(brush_specs(), min_size=1, max_size=10), splitter=st.sampled_from(["onion", "thesis"]),
       seed=st.integers(0, 2**32 - 1))
def test_random_scenes_portals_agree_with_ground_truth(specs, splitter, seed, truth):
    brushes = [b for b in (build(s, f"b{i}") for i, s in enumerate(specs)) if b is not None]
    scene = Scene("random", brushes=brushes, settings=Settings(splitter=splitter))
    level = compile_scene(scene)
    portals, problems, cells, _ = check_level(scene, level, truth, seed, per_portal=30)
    assert not problems, "\n".join(problems[:20])
    assert cells == portals.num_clusters


# --------------------------------------------------------------------------------------------
# Hand-made scenes with known answers


def closed_room(lo, hi, t=1.0, skip=None):
    lo, hi = np.array(lo, float), np.array(hi, float)
    out = []
    for axis in range(3):
        for side in (0, 1):
            if skip == (axis, side):
                continue
            a, b = lo - t, hi + t
            if side == 0:
                b = b.copy()
                b[axis] = lo[axis]
            else:
                a = a.copy()
                a[axis] = hi[axis]
            out.append(box_brush(a, b, f"wall{'-+'[side]}{'xyz'[axis]}"))
    return out


def test_two_rooms_joined_by_a_door_have_the_door_as_portal_area(truth):
    """Two 4 m rooms side by side, the wall between them (x = 4..5) pierced by a 1 x 2 m door:
    the portals joining the two rooms' sides of the wall add up to the door's area on each face."""
    walls = closed_room((0, 0, 0), (9, 4, 4))
    wall = [box_brush((4, 0, 0), (5, 1.5, 4), "w1"), box_brush((4, 2.5, 0), (5, 4, 4), "w2"),
            box_brush((4, 1.5, 2), (5, 2.5, 4), "w3")]
    scene = Scene("door", brushes=walls + wall)
    level = compile_scene(scene)
    portals, problems, _, _ = check_level(scene, level, truth)
    assert not problems, "\n".join(problems)
    inner = portals.num_inner
    areas = portals.areas()[:inner]
    centres = portals.centres()[:inner]
    normals = portals.normals[:inner]
    indoors = np.all((centres[:, 1:] > 0) & (centres[:, 1:] < 4), axis=1)
    at = lambda x: indoors & (np.abs(centres[:, 0] - x) < 1e-9) & (np.abs(np.abs(normals[:, 0]) - 1) < 1e-12)  # noqa: E731
    assert areas[at(4.0)].sum() == pytest.approx(2.0, abs=1e-9)
    assert areas[at(5.0)].sum() == pytest.approx(2.0, abs=1e-9)


def test_an_empty_scene_is_one_cluster_with_six_void_portals():
    level = compile_scene(Scene("empty"))
    portals = build_portals(level)
    assert portals.num_clusters == 1 and portals.num_inner == 0 and portals.num_portals == 6
    assert np.all(portals.clusters == [0, portals.outside])
    lo, hi = level.world_bounds
    size = hi - lo
    assert portals.areas().sum() == pytest.approx(2 * (size[0] * size[1] + size[1] * size[2] + size[0] * size[2]))


def test_a_detail_filled_cell_gets_no_portals(truth):
    """A closed room filled exactly by one detail box: its structural cell is solid (nothing can
    stand there), so no portal reaches it; the outside shell keeps its portals."""
    scene = Scene("filled", brushes=closed_room((0, 0, 0), (4, 4, 4)) + [
        box_brush((0, 0, 0), (4, 4, 4), "filler", Contents.DETAIL)])
    level = compile_scene(scene)
    portals, problems, _, _ = check_level(scene, level, truth)
    assert not problems, "\n".join(problems)
    inside = level.leaf_cluster[int(np.flatnonzero(np.all(level.leaf_bounds[:, 0] >= -1e-9, axis=1)
                                                   & np.all(level.leaf_bounds[:, 1] <= 4 + 1e-9, axis=1))[0])]
    assert portals.cluster_of_level_cluster[inside] == -1


def test_detail_makes_no_portals(truth):
    """A detail pillar in a closed room: the room stays one cluster (its detail leaves share it),
    and the portal count is the same as without the pillar."""
    room = closed_room((0, 0, 0), (4, 4, 4))
    plain = build_portals(compile_scene(Scene("plain", brushes=room)))
    scene = Scene("pillar", brushes=room + [box_brush((1, 1, 0), (2, 2, 4), "pillar", Contents.DETAIL)])
    level = compile_scene(scene)
    portals, problems, _, _ = check_level(scene, level, truth)
    assert not problems, "\n".join(problems)
    assert level.num_leaves > compile_scene(Scene("plain", brushes=room)).num_leaves
    assert portals.num_clusters == plain.num_clusters and portals.num_portals == plain.num_portals
    room_cluster = {int(c) for c in portals.cluster_of_leaf[(portals.cluster_of_leaf >= 0)
                                                           & np.all(level.leaf_bounds[:, 1] <= 4 + 1e-9, axis=1)
                                                           & np.all(level.leaf_bounds[:, 0] >= -1e-9, axis=1)]}
    assert len(room_cluster) == 1


def test_building_portals_twice_gives_identical_arrays(levels, map_named):
    level = levels.get(map_named("lqdm13.map")).level
    a, b = build_portals(level), build_portals(level)
    for name in ("clusters", "plane", "normals", "dists", "first_vertex", "num_vertices", "vertices", "cluster_of_leaf"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def test_progress_and_cancel(levels, map_named):
    level = levels.get(map_named("lqdm13.map")).level
    seen = []
    build_portals(level, progress=lambda f, m: seen.append(f))
    assert seen and seen == sorted(seen) and seen[-1] == pytest.approx(1.0) and all(0 <= f <= 1 for f in seen)
    calls = []
    with pytest.raises(CancelledError):
        build_portals(level, cancel=lambda: calls.append(1) or len(calls) > 3)
