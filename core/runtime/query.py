"""Run-time queries on a compiled level: which leaf holds a point, is it solid, where does a
segment first enter solid, and which leaves lie back to front from a viewpoint.

Conventions every query shares:
- solids are open sets: a point within TOUCH_EPSILON of a plane is on it, and solid only where it
  is solid on both sides, so a point on a wall's surface is empty (even where one brush's top
  and another's underside share the plane) and a segment sliding along a floor is not blocked;
  point_leaves, which must name one leaf, puts a point on a plane on the front side;
- a segment's hit is the first point where it enters a solid leaf, with the plane it crossed
  there and that plane's normal turned to face the segment's start;
- a segment that starts in solid has fraction 0, point = start and a zero normal.
Batch calls take (N, 3) / (N, 2, 3) arrays and stay in NumPy; single calls are plain Python.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .level import CompiledLevel
from ..tolerances import TOUCH_EPSILON


def _hull_bit(hull: int) -> int:
    return 1 << int(hull)


def point_leaves(level: CompiledLevel, points) -> np.ndarray:
    """(N,) int64 leaf index of each point (a point on a plane goes to the front side)."""
    return _walk_points(level, points)[0]


def _walk_points(tree, points) -> tuple[np.ndarray, np.ndarray]:
    """Leaf of each point, and which points passed within TOUCH_EPSILON of a node's plane.
    Distances are summed x + y + z as the traces sum them, so a trace's start and point_solid
    agree to the bit."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    codes = np.full(len(pts), tree.root, dtype=np.int64)
    touched = np.zeros(len(pts), dtype=bool)
    normals, dists = tree.plane_normals, tree.plane_dists
    planes, children = tree.node_plane, tree.node_children
    active = np.flatnonzero(codes >= 0)
    while len(active):
        nodes = codes[active]
        pl = planes[nodes]
        n, p = normals[pl], pts[active]
        d = n[:, 0] * p[:, 0] + n[:, 1] * p[:, 1] + n[:, 2] * p[:, 2] - dists[pl]
        touched[active[np.abs(d) <= TOUCH_EPSILON]] = True
        codes[active] = children[nodes, (d < 0).astype(np.int64)]
        active = active[codes[active] >= 0]
    return -1 - codes, touched


def _tree_for(level, hull: int):
    """The point tree for hull 0, the onion tree for box hulls (anything tree-shaped as given)."""
    return level.collision_tree(hull) if hasattr(level, "collision_tree") else level


def point_solid(level: CompiledLevel, points, hull: int = 0) -> np.ndarray:
    """(N,) uint8: 1 where the point is solid for the hull (0 = the point hull); for a box hull
    the point is the character's reference point.  A point on a plane is solid only if it is
    solid on both sides (open solids, see the module docstring)."""
    from .trace import _walk_arrays, solid_open_batch

    tree = _tree_for(level, hull)
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    leaves, touched = _walk_points(tree, pts)
    out = ((tree.leaf_solid[leaves] & _hull_bit(hull)) != 0).astype(np.uint8)
    if touched.any():
        i = np.flatnonzero(touched)
        out[i] = solid_open_batch(_walk_arrays(tree), tree.leaf_solid, pts[i], np.full(len(i), tree.root),
                                  _hull_bit(hull))
    return out


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
    """A level's point tree as Python lists, for single queries without NumPy call overhead.
    first_hit is segment_hits for one segment (the same walk, core/trace.py)."""

    def __init__(self, level: CompiledLevel):
        from .trace import TreeLists

        self.level = level
        self.lists = TreeLists(level)

    def first_hit(self, start, end, hull: int = 0) -> Hit | None:
        """The first solid hit of one segment (None when it stays empty)."""
        from .trace import RAY_E, RAY_E2S, find_first_transition

        tr = find_first_transition(self.lists, start, end, hull)
        sx, sy, sz = map(float, start)
        if tr.kind == RAY_E:
            return None
        if tr.kind != RAY_E2S:
            return Hit(0.0, (sx, sy, sz), (0.0, 0.0, 0.0), -1, True)
        t = tr.t
        dx, dy, dz = float(end[0]) - sx, float(end[1]) - sy, float(end[2]) - sz
        nx, ny, nz = self.lists.normals[tr.plane]
        return Hit(t, (sx + t * dx, sy + t * dy, sz + t * dz), (nx, ny, nz), tr.plane, False)

    def leaf(self, point) -> int:
        """The leaf holding the point (a point on a plane goes to the front side)."""
        x, y, z = map(float, point)
        lists = self.lists
        code = lists.root
        while code >= 0:
            p = lists.planes[code]
            n = lists.normals[p]
            code = lists.children[code][1 if n[0] * x + n[1] * y + n[2] * z - lists.dists[p] < 0 else 0]
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
