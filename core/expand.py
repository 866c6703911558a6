"""Configuration spaces: a brush expanded by a box hull into their exact Minkowski sum.

The reference point of a character with box hull H = [mins, maxs] overlaps brush B exactly when
it lies in B (+) (-H)... with the sign convention below: the point p is blocked when the box
p + H overlaps B, i.e. p lies in B (+) (-H) = {b - h}.  The planes of that sum are
- B's face planes, each pushed out by the support of -H along its normal;
- the six axial planes at B's bounds, pushed out by the box;
- edge bevels: for each edge e of B and each axis a, the plane with normal e x a through e,
  where the whole brush lies on one side of it (the separating axes of an edge against a box
  edge), pushed out by the box's support.
These are all the facet directions a Minkowski sum of a convex polytope and a box can have, so
the expansion is exact: no 'too fat' corners (Quake 1's qbsp) and no missing bevels.
"""

from __future__ import annotations

import numpy as np

from .brushes import Brush, brush_from_planes
from .geometry import cross3
from .scene import Hull
from .tolerances import NORMAL_EPSILON, ON_EPSILON


def box_support(normals: np.ndarray, mins, maxs) -> np.ndarray:
    """max over the box {mins..maxs} of n . h, for each normal: sum_i max(n_i mins_i, n_i maxs_i)."""
    normals = np.asarray(normals, dtype=np.float64).reshape(-1, 3)
    return np.maximum(normals * np.asarray(mins, float), normals * np.asarray(maxs, float)).sum(axis=1)


def brush_edges(brush: Brush) -> tuple[np.ndarray, np.ndarray]:
    """Unique edges as (start points (E, 3), unit directions (E, 3))."""
    starts, dirs = [], []
    for face in brush.faces:
        nxt = np.concatenate([face[1:], face[:1]])
        starts.append(face)
        dirs.append(nxt - face)
    p = np.concatenate(starts)
    d = np.concatenate(dirs)
    length = np.linalg.norm(d, axis=1)
    keep = length > 0
    p, d = p[keep], d[keep] / length[keep, None]
    # each edge appears twice (once per face, opposite directions): canonicalise the direction
    axis = np.argmax(np.abs(d), axis=1)
    flip = d[np.arange(len(d)), axis] < 0
    d[flip] *= -1.0
    key = np.round(np.concatenate([d, np.einsum("ij,ij->i", p, d)[:, None]], axis=1) * 1e6)
    _, first = np.unique(key, axis=0, return_index=True)
    first = np.sort(first)
    return p[first], d[first]


def expansion_planes(brush: Brush, mins, maxs) -> tuple[np.ndarray, np.ndarray]:
    """Outward planes (normals (K, 3), dists (K,)) of brush (+) box(-maxs .. -mins).

    The character box is p + [mins, maxs]; it touches the brush when p is in brush - box.
    """
    neg_mins, neg_maxs = -np.asarray(maxs, float), -np.asarray(mins, float)
    verts = np.concatenate(brush.faces)
    normals = [brush.normals]
    dists = [brush.dists]
    # axial planes at the brush bounds
    eye = np.eye(3)
    normals.append(np.vstack([eye, -eye]))
    dists.append(np.concatenate([verts.max(axis=0), -verts.min(axis=0)]))
    # edge bevels: e x axis where the whole brush lies on one side
    p, d = brush_edges(brush)
    for a in range(3):
        n = cross3(d, np.broadcast_to(eye[a], d.shape))
        length = np.linalg.norm(n, axis=1)
        ok = length > 1e-9
        n, pa = n[ok] / length[ok, None], p[ok]
        off = np.einsum("ij,ij->i", n, pa)
        side = verts @ n.T - off  # (V, E)
        behind = np.all(side <= ON_EPSILON, axis=0)
        ahead = np.all(side >= -ON_EPSILON, axis=0)
        n = np.concatenate([n[behind], -n[ahead & ~behind]])
        off = np.concatenate([off[behind], -off[ahead & ~behind]])
        normals.append(n)
        dists.append(off)
    n = np.concatenate(normals)
    dist = np.concatenate(dists)
    n, dist = _unique_directions(n, dist)
    return n, dist + box_support(n, neg_mins, neg_maxs)


def _unique_directions(normals: np.ndarray, dists: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One plane per direction (the outermost), so the expanded brush has no duplicate planes."""
    key = np.round(normals / (10 * NORMAL_EPSILON)).astype(np.int64)
    order = np.lexsort((-dists, *key.T[::-1]))
    key, normals, dists = key[order], normals[order], dists[order]
    first = np.ones(len(key), bool)
    first[1:] = np.any(key[1:] != key[:-1], axis=1)
    return normals[first], dists[first]


def expand_brush(brush: Brush, hull: Hull) -> Brush:
    """The configuration-space brush of `brush` for `hull` (same contents, name 'brush@hull')."""
    n, d = expansion_planes(brush, hull.mins, hull.maxs)
    return brush_from_planes(n, d, f"{brush.name}@{hull.name}", brush.contents, entity=brush.entity)
