"""The visibility stage of a bake: portals -> a cluster PVS by the chosen method -> the level's
compressed rows (core/runtime/pvs.py), with counts and times for the CLI and the benchmarks.

Methods (`bake --vis`):
- 'fast'   conservative portal flow, rough mode (portal-to-portal flood only): the default, seconds
           even on the biggest maps;
- 'flow'   conservative portal flow, full mode (core/compile/vis/pvs_merged.py): Quake's separating
           planes with the chains to each portal merged; tight (see docs/VISIBILITY.md);
- 'sample' the thesis's sampling (core/compile/vis/pvs_sample.py): fast, may miss;
- 'none'   no PVS stored.

Clusters: the portals' dense clusters (empty structural leaves; detail leaves share their
structural leaf's).  Clusters marked `outside` (on a sealed map, those the void reaches) get no
row: their leaves store cluster -1, and portals touching them are ignored.  Void portals (to the
outside of the world box) are never flowed through.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ...runtime.pvs_rows import compress_rows, pack_bits
from .portals import build_portals
from .pvs_flow import DirectedPortals, directed_portals, fast_vis
from .pvs_merged import merged_flow
from .pvs_sample import sample_vis

VIS_MODES = ("flow", "fast", "sample", "none")
DEFAULT_VIS_MODE = "fast"


@dataclass
class VisResult:
    mode: str
    visible: np.ndarray  # (C, C) bool cluster PVS, symmetric, diagonal set
    leaf_cluster: np.ndarray  # (L,) int32, -1: no row
    stats: dict = field(default_factory=dict)


def inner_directed_portals(portals, outside=None) -> tuple[DirectedPortals, np.ndarray, np.ndarray]:
    """The directed portals between kept clusters, renumbered densely: (portals, kept cluster ids
    (C',), old -> new cluster map (C,), -1 for dropped)."""
    c = int(portals.num_clusters)
    keep = np.ones(c, dtype=bool)
    if outside is not None:
        keep &= ~np.asarray(outside, dtype=bool)[:c]
    new_of = np.full(c + 1, -1, dtype=np.int64)  # the extra slot: the world box's outside
    new_of[:c][keep] = np.arange(int(keep.sum()))
    cl = np.asarray(portals.clusters, dtype=np.int64).reshape(-1, 2)
    inner = np.flatnonzero(np.all(new_of[cl] >= 0, axis=1))
    fv = np.asarray(portals.first_vertex, dtype=np.int64)[inner]
    nv = np.asarray(portals.num_vertices, dtype=np.int64)[inner]
    dp = directed_portals(new_of[cl[inner]], np.asarray(portals.plane, dtype=np.int64)[inner], fv, nv,
                          portals.vertices, int(keep.sum()), np.asarray(portals.normals)[inner],
                          np.asarray(portals.dists)[inner])
    return dp, np.flatnonzero(keep), new_of[:c]


def void_reachable(portals) -> np.ndarray:
    """(C,) bool: the clusters joined to the outside of the world box through portals (on a sealed
    map, the cells outside it).  A plain flood over the portal graph."""
    c = int(portals.num_clusters)
    cl = np.asarray(portals.clusters, dtype=np.int64).reshape(-1, 2)
    reached = np.zeros(c + 1, dtype=bool)
    reached[c] = True
    while True:
        step = reached[cl[:, 0]] | reached[cl[:, 1]]
        new = reached.copy()
        new[cl[step].ravel()] = True
        if (new == reached).all():
            return reached[:c]
        reached = new


def compute_vis(level, portals, mode: str = DEFAULT_VIS_MODE, outside=None, progress=None, cancel=None,
                sample_spacing: float | None = None, jobs: int | None = None, farm=None,
                backend: str = "auto") -> VisResult:
    """The cluster PVS of `level` by `mode` ('flow', 'fast' or 'sample'); `jobs` cores for the
    flow (None: all of them), or a cluster's workers (`farm`, pvs_merged.merged_flow): the rows do
    not depend on either.  `backend` runs the fast mode and the flow: 'c' (the C kernels,
    core/compile/vis/flow_c.py), 'numpy' (the reference) or 'auto' (C where the library loads);
    the same rows either way."""
    if mode not in VIS_MODES or mode == "none":
        raise ValueError(f"unknown visibility mode {mode!r}")
    t0 = time.perf_counter()
    dp, kept, new_of = inner_directed_portals(portals, outside)
    leaf_cluster = np.asarray(portals.cluster_of_leaf, dtype=np.int64)
    leaf_cluster = np.where(leaf_cluster >= 0, new_of[np.maximum(leaf_cluster, 0)], -1).astype(np.int32)
    stats = {"portals": dp.num // 2, "clusters": dp.num_clusters, "outside_clusters": int(len(new_of) - len(kept))}
    if mode == "sample":
        visible = sample_vis(level, dp, leaf_cluster, spacing=sample_spacing, progress=progress, cancel=cancel,
                             stats=stats)
    else:
        from .flow_c import resolve_backend

        stats["vis_backend"] = resolve_backend(backend)
        bar = _split(progress, 0.1 if mode == "flow" else 1.0)
        from .wave_jobs import default_jobs

        flood, visible = fast_vis(dp, bar[0], cancel, backend=stats["vis_backend"],
                                  jobs=max(1, min(jobs or default_jobs(), 8)))
        stats["fast_seconds"] = time.perf_counter() - t0
        if mode == "flow":
            visible = merged_flow(dp, flood, bar[1], cancel, stats, jobs=jobs, farm=farm,
                                  backend=stats["vis_backend"])
    stats["seconds"] = time.perf_counter() - t0
    stats.update(visible_counts(visible, leaf_cluster))
    return VisResult(mode, visible, leaf_cluster, stats)


def _split(progress, first: float):
    if progress is None:
        return None, None
    return (lambda f, m="": progress(first * f, m)), (lambda f, m="": progress(first + (1 - first) * f, m))


#: table entries visible_counts turns into float64 at once (8 bytes each)
VISIBLE_COUNT_BLOCK = 1 << 21


def visible_counts(visible: np.ndarray, leaf_cluster: np.ndarray) -> dict:
    """Average visible clusters per cluster, and average visible leaves per empty leaf with a
    cluster (what Quake's vis prints as 'average leafs visible')."""
    c = len(visible)
    if c == 0:
        return {"avg_clusters_visible": 0.0, "avg_leaves_visible": 0.0}
    lc = leaf_cluster[leaf_cluster >= 0]
    leaves_in = np.bincount(lc, minlength=c)
    # the leaves each cluster sees: the rows times the leaf counts, a block of rows at a time (the
    # table as float64 whole would take 8 bytes a pair, its nonzero pairs 16: 1.5 GB for an open
    # world of 10,000 clusters); sums of integers, exact in float64 in any order
    weights = leaves_in.astype(np.float64)
    per_cluster_leaves = np.zeros(c)
    step = max(1, VISIBLE_COUNT_BLOCK // c)
    for a in range(0, c, step):
        per_cluster_leaves[a : a + step] = visible[a : a + step].astype(np.float64) @ weights
    return {
        "avg_clusters_visible": float(np.count_nonzero(visible) / c),
        "avg_leaves_visible": float((per_cluster_leaves[lc]).mean()) if len(lc) else 0.0,
    }


def store_vis(level, result: VisResult) -> None:
    """Compress the rows into the level (vis_leaf_cluster, vis_row_offset, vis_rows)."""
    offsets, rows = compress_rows(pack_bits(result.visible))
    level.vis_leaf_cluster = result.leaf_cluster.astype(np.int32)
    level.vis_row_offset = offsets
    level.vis_rows = rows
    clear_cull_portals(level)  # numbered by the rows they came with: bake_vis stores them anew
    level.stats["vis"] = dict(result.stats, mode=result.mode, compressed_bytes=int(len(rows)))


def clear_cull_portals(level) -> None:
    """Drop the culling portals (a level whose PVS is replaced must not keep the old ones)."""
    level.cull_num_clusters = np.zeros(0, dtype=np.int32)
    level.cull_portal_clusters = np.zeros((0, 2), dtype=np.int32)
    level.cull_portal_plane = np.zeros(0, dtype=np.int32)
    level.cull_portal_first = np.zeros(0, dtype=np.int32)
    level.cull_portal_count = np.zeros(0, dtype=np.int32)
    level.cull_portal_vertices = np.zeros((0, 3))


def store_cull_portals(level, portals, outside=None) -> None:
    """The portals between the level's visibility clusters, for the camera queries' portal walk
    (core/runtime/cull.py): level.cull_* (.bbk sections CQNC, CQPC, CQPL, CQPF, CQPN, CQPV).  Clusters
    are numbered as compute_vis numbers them (kept clusters densely, in order), so portal q joins
    vis clusters cull_portal_clusters[q] and its plane faces from the first into the second."""
    _, _, new_of = inner_directed_portals(portals, outside)
    cl = np.asarray(portals.clusters, dtype=np.int64).reshape(-1, 2)
    new_of = np.concatenate([new_of, [-1]])  # the outside of the world box
    inner = np.flatnonzero(np.all(new_of[cl] >= 0, axis=1))
    first = np.asarray(portals.first_vertex, dtype=np.int64)[inner]
    count = np.asarray(portals.num_vertices, dtype=np.int64)[inner]
    pos = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    level.cull_num_clusters = np.array([int(np.count_nonzero(new_of >= 0))], dtype=np.int32)
    level.cull_portal_clusters = new_of[cl[inner]].astype(np.int32).reshape(-1, 2)
    level.cull_portal_plane = np.asarray(portals.plane, dtype=np.int32)[inner]
    level.cull_portal_first = (np.cumsum(count) - count).astype(np.int32)
    level.cull_portal_count = count.astype(np.int32)
    level.cull_portal_vertices = np.asarray(portals.vertices, dtype=np.float64)[np.repeat(first, count) + pos].reshape(-1, 3)


def bake_vis(level, mode: str = DEFAULT_VIS_MODE, portals=None, outside=None, progress=None, cancel=None,
             jobs: int | None = None, farm=None, backend: str = "auto") -> VisResult:
    """The bake's visibility stage: portals (built here unless given), the clusters outside a
    sealed map left out (`outside`; by default those the void reaches, unless it reaches every
    cluster: a leaking map baked anyway keeps them all), the PVS by `mode`, stored in the level."""
    t0 = time.perf_counter()
    times = level.stats.setdefault("times", {})
    if portals is None:
        portals = build_portals(level, cancel=cancel)
        times["portals"] = time.perf_counter() - t0
    if outside is None:
        outside = void_reachable(portals)
        if outside.all():
            outside = None
    t1 = time.perf_counter()
    result = compute_vis(level, portals, mode, outside=outside, progress=progress, cancel=cancel, jobs=jobs,
                         farm=farm, backend=backend)
    store_vis(level, result)
    store_cull_portals(level, portals, outside)
    times["vis"] = time.perf_counter() - t1
    return result
