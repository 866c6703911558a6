"""Batches of convex windings for the portal flow (core/compile/vis/pvs_merged.py): clipping many windings
by many planes at once, and Quake vis's separating planes, in NumPy.

Layout: a batch of B windings is `w (B, M, 3)` float64 with `n (B,)` vertex counts; row b's
vertices are w[b, :n[b]] in order around the polygon, the rest is padding (zeros).  M is trimmed
to the largest count after every operation.  A winding with fewer than 3 vertices is empty.

Separating planes: separating_planes is Quake's enumeration (every plane through an edge of one
polygon and a vertex of the other, each tested against every vertex: O(Ms Mp (Ms + Mp)) a pair,
both ways round), kept as the tests' reference; the flow uses tangent_planes, which tries only
the two vertices at the angular extremes about each edge's line and keeps a subset of Quake's
planes, bit for bit (near-duplicates left out; its docstring argues why nothing Quake keeps is
lost).  The hot steps run component- or vertex-major ((3, M, B) or (M, B)), since NumPy reduces a
small trailing axis many times slower than a leading one.

Rounding must only ever add visibility: every clip keeps a margin (FLOW_CLIP_MARGIN) on the side it
keeps, a separating plane is used only when it separates within FLOW_PLANE_EPSILON, and a
winding that would grow beyond MAX_WINDING vertices is left unclipped (a superset).
"""

from __future__ import annotations

import numpy as np

from ...tolerances import FLOW_CLIP_MARGIN, FLOW_MIN_NORMAL, FLOW_PLANE_EPSILON

#: vertices a clipped winding may have; a clip that would exceed it keeps the unclipped winding
MAX_WINDING = 32


def plane_distances(w: np.ndarray, normal: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """(B, M) signed distances of each row's vertices to its row's plane (summed x, y, z in order)."""
    return w[..., 0] * normal[:, None, 0] + w[..., 1] * normal[:, None, 1] + w[..., 2] * normal[:, None, 2] \
        - dist[:, None]


def centres(w: np.ndarray, n: np.ndarray) -> np.ndarray:
    """(B, 3) the mean of each winding's vertices (zeros for an empty one)."""
    valid = np.arange(w.shape[1])[None, :] < n[:, None]
    return (w * valid[:, :, None]).sum(axis=1) / np.maximum(n, 1)[:, None]


def clip_front(w: np.ndarray, n: np.ndarray, normal: np.ndarray, dist: np.ndarray,
               margin: float = FLOW_CLIP_MARGIN) -> tuple[np.ndarray, np.ndarray]:
    """Keep the part of each winding where normal . x - dist >= -margin.  Rows that lose everything
    get count 0; rows that would pass MAX_WINDING vertices are returned unclipped."""
    b, m = n.shape[0], w.shape[1]
    if b == 0:
        return w, n
    d = plane_distances(w, normal, dist) + margin
    cols = np.arange(m)
    valid = cols[None, :] < n[:, None]
    keep = (d >= 0) & valid
    if np.all(keep == valid):  # nothing cut anywhere
        return w, n
    cross = valid & (keep != _next_vertex(keep, n))  # the edge from this vertex to the next crosses
    per = keep.astype(np.int64) + cross  # what each vertex emits: itself if kept, then the crossing
    first = np.cumsum(per, axis=1) - per  # where each vertex's emissions go
    count = first[:, -1] + per[:, -1]  # (the padding emits nothing)
    over = count > MAX_WINDING
    count = np.where(count < 3, 0, count)
    width = int(count.max()) if b else 0
    # the kept vertices and the crossing points, scattered by flat indices (rows of 3)
    wide = max(width, 1)
    out = np.zeros((b * wide, 3))
    flat_w = w.reshape(-1, 3)
    rk, ik = np.nonzero(keep)
    pk = first[rk, ik]
    sel = pk < width
    _put_points(out, rk[sel] * wide + pk[sel], np.take(flat_w, rk[sel] * m + ik[sel], axis=0))
    # the crossing points, computed only where an edge crosses
    rc, ic = np.nonzero(cross)
    jc = np.where(ic + 1 < n[rc], ic + 1, 0)
    flat_d = d.reshape(-1)
    dc, dn = np.take(flat_d, rc * m + ic), np.take(flat_d, rc * m + jc)
    wc = np.take(flat_w, rc * m + ic, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = dc / (dc - dn)
    point = wc + t[:, None] * (np.take(flat_w, rc * m + jc, axis=0) - wc)
    pc = first[rc, ic] + keep[rc, ic]
    sel = pc < width
    _put_points(out, rc[sel] * wide + pc[sel], point[sel])
    out = out.reshape(b, wide, 3)
    if over.any():  # keep the unclipped winding (a superset: only adds visibility)
        out, count = _merge_unclipped(out, count, w, n, over)
    return _trim(out, count)


#: a point (3 float64) as one 24-byte item: rows of points are scattered as single items
_POINT = np.dtype((np.void, 24))


def _put_points(out: np.ndarray, rows: np.ndarray, pts: np.ndarray) -> None:
    """out[rows] = pts for a C-contiguous (N, 3) float64 `out`, each point moved as one 24-byte
    item (the same bytes; NumPy's fancy assignment of (k, 3) rows is ~2x slower)."""
    out.view(_POINT).reshape(-1)[rows] = np.ascontiguousarray(pts).view(_POINT).reshape(-1)


def _next_vertex(a: np.ndarray, n: np.ndarray) -> np.ndarray:
    """a's values at each vertex's successor round its row's polygon (vertex n-1 -> 0); the
    padding gets zeros.  A shift and one write a row: cheaper than gathering by index."""
    out = np.zeros_like(a)
    out[:, :-1] = a[:, 1:]
    out[np.arange(len(n)), np.maximum(n - 1, 0)] = a[:, 0]
    return out


def _merge_unclipped(out, count, w, n, rows):
    width = max(out.shape[1], w.shape[1])
    merged = np.zeros((len(count), width, 3))
    merged[:, : out.shape[1]] = out
    merged[rows] = 0.0
    merged[rows, : w.shape[1]] = w[rows]
    count = count.copy()
    count[rows] = n[rows]
    return merged, count


def _trim(w: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    width = max(int(n.max()) if len(n) else 0, 1)
    return (w[:, :width] if w.shape[1] > width else w), n


def cross_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def separating_planes(source: np.ndarray, ns: np.ndarray, pas: np.ndarray, npass: np.ndarray):
    """Quake vis's separators for each row: planes through an edge of `source` and a vertex of `pas`
    with the whole source on their back and the whole pass on their front.  Every line from the
    source through the pass continues on such a plane's front, so the target can be clipped to
    it.  Returns (normal (B, K, 3), dist (B, K), valid (B, K)), K = Ms * Mp."""
    b, ms, mp = len(ns), source.shape[1], pas.shape[1]
    i = np.arange(ms)
    nxt = np.where(i[None, :] + 1 < ns[:, None], i[None, :] + 1, 0)
    a = source  # (B, Ms, 3)
    e = np.take_along_axis(source, nxt[:, :, None], axis=1) - a  # edge vectors
    v = pas[:, None, :, :] - a[:, :, None, :]  # (B, Ms, Mp, 3)
    normal = cross_rows(np.broadcast_to(e[:, :, None, :], v.shape), v)
    length = np.sqrt(normal[..., 0] ** 2 + normal[..., 1] ** 2 + normal[..., 2] ** 2)
    # a plane whose normal is too short to be trusted is skipped (only adds visibility)
    ok = (length > FLOW_MIN_NORMAL) & (i[None, :, None] < ns[:, None, None]) \
        & (np.arange(mp)[None, None, :] < npass[:, None, None])
    with np.errstate(divide="ignore", invalid="ignore"):
        normal = np.where(ok[..., None], normal / np.where(ok, length, 1.0)[..., None], 0.0)
    dist = normal[..., 0] * a[:, :, None, 0] + normal[..., 1] * a[:, :, None, 1] + normal[..., 2] * a[:, :, None, 2]
    normal = normal.reshape(b, ms * mp, 3)
    dist = dist.reshape(b, ms * mp)
    ok = ok.reshape(b, ms * mp)
    # the source is a convex planar polygon and each plane holds one of its edges, so the whole
    # source lies on the side of its centre (or in the plane, when the centre is on it)
    centre = centres(source, ns)
    dc = _dists_many(centre[:, None, :], normal, dist)[:, :, 0]  # (B, K)
    dp = _dists_many(pas, normal, dist)  # (B, K, Mp)
    vp = (np.arange(mp)[None, :] < npass[:, None])[:, None, :]
    eps = FLOW_PLANE_EPSILON
    # orient the source behind: flip where its centre is in front
    sign = np.where(dc > 0, -1.0, 1.0)
    normal = normal * sign[..., None]
    dist = dist * sign
    dp = dp * sign[..., None]
    source_behind = np.abs(dc) > eps  # not planar with the source
    pass_front = np.all((dp >= -eps) | ~vp, axis=2) & np.any((dp > eps) & vp, axis=2)
    return normal, dist, ok & source_behind & pass_front


def tangent_planes(source: np.ndarray, ns: np.ndarray, pas: np.ndarray, npass: np.ndarray):
    """The separators of separating_planes, found without trying every pass vertex: for each
    source edge, at most two candidates, the planes through the edge and the pass vertices at the
    two angular extremes about the edge's line; each is then put to separating_planes' own test.
    Returns (normal (B, 2 Ms, 3), dist (B, 2 Ms), valid (B, 2 Ms)), columns 2i and 2i + 1 for
    edge i; every valid plane is bit for bit one of separating_planes' valid planes (the same
    sums in the same order).

    Why two are enough.  Seen along the edge's line (in the plane through the edge's vertex a
    perpendicular to the edge e), every plane holding the line is a line through the origin, the
    source is a ray from the origin (it lies on one side of its edge, in its plane: angle 0 here,
    the direction of its centre) and pass vertex k is a point q_k = (x, y) at angle t_k, counted
    in (0, 2 pi) from the source's ray.  Quake keeps its plane through vertex k when the source's
    centre is more than FLOW_PLANE_EPSILON behind it and every pass vertex at most
    FLOW_PLANE_EPSILON behind it (one more than that in front): every q_j lies in the closed half
    turn on one side of the line through q_k, within the tolerance, and the source's ray strictly
    on the other.  That half turn is [t_k, t_k + pi] or [t_k - pi, t_k] inside (0, 2 pi), so t_k is
    the least or the greatest angle, up to the tolerance, and the least must be below pi (y > 0)
    and the greatest above (y < 0).  Among y > 0 the least angle has the greatest x / y, among
    y < 0 the greatest angle the greatest x / |y| (no transcendental function; the frame, u across
    the edge towards the source's centre and v = e x u, need not be normalised).  A vertex on the
    edge's line (one the two portals share, as adjacent portals do) has no angle and gives no plane
    in Quake (its normal e x (p - a) is shorter than FLOW_MIN_NORMAL): it is left out of the search
    by that measure, |e x (p - a)|^2 = (|e|^2 x^2 + y^2) / |u|^2, so the next extreme gives the
    plane Quake keeps; it still takes part in the candidate's test (at distance ~0 it passes).

    Soundness.  Every plane kept here is one of Quake's, so the region kept (the front of all of
    them) is an intersection of a subset of Quake's half-spaces, never smaller than Quake's, and
    every line from the source through the pass that Quake keeps is kept.  Tightness.  Where
    several vertices sit at an extreme within the tolerance (coplanar vertices, shared edges, up to
    rounding), Quake keeps one plane for each, rotations about the edge's line by at most about
    FLOW_PLANE_EPSILON over the nearer tied vertex's distance from the line; here only the extreme
    one is kept, and the region kept is wider by that thin wedge about the edge's line.  Measured
    on 3,000 sampled (source, pass) pairs a map: lq_e0m3 21,807 planes against Quake's 26,769,
    lqdm13 22,158 against 27,814, e3m4 22,349 against 30,398; Quake's planes left out are exact
    copies of kept ones but for 1,036, 1,395 and 1,138 near-duplicates (which move a vertex of
    either polygon by at most 4.8e-9, 2.4e-8 and 1.1e-8 m) and 2, 1 and 1 others: where the tie is
    decided by rounding and the threshold falls between the tied planes (a plane within
    ~FLOW_PLANE_EPSILON of the source's own plane, the centre's distance just past the tolerance),
    the candidate chosen may fail the test that its twin passes, and that edge keeps no plane on
    that side where Quake keeps one that hardly differs from the source's own plane, to which the
    target is already clipped.  The maps' one-way rows are the same bits as with
    Quake's enumeration (pvs_merged.py's docstring).  Work: O(Ms Mp) for the angles and
    O(Ms (Mp + 1)) for the tests, against separating_planes' O(Ms Mp (Mp + 1)); the arrays are
    component-major, (3, M, B), so each step runs on contiguous rows and the least and greatest
    over the pass's vertices reduce the leading axis (a small trailing axis reduces ~40x slower)."""
    b, ms, mp = len(ns), source.shape[1], pas.shape[1]
    cols = np.arange(b)
    vs = np.arange(ms)[:, None] < ns[None, :]  # (Ms, B)
    centre = centres(source, ns)  # as separating_planes has it (its distances must be the same bits)
    # component-major copies, (3, M, B): every step below runs on contiguous rows of B
    a = np.ascontiguousarray(source.transpose(2, 1, 0))
    q = np.ascontiguousarray(pas.transpose(2, 1, 0))
    nxt = a.copy()  # each vertex's successor (vertex 0 after the last), as separating_planes
    nxt[:, :-1] = a[:, 1:]
    nxt[:, np.maximum(ns - 1, 0), cols] = a[:, 0]
    e = nxt - a
    c = centre.T[:, None, :]  # (3, 1, B)
    # a frame about each edge: u the part of (centre - a) across the edge, v = e x u (|v| = |e| |u|)
    t = c - a
    ee = e[0] * e[0] + e[1] * e[1] + e[2] * e[2]
    te = t[0] * e[0] + t[1] * e[1] + t[2] * e[2]
    u = t - (te / np.where(ee > 0, ee, 1.0)) * e
    uu = u[0] * u[0] + u[1] * u[1] + u[2] * u[2]
    v = np.stack([e[1] * u[2] - e[2] * u[1], e[2] * u[0] - e[0] * u[2], e[0] * u[1] - e[1] * u[0]])
    # each pass vertex's coordinates about each edge, (Mp, Ms, B): x = (p - a) . u, y = (p - a) . v
    x = q[0][:, None] * u[0] + q[1][:, None] * u[1] + q[2][:, None] * u[2] \
        - (a[0] * u[0] + a[1] * u[1] + a[2] * u[2])
    y = q[0][:, None] * v[0] + q[1][:, None] * v[1] + q[2][:, None] * v[2] \
        - (a[0] * v[0] + a[1] * v[1] + a[2] * v[2])
    # |e x (p - a)|^2 = (|e|^2 x^2 + y^2) / |u|^2: a vertex whose Quake normal is too short (on
    # the edge's line or within FLOW_MIN_NORMAL of it) has no angle and is left out
    live = (ee * (x * x) + y * y > (FLOW_MIN_NORMAL * FLOW_MIN_NORMAL) * uu) \
        & (np.arange(mp)[:, None, None] < npass[None, None, :])
    # angle t in (0, pi) where y > 0: the least has the greatest cot t = x / y; t in (pi, 2 pi)
    # where y < 0: the greatest has the greatest x / |y|.  An extreme on the far side of pi
    # gives no plane (the source's ray, angle 0, would lie on the pass's side)
    with np.errstate(divide="ignore", invalid="ignore"):
        key = x / np.abs(y)
    key = np.stack([np.where(live & (y > 0), key, -np.inf), np.where(live & (y < 0), key, -np.inf)], axis=1)
    # (2, Ms, B): the least angle's vertex, the greatest's (the first of equal keys, as argmax;
    # a loop over the few pass vertices costs less than argmax over a leading axis)
    best, pick = key[0], np.zeros(key.shape[1:], dtype=np.int64)
    for k in range(1, mp):
        better = key[k] > best
        best = np.where(better, key[k], best)
        pick = np.where(better, k, pick)
    has = best > -np.inf
    p = q[:, pick, cols]  # (3, 2, Ms, B)
    # the candidates' planes, exactly as separating_planes makes them
    w = p - a[:, None]
    e2 = e[:, None]
    n = np.stack([e2[1] * w[2] - e2[2] * w[1], e2[2] * w[0] - e2[0] * w[2], e2[0] * w[1] - e2[1] * w[0]])
    length = np.sqrt(n[0] ** 2 + n[1] ** 2 + n[2] ** 2)
    ok = (length > FLOW_MIN_NORMAL) & vs & has
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.where(ok, n / np.where(ok, length, 1.0), 0.0)
    a2 = a[:, None]
    dist = n[0] * a2[0] + n[1] * a2[1] + n[2] * a2[2]
    ok &= _separates(n, dist, c[:, None], q, npass)
    # (B, 2 Ms, 3), column 2i + side for edge i
    normal = n.transpose(3, 2, 1, 0).reshape(b, 2 * ms, 3)
    return normal, dist.transpose(2, 1, 0).reshape(b, 2 * ms), ok.transpose(2, 1, 0).reshape(b, 2 * ms)


def _separates(n, dist, c, q, npass):
    """separating_planes' test, in place on (n, dist) (component-major, (3, 2, Ms, B)): each
    plane turned to have the source's centre c behind it, and kept when the centre is more than
    FLOW_PLANE_EPSILON behind and every pass vertex of q (3, Mp, B) at least -FLOW_PLANE_EPSILON
    in front, one more than FLOW_PLANE_EPSILON.  The same sums in the same order as
    separating_planes, so the same bits.  Padding vertices are copies of vertex 0 (the same least
    and greatest distance), so the least and greatest need no mask."""
    mp = q.shape[1]
    dc = (n[0] * c[0] + n[1] * c[1] + n[2] * c[2]) - dist
    q = np.where(np.arange(mp)[None, :, None] < npass[None, None, :], q, q[:, :1])
    q0, q1, q2 = q[0][:, None, None], q[1][:, None, None], q[2][:, None, None]  # (Mp, 1, 1, B)
    dp = (n[0] * q0 + n[1] * q1 + n[2] * q2) - dist  # (Mp, 2, Ms, B)
    lo, hi = dp.min(axis=0), dp.max(axis=0)
    eps = FLOW_PLANE_EPSILON
    flip = dc > 0  # the centre in front: turn the plane (its least distance is then -hi)
    n *= np.where(flip, -1.0, 1.0)
    dist *= np.where(flip, -1.0, 1.0)
    least, most = np.where(flip, -hi, lo), np.where(flip, -lo, hi)
    return (np.abs(dc) > eps) & (least >= -eps) & (most > eps) & (npass > 0)


def _dists_many(w: np.ndarray, normal: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """(B, K, M): distances of each row's M vertices to each of its K planes."""
    return (normal[:, :, None, 0] * w[:, None, :, 0] + normal[:, :, None, 1] * w[:, None, :, 1]
            + normal[:, :, None, 2] * w[:, None, :, 2]) - dist[:, :, None]


def packed_separators(source, ns, pas, npass, planes=None):
    """Both ways round: planes through a source edge and a pass vertex (source behind, pass in
    front: keep the front) and through a pass edge and a source vertex (pass behind, source in
    front: a line from the source through the pass goes on behind, so keep the back).  Both ways'
    separators of each (source, pass) row, left-packed: (normal (B, S, 3), dist (B, S), count
    (B,)); row b's planes are columns [0, count[b]), each to be kept on its front.  `planes`:
    tangent_planes (the default) or separating_planes (Quake's enumeration, for the tests)."""
    planes = planes or tangent_planes
    n1, d1, v1 = planes(source, ns, pas, npass)
    n2, d2, v2 = planes(pas, npass, source, ns)
    return _pack(np.concatenate([n1, -n2], axis=1), np.concatenate([d1, -d2], axis=1),
                 np.concatenate([v1, v2], axis=1))


def _pack(normal, dist, valid):
    """Each row's valid planes moved to its first columns, in their order: (normal, dist, count)."""
    b = len(valid)
    counts = valid.sum(axis=1)
    width = max(int(counts.max()) if b else 0, 1)
    r, k = np.nonzero(valid)
    pos = np.arange(len(r)) - np.repeat(np.cumsum(counts) - counts, counts)
    out_n, out_d = np.zeros((b, width, 3)), np.zeros((b, width))
    out_n[r, pos] = normal[r, k]
    out_d[r, pos] = dist[r, k]
    return out_n, out_d, counts
