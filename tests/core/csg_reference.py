"""The face-by-face reference for core/compile/trees/csg.py, kept for the tests only.

union_faces cuts every face's pieces in rounds, all faces at once, with cutter lists narrowed to
each piece's bounds; this is the rule of its docstring written one face, one piece and one cutter
at a time: each face of brushes[subtract_from:] is cut by every other brush that touches it, in
brush order, after the face is cut at the world lines k * CSG_CELL; a piece outside the cutter's bounds (grown by ON_EPSILON), wholly in front of one of
its planes, or lying on one of its planes facing the same way when the face's brush comes first,
is kept whole; otherwise the cutter's planes are walked in order, fronts kept, the rest dropped.
test_csg checks that both give the same faces, to the bit and in the same order.
"""

from __future__ import annotations

import math

import numpy as np

from brushbake.core.compile.trees.csg import CSG_CELL, brush_plane_ids
from brushbake.core.compile.trees.regions import LINE_MARGIN
from brushbake.core.detmath import matmul
from brushbake.core.geometry import PlaneTable, split_polygon
from brushbake.core.tolerances import ON_EPSILON as EPS


def reference_union(brushes, subtract_from=0):
    """[(verts, plane id, brush)] in union_faces' order, and the plane table."""
    planes = PlaneTable()
    ids = brush_plane_ids(brushes, planes)
    bounds = [(b.bounds[0] - EPS, b.bounds[1] + EPS) for b in brushes]
    out = []
    for i in range(subtract_from, len(brushes)):
        for poly, pid in zip(brushes[i].faces, ids[i].tolist()):
            normal = planes.normals[pid]
            cutters = [j for j in range(len(brushes)) if j != i and _overlap(bounds[i], bounds[j])
                       and _touches(poly, brushes[j])]
            pieces = _at_cell_lines(poly)
            for j in cutters:
                pieces = [q for p in pieces for q in _cut(p, brushes[j], bounds[j], normal, i < j)]
            out.extend((p, pid, i) for p in pieces)
    return out, planes


def _at_cell_lines(poly):
    """A face wider than CSG_CELL along some axis cut at every world line k * CSG_CELL strictly
    inside its bounds (by more than LINE_MARGIN), x lines first, then y, then z, each line in
    increasing k; behind before front.  A smaller face stays whole."""
    lo, hi = poly.min(axis=0), poly.max(axis=0)
    pieces = [poly]
    if max(hi - lo) <= CSG_CELL:
        return pieces
    for axis in range(3):
        n = np.zeros(3)
        n[axis] = 1.0
        k = math.floor(lo[axis] / CSG_CELL) - 1
        while k * CSG_CELL < hi[axis] + CSG_CELL:
            if lo[axis] + LINE_MARGIN < k * CSG_CELL < hi[axis] - LINE_MARGIN:
                pieces = [q for p in pieces for q in split_polygon(p, n, k * CSG_CELL)[::-1] if q is not None and len(q) >= 3]
            k += 1
    return pieces


def _overlap(a, b) -> bool:
    return bool(np.all(a[0] <= b[1]) and np.all(b[0] <= a[1]))


def _touches(poly, brush) -> bool:
    """Not separated from the brush by one of its planes (every vertex in front, not all on it)."""
    dist = matmul(poly, brush.normals.T) - brush.dists
    return not np.any((dist.min(axis=0) > -EPS) & (dist.max(axis=0) > EPS))


def _cut(piece, brush, bounds, face_normal, face_first):
    """The piece's kept parts after removing what lies inside `brush`."""
    if not _overlap((piece.min(axis=0), piece.max(axis=0)), bounds):
        return [piece]
    flush_keeps = (matmul(brush.normals, face_normal) > 0) & face_first
    dist = matmul(piece, brush.normals.T) - brush.dists
    lo, hi = dist.min(axis=0), dist.max(axis=0)
    on = (hi <= EPS) & (lo >= -EPS)
    if np.any(on & flush_keeps) or np.any((lo >= -EPS) & (hi > EPS)):
        return [piece]
    kept, rest, start = [], piece, 0
    while True:
        dist = matmul(rest, brush.normals.T) - brush.dists
        lo, hi = dist.min(axis=0), dist.max(axis=0)
        on = (hi <= EPS) & (lo >= -EPS)
        events = [k for k in range(start, len(brush.dists)) if hi[k] > EPS or (on[k] and flush_keeps[k])]
        if not events:
            return kept  # the rest lies inside the brush
        k = events[0]
        if hi[k] <= EPS or lo[k] >= -EPS:
            return kept + [rest]
        front, back = split_polygon(rest, brush.normals[k], brush.dists[k], dist=dist[:, k])
        if front is not None:
            kept.append(front)
        if back is None:
            return kept
        rest, start = back, k + 1
