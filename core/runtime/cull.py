"""Camera queries: what a view must draw, by PVS, frustum or portals (docs/CAMERA.md), for many
cameras at once.

Modes, each a superset of what the camera truly sees, each inside the one before:
- 'pvs':     the leaves of the clusters in the PVS row of the camera's cluster (Quake);
- 'frustum': those whose leaf bounds meet the view frustum (the thesis's INSIDE-FRUSTUM, exact
             for boxes: core/runtime/camera.py boxes_meet_frustums);
- 'portal':  those the portal walk reaches (core/runtime/portal_walk.py: the frustum narrowed to
             each portal polygon it passes through), kept within 'frustum'.
A camera whose eye has no cluster (in solid, or outside a sealed map) draws every empty leaf in
'pvs' (Quake's novis row), and 'portal' gives it 'frustum's answer.  Solid leaves are never drawn.

`cull(level, cameras, mode)` answers (N, 8) cameras (core/runtime/camera.py) in one batch with a
CullResult: the (N, L) leaves drawn, their faces, clusters and counts, and the leaves in back to
front order when asked (DRAW-BSP-TREE: far side of each node first).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..detmath import dot
from ..errors import BrushbakeError
from .camera import as_cameras, boxes_inside_planes, boxes_meet_frustums, frustum_planes
from .cruntime import c_level, check_backend
from .portal_walk import portal_walk
from .pvs import has_vis, visibility
from .query import point_leaves

CULL_MODES = ("pvs", "frustum", "portal")


class CullData:
    """What the queries read, made once per level: leaves by cluster, portals by cluster (both
    directions), padded portal windings and planes, faces per leaf."""

    def __init__(self, level):
        self.level = level
        self.num_leaves = int(level.num_leaves)
        self.solid = (np.asarray(level.leaf_solid) & 1) != 0
        if has_vis(level):
            self.leaf_cluster = np.asarray(level.vis_leaf_cluster, dtype=np.int64)
            self.num_clusters = len(level.vis_row_offset)
        else:
            self.leaf_cluster = np.full(self.num_leaves, -1, dtype=np.int64)
            self.num_clusters = 0
        self.leaf_bounds = np.asarray(level.leaf_bounds, dtype=np.float64).reshape(-1, 2, 3)
        has = np.flatnonzero(self.leaf_cluster >= 0)
        order = has[np.argsort(self.leaf_cluster[has], kind="stable")]
        self.cluster_leaves = order
        self.cluster_leaf_first = np.concatenate(
            ([0], np.cumsum(np.bincount(self.leaf_cluster[has], minlength=self.num_clusters)))).astype(np.int64)
        self.leaf_face_first = np.asarray(level.leaf_face_first, dtype=np.int64)
        self.leaf_face_count = np.where(self.solid, 0, np.asarray(level.leaf_face_count, dtype=np.int64))
        self.leaf_faces = np.asarray(level.leaf_faces, dtype=np.int64)
        self.has_portals = bool(getattr(level, "has_cull_portals", False))
        if self.has_portals:
            self._portals(level)

    def _portals(self, level) -> None:
        cl = np.asarray(level.cull_portal_clusters, dtype=np.int64).reshape(-1, 2)
        q = len(cl)
        self.portal_clusters = cl
        plane = np.asarray(level.cull_portal_plane, dtype=np.int64)
        self.portal_planes = np.concatenate([np.asarray(level.plane_normals)[plane],
                                             np.asarray(level.plane_dists)[plane, None]], axis=1)
        counts = np.asarray(level.cull_portal_count, dtype=np.int64)
        first = np.asarray(level.cull_portal_first, dtype=np.int64)
        w = int(counts.max()) if q else 3
        slot = np.arange(w)
        idx = first[:, None] + np.minimum(slot[None, :], np.maximum(counts[:, None] - 1, 0))
        self.windings = np.asarray(level.cull_portal_vertices, dtype=np.float64)[idx] if q else np.zeros((0, w, 3))
        self.winding_counts = counts
        self.portal_first = first
        self.portal_vertices = np.asarray(level.cull_portal_vertices, dtype=np.float64).reshape(-1, 3)
        # directed portals 2q (clusters[q, 0] -> [q, 1]) and 2q + 1 (back), listed by source cluster
        src = np.stack([cl[:, 0], cl[:, 1]], axis=1).ravel()
        order = np.argsort(src, kind="stable")
        self.out_portals = order.astype(np.int64)
        self.out_first = np.concatenate(([0], np.cumsum(np.bincount(src, minlength=self.num_clusters)))).astype(np.int64)

    # ----------------------------------------------------------------------------------------
    # back to front (DRAW-BSP-TREE)

    def _ancestry(self):
        """(L, D) ancestors of each leaf (root first, padded -1), the side taken at each (0 front,
        1 back), and the number of leaves under the other child there."""
        cached = getattr(self, "_anc", None)
        if cached is not None:
            return cached
        level = self.level
        children = np.asarray(level.node_children, dtype=np.int64).reshape(-1, 2)
        n = len(children)
        size = np.zeros(n, dtype=np.int64)
        for node in range(n - 1, -1, -1):  # children have larger indices (FORMAT.md)
            c = children[node]
            size[node] = sum(1 if x < 0 else size[x] for x in c)
        parent = np.full(n, -1, dtype=np.int64)
        pside = np.zeros(n, dtype=np.int64)
        leaf_parent = np.full(self.num_leaves, -1, dtype=np.int64)
        leaf_side = np.zeros(self.num_leaves, dtype=np.int64)
        for s in (0, 1):
            c = children[:, s]
            parent[c[c >= 0]] = np.flatnonzero(c >= 0)
            pside[c[c >= 0]] = s
            leaf_parent[-1 - c[c < 0]] = np.flatnonzero(c < 0)
            leaf_side[-1 - c[c < 0]] = s
        other = lambda node, side: np.where(children[node, 1 - side] < 0, 1, size[np.maximum(children[node, 1 - side], 0)])
        cols_n, cols_s, cols_o = [], [], []
        cur, side = leaf_parent.copy(), leaf_side.copy()
        while (cur >= 0).any():
            ok = cur >= 0
            cols_n.append(np.where(ok, cur, -1))
            cols_s.append(side)
            cols_o.append(np.where(ok, other(np.maximum(cur, 0), side), 0))
            side = np.where(ok, pside[np.maximum(cur, 0)], 0)
            cur = np.where(ok, parent[np.maximum(cur, 0)], -1)
        if not cols_n:
            self._anc = (np.zeros((self.num_leaves, 0), np.int64),) * 3
        else:
            self._anc = tuple(np.stack(c, axis=1) for c in (cols_n, cols_s, cols_o))
        return self._anc

    def back_to_front(self, eye, leaves: np.ndarray) -> np.ndarray:
        """`leaves` ordered far to near from `eye`: each leaf's place in DRAW-BSP-TREE's walk (at
        every node the side away from the eye first) is the sum, over its ancestors where it lies
        on the eye's side, of the leaves on the other side."""
        leaves = np.asarray(leaves, dtype=np.int64)
        nodes, sides, others = self._ancestry()
        level = self.level
        plane = np.asarray(level.node_plane, dtype=np.int64)
        normals, dists = np.asarray(level.plane_normals), np.asarray(level.plane_dists)
        eye = np.asarray(eye, dtype=np.float64)
        eye_back = ((dot(normals[plane], eye) - dists[plane]) < 0).astype(np.int64) if len(plane) else np.zeros(0, np.int64)
        a = nodes[leaves]
        near = (a >= 0) & (sides[leaves] == eye_back[np.maximum(a, 0)]) if a.size else np.zeros(a.shape, bool)
        place = np.where(near, others[leaves], 0).sum(axis=1)
        return leaves[np.argsort(place, kind="stable")]


def cull_data(level) -> CullData:
    """The level's CullData, made once and kept while its arrays are the same objects."""
    deps = (level.leaf_solid, level.leaf_bounds, level.leaf_faces, level.vis_leaf_cluster, level.vis_row_offset,
            level.cull_portal_plane, level.cull_portal_vertices, level.node_children)
    return level.cached("cull_data", lambda: CullData(level), *deps)


@dataclass
class CullResult:
    """What N cameras draw in one mode."""

    mode: str
    cameras: np.ndarray  # (N, 8)
    drawn: np.ndarray  # (N, L) bool leaves drawn
    camera_leaf: np.ndarray  # (N,) the eye's leaf
    camera_cluster: np.ndarray  # (N,) the eye's visibility cluster (-1: none)
    overflow: np.ndarray  # (N,) bool: the portal walk hit its budget and gave the frustum's answer
    seconds: float
    data: CullData

    def __len__(self) -> int:
        return len(self.drawn)

    def leaf_counts(self) -> np.ndarray:
        return self.drawn.sum(axis=1)

    def face_counts(self) -> np.ndarray:
        """(N,) faces drawn (the faces of the leaves drawn; each face lies in one leaf)."""
        return self.drawn.astype(np.int64) @ self.data.leaf_face_count

    def cluster_counts(self) -> np.ndarray:
        """(N,) distinct visibility clusters among the leaves drawn."""
        lc = self.data.leaf_cluster
        has = lc >= 0
        c = max(self.data.num_clusters, 1)
        out = np.zeros(len(self.drawn), dtype=np.int64)
        for i in range(len(self.drawn)):
            out[i] = np.count_nonzero(np.bincount(lc[self.drawn[i] & has], minlength=c))
        return out

    def leaves(self, i: int, back_to_front: bool = False) -> np.ndarray:
        leaves = np.flatnonzero(self.drawn[i])
        if back_to_front:
            leaves = self.data.back_to_front(self.cameras[i, :3], leaves)
        return leaves

    def faces(self, i: int, back_to_front: bool = False) -> np.ndarray:
        """Faces of the leaves drawn, leaf by leaf (back to front when asked)."""
        leaves = self.leaves(i, back_to_front)
        d = self.data
        size = d.leaf_face_count[leaves]
        if not size.sum():
            return np.zeros(0, dtype=np.int64)
        pos = np.arange(size.sum()) - np.repeat(np.cumsum(size) - size, size)
        return d.leaf_faces[np.repeat(d.leaf_face_first[leaves], size) + pos]

    def points_drawn(self, points) -> np.ndarray:
        """(N, K) uint8 for (N, K, 3) points: 1 where the leaf holding point k is drawn for camera
        n (a point in solid gives 0: solid leaves are never drawn)."""
        pts = np.asarray(points, dtype=np.float64)
        n, k = pts.shape[:2]
        leaves = point_leaves(self.data.level, pts.reshape(-1, 3)).reshape(n, k)
        return self.drawn[np.arange(n)[:, None], leaves].astype(np.uint8)


def cull(level, cameras, mode: str = "portal", backend: str = "numpy") -> CullResult:
    """What each of (N, 8) cameras draws in `mode` ('pvs', 'frustum' or 'portal'), in one batch.
    backend "c": the C run-time (core/runtime/cruntime.py, runtime_c/brushbake.c bbk_cull_many),
    the same leaves drawn."""
    if mode not in CULL_MODES:
        raise BrushbakeError(f"unknown culling mode {mode!r}; the modes are {', '.join(CULL_MODES)}.",
                             subject="cull")
    cams = as_cameras(cameras)
    t0 = time.perf_counter()
    data = cull_data(level)
    if mode != "frustum" and not has_vis(level):
        raise BrushbakeError(f"the level has no PVS, which the {mode!r} mode needs.", subject="level",
                             hint="Bake it with visibility (bake --vis fast, the default), or use --cull frustum.")
    if mode == "portal" and not data.has_portals:
        raise BrushbakeError("the level has no portals for the 'portal' mode (it was baked before they were "
                             "stored).", subject="level", hint="Rebake it with visibility (bake --vis fast).")
    if backend != "numpy":
        check_backend(backend)
        clevel = c_level(level)
        t0 = time.perf_counter()
        drawn, stats = clevel.cull(cams, mode)
        return CullResult(mode, cams, drawn, stats["camera_leaf"].astype(np.int64),
                          stats["camera_cluster"].astype(np.int64), stats["overflow"] != 0,
                          time.perf_counter() - t0, data)
    leaf = point_leaves(level, cams[:, :3]) if len(cams) else np.zeros(0, dtype=np.int64)
    cluster = data.leaf_cluster[leaf]
    drawn = pvs_leaves(level, data, cluster)
    overflow = np.zeros(len(cams), dtype=bool)
    if mode == "frustum":
        drawn = frustum_leaves(data, cams, drawn)
    elif mode == "portal":
        # the walk enters clusters the frustum's planes keep a leaf of (a superset of 'frustum');
        # then the exact box test runs on what it drew, so 'portal' lies within 'frustum'
        coarse = frustum_leaves(data, cams, drawn, exact=False)
        walk, overflow = portal_walk(data, cams, cluster, coarse)
        drawn = frustum_leaves(data, cams, drawn & walk)
    return CullResult(mode, cams, drawn, leaf, cluster, overflow, time.perf_counter() - t0, data)


def pvs_leaves(level, data: CullData, cluster: np.ndarray) -> np.ndarray:
    """(N, L) the empty leaves in the PVS rows of the clusters (-1, or no PVS: every empty leaf)."""
    empty = ~data.solid
    if not has_vis(level):
        return np.broadcast_to(empty, (len(cluster), data.num_leaves)).copy()
    lc = data.leaf_cluster
    out = visibility(level).see_matrix(cluster, np.where(lc >= 0, lc, 0))
    out &= (lc >= 0)[None, :] | (cluster[:, None] < 0)
    return out & empty[None, :]


def frustum_leaves(data: CullData, cams: np.ndarray, candidates: np.ndarray, exact: bool = True,
                   chunk: int = 1 << 18) -> np.ndarray:
    """(N, L) bool: candidate leaves whose bounds meet each camera's frustum (others False); with
    exact False, those not wholly outside one of its 5 planes (a superset)."""
    out = np.zeros_like(candidates)
    cam, leaf = np.nonzero(candidates)
    planes = frustum_planes(cams)
    for a in range(0, len(cam), chunk):
        c, lf = cam[a : a + chunk], leaf[a : a + chunk]
        near = boxes_inside_planes(planes[c], data.leaf_bounds[lf])  # the cheap half: the frustum's planes
        c, lf = c[near], lf[near]
        if exact:
            ok = boxes_meet_frustums(cams, data.leaf_bounds, c, lf)  # then every separating axis
            c, lf = c[ok], lf[ok]
        out[c, lf] = True
    return out


def cull_camera(level, camera, mode: str = "portal", back_to_front: bool = False,
                backend: str = "numpy") -> tuple[np.ndarray, np.ndarray]:
    """One camera (8 numbers): (leaves, faces) it draws in `mode`, back to front when asked.
    backend "c": runtime_c's bbk_cull (leaves, faces and their order from C)."""
    if backend != "numpy":
        check_backend(backend)
        cull(level, np.asarray(camera, dtype=np.float64).reshape(1, 8)[:0], mode)  # the same checks and errors
        return c_level(level).cull_camera(as_cameras(camera), mode, back_to_front)
    result = cull(level, np.asarray(camera, dtype=np.float64).reshape(1, 8), mode)
    return result.leaves(0, back_to_front), result.faces(0, back_to_front)
