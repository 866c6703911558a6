"""The single-brush reference for core/compile/trees/expand.py, kept for the tests only.

expand_brushes works out many brushes at once on flat arrays (_Candidates, _brush_edges_many);
these are the same steps written one brush at a time, as the module docstring of expand.py
describes them: the brush's edges, the candidate facet directions (face normals, the six axes,
edge bevels where the whole brush lies on one side), near-repeats merged, offsets the support of
the brush plus that of the box.  test_expand checks that brush_from_planes(*expansion_planes(b,
mins, maxs)) and expand_brushes build the same brushes to the bit.
"""

from __future__ import annotations

import numpy as np

from brushbake.core.compile.trees.expand import box_support
from brushbake.core.detmath import matmul, norm
from brushbake.core.geometry import cross3, snap_normals
from brushbake.core.model.brushes import Brush
from brushbake.core.tolerances import (
    DIRECTION_MERGE_DISTANCE,
    EDGE_KEY_SCALE,
    MERGE_SIZE_FLOOR,
    ON_EPSILON,
    PARALLEL_EDGE_SINE,
)


def brush_edges(brush: Brush) -> tuple[np.ndarray, np.ndarray]:
    """Unique edges as (start points (E, 3), unit directions (E, 3))."""
    starts, dirs = [], []
    for face in brush.faces:
        nxt = np.concatenate([face[1:], face[:1]])
        starts.append(face)
        dirs.append(nxt - face)
    p = np.concatenate(starts)
    d = np.concatenate(dirs)
    length = norm(d, axis=1)
    keep = length > 0
    p, d = p[keep], d[keep] / length[keep, None]
    # each edge appears twice (once per face, opposite directions): canonicalise the direction
    axis = np.argmax(np.abs(d), axis=1)
    flip = d[np.arange(len(d)), axis] < 0
    d[flip] *= -1.0
    # direction, foot point
    key = np.round(np.concatenate([d, p - np.einsum("ij,ij->i", p, d)[:, None] * d], axis=1) * EDGE_KEY_SCALE)
    _, first = np.unique(key, axis=0, return_index=True)
    first = np.sort(first)
    return p[first], d[first]


def expansion_planes(brush: Brush, mins, maxs) -> tuple[np.ndarray, np.ndarray]:
    """Outward planes (normals (K, 3), dists (K,)) of brush (+) box(-maxs .. -mins).

    The character box is p + [mins, maxs]; it touches the brush when p is in brush - box.
    Directions: the brush's face normals, the six axes, and edge bevels (edge x axis where the
    whole brush lies on one side).  Offsets: the support of the brush plus that of the box.
    """
    neg_mins, neg_maxs = -np.asarray(maxs, float), -np.asarray(mins, float)
    verts = np.concatenate(brush.faces)
    eye = np.eye(3)
    directions = [brush.normals, np.vstack([eye, -eye])]
    p, d = brush_edges(brush)
    for a in range(3):
        n = cross3(d, np.broadcast_to(eye[a], d.shape))
        length = norm(n, axis=1)
        ok = length > PARALLEL_EDGE_SINE
        n, pa = n[ok] / length[ok, None], p[ok]
        side = matmul(verts, n.T) - np.einsum("ij,ij->i", n, pa)  # (V, E)
        behind = np.all(side <= ON_EPSILON, axis=0)
        ahead = np.all(side >= -ON_EPSILON, axis=0)
        directions.append(np.concatenate([n[behind], -n[ahead & ~behind]]))
    extent = float(norm(verts.max(axis=0) - verts.min(axis=0)) + norm(np.subtract(maxs, mins)))
    n = _merge_directions(snap_normals(np.concatenate(directions)),
                          DIRECTION_MERGE_DISTANCE / max(extent, MERGE_SIZE_FLOOR))
    support = (matmul(verts, n.T)).max(axis=0)  # the brush's own support: its face planes exactly
    return n, support + box_support(n, neg_mins, neg_maxs)


def _merge_directions(normals: np.ndarray, tolerance: float) -> np.ndarray:
    """Unit directions with near-repeats (largest component difference below `tolerance`)
    removed, the first one kept (face normals come first, then axes, then bevels)."""
    keep: list[int] = []
    kept = np.zeros((0, 3))
    for i, n in enumerate(normals):
        if len(kept) and np.any(np.abs(kept - n).max(axis=1) < tolerance):
            continue
        keep.append(i)
        kept = normals[keep]
    return normals[keep]
