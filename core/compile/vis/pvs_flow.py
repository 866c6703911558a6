"""Directed portals and the fast mode of the conservative PVS, as Quake's vis starts: what a
portal can possibly see before any clipping.

- BasePortalVis: portal q may be seen through portal s when q reaches in front of s and s reaches
  behind q;
- SimpleFlood: the clusters reachable from s's far side through such portals are s's flood.
The fast mode ('fast') is this flood made into cluster rows: cheap and conservative, loose.  The
full mode ('flow', core/compile/vis/pvs_merged.py) starts from these floods (its 'might see' sets).

Directed portals: portal p of core/compile/vis/portals.py joins clusters (a, b) with its plane facing
from a into b; directed portal 2p goes a -> b through that plane, 2p + 1 goes b -> a through the
flipped plane (plane ^ 1).  A directed portal's 'dst' is the cluster it leads into.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import CancelledError
from ...tolerances import FLOW_PLANE_EPSILON, REACH_MARGIN
from .pvs_winding import centres, plane_distances

@dataclass
class DirectedPortals:
    src: np.ndarray  # (D,) int64 cluster it leaves
    dst: np.ndarray  # (D,) int64 cluster it enters
    plane: np.ndarray  # (D,) int64 plane table index, facing into dst
    normal: np.ndarray  # (D, 3)
    dist: np.ndarray  # (D,)
    windings: np.ndarray  # (D, M, 3) padded
    count: np.ndarray  # (D,) int64 vertex counts
    num_clusters: int

    @property
    def num(self) -> int:
        return len(self.src)

    def leaving(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR of the directed portals leaving each cluster: (first (C + 1,), portal ids)."""
        order = np.argsort(self.src, kind="stable")
        first = np.searchsorted(self.src[order], np.arange(self.num_clusters + 1))
        return first, order


def directed_portals(clusters, plane, first_vertex, num_vertices, vertices, num_clusters: int,
                     normals, dists) -> DirectedPortals:
    """Both directions of every portal, windings padded to the longest.  normals (P, 3) and dists
    (P,) are each portal's plane, facing from clusters[:, 0] into clusters[:, 1]; plane (P,) its
    plane-table index (used to recognise coplanar portals)."""
    clusters = np.asarray(clusters, dtype=np.int64).reshape(-1, 2)
    p = len(clusters)
    nv = np.asarray(num_vertices, dtype=np.int64)
    fv = np.asarray(first_vertex, dtype=np.int64)
    m = int(nv.max()) if p else 1
    w = np.zeros((p, max(m, 1), 3))
    cols = np.arange(w.shape[1])
    valid = cols[None, :] < nv[:, None]
    rows, slots = np.nonzero(valid)
    w[rows, slots] = np.asarray(vertices, dtype=np.float64)[fv[rows] + slots]
    # the reverse direction walks the winding backwards (orientation is not relied on anyway)
    rev = np.zeros_like(w)
    rev[rows, slots] = w[rows, nv[rows] - 1 - slots]
    pl = np.asarray(plane, dtype=np.int64)
    d_plane = np.empty(2 * p, dtype=np.int64)
    d_plane[0::2], d_plane[1::2] = pl, pl ^ 1
    src = np.empty(2 * p, dtype=np.int64)
    dst = np.empty(2 * p, dtype=np.int64)
    src[0::2], dst[0::2] = clusters[:, 0], clusters[:, 1]
    src[1::2], dst[1::2] = clusters[:, 1], clusters[:, 0]
    windings = np.empty((2 * p, w.shape[1], 3))
    windings[0::2], windings[1::2] = w, rev
    count = np.repeat(nv, 2)
    normals = np.asarray(normals, dtype=np.float64).reshape(-1, 3)
    dists = np.asarray(dists, dtype=np.float64)
    d_normal = np.empty((2 * p, 3))
    d_dist = np.empty(2 * p)
    d_normal[0::2], d_normal[1::2] = normals, -normals
    d_dist[0::2], d_dist[1::2] = dists, -dists
    return DirectedPortals(src, dst, d_plane, d_normal, d_dist, windings, count, int(num_clusters))


# --------------------------------------------------------------------------------------------
# Fast mode: BasePortalVis and SimpleFlood


def base_portal_vis(dp: DirectedPortals, chunk: int = 128, backend: str = "numpy") -> np.ndarray:
    """(D, D) bool: q may be seen through s -- some vertex of q in front of s's plane and some
    vertex of s behind q's plane (both beyond FLOW_PLANE_EPSILON).

    The two directions of a portal share its vertices and flip its plane, and a flipped plane's
    distances are the negated distances (exactly: rounding is symmetric), so one table of
    (undirected plane, undirected portal) answers all four direction pairs: whether the portal
    reaches beyond eps in front of the plane (hi > eps) and beyond eps behind it (lo < -eps).
    `backend` 'c': both tables by the C kernels (core/compile/vis/flow_c.py), the same bits."""
    d = dp.num
    p = d // 2
    even = np.arange(0, d, 2)
    if backend == "c":
        from . import flow_c

        w, count = dp.windings[even], dp.count[even]
        centre, radius = _spheres(w, count)
        return flow_c.base_portal_vis(w, count, dp.normal[even], dp.dist[even], centre, radius, FLOW_PLANE_EPSILON)
    above, below = _plane_portal_reach(dp.windings[even], dp.count[even], dp.normal[even], dp.dist[even],
                                       FLOW_PLANE_EPSILON, chunk)
    # front_of[s, q]: q has a vertex in front of s's plane (plane 2a + 1 flips plane 2a)
    front_of = np.empty((d, d), dtype=bool)
    front_of[0::2, 0::2] = front_of[0::2, 1::2] = above
    front_of[1::2, 0::2] = front_of[1::2, 1::2] = below
    # behind_of[q, s]: s has a vertex behind q's plane
    behind_of = np.empty((d, d), dtype=bool)
    behind_of[0::2, 0::2] = behind_of[0::2, 1::2] = below
    behind_of[1::2, 0::2] = behind_of[1::2, 1::2] = above
    allowed = front_of & behind_of.T
    np.fill_diagonal(allowed, False)
    return allowed


def _plane_portal_reach(w, count, normal, dist, eps: float, chunk: int):
    """(P, P) bool twice, [a, u]: some vertex of portal u lies more than eps in front of plane a,
    and some more than eps behind it.  Most pairs are decided by u's bounding sphere (its centre's
    distance, give or take its radius and a margin far above rounding); the vertices are read
    only for the pairs whose sphere reaches within the margin of +-eps, each vertex's distance
    computed as the plain table would (x, y, z summed in order), so the answers are the same
    (2026-11-25: lq_e0m3 1.00 s -> 0.31 s, lqdm13 0.17 -> 0.13, e3m4 0.29 -> 0.13, the same tables).
    """
    p = len(count)
    valid = np.arange(w.shape[1])[None, :] < count[:, None]
    centre, radius = _spheres(w, count)
    above = np.zeros((p, p), dtype=bool)
    below = np.zeros((p, p), dtype=bool)
    for start in range(0, p, chunk):
        sl = slice(start, min(start + chunk, p))
        n, dd = normal[sl], dist[sl]
        cd = centre[None, :, 0] * n[:, None, 0] + centre[None, :, 1] * n[:, None, 1] \
            + centre[None, :, 2] * n[:, None, 2] - dd[:, None]  # (k, P)
        near, far = cd - radius[None, :], cd + radius[None, :]
        above[sl] = near > eps
        below[sl] = far < -eps
        open_ = ((near <= eps) & (far >= eps)) | ((near <= -eps) & (far >= -eps))
        a, u = np.nonzero(open_)
        if len(a):
            a = a + start
            vd = plane_distances(w[u], normal[a], dist[a])  # (K, M)
            ok = valid[u]
            above[a, u] = (np.where(ok, vd, -np.inf).max(axis=1) > eps)
            below[a, u] = (np.where(ok, vd, np.inf).min(axis=1) < -eps)
    return above, below


def _spheres(w, count):
    """Each portal's centre (the mean of its vertices) and a radius holding every vertex, widened
    (by 1e-9 of itself and REACH_MARGIN); squares summed x, y, z in order (the C kernel reads these)."""
    valid = np.arange(w.shape[1])[None, :] < count[:, None]
    centre = centres(w, count)
    off = np.where(valid[:, :, None], w - centre[:, None, :], 0.0)
    square = off[..., 0] * off[..., 0] + off[..., 1] * off[..., 1] + off[..., 2] * off[..., 2]
    return centre, np.sqrt(square).max(axis=1, initial=0.0) * (1.0 + 1e-9) + REACH_MARGIN


def simple_flood(dp: DirectedPortals, allowed: np.ndarray, progress=None, cancel=None) -> np.ndarray:
    """(D, D) bool portal flood: from s's far cluster, through portals allowed for s, recursively.
    All sources at once, one step of the flood per iteration, over the (source, cluster) pairs
    newly reached only (each pair is expanded once)."""
    d, c = dp.num, dp.num_clusters
    flood = np.zeros((d, d), dtype=bool)
    reached = np.zeros((d, c), dtype=bool)
    first, leaving = dp.leaving()
    src, cl = np.arange(d), dp.dst.copy()
    reached[src, cl] = True
    step = 0
    while len(src):
        if cancel is not None and cancel():
            raise CancelledError()
        per = first[cl + 1] - first[cl]
        s = np.repeat(src, per)
        q = leaving[np.repeat(first[cl] - np.cumsum(per) + per, per) + np.arange(int(per.sum()))]
        ok = allowed[s, q] & ~flood[s, q]
        s, q = s[ok], q[ok]
        flood[s, q] = True
        nxt = dp.dst[q]
        new = ~reached[s, nxt]
        s, nxt = s[new], nxt[new]
        key = np.unique(s * c + nxt)
        src, cl = key // c, key % c
        reached[src, cl] = True
        step += 1
        if progress is not None:
            progress(min(0.99, step / 64), f"portal flood, step {step}")
    return flood


def cluster_rows(dp: DirectedPortals, portal_vis: np.ndarray) -> np.ndarray:
    """(C, C) bool cluster PVS from per-portal rows: each cluster sees itself, the clusters its
    portals lead into and the clusters every portal seen through them leads into.  Made
    symmetric by AND: a clear segment from A to B lies in A's one-way row and, read backwards, in
    B's, so each direction's row holds every line of sight and so does their AND (the full flow's
    rows are joined the same way, core/compile/vis/pvs_merged.py)."""
    c = dp.num_clusters
    # portal -> clusters it sees: its own dst plus dsts of the portals it sees
    sees = np.zeros((dp.num, c), dtype=bool)
    sees[np.arange(dp.num), dp.dst] = True
    if dp.num:
        by_dst = np.argsort(dp.dst, kind="stable")
        starts = np.searchsorted(dp.dst[by_dst], np.arange(c))
        cols = np.flatnonzero(np.bincount(dp.dst, minlength=c) > 0)
        sees[:, cols] |= np.logical_or.reduceat(portal_vis[:, by_dst], starts[cols], axis=1)
    vis = np.eye(c, dtype=bool)
    if dp.num:
        by_src = np.argsort(dp.src, kind="stable")
        starts = np.searchsorted(dp.src[by_src], np.arange(c))
        rows = np.flatnonzero(np.bincount(dp.src, minlength=c) > 0)
        vis[rows] |= np.logical_or.reduceat(sees[by_src], starts[rows], axis=0)
    return and_transpose(vis)


#: rows and columns of the blocks and_transpose works in (two 512 x 512 byte blocks stay in cache)
AND_BLOCK = 512


def and_transpose(vis: np.ndarray) -> np.ndarray:
    """vis & vis.T for a square bool table, in place, block by block: no second (C, C) table (441 MB
    at 21,000 clusters) and cache-sized reads of the transpose (10,000 clusters: 0.56 -> 0.20 s).
    Returns vis."""
    n = len(vis)
    for i in range(0, n, AND_BLOCK):
        for j in range(i, n, AND_BLOCK):
            upper, lower = vis[i : i + AND_BLOCK, j : j + AND_BLOCK], vis[j : j + AND_BLOCK, i : i + AND_BLOCK]
            both = upper & lower.T
            upper[...] = both
            lower[...] = both.T
    return vis


@dataclass
class PortalFlood:
    """The fast mode's portal flood as bit rows, what the full flow starts from: bits (D, (D + 7)
    // 8) packed little-endian (bit q of row s: s's flood holds q), clusters (D, (C + 7) // 8) the
    clusters its portals enter (pvs_merged.portal_cluster_bits), sizes (D,) its portal counts.  An
    eighth of the (D, D) bool table's bytes; np.asarray gives that table (for the tests)."""

    bits: np.ndarray
    clusters: np.ndarray
    sizes: np.ndarray

    @classmethod
    def from_table(cls, dp: DirectedPortals, flood: np.ndarray) -> "PortalFlood":
        flood = np.asarray(flood, dtype=bool)
        cl = np.zeros((dp.num, dp.num_clusters), dtype=bool)
        r, q = np.nonzero(flood)
        cl[r, dp.dst[q]] = True
        return cls(np.packbits(flood, axis=1, bitorder="little"), np.packbits(cl, axis=1, bitorder="little"),
                   flood.sum(axis=1, dtype=np.int64))

    def __array__(self, dtype=None, copy=None):
        table = np.unpackbits(self.bits, axis=1, bitorder="little", count=len(self.sizes)).astype(bool)
        return table if dtype is None else table.astype(dtype)


def as_portal_flood(dp: DirectedPortals, flood) -> PortalFlood:
    return flood if isinstance(flood, PortalFlood) else PortalFlood.from_table(dp, flood)


def fast_vis(dp: DirectedPortals, progress=None, cancel=None, backend: str = "numpy",
             jobs: int = 1) -> tuple[np.ndarray | PortalFlood, np.ndarray]:
    """The fast mode: (portal flood, cluster PVS (C, C)).  'numpy': the flood as its (D, D) bool
    table.  'c': as a PortalFlood, BasePortalVis, the flood and the cluster rows by the C kernels on
    bit rows (core/compile/vis/flow_c.py's fast_start; no floats but the reference's plane tests,
    the same bits) on `jobs` threads, never making a (D, D) table."""
    if backend == "c":
        from . import flow_c

        even = np.arange(0, dp.num, 2)
        centre, radius = _spheres(dp.windings[even], dp.count[even])
        bits, clusters, sizes, vis = flow_c.fast_start(dp, centre, radius, FLOW_PLANE_EPSILON, cancel, jobs)
        if progress is not None:
            progress(0.99, "portal flood")
        return PortalFlood(bits, clusters, sizes), and_transpose(vis)
    allowed = base_portal_vis(dp, backend=backend)
    flood = simple_flood(dp, allowed, progress, cancel)
    return flood, cluster_rows(dp, flood)
