"""Pruning, as qbsp's PruneNodes after its outside fill: a node whose two sides end in leaves a
query cannot tell apart becomes one leaf.

Bottom-up, a node collapses when both its children are leaves (or collapsed nodes) with the same
key and may merge; the tree is then written again, nodes in preorder and leaves in the order a
front-first walk meets them (the order trees/bsp.flatten_tree gives), so a collapsed node's old
leaves are consecutive and become one new leaf.  Every query answers as before: the removed
planes divided nothing a query sees (no transition across them, and a point on one has the same
bits on both sides).

- The onion tree (prune_equal_leaves): leaves with the same solid bits, for every hull.
- The point tree (prune_point_tree): only solid leaves with no PVS row merge (an empty leaf
  is a place with its own cluster and faces); their faces, consecutive, join, their bounds unite,
  and the structural clusters are numbered again in order of first appearance.
"""

from __future__ import annotations

import numpy as np

from ...runtime.level import POINT_HULL_BIT, CompiledLevel


def prune_tree(node_plane, node_children, key: list, mergeable: list) -> tuple[np.ndarray, np.ndarray, list]:
    """(node_plane, node_children, groups): the pruned tree and, per new leaf, the old leaves it
    stands for (consecutive in the old front-first order)."""
    planes, children = np.asarray(node_plane).tolist(), np.asarray(node_children).tolist()
    if not planes:
        return np.asarray(node_plane), np.asarray(node_children), [[0]]
    none = object()
    collapse: list = [none] * len(planes)  # the key a node collapses to; `none` while it stays a node

    def key_of(ch):
        if ch < 0:
            return key[-1 - ch] if mergeable[-1 - ch] else none
        return collapse[ch]

    order, stack = [], [0]
    while stack:  # preorder, so that reversed, children come before their parent
        code = stack.pop()
        order.append(code)
        stack.extend(ch for ch in children[code] if ch >= 0)
    for code in reversed(order):
        front, back = (key_of(ch) for ch in children[code])
        if front is not none and front == back:
            collapse[code] = front
    new_plane: list[int] = []
    new_children: list[list[int]] = []
    groups: list[list[int]] = []
    todo = [(0, -1, 0)]  # (code, new parent, side)
    while todo:
        code, parent, side = todo.pop()
        if code >= 0 and collapse[code] is none:
            ref = len(new_plane)
            new_plane.append(planes[code])
            new_children.append([0, 0])
            todo += [(children[code][1], ref, 1), (children[code][0], ref, 0)]
        else:
            ref = -1 - len(groups)
            groups.append(_leaves_under(children, code))
        if parent >= 0:
            new_children[parent][side] = ref
    return (np.array(new_plane, dtype=np.int32), np.array(new_children, dtype=np.int32).reshape(-1, 2), groups)


def _leaves_under(children: list, code: int) -> list[int]:
    """The old leaves below `code`, front first."""
    out, stack = [], [code]
    while stack:
        c = stack.pop()
        if c < 0:
            out.append(-1 - c)
        else:
            stack += [children[c][1], children[c][0]]
    return out


def prune_equal_leaves(node_plane, node_children, leaf_solid) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The onion tree pruned: siblings with the same solid bits for every hull merge.  Returns
    (node_plane, node_children, leaf_solid)."""
    solid = np.asarray(leaf_solid)
    planes, children, groups = prune_tree(node_plane, node_children, solid.tolist(), [True] * len(solid))
    return planes, children, solid[[g[0] for g in groups]].astype(np.uint32)


def prune_point_tree(level: CompiledLevel) -> int:
    """The point tree pruned in place: solid leaves with no PVS row merge (the module docstring).
    Returns the number of nodes removed."""
    solid = (level.leaf_solid & POINT_HULL_BIT) != 0
    row = np.asarray(level.vis_leaf_cluster) if len(level.vis_leaf_cluster) else np.full(len(solid), -1)
    mergeable = (solid & (row < 0)).tolist()
    before = len(level.node_plane)
    planes, children, groups = prune_tree(level.node_plane, level.node_children, [1] * len(solid), mergeable)
    if len(planes) == before:
        return 0
    first = np.array([g[0] for g in groups], dtype=np.int64)
    last = np.array([g[-1] for g in groups], dtype=np.int64)
    if not all(g == list(range(g[0], g[-1] + 1)) for g in groups):
        raise AssertionError("point tree leaves are not in front-first order")  # flatten_tree's order
    counts = np.add.reduceat(np.asarray(level.leaf_face_count, dtype=np.int64), first)
    bounds = np.asarray(level.leaf_bounds, dtype=np.float64)
    lo = np.minimum.reduceat(bounds[:, 0], first, axis=0)
    hi = np.maximum.reduceat(bounds[:, 1], first, axis=0)
    cluster = np.asarray(level.leaf_cluster)[first]
    _, dense = np.unique(cluster, return_index=True)
    rank = np.empty(len(dense), dtype=np.int64)
    rank[np.argsort(dense, kind="stable")] = np.arange(len(dense))  # numbered by first appearance
    level.node_plane, level.node_children = planes, children
    level.leaf_solid = np.asarray(level.leaf_solid)[first].astype(np.uint32)
    level.leaf_cluster = rank[np.searchsorted(np.unique(cluster), cluster)].astype(np.int32)
    level.leaf_bounds = np.stack([lo, hi], axis=1)
    level.leaf_face_first = np.asarray(level.leaf_face_first)[first].astype(np.int32)
    level.leaf_face_count = counts.astype(np.int32)
    if len(level.vis_leaf_cluster):
        level.vis_leaf_cluster = np.asarray(level.vis_leaf_cluster)[first].astype(np.int32)
    assert (last >= first).all()
    return before - len(planes)
