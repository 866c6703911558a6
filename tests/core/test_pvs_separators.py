"""The full flow's separating planes (core/compile/vis/pvs_winding.py): tangent_planes (two candidates
per edge, the angular extremes of the other polygon about the edge's line) against Quake's
enumeration of every (edge, vertex) plane (separating_planes), on hypothesis pairs of convex
polygons built to hit the awkward cases: vertices and edges the two polygons share (adjacent
portals), several vertices of one polygon on one plane through an edge of the other, integer
coordinates (exact ties) and the same pairs turned by a random rotation (ties up to rounding).

Checked, independently of how either set is found:
- soundness: every line from a point of the source through a point of the pass, carried on
  beyond the pass, stays in front of every tangent plane (within FLOW_CLIP_MARGIN, as the flow
  clips);
- never tighter than Quake: every tangent plane is bit for bit one of Quake's valid planes (so
  the region kept, the front of all of them, holds Quake's), and targets clipped by both sets:
  Quake's clipped target lies inside the tangent one;
- as tight as Quake: every Quake plane left out has a tangent plane on the same edge that moves
  no vertex of either polygon by more than NEAR (a near-duplicate), and the tangent-clipped
  target lies in front of every Quake plane within NEAR plus the clip margin.
"""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from test_pvs_merged import padded as batch
from brushbake.core.compile.vis.pvs_merged import clip_by_cutting, separators_by_size
from brushbake.core.compile.vis.pvs_winding import packed_separators, separating_planes, tangent_planes
from brushbake.core.tolerances import FLOW_CLIP_MARGIN

#: m: how far a left-out Quake plane may sit from its tangent near-duplicate at the polygons'
#: vertices (a few FLOW_PLANE_EPSILON, the tolerance that lets Quake keep both)
NEAR = 1e-7


def hull_2d(pts):
    """Convex hull of integer 2-D points, counter-clockwise, no collinear points (monotone chain)."""
    pts = sorted(set(map(tuple, pts)))
    if len(pts) < 3:
        return []

    def half(seq):
        out = []
        for p in seq:
            while len(out) >= 2 and (out[-1][0] - out[-2][0]) * (p[1] - out[-2][1]) \
                    - (out[-1][1] - out[-2][1]) * (p[0] - out[-2][0]) <= 0:
                out.pop()
            out.append(p)
        return out

    lower, upper = half(pts), half(pts[::-1])
    return lower[:-1] + upper[:-1]


@st.composite
def polygon_pairs(draw):
    """(source (Ms, 3), pass (Mp, 3)): the source in z = 0; the pass in a plane through one of
    the source's vertices, spanned by two integer directions (one of them, when drawn so, the
    source's own edge: the two then share an edge), so vertices are shared exactly."""
    pt = st.tuples(st.integers(-4, 4), st.integers(-4, 4))
    src = hull_2d(draw(st.lists(pt, min_size=3, max_size=8)))
    if len(src) < 3:
        src = [(0, 0), (3, 0), (0, 3)]
    source = np.array([[x, y, 0.0] for x, y in src])
    k = draw(st.integers(0, len(source) - 1))
    origin = source[k]
    vec = st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(-3, 3))
    du = np.array(draw(vec), float)
    if draw(st.booleans()):
        du = source[(k + 1) % len(source)] - origin  # along the source's edge: a shared edge
    dv = np.array(draw(vec), float)
    dv[2] = draw(st.sampled_from([1.0, 2.0, -1.0, 3.0]))  # out of the source's plane
    if np.linalg.norm(np.cross(du, dv)) < 1e-9:
        du = np.array([1.0, 0.0, 0.0]) if abs(dv[0]) < 1e-9 else np.array([0.0, 1.0, 0.0])
    ij = draw(st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 3)), min_size=2, max_size=8))
    if draw(st.booleans()):
        ij = ij + [(0, 0)]  # the shared vertex
    hull = hull_2d(ij) or [(0, 0), (1, 0), (0, 1)]
    pas = np.array([origin + i * du + j * dv for i, j in hull])
    if draw(st.booleans()):  # the same pair turned and moved: ties only up to rounding
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        rot, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        shift = rng.uniform(-50, 50, 3)
        source, pas = source @ rot.T + shift, pas @ rot.T + shift
    if draw(st.booleans()):
        source, pas = pas, source
    return source, pas




def planes_by_edge(fn, a, na, p, npass, per_edge):
    """[(edge, normal, dist)] of one row's valid planes, one way round."""
    n, d, v = fn(a, na, p, npass)
    return [(c // per_edge, n[0, c], d[0, c]) for c in np.flatnonzero(v[0])]


def check_one_way(a, p):
    (aw, na), (pw, npass) = batch([a]), batch([p])
    quake = planes_by_edge(separating_planes, aw, na, pw, npass, pw.shape[1])
    tangent = planes_by_edge(tangent_planes, aw, na, pw, npass, 2)
    both = np.concatenate([a, p])
    for e, n, d in tangent:  # bit for bit one of Quake's
        assert any(e == qe and np.array_equal(n, qn) and d == qd for qe, qn, qd in quake), (e, n, d)
    for qe, qn, qd in quake:  # Quake's others: near-duplicates of a tangent plane on that edge
        moves = [np.abs((both @ n - d) - (both @ qn - qd)).max() for e, n, d in tangent if e == qe]
        assert moves and min(moves) <= NEAR, (qe, qn, qd, moves)
    return quake, tangent


def lines_through(rng, source, pas, k):
    """Points on k lines from random points of the source through random points of the pass,
    at parameters in [1, 50] (1: on the pass)."""
    def inside(poly):
        wts = rng.dirichlet(np.ones(len(poly)), k)
        return wts @ poly
    s, q = inside(source), inside(pas)
    t = rng.uniform(1.0, 50.0, (k, 1))
    return s + t * (q - s)


@settings(max_examples=300, deadline=None)
@given(polygon_pairs(), st.integers(0, 2**32 - 1))
@example((np.array([[0.0, 0, 0], [2, 0, 0], [2, 2, 0], [0, 2, 0]]),
          np.array([[2.0, 0, 0], [2, 2, 0], [3, 2, 1], [3, 0, 1]])), 0)  # hinged on a shared edge
@example((np.array([[0.0, 0, 0], [2, 0, 0], [2, 2, 0], [0, 2, 0]]),
          np.array([[2.0, 2, 0], [4, 2, 1], [4, 4, 1], [2, 4, 0]])), 1)  # one shared vertex
def test_tangent_separators_are_quakes_up_to_near_duplicates_and_keep_every_line(pair, seed):
    source, pas = pair
    check_one_way(source, pas)
    check_one_way(pas, source)
    (sw, ns), (pw, npass) = batch([source]), batch([pas])
    normal, dist, count = packed_separators(sw, ns, pw, npass)
    qn, qd, qc = packed_separators(sw, ns, pw, npass, planes=separating_planes)
    assert count[0] <= qc[0]
    # soundness on its own terms: every line from the source through the pass stays in front
    rng = np.random.default_rng(seed)
    pts = lines_through(rng, source, pas, 200)
    d = pts @ normal[0, : count[0]].T - dist[0, : count[0]]
    assert d.min(initial=0.0) >= -FLOW_CLIP_MARGIN
    # targets beyond the pass clipped by both sets: Quake's inside the tangent one, and the
    # tangent one in front of Quake's planes up to the near-duplicates
    centre_s, centre_p = source.mean(axis=0), pas.mean(axis=0)
    axis = centre_p - centre_s
    if np.linalg.norm(axis) < 1e-9:
        return
    targets = []
    for _ in range(6):
        far = centre_s + rng.uniform(1.5, 8.0) * axis + rng.normal(size=3) * np.linalg.norm(axis)
        u = np.cross(axis, rng.normal(size=3))
        u /= np.linalg.norm(u)
        v = np.cross(axis / np.linalg.norm(axis), u)
        ang = np.sort(rng.uniform(0, 2 * np.pi, int(rng.integers(3, 8))))
        r = rng.uniform(0.5, 4.0) * np.linalg.norm(axis)
        targets.append(far + r * (np.cos(ang)[:, None] * u + np.sin(ang)[:, None] * v))
    tw, tn = batch(targets)
    rows = np.zeros(len(targets), dtype=np.int64)
    kt_w, kt_n = clip_by_cutting(tw, tn, normal[rows], dist[rows], count[rows])
    kq_w, kq_n = clip_by_cutting(tw, tn, qn[rows], qd[rows], qc[rows])
    for i in range(len(targets)):
        assert kq_n[i] == 0 or kt_n[i] > 0
        if kq_n[i]:  # Quake's kept part is inside the tangent one's planes
            dq = kq_w[i, : kq_n[i]] @ normal[0, : count[0]].T - dist[0, : count[0]]
            assert dq.min(initial=0.0) >= -2 * FLOW_CLIP_MARGIN
        if kt_n[i]:  # and the tangent part in front of Quake's, within the near-duplicates
            dt = kt_w[i, : kt_n[i]] @ qn[0, : qc[0]].T - qd[0, : qc[0]]
            scale = max(1.0, float(np.abs(kt_w[i, : kt_n[i]] - centre_s).max()) / max(np.linalg.norm(axis), 1e-9))
            assert dt.min(initial=0.0) >= -(2 * FLOW_CLIP_MARGIN + NEAR * 10 * scale)


def test_separators_by_size_gives_each_row_its_own_planes():
    """The flow's batched entry (rows bucketed by vertex counts) gives each row the planes that
    packed_separators gives it alone."""
    rng = np.random.default_rng(5)
    pairs = []
    for _ in range(60):
        c = rng.normal(size=3) * 3
        k1, k2 = int(rng.integers(3, 9)), int(rng.integers(3, 9))
        a = np.sort(rng.uniform(0, 2 * np.pi, k1))
        b = np.sort(rng.uniform(0, 2 * np.pi, k2))
        s = c + np.stack([np.cos(a), np.sin(a), np.zeros(k1)], axis=1)
        p = c + np.array([0, 0, 2.0]) + 0.7 * np.stack([np.cos(b), np.zeros(k2), np.sin(b)], axis=1)
        pairs.append((s, p))
    sw, ns = batch([s for s, _ in pairs])
    pw, npass = batch([p for _, p in pairs])
    normal, dist, count = separators_by_size(sw, ns, pw, npass, rows_per_bucket=7)
    for i, (s, p) in enumerate(pairs):
        (a, na), (b, nb) = batch([s]), batch([p])
        n1, d1, c1 = packed_separators(a, na, b, nb)
        assert count[i] == c1[0]
        np.testing.assert_array_equal(normal[i, : count[i]], n1[0, : c1[0]])
        np.testing.assert_array_equal(dist[i, : count[i]], d1[0, : c1[0]])
