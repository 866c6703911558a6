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
from ...geometry import PlaneTable
from ... import kernels
from ..split_c import split_polygons
from . import csg_cut_c, csg_touch_c
from ...tolerances import ON_EPSILON
from .box_pairs import overlapping_pairs
from .regions import LINE_MARGIN, RegionGrid

#: metres: a face wider than this is cut at the world lines k * CSG_CELL before the CSG
#: (_cut_at_cell_lines); the default region cell, 2,048 Quake units
CSG_CELL = 64.0


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
    only=None,
) -> FaceList:
    """Faces of brushes[subtract_from:] that lie on the surface of the union of all `brushes`.

    Brushes before `subtract_from` only cut (e.g. structural brushes cutting detail faces); their
    own faces are not emitted.  Face brush numbers are indices into `brushes`.

    Each face is cut by the brushes that touch it, one after another in brush order
    (_remove_inside_batch states the rule), and a piece is cut only by brushes that reach it: a
    piece outside a brush's bounds, or wholly in front of one of its planes, stays whole.  So a
    world-spanning floor is cut only where something stands on it, and each cut is paid once,
    not again for every piece the floor has been cut into (_cut_faces).  Brushes that may touch
    come from a grid (box_pairs), not from testing every pair.  `only`: the brushes (ascending
    indices, from subtract_from on) whose faces to emit, instead of all of them; each face's
    pieces are the same either way (the live leak check keeps the others' from before).
    """
    out = out if out is not None else FaceList()
    if not brushes:
        return out
    table = _Cutters(brushes)
    near_of = _near_brushes(table.lo, table.hi)
    counts = np.array([len(b.dists) for b in brushes])
    offsets = np.concatenate([[0], np.cumsum(counts)])
    all_n = np.concatenate([b.normals for b in brushes])
    all_d = np.concatenate([b.dists for b in brushes])
    faces: list[np.ndarray] = []
    face_pid: list[int] = []
    face_brush: list[int] = []
    cutters: list[np.ndarray] = []  # per face: the brushes that may cut it, in brush order
    no_cutter = np.zeros(0, dtype=np.int64)
    ids = list(range(subtract_from, len(brushes))) if only is None else [int(k) for k in only]
    if kernels.resolve(csg_touch_c.BINDING) == "c":  # all brushes' tables by the C kernel, the same booleans
        tables = csg_touch_c.touching(brushes, ids, near_of, offsets, counts, all_n, all_d,
                                      lambda: check_cancel(cancel))
    else:
        tables = None
    for n_done, i in enumerate(ids):
        _check_cancel(cancel, i)
        brush = brushes[i]
        near = near_of[i]
        if tables is not None:
            touching = tables[n_done]
        else:
            touching = _touching_brushes(brush, near, counts, offsets, all_n, all_d) if len(near) else None
        faces.extend(brush.faces)
        face_pid.extend(plane_ids[i].tolist())
        face_brush.extend([i] * len(brush.faces))
        cutters.extend([near[row] for row in touching] if touching is not None else [no_cutter] * len(brush.faces))
    faces, source = _cut_at_cell_lines(faces)
    face_pid = [face_pid[k] for k in source]
    face_brush = [face_brush[k] for k in source]
    cutters = [cutters[k] for k in source]
    face_normal = planes.normals[np.array(face_pid, dtype=np.int64)] if faces else np.zeros((0, 3))
    pieces = _cut_faces(faces, np.array(face_brush, dtype=np.int64), face_normal, cutters, table, cancel)
    for f, kept in enumerate(pieces):
        for piece in kept:
            out.add(piece, face_pid[f], face_brush[f], flags)
    return out


def _cut_at_cell_lines(faces: list[np.ndarray]) -> tuple[list[np.ndarray], list[int]]:
    """Faces wider than CSG_CELL (along any axis) cut at the world lines x, y, z = k * CSG_CELL
    they cross, before any brush cuts them (a smaller face's strips are short anyway): (the pieces, each piece's face), pieces in face order, a face's pieces in the order
    the lines cut them.  Why: a brush that cuts a face leaves the parts outside it as pieces
    reaching the face's edges, and every later brush cuts those again, so a floor spanning the
    world, stood on by n brushes, broke into more and more long strips (faces after the CSG grew
    as n^1.08 in bench/scale.py's slab world, its hull spaces' as n^1.15).  Cut at the lines
    first, each piece's strips end at the lines: its cuts stay local.  The lines are the default
    region grid's (core/compile/trees/regions.py), where the trees cut these faces anyway."""
    if not faces:
        return faces, []
    lo, hi = polygon_bounds(faces)
    # wider than a cell, and maybe crossed by a line (the exact test, all_lines_inside, decides)
    maybe = np.flatnonzero((np.max(hi - lo, axis=1) > CSG_CELL)
                           & np.any(np.floor((hi - LINE_MARGIN) / CSG_CELL + 1e-9)
                                    > np.floor((lo + LINE_MARGIN) / CSG_CELL - 1e-9), axis=1))
    if not len(maybe):
        return faces, list(range(len(faces)))
    pieces = _cut_by_lines([faces[k] for k in maybe.tolist()], lo[maybe], hi[maybe])
    out: list[np.ndarray] = []
    source: list[int] = []
    at = 0
    for k, parts in zip(maybe.tolist(), pieces):
        out.extend(faces[at:k])
        source.extend(range(at, k))
        at = k + 1
        out.extend(parts)
        source.extend([k] * len(parts))
    out.extend(faces[at:])
    source.extend(range(at, len(faces)))
    return out, source


def _cut_by_lines(faces: list[np.ndarray], lo: np.ndarray, hi: np.ndarray) -> list[list[np.ndarray]]:
    """Each face's pieces cut by the lines x, then y, then z = j * CSG_CELL that its box (lo, hi)
    crosses, each line cutting every piece so far into (back, front): split_polygon's pieces in its
    order, the faces' r-th lines all cut at once in round r (split_polygons, one call a round: a
    plain loop of split_polygon calls was a fifth of slope.map's compile)."""
    grid = RegionGrid(CSG_CELL)
    lines = [[x.tolist() for x in grid.all_lines_inside(lo[:, axis], hi[:, axis])] for axis in range(3)]
    plans = [[(axis, j) for axis in range(3) for j in range(lines[axis][0][k], lines[axis][0][k] + lines[axis][1][k])]
             for k in range(len(faces))]  # per face, its lines (axis, j) in cutting order
    pieces = [[f] for f in faces]
    for r in range(max((len(p) for p in plans), default=0)):
        cut = [k for k in range(len(faces)) if r < len(plans[k])]
        rows = [(k, piece) for k in cut for piece in pieces[k]]
        width = max(len(piece) for _, piece in rows)
        verts = np.zeros((len(rows), width, 3))
        counts = np.array([len(piece) for _, piece in rows], dtype=np.int64)
        normals = np.zeros((len(rows), 3))
        dists = np.zeros(len(rows))
        for i, (k, piece) in enumerate(rows):
            axis, j = plans[k][r]
            verts[i, : len(piece)] = piece
            normals[i, axis] = 1.0
            dists[i] = j * CSG_CELL
        # split_polygon's distances, matmul(verts, n) - d: x nx + y ny + z nz in order, then - d
        dist = verts[..., 0] * normals[:, 0, None] + verts[..., 1] * normals[:, 1, None] \
            + verts[..., 2] * normals[:, 2, None] - dists[:, None]
        front, nf, back, nb = split_polygons(verts, counts, dist, normals, dists)
        for k in cut:
            pieces[k] = []
        for i, (k, _) in enumerate(rows):
            for poly, n in ((back, nb), (front, nf)):
                if n[i] >= 3:
                    pieces[k].append(poly[i, : n[i]].copy())
    return pieces


def _near_brushes(lo: np.ndarray, hi: np.ndarray) -> list[np.ndarray]:
    """For each box, the other boxes overlapping it (touching counts), ascending."""
    i, j = overlapping_pairs(lo, hi)
    a, b = np.concatenate([i, j]), np.concatenate([j, i])
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    return np.split(b, np.searchsorted(a, np.arange(1, len(lo))))


def _check_cancel(cancel, i: int) -> None:
    if i % 64 == 0:
        check_cancel(cancel)


def _cut_faces(faces, face_brush, face_normal, cutters, table: "_Cutters", cancel) -> list[list[np.ndarray]]:
    """For each face, its pieces left after removing the inside of each of its cutters in turn.

    Every piece carries its own list of cutters still to come, only those whose bounds reach it
    (a cutter that does not is one the piece would pass whole).  Each round cuts every live piece
    by the first cutter on its list, all at once (_remove_inside_batch); a piece that comes out
    changed gets the rest of its parent's list narrowed to its own bounds.  A face's pieces come
    out in the order of a face-by-face loop (each piece's kept parts, piece after piece): the
    rounds record which piece each part came from (_SplitTree) and the order is read off at the
    end."""
    result: list[list[np.ndarray]] = [[] for _ in faces]
    if not faces:
        return result
    n_cut = np.array([len(c) for c in cutters], dtype=np.int64)
    face_lo, face_hi = polygon_bounds(faces)
    owner = np.repeat(np.arange(len(faces)), n_cut)
    seq = np.concatenate(cutters).astype(np.int64) if len(owner) else np.zeros(0, np.int64)
    reach = table.reaches(seq, face_lo[owner], face_hi[owner])
    seq, owner = seq[reach], owner[reach]
    n_cut = np.bincount(owner, minlength=len(faces))
    for f in np.flatnonzero(n_cut == 0).tolist():
        result[f].append(faces[f])
    todo = np.flatnonzero(n_cut > 0)
    if not len(todo):
        return result
    if kernels.resolve(csg_cut_c.BINDING) == "c":  # face by face in C: the same pieces in the same order
        cut_first = np.concatenate([[0], np.cumsum(n_cut)])
        kept = csg_cut_c.cut_faces(faces, todo, face_brush, face_normal, cut_first, seq, table,
                                   lambda: check_cancel(cancel))
        for f, pieces in zip(todo.tolist(), kept):
            result[f] = pieces
        return result
    counts = n_cut[todo]
    sizes = np.array([len(faces[f]) for f in todo.tolist()], dtype=np.int64)
    verts = np.zeros((len(todo), int(sizes.max()), 3))
    rows = np.repeat(np.arange(len(todo)), sizes)
    verts[rows, np.arange(len(rows)) - np.repeat(np.cumsum(sizes) - sizes, sizes)] = np.concatenate(
        [faces[f] for f in todo.tolist()])
    tree = _SplitTree(len(todo))
    items = _Pieces(verts, sizes, todo, np.ones(len(todo), bool), np.arange(len(todo)))
    pend, pfirst, plen = seq, np.cumsum(counts) - counts, counts
    done_node, done_verts, done_counts, done_whole = [], [], [], []
    while len(items):
        check_cancel(cancel)
        kept, src, rank, changed = _remove_inside_batch(items, pend[pfirst], table, face_normal, face_brush)
        kept.node = np.where(changed, tree.add(items.node[src], rank, changed), items.node[src])
        pend, pfirst, plen = _rest_of_lists(kept, src, changed, pend, pfirst, plen, table)
        fin = plen == 0
        rows = np.flatnonzero(fin)
        done_node.append(kept.node[rows])
        done_verts.extend(kept.verts[r, : kept.counts[r]].copy() for r in rows.tolist())
        done_whole.append(kept.whole[rows])
        rows = np.flatnonzero(~fin)
        items, pfirst, plen = kept.take(rows), pfirst[rows], plen[rows]
    node = np.concatenate(done_node)
    whole = np.concatenate(done_whole)
    root, position = tree.leaf_order(node)
    for k in np.lexsort((position, root)).tolist():
        f = int(todo[root[k]])
        result[f].append(faces[f] if whole[k] else done_verts[k])
    return result


def _rest_of_lists(kept: "_Pieces", src, changed, pend, pfirst, plen, table: "_Cutters"):
    """The cutter lists of the kept pieces: the rest of the parent's list (after the cutter just
    applied), narrowed to the piece's bounds where the piece changed.  A new flat list (pend) and
    each piece's (first, length) in it."""
    first, length = pfirst[src] + 1, plen[src] - 1
    total = int(length.sum())
    if not total:
        return np.zeros(0, np.int64), np.zeros(len(src), np.int64), np.zeros(len(src), np.int64)
    owner = np.repeat(np.arange(len(src)), length)
    idx = np.repeat(first - (np.cumsum(length) - length), length) + np.arange(total)
    rest = pend[idx]
    keep = np.ones(total, bool)
    moved = changed[owner]
    if moved.any():
        valid = np.arange(kept.verts.shape[1]) < kept.counts[:, None]
        lo = np.where(valid[:, :, None], kept.verts, np.inf).min(axis=1)
        hi = np.where(valid[:, :, None], kept.verts, -np.inf).max(axis=1)
        rows = np.flatnonzero(moved)
        keep[rows] = table.reaches(rest[rows], lo[owner[rows]], hi[owner[rows]])
    rest, owner = rest[keep], owner[keep]
    new_len = np.bincount(owner, minlength=len(src))
    return rest, np.cumsum(new_len) - new_len, new_len


class _SplitTree:
    """Which piece each piece came from: node r < roots is face row r's polygon; every changed
    piece is a new node under the piece it was cut from, ranked among its siblings.  The order
    of a face's final pieces is the tree's left-to-right order of its leaves."""

    def __init__(self, roots: int):
        self.roots = roots
        self.parent: list[np.ndarray] = [np.full(roots, -1, np.int64)]
        self.rank: list[np.ndarray] = [np.zeros(roots, np.int64)]
        self.size = roots

    def add(self, parent: np.ndarray, rank: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """New nodes for the rows where mask (children of `parent`, siblings contiguous and in
        rank order); a node number per row (meaningful where mask)."""
        rows = np.flatnonzero(mask)
        ids = np.zeros(len(mask), np.int64)
        ids[rows] = self.size + np.arange(len(rows))
        if not len(rows):
            return ids
        self.parent.append(parent[rows])
        self.rank.append(rank[rows])
        self.size += len(rows)
        return ids

    def leaf_order(self, leaves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each leaf node: its root and its position among its root's leaves."""
        parent = np.concatenate(self.parent)
        count = np.zeros(self.size, np.int64)
        np.add.at(count, leaves, 1)
        batches = np.cumsum([0] + [len(p) for p in self.parent])
        for a, z in reversed(list(zip(batches[:-1].tolist(), batches[1:].tolist()))[1:]):
            np.add.at(count, parent[a:z], count[a:z])  # children come after their parents
        start = np.zeros(self.size, np.int64)
        root = np.arange(self.size)
        for a, z in list(zip(batches[:-1].tolist(), batches[1:].tolist()))[1:]:
            par, c = parent[a:z], count[a:z]  # siblings contiguous, in rank order
            before = np.cumsum(c) - c
            run = np.flatnonzero(np.r_[True, par[1:] != par[:-1]])
            before -= np.repeat(before[run], np.diff(np.r_[run, len(par)]))
            start[a:z] = start[par] + before
            root[a:z] = root[par]
        return root[leaves], start[leaves]


class _Pieces:
    """Polygons padded to a common vertex count: verts (M, V, 3), counts (M,), and per piece the
    face it comes from, whether it is still that face's own polygon (never split) and its node
    in the split tree."""

    def __init__(self, verts, counts, face, whole, node=None):
        self.verts, self.counts, self.face, self.whole = verts, counts, face, whole
        self.node = node if node is not None else np.zeros(len(counts), np.int64)

    def __len__(self) -> int:
        return len(self.counts)

    def take(self, rows) -> "_Pieces":
        return _Pieces(self.verts[rows], self.counts[rows], self.face[rows], self.whole[rows], self.node[rows])


def _remove_inside_batch(items: _Pieces, cutter: np.ndarray, table: "_Cutters", face_normal: np.ndarray,
                         face_brush: np.ndarray):
    """Every piece with its part inside its own cutter brush removed, all pieces at once: the
    pieces kept, each piece's kept parts in order (fronts as they are split off, then the rest),
    with the row of the piece each came from, its rank among that piece's parts and whether it
    changed (False: the piece itself, kept whole).

    The rule, per piece: a piece wholly in front of one of the brush's planes lies outside it
    and is kept whole.  A piece lying on one of the brush's planes (every vertex within
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
    # kept pieces as (row, rank, verts, counts, whole, changed), put in (row, rank) order at the end
    out_row, out_rank, out_verts, out_counts, out_whole, out_changed = [], [], [], [], [], []

    def emit(rows, rank, verts, counts, whole, changed):
        out_row.append(rows)
        out_rank.append(rank)
        out_verts.append(verts)
        out_counts.append(counts)
        out_whole.append(whole)
        out_changed.append(np.full(len(rows), changed))

    # outside (wholly in front of a plane), or flush with a later brush: kept, whole
    whole = np.any(on & flush_keeps, axis=1) | np.any((lo >= -ON_EPSILON) & (hi > ON_EPSILON), axis=1)
    rows = np.flatnonzero(whole)
    emit(rows, np.zeros(len(rows), dtype=np.int64), items.verts[rows], items.counts[rows], items.whole[rows], False)
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
        emit(live[rows], rank[rows], rest_v[rows], rest_n[rows], rest_whole[rows], True)
        rows = np.flatnonzero(has & ~keep)  # the others end inside the brush: dropped
        if not len(rows):
            break
        ks = k[rows]
        c = cutter[live[rows]]
        n, d = normals[live[rows], ks], table.dists[c, ks]
        front, nf, back, nb = split_polygons(rest_v[rows], rest_n[rows], _split_distances(rest_v[rows], n, d), n, d)
        got = np.flatnonzero(nf)
        emit(live[rows[got]], rank[rows[got]], front[got], nf[got], np.zeros(len(got), bool), True)
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
    kept = _Pieces(verts[order], np.concatenate(out_counts)[order], items.face[row], np.concatenate(out_whole)[order])
    return kept, perm[row], np.concatenate(out_rank)[order], np.concatenate(out_changed)[order]


class _Cutters:
    """Every brush's planes padded to a common count: normals (B, K, 3), dists (B, K), count (B,),
    and its bounds grown by ON_EPSILON: lo, hi (B, 3)."""

    def __init__(self, brushes: list[Brush]):
        self.brushes = brushes
        lo, hi = brush_bounds(brushes)
        self.lo, self.hi = lo - ON_EPSILON, hi + ON_EPSILON
        self.count = np.array([len(b.dists) for b in brushes], dtype=np.int64)
        k = int(self.count.max())
        rows = np.repeat(np.arange(len(brushes)), self.count)
        cols = np.arange(len(rows)) - np.repeat(np.cumsum(self.count) - self.count, self.count)
        self.normals = np.zeros((len(brushes), k, 3))
        self.dists = np.zeros((len(brushes), k))
        self.normals[rows, cols] = np.concatenate([b.normals for b in brushes])
        self.dists[rows, cols] = np.concatenate([b.dists for b in brushes])


    def reaches(self, cutter: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """(M,) bool: brush cutter[m]'s grown bounds overlap the box [lo[m], hi[m]]."""
        return np.all(self.lo[cutter] <= hi, axis=1) & np.all(self.hi[cutter] >= lo, axis=1)


def brush_bounds(brushes) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) (B, 3): each brush's bounds (Brush.bounds), for many at once."""
    if not brushes:
        return np.zeros((0, 3)), np.zeros((0, 3))
    face_lo, face_hi = polygon_bounds([f for b in brushes for f in b.faces])
    n_faces = np.array([len(b.faces) for b in brushes], dtype=np.int64)
    first = np.cumsum(n_faces) - n_faces  # every brush has faces
    return np.minimum.reduceat(face_lo, first, axis=0), np.maximum.reduceat(face_hi, first, axis=0)


def polygon_bounds(polygons: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) (N, 3): each polygon's (or point set's) least and greatest x, y, z, for many at
    once (one reduceat over their rows instead of two reductions each: 100,000 faces cost 0.6 s
    that way).  Each must have a row."""
    counts = np.array([len(p) for p in polygons], dtype=np.int64)
    if not len(counts):
        return np.zeros((0, 3)), np.zeros((0, 3))
    flat = np.concatenate(polygons)
    starts = np.cumsum(counts) - counts
    return np.minimum.reduceat(flat, starts, axis=0), np.maximum.reduceat(flat, starts, axis=0)


def _cutter_extremes(verts, counts, cutter, table: _Cutters, k_max) -> tuple[np.ndarray, np.ndarray]:
    """Per piece and plane of its cutter, the min and max vertex distance: (M, K) each, -inf on
    padding planes.  Batched products of the pieces' vertices with their own cutters' planes,
    the pieces grouped by how many vertices and cutter planes they have (a power-of-two class
    each) so that a batch pads little: padded to the widest piece and the largest cutter of all,
    e3m4's pieces computed 11x the distances they need.  detmath sums each product in the same
    order whatever the batch, so every value is that of the piece's own product; padding rows
    repeat a piece's last vertex and change no extreme."""
    m, width = verts.shape[:2]
    fill = np.minimum(np.arange(width), counts[:, None] - 1)
    verts = np.take_along_axis(verts, fill[:, :, None], axis=1)
    lo = np.full((m, k_max), -np.inf)
    hi = np.full((m, k_max), -np.inf)
    k_count = table.count[cutter]
    if m * width * k_max <= _EXTREME_GROUPED:
        groups = [(np.arange(m), width, k_max)]
    else:
        v_class = _pow2_class(counts, width)
        k_class = _pow2_class(k_count, k_max)
        key = v_class * 64 + k_class
        order = np.argsort(key, kind="stable")
        starts = np.flatnonzero(np.r_[True, key[order][1:] != key[order][:-1]])
        ends = np.r_[starts[1:], m]
        groups = [(order[a:b], min(width, 1 << int(v_class[order[a]])), min(k_max, 1 << int(k_class[order[a]])))
                  for a, b in zip(starts, ends)]
    for rows, w, k in groups:
        step = max(1, _EXTREME_CELLS // max(1, w * k))
        for a in range(0, len(rows), step):
            r = rows[a : a + step]
            c = cutter[r]
            dist = matmul(verts[r, :w], table.normals[c, :k].transpose(0, 2, 1)) - table.dists[c, None, :k]
            lo[r, :k] = dist.min(axis=1)
            hi[r, :k] = dist.max(axis=1)
    padding = np.arange(k_max) >= k_count[:, None]
    lo[padding] = -np.inf
    hi[padding] = -np.inf
    return lo, hi


def _pow2_class(n: np.ndarray, cap: int) -> np.ndarray:
    """The exponent of the smallest power of two at least n (each at least 1), capped at cap's:
    the bit length of n - 1, read exactly off frexp's exponent (no logarithm)."""
    top = max(1, int(cap) - 1).bit_length()
    return np.minimum(np.frexp((np.maximum(n, 1) - 1).astype(np.float64))[1].astype(np.int64), top)


#: below this many distances (pieces x widest piece x largest cutter) one product is cheaper
#: than grouping the pieces
_EXTREME_GROUPED = 1 << 14

#: distances _cutter_extremes works out at once (bounds its memory to a few tens of MB)
_EXTREME_CELLS = 1 << 21


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
