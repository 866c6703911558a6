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
from .geometry import cross3, snap_normals
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
    key = np.round(np.concatenate([d, p - np.einsum("ij,ij->i", p, d)[:, None] * d], axis=1) * 1e6)  # direction, foot point
    _, first = np.unique(key, axis=0, return_index=True)
    first = np.sort(first)
    return p[first], d[first]


#: m. Candidate facet directions are one direction when their angle times the size of the
#: expanded brush is below this: a brush edge leaning 1e-6 rad off an axis (float32 mesh data)
#: makes an edge bevel that nearly repeats a face or axial plane, and the two would be a
#: duplicate or a sliver thinner than ON_EPSILON.  Every plane's offset is the exact support of
#: the sum in its own direction, so a merge moves the surface by at most this much.
DIRECTION_MERGE_DISTANCE = ON_EPSILON


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
        length = np.linalg.norm(n, axis=1)
        ok = length > 1e-9
        n, pa = n[ok] / length[ok, None], p[ok]
        side = verts @ n.T - np.einsum("ij,ij->i", n, pa)  # (V, E)
        behind = np.all(side <= ON_EPSILON, axis=0)
        ahead = np.all(side >= -ON_EPSILON, axis=0)
        directions.append(np.concatenate([n[behind], -n[ahead & ~behind]]))
    extent = float(np.linalg.norm(verts.max(axis=0) - verts.min(axis=0)) + np.linalg.norm(np.subtract(maxs, mins)))
    n = _merge_directions(snap_normals(np.concatenate(directions)), DIRECTION_MERGE_DISTANCE / max(extent, 1e-9))
    support = (verts @ n.T).max(axis=0)  # the brush's own support: its face planes exactly
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


def expand_brush(brush: Brush, hull: Hull) -> Brush:
    """The configuration-space brush of `brush` for `hull` (same contents, name 'brush@hull')."""
    n, d = expansion_planes(brush, hull.mins, hull.maxs)
    return brush_from_planes(n, d, f"{brush.name}@{hull.name}", brush.contents, entity=brush.entity)
