"""Open solids (core/query.py, core/trace.py): touching is not being inside.

Ground truth that needs no tree: scenes of axis-aligned boxes on an integer grid, hulls with
half-integer extents, so every configuration-space brush is a box on the 0.5 grid (a box grown by
a box is a box: [lo - hull max, hi - hull min]).  Points and segments on that grid lie on many
planes at once -- faces, edges and corners, tops of one brush on the plane of another's
underside -- which is exactly where open and closed solids differ.

- A point is solid iff it is in the *interior* of the union of the (grown) boxes.  Near a point
  of the 0.5 grid the union is a union of grid cells, so that holds iff each of the 8 points
  p + delta (+-1, +-1, +-1) (delta = 0.1) lies strictly inside some box.
- Along a segment whose direction has components in {-1, 0, 1} (times a length that is a
  multiple of 0.5), from a grid point, the state can change only where a coordinate crosses the
  0.5 grid; between two such crossings it is the state of the piece's midpoint, which lies on the
  0.25 grid, where the octant test is exact too (a piece lying in a face is inside only where
  boxes on both sides cover it).  The expected trace:
  a start in the interior is solid (or a hit at t = 0 by the retry when the motion goes deeper
  within RETRY_BACKOFF, not used here: starts are on the grid, and a grid point is never
  within 1 mm of a box it is inside); else the first piece that is solid gives the hit, at t = 0
  when it is the first piece.
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushbake.core.model.brushes import box_brush
from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.runtime.query import point_solid
from brushbake.core.model.scene import Hull, Scene
from brushbake.core.runtime.trace import (RAY_E, RAY_E2S, RAY_S, RAY_S2E, find_first_transition,
                                  find_first_transitions, trace_hulls)

DELTA = 0.1
OCTANTS = np.array(list(itertools.product((-1.0, 1.0), repeat=3))) * DELTA


def strictly_inside(boxes: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """(N,) bool: the point lies strictly inside some box (boxes (B, 2, 3))."""
    lo, hi = boxes[:, 0], boxes[:, 1]
    return np.any(np.all((pts[:, None, :] > lo[None]) & (pts[:, None, :] < hi[None]), axis=2), axis=1)


def interior(boxes: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """(N,) bool: the grid point is in the interior of the union (all 8 octants covered)."""
    probes = (pts[:, None, :] + OCTANTS[None]).reshape(-1, 3)
    return strictly_inside(boxes, probes).reshape(len(pts), 8).all(axis=1)


def grown(boxes: np.ndarray, hull: Hull | None) -> np.ndarray:
    if hull is None:
        return boxes
    return np.stack([boxes[:, 0] - np.asarray(hull.maxs), boxes[:, 1] - np.asarray(hull.mins)], axis=1)


def expected_trace(boxes: np.ndarray, s: np.ndarray, e: np.ndarray) -> tuple[bool, float]:
    """(start solid, first hit fraction or 1.0) of one grid segment, open solids."""
    if interior(boxes, s[None])[0]:
        return True, 0.0
    d = e - s
    ts = {0.0, 1.0}
    for axis in range(3):
        if d[axis] != 0:
            a, b = sorted((s[axis], e[axis]))
            for c in np.arange(np.ceil(a * 2) / 2, b + 1e-12, 0.5):
                ts.add(float((c - s[axis]) / d[axis]))
    ts = sorted(t for t in ts if 0.0 <= t <= 1.0)
    mids = np.array([s + 0.5 * (a + b) * d for a, b in zip(ts[:-1], ts[1:])])
    solid = interior(boxes, mids)  # midpoints lie on the 0.25 grid: the octant test is exact there
    for (a, _), sol in zip(zip(ts[:-1], ts[1:]), solid):
        if sol:
            return False, a
    return False, 1.0


@st.composite
def grid_scenes(draw):
    n = draw(st.integers(2, 6))
    boxes = []
    for _ in range(n):
        lo = np.array([draw(st.integers(0, 5)) for _ in range(3)], float)
        size = np.array([draw(st.integers(1, 3)) for _ in range(3)], float)
        boxes.append((lo, lo + size))
    hulls = []
    for k in range(draw(st.integers(0, 2))):
        mins = tuple(-draw(st.sampled_from((0.0, 0.5, 1.0))) for _ in range(3))
        maxs = tuple(draw(st.sampled_from((0.0, 0.5, 1.0))) for _ in range(3))
        hulls.append(Hull(f"h{k}", mins, maxs))
    return np.array(boxes), hulls


def compiled(boxes, hulls):
    brushes = [box_brush(lo, hi, f"b{i}") for i, (lo, hi) in enumerate(boxes)]
    return compile_scene(Scene("grid", brushes=brushes, hulls=hulls))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grid_scenes(), st.integers(0, 2**32 - 1))
def test_points_on_grid_planes_are_solid_only_inside_the_union(scene, seed):
    boxes, hulls = scene
    level = compiled(boxes, hulls)
    rng = np.random.default_rng(seed)
    pts = rng.integers(-4, 20, size=(600, 3)) * 0.5
    for h, hull in enumerate([None, *hulls]):
        want = interior(grown(boxes, hull), pts)
        got = point_solid(level, pts, h).astype(bool)
        bad = np.flatnonzero(got != want)
        assert not len(bad), (f"hull {h}: {len(bad)} of {len(pts)} grid points disagree, e.g. {pts[bad[0]].tolist()} "
                              f"solid={bool(got[bad[0]])}, boxes {grown(boxes, hull).tolist()}")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grid_scenes(), st.integers(0, 2**32 - 1))
def test_grid_segments_enter_solid_where_the_union_does(scene, seed):
    """Segments along faces, edges and diagonals of the grid: start solid, hit fraction, and the
    hit normal facing the start; the batch walk (which finishes starts on a plane itself) and the
    single walk (which hands them to the open walk) give the same kind, t and plane."""
    boxes, hulls = scene
    level = compiled(boxes, hulls)
    rng = np.random.default_rng(seed)
    k = 300
    s = rng.integers(-4, 20, size=(k, 3)) * 0.5
    d = rng.integers(-1, 2, size=(k, 3)).astype(float)
    d[np.all(d == 0, axis=1), 0] = 1.0
    e = s + d * (rng.integers(1, 9, size=(k, 1)) * 0.5)
    for h, hull in enumerate([None, *hulls]):
        g = grown(boxes, hull)
        _hits = trace_hulls(level, s, e, h, retry=False)
        out, start_solid = _hits.packed(), _hits.start_solid
        tree = level.collision_tree(h)
        lists = tree
        kinds, ts, planes = find_first_transitions(tree, s, e, h)
        for i in range(k):
            want_solid, want_t = expected_trace(g, s[i], e[i])
            got = (bool(start_solid[i]), float(out[i, 0]))
            assert got[0] == want_solid and abs(got[1] - want_t) < 1e-12, (
                f"hull {h}: {s[i].tolist()} -> {e[i].tolist()}: got (start solid, fraction) {got}, "
                f"want {(want_solid, want_t)}; boxes {g.tolist()}")
            tr = find_first_transition(lists, s[i], e[i], h)
            assert (tr.kind, tr.t, tr.plane) == (kinds[i], ts[i], planes[i]), (
                f"hull {h}: single {tr} against batch {(kinds[i], ts[i], planes[i])} for {s[i]} -> {e[i]}")
            single = (tr.kind in (RAY_S, RAY_S2E), tr.t if tr.kind == RAY_E2S else (0.0 if tr.kind != RAY_E else 1.0))
            assert single == (bool(start_solid[i]), float(out[i, 0])), (i, tr, out[i])
            if not want_solid and want_t < 1.0:
                assert np.dot(out[i, 4:7], e[i] - s[i]) < 0, f"hull {h}: normal {out[i, 4:7]} does not face the start"


def test_the_batch_finishes_starts_and_slides_on_a_floor_itself(monkeypatch):
    """Starts exactly on a floor, and segments sliding along it at exactly its height, are the
    batch walk's own work (NumPy), not the one-by-one open walk's: a character whose engine does
    not back off from surfaces must not fall off a performance cliff.  Answers as the single
    walk's."""
    from brushbake.core.runtime import trace

    boxes = np.array([[[0.0, 0.0, -1.0], [8.0, 8.0, 0.0]], [[5.0, 0.0, 0.0], [6.0, 8.0, 3.0]]])  # floor, wall
    level = compiled(boxes, [])
    rng = np.random.default_rng(5)
    n = 400
    s = np.column_stack([rng.uniform(0.5, 4.5, n), rng.uniform(0.5, 7.5, n), np.zeros(n)])
    # ends over the floor (a segment passing its edge has structure on both sides of z = 0 and is
    # the open walk's): half slide along it at z = 0, half leave it or go into it
    e = np.column_stack([rng.uniform(0.5, 7.5, n), rng.uniform(0.5, 7.5, n), rng.uniform(-0.9, 2.0, n)])
    e[: n // 2, 2] = 0.0
    calls = []
    monkeypatch.setattr(trace, "_fft_open", lambda *a: calls.append(a) or (0, 1.0, -1))
    tree = level.collision_tree(0)
    kinds, ts, planes = trace.find_first_transitions(tree, s, e, 0)
    assert not calls, f"{len(calls)} of {n} segments went to the open walk"
    monkeypatch.undo()
    lists = tree
    for i in range(n):
        tr = find_first_transition(lists, s[i], e[i], 0)
        assert (tr.kind, tr.t, tr.plane) == (kinds[i], ts[i], planes[i]), (s[i], e[i], tr)
    sliding = np.arange(n) < n // 2
    into_wall = sliding & (e[:, 0] > 5.0)
    assert np.all(kinds[into_wall] == RAY_E2S) and np.all(kinds[sliding & ~into_wall] == RAY_E)
    assert np.all(kinds[~sliding & (e[:, 2] > 0) & (e[:, 0] < 5.0)] == RAY_E)  # leaving the floor
    assert np.all((kinds[~sliding & (e[:, 2] < 0)] == RAY_E2S) & (ts[~sliding & (e[:, 2] < 0)] == 0.0))  # into it
