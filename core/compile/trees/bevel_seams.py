"""Seam bevels: the planes a solid cell borrows from the solid cell across a split.

A tree splits solid space wherever a node's plane runs through it: a region line
(core/compile/trees/regions.py) cuts every brush it crosses, and any face's plane may run on
through a neighbouring brush.  Plane shifting grows each solid cell alone, by every plane above and
around it (core/runtime/shift.py).  Where such a split runs through a sharp edge or a vertex of the
solid (a roof's ridge on a region line, a pyramid's tip on a wall's plane), each half's corner at the
split sticks out past anything the unsplit solid reaches, and a sphere gliding over the ridge stops
early: up to r (sqrt 2 - 1) with 90-degree bevels, a 'ghost corner' the unsplit brush never had.

The cure is to bevel each half as its unsplit solid.  At every vertex where a cell's face meets
another of its faces at a sharp angle (outward normals more than 90 degrees apart: the cell is a
wedge there, so one of the two may be a split), a probe a little across that face finds the solid
cell on the other side, if any, and the cell takes as extra clip planes those of the other cell's
faces that pass through the vertex and have the whole cell behind them.  Each such plane touches
the cell with the cell behind it, like every bevel (core/compile/trees/bevel.py), so every point
answers as before and no shape can pass where it could not; the plane only cuts the ghost off.  A
cell across a flat face (a floor cut by a line) lends nothing: its faces there are the cell's own
planes.

The seams come first in a cell's bevel chain and count, in the phases after them, like the cell's
own ancestors: a seam that already splits a sharp edge into square ones leaves no edge bevel to
make, as in the unsplit solid.
"""

from __future__ import annotations

import numpy as np

from ...detmath import dot
from ...runtime.tree import Tree
from ...tolerances import BEVEL_ON_EPSILON, NORMAL_EPSILON, SEAM_PROBE_ACROSS, SEAM_PROBE_ALONG
from .cells import CellArrays


def seam_planes(cells: CellArrays, tree, normals: np.ndarray, dists: np.ndarray) -> list[list[int]]:
    """For each cell of `cells` (the solid cells of `tree`), the outward plane indices it borrows
    from the solid cells across its splits, sorted; planes it has already (faces or ancestors, in
    either orientation) are not borrowed."""
    C = len(cells.codes)
    out: list[list[int]] = [[] for _ in range(C)]
    tag = cells.tag
    if not C or not len(tag):
        return out
    fo = np.repeat(np.arange(C), np.diff(cells.first))
    real = tag >= 0
    fn = np.zeros((len(tag), 3))
    fd = np.zeros(len(tag))
    fn[real], fd[real] = normals[tag[real]], dists[tag[real]]
    # every (face, vertex) of the cells, with each vertex's key (per cell) to find the faces through it
    rows, cols = np.nonzero(np.arange(cells.verts.shape[1]) < cells.count[:, None])
    pts = cells.verts[rows, cols]
    keys = np.round(pts / (4 * BEVEL_ON_EPSILON)).astype(np.int64)
    # faces of one cell meeting at a vertex: pairs of incidences with the same (cell, key)
    order = np.lexsort((rows, keys[:, 2], keys[:, 1], keys[:, 0], fo[rows]))
    r, k = rows[order], keys[order]
    same = (fo[r][1:] == fo[r][:-1]) & np.all(k[1:] == k[:-1], axis=1)
    starts = np.flatnonzero(np.concatenate([[True], ~same]))
    sizes = np.diff(np.concatenate([starts, [len(r)]]))
    # (a, b) incidences of one vertex group, a != b: a's face and b's face meet there
    rep = np.repeat(np.arange(len(starts)), sizes * sizes)
    local = np.arange(len(rep)) - np.repeat(np.concatenate([[0], np.cumsum(sizes * sizes)[:-1]]), sizes * sizes)
    ia = order[starts[rep] + local // sizes[rep]]
    ib = order[starts[rep] + local % sizes[rep]]
    fa, fb = rows[ia], rows[ib]
    sharp = real[fa] & real[fb] & (fa != fb) & (dot(fn[fa], fn[fb]) < -NORMAL_EPSILON)
    probe_at = np.unique(ia[sharp])  # an incidence (face, vertex) where the face may be a split
    if not len(probe_at):
        return out
    # the probe: from the vertex a little into the face's polygon and far less across its plane, so
    # that it lands in the other cell even at a wedge as thin as atan(ACROSS / ALONG)
    f = rows[probe_at]
    v = pts[probe_at]
    n_face = cells.count[f]
    centre = cells.verts[f].sum(axis=1) / n_face[:, None]
    toward = centre - v
    length = np.sqrt(dot(toward, toward))
    step = np.minimum(SEAM_PROBE_ALONG, 0.5 * length) / np.maximum(length, 1e-300)
    probe = v + step[:, None] * toward + SEAM_PROBE_ACROSS * fn[f]
    shape = Tree(normals, dists, np.asarray(tree.node_plane), np.asarray(tree.node_children),
                 np.asarray(tree.leaf_solid))
    leaf, _ = shape.locate(probe)
    cell_of_leaf = np.full(len(np.asarray(tree.leaf_solid)), -1, np.int64)
    cell_of_leaf[-1 - cells.codes] = np.arange(C)
    across = cell_of_leaf[leaf]
    mine = fo[f]
    ok = (across >= 0) & (across != mine)
    if not ok.any():
        return out
    mine, across, v, f = mine[ok], across[ok], v[ok], f[ok]
    # the faces of the cell across that pass through the vertex, not on the probed face's plane
    lend_n = np.diff(cells.first)[across]
    pair = np.repeat(np.arange(len(mine)), lend_n)
    lf = cells.first[across][pair] + (np.arange(len(pair)) - np.repeat(np.cumsum(lend_n) - lend_n, lend_n))
    through = real[lf] & (tag[lf] >> 1 != tag[f][pair] >> 1)
    through &= np.abs(dot(v[pair], fn[lf]) - fd[lf]) <= BEVEL_ON_EPSILON
    cand_cell, cand_tag = mine[pair[through]], tag[lf[through]]
    if not len(cand_cell):
        return out
    width = len(normals) // 2 + 1
    cand = np.unique(cand_cell * (2 * width) + cand_tag)
    cand_cell, cand_tag = cand // (2 * width), cand % (2 * width)
    # not a plane the cell has: its faces and its ancestors, either orientation
    had = [fo[real] * width + (tag[real] >> 1)]
    chain_len = np.array([len(c) for c in cells.chains], np.int64)
    if chain_len.sum():
        flat = np.concatenate([np.asarray(c, np.int64) for c in cells.chains if len(c)])
        had.append(np.repeat(np.arange(C), chain_len) * width + (flat >> 1))
    new = ~np.isin(cand_cell * width + (cand_tag >> 1), np.concatenate(had))
    cand_cell, cand_tag = cand_cell[new], cand_tag[new]
    # the whole cell behind the plane
    per = np.bincount(fo[rows], minlength=C)  # the cell's face-vertex incidences
    inc_first = np.concatenate([[0], np.cumsum(per)])
    by_cell = np.argsort(fo[rows], kind="stable")
    n_inc = per[cand_cell]
    cpair = np.repeat(np.arange(len(cand_cell)), n_inc)
    at = by_cell[inc_first[cand_cell][cpair] + (np.arange(len(cpair)) - np.repeat(np.cumsum(n_inc) - n_inc, n_inc))]
    reach = dot(pts[at], normals[cand_tag[cpair]]) - dists[cand_tag[cpair]]
    worst = np.full(len(cand_cell), -np.inf)
    np.maximum.at(worst, cpair, reach)
    behind = worst <= BEVEL_ON_EPSILON
    for c, t in zip(cand_cell[behind].tolist(), cand_tag[behind].tolist()):
        out[c].append(t)
    return out
