"""CSG union of brush faces: keep only the parts of faces that lie on the surface of the union.

Rule for coplanar faces (stated once, used everywhere):
- Two brushes touching face to face (coplanar faces facing opposite ways): both faces are inside
  the union and are removed where they overlap.
- Two brushes with coplanar faces facing the same way (flush tops, say): the face of the brush
  that comes first in the brush order is kept and the later brush's face is removed where they
  overlap, so the surface is covered exactly once.  Structural brushes come before detail brushes.
Everything else: the part of a face strictly inside another brush is removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .brushes import Brush
from .geometry import PlaneTable, split_polygon
from .tolerances import ON_EPSILON


@dataclass
class FaceList:
    """Faces as parallel lists: a convex polygon each, its plane in the table, its brush, flags."""

    verts: list[np.ndarray] = field(default_factory=list)
    plane: list[int] = field(default_factory=list)
    brush: list[int] = field(default_factory=list)
    flags: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.verts)

    def add(self, verts: np.ndarray, plane: int, brush: int, flags: int = 0) -> int:
        self.verts.append(verts)
        self.plane.append(plane)
        self.brush.append(brush)
        self.flags.append(flags)
        return len(self.verts) - 1


def brush_plane_ids(brushes: list[Brush], planes: PlaneTable) -> list[np.ndarray]:
    """Each brush's face planes as plane-table indices (same order as brush.faces)."""
    if not brushes:
        return []
    counts = [len(b.dists) for b in brushes]
    ids = planes.add_many(np.concatenate([b.normals for b in brushes]), np.concatenate([b.dists for b in brushes]))
    return np.split(ids, np.cumsum(counts)[:-1])


def union_faces(
    brushes: list[Brush],
    plane_ids: list[np.ndarray],
    planes: PlaneTable,
    subtract_from: int = 0,
    flags: int = 0,
    out: FaceList | None = None,
    cancel=None,
) -> FaceList:
    """Faces of brushes[subtract_from:] that lie on the surface of the union of all `brushes`.

    Brushes before `subtract_from` only cut (e.g. structural brushes cutting detail faces); their
    own faces are not emitted.  Face brush numbers are indices into `brushes`.
    """
    out = out if out is not None else FaceList()
    if not brushes:
        return out
    bounds = np.array([b.bounds for b in brushes])  # (B, 2, 3)
    lo, hi = bounds[:, 0] - ON_EPSILON, bounds[:, 1] + ON_EPSILON
    counts = np.array([len(b.dists) for b in brushes])
    offsets = np.concatenate([[0], np.cumsum(counts)])
    all_n = np.concatenate([b.normals for b in brushes])
    all_d = np.concatenate([b.dists for b in brushes])
    for i in range(subtract_from, len(brushes)):
        if cancel is not None and i % 64 == 0 and cancel():
            from .errors import CancelledError

            raise CancelledError()
        brush = brushes[i]
        near = np.flatnonzero(np.all(lo <= hi[i], axis=1) & np.all(hi >= lo[i], axis=1))
        near = near[near != i]
        touching = _touching_brushes(brush, near, counts, offsets, all_n, all_d) if len(near) else None
        for f, (face, pid) in enumerate(zip(brush.faces, plane_ids[i].tolist())):
            pieces = [face]
            if touching is not None:
                face_normal = planes.normal(pid)
                for j in near[touching[f]].tolist():
                    pieces = _remove_inside(pieces, face_normal, brushes[j], keep_flush=j > i)
                    if not pieces:
                        break
            for piece in pieces:
                out.add(piece, pid, i, flags)
    return out


def _touching_brushes(brush: Brush, near: np.ndarray, counts, offsets, all_n, all_d) -> np.ndarray:
    """(faces of `brush`, len(near)) bool: the face is not separated from near brush j by one of
    j's planes (all its vertices in front of it).  Only those brushes can cut the face.

    All faces at once: one product of the brush's vertices with every near brush's planes, and
    per-face extremes by reduceat over each face's vertex rows."""
    sizes = counts[near]
    cols = np.arange(int(sizes.sum())) + np.repeat(offsets[near] - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
    seg = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rows = np.concatenate([[0], np.cumsum([len(face) for face in brush.faces])[:-1]])
    dist = np.concatenate(brush.faces) @ all_n[cols].T - all_d[cols]  # (vertices, planes of all near brushes)
    separated = (np.minimum.reduceat(dist, rows, axis=0) > -ON_EPSILON) & (
        np.maximum.reduceat(dist, rows, axis=0) > ON_EPSILON)
    return ~np.logical_or.reduceat(separated, seg, axis=1)


def _remove_inside(
    pieces: list[np.ndarray],
    face_normal: np.ndarray,
    brush: Brush,
    keep_flush: bool,
) -> list[np.ndarray]:
    """Pieces with their parts inside `brush` removed (the coplanar rule in the module docstring).

    A piece lying on one of the brush's planes (every vertex within ON_EPSILON; decided by
    geometry, not plane index, so nearly identical planes of different brushes agree) counts as
    inside when it faces the other way, and when it faces the same way unless keep_flush.
    """
    kept: list[np.ndarray] = []
    normals, dists = brush.normals, brush.dists
    facing = (normals @ face_normal > 0).tolist()
    for piece, (lo, hi, cols) in zip(pieces, _piece_extremes(pieces, normals, dists)):
        rest = piece  # lo, hi, cols are refreshed after each split
        if keep_flush and any(h <= ON_EPSILON and m >= -ON_EPSILON and f for h, m, f in zip(hi, lo, facing)):
            kept.append(rest)  # flush with a later brush: this face is the one kept, whole
            continue
        for k in range(len(lo)):
            if hi[k] <= ON_EPSILON:
                if lo[k] >= -ON_EPSILON and facing[k] and keep_flush:
                    kept.append(rest)  # flush with a later brush: this face is the one kept
                    rest = None
                    break
                continue  # behind this plane (or on it, counting as inside)
            if lo[k] >= -ON_EPSILON:
                kept.append(rest)  # wholly in front: outside the brush
                rest = None
                break
            front, back = split_polygon(rest, normals[k], dists[k], dist=cols[k])
            if front is not None:
                kept.append(front)
            rest = back
            if rest is None:
                break
            lo, hi, cols = _extremes(rest @ normals.T - dists)
        # whatever is left lies inside the brush and is dropped
    return kept


def _piece_extremes(pieces: list[np.ndarray], normals: np.ndarray, dists: np.ndarray):
    """_extremes of each piece against the brush's planes, all pieces in one product.

    The rows of a matrix product do not depend on the other rows, so each piece's distances are
    bit for bit those of its own product (split vertices, which interpolate them, stay the same)."""
    if len(pieces) == 1:
        return [_extremes(pieces[0] @ normals.T - dists)]
    starts = np.cumsum([0] + [len(p) for p in pieces])
    dist = np.concatenate(pieces) @ normals.T - dists
    lo = np.minimum.reduceat(dist, starts[:-1], axis=0).tolist()
    hi = np.maximum.reduceat(dist, starts[:-1], axis=0).tolist()
    return [(lo[i], hi[i], dist[starts[i] : starts[i + 1]].T) for i in range(len(pieces))]


def _extremes(dist: np.ndarray) -> tuple[list[float], list[float], np.ndarray]:
    """Per plane (column): min and max vertex distance as Python lists (the loop compares them
    one by one), and the columns for split_polygon."""
    return dist.min(axis=0).tolist(), dist.max(axis=0).tolist(), dist.T
