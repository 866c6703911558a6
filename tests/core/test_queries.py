"""core/runtime/query.py: point location, segment hits, single traces (trace_hull), back-to-front order.

Ground truths: a brute-force segment-versus-every-brush clipper (tests/conftest.py, Truth) on
random segments of every sample scene and map; hand-made cases for the stated conventions (on a
surface = empty, sliding along a face is not blocked, start in solid = fraction 0 and zero normal);
the tree structure and a purely geometric occlusion property for the painter's order.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from brushbake.core.model.brushes import Contents, box_brush, brush_from_planes
from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.tolerances import TOUCH_EPSILON
from brushbake.core.runtime.query import leaves_back_to_front, point_leaves, point_solid, segment_hits
from brushbake.core.runtime.trace import trace_hull
from brushbake.core.model.scene import Scene

AXES = {"+x": (0, 1.0), "-x": (0, -1.0), "+y": (1, 1.0), "-y": (1, -1.0), "+z": (2, 1.0), "-z": (2, -1.0)}


def seed_of(text: str) -> int:
    return zlib.crc32(text.encode())


@pytest.fixture(scope="module")
def unit_box():
    return compile_scene(Scene("box", brushes=[box_brush([0, 0, 0], [1, 1, 1], "box")]))


def face_point(face: str, u: float = 0.5, v: float = 0.5):
    """A point on the named face of the unit box, at (u, v) in its other two coordinates."""
    axis, sign = AXES[face]
    p = np.zeros(3)
    p[axis] = 1.0 if sign > 0 else 0.0
    others = [a for a in range(3) if a != axis]
    p[others[0]], p[others[1]] = u, v
    return p


def outward(face: str):
    axis, sign = AXES[face]
    n = np.zeros(3)
    n[axis] = sign
    return n


def no_hit(row, end):
    return row[0] == 1.0 and np.array_equal(row[1:4], end) and not np.any(row[4:7])


# --------------------------------------------------------------------------------------------
# Conventions (core/query.py docstring), on every face of a box


@pytest.mark.parametrize("face", list(AXES))
def test_a_point_on_a_surface_is_empty(unit_box, face):
    """'solids are open: a point on a wall's surface is empty', whichever way the wall faces;
    within TOUCH_EPSILON of it a point is on it, farther inside it is solid."""
    p = face_point(face)
    n = outward(face)
    assert point_solid(unit_box, [p]).tolist() == [0], f"a point on the {face} face is solid"
    eps = TOUCH_EPSILON
    assert point_solid(unit_box, [p - 0.5 * eps * n, p + 0.5 * eps * n]).tolist() == [0, 0]
    assert point_solid(unit_box, [p - 10 * eps * n, p + 10 * eps * n]).tolist() == [1, 0]


@pytest.mark.parametrize("face", list(AXES))
def test_a_segment_sliding_along_a_face_is_not_blocked(unit_box, face):
    axis, _ = AXES[face]
    along = np.zeros(3)
    along[(axis + 1) % 3] = 1.0
    start = face_point(face) - 1.5 * along
    end = face_point(face) + 1.5 * along
    row = segment_hits(unit_box, [start], [end])[0]
    assert no_hit(row, end), f"sliding along the {face} face: {row.tolist()}"
    assert not trace_hull(unit_box, start, end, retry=False).hit


@pytest.mark.parametrize("face", list(AXES))
def test_a_segment_starting_on_a_surface(unit_box, face):
    """Leaving: no hit.  Entering: a hit at fraction 0 with the face's normal (not 'start solid')."""
    p, n = face_point(face, 0.3, 0.6), outward(face)
    out = segment_hits(unit_box, [p, p], [p + n, p - 0.5 * n])
    assert no_hit(out[0], p + n), f"leaving the {face} face: {out[0].tolist()}"
    assert out[1].tolist() == [0.0, *p, *n], f"entering through the {face} face: {out[1].tolist()}"


@pytest.mark.parametrize("face", list(AXES))
def test_a_segment_ending_on_a_surface_does_not_hit(unit_box, face):
    p, n = face_point(face, 0.25, 0.75), outward(face)
    row = segment_hits(unit_box, [p + 2 * n], [p])[0]
    assert no_hit(row, p)
    row = segment_hits(unit_box, [p + 2 * n], [p - 1e-6 * n])[0]  # a micrometre further: a hit at its end
    assert row[0] == pytest.approx(2 / (2 + 1e-6), abs=1e-12) and row[4:].tolist() == n.tolist()


def test_hits_through_each_face_from_outside(unit_box):
    starts, ends, expect = [], [], []
    for face in AXES:
        p, n = face_point(face, 0.4, 0.7), outward(face)
        starts.append(p + 3 * n)
        ends.append(p - 0.5 * n)
        expect.append([3 / 3.5, *p, *n])
    got = segment_hits(unit_box, starts, ends)
    assert np.allclose(got, expect, rtol=0, atol=1e-12)
    for s, e, row in zip(starts, ends, got):
        hit = trace_hull(unit_box, s, e, retry=False)
        assert (hit.fraction, *hit.point, *hit.normal) == tuple(row) and not hit.start_solid


def test_start_in_solid(unit_box):
    starts = np.array([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5], [0.2, 0.9, 0.1]])
    ends = np.array([[3.0, 0.5, 0.5], [0.6, 0.6, 0.6], [-1.0, -1.0, -1.0]])
    got = segment_hits(unit_box, starts, ends)
    assert got[:, 0].tolist() == [0.0] * 3
    assert np.array_equal(got[:, 1:4], starts) and not got[:, 4:].any()
    hit = trace_hull(unit_box, starts[0], ends[0], retry=False)
    assert hit.start_solid and hit.fraction == 0.0 and not hit.normal.any() and hit.plane == -1


def test_edge_and_corner_hits_take_one_of_the_tied_planes(unit_box):
    # aimed exactly at the vertical edge x = 1, y = 1, and at the corner (1, 1, 1)
    got = segment_hits(unit_box, [[2.0, 2.0, 0.5], [2.0, 2.0, 2.0]], [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]])
    assert got[0, 0] == pytest.approx(1 / 1.5) and got[0, 4:].tolist() in ([1.0, 0, 0], [0, 1.0, 0])
    assert got[1, 0] == pytest.approx(1 / 1.5) and got[1, 4:].tolist() in ([1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0])


def test_seams_between_touching_brushes_are_solid():
    """The union is what collides: a point on the seam between two touching boxes is inside it,
    and a segment crossing from one box into the other starts (and stays) in solid."""
    level = compile_scene(Scene("pair", brushes=[box_brush([0, 0, 0], [1, 1, 1], "a"), box_brush([1, 0, 0], [2, 1, 1], "b")]))
    assert point_solid(level, [[1.0, 0.5, 0.5]]).tolist() == [1]
    got = segment_hits(level, [[0.5, 0.5, 0.5], [3.0, 0.5, 0.5]], [[1.5, 0.5, 0.5], [-1.0, 0.5, 0.5]])
    assert got[0].tolist() == [0.0, 0.5, 0.5, 0.5, 0.0, 0.0, 0.0]
    assert got[1].tolist() == [0.25, 2.0, 0.5, 0.5, 1.0, 0.0, 0.0]  # the far box's face, not the seam


def test_slanted_face_hit():
    # a ramp: z <= x / 2 over 0 <= x <= 4, 0 <= y <= 1, z >= 0 (outward normal (-1, 0, 2) / sqrt 5)
    ramp = brush_from_planes([[-1, 0, 2], [1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, -1]], [0, 4, 1, 0, 0], "ramp")
    level = compile_scene(Scene("ramp", brushes=[ramp]))
    got = segment_hits(level, [[2.0, 0.5, 3.0]], [[2.0, 0.5, 0.0]])[0]
    assert got[0] == pytest.approx(2 / 3, abs=1e-12)
    assert np.allclose(got[4:], np.array([-1, 0, 2]) / np.sqrt(5), atol=1e-12)


def test_batch_shapes_and_dtypes(unit_box):
    assert point_solid(unit_box, np.zeros((0, 3))).shape == (0,)
    assert point_solid(unit_box, np.zeros((5, 3))).dtype == np.uint8
    assert segment_hits(unit_box, np.zeros((0, 3)), np.zeros((0, 3))).shape == (0, 7)
    out = segment_hits(unit_box, np.zeros((4, 3)) - 1, np.ones((4, 3)) * 2)
    assert out.shape == (4, 7) and out.dtype == np.float64


# --------------------------------------------------------------------------------------------
# Random segments on every sample scene and map, against the brute force


def random_segments(truth, compiled, rng, n_uniform=2500, n_surface=2500):
    lo, hi = compiled.scene.bounds[0] - 1.0, compiled.scene.bounds[1] + 1.0
    span = float(np.linalg.norm(hi - lo))
    a = lo + rng.random((n_uniform, 3)) * (hi - lo)
    direction = rng.normal(size=(n_uniform, 3))
    direction /= np.linalg.norm(direction, axis=1)[:, None]
    b = a + direction * np.exp(rng.uniform(np.log(0.05), np.log(span), n_uniform))[:, None]
    on, nrm = truth.face_samples(compiled.brushes, n_surface, rng)
    s2 = on + nrm * rng.uniform(1e-3, 1.0, (n_surface, 1)) + rng.normal(0, 0.3, (n_surface, 3))
    e2 = on - nrm * rng.uniform(1e-3, 1.0, (n_surface, 1)) + rng.normal(0, 0.3, (n_surface, 3))
    return np.concatenate([a, s2]), np.concatenate([b, e2])


def _check_scene_segments(compiled, truth, name):
    rng = np.random.default_rng(seed_of(name))
    starts, ends = random_segments(truth, compiled, rng)
    problems, counts = truth.check_segments(compiled.level, compiled.brushes, starts, ends)
    assert not problems, f"{name} {counts}:\n" + "\n".join(problems)
    assert counts["hits"] > 500 and counts["misses"] > 100 and counts["start_solid"] > 10, counts


def _check_first_hit_matches(level, starts, ends):
    batch = segment_hits(level, starts, ends)
    tree = level.point_tree()
    bad = []
    for s, e, row in zip(starts, ends, batch):
        hit = trace_hull(tree, s, e, retry=False)
        single = (hit.fraction, *hit.point, *hit.normal)
        if single != tuple(row) or (hit.hit and hit.start_solid != (hit.fraction == 0.0 and not row[4:].any())):
            bad.append(f"  {s.tolist()} -> {e.tolist()}: first_hit {single}, segment_hits {row.tolist()}, "
                       f"fraction differs by {single[0] - row[0]:.3g}")
    assert not bad, f"{len(bad)} of {len(starts)} segments differ:\n" + "\n".join(bad[:5])


def test_sample_scene_segments_agree_with_brute_force(sample_path, levels, truth):
    _check_scene_segments(levels.get(sample_path), truth, sample_path.name)


def test_map_segments_agree_with_brute_force(map_path, levels, truth):
    _check_scene_segments(levels.get(map_path), truth, map_path.name)


def test_first_hit_matches_segment_hits_exactly_on_samples(sample_path, levels, truth):
    compiled = levels.get(sample_path)
    starts, ends = random_segments(truth, compiled, np.random.default_rng(7), 300, 300)
    _check_first_hit_matches(compiled.level, starts, ends)


def test_first_hit_matches_segment_hits_exactly_on_maps(map_path, levels, truth):
    """trace_hull (plain Python) and segment_hits (NumPy batch) must give the same
    bits: same fraction, point and normal, not merely close ones."""
    compiled = levels.get(map_path)
    starts, ends = random_segments(truth, compiled, np.random.default_rng(7), 300, 300)
    _check_first_hit_matches(compiled.level, starts, ends)


def test_solid_tree_leaf_matches_point_leaves(sample_path, levels):
    level = levels.get(sample_path).level
    rng = np.random.default_rng(5)
    lo, hi = level.world_bounds
    pts = lo + rng.random((2000, 3)) * (hi - lo)
    tree = level.point_tree()
    assert point_leaves(level, pts).tolist() == [tree.leaf(p) for p in pts]


# --------------------------------------------------------------------------------------------
# Back to front


def subtree_ranges(level, position):
    """(N, 2) min and max painter's position over the leaves of each node's subtree (children
    have larger indices than their parents, so one reverse sweep suffices)."""
    n = level.num_nodes
    lo = np.full(n, np.iinfo(np.int64).max)
    hi = np.full(n, -1)
    for node in range(n - 1, -1, -1):
        for child in level.node_children[node]:
            if child < 0:
                p = position[-1 - child]
                lo[node], hi[node] = min(lo[node], p), max(hi[node], p)
            else:
                assert child > node
                lo[node], hi[node] = min(lo[node], lo[child]), max(hi[node], hi[child])
    return lo, hi


def check_back_to_front(level, viewpoint):
    order = leaves_back_to_front(level, viewpoint)
    assert sorted(order.tolist()) == list(range(level.num_leaves)), "every leaf exactly once"
    position = np.empty(level.num_leaves, np.int64)
    position[order] = np.arange(len(order))
    if not level.num_nodes:
        return order, position
    lo, hi = subtree_ranges(level, position)

    def span(child):
        return (position[-1 - child],) * 2 if child < 0 else (lo[child], hi[child])

    side = level.plane_normals[level.node_plane] @ np.asarray(viewpoint, float) - level.plane_dists[level.node_plane]
    for node in range(level.num_nodes):
        front, back = level.node_children[node]
        near, far = (front, back) if side[node] >= 0 else (back, front)
        assert span(far)[1] < span(near)[0], f"node {node}: the viewer's side is not drawn after the other side"
    return order, position


def check_occlusion(level, position, viewpoint, rng, count=20000):
    """Purely geometric: if q lies between the viewer and p, q's leaf is drawn no earlier than p's."""
    lo, hi = level.world_bounds
    p = lo + rng.random((count, 3)) * (hi - lo)
    q = viewpoint + rng.random((count, 1)) * (p - viewpoint)
    lp, lq = point_leaves(level, p), point_leaves(level, q)
    bad = np.flatnonzero(position[lq] < position[lp])
    assert not len(bad), f"{len(bad)} occluders drawn before what they hide, e.g. p={p[bad[0]]}, q={q[bad[0]]}"


def test_back_to_front_two_boxes():
    level = compile_scene(Scene("two", brushes=[box_brush([0, 0, 0], [1, 1, 1], "a"), box_brush([3, 0, 0], [4, 1, 1], "b")]))
    a, b = point_leaves(level, [[0.5, 0.5, 0.5], [3.5, 0.5, 0.5]])
    for viewer, first in (([10.0, 0.5, 0.5], a), ([-10.0, 0.5, 0.5], b), ([3.5, 0.5, 5.0], a), ([0.2, 0.2, -3.0], b)):
        order, position = check_back_to_front(level, viewer)
        assert order[min(position[a], position[b])] == first, viewer
        check_occlusion(level, position, np.array(viewer), np.random.default_rng(0), 5000)


def test_back_to_front_on_sample_scenes(sample_path, levels):
    level = levels.get(sample_path).level
    rng = np.random.default_rng(seed_of(sample_path.name))
    lo, hi = level.world_bounds
    for viewer in lo + rng.random((4, 3)) * (hi - lo):
        _, position = check_back_to_front(level, viewer)
        check_occlusion(level, position, viewer, rng)


def test_back_to_front_on_maps(map_path, levels):
    level = levels.get(map_path).level
    rng = np.random.default_rng(seed_of(map_path.name))
    lo, hi = level.world_bounds
    viewer = lo + rng.random(3) * (hi - lo)
    _, position = check_back_to_front(level, viewer)
    check_occlusion(level, position, viewer, rng, 5000)
