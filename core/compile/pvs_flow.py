"""Conservative PVS by portal flow, as Quake's vis: what a portal can see is found by flowing
through chains of portals, each later portal clipped by the separating planes between the source
and the portal before it.  Two modes:

- fast ('fast'): Quake's BasePortalVis + SimpleFlood only.  Portal q may be seen through portal s
  when q reaches in front of s and s reaches behind q; the clusters reachable from s's far side
  through such portals are s's flood.  Cheap and conservative, loose.
- full ('flow'): RecursiveLeafFlow, every chain of portals from each source portal, pruned by the
  fast mode's rows (a portal outside a chain's 'might see' set is never entered) and by results
  already final (a portal whose own flow is done limits what can be seen through it).

Directed portals: portal p of core/compile/portals.py joins clusters (a, b) with its plane facing
from a into b; directed portal 2p goes a -> b through that plane, 2p + 1 goes b -> a through the
flipped plane (plane ^ 1).  A directed portal's 'dst' is the cluster it leads into.

The full flow runs in NumPy over batches of chains ('paths'), not one chain at a time: a path is
(source portal, cluster reached, source winding, pass winding, last plane, might-see bits).  A
work stack of path batches (depth first, so memory stays bounded) is expanded by all portals
leaving each path's cluster at once; windings are clipped in batches (core/compile/pvs_winding.py).
Sources go in waves, fewest flood bits first, so that later waves use earlier waves' final rows.
Rounding only adds visibility (margins in pvs_winding); the result is then made symmetric (a
pair one way is a pair both ways), which also only adds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import CancelledError
from ..tolerances import FLOW_PLANE_EPSILON
from .pvs_winding import clip_by_planes, clip_front, clip_to_separators, packed_separators

#: paths expanded together in one batch of the full flow
PATH_BATCH = 4096
SEPARATORS_PER_PARENT = True
#: default path expansions one source portal may make before its remaining paths give up clipping
#: and take everything they might still see (conservative, looser); None: no limit
DEFAULT_PATH_BUDGET = 400
#: prune by what the source's cluster already sees through any of its portals (its row is what is
#: kept) instead of by the source portal's own row; a done portal's row then no longer limits
#: later paths (it may lack what a sibling portal saw), the flood does.  lqdm13: 951k -> 824k paths,
#: 47.3 -> 35.4 s CPU, avg clusters visible 400.65 -> 400.51
CLUSTER_PRUNE = True


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


def base_portal_vis(dp: DirectedPortals, chunk: int = 128) -> np.ndarray:
    """(D, D) bool: q may be seen through s -- some vertex of q in front of s's plane and some
    vertex of s behind q's plane (both beyond FLOW_PLANE_EPSILON)."""
    d = dp.num
    valid = np.arange(dp.windings.shape[1])[None, :] < dp.count[:, None]
    flat = dp.windings[valid]  # (V, 3), portal by portal
    starts = np.concatenate(([0], np.cumsum(dp.count)[:-1]))
    front_of = np.zeros((d, d), dtype=bool)  # [s, q]: q has a vertex in front of s's plane
    behind_of = np.zeros((d, d), dtype=bool)  # [q, s]: s has a vertex behind q's plane
    eps = FLOW_PLANE_EPSILON
    for start in range(0, d, chunk):
        sl = slice(start, min(start + chunk, d))
        n, dd = dp.normal[sl], dp.dist[sl]
        dist = flat[:, None, 0] * n[None, :, 0] + flat[:, None, 1] * n[None, :, 1] + flat[:, None, 2] * n[None, :, 2] \
            - dd[None, :]  # (V, k), summed x, y, z in order
        front_of[sl] = (np.maximum.reduceat(dist, starts, axis=0) > eps).T
        behind_of[sl] = (np.minimum.reduceat(dist, starts, axis=0) < -eps).T
    allowed = front_of & behind_of.T
    np.fill_diagonal(allowed, False)
    return allowed


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
    portals lead into and the clusters every portal seen through them leads into; symmetric."""
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
    return vis | vis.T


def fast_vis(dp: DirectedPortals, progress=None, cancel=None) -> tuple[np.ndarray, np.ndarray]:
    """The fast mode: (portal flood (D, D), cluster PVS (C, C))."""
    allowed = base_portal_vis(dp)
    flood = simple_flood(dp, allowed, progress, cancel)
    return flood, cluster_rows(dp, flood)


# --------------------------------------------------------------------------------------------
# Full mode: RecursiveLeafFlow over batches of paths


@dataclass
class _Paths:
    source: np.ndarray  # (B,) directed source portal
    cluster: np.ndarray  # (B,) cluster reached
    last_plane: np.ndarray  # (B,) plane of the last portal passed
    sw: np.ndarray  # (B, M, 3) source winding (clipped)
    sn: np.ndarray
    pw: np.ndarray  # (B, M, 3) pass winding; pn == 0 before the first pass
    pn: np.ndarray
    might: np.ndarray  # (B, D8) uint8 packed might-see bits

    def take(self, rows) -> "_Paths":
        return _Paths(*(getattr(self, f)[rows] for f in self.__dataclass_fields__))


def full_vis(dp: DirectedPortals, flood: np.ndarray, progress=None, cancel=None,
             stats: dict | None = None, budget: int | None = DEFAULT_PATH_BUDGET) -> np.ndarray:
    """(D, D) bool: the portals each directed portal sees through chains of portals (full mode).

    `budget` bounds the work per source portal: once a source has expanded that many paths, each
    of its remaining paths stops and marks every portal it might still see (its might-see bits,
    already narrowed by the portals it went through) as seen.  That is what the flow would find
    at most, so the result stays conservative; only its tightness depends on the budget."""
    d = dp.num
    if d == 0:
        return np.zeros((0, 0), dtype=bool)
    flood_bits = np.packbits(flood, axis=1, bitorder="little")
    vis_bits = np.zeros_like(flood_bits)
    test_bits = flood_bits.copy()  # a portal's flood, then its own final row once done
    seen_bits = np.zeros((dp.num_clusters, flood_bits.shape[1]), dtype=np.uint8) if CLUSTER_PRUNE else None
    first, leaving = dp.leaving()
    order = np.argsort(flood.sum(axis=1), kind="stable")
    done, expanded = 0, 0
    wave = 64
    while done < d:
        sources = order[done: done + wave]
        expanded += _flow_wave(dp, sources, flood_bits, test_bits, vis_bits, first, leaving, cancel, budget,
                               seen_bits)
        if not CLUSTER_PRUNE:
            test_bits[sources] = vis_bits[sources]
        done += len(sources)
        wave = min(wave * 2, 512)
        if progress is not None:
            progress(done / d, f"portal flow {done}/{d} portals")
    if stats is not None:
        stats["paths_expanded"] = expanded
    return np.unpackbits(vis_bits, axis=1, bitorder="little", count=d).astype(bool)


def _flow_wave(dp, sources, flood_bits, test_bits, vis_bits, first, leaving, cancel, budget, seen_bits) -> int:
    b = len(sources)
    start = _Paths(sources.astype(np.int64), dp.dst[sources], dp.plane[sources], dp.windings[sources].copy(),
                   dp.count[sources].copy(), np.zeros((b, 1, 3)), np.zeros(b, dtype=np.int64),
                   flood_bits[sources].copy())
    stack = [start]
    expanded = 0
    spent = np.zeros(dp.num, dtype=np.int64)
    while stack:
        if cancel is not None and cancel():
            raise CancelledError()
        paths = stack.pop()
        while stack and len(paths.source) + len(stack[-1].source) <= PATH_BATCH:  # fewer, larger batches
            paths = _concat(paths, stack.pop())
        if budget is not None:
            np.add.at(spent, paths.source, 1)
            over = spent[paths.source] > budget
            if over.any():  # give up clipping: everything these paths might still see is seen
                rows = np.flatnonzero(over)
                np.bitwise_or.at(vis_bits, paths.source[rows], paths.might[rows])
                if seen_bits is not None:
                    np.bitwise_or.at(seen_bits, dp.src[paths.source[rows]], paths.might[rows])
                paths = paths.take(np.flatnonzero(~over))
        children = _expand(dp, paths, test_bits, vis_bits, first, leaving, seen_bits)
        expanded += len(paths.source)
        for i in range(0, len(children.source), PATH_BATCH):
            stack.append(children.take(slice(i, i + PATH_BATCH)))
    return expanded


def _concat(a: _Paths, b: _Paths) -> _Paths:
    out = []
    for f in a.__dataclass_fields__:
        x, y = getattr(a, f), getattr(b, f)
        if x.ndim == 3 and x.shape[1] != y.shape[1]:
            m = max(x.shape[1], y.shape[1])
            x = np.concatenate([x, np.zeros((len(x), m - x.shape[1], 3))], axis=1)
            y = np.concatenate([y, np.zeros((len(y), m - y.shape[1], 3))], axis=1)
        out.append(np.concatenate([x, y]))
    return _Paths(*out)


def _bit(bits: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    return ((bits[rows, cols >> 3] >> (cols & 7).astype(np.uint8)) & 1).astype(bool)


def _expand(dp, paths: _Paths, test_bits, vis_bits, first, leaving, seen_bits=None) -> _Paths:
    """One step of RecursiveLeafFlow for a batch of paths: every portal leaving each path's cluster."""
    per = first[paths.cluster + 1] - first[paths.cluster]
    row = np.repeat(np.arange(len(per)), per)
    if not len(row):
        return paths.take(row)
    q = leaving[np.repeat(first[paths.cluster] - np.cumsum(per) + per, per) + np.arange(len(row))]
    src = paths.source[row]
    # can't possibly see it; can't go back out through a coplanar face
    keep = _bit(paths.might, row, q) & (dp.plane[q] != (paths.last_plane[row] ^ 1))
    row, q, src = row[keep], q[keep], src[keep]
    # Quake's 'more' test: a portal already seen, through which nothing new can be seen, is skipped
    might = paths.might[row] & test_bits[q]
    if seen_bits is None:
        seen = _bit(vis_bits, src, q)
        more = np.any(might & ~vis_bits[src], axis=1)
    else:  # what the source's cluster already sees, through any of its portals
        seen = _bit(seen_bits, dp.src[src], q)
        more = np.any(might & ~seen_bits[dp.src[src]], axis=1)
    keep = ~seen | more
    row, q, src, might = row[keep], q[keep], src[keep], might[keep]
    if not len(row):
        return paths.take(row)
    # the target clipped to the front of the source portal's plane
    tw, tn = clip_front(dp.windings[q], dp.count[q], dp.normal[src], dp.dist[src])
    # the source clipped to the back of the target's plane
    sw, sn = clip_front(paths.sw[row], paths.sn[row], -dp.normal[q], -dp.dist[q])
    ok = (tn > 0) & (sn > 0)
    row, q, src, might, tw, tn, sw, sn = row[ok], q[ok], src[ok], might[ok], tw[ok], tn[ok], sw[ok], sn[ok]
    first_step = paths.pn[row] == 0
    later = np.flatnonzero(~first_step)
    if len(later) and SEPARATORS_PER_PARENT:
        # separators of each parent path's (source, pass), shared by its children: the parent's
        # source contains each child's clipped source, so its separators are valid (looser)
        parents, inverse = np.unique(row[later], return_inverse=True)
        sn_, sd_, sc_ = packed_separators(paths.sw[parents], paths.sn[parents], paths.pw[parents], paths.pn[parents])
        cw, cn = clip_by_planes(tw[later], tn[later], sn_[inverse], sd_[inverse], sc_[inverse])
    elif len(later):
        pw, pn = paths.pw[row[later]], paths.pn[row[later]]
        cw, cn = clip_to_separators(sw[later], sn[later], pw, pn, tw[later], tn[later])
    if len(later):
        if cw.shape[1] > tw.shape[1]:
            grown = np.zeros((len(tn), cw.shape[1], 3))
            grown[:, : tw.shape[1]] = tw
            tw = grown
        tw[later] = 0.0
        tw[later, : cw.shape[1]] = cw
        tn = tn.copy()
        tn[later] = cn
    ok = tn > 0
    row, q, src, might, tw, tn, sw, sn = row[ok], q[ok], src[ok], might[ok], tw[ok], tn[ok], sw[ok], sn[ok]
    bit = np.left_shift(np.uint8(1), (q & 7).astype(np.uint8))
    np.bitwise_or.at(vis_bits, (src, q >> 3), bit)
    if seen_bits is not None:
        np.bitwise_or.at(seen_bits, (dp.src[src], q >> 3), bit)
    return _Paths(src, dp.dst[q], dp.plane[q], sw, sn, tw, tn, might)
