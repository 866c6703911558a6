"""Faceless leaves under a region grid: solid or empty by a point inside them.

Without regions every face a builder holds lies on a closed surface (the union of the brushes),
so a leaf left without faces lies behind the face it was cut by and is solid (core/compile/trees/
bsp.py).  A region grid cuts space along lines no face chose: a grid cell in the middle of a big
room holds no face and is empty, a cell inside a thick wall holds none and is solid, and a
surface that leaves the cell is open there.  So under a grid a faceless leaf is decided by a
point inside it: a probe in front of its parent's splitter face where that lands inside the leaf
(more than ON_EPSILON from every plane on its path), else Listing 4's exact point (the mean of
its cell's vertices), tested against the brushes (within ON_EPSILON counts as inside).
"""

from __future__ import annotations

import numpy as np

from ...tolerances import ON_EPSILON, PROBE_STEPS
from .bsp import TreeBuilder
from .csg import FaceList
from .onion import _ancestors, _parents, arbitrary_leaf_point, points_in_brushes
from .probes import leaf_probes, locate


def faceless_leaves(builder: TreeBuilder, first: int = 0) -> list[int]:
    """The live leaves from `first` on that hold no face."""
    return [i for i in range(first, len(builder.leaves)) if builder.leaves[i].alive and not builder.leaves[i].faces]


def settle_faceless_leaves(builder: TreeBuilder, faces: FaceList, leaves: list[int], brushes) -> int:
    """Set each of `leaves` (faceless, builder numbering) solid when its interior point lies
    inside one of `brushes`, empty otherwise; returns how many turned out empty."""
    if not leaves:
        return 0
    points = interior_points(builder, faces, leaves)
    solid = points_in_brushes(points, list(brushes)).tolist()
    for leaf, s in zip(leaves, solid):
        builder.leaves[leaf].solid = bool(s)
    return solid.count(False)


def interior_points(builder: TreeBuilder, faces: FaceList, leaves: list[int]) -> np.ndarray:
    """A point inside each of `leaves` (builder numbering) of a built tree: a probe where one
    lands clear of its path's planes, else Listing 4."""
    node_plane = np.asarray(builder.node_plane, dtype=np.int64)
    children = np.asarray(builder.node_children, dtype=np.int64).reshape(-1, 2)
    wanted = np.asarray(leaves, dtype=np.int64)

    def lands(probes: np.ndarray, ks: np.ndarray) -> np.ndarray:
        leaf, margin = locate(node_plane, children, builder.planes.normals, builder.planes.dists, probes)
        return (leaf == wanted[ks]) & (margin > ON_EPSILON)

    points, found = leaf_probes(builder, faces, leaves, [(0, step) for step in PROBE_STEPS], lands)
    pending = np.flatnonzero(~found)
    if len(pending):
        parent_of = _parents(builder)
        for k in pending.tolist():
            leaf = leaves[k]
            points[k] = arbitrary_leaf_point(_ancestors(builder, parent_of, leaf), builder.leaves[leaf].bounds,
                                             builder.planes)
    return points
