"""Regions: a fixed world grid whose lines cut the trees first.

A tree builder given a RegionGrid splits every node whose box still crosses a grid line at the
middle one of those lines (the axis crossing the most lines; x before y before z on a tie) before
it asks the splitter heuristic, so the top of every tree is the grid's axial splits and below
each grid cell hangs that cell's own subtree, built from the faces in the cell alone.  The lines
sit at whole multiples of the cell size, counted from the origin, so where a brush is never moves
them: an edit changes the subtrees of the cells it touches and nothing else (besides the joints
above them, which depend only on which cells hold faces).  A node without faces is not split:
empty space costs nothing, however far the grid reaches.

Quake 2's qbsp3 built its world the same way, in 1024-unit blocks under axial splits, and
ericw-tools' qbsp still splits every node larger than 1024 units at its middle (-maxnodesize);
big open spaces then fall into several smaller leaves, which the PVS sees one by one.

The default cell is 64 m (2,048 Quake units): with the full vis it makes e3m4's PVS as tight as
ericw-tools' (32 m cells make it looser than 64 and double the clusters of open terrain for
nothing; bench/README.md, "Regions").  The cell size is the region_size setting, doubled until the world crosses at most
MAX_CELLS_PER_AXIS cells along each axis, so a world of any size costs a bounded number of grid
pieces per face.

RegionJob and RegionTree are the records a region's subtree travels in when it is built apart
(core/compile/trees/region_jobs.py builds them; the builder hands them out and grafts them back).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: at most this many cells across the world box along one axis (the cell size doubles beyond it)
MAX_CELLS_PER_AXIS = 64
#: a grid line within this of a node's box face does not cut it (no sliver at the world box's edge)
LINE_MARGIN = 1e-3


@dataclass(frozen=True)
class RegionGrid:
    """Grid lines at whole multiples of `size` (metres) along each axis."""

    size: float

    @staticmethod
    def for_world(region_size: float, bounds) -> "RegionGrid | None":
        """The grid for a world box (2, 3): the setting's cell size, doubled until the box crosses
        at most MAX_CELLS_PER_AXIS cells per axis; None when region_size is 0 (no regions)."""
        if not region_size or bounds is None:
            return None
        extent = float(np.max(np.asarray(bounds[1], float) - np.asarray(bounds[0], float)))
        size = float(region_size)
        while extent / size > MAX_CELLS_PER_AXIS:
            size *= 2.0
        return RegionGrid(size)

    def lines_inside(self, lo: float, hi: float) -> tuple[int, int]:
        """The whole numbers k with lo + LINE_MARGIN < k * size < hi - LINE_MARGIN, as (first, count)."""
        first, count = self.all_lines_inside(np.array([lo], float), np.array([hi], float))
        return int(first[0]), int(count[0])

    def all_lines_inside(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """lines_inside for many intervals at once ((n,) floats each): (first, count).  The division
        may round either way, so its first guesses are corrected against the products k * size."""
        s, lo_m, hi_m = self.size, np.asarray(lo, float) + LINE_MARGIN, np.asarray(hi, float) - LINE_MARGIN
        first = np.floor(lo_m / s).astype(np.int64) + 1
        while True:
            up = first * s <= lo_m
            if not up.any():
                break
            first += up
        while True:
            down = (first - 1) * s > lo_m
            if not down.any():
                break
            first -= down
        last = np.ceil(hi_m / s).astype(np.int64) - 1
        while True:
            down = last * s >= hi_m
            if not down.any():
                break
            last -= down
        while True:
            up = (last + 1) * s < hi_m
            if not up.any():
                break
            last += up
        return first, np.maximum(0, last - first + 1)

    def splits_of(self, boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """split_of for boxes (n, 2, 3) at once (the tree builder asks it for every item of a
        level): (cut, axis, position), cut False where no line crosses a box (its axis and position
        then mean nothing)."""
        boxes = np.asarray(boxes, float).reshape(-1, 2, 3)
        first, count = self.all_lines_inside(boxes[:, 0].ravel(), boxes[:, 1].ravel())
        first, count = first.reshape(-1, 3), count.reshape(-1, 3)
        axis = np.argmax(count, axis=1)  # the first axis of the most lines
        rows = np.arange(len(boxes))
        line = first[rows, axis] + (count[rows, axis] - 1) // 2
        return count[rows, axis] > 0, axis, line * self.size

    def split_of(self, box) -> tuple[int, float] | None:
        """Where a node of this box is cut: (axis, position) of the middle grid line of the axis
        crossing the most lines (x before y before z on a tie), or None when no line crosses it.
        Depends on the box alone."""
        cut, axis, position = self.splits_of(np.asarray(box, float)[None])
        return (int(axis[0]), float(position[0])) if cut[0] else None


@dataclass
class RegionJob:
    """A region root's faces, one after another: vertices (V, 3) and counts, plane, brush and
    flags per face; cand (may still split) and cnt (makes a leaf empty) per face; the box."""

    verts: np.ndarray
    counts: np.ndarray
    planes: np.ndarray
    brushes: np.ndarray
    flags: np.ndarray
    cand: np.ndarray
    cnt: np.ndarray
    box: np.ndarray


@dataclass
class RegionTree:
    """A subtree built from a RegionJob, numbered as a build() numbers it (root node 0, or leaf
    0 alone): nodes (plane, a face on it or -1, children codes), leaves (faces as flat ids and
    counts, solid, bounds, parent node or -1, side), the faces split off (ids from the job's
    count on: vertices, counts, plane, brush, flags) and the split and scoring counts."""

    node_plane: np.ndarray
    node_face: np.ndarray
    node_children: np.ndarray
    leaf_faces: np.ndarray
    leaf_face_counts: np.ndarray
    leaf_solid: np.ndarray
    leaf_bounds: np.ndarray
    leaf_parent: np.ndarray
    leaf_side: np.ndarray
    new_verts: np.ndarray
    new_counts: np.ndarray
    new_planes: np.ndarray
    new_brushes: np.ndarray
    new_flags: np.ndarray
    splits: int
    scored: int
