"""Ground truth for visibility by rays, independent of portals and of every PVS method.

Random segments between empty points are traced through the point tree (core/runtime/trace.py,
find_first_transitions, hull 0); a segment that hits nothing proves that the clusters of its two
ends see each other.  A conservative PVS must hold every pair so joined (zero misses); the pairs it
holds that no segment joined measure how loose it is (an upper bound on its looseness: more
segments can only find more pairs).

Points are drawn in the level's empty space with a cluster (vis_leaf_cluster >= 0: on a sealed map
not outside it), half uniformly by volume and half per cluster (see empty_points).  Half of the segments join two such points anywhere in the level (lines
of sight across it), half go from such a point a random distance (log-uniform, 1 cm to the level's
size) in a random direction and keep the end when it is empty too (local sight, through small
openings).  Everything is seeded: the same level and seed give the same pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..detmath import norm
from ..runtime.query import point_leaves
from ..runtime.trace import RAY_E, find_first_transitions


@dataclass
class RayTruth:
    num_clusters: int
    pairs: np.ndarray  # (K, 2) int64 cluster pairs (a < = b not implied: both orders present)
    segments_tried: int
    segments_clear: int  # segments that hit nothing (each joined its ends' clusters)

    def matrix(self) -> np.ndarray:
        """(C, C) bool: True where some clear segment joined the two clusters (symmetric)."""
        m = np.zeros((self.num_clusters, self.num_clusters), dtype=bool)
        m[self.pairs[:, 0], self.pairs[:, 1]] = True
        return m


def empty_points(level, leaf_cluster: np.ndarray, count: int, rng: np.random.Generator,
                 box: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`count` empty points with a cluster: half uniform in `box` (by volume), half drawn per
    cluster (a cluster uniformly, one of its leaves uniformly, a point uniform in that leaf's bounds
    kept when it lies in the leaf), so that small clusters are sampled as well as big ones.
    Returns (points, clusters)."""
    out, clusters, have = [], [], 0
    by_cluster = _leaves_by_cluster(leaf_cluster)
    for attempt in range(400):
        if have >= count:
            break
        n = max(4 * (count - have), 1024)
        if attempt % 2 == 0 or by_cluster is None:
            p = rng.uniform(box[0], box[1], size=(n, 3))
            leaves = point_leaves(level, p)
            keep = leaf_cluster[leaves] >= 0
        else:
            first, order = by_cluster
            c = rng.integers(0, len(first) - 1, n)
            size = first[c + 1] - first[c]
            ok = size > 0
            c, size = c[ok], size[ok]
            leaf = order[first[c] + (rng.random(len(c)) * size).astype(np.int64)]
            b = np.asarray(level.leaf_bounds)[leaf]
            lo, hi = np.maximum(b[:, 0], box[0]), np.minimum(b[:, 1], box[1])
            p = lo + rng.random((len(leaf), 3)) * (hi - lo)
            leaves = point_leaves(level, p)
            keep = (leaves == leaf) & np.all(hi > lo, axis=1)
        out.append(p[keep])
        clusters.append(leaf_cluster[leaves[keep]])
        have += int(keep.sum())
    if have == 0:
        return np.zeros((0, 3)), np.zeros(0, dtype=np.int64)
    pts, cl = np.concatenate(out), np.concatenate(clusters).astype(np.int64)
    mix = rng.permutation(len(pts))[:count]
    return pts[mix], cl[mix]


def _leaves_by_cluster(leaf_cluster: np.ndarray):
    has = np.flatnonzero(leaf_cluster >= 0)
    if not len(has):
        return None
    c = leaf_cluster[has]
    order = has[np.argsort(c, kind="stable")]
    first = np.searchsorted(np.sort(c), np.arange(int(c.max()) + 2))
    return first, order


def ray_truth(level, leaf_cluster, clear_segments: int = 100_000, seed: int = 0, batch: int = 50_000,
              max_tries: int | None = None, progress=None, cancel=None) -> RayTruth:
    """Trace random segments until `clear_segments` have hit nothing (or `max_tries`, default 30 x
    that, were traced); return the cluster pairs they joined."""
    leaf_cluster = np.asarray(leaf_cluster, dtype=np.int64)
    num_clusters = int(leaf_cluster.max()) + 1 if len(leaf_cluster) else 0
    rng = np.random.default_rng(seed)
    box = _empty_box(level, leaf_cluster)
    size = float(norm(box[1] - box[0]))
    max_tries = 30 * clear_segments if max_tries is None else max_tries
    seen = np.zeros(0, dtype=np.int64)
    tried = clear = 0
    while clear < clear_segments and tried < max_tries and num_clusters:
        if cancel is not None and cancel():
            from ..errors import CancelledError

            raise CancelledError()
        n = min(batch, max_tries - tried)
        a, ca = empty_points(level, leaf_cluster, n, rng, box)
        if not len(a):
            break
        half = len(a) // 2
        b, cb = empty_points(level, leaf_cluster, half, rng, box)
        a_far, ca_far = a[: len(b)], ca[: len(b)]
        d = rng.normal(size=(len(a) - half, 3))
        d /= norm(d, axis=1)[:, None]
        length = np.exp(rng.uniform(np.log(0.01), np.log(max(size, 0.02)), size=len(d)))
        near_end = a[half:] + d * length[:, None]
        c_near = leaf_cluster[point_leaves(level, near_end)]
        inside = (c_near >= 0) & np.all((near_end >= box[0]) & (near_end <= box[1]), axis=1)
        starts = np.concatenate([a_far, a[half:][inside]])
        ends = np.concatenate([b, near_end[inside]])
        c0 = np.concatenate([ca_far, ca[half:][inside]])
        c1 = np.concatenate([cb, c_near[inside]])
        kind = find_first_transitions(level, starts, ends, 0)[0]
        ok = kind == RAY_E
        tried += len(starts)
        clear += int(ok.sum())
        keys = np.concatenate([c0[ok] * num_clusters + c1[ok], c1[ok] * num_clusters + c0[ok]])
        seen = np.union1d(seen, keys)
        if progress is not None:
            progress(min(1.0, clear / max(clear_segments, 1)), f"ray truth: {clear} clear segments")
    pairs = np.stack([seen // max(num_clusters, 1), seen % max(num_clusters, 1)], axis=1)
    return RayTruth(num_clusters, pairs.astype(np.int64), tried, clear)


def _empty_box(level, leaf_cluster: np.ndarray) -> np.ndarray:
    """The bounds of the leaves that have a cluster (world bounds when none do)."""
    has = leaf_cluster >= 0
    if not has.any():
        return np.asarray(level.world_bounds, dtype=np.float64)
    b = np.asarray(level.leaf_bounds)[has]
    lo, hi = b[:, 0].min(axis=0), b[:, 1].max(axis=0)
    w = np.asarray(level.world_bounds, dtype=np.float64)
    return np.stack([np.maximum(lo, w[0]), np.minimum(hi, w[1])])


def compare(pvs: np.ndarray, truth: RayTruth) -> dict:
    """Misses (pairs a clear segment joined that the PVS lacks) and looseness (pairs the PVS holds
    that no segment joined, off the diagonal) of a (C, C) bool PVS."""
    m = truth.matrix()
    pvs = np.asarray(pvs, dtype=bool)
    misses = np.argwhere(m & ~pvs)
    off = ~np.eye(len(pvs), dtype=bool)
    held = int((pvs & off).sum())
    unproven = int((pvs & ~m & off).sum())
    return {
        "misses": int(len(misses)),
        "first_misses": misses[:5].tolist(),
        "pairs_joined": int((m & off).sum()),
        "pairs_in_pvs": held,
        "pairs_unproven": unproven,
        "looseness": unproven / held if held else 0.0,
        "segments_tried": truth.segments_tried,
        "segments_clear": truth.segments_clear,
    }
