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
        if len(near):
            cols = np.concatenate([np.arange(offsets[j], offsets[j + 1]) for j in near])
            seg = np.concatenate([[0], np.cumsum(counts[near])[:-1]])
            near_n, near_d = all_n[cols].T, all_d[cols]
        for face, pid in zip(brush.faces, plane_ids[i]):
            pid = int(pid)
            pieces = [face]
            if len(near):
                dist = face @ near_n - near_d  # (K, planes of all near brushes)
                separated = (dist.min(axis=0) > -ON_EPSILON) & (dist.max(axis=0) > ON_EPSILON)
                touching = near[~np.logical_or.reduceat(separated, seg)]
                for j in touching:
                    pieces = _remove_inside(pieces, planes.normal(pid), brushes[j], keep_flush=j > i)
                    if not pieces:
                        break
            for piece in pieces:
                out.add(piece, pid, i, flags)
    return out


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
    for piece in pieces:
        rest = piece
        dist = rest @ normals.T - dists  # (K, planes), refreshed after each split
        lo, hi = dist.min(axis=0).tolist(), dist.max(axis=0).tolist()
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
            front, back = split_polygon(rest, normals[k], dists[k], dist=dist[:, k])
            if front is not None:
                kept.append(front)
            rest = back
            if rest is None:
                break
            dist = rest @ normals.T - dists
            lo, hi = dist.min(axis=0).tolist(), dist.max(axis=0).tolist()
        # whatever is left lies inside the brush and is dropped
    return kept
