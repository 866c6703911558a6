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

import numpy as np

from .cruntime import c_level
from .level import CompiledLevel
from .trace import solid_open_batch, trace_hulls
from .tree import as_tree


def point_leaves(level, points, backend: str = "numpy") -> np.ndarray:
    """(N,) int64 leaf of the point tree holding each point (a point on a plane goes to the
    front side): Tree.locate.  backend "c": the C run-time (core/runtime/cruntime.py), same answers."""
    if _c(backend):
        return c_level(level).point_leaves(points)
    return as_tree(level).locate(points)[0]


def _c(backend: str) -> bool:
    """Is the C run-time asked for?  (ValueError for a backend that is neither numpy nor c.)"""
    if backend not in ("numpy", "c"):
        raise ValueError(f"backend must be 'numpy' or 'c', not {backend!r}")
    return backend == "c"


def point_solid(level, points, hull: int = 0, backend: str = "numpy") -> np.ndarray:
    """(N,) uint8: 1 where the point is solid for the hull (0 = the point hull); for a box hull
    the point is the character's reference point.  A point on a plane is solid only if it is
    solid on both sides (open solids, see the module docstring).  backend "c": the C run-time."""
    if _c(backend):
        return c_level(level).point_solid(points, hull)
    tree = as_tree(level, hull)
    bit = 1 << int(hull)
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    leaves, touched = tree.locate(pts)
    out = ((tree.leaf_solid[leaves] & bit) != 0).astype(np.uint8)
    if touched.any():
        i = np.flatnonzero(touched)
        out[i] = solid_open_batch(tree.walk, tree.leaf_solid, pts[i], np.full(len(i), tree.root), bit)
    return out


def segment_hits(level, starts, ends, hull: int = 0, backend: str = "numpy") -> np.ndarray:
    """First solid hit of each segment, packed as the command line writes it: an (N, 7) float64
    array [fraction, x, y, z, nx, ny, nz] (core/runtime/results.py Hits.packed).

    fraction is 1.0 (point = end, normal 0) where nothing is hit and 0.0 (normal 0) where the start
    is already solid.  The walk is find_first_transitions (core/runtime/trace.py); box hulls also
    get its robustness retry for starts resting on a surface.  backend "c": the C run-time.
    """
    return trace_hulls(level, starts, ends, hull=hull, retry=hull != 0, backend=backend).packed()


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
