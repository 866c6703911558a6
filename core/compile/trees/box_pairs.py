"""Every pair of overlapping boxes, found through a uniform grid instead of testing all pairs.

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
