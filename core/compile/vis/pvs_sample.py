"""The thesis's PVS by sampling (chapter 3): DISTRIBUTE-SAMPLE-POINTS, CHECK-VISIBILITY and
TRACE-VISIBILITY, with batch rays through the point tree.  Fast, and may miss: two clusters that
see each other only through lines no pair of sample points lies on are reported invisible.

- DISTRIBUTE-SAMPLE-POINTS: the thesis spreads points on every node's splitting plane within the
  node's bounds and keeps those in the openings between leaves; the portals are exactly those
  openings, so the points are laid on each portal's winding: a grid of `spacing` metres, plus the
  centre, pulled a millimetre towards the centre so none lies on a wall, and nudged at random by
  less than that in the portal's plane (no exact alignments with edges where solids touch).  A cluster's sample
  points are those of its portals (every point belongs to the two clusters it joins, as in the
  thesis, where 'a point ends in zero or two leaves'), each copy pushed a millimetre into its
  cluster so a ray joins the two clusters it names and never lies in a portal's plane.
- CHECK-VISIBILITY(L1, C): rays between sample points of both clusters; visible when one hits
  nothing (core/runtime/trace.py find_first_transitions, hull 0).  At most `rays_per_pair` pairs
  of points per cluster pair, drawn at random (seeded), all pairs' rays in one batch.
- TRACE-VISIBILITY: every cluster sees itself and its neighbours; then, round after round, each
  cluster checks the neighbours of the clusters it sees that it has not checked yet, until no
  cluster finds a new one.  Rows are symmetric (a pair found is set both ways).
"""

from __future__ import annotations

import numpy as np

from ...errors import CancelledError
from ...runtime.trace import RAY_E, find_first_transitions
from .pvs_flow import DirectedPortals

#: m. Default grid spacing of the sample points on a portal.
DEFAULT_SPACING = 1.0
#: m. How far sample points are pulled towards their portal's centre.
INSET = 1e-3
MAX_POINTS_PER_PORTAL = 16
RAYS_PER_PAIR = 48
RAY_BATCH = 200_000


def distribute_sample_points(dp: DirectedPortals, spacing: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Sample points on every (undirected) portal: (points (S, 3), portal index (S,))."""
    points, owner = [], []
    for p in range(dp.num // 2):
        w = dp.windings[2 * p, : dp.count[2 * p]]
        n = dp.normal[2 * p]
        centre = w.mean(axis=0)
        u = w[1] - w[0]
        u /= np.sqrt(u @ u)
        v = np.cross(n, u)
        uv = np.stack([(w - centre) @ u, (w - centre) @ v], axis=1)
        lo, hi = uv.min(axis=0), uv.max(axis=0)
        gu = np.arange(lo[0] + 0.5 * spacing, hi[0], spacing)
        gv = np.arange(lo[1] + 0.5 * spacing, hi[1], spacing)
        grid = np.stack(np.meshgrid(gu, gv, indexing="ij"), axis=-1).reshape(-1, 2)
        edges = np.roll(uv, -1, axis=0) - uv
        cross = edges[None, :, 0] * (grid[:, None, 1] - uv[None, :, 1]) - edges[None, :, 1] * (grid[:, None, 0] - uv[None, :, 0])
        inside = np.all(cross >= 0, axis=1) | np.all(cross <= 0, axis=1)
        grid = grid[inside]
        if len(grid) > MAX_POINTS_PER_PORTAL - 1:
            grid = grid[rng.choice(len(grid), MAX_POINTS_PER_PORTAL - 1, replace=False)]
        pts = np.concatenate([centre[None, :], centre + grid[:, :1] * u + grid[:, 1:] * v, w])
        pts = pts + (centre - pts) * np.minimum(1.0, INSET / np.maximum(np.sqrt(((centre - pts) ** 2).sum(1)), 1e-12))[:, None]
        # a random nudge in the plane, smaller than the inset: points on a regular lattice would
        # line up exactly with edges where two solids touch, which rays may graze
        jitter = rng.uniform(-0.3 * INSET, 0.3 * INSET, size=(len(pts), 2))
        pts = pts + jitter[:, :1] * u + jitter[:, 1:] * v
        points.append(pts)
        owner.append(np.full(len(pts), p))
    if not points:
        return np.zeros((0, 3)), np.zeros(0, dtype=np.int64)
    return np.concatenate(points), np.concatenate(owner)


def sample_vis(level, dp: DirectedPortals, leaf_cluster, spacing=None, seed: int = 0,
               rays_per_pair: int = RAYS_PER_PAIR, progress=None, cancel=None, stats=None) -> np.ndarray:
    """(C, C) bool PVS by TRACE-VISIBILITY over the portals' sample points."""
    c = dp.num_clusters
    rng = np.random.default_rng(seed)
    pts, owner = distribute_sample_points(dp, spacing or DEFAULT_SPACING, rng)
    # a cluster's points: those of the portals it touches, pushed INSET into the cluster (a point
    # on the portal's plane would let rays lying in that plane join clusters on its far side)
    n = dp.normal[2 * owner]
    pts = np.concatenate([pts - INSET * n, pts + INSET * n])
    cl = np.concatenate([dp.src[2 * owner], dp.dst[2 * owner]])
    order = np.argsort(cl, kind="stable")
    first = np.searchsorted(cl[order], np.arange(c + 1))
    member = order
    neighbours = np.zeros((c, c), dtype=bool)
    neighbours[dp.src, dp.dst] = True
    visible = neighbours | np.eye(c, dtype=bool)
    checked = visible.copy()
    rounds = rays = 0
    while True:
        if cancel is not None and cancel():
            raise CancelledError()
        cand = (visible.astype(np.uint8) @ neighbours.astype(np.uint8)).astype(bool) & ~checked
        cand = np.triu(cand | cand.T, 1)
        pairs = np.argwhere(cand)
        if not len(pairs):
            break
        checked[pairs[:, 0], pairs[:, 1]] = checked[pairs[:, 1], pairs[:, 0]] = True
        seen = _check_visibility(level, pts, first, member, pairs, rays_per_pair, rng, cancel)
        rays += int(min(rays_per_pair, 10**9)) * len(pairs)
        hit = pairs[seen]
        visible[hit[:, 0], hit[:, 1]] = visible[hit[:, 1], hit[:, 0]] = True
        rounds += 1
        if progress is not None:
            progress(min(0.99, checked.mean()), f"sampling, round {rounds}: {int(visible.sum())} pairs")
    if stats is not None:
        stats.update(sample_points=int(len(pts)), sample_rounds=rounds, sample_rays=rays)
    return visible


def _check_visibility(level, pts, first, member, pairs, per_pair, rng, cancel) -> np.ndarray:
    """CHECK-VISIBILITY for many cluster pairs: True where one of up to per_pair rays between
    their sample points hits nothing."""
    na = first[pairs[:, 0] + 1] - first[pairs[:, 0]]
    nb = first[pairs[:, 1] + 1] - first[pairs[:, 1]]
    k = np.minimum(na * nb, per_pair)
    out = np.zeros(len(pairs), dtype=bool)
    pair_of = np.repeat(np.arange(len(pairs)), k)
    if not len(pair_of):
        return out
    ia = first[pairs[pair_of, 0]] + rng.integers(0, np.maximum(na[pair_of], 1))
    ib = first[pairs[pair_of, 1]] + rng.integers(0, np.maximum(nb[pair_of], 1))
    a, b = pts[member[ia]], pts[member[ib]]
    for s in range(0, len(a), RAY_BATCH):
        if cancel is not None and cancel():
            raise CancelledError()
        kind = find_first_transitions(level.point_tree(), a[s: s + RAY_BATCH], b[s: s + RAY_BATCH], 0)[0]
        clear = kind == RAY_E
        out[pair_of[s: s + RAY_BATCH][clear]] = True
    return out
