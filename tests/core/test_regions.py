"""Regions (core/compile/trees/regions.py): trees cut along a fixed world grid first, every cell's
subtree built from its own faces, faceless leaves decided by a point inside them.

Truth as everywhere: the brute force of tests/conftest.py (points and segments against every
brush) and the box-overlap truth of tests/core/onion_truth.py for the hulls, on hypothesis scenes
with cells far smaller than the scene (so every tree is cut many times, through brushes, rooms
and detail), on every sample scene, and on hand-made scenes for the cases a grid makes new: a
cell wholly inside a wall, a cell in the middle of a hall, detail across cell lines.  The maps
in maps/ run with the default cell (32 m) in the other truth tests.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.compile.trees.regions import LINE_MARGIN, MAX_CELLS_PER_AXIS, RegionGrid
from brushbake.core.formats.loaders import load_scene
from brushbake.core.model.brushes import Contents, box_brush
from brushbake.core.model.scene import Hull, Scene, Settings
from brushbake.core.runtime.query import point_solid
from test_bsp_ground_truth import build_brushes, closed_room, random_segments, scene_specs
from test_onion import hull_sets, random_scene_problems, scene_brushes

NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
#: cells far smaller than the hypothesis scenes (a few metres), on and off their 0.25 m grid
CELLS = st.sampled_from([0.5, 0.75, 1.3])


# -- the grid ------------------------------------------------------------------------------------

#: box faces on grid lines, a margin or a hair off them, and anywhere
EDGE = st.one_of(st.integers(-40, 40).map(float),
                 st.tuples(st.integers(-40, 40), st.sampled_from([LINE_MARGIN, -LINE_MARGIN, LINE_MARGIN / 2,
                                                                  1e-12, -1e-12, 5e-4])).map(lambda t: t[0] + t[1]),
                 st.floats(-50, 50, allow_nan=False))


def _lines_by_brute_force(size, lo, hi):
    """Every whole k near the interval with lo + LINE_MARGIN < k * size < hi - LINE_MARGIN."""
    ks = range(math.floor(lo / size) - 3, math.ceil(hi / size) + 4)
    return [k for k in ks if lo + LINE_MARGIN < k * size < hi - LINE_MARGIN]


@settings(max_examples=300, deadline=None)
@given(size=st.sampled_from([1.0, 0.75, 1.3, 2.0, 64.0, 0.1]),
       boxes=st.lists(st.tuples(*[st.tuples(EDGE, EDGE)] * 3), min_size=1, max_size=20))
def test_the_grid_cuts_boxes_at_their_middle_lines(size, boxes):
    """The lines inside each box and where the grid cuts it (the tree builder asks for every item
    of a level at once), against the lines found by trying every whole number near the box: the
    axis crossing the most lines (x before y before z on a tie), its middle line; boxes on, a
    margin off and a hair off the lines."""
    g = RegionGrid(size)
    arr = np.array([[[min(a), min(b), min(c)], [max(a), max(b), max(c)]] for a, b, c in boxes])
    cut, axis, position = g.splits_of(arr)
    first, count = g.all_lines_inside(arr[:, 0].ravel(), arr[:, 1].ravel())
    for k, box in enumerate(arr):
        lines = [_lines_by_brute_force(size, box[0, a], box[1, a]) for a in range(3)]
        for a in range(3):
            assert int(count[3 * k + a]) == len(lines[a])
            if lines[a]:
                assert int(first[3 * k + a]) == lines[a][0] and lines[a] == list(range(lines[a][0], lines[a][-1] + 1))
        best = max(range(3), key=lambda a: (len(lines[a]), -a))
        assert bool(cut[k]) == bool(lines[best])
        if lines[best]:
            want = (best, lines[best][(len(lines[best]) - 1) // 2] * size)
            assert (int(axis[k]), float(position[k])) == want == g.split_of(box)
        else:
            assert g.split_of(box) is None


def test_lines_exactly_a_margin_inside_the_box_do_not_cut_it():
    """A line at exactly lo + LINE_MARGIN (or hi - LINE_MARGIN) is not strictly inside: the first
    guess from the division is corrected against the products k * size."""
    for size in (1.0, 0.5, 0.25, 64.0):
        for k in range(-3, 4):
            lo, hi = k * size - LINE_MARGIN, (k + 3) * size + LINE_MARGIN
            got = RegionGrid(size).lines_inside(lo, hi)
            want = _lines_by_brute_force(size, lo, hi)
            assert got == ((want[0], len(want)) if want else (got[0], 0))


def test_no_grid_without_a_region_size():
    assert RegionGrid.for_world(0.0, np.array([[0.0] * 3, [100.0] * 3])) is None


def test_lines_inside_leave_the_box_faces_alone():
    g = RegionGrid(1.0)
    assert g.lines_inside(0.0, 3.0) == (1, 2)  # 1 and 2; 0 and 3 lie on the box
    assert g.lines_inside(-0.5, 0.5) == (0, 1)
    assert g.lines_inside(0.9995, 2.0005)[1] == 0  # both lines within the margin
    first, count = g.lines_inside(1.0 - LINE_MARGIN / 2, 3.0)
    assert (first, count) == (2, 1)  # the line at 1 is within the margin of the box: no sliver


def test_split_is_the_middle_line_of_the_axis_crossing_most():
    g = RegionGrid(2.0)
    assert g.split_of(np.array([[-1.0, 0.5, 0.5], [9.0, 3.0, 1.5]])) == (0, 4.0)  # x crosses 0, 2, 4, 6, 8
    assert g.split_of(np.array([[0.5, -5.0, 0.5], [1.5, 5.0, 1.5]])) == (1, 0.0)  # -4, -2, 0, 2, 4: the middle
    assert g.split_of(np.array([[0.5, 0.5, 0.5], [1.5, 1.5, 1.5]])) is None
    assert g.split_of(np.array([[-3.0, -3.0, 0.5], [3.0, 3.0, 1.5]])) == (0, 0.0)  # a tie goes to x


def test_the_cell_grows_for_huge_worlds():
    box = np.array([[0.0] * 3, [10_000.0, 1.0, 1.0]])
    g = RegionGrid.for_world(32.0, box)
    assert g.size == 256.0 and 10_000.0 / g.size <= MAX_CELLS_PER_AXIS and 10_000.0 / (g.size / 2) > MAX_CELLS_PER_AXIS
    assert RegionGrid.for_world(32.0, np.array([[0.0] * 3, [1000.0] * 3])).size == 32.0


def test_grid_lines_are_nodes_of_both_trees():
    """A room 10 m wide with 2 m cells: the planes x = 2k cut the point tree and the onion tree."""
    brushes = closed_room((0, 0, 0), (10, 10, 3), 0.5)
    level = compile_scene(Scene("hall", brushes=brushes, hulls=[Hull("h", (-0.25,) * 3, (0.25,) * 3)],
                                settings=Settings(region_size=2.0)))
    for nodes in (level.node_plane, level.onion_node_plane):
        n, d = level.plane_normals[nodes], level.plane_dists[nodes]
        x_planes = set(np.round(np.abs(d[np.abs(n[:, 0]) == 1.0]), 9).tolist())
        assert {2.0, 4.0, 6.0, 8.0} <= x_planes, sorted(x_planes)


# -- the trees against truth -----------------------------------------------------------------

@settings(max_examples=30, deadline=None, derandomize=True, phases=NO_SHRINK,
          suppress_health_check=[HealthCheck.too_slow])
@given(specs=scene_specs, seed=st.integers(0, 2**32 - 1), cell=CELLS,
       splitter=st.sampled_from([("onion", 48), ("thesis", 48), ("onion", 4)]))
def test_random_scenes_cut_in_regions_agree_with_brute_force(specs, seed, cell, splitter, truth):
    brushes = build_brushes(specs)
    colliding = [b for b in brushes if b.contents.collides_with_point]
    ba = truth.brush_arrays(colliding)
    rng = np.random.default_rng(seed)
    bounds = Scene("s", brushes=brushes).bounds
    scene = Scene("random", brushes=brushes,
                  settings=Settings(splitter=splitter[0], max_candidates=splitter[1], region_size=cell))
    level = compile_scene(scene)
    where = f"region_size={cell} splitter={splitter}"
    points = truth.sample_points(ba, bounds, 2000, 2000, rng, margin=0.5)
    if colliding:
        problems = truth.check_points(level, ba, points)
    else:
        problems = [] if not point_solid(level, points).any() else ["solid points without collision brushes"]
    assert not problems, where + "\n" + "\n".join(problems)
    starts, ends = random_segments(truth, ba, bounds, rng)
    problems, _ = truth.check_segments(level, ba, starts, ends, max_ambiguous=0.2)
    assert not problems, where + "\n" + "\n".join(problems)


@settings(max_examples=15, deadline=None, derandomize=True, phases=NO_SHRINK,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(brushes=scene_brushes(), hulls=hull_sets(), seed=st.integers(0, 2**31), cell=CELLS)
def test_random_scenes_cut_in_regions_hulls_agree_with_truth(brushes, hulls, seed, cell):
    problems = random_scene_problems(brushes, hulls, seed, settings=Settings(region_size=cell))
    assert not problems, f"region_size={cell}\n" + "\n".join(problems)


def test_sample_scenes_cut_in_one_metre_regions_agree_with_brute_force(sample_path, truth):
    scene = load_scene(sample_path)
    scene = dataclasses.replace(scene, settings=dataclasses.replace(scene.settings, region_size=1.0))
    level = compile_scene(scene)
    colliding = [b for b in scene.brushes if b.contents.collides_with_point]
    ba = truth.brush_arrays(colliding)
    rng = np.random.default_rng(7)
    points = truth.sample_points(ba, scene.bounds, 14_000, 6_000, rng)
    problems = truth.check_points(level, ba, points)
    assert not problems, sample_path.name + "\n" + "\n".join(problems)
    assert level.stats["region_size"] == 1.0


# -- the cases a grid makes new ---------------------------------------------------------------

def _solid(level, points):
    return point_solid(level, np.asarray(points, float)).astype(bool).tolist()


def test_a_cell_in_the_middle_of_a_hall_is_empty_and_one_inside_a_wall_is_solid():
    """A hall 12 m wide with 4 m thick walls, 1 m cells: cells in the air and cells wholly inside
    a wall hold no face; the first are empty, the second solid."""
    brushes = closed_room((0, 0, 0), (12, 12, 6), 4.0)
    level = compile_scene(Scene("hall", brushes=brushes, settings=Settings(region_size=1.0)))
    assert level.stats["empty_faceless_leaves"] > 0
    assert _solid(level, [[6.5, 6.5, 3.5], [1.5, 10.5, 0.5], [11.5, 0.5, 5.5]]) == [False] * 3
    assert _solid(level, [[-2.5, 6.5, 3.5], [6.5, 14.5, 3.5], [6.5, 6.5, -2.5], [-3.5, -3.5, 9.5]]) == [True] * 4


def test_detail_across_cell_lines_is_solid_inside_and_empty_around(truth):
    room = closed_room((0, 0, 0), (8, 8, 4), 0.5)
    crate = [box_brush((1.2, 1.2, 0.0), (6.7, 2.9, 2.3), "crate", Contents.DETAIL),
             box_brush((3.1, 0.4, 0.0), (3.9, 7.6, 3.3), "beam", Contents.DETAIL)]
    scene = Scene("detail", brushes=room + crate, settings=Settings(region_size=1.0))
    level = compile_scene(scene)
    ba = truth.brush_arrays(room + crate)
    points = truth.sample_points(ba, scene.bounds, 20_000, 10_000, np.random.default_rng(3))
    problems = truth.check_points(level, ba, points)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("cell", [0.0, 1.0])
def test_regions_keep_a_scene_deterministic(cell):
    brushes = closed_room((0, 0, 0), (6, 5, 3), 0.5) + [box_brush((1.3, 1.1, 0), (2.2, 3.9, 1.7), "pillar")]
    a = compile_scene(Scene("r", brushes=brushes, settings=Settings(region_size=cell)))
    b = compile_scene(Scene("r", brushes=brushes, settings=Settings(region_size=cell)))
    for name in ("node_plane", "node_children", "leaf_solid", "plane_dists", "vertices", "onion_leaf_solid"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None and y is None) or np.array_equal(x, y), name


# -- region subtrees built apart (the farm's unit of work) ------------------------------------

class _HereFarm:
    """A stand-in for a farm (brushbake.farm.level.LevelFarm) whose runner builds every region in
    this process, one job at a time, each from its own faces alone: what a worker does."""

    def __init__(self):
        self.jobs = 0

    def region_runner(self, cancel=None):
        from brushbake.core.compile.trees.region_jobs import run_here

        def run(planes, settings, jobs):
            self.jobs += len(jobs)
            return run_here(planes, settings, jobs, cancel)

        return run


def _same_level(a, b):
    for name in ("plane_normals", "plane_dists", "node_plane", "node_children", "leaf_solid", "leaf_cluster",
                 "leaf_bounds", "leaf_face_first", "leaf_face_count", "face_plane", "face_brush", "face_flags",
                 "face_num_vertices", "vertices", "onion_node_plane", "onion_node_children", "onion_leaf_solid"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None and y is None) or np.array_equal(x, y), name


@pytest.mark.parametrize("name", ["e1m7.map", "lq_e1m6.map"])
def test_regions_built_apart_and_grafted_give_the_level_one_build_gives(name, map_named):
    scene = load_scene(map_named(name))
    scene = dataclasses.replace(scene, settings=dataclasses.replace(scene.settings, region_size=4.0))
    whole = compile_scene(scene)
    farm = _HereFarm()
    apart = compile_scene(scene, farm=farm)
    assert farm.jobs > 20  # point tree and onion tree regions
    _same_level(whole, apart)


@settings(max_examples=10, deadline=None, derandomize=True, phases=NO_SHRINK,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(brushes=scene_brushes(), hulls=hull_sets(), cell=CELLS)
def test_random_scenes_built_apart_match_one_build(brushes, hulls, cell):
    scene = Scene("random", brushes=list(brushes), hulls=list(hulls), settings=Settings(region_size=cell))
    _same_level(compile_scene(scene), compile_scene(scene, farm=_HereFarm()))


def test_regions_on_this_machines_cores_give_the_level_one_build_gives(map_named):
    """LocalRegions (forked workers where the platform forks): bake's --jobs for the trees and the
    onion's unions of faces (LocalUnion)."""
    from brushbake.core.compile.trees.region_jobs import LocalRegions

    from brushbake.core.model.hulls import quake_map_hulls

    scene = load_scene(map_named("e1m7.map"))
    scene = dataclasses.replace(scene, hulls=quake_map_hulls(scene.settings.map_scale),
                                settings=dataclasses.replace(scene.settings, region_size=4.0))
    local = LocalRegions(2)  # brushes not given: the trees go to workers, however few the brushes
    local.MIN_FACES = local.union.MIN_FACES = 0  # e1m7 is small: fork for its trees and unions all the same
    assert local.region_runner() is not None
    assert LocalRegions(2, brushes=len(scene.brushes)).region_runner() is None  # a bake of e1m7: no runner
    _same_level(compile_scene(scene), compile_scene(scene, farm=local))
