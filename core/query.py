"""Run-time queries on a compiled level: which leaf holds a point, is it solid, where does a
segment first enter solid, and which leaves lie back to front from a viewpoint.

Conventions every query shares:
- a point exactly on a plane (n.x - d == 0) belongs to the front (empty) side, so a point on a
  wall's surface is empty and a segment sliding along a floor is not blocked;
- a segment's hit is the first point where it enters a solid leaf, with the plane it crossed
  there and that plane's normal turned to face the segment's start;
- a segment that starts in solid has fraction 0, point = start and a zero normal.
Batch calls take (N, 3) / (N, 2, 3) arrays and stay in NumPy; single calls are plain Python.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .level import CompiledLevel


def _hull_bit(hull: int) -> int:
    return 1 << int(hull)


def point_leaves(level: CompiledLevel, points) -> np.ndarray:
    """(N,) int64 leaf index of each point."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    codes = np.full(len(pts), level.root, dtype=np.int64)
    normals, dists = level.plane_normals, level.plane_dists
    planes, children = level.node_plane, level.node_children
    active = np.flatnonzero(codes >= 0)
    while len(active):
        nodes = codes[active]
        pl = planes[nodes]
        back = np.einsum("ij,ij->i", pts[active], normals[pl]) - dists[pl] < 0
        codes[active] = children[nodes, back.astype(np.int64)]
        active = active[codes[active] >= 0]
    return -1 - codes


def _tree_for(level, hull: int):
    """The point tree for hull 0, the onion tree for box hulls (anything tree-shaped as given)."""
    return level.collision_tree(hull) if hasattr(level, "collision_tree") else level


def point_solid(level: CompiledLevel, points, hull: int = 0) -> np.ndarray:
    """(N,) uint8: 1 where the point is solid for the hull (0 = the point hull); for a box hull
    the point is the character's reference point."""
    tree = _tree_for(level, hull)
    leaves = point_leaves(tree, points)
    return ((tree.leaf_solid[leaves] & _hull_bit(hull)) != 0).astype(np.uint8)


def segment_hits(level: CompiledLevel, starts, ends, hull: int = 0) -> np.ndarray:
    """First solid hit of each segment: an (N, 7) float64 array [fraction, x, y, z, nx, ny, nz].

    fraction is 1.0 (point = end, normal 0) where nothing is hit.  All segments walk the tree in
    lock step, each with its own stack of (node, t0, t1, entry plane) held in NumPy arrays; one
    loop iteration pops one entry per segment, nearer child first, so the first solid leaf
    popped is the first hit.
    """
    s = np.asarray(starts, dtype=np.float64).reshape(-1, 3)
    e = np.asarray(ends, dtype=np.float64).reshape(-1, 3)
    n = len(s)
    out = np.zeros((n, 7))
    out[:, 0] = 1.0
    out[:, 1:4] = e
    if n == 0:
        return out
    bit = _hull_bit(hull)
    level = _tree_for(level, hull)
    normals, dists = level.plane_normals, level.plane_dists
    planes, children, solid = level.node_plane, level.node_children.astype(np.int64), level.leaf_solid
    depth = level.depth() + 2
    st_code = np.empty((n, depth), dtype=np.int64)
    st_t0 = np.empty((n, depth))
    st_t1 = np.empty((n, depth))
    st_plane = np.empty((n, depth), dtype=np.int64)
    st_code[:, 0] = level.root
    st_t0[:, 0] = 0.0
    st_t1[:, 0] = 1.0
    st_plane[:, 0] = -1
    sp = np.ones(n, dtype=np.int64)
    hit_t = np.full(n, 2.0)
    hit_plane = np.full(n, -1, dtype=np.int64)
    live = np.arange(n)
    delta = e - s
    while len(live):
        top = sp[live] - 1
        code = st_code[live, top]
        t0, t1, pl0 = st_t0[live, top], st_t1[live, top], st_plane[live, top]
        sp[live] = top
        is_leaf = code < 0
        if is_leaf.any():
            rays = live[is_leaf]
            hit = (solid[-1 - code[is_leaf]] & bit) != 0
            hit_t[rays[hit]] = t0[is_leaf][hit]
            hit_plane[rays[hit]] = pl0[is_leaf][hit]
            sp[rays[hit]] = 0  # done
        node_sel = ~is_leaf
        if node_sel.any():
            rays = live[node_sel]
            nodes = code[node_sel]
            t0n, t1n, pl0n = t0[node_sel], t1[node_sel], pl0[node_sel]
            pl = planes[nodes]
            nrm = normals[pl]
            ds = np.einsum("ij,ij->i", s[rays], nrm) - dists[pl]
            dd = np.einsum("ij,ij->i", delta[rays], nrm)
            d0, d1 = ds + t0n * dd, ds + t1n * dd
            front0, front1 = d0 >= 0, d1 >= 0
            near = np.where(front0, 0, 1)
            near_child = children[nodes, near]
            cross = front0 != front1
            with np.errstate(divide="ignore", invalid="ignore"):
                tm = np.clip(np.where(cross, -ds / np.where(dd == 0, 1.0, dd), t1n), t0n, t1n)
            # far half first (popped later), only where the segment crosses the plane
            c = np.flatnonzero(cross)
            if len(c):
                r = rays[c]
                k = sp[r]
                st_code[r, k] = children[nodes[c], 1 - near[c]]
                st_t0[r, k] = tm[c]
                st_t1[r, k] = t1n[c]
                st_plane[r, k] = pl[c] ^ near[c]  # the plane's face toward the near side
                sp[r] = k + 1
            k = sp[rays]
            st_code[rays, k] = near_child
            st_t0[rays, k] = t0n
            st_t1[rays, k] = np.where(cross, tm, t1n)
            st_plane[rays, k] = pl0n
            sp[rays] = k + 1
        live = live[sp[live] > 0]
    got = hit_t <= 1.0
    t = hit_t[got]
    out[got, 0] = t
    out[got, 1:4] = s[got] + t[:, None] * delta[got]
    hp = hit_plane[got]
    has_plane = hp >= 0
    nrm = np.zeros((len(hp), 3))
    nrm[has_plane] = normals[hp[has_plane]]
    out[got, 4:7] = nrm
    return out


@dataclass
class Hit:
    fraction: float
    point: tuple[float, float, float]
    normal: tuple[float, float, float]
    plane: int  # -1 when the start is in solid
    start_solid: bool


class SolidTree:
    """A level's point tree as Python lists, for single queries without NumPy call overhead."""

    def __init__(self, level: CompiledLevel):
        self.level = level
        self.normals = level.plane_normals.tolist()
        self.dists = level.plane_dists.tolist()
        self.planes = level.node_plane.tolist()
        self.children = level.node_children.tolist()
        self.solid = level.leaf_solid.tolist()
        self.root = level.root

    def first_hit(self, start, end, hull: int = 0) -> Hit | None:
        """The first solid hit of one segment (None when it stays empty)."""
        sx, sy, sz = map(float, start)
        dx, dy, dz = float(end[0]) - sx, float(end[1]) - sy, float(end[2]) - sz
        bit = 1 << hull
        stack = [(self.root, 0.0, 1.0, -1)]
        while stack:
            code, t0, t1, entry = stack.pop()
            if code < 0:
                if self.solid[-1 - code] & bit:
                    if entry < 0:
                        return Hit(0.0, (sx, sy, sz), (0.0, 0.0, 0.0), -1, True)
                    nx, ny, nz = self.normals[entry]
                    return Hit(t0, (sx + t0 * dx, sy + t0 * dy, sz + t0 * dz), (nx, ny, nz), entry, False)
                continue
            p = self.planes[code]
            nx, ny, nz = self.normals[p]
            ds = nx * sx + ny * sy + nz * sz - self.dists[p]
            dd = nx * dx + ny * dy + nz * dz
            d0, d1 = ds + t0 * dd, ds + t1 * dd
            near = 0 if d0 >= 0 else 1
            if (d1 >= 0) == (d0 >= 0):
                stack.append((self.children[code][near], t0, t1, entry))
                continue
            tm = min(max(-ds / dd, t0), t1)
            stack.append((self.children[code][1 - near], tm, t1, p ^ near))
            stack.append((self.children[code][near], t0, tm, entry))
        return None

    def leaf(self, point) -> int:
        x, y, z = map(float, point)
        code = self.root
        while code >= 0:
            p = self.planes[code]
            n = self.normals[p]
            code = self.children[code][1 if n[0] * x + n[1] * y + n[2] * z - self.dists[p] < 0 else 0]
        return -1 - code


def leaves_back_to_front(level: CompiledLevel, viewpoint) -> np.ndarray:
    """All leaves ordered far to near from the viewpoint (the painter's order of DRAW-BSP-TREE)."""
    vx, vy, vz = map(float, viewpoint)
    normals, dists = level.plane_normals.tolist(), level.plane_dists.tolist()
    planes, children = level.node_plane.tolist(), level.node_children.tolist()
    order: list[int] = []
    stack = [level.root]
    while stack:
        code = stack.pop()
        if code < 0:
            order.append(-1 - code)
            continue
        p = planes[code]
        n = normals[p]
        front, back = children[code]
        if n[0] * vx + n[1] * vy + n[2] * vz - dists[p] >= 0:
            stack.append(front)  # viewer in front: draw back first, front last
            stack.append(back)
        else:
            stack.append(back)
            stack.append(front)
    return np.array(order, dtype=np.int64)
