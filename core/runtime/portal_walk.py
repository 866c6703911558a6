"""The portal engine's walk (the thesis's chapter 3, Figure 10; Doom 3's portal-clipped frustums),
for many cameras at once in NumPy.

From the camera's cluster, each portal leaving it narrows the frustum to the part of the portal
the frustum sees, and the walk goes on into the cluster behind with the narrowed frustum; a leaf
of a reached cluster is drawn when its box meets a frustum that reached the cluster.  A line of
sight from the eye to a point crosses exactly the portals between the cells it passes (cells are
convex: a line enters each once), so it lies inside every narrowed frustum along that chain:
nothing truly seen is lost.

Frustums as view-plane polygons.  Every frustum here is a cone from the eye cut by the far plane,
described by its cross-section in the camera's view plane (x' = (p - e).right / (p - e).forward,
y' likewise with up): a convex polygon with DIRECTIONS fixed edge directions, stored as its
support values s_j = max a_j x' + b_j y' over the region (a k-DOP; the camera's own rectangle is
one exactly).  Narrowing by a portal: project the portal's vertices (the portal is first clipped
by a near plane that provably removes no visible point, below), take their supports p_j, and the
narrowed frustum is min(s, p): it holds the projection of (portal inside the frustum), since the
true cross-section lies inside both polygons.  The walk keeps, per camera and cluster, the frustum
it has explored from there (the union bound, max of supports) and goes on only with frustums that
grow it; so each cluster is walked from again only when more of it is seen, and loops cannot run.

Conservative at every portal edge (docs/CAMERA.md):
- projected supports are widened by CULL_SUPPORT_SLACK (relative and absolute) before use;
- the near clip keeps everything within CULL_MARGIN of depth z_min = dist(eye, portal plane) /
  sqrt(1 + tan_h^2 + tan_v^2), and a point at least that far from the eye inside the camera's
  frustum has at least that depth: nothing visible is cut; an eye within CULL_EYE_EPSILON of the
  portal's plane passes it with the frustum unnarrowed;
- a frustum is dropped only when two opposite supports leave no room (s_j + s_opp < 0), a
  necessary condition: an empty frustum may be kept, never a non-empty one dropped;
- planes built from the supports for the leaf boxes are moved CULL_MARGIN outward;
- a camera whose walk passes CULL_WALK_BUDGET frustums or MAX_WALK_DEPTH portals gets the
  frustum mode's answer (a superset) and says so (`overflow`).

Layout of the frontier: cam (M,), cluster (M,), support (M, DIRECTIONS).  Directed portals: portal
q from clusters[q, 0] to clusters[q, 1] is 2q (sign +1: along the plane's normal), back is
2q + 1; `out_first` (C + 1,) / `out_portals` list them by source cluster (core/runtime/cull.py).
"""

from __future__ import annotations

import numpy as np

from ..detmath import cos, dot, sin
from ..tolerances import CULL_EYE_EPSILON, CULL_MARGIN, CULL_SUPPORT_SLACK
from .camera import boxes_inside_planes, camera_basis

#: edge directions of the view-plane polygons (a multiple of 4: the camera's rectangle is exact)
DIRECTIONS = 16
#: frustums one camera may make before it falls back to the frustum mode's answer
CULL_WALK_BUDGET = 20_000
#: portals deep a walk may go before it falls back likewise
MAX_WALK_DEPTH = 512

_ANGLE = np.arange(DIRECTIONS) * (2 * np.pi / DIRECTIONS)
DIR_A, DIR_B = cos(_ANGLE), sin(_ANGLE)  # the C library's: runtime_c/brushbake.c holds these bits
DIR_A[np.abs(DIR_A) < 1e-15] = 0.0
DIR_B[np.abs(DIR_B) < 1e-15] = 0.0
OPPOSITE = (np.arange(DIRECTIONS) + DIRECTIONS // 2) % DIRECTIONS


class Frames:
    """Per camera: eye, forward, right, up, far, the depth factor sqrt(1 + tan_h^2 + tan_v^2) and
    which clusters the walk may enter (reach: the PVS and the frustum mode both allow them)."""

    def __init__(self, cams, reach):
        cams = np.asarray(cams, dtype=np.float64).reshape(-1, 8)
        self.eye, self.forward, self.right, self.up, th, tv = camera_basis(cams)
        self.far = cams[:, 7]
        self.depth_factor = np.sqrt(1 + th * th + tv * tv)
        self.start = widen(np.abs(DIR_A)[None, :] * th[:, None] + np.abs(DIR_B)[None, :] * tv[:, None])
        self.reach = reach


def widen(support: np.ndarray) -> np.ndarray:
    """Supports moved outward by CULL_SUPPORT_SLACK (relative and absolute); -inf (empty) stays."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(support), support + CULL_SUPPORT_SLACK * (1.0 + np.abs(support)), support)


def portal_walk(data, cams: np.ndarray, cam_cluster: np.ndarray, fallback: np.ndarray):
    """(N, L) bool leaves drawn by the walk and (N,) bool overflow, for (N, 8) cameras whose
    clusters are cam_cluster (-1: no cluster, answered by `fallback`, as are overflowing cameras).
    `fallback` is the frustum mode's answer: the walk enters only clusters with a leaf in it (a
    line of sight through a cluster within the far plane lies in the frustum and in the PVS).
    `data` is cull.CullData."""
    n = len(cams)
    reach = np.zeros((n, max(data.num_clusters, 1)), dtype=bool)
    cam_i, leaf_i = np.nonzero(fallback & (data.leaf_cluster >= 0)[None, :])
    reach[cam_i, data.leaf_cluster[leaf_i]] = True
    frames = Frames(cams, reach)
    mask = np.zeros((n, data.num_leaves), dtype=bool)
    overflow = cam_cluster < 0
    cam = np.flatnonzero(cam_cluster >= 0)
    cluster = cam_cluster[cam].astype(np.int64)
    support = frames.start[cam]
    explored = Explored()
    made = np.zeros(n, dtype=np.int64)
    depth = 0
    while len(cam):
        cam, cluster, support = _grow(explored, cam, cluster, support, data.num_clusters)
        if not len(cam):
            break
        _mark(data, frames, cam, cluster, support, mask)
        made += np.bincount(cam, minlength=n)
        depth += 1
        over = (made > CULL_WALK_BUDGET) | (depth > MAX_WALK_DEPTH)
        if over.any():
            overflow |= over
            keep = ~over[cam]
            cam, cluster, support = cam[keep], cluster[keep], support[keep]
        cam, cluster, support = _step(data, frames, cam, cluster, support)
    mask[overflow] = fallback[overflow]
    return mask, overflow


class Explored:
    """Per (camera, cluster) key, the frustum explored from there so far: sorted keys and their
    supports, grown in batches."""

    def __init__(self):
        self.keys = np.zeros(0, dtype=np.int64)
        self.support = np.zeros((0, DIRECTIONS))

    def grow(self, keys: np.ndarray, support: np.ndarray) -> np.ndarray:
        """keys unique.  Folds `support` in (max) and returns the rows that grew (or are new),
        their supports replaced by the new union."""
        pos = np.searchsorted(self.keys, keys)
        found = pos < len(self.keys)
        found[found] = self.keys[pos[found]] == keys[found]
        grew = np.ones(len(keys), dtype=bool)
        f = np.flatnonzero(found)
        old = self.support[pos[f]]
        grew[f] = np.any(support[f] > old, axis=1)
        support[f] = np.maximum(support[f], old)
        self.support[pos[f]] = support[f]
        new = ~found
        if new.any():
            keys_all = np.concatenate([self.keys, keys[new]])
            order = np.argsort(keys_all, kind="stable")
            self.keys = keys_all[order]
            self.support = np.concatenate([self.support, support[new]])[order]
        return grew


def _grow(explored: Explored, cam, cluster, support, num_clusters):
    """Merge the frontier per (camera, cluster) (max of supports: the union bound), fold in what
    was explored there before, and keep only the frustums that grow it (which then stand for all
    of it: exploring the union covers everything merged)."""
    if not len(cam):
        return cam, cluster, support
    key = cam * (num_clusters + 1) + cluster
    order = np.argsort(key, kind="stable")
    uniq, start = np.unique(key[order], return_index=True)
    merged = np.maximum.reduceat(np.ascontiguousarray(support[order].T), start, axis=1).T.copy()
    keep = explored.grow(uniq, merged)
    uniq, merged = uniq[keep], merged[keep]
    return uniq // (num_clusters + 1), uniq % (num_clusters + 1), merged


def support_planes(frames: Frames, cam: np.ndarray, support: np.ndarray) -> np.ndarray:
    """(M, 1 + DIRECTIONS, 4) planes (inside n.x - d >= 0) of the frustums: far, then one per
    direction through the eye, n = s_j forward - a_j right - b_j up, moved CULL_MARGIN outward."""
    f, r, u, e = frames.forward[cam], frames.right[cam], frames.up[cam], frames.eye[cam]
    normal = support[:, :, None] * f[:, None, :] - DIR_A[None, :, None] * r[:, None, :] - DIR_B[None, :, None] * u[:, None, :]
    normal /= np.sqrt(dot(normal, normal))[..., None]
    planes = np.empty((len(cam), 1 + DIRECTIONS, 4))
    planes[:, 0, :3] = -f
    planes[:, 0, 3] = -(dot(f, e) + frames.far[cam]) - CULL_MARGIN
    planes[:, 1:, :3] = normal
    planes[:, 1:, 3] = dot(normal, e[:, None, :]) - CULL_MARGIN
    return planes


def _mark(data, frames: Frames, cam, cluster, support, mask: np.ndarray) -> None:
    """Leaves of each frustum's cluster whose boxes meet the frustum."""
    first = data.cluster_leaf_first
    size = first[cluster + 1] - first[cluster]
    owner = np.repeat(np.arange(len(cam)), size)
    pos = np.arange(len(owner)) - np.repeat(np.cumsum(size) - size, size)
    leaves = data.cluster_leaves[first[cluster][owner] + pos]
    planes = support_planes(frames, cam, support)
    ok = boxes_inside_planes(planes[owner], data.leaf_bounds[leaves])
    mask[cam[owner[ok]], leaves[ok]] = True


def _step(data, frames: Frames, cam, cluster, support):
    """Every frustum through every portal leaving its cluster: the next frontier."""
    first = data.out_first
    size = first[cluster + 1] - first[cluster]
    owner = np.repeat(np.arange(len(cam)), size)
    pos = np.arange(len(owner)) - np.repeat(np.cumsum(size) - size, size)
    directed = data.out_portals[first[cluster][owner] + pos]
    q, sign = directed >> 1, np.where(directed & 1, -1.0, 1.0)
    dest = data.portal_clusters[q, np.where(sign > 0, 1, 0)]
    c = cam[owner]
    keep = frames.reach[c, dest]
    side = sign * (dot(data.portal_planes[q, :3], frames.eye[c]) - data.portal_planes[q, 3])  # < 0: eye behind
    keep &= side < CULL_EYE_EPSILON  # a line from the eye crosses the plane from its source side only
    owner, q, dest, c, side = owner[keep], q[keep], dest[keep], c[keep], side[keep]
    new = support[owner].copy()
    narrow = np.flatnonzero(side <= -CULL_EYE_EPSILON)
    if len(narrow):
        zmin = -side[narrow] / frames.depth_factor[c[narrow]] * (1 - 1e-9) - CULL_MARGIN
        proj = project_supports(frames, data, c[narrow], q[narrow], zmin)
        new[narrow] = np.minimum(new[narrow], proj)
    alive = np.all(new + new[:, OPPOSITE] >= 0, axis=1)
    return c[alive], dest[alive].astype(np.int64), new[alive]


def project_supports(frames: Frames, data, cam, q, zmin) -> np.ndarray:
    """(M, DIRECTIONS) widened supports of portals q's central projections onto camera cam's view
    plane, after clipping each by the near plane depth >= zmin (its vertices there kept within
    CULL_MARGIN).  A portal with nothing left gets -inf everywhere (the frustum dies).

    Portals wholly beyond their near plane (most) are projected vertex by vertex from the flat
    vertex list (no padding) and reduced per portal; the others are clipped as padded polygons."""
    m = len(cam)
    counts = data.winding_counts[q]
    owner = np.repeat(np.arange(m), counts)
    pos = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    c = cam[owner]
    rel = data.portal_vertices[data.portal_first[q][owner] + pos] - frames.eye[c]
    depth = dot(rel, frames.forward[c])
    low = np.zeros(m, dtype=bool)
    low[owner[depth < zmin[owner]]] = True
    out = np.full((m, DIRECTIONS), -np.inf)
    flat = ~low[owner]
    o, rel, depth, c = owner[flat], rel[flat], depth[flat], c[flat]
    if len(o):
        x = dot(rel, frames.right[c]) / depth
        y = dot(rel, frames.up[c]) / depth
        proj = DIR_A[:, None] * x[None, :] + DIR_B[:, None] * y[None, :]  # (D, V): reduced along rows
        rows, start = np.unique(o, return_index=True)
        out[rows] = np.maximum.reduceat(proj, start, axis=1).T
    low = np.flatnonzero(low)
    if len(low):
        out[low] = _project_clipped(frames, cam[low], data.windings[q[low]], counts[low], zmin[low])
    return widen(out)


def _project_clipped(frames: Frames, cam, verts, counts, zmin) -> np.ndarray:
    """project_supports for padded polygons (M, W, 3) that reach in front of their near plane."""
    e, f = frames.eye[cam], frames.forward[cam]
    near = np.concatenate([f, (dot(f, e) + zmin)[:, None]], axis=1)
    verts, counts = clip_polygons(verts, counts, near, np.ones(len(cam), dtype=bool))
    w = verts.shape[1]
    valid = np.arange(w)[None, :] < counts[:, None]
    rel = verts - e[:, None, :]
    depth = np.where(valid, np.maximum(dot(rel, f[:, None, :]), 1e-300), 1.0)
    x = dot(rel, frames.right[cam][:, None, :]) / depth
    y = dot(rel, frames.up[cam][:, None, :]) / depth
    proj = x[:, :, None] * DIR_A + y[:, :, None] * DIR_B  # (M, W, D)
    return np.where(valid[:, :, None], proj, -np.inf).max(axis=1)


def clip_polygons(verts: np.ndarray, counts: np.ndarray, plane: np.ndarray, live: np.ndarray,
                  margin: float = CULL_MARGIN):
    """Clip padded convex polygons (M, W, 3) with counts (M,) to the inside of their planes (M, 4),
    keeping up to `margin` outside: (M, W', 3), (M,).  Rows not `live` are returned unchanged;
    vertex order (the winding) is kept."""
    m, w = verts.shape[:2]
    slot = np.arange(w)
    valid = slot[None, :] < counts[:, None]
    dist = dot(verts, plane[:, None, :3]) - plane[:, None, 3] + margin
    inside = dist >= 0
    nxt = np.where(slot[None, :] + 1 < counts[:, None], slot[None, :] + 1, 0)
    dist_n = np.take_along_axis(dist, nxt, axis=1)
    inside_n = dist_n >= 0
    cross = valid & (inside != inside_n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(cross, dist / (dist - dist_n), 0.0)
    q = np.take_along_axis(verts, nxt[:, :, None], axis=1)
    mid = verts + t[:, :, None] * (q - verts)
    slots = np.stack([verts, mid], axis=2).reshape(m, 2 * w, 3)
    keep = np.stack([valid & inside, cross], axis=2).reshape(m, 2 * w)
    keep[~live] = np.stack([valid, np.zeros_like(valid)], axis=2).reshape(m, 2 * w)[~live]
    new_counts = keep.sum(axis=1)
    width = max(int(new_counts.max()) if m else 0, 1)
    order = np.argsort(~keep, axis=1, kind="stable")[:, :width]
    out = np.take_along_axis(slots, order[:, :, None], axis=1)
    return out, new_counts
