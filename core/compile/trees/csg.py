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

from ...model.brushes import Brush
from ...detmath import matmul
from ...errors import check_cancel
from ...geometry import PlaneTable, split_polygons
from ...tolerances import ON_EPSILON


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

    Each face is cut by the brushes that touch it, one after another in brush order
    (_remove_inside_batch states the rule).  All faces go through their sequences together
    (_cut_faces): step s cuts every face's pieces by that face's s-th brush, so the NumPy work is
    batched over all faces of all brushes.
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
    faces: list[np.ndarray] = []
    face_pid: list[int] = []
    face_brush: list[int] = []
    cutters: list[np.ndarray] = []  # per face: the brushes that may cut it, in brush order
    no_cutter = np.zeros(0, dtype=np.int64)
    for i in range(subtract_from, len(brushes)):
        _check_cancel(cancel, i)
        brush = brushes[i]
        near = np.flatnonzero(np.all(lo <= hi[i], axis=1) & np.all(hi >= lo[i], axis=1))
        near = near[near != i]
        touching = _touching_brushes(brush, near, counts, offsets, all_n, all_d) if len(near) else None
        faces.extend(brush.faces)
        face_pid.extend(plane_ids[i].tolist())
        face_brush.extend([i] * len(brush.faces))
        cutters.extend([near[row] for row in touching] if touching is not None else [no_cutter] * len(brush.faces))
    face_normal = planes.normals[np.array(face_pid, dtype=np.int64)] if faces else np.zeros((0, 3))
    pieces = _cut_faces(faces, np.array(face_brush, dtype=np.int64), face_normal, cutters, _Cutters(brushes), cancel)
    for f, kept in enumerate(pieces):
        for piece in kept:
            out.add(piece, face_pid[f], face_brush[f], flags)
    return out


def _check_cancel(cancel, i: int) -> None:
    if i % 64 == 0:
        check_cancel(cancel)


def _cut_faces(faces, face_brush, face_normal, cutters, table: "_Cutters", cancel) -> list[list[np.ndarray]]:
    """For each face, its pieces left after removing the inside of each of its cutters in turn.

    Step s cuts the pieces of every face with more than s cutters by that face's s-th cutter,
    all at once (_remove_inside_batch); a face's pieces stay in the order a face-by-face loop
    makes them (each piece's kept parts, piece after piece)."""
    n_cut = np.array([len(c) for c in cutters], dtype=np.int64)
    result: list[list[np.ndarray]] = [[face] if n == 0 else [] for face, n in zip(faces, n_cut.tolist())]
    todo = np.flatnonzero(n_cut > 0)
    if not len(todo):
        return result
    first = np.zeros(len(faces) + 1, dtype=np.int64)
    np.cumsum(n_cut, out=first[1:])
    seq = np.concatenate([c for c in cutters if len(c)]).astype(np.int64)
    counts = np.array([len(faces[f]) for f in todo.tolist()], dtype=np.int64)
    verts = np.zeros((len(todo), int(counts.max()), 3))
    for row, f in enumerate(todo.tolist()):
        verts[row, : counts[row]] = faces[f]
    items = _Pieces(verts, counts, todo, np.ones(len(todo), bool))
    step = 0
    while len(items):
        _check_cancel(cancel, 0)
        cutter = seq[first[items.face] + step]
        items = _remove_inside_batch(items, cutter, table, face_normal, face_brush)
        step += 1
        done = n_cut[items.face] == step
        for row in np.flatnonzero(done).tolist():
            f = int(items.face[row])
            result[f].append(faces[f] if items.whole[row] else items.verts[row, : items.counts[row]].copy())
        items = items.take(np.flatnonzero(~done))
    return result


class _Pieces:
    """Polygons padded to a common vertex count: verts (M, V, 3), counts (M,), and per piece the
    face it comes from and whether it is still that face's own polygon (never split)."""

    def __init__(self, verts, counts, face, whole):
        self.verts, self.counts, self.face, self.whole = verts, counts, face, whole

    def __len__(self) -> int:
        return len(self.counts)

    def take(self, rows) -> "_Pieces":
        return _Pieces(self.verts[rows], self.counts[rows], self.face[rows], self.whole[rows])


def _remove_inside_batch(items: _Pieces, cutter: np.ndarray, table: "_Cutters", face_normal: np.ndarray,
                         face_brush: np.ndarray) -> _Pieces:
    """Every piece with its part inside its own cutter brush removed, all pieces at once: the
    pieces kept, each piece's kept parts in order (fronts as they are split off, then the rest).

    The rule, per piece: a piece lying on one of the brush's planes (every vertex within
    ON_EPSILON; decided by geometry, not plane index, so nearly identical planes of different
    brushes agree) counts as inside when it faces the other way, and when it faces the same way
    unless the brush comes later (the coplanar rule: the earlier brush's face is kept, whole).
    Otherwise the brush's planes are walked in order: a piece on or behind a plane goes on; one
    wholly in front of it is outside and kept; one spanning it is split, the front kept and the
    back walked on.  What is left behind every plane is inside and dropped.  The walk's order
    decides how faces are cut into pieces, so it is part of the output.

    Pieces are taken in cutter order, so that each cutter's pieces get their distances from one
    product of their vertices with the cutter's planes (_cutter_extremes); a product's rows do
    not depend on the other rows, so every value, and every split vertex (_split_distances), is
    the one a piece-by-piece loop gets."""
    perm = np.argsort(cutter, kind="stable")
    items, cutter = items.take(perm), cutter[perm]
    k_count = table.count[cutter]
    k_max = int(k_count.max())
    k_index = np.arange(k_max)
    normals = table.normals[cutter, :k_max]
    facing = matmul(normals, face_normal[items.face][:, :, None])[:, :, 0] > 0  # each as `normals @ n`
    flush_keeps = facing & (k_index < k_count[:, None]) & (face_brush[items.face] < cutter)[:, None]
    lo, hi = _cutter_extremes(items.verts, items.counts, cutter, table, k_max)
    on = (hi <= ON_EPSILON) & (lo >= -ON_EPSILON)
    # kept pieces as (row, rank, verts, counts, whole), put in (row, rank) order at the end
    out_row, out_rank, out_verts, out_counts, out_whole = [], [], [], [], []

    def emit(rows, rank, verts, counts, whole):
        out_row.append(rows)
        out_rank.append(rank)
        out_verts.append(verts)
        out_counts.append(counts)
        out_whole.append(whole)

    whole = np.any(on & flush_keeps, axis=1)  # flush with a later brush: this face is kept, whole
    rows = np.flatnonzero(whole)
    emit(rows, np.zeros(len(rows), dtype=np.int64), items.verts[rows], items.counts[rows], items.whole[rows])
    live = np.flatnonzero(~whole)
    rest_v, rest_n, rest_whole = items.verts[live], items.counts[live], items.whole[live]
    lo, hi, on = lo[live], hi[live], on[live]
    start = np.zeros(len(live), dtype=np.int64)
    rank = np.zeros(len(live), dtype=np.int64)
    while len(live):
        event = ((hi > ON_EPSILON) | (on & flush_keeps[live])) & (k_index >= start[:, None])
        has = event.any(axis=1)
        k = np.argmax(event, axis=1)
        pick = np.arange(len(live))
        keep = has & ((hi[pick, k] <= ON_EPSILON) | (lo[pick, k] >= -ON_EPSILON))  # flush, or wholly in front
        rows = np.flatnonzero(keep)
        emit(live[rows], rank[rows], rest_v[rows], rest_n[rows], rest_whole[rows])
        rows = np.flatnonzero(has & ~keep)  # the others end inside the brush: dropped
        if not len(rows):
            break
        ks = k[rows]
        c = cutter[live[rows]]
        n, d = normals[live[rows], ks], table.dists[c, ks]
        front, nf, back, nb = split_polygons(rest_v[rows], rest_n[rows], _split_distances(rest_v[rows], n, d), n, d)
        got = np.flatnonzero(nf)
        emit(live[rows[got]], rank[rows[got]], front[got], nf[got], np.zeros(len(got), bool))
        go = np.flatnonzero(nb)
        live, rows, start = live[rows[go]], rows[go], ks[go] + 1
        rank = rank[rows] + 1
        rest_v, rest_n, rest_whole = back[go], nb[go], np.zeros(len(go), bool)
        lo, hi = _cutter_extremes(rest_v, rest_n, cutter[live], table, k_max)
        on = (hi <= ON_EPSILON) & (lo >= -ON_EPSILON)
    row = np.concatenate(out_row)
    order = np.lexsort((np.concatenate(out_rank), perm[row]))
    verts = _concat_padded(out_verts)
    row = row[order]
    return _Pieces(verts[order], np.concatenate(out_counts)[order], items.face[row], np.concatenate(out_whole)[order])


class _Cutters:
    """Every brush's planes padded to a common count: normals (B, K, 3), dists (B, K), count (B,)."""

    def __init__(self, brushes: list[Brush]):
        self.brushes = brushes
        self.count = np.array([len(b.dists) for b in brushes], dtype=np.int64)
        k = int(self.count.max())
        self.normals = np.zeros((len(brushes), k, 3))
        self.dists = np.zeros((len(brushes), k))
        for i, b in enumerate(brushes):
            self.normals[i, : len(b.dists)] = b.normals
            self.dists[i, : len(b.dists)] = b.dists


def _cutter_extremes(verts, counts, cutter, table: _Cutters, k_max) -> tuple[np.ndarray, np.ndarray]:
    """Per piece and plane of its cutter, the min and max vertex distance: (M, K) each, -inf on
    padding planes.  Pieces come sorted by cutter: one matrix product per cutter over all its
    pieces' vertices (a product's rows do not depend on the other rows, so the values are those
    of each piece's own product; padding rows repeat a piece's last vertex and change no extreme)."""
    m, width = verts.shape[:2]
    fill = np.minimum(np.arange(width), counts[:, None] - 1)
    verts = np.take_along_axis(verts, fill[:, :, None], axis=1)
    lo = np.full((m, k_max), -np.inf)
    hi = np.full((m, k_max), -np.inf)
    groups = np.flatnonzero(np.r_[True, cutter[1:] != cutter[:-1], True])
    widths = np.maximum.reduceat(counts, groups[:-1]).tolist() if m else []
    for a, z, w in zip(groups[:-1].tolist(), groups[1:].tolist(), widths):
        b = table.brushes[int(cutter[a])]
        k = len(b.dists)
        dist = (matmul(verts[a:z, :w].reshape(-1, 3), b.normals.T) - b.dists).reshape(z - a, w, k)
        lo[a:z, :k] = dist.min(axis=1)
        hi[a:z, :k] = dist.max(axis=1)
    return lo, hi


def _split_distances(verts: np.ndarray, normals: np.ndarray, dists: np.ndarray) -> np.ndarray:
    """(M, V) distances of each piece's vertices to its own plane: the same values
    _cutter_extremes decided on (detmath sums every product in the same order, whatever its
    shape)."""
    return matmul(verts, normals[:, :, None])[:, :, 0] - dists[:, None]


def _concat_padded(verts_list):
    """Stack padded (M_i, V_i, 3) arrays into one (sum M_i, max V_i, 3) array."""
    width = max(v.shape[1] for v in verts_list)
    out = np.zeros((sum(len(v) for v in verts_list), width, 3))
    a = 0
    for v in verts_list:
        out[a : a + len(v), : v.shape[1]] = v
        a += len(v)
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
    dist = matmul(np.concatenate(brush.faces), all_n[cols].T) - all_d[cols]  # (vertices, planes of all near brushes)
    separated = (np.minimum.reduceat(dist, rows, axis=0) > -ON_EPSILON) & (
        np.maximum.reduceat(dist, rows, axis=0) > ON_EPSILON)
    return ~np.logical_or.reduceat(separated, seg, axis=1)
