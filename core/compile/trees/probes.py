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

from ...detmath import run_sums
from .bsp import TreeBuilder
from .csg import FaceList


def probe_point(builder: TreeBuilder, faces: FaceList, leaf: int, step: float, face_no: int = 0) -> np.ndarray | None:
    """`step` in front of the centroid of the leaf's face number `face_no`; for a leaf with no
    face, `step` on the leaf's side of its parent's splitter face (face_no 0 only).  None when
    the leaf has no such face (or is a faceless root)."""
    points, has = _probes(builder, [builder.leaves[leaf]], faces, step, face_no)
    return points[0] if has[0] else None


def _probe_face(builder: TreeBuilder, rec, face_no: int) -> tuple[int, int, float]:
    """(face, plane, toward) of a leaf's probe: a leaf face faces into the leaf (its own plane,
    forward); a faceless leaf lies right behind (or in front of) its parent's splitter face.
    face -1: no probe (no such face, a faceless root, or a region grid's cut with no face on it)."""
    if rec.faces:
        return (rec.faces[face_no], -1, 1.0) if face_no < len(rec.faces) else (-1, -1, 0.0)
    if face_no or rec.parent < 0:
        return -1, -1, 0.0
    node = rec.parent
    return builder.node_face[node], builder.node_plane[node], 1.0 if rec.side == 0 else -1.0


def _probes(builder: TreeBuilder, records: list, faces: FaceList, step: float, face_no: int):
    """The probes of many leaves at once: (points (N, 3), has (N,) bool).  A face's centroid is its
    vertices summed in order (detmath.run_sums) over their count."""
    picked = [_probe_face(builder, rec, face_no) for rec in records]
    face = np.array([p[0] for p in picked], dtype=np.int64)
    has = face >= 0
    points = np.zeros((len(records), 3))
    rows = np.flatnonzero(has)
    if not len(rows):
        return points, has
    f = face[rows].tolist()
    verts = [faces.verts[k] for k in f]
    count = np.array([len(v) for v in verts], dtype=np.int64)
    ends = np.cumsum(count)
    centre = run_sums(np.concatenate(verts), ends - count, ends) / count[:, None]
    plane = np.array([picked[r][1] if picked[r][1] >= 0 else faces.plane[k] for r, k in zip(rows.tolist(), f)],
                     dtype=np.int64)
    toward = np.array([picked[r][2] for r in rows.tolist()])
    points[rows] = centre + (toward * step)[:, None] * builder.planes.normals[plane]
    return points, has


def leaf_probes(builder: TreeBuilder, faces: FaceList, leaves: list[int], tries: Iterable[tuple[int, float]],
                lands: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A probe point for each of `leaves` (builder leaf indices): (points (N, 3), found (N,) bool).

    tries: (face number, step) pairs in the order to try them (see probe_point); the tries stop
    when every leaf has a point or no pending leaf has a probe for the next try.  lands(points,
    ks) says, for the probes of leaves[ks], whether each landed in its leaf.  A leaf without a
    point keeps zeros and found False."""
    points = np.zeros((len(leaves), 3))
    found = np.zeros(len(leaves), dtype=bool)
    records = [builder.leaves[leaf] for leaf in leaves]
    pending = np.arange(len(leaves))
    for face_no, step in tries:
        if not len(pending):
            break
        probes, has = _probes(builder, [records[k] for k in pending.tolist()], faces, step, face_no)
        if not has.any():
            break
        ks, probes = pending[has], probes[has]
        ok = np.asarray(lands(probes, ks), dtype=bool)
        points[ks[ok]] = probes[ok]
        found[ks[ok]] = True
        pending = pending[~found[pending]]
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
