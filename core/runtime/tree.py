"""One BSP tree of a compiled level, the one tree type every run-time query takes.

A Tree owns its five arrays (the level's plane table, its nodes and its leaves' solid bits) and
the forms the walks need, each built once and kept:
- ``lists``: the arrays as Python lists, for single queries without NumPy per-call overhead;
- ``walk``: the per-node arrays of the batch walk (trace._lockstep, solid_open_batch);
and the one point location, :meth:`Tree.locate` (batch) / :meth:`Tree.leaf` (single).

Encoding (core/runtime/level.py): a child c >= 0 is a node, c < 0 is leaf -1 - c; the root is node
0, or leaf 0 (code -1) when the tree has no nodes.  children[:, 0] is the front (n.x - d > 0).
No walk here recurses: a tree as deep as the reader allows (docs/FORMAT.md) never meets Python's
recursion limit.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..tolerances import TOUCH_EPSILON


class TreeLists:
    """A tree as Python lists, for single walks (plain Python floats, no NumPy per step)."""

    def __init__(self, tree: "Tree"):
        self.normals = tree.plane_normals.tolist()
        self.dists = tree.plane_dists.tolist()
        self.planes = tree.node_plane.tolist()
        self.children = tree.node_children.tolist()
        self.solid = tree.leaf_solid.tolist()
        self.root = tree.root

    def leaf(self, x: float, y: float, z: float) -> int:
        """The leaf holding a point (a point on a plane goes to the front side)."""
        code = self.root
        while code >= 0:
            p = self.planes[code]
            nx, ny, nz = self.normals[p]
            code = self.children[code][1 if nx * x + ny * y + nz * z - self.dists[p] < 0 else 0]
        return -1 - code

    def solid_open(self, code: int, x: float, y: float, z: float, bit: int) -> bool:
        """Is the point solid below `code`, solids being open: a point on a plane (within
        TOUCH_EPSILON) is solid only if it is solid on both sides.  An explicit stack of the
        subtrees still to see; the first empty leaf answers."""
        eps = TOUCH_EPSILON
        todo = [code]
        while todo:
            code = todo.pop()
            while code >= 0:
                p = self.planes[code]
                nx, ny, nz = self.normals[p]
                d = nx * x + ny * y + nz * z - self.dists[p]
                if -eps <= d <= eps:
                    front, back = self.children[code]
                    todo.append(back)
                    code = front
                else:
                    code = self.children[code][0 if d > 0 else 1]
            if not self.solid[-1 - code] & bit:
                return False
        return True


class WalkArrays(NamedTuple):
    """Per-node arrays of the batch walk, with one extra node at the end, the *sink*: normal 0,
    distance -1, both children itself.  A finished segment is parked there (every piece lies in
    front of it, nothing is ever pushed) until the registers are packed."""

    nx: np.ndarray  # (N + 1,) normal components and distance by node
    ny: np.ndarray
    nz: np.ndarray
    dist: np.ndarray
    node_plane: np.ndarray  # (N,) int64
    children: np.ndarray  # (2N + 2,) int64, flat: child slot 2 * node + side
    depth: int  # stack levels a segment may need: the bottom entry, a far half per node on the
    #           path, and one spare level an empty stack's pop reads
    slot_entry: np.ndarray  # (2N + 2,) the plane a far half in child slot s is entered through
    #                         (slot -1, an empty stack's bottom, leads to the sink)


class Tree:
    """One tree of a level (point, onion or beveled): arrays, list and walk forms, point location.

    Build it from arrays, or get a level's cached one with level.point_tree(), onion_tree(),
    bevel_tree() or collision_tree(hull).  The arrays are not copied; do not change them while
    the tree is in use (the cached forms would go stale).
    """

    def __init__(self, plane_normals, plane_dists, node_plane, node_children, leaf_solid):
        self.plane_normals = plane_normals
        self.plane_dists = plane_dists
        self.node_plane = node_plane
        self.node_children = node_children
        self.leaf_solid = leaf_solid
        self._lists: TreeLists | None = None
        self._walk: WalkArrays | None = None
        self._depth: int | None = None
        self.cache: dict = {}  # other forms derived from this tree (shift's offsets per shape ...)

    def same_arrays(self, *arrays) -> bool:
        """Was this tree made from exactly these five arrays (identity, not equality)?"""
        mine = (self.plane_normals, self.plane_dists, self.node_plane, self.node_children, self.leaf_solid)
        return all(a is b for a, b in zip(mine, arrays))

    @property
    def root(self) -> int:
        return 0 if len(self.node_plane) else -1

    @property
    def num_nodes(self) -> int:
        return int(len(self.node_plane))

    @property
    def num_leaves(self) -> int:
        return int(len(self.leaf_solid))

    def depth(self) -> int:
        """Nodes on the longest root-to-leaf path."""
        if self._depth is None:
            self._depth = tree_depth(self.node_children)
        return self._depth

    @property
    def lists(self) -> TreeLists:
        if self._lists is None:
            self._lists = TreeLists(self)
        return self._lists

    @property
    def walk(self) -> WalkArrays:
        if self._walk is None:
            self._walk = _walk_arrays(self)
        return self._walk

    def locate(self, points) -> tuple[np.ndarray, np.ndarray]:
        """Leaf of each point (N,) int64, and which points passed within TOUCH_EPSILON of a node's
        plane (N,) bool.  A point on a plane goes to the front side.  Distances are summed
        x + y + z as the traces sum them, so a trace's start and point_solid agree to the bit."""
        pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        codes = np.full(len(pts), self.root, dtype=np.int64)
        touched = np.zeros(len(pts), dtype=bool)
        normals, dists = self.plane_normals, self.plane_dists
        planes, children = self.node_plane, self.node_children
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

    def leaf(self, point) -> int:
        """The leaf holding one point (the list form's walk; on a plane: the front side)."""
        x, y, z = map(float, point)
        return self.lists.leaf(x, y, z)


def as_tree(level_or_tree, hull: int = 0) -> Tree:
    """The tree that answers for a hull: a Tree as given, or a level's collision_tree(hull)."""
    if isinstance(level_or_tree, Tree):
        return level_or_tree
    return level_or_tree.collision_tree(hull)


def tree_depth(node_children: np.ndarray) -> int:
    """Nodes on the longest root-to-leaf path: one vectorised step per tree level."""
    children = np.asarray(node_children).reshape(-1, 2)
    if not len(children):
        return 0
    frontier, depth = np.zeros(1, dtype=np.int64), 0
    while len(frontier):
        depth += 1
        nxt = children[frontier].ravel()
        frontier = nxt[nxt >= 0]
    return depth


def _walk_arrays(tree: Tree) -> WalkArrays:
    planes = np.asarray(tree.node_plane, dtype=np.int64)
    normals = np.asarray(tree.plane_normals, dtype=np.float64)
    sink = len(planes)
    # the plane a piece enters through when it is the far half in child slot 2 * node + side
    slot_entry = np.append(np.repeat(planes, 2) ^ np.tile([1, 0], len(planes)), [-1, -1])
    return WalkArrays(np.append(normals[planes, 0], 0.0), np.append(normals[planes, 1], 0.0),
                      np.append(normals[planes, 2], 0.0),
                      np.append(np.asarray(tree.plane_dists, dtype=np.float64)[planes], -1.0),
                      planes, np.append(np.asarray(tree.node_children, dtype=np.int64).reshape(-1), [sink, sink]),
                      tree.depth() + 3, slot_entry)
