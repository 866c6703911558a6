"""The compiled BSP against an independent ground truth: is a point strictly inside some solid or
detail brush (clip and non-solid brushes do not stop the point hull), and where does a segment
first enter one.

The brute force (tests/conftest.py, Truth) tests every point and segment against every convex
brush directly and never touches the BSP code.  Points within BAND (1e-4 m) of a brush surface
and segments whose answer changes when every brush grows or shrinks by BAND are not judged:
the compiler may merge planes closer than 1e-5 m, and a seam between two touching brushes is
inside their union though inside neither brush.

- every sample scene and every map in maps/: 100,000 points each (70% uniform in the
  scene's bounds plus 1 m, 30% on brush faces pushed off along the normal), zero disagreements;
- hypothesis scenes (grid boxes with coplanar and touching faces, random convex polytopes, mixed
  contents), compiled with both splitters and several candidate limits: points and segments;
- hand-made scenes for each bug found, and determinism of the compiler and the .bbk writer.
"""

from __future__ import annotations

import dataclasses

import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from brushbake.core.model.brushes import Contents, box_brush, brush_from_planes
from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.errors import DegenerateBrushError
from brushbake.core.runtime.query import point_solid, segment_hits
from brushbake.core.model.scene import Scene, Settings

POINTS_PER_SCENE = 100_000
SURFACE_SHARE = 0.3


def seed_of(text: str) -> int:
    return zlib.crc32(text.encode())


def test_the_scene_folders_are_not_empty(sample_paths, map_paths):
    """The parametrised tests below run over glob results: an empty folder must fail, not pass."""
    assert any(p.suffix == ".json" for p in sample_paths), "no sample_scenes/*.json found"
    assert len(map_paths) >= 12, f"expected the 12 maps of maps/, found {[p.name for p in map_paths]}"


def _check_scene_points(compiled, truth, name):
    rng = np.random.default_rng(seed_of(name))
    n_surface = int(POINTS_PER_SCENE * SURFACE_SHARE)
    points = truth.sample_points(compiled.brushes, compiled.scene.bounds, POINTS_PER_SCENE - n_surface, n_surface, rng)
    assert len(points) == POINTS_PER_SCENE
    problems = truth.check_points(compiled.level, compiled.brushes, points)
    assert not problems, f"{name}:\n" + "\n".join(problems)


def test_sample_scene_points_agree_with_brute_force(sample_path, levels, truth):
    _check_scene_points(levels.get(sample_path), truth, sample_path.name)


def test_map_points_agree_with_brute_force(map_path, levels, truth):
    _check_scene_points(levels.get(map_path), truth, map_path.name)


# --------------------------------------------------------------------------------------------
# Random scenes

#: structural brushes are the common case; detail, clip and non-solid mix in
CONTENTS = [Contents.SOLID] * 4 + [Contents.DETAIL] * 3 + [Contents.CLIP, Contents.NONSOLID]
grid = st.integers(-8, 8).map(lambda k: k * 0.25)  # coordinates on a 0.25 m grid: coplanar faces abound
extent = st.integers(1, 8).map(lambda k: k * 0.25)
nice_normal = st.tuples(st.integers(-2, 2), st.integers(-2, 2), st.integers(-2, 2)).filter(lambda v: any(v))
free_normal = st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 3).filter(lambda v: sum(x * x for x in v) > 0.05)


@st.composite
def box_specs(draw):
    lo = tuple(draw(grid) for _ in range(3))
    size = tuple(draw(extent) for _ in range(3))
    return ("box", lo, size, draw(st.sampled_from(CONTENTS)).label)


@st.composite
def polytope_specs(draw):
    """A grid box cut by one to four random planes (normals from small integers or free floats)."""
    centre = tuple(draw(grid) for _ in range(3))
    half = tuple(draw(extent) for _ in range(3))
    cuts = draw(st.lists(st.tuples(st.one_of(nice_normal, free_normal), st.floats(0.15, 0.95)), min_size=1, max_size=4))
    return ("poly", centre, half, tuple(cuts), draw(st.sampled_from(CONTENTS)).label)


def build_brush(spec, name):
    """The brush a spec describes, or None when the cuts leave nothing (or a sliver)."""
    if spec[0] == "box":
        _, lo, size, contents = spec
        return box_brush(lo, np.add(lo, size), name, Contents.parse(contents))
    _, centre, half, cuts, contents = spec
    centre, half = np.array(centre), np.array(half)
    normals = [*np.eye(3), *-np.eye(3)]
    dists = [*(centre + half), *-(centre - half)]
    for n, frac in cuts:
        n = np.array(n, float) / np.linalg.norm(n)
        normals.append(n)
        dists.append(float(n @ centre) + frac * float(np.abs(n) @ half))
    try:
        return brush_from_planes(normals, dists, name, Contents.parse(contents))
    except DegenerateBrushError:
        return None


scene_specs = st.lists(st.one_of(box_specs(), box_specs(), polytope_specs()), min_size=1, max_size=8)


def build_brushes(specs):
    brushes = [build_brush(spec, f"b{i}") for i, spec in enumerate(specs)]
    return [b for b in brushes if b is not None]


#: (splitter, max_candidates): both heuristics, scoring every plane (0), a few (4) and the default
SPLITTER_SETTINGS = [("onion", 48), ("onion", 4), ("onion", 0), ("thesis", 48), ("thesis", 4), ("thesis", 0)]


def random_segments(truth, ba, bounds, rng, n_uniform=300, n_surface=300):
    lo, hi = bounds[0] - 0.5, bounds[1] + 0.5
    a = lo + rng.random((n_uniform, 3)) * (hi - lo)
    b = lo + rng.random((n_uniform, 3)) * (hi - lo)
    on, nrm = truth.face_samples(ba, n_surface, rng)
    if not len(on):
        return a, b
    start = on + nrm * rng.uniform(1e-3, 1.0, (len(on), 1)) + rng.normal(0, 0.2, (len(on), 3))
    end = on - nrm * rng.uniform(1e-3, 1.0, (len(on), 1)) + rng.normal(0, 0.2, (len(on), 3))
    return np.concatenate([a, start]), np.concatenate([b, end])


@settings(max_examples=40, deadline=None, derandomize=True, report_multiple_bugs=False,
          phases=[Phase.explicit, Phase.generate, Phase.shrink], suppress_health_check=[HealthCheck.too_slow])
@given(specs=scene_specs, seed=st.integers(0, 2**32 - 1))
def test_random_scenes_agree_with_brute_force(specs, seed, truth):
    brushes = build_brushes(specs)
    colliding = [b for b in brushes if b.contents.collides_with_point]
    ba = truth.brush_arrays(colliding)
    rng = np.random.default_rng(seed)
    bounds = Scene("s", brushes=brushes).bounds
    points = truth.sample_points(ba, bounds, 2000, 2000, rng, margin=0.5)
    starts, ends = random_segments(truth, ba, bounds, rng)
    for splitter, limit in SPLITTER_SETTINGS:
        scene = Scene("random", brushes=brushes, settings=Settings(splitter=splitter, max_candidates=limit))
        level = compile_scene(scene)
        where = f"splitter={splitter} max_candidates={limit}"
        if colliding:
            problems = truth.check_points(level, ba, points)
        else:  # nothing collides: everything is empty, the band check does not apply
            problems = [] if not point_solid(level, points).any() else ["a scene without collision brushes has solid points"]
        assert not problems, where + "\n" + "\n".join(problems)
        problems, counts = truth.check_segments(level, ba, starts, ends, max_ambiguous=0.2)
        assert not problems, where + "\n" + "\n".join(problems)


# --------------------------------------------------------------------------------------------
# Hand-made scenes: the hard places


def closed_room(lo=(0, 0, 0), hi=(4, 4, 4), t=1.0):
    """Six structural slabs enclosing the box lo..hi."""
    lo, hi = np.array(lo, float), np.array(hi, float)
    out = []
    for axis in range(3):
        for side, name in ((0, "-"), (1, "+")):
            a, b = lo - t, hi + t
            if side == 0:
                b = b.copy()
                b[axis] = lo[axis]
            else:
                a = a.copy()
                a[axis] = hi[axis]
            out.append(box_brush(a, b, f"wall{name}{'xyz'[axis]}"))
    return out


def test_structural_leaf_filled_by_several_detail_brushes_is_solid(truth):
    """A closed room filled exactly by eight detail boxes (octants) is solid inside.

    No detail face survives CSG (they all touch another detail face or a wall), so the room's
    structural leaf receives no detail face and the compiler has to decide it with one probe
    point; here every face centre lies on a seam between two detail boxes."""
    det = [box_brush([x, y, z], [x + 2, y + 2, z + 2], f"d{x}{y}{z}", Contents.DETAIL)
           for x in (0, 2) for y in (0, 2) for z in (0, 2)]
    level = compile_scene(Scene("filled room", brushes=closed_room() + det))
    centres = np.array([[x + 1, y + 1, z + 1] for x in (0, 2) for y in (0, 2) for z in (0, 2)], float)
    assert point_solid(level, centres).tolist() == [1] * 8
    rng = np.random.default_rng(1)
    ba = truth.brush_arrays(closed_room() + det)
    problems = truth.check_points(level, ba, truth.sample_points(ba, np.array([[-1.0] * 3, [5.0] * 3]), 5000, 5000, rng))
    assert not problems, "\n".join(problems)


def test_structural_leaf_filled_by_one_detail_brush_is_solid():
    det = [box_brush([0, 0, 0], [4, 4, 4], "filler", Contents.DETAIL)]
    level = compile_scene(Scene("filled room", brushes=closed_room() + det))
    assert point_solid(level, [[1, 1, 1], [3, 3, 3], [0.5, 3.1, 2.7]]).tolist() == [1, 1, 1]
    assert level.stats["leaves_inside_detail"] >= 1


def test_clip_and_nonsolid_brushes_do_not_stop_the_point_hull():
    brushes = [box_brush([0, 0, 0], [1, 1, 1], "clip", Contents.CLIP),
               box_brush([2, 0, 0], [3, 1, 1], "water", Contents.NONSOLID),
               box_brush([4, 0, 0], [5, 1, 1], "detail", Contents.DETAIL),
               box_brush([6, 0, 0], [7, 1, 1], "solid", Contents.SOLID)]
    level = compile_scene(Scene("contents", brushes=brushes))
    assert point_solid(level, [[0.5, 0.5, 0.5], [2.5, 0.5, 0.5], [4.5, 0.5, 0.5], [6.5, 0.5, 0.5]]).tolist() == [0, 0, 1, 1]
    hits = segment_hits(level, [[-1, 0.5, 0.5]], [[8, 0.5, 0.5]])
    assert hits[0, 0] * 9 == pytest.approx(5.0, abs=1e-12)  # the detail box at x = 4
    assert hits[0, 4:].tolist() == [-1.0, 0.0, 0.0]


def test_empty_scene_is_one_empty_leaf():
    level = compile_scene(Scene("empty"))
    assert level.num_nodes == 0 and level.num_leaves == 1
    assert point_solid(level, np.random.default_rng(0).normal(size=(10, 3))).tolist() == [0] * 10
    assert segment_hits(level, [[0, 0, 0]], [[1, 1, 1]])[0].tolist() == [1.0, 1, 1, 1, 0, 0, 0]


# --------------------------------------------------------------------------------------------
# Determinism


def _assert_same_arrays(a, b):
    for name in (f.name for f in dataclasses.fields(a)):  # the data, not caches derived from it
        if name == "stats":
            continue
        value, other = getattr(a, name), getattr(b, name)
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype and value.shape == other.shape, name
            assert np.array_equal(value, other), name
        else:
            assert value == other, name


def _check_deterministic(path, levels, tmp_path):
    from brushbake.core.formats.loaders import load_scene
    from brushbake.exporters.native import write_level

    first = levels.get(path)
    again = compile_scene(load_scene(path))
    _assert_same_arrays(first.level, again)
    write_level(first.level, tmp_path / "a.bbk")
    write_level(again, tmp_path / "b.bbk")
    assert (tmp_path / "a.bbk").read_bytes() == (tmp_path / "b.bbk").read_bytes()


def test_compiling_a_sample_twice_gives_identical_arrays_and_bytes(sample_path, levels, tmp_path):
    _check_deterministic(sample_path, levels, tmp_path)


def test_compiling_a_map_twice_gives_identical_arrays_and_bytes(map_named, levels, tmp_path):
    _check_deterministic(map_named("qbspfeatures.map"), levels, tmp_path)


def test_subtrees_built_together_are_numbered_as_built_one_by_one(map_named):
    """TreeBuilder.build_many grows several subtrees level by level together (the detail stage
    does that for every leaf with detail); nodes, leaves and their faces must come out numbered
    as consecutive build() calls number them."""
    from brushbake.core.compile.trees.bsp import SplitterSettings, TreeBuilder
    from brushbake.core.compile.trees.csg import FaceList, brush_plane_ids, union_faces
    from brushbake.core.geometry import PlaneTable
    from brushbake.core.formats.loaders import load_scene

    scene = load_scene(map_named("qbspfeatures.map"))
    planes = PlaneTable()
    brushes = [b for b in scene.brushes if b.contents == Contents.SOLID]
    faces = union_faces(brushes, brush_plane_ids(brushes, planes), planes)
    half = len(faces) // 2
    box = np.array([scene.bounds[0] - 1, scene.bounds[1] + 1])
    roots = [(np.arange(half), np.ones(half, bool), np.ones(half, bool), box, -1, 0),
             (np.arange(half, len(faces)), np.ones(len(faces) - half, bool), np.ones(len(faces) - half, bool), box, -1, 1)]
    builders = []
    for together in (False, True):
        copy = FaceList(list(faces.verts), list(faces.plane), list(faces.brush), list(faces.flags))
        b = TreeBuilder(planes, copy, SplitterSettings())
        codes = [c for c, _, _ in b.build_many(roots)] if together else [b.build(*r[:4], parent=r[4], side=r[5]) for r in roots]
        builders.append((b, codes))
    (one, codes_one), (two, codes_two) = builders
    assert codes_one == codes_two and one.node_plane == two.node_plane and one.node_children == two.node_children
    assert len(one.node_plane) > 50
    assert [one.faces.verts[f].tobytes() for f in one.node_face] == [two.faces.verts[f].tobytes() for f in two.node_face]
    for a, b in zip(one.leaves, two.leaves, strict=True):
        assert (a.solid, a.parent, a.side) == (b.solid, b.parent, b.side) and np.array_equal(a.bounds, b.bounds)
        assert [one.faces.verts[f].tobytes() for f in a.faces] == [two.faces.verts[f].tobytes() for f in b.faces]


# -- the children's boxes, a level at a time -------------------------------------------------------

AXIAL = st.sampled_from([(1.0, 0.0, 0.0), (-1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, -1.0, 0.0), (0.0, 0.0, 1.0),
                         (0.0, 0.0, -1.0)])
SLANTED = st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 3).filter(lambda v: 0.05 < sum(x * x for x in v))


@settings(max_examples=200, deadline=None)
@given(items=st.lists(st.tuples(st.tuples(*[st.floats(-10, 10, allow_nan=False)] * 3),
                                st.tuples(*[st.floats(0, 10, allow_nan=False)] * 3),
                                st.one_of(AXIAL, SLANTED), st.floats(-15, 15, allow_nan=False)), min_size=1, max_size=12))
def test_split_boxes_of_a_level_are_split_box_of_each(items):
    """The tree builder splits every item's box at once (_split_boxes): each is the box cut by its
    plane item by item (_split_box below), for axial planes facing either way (inside, on and
    outside the box) and slanted ones."""
    from brushbake.core.compile.trees.bsp import _split_boxes

    boxes = np.array([[lo, np.add(lo, size)] for lo, size, _, _ in items], dtype=float)
    normals = np.array([n for _, _, n, _ in items], dtype=float)
    normals[np.abs(normals).max(axis=1) != 1.0] /= np.linalg.norm(normals[np.abs(normals).max(axis=1) != 1.0], axis=1,
                                                                  keepdims=True)
    dists = np.array([d for _, _, _, d in items], dtype=float)
    got = _split_boxes(boxes, normals, dists)
    for i in range(len(items)):
        front, back = _split_box(boxes[i], normals[i], float(dists[i]))
        assert np.array_equal(got[2 * i], front) and np.array_equal(got[2 * i + 1], back)


def _split_box(box, n, d):
    """One box's children: an axial plane cuts it exactly, any other plane keeps it whole."""
    comps = n.tolist()
    mags = [abs(c) for c in comps]
    axis = mags.index(max(mags))
    if mags[axis] != 1.0:
        return box, box
    pos = d * comps[axis]
    front, back = box.copy(), box.copy()
    if comps[axis] > 0:  # the front is x >= pos
        front[0, axis], back[1, axis] = max(front[0, axis], pos), min(back[1, axis], pos)
    else:  # the front is x <= pos
        front[1, axis], back[0, axis] = min(front[1, axis], pos), max(back[0, axis], pos)
    return front, back
