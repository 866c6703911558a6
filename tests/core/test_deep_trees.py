"""Run-time walks on trees far deeper than Python's recursion limit (issue: a chain of a few hundred
nodes on one plane overflowed the segment walk).  The trees are built by hand, so the expected
answers come from the construction, not from the walks under test."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from brushbake.core.runtime.query import point_leaves, point_solid
from brushbake.core.runtime.trace import find_first_transitions, trace_hull, trace_hulls
from brushbake.core.runtime.tree import Tree

DEPTH = 3 * sys.getrecursionlimit()  # far past what a recursive walk survives
STEP = 1e-2  # m between the chain's planes (a slab thicker than the trace retry's back-off)


def chain(planes_x: np.ndarray | None, solid_leaf: int) -> Tree:
    """Node k splits on its own plane (x = (k + 1) * STEP) or, with planes_x None, every node on
    the one plane z = 0; its front child is node k + 1, its back child leaf k; the last node's
    front is leaf DEPTH.  Only `solid_leaf` is solid."""
    if planes_x is None:
        normals = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]])
        dists = np.zeros(2)
        node_plane = np.zeros(DEPTH, dtype=np.int32)
    else:
        normals = np.tile([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]], (DEPTH, 1))
        dists = np.repeat(planes_x, 2) * np.tile([1.0, -1.0], DEPTH)
        node_plane = (2 * np.arange(DEPTH)).astype(np.int32)
    children = np.empty((DEPTH, 2), dtype=np.int32)
    children[:, 0] = np.arange(1, DEPTH + 1)
    children[-1, 0] = -1 - DEPTH
    children[:, 1] = -1 - np.arange(DEPTH)
    solid = np.zeros(DEPTH + 1, dtype=np.uint32)
    solid[solid_leaf] = 1
    return Tree(normals, dists, node_plane, children, solid)


def test_a_segment_crosses_thousands_of_planes():
    planes_x = (np.arange(DEPTH) + 1) * STEP
    k = DEPTH - 7  # leaf k is the slab planes_x[k - 1] < x < planes_x[k]
    tree = chain(planes_x, k)
    s, e = np.array([0.5 * STEP, 0.0, 0.0]), np.array([(DEPTH + 1) * STEP, 0.0, 0.0])
    want = (planes_x[k - 1] - s[0]) / (e[0] - s[0])
    single = trace_hull(tree, s, e)
    batch = trace_hulls(tree, s[None], e[None])
    assert single.hit and not single.start_solid and single.fraction == pytest.approx(want, abs=1e-12)
    assert single.normal.tolist() == [-1.0, 0.0, 0.0]
    assert batch.fraction[0] == single.fraction and batch.plane[0] == single.plane
    # and from inside the slab: a start in solid
    inside = np.array([planes_x[k - 1] + 0.5 * STEP, 0.0, 0.0])
    assert trace_hull(tree, inside, e).start_solid
    assert point_leaves(tree, inside[None])[0] == k and tree.leaf(inside) == k


def test_a_segment_lying_in_a_plane_shared_by_thousands_of_nodes():
    """Every node on z = 0: a segment in that plane is the open walk's (pieces lying in a plane,
    solid only where both sides are), and a point on it classifies both sides of every node."""
    tree = chain(None, DEPTH)  # the deepest front leaf is solid, every back leaf empty
    s, e = np.array([0.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0])
    assert not trace_hull(tree, s, e).hit  # empty below the plane: touching, not inside
    kind, t, plane = find_first_transitions(tree, s[None], e[None])
    assert kind[0] == 0 and t[0] == 1.0
    assert point_solid(tree, s[None]).tolist() == [0]
    above = np.array([[0.0, 0.0, 1.0]])  # in front of every node: the solid leaf
    assert point_solid(tree, above).tolist() == [1]
    down = trace_hull(tree, above[0], above[0] - [0.0, 0.0, 2.0])
    assert down.start_solid
