"""Probe points: one point inside each leaf of a tree, found from the faces the leaf keeps.

Every face the tree builder keeps in a leaf faces *into* that leaf (solidity by face
orientation, core/compile/trees/bsp.py), so a point a hair in front of the centroid of one of the
leaf's faces lies in the leaf, unless the leaf is thinner than the step there; a leaf with no
face lies right behind (or in front of) its parent's splitter face.  A probe is only a guess:
the caller says how to check that it landed (by locating it in the tree it belongs to), and
the guesses are tried in an order it gives, every pending leaf's next guess checked at once.

Two stages use them: the pipeline (is an empty structural leaf wholly inside a detail brush?)
and the onion tree (determine_leaf_solidity: the solid bit of a leaf per hull), which falls
back to Listing 4 (onion.arbitrary_leaf_point) for a leaf no probe lands in.
"""

from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from .bsp import TreeBuilder
from .csg import FaceList


def probe_point(builder: TreeBuilder, faces: FaceList, leaf: int, step: float, face_no: int = 0) -> np.ndarray | None:
    """`step` in front of the centroid of the leaf's face number `face_no`; for a leaf with no
    face, `step` on the leaf's side of its parent's splitter face (face_no 0 only).  None when
    the leaf has no such face (or is a faceless root)."""
    return _probe(builder, builder.leaves[leaf], faces, builder.planes.normals, step, face_no)


def _probe(builder: TreeBuilder, rec, faces: FaceList, normals: np.ndarray, step: float, face_no: int):
    if rec.faces:  # a leaf face faces into the leaf: step in front of its centroid
        if face_no >= len(rec.faces):
            return None
        f = rec.faces[face_no]
        return faces.verts[f].mean(axis=0) + step * normals[faces.plane[f]]
    if face_no or rec.parent < 0:
        return None
    # no face: the leaf lies right behind (or in front of) its parent's splitter face
    node = rec.parent
    f = builder.node_face[node]
    if f < 0:  # a region grid's cut: no face lies on it
        return None
    plane = builder.node_plane[node]
    toward = 1.0 if rec.side == 0 else -1.0
    return faces.verts[f].mean(axis=0) + toward * step * normals[plane]


def leaf_probes(builder: TreeBuilder, faces: FaceList, leaves: list[int], tries: Iterable[tuple[int, float]],
                lands: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A probe point for each of `leaves` (builder leaf indices): (points (N, 3), found (N,) bool).

    tries: (face number, step) pairs in the order to try them (see probe_point); the tries stop
    when every leaf has a point or no pending leaf has a probe for the next try.  lands(points,
    ks) says, for the probes of leaves[ks], whether each landed in its leaf.  A leaf without a
    point keeps zeros and found False."""
    points = np.zeros((len(leaves), 3))
    found = np.zeros(len(leaves), dtype=bool)
    records, normals = [builder.leaves[leaf] for leaf in leaves], builder.planes.normals
    pending = list(range(len(leaves)))
    for face_no, step in tries:
        if not pending:
            break
        owners, probes = [], np.empty((len(pending), 3))
        for k in pending:
            p = _probe(builder, records[k], faces, normals, step, face_no)
            if p is not None:
                probes[len(owners)] = p
                owners.append(k)
        if not owners:
            break
        ks, probes = np.array(owners, dtype=np.int64), probes[: len(owners)]
        ok = np.asarray(lands(probes, ks), dtype=bool)
        points[ks[ok]] = probes[ok]
        found[ks[ok]] = True
        landed = set(ks[ok].tolist())
        pending = [k for k in pending if k not in landed]
    return points, found


def builder_leaves(builder: TreeBuilder, points: np.ndarray) -> np.ndarray:
    """Leaf index (the builder's numbering) of each point in a tree still being built; a point
    on a plane goes to the front.  All points at once."""
    node_plane = np.asarray(builder.node_plane, dtype=np.int64)
    children = np.asarray(builder.node_children, dtype=np.int64).reshape(-1, 2)
    return locate(node_plane, children, builder.planes.normals, builder.planes.dists, points)[0]


def locate(node_plane: np.ndarray, node_children: np.ndarray, normals: np.ndarray, dists: np.ndarray,
           points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Leaf of each point in a tree given as arrays (node_children: (nodes, 2), a leaf coded as
    -1 - leaf; root 0, or leaf 0 when there are no nodes), a point on a plane going to the front,
    and the smallest |distance| to a plane on its path (a probe's margin).  All points at once."""
    codes = np.full(len(points), 0 if len(node_plane) else -1, dtype=np.int64)
    margin = np.full(len(points), np.inf)
    active = np.flatnonzero(codes >= 0)
    while len(active):
        nodes = codes[active]
        plane = node_plane[nodes]
        dist = np.einsum("ij,ij->i", points[active], normals[plane]) - dists[plane]
        margin[active] = np.minimum(margin[active], np.abs(dist))
        codes[active] = node_children[nodes, (dist < 0).astype(np.int64)]
        active = active[codes[active] >= 0]
    return -1 - codes, margin
