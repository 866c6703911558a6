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

    fraction is 1.0 (point = end, normal 0) where nothing is hit and 0.0 (normal 0) where the start
    is already solid.  The walk is find_first_transitions (core/trace.py); box hulls also get its
    robustness retry for starts resting on a surface.
    """
    from .trace import trace_hulls

    return trace_hulls(level, starts, ends, hull=hull, retry=hull != 0)[0]


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
