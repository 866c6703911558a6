"""Every pair of overlapping boxes (and every point in a box), found through a uniform grid
instead of testing all pairs.

Testing every box against every other costs n^2: 2.5 billion tests for a 50,000-brush world.  Here
each box goes into the cells of a grid (cell side twice the median box's) that it touches, and
only boxes sharing a cell are compared; a pair is counted in one cell only (the one holding the
lower corner of the two boxes' overlap).  Boxes covering more than _BIG cells (a floor slab, a
sky box) are compared with every box directly, so they cost n each instead of flooding the grid.
The answer is exactly the set of pairs a test of all pairs gives (closed boxes: touching counts).
"""

from __future__ import annotations

import numpy as np

#: a box touching more grid cells than this is compared with every box instead
_BIG = 64


def overlapping_pairs(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) with i < j for every two of the boxes [lo, hi] ((n, 3) each) that overlap or touch,
    sorted by i, then j."""
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    n = len(lo)
    if n < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    origin = lo.min(axis=0)
    cell = np.maximum(2.0 * np.median(hi - lo, axis=0), 1e-6)
    c0 = np.floor((lo - origin) / cell).astype(np.int64)
    c1 = np.maximum(np.floor((hi - origin) / cell).astype(np.int64), c0)
    span = c1 - c0 + 1
    big = np.prod(span.astype(np.float64), axis=1) > _BIG
    i_small, j_small = _grid_pairs(np.flatnonzero(~big), c0, span)
    parts_i, parts_j = [i_small], [j_small]
    for b in np.flatnonzero(big).tolist():  # each big box against all
        others = np.flatnonzero(np.all(lo <= hi[b], axis=1) & np.all(hi >= lo[b], axis=1))
        others = others[(others != b) & (~big[others] | (others > b))]  # big pairs once
        parts_i.append(np.minimum(others, b))
        parts_j.append(np.maximum(others, b))
    i, j = np.concatenate(parts_i), np.concatenate(parts_j)
    keep = np.all(lo[i] <= hi[j], axis=1) & np.all(lo[j] <= hi[i], axis=1)
    i, j = i[keep], j[keep]
    order = np.lexsort((j, i))
    return i[order], j[order]


def points_in_boxes(points: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(point, box) for every point inside or on a box [lo, hi], sorted by box, then point: boxes
    in the grid as above (big ones against every point), each point looked up in its one cell."""
    points, lo, hi = (np.asarray(a, dtype=np.float64).reshape(-1, 3) for a in (points, lo, hi))
    if not len(points) or not len(lo):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    origin = lo.min(axis=0)
    cell = np.maximum(2.0 * np.median(hi - lo, axis=0), 1e-6)
    c0 = np.floor((lo - origin) / cell).astype(np.int64)
    c1 = np.maximum(np.floor((hi - origin) / cell).astype(np.int64), c0)
    span = c1 - c0 + 1
    big = np.prod(span.astype(np.float64), axis=1) > _BIG
    parts_p, parts_b = [], []
    small = np.flatnonzero(~big)
    if len(small):
        cells = np.prod(span[small], axis=1)
        box = np.repeat(small, cells)
        local = np.arange(len(box)) - np.repeat(np.cumsum(cells) - cells, cells)
        sp = span[box]
        coord = c0[box] + np.stack([local // (sp[:, 1] * sp[:, 2]), local // sp[:, 2] % sp[:, 1], local % sp[:, 2]],
                                   axis=1)
        dims = c1[small].max(axis=0) + 1
        key = (coord[:, 0] * dims[1] + coord[:, 1]) * dims[2] + coord[:, 2]
        order = np.argsort(key, kind="stable")
        key, box = key[order], box[order]
        pc = np.floor((points - origin) / cell)
        inside = np.all((pc >= 0) & (pc < dims), axis=1)
        pts = np.flatnonzero(inside)
        pc = pc[pts].astype(np.int64)
        pkey = (pc[:, 0] * dims[1] + pc[:, 1]) * dims[2] + pc[:, 2]
        a, z = np.searchsorted(key, pkey, "left"), np.searchsorted(key, pkey, "right")
        n = z - a
        parts_p.append(np.repeat(pts, n))
        parts_b.append(box[np.repeat(a - np.cumsum(n) + n, n) + np.arange(int(n.sum()))])
    if big.any():  # each big box against the points within its x range (points sorted by x once)
        by_x = np.argsort(points[:, 0], kind="stable")
        xs = points[by_x, 0]
        for b in np.flatnonzero(big).tolist():
            near = by_x[np.searchsorted(xs, lo[b, 0], "left"):np.searchsorted(xs, hi[b, 0], "right")]
            hits = near[np.all((points[near] >= lo[b]) & (points[near] <= hi[b]), axis=1)]
            parts_p.append(hits)
            parts_b.append(np.full(len(hits), b, np.int64))
    p, b = np.concatenate(parts_p), np.concatenate(parts_b)
    keep = np.all((points[p] >= lo[b]) & (points[p] <= hi[b]), axis=1)
    p, b = p[keep], b[keep]
    order = np.lexsort((p, b))
    return p[order], b[order]


def _grid_pairs(boxes: np.ndarray, c0: np.ndarray, span: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (min, max) of `boxes` sharing a grid cell, each pair once: in the cell at the larger
    of their lower cell corners (the overlap's lowest cell, which both touch)."""
    if len(boxes) < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cells = np.prod(span[boxes], axis=1)
    box = np.repeat(boxes, cells)
    local = np.arange(len(box)) - np.repeat(np.cumsum(cells) - cells, cells)
    sp = span[box]
    cz, rest = local % sp[:, 2], local // sp[:, 2]
    cy, cx = rest % sp[:, 1], rest // sp[:, 1]
    coord = c0[box] + np.stack([cx, cy, cz], axis=1)
    dims = coord.max(axis=0) + 1
    key = (coord[:, 0] * dims[1] + coord[:, 1]) * dims[2] + coord[:, 2]
    order = np.argsort(key, kind="stable")
    key, box, coord = key[order], box[order], coord[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    size = np.diff(np.r_[first, len(key)])
    after = np.repeat(first + size, size) - np.arange(len(key)) - 1  # later entries in the same cell
    a = np.repeat(np.arange(len(key)), after)
    b = a + 1 + (np.arange(len(a)) - np.repeat(np.cumsum(after) - after, after))
    i, j = box[a], box[b]
    home = np.all(coord[a] == np.maximum(c0[i], c0[j]), axis=1)
    i, j = i[home], j[home]
    return np.minimum(i, j), np.maximum(i, j)
