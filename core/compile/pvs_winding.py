"""Batches of convex windings for the portal flow (core/compile/pvs_merged.py): clipping many windings
by many planes at once, and Quake vis's separating planes, in NumPy.

Layout: a batch of B windings is `w (B, M, 3)` float64 with `n (B,)` vertex counts; row b's
vertices are w[b, :n[b]] in order around the polygon, the rest is padding (zeros).  M is trimmed
to the largest count after every operation.  A winding with fewer than 3 vertices is empty.

Rounding must only ever add visibility: every clip keeps a margin (FLOW_CLIP_MARGIN) on the side it
keeps, a separating plane is used only when it separates within FLOW_PLANE_EPSILON, and a
winding that would grow beyond MAX_WINDING vertices is left unclipped (a superset).
"""

from __future__ import annotations

import numpy as np

from ..tolerances import FLOW_CLIP_MARGIN, FLOW_MIN_NORMAL, FLOW_PLANE_EPSILON

#: vertices a clipped winding may have; a clip that would exceed it keeps the unclipped winding
MAX_WINDING = 32


def plane_distances(w: np.ndarray, normal: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """(B, M) signed distances of each row's vertices to its row's plane (summed x, y, z in order)."""
    return w[..., 0] * normal[:, None, 0] + w[..., 1] * normal[:, None, 1] + w[..., 2] * normal[:, None, 2] \
        - dist[:, None]


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
    d_next, w_next, keep_next = _next_vertex(d, n), _next_vertex(w, n), _next_vertex(keep, n)
    cross = valid & (keep != keep_next)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(cross, d / (d - d_next), 0.0)
    point = w + t[:, :, None] * (w_next - w)
    emit = np.stack([keep, cross], axis=2).reshape(b, 2 * m)
    pts = np.stack([w, point], axis=2).reshape(b, 2 * m, 3)
    count = emit.sum(axis=1)
    over = count > MAX_WINDING
    count = np.where(count < 3, 0, count)
    width = int(count.max()) if b else 0
    pos = np.cumsum(emit, axis=1) - 1
    rows, slots = np.nonzero(emit & (pos < width))
    out = np.zeros((b, max(width, 1), 3))
    out[rows, pos[rows, slots]] = pts[rows, slots]
    if over.any():  # keep the unclipped winding (a superset: only adds visibility)
        out, count = _merge_unclipped(out, count, w, n, over)
    return _trim(out, count)


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
    vs = np.arange(ms)[None, :] < ns[:, None]
    centre = (source * vs[:, :, None]).sum(axis=1) / np.maximum(ns, 1)[:, None]
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


def _dists_many(w: np.ndarray, normal: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """(B, K, M): distances of each row's M vertices to each of its K planes."""
    return (normal[:, :, None, 0] * w[:, None, :, 0] + normal[:, :, None, 1] * w[:, None, :, 1]
            + normal[:, :, None, 2] * w[:, None, :, 2]) - dist[:, :, None]


def packed_separators(source, ns, pas, npass):
    """Both ways round: planes through a source edge and a pass vertex (source behind, pass in
    front: keep the front) and through a pass edge and a source vertex (pass behind, source in
    front: a line from the source through the pass goes on behind, so keep the back).  Both ways' separators of each (source, pass) row, left-packed: (normal (B, S, 3), dist (B, S),
    count (B,)); row b's planes are columns [0, count[b]), each to be kept on its front."""
    n1, d1, v1 = separating_planes(source, ns, pas, npass)
    n2, d2, v2 = separating_planes(pas, npass, source, ns)
    normal = np.concatenate([n1, -n2], axis=1)
    dist = np.concatenate([d1, -d2], axis=1)
    valid = np.concatenate([v1, v2], axis=1)
    counts = valid.sum(axis=1)
    width = max(int(counts.max()) if len(counts) else 0, 1)
    order = np.argsort(~valid, axis=1, kind="stable")[:, :width]
    return (np.take_along_axis(normal, order[:, :, None], axis=1), np.take_along_axis(dist, order, axis=1),
            counts)
