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

from ...model.brushes import Brush, brushes_from_planes
from ...detmath import matmul, norm
from ...geometry import cross3, snap_normals
from ...model.scene import Hull
from ...tolerances import (
    DIRECTION_MERGE_DISTANCE,
    EDGE_KEY_SCALE,
    MERGE_SIZE_FLOOR,
    ON_EPSILON,
    PARALLEL_EDGE_SINE,
)


def box_support(normals: np.ndarray, mins, maxs) -> np.ndarray:
    """max over the box {mins..maxs} of n . h, for each normal: sum_i max(n_i mins_i, n_i maxs_i)."""
    normals = np.asarray(normals, dtype=np.float64).reshape(-1, 3)
    return np.maximum(normals * np.asarray(mins, float), normals * np.asarray(maxs, float)).sum(axis=1)


def expand_brush(brush: Brush, hull: Hull) -> Brush:
    """The configuration-space brush of `brush` for `hull` (same contents, name 'brush@hull')."""
    return expand_brushes([brush], [hull])[0][0]


#: Brushes whose candidate directions are worked out together (bounds the padded arrays).
_CHUNK = 128


def expand_brushes(brushes: list[Brush], hulls: list[Hull]) -> list[list[Brush]]:
    """[[expand_brush(b, hull) for b in brushes] for hull in hulls], the same brushes bit for bit.

    What does not depend on the hull (edges, candidate directions, the brush's own support along
    each, which candidates are near-repeats) is worked out once per brush, and for many brushes
    at once (_Candidates): the loops of the one-brush-at-a-time reference (expansion_planes in
    tests/core/expand_reference.py, which the tests compare bit for bit) become operations on
    flat arrays, and every matrix product is still one brush's own product (detmath.matmul), so
    every value is the one the reference computes.  brushes_from_planes then builds a hull's
    brushes together."""
    chunks = [brushes[start : start + _CHUNK] for start in range(0, len(brushes), _CHUNK)]
    cands = [_Candidates(chunk) for chunk in chunks]
    out: list[list[Brush]] = []
    for hull in hulls:  # hull by hull, brush by brush: errors come in expand_brush's order
        specs = [(n, d, f"{b.name}@{hull.name}", b.contents, b.entity)
                 for chunk, cand in zip(chunks, cands) for b, (n, d) in zip(chunk, cand.planes(hull.mins, hull.maxs))]
        out.append(brushes_from_planes(specs))
    return out


class _Candidates:
    """The reference's (expansion_planes') hull-independent half for a list of brushes, as flat arrays: every
    brush's snapped candidate directions (face normals, axes, edge bevels, in expansion_planes'
    order) one brush after another, the brush's support along each, and per brush its size
    (the length of its bounding box's diagonal).  Pairs of a brush's candidates close enough to
    be merged for some hull are listed once; planes() finishes the work for one hull."""

    def __init__(self, brushes: list[Brush]):
        self.n = len(brushes)
        verts = [np.concatenate(b.faces) for b in brushes]
        self.size = np.array([norm(v.max(axis=0) - v.min(axis=0)) for v in verts])
        padded = _pad_rows(verts)  # (B, V, 3), a brush's last vertex repeated
        edge_p, edge_d, edge_owner = _brush_edges_many(brushes)
        eye = np.eye(3)
        # candidate pieces as (directions, owner brush, section, index in section), sorted below
        parts = [(np.concatenate([b.normals for b in brushes]),
                  np.repeat(np.arange(self.n), [len(b.dists) for b in brushes]), 0)]
        parts.append((np.tile(np.vstack([eye, -eye]), (self.n, 1)), np.repeat(np.arange(self.n), 6), 1))
        for a in range(3):
            n = cross3(edge_d, np.broadcast_to(eye[a], edge_d.shape))
            length = norm(n, axis=1)
            ok = length > PARALLEL_EDGE_SINE
            n, pa, owner = n[ok] / length[ok, None], edge_p[ok], edge_owner[ok]
            prod = _column_products(padded, verts, n, owner)  # (B, V, E): verts @ n.T per brush
            local = _local_index(owner, self.n)
            offset = np.zeros((self.n, prod.shape[2]))
            offset[owner, local] = np.einsum("ij,ij->i", n, pa)
            side = prod - offset[:, None, :]
            behind = np.all(side <= ON_EPSILON, axis=1)[owner, local]
            ahead = np.all(side >= -ON_EPSILON, axis=1)[owner, local]
            parts.append((n[behind], owner[behind], 2 + 2 * a))
            parts.append((-n[ahead & ~behind], owner[ahead & ~behind], 3 + 2 * a))
        dirs = np.concatenate([p[0] for p in parts])
        owner = np.concatenate([p[1] for p in parts])
        section = np.concatenate([np.full(len(p[1]), p[2]) for p in parts])
        order = np.lexsort((np.arange(len(owner)), section, owner))  # brush, section, order within
        self.cand = snap_normals(dirs[order])
        self.owner = owner[order]
        self.count = np.bincount(self.owner, minlength=self.n)
        local = _local_index(self.owner, self.n)
        support = _column_products(padded, verts, self.cand, self.owner).max(axis=1)  # (B, C)
        self.support = support[self.owner, local]  # the brush's own support: its face planes exactly
        self.pairs = _close_pairs(self.cand, self.owner, self.count, local,
                                  DIRECTION_MERGE_DISTANCE / np.maximum(self.size, MERGE_SIZE_FLOOR))  # rows, cols, diff

    def planes(self, mins, maxs) -> list[tuple[np.ndarray, np.ndarray]]:
        """expansion_planes(brush, mins, maxs) for each brush."""
        neg_mins, neg_maxs = -np.asarray(maxs, float), -np.asarray(mins, float)
        hull_size = norm(np.subtract(maxs, mins))
        tol = np.array([DIRECTION_MERGE_DISTANCE / max(float(s + hull_size), MERGE_SIZE_FLOOR) for s in self.size])
        keep = np.ones(len(self.cand), bool)
        row, col, diff = self.pairs  # flat candidate numbers, col < row, same brush
        close = diff < tol[self.owner[row]]
        row, col = row[close], col[close]
        for b in np.unique(self.owner[row]).tolist():  # _merge_directions, where it drops anything
            mine = self.owner[row] == b
            drop: set[int] = set()
            for r, c in sorted(zip(row[mine].tolist(), col[mine].tolist())):
                if c not in drop:
                    drop.add(r)
            keep[list(drop)] = False
        n = self.cand[keep]
        d = self.support[keep] + box_support(n, neg_mins, neg_maxs)
        split = np.cumsum(np.bincount(self.owner[keep], minlength=self.n))[:-1]
        return list(zip(np.split(n, split), np.split(d, split)))


def _local_index(owner: np.ndarray, n: int) -> np.ndarray:
    """Position of each row within its owner's rows (rows sorted by owner)."""
    first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n), out=first[1:])
    return np.arange(len(owner)) - first[owner]


def _column_products(padded: np.ndarray, verts: list[np.ndarray], cols: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """(B, V, C): verts[b] @ cols[owner == b].T for every brush b (cols sorted by owner), each
    the brush's own product (detmath sums in a fixed order, so padding and stacking change no
    value; padded rows repeat a brush's last vertex)."""
    count = np.bincount(owner, minlength=len(padded))
    local = _local_index(owner, len(padded))
    table = np.zeros((len(padded), max(int(count.max()) if len(count) else 0, 2), 3))
    table[owner, local] = cols
    return matmul(padded, table.transpose(0, 2, 1))


def _close_pairs(cand: np.ndarray, owner: np.ndarray, count: np.ndarray, local: np.ndarray, loose: np.ndarray):
    """(row, col, max component difference) for every two candidates of one brush (col before
    row) closer than loose[brush], the largest merge tolerance any hull can give that brush."""
    rows = np.repeat(np.arange(len(cand)), local)  # candidate r is paired with the `local[r]` before it
    cols = np.arange(len(rows)) - np.repeat(np.cumsum(local) - local, local) + (np.cumsum(count) - count)[owner[rows]]
    diff = np.abs(cand[cols] - cand[rows]).max(axis=1)
    near = diff < loose[owner[rows]]
    return rows[near], cols[near], diff[near]


def _pad_rows(arrays: list[np.ndarray]) -> np.ndarray:
    """(len, max rows, 3): each (k, 3) array with its last row repeated (extremes unchanged)."""
    width = max(len(a) for a in arrays)
    out = np.zeros((len(arrays), width, 3))
    for i, a in enumerate(arrays):
        out[i, : len(a)] = a
        out[i, len(a) :] = a[-1]
    return out


def _brush_edges_many(brushes: list[Brush]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """brush_edges for each brush, all at once (one unique over (brush, edge key) rows): flat
    (starts, directions, owner brush), brush after brush, each in brush_edges' order."""
    faces = [f for b in brushes for f in b.faces]
    p = np.concatenate(faces)
    sizes = np.array([len(f) for f in faces])
    first = np.repeat(np.cumsum(sizes) - sizes, sizes)
    nxt = np.arange(len(p)) + 1
    last = np.cumsum(sizes) - 1
    nxt[last] = first[last]
    d = p[nxt] - p
    owner = np.repeat(np.arange(len(brushes)), [sum(len(f) for f in b.faces) for b in brushes])
    length = norm(d, axis=1)
    keep = length > 0
    p, d, owner = p[keep], d[keep] / length[keep, None], owner[keep]
    axis = np.argmax(np.abs(d), axis=1)
    flip = d[np.arange(len(d)), axis] < 0
    d[flip] *= -1.0
    key = np.round(np.concatenate([d, p - np.einsum("ij,ij->i", p, d)[:, None] * d], axis=1) * EDGE_KEY_SCALE)
    _, uniq = np.unique(np.concatenate([owner[:, None].astype(np.float64), key], axis=1), axis=0, return_index=True)
    uniq = np.sort(uniq)
    return p[uniq], d[uniq], owner[uniq]
