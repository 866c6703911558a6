"""Bevels for plane shifting (Melax, 'Dynamic Plane Shifting BSP Traversal', sections 5 and 8).

When a shape's planes are shifted during a trace (core/shift.py), each solid cell of the point
tree grows by moving its planes outward.  Where two faces of a cell meet at a sharp angle the grown
cell sticks out far beyond the shape's true reach: the 'invisible walls' of section 5.  Beveling
caps those corners with extra planes, inserted as extra nodes *under* each solid leaf.

The planes a trace clips a solid cell with are its faces, its ancestors' planes that touch it
without being faces (through an edge or a vertex), and its bevels; all of them count below, in
this order per cell:

- seam bevels: the faces of the solid cell across a split that runs through a sharp corner of
  this one, so that a brush split by a region line or another face's plane is beveled as a whole
  (core/compile/trees/bevel_seams.py; they count in the phases below like touching ancestors);
- axial bevels (Quake's choice): the six axis-aligned planes through the cell's extreme vertices,
  unless the cell already has that plane;
- a flat top (section 8), only when axial bevels are off: normal +Z through the highest vertex, on
  cells not topped by a near-level face;
- edge bevels: around every edge of the cell, the planes through it are sorted by angle; where two
  *adjacent* ones differ by more than `angle` degrees, planes through the edge cut that gap into
  equal parts of at most the angle (one halfway plane at 90 degrees, the default; MDK2 shipped 95).
  This is section 8's rule, 'at most a 95-degree difference in adjacent planes': an axial plane
  or an ancestor through the edge that already splits it into square edges leaves nothing to do;
- vertex bevels: at a sharp spike, a plane through the vertex with the mean of its faces'
  normals, when the corner, grown by plane shifting (every plane through it), reaches more than
  1 / cos(`vertex_angle`) times the shift from the vertex (a cube corner reaches
  sqrt(3) = 1 / cos(54.7 degrees), so the default of 60 degrees leaves square corners alone).

A bevel equal to a plane the cell already has (a face, a touching ancestor, an earlier bevel) is
never made: it would clip the same shifted plane twice.

Every bevel plane touches the cell and has the whole cell behind it, so the solid leaf becomes a
chain of nodes whose off-cell children are *empty leaves of zero volume*.  The node stores the
bevel plane facing *into* the cell (front = the cell side), so a point on a bevel plane goes to
the front as everywhere in brushbake, and every point answers exactly as in the plain tree.

The cells themselves come from one walk down the tree, splitting a polytope (the world box) at
every node; a solid leaf's polytope is its cell.  Faces lying on the world box are not real
(the box only bounds unbounded cells), so no bevel is made from them.

The rules per cell are in core/compile/trees/bevel_cell.py; this module runs them for all solid cells at
once and builds the beveled tree.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from ...detmath import arctan2, matmul
from ...errors import CancelledError
from ...runtime.level import POINT_HULL_BIT
from ...runtime.tree import Tree
from ...tolerances import (BEVEL_COSINE_SLACK, BEVEL_ON_EPSILON, CELL_BOX_MARGIN, FLAT_TOP_LEVEL_Z, MIN_EDGE_LENGTH,
                          NORMAL_EPSILON, ON_EPSILON)
from .bevel_cell import (_AXES, BevelSettings, _CellPlanes, _cut_gaps, _edge_angles, _edge_frame, _vertex_bevels,
                         _vertex_candidates, corner_reaches_flat)
from .bevel_cell import cell_bevels, corner_reach  # noqa: F401 -- the per-cell rules, as bevel.py always offered them
from .bevel_seams import seam_planes
from .cells import CellArrays, cell_arrays

#: The bevel stage reports progress every this many solid cells.
PROGRESS_EVERY = 64


@dataclass
class BeveledTree:
    """The beveled tree as arrays: the plane table grown by the bevel planes (flip pairs kept),
    nodes (the plain tree's nodes first, unchanged, then the bevel chains) and leaves (the plain
    tree's leaves first, same numbering, then the zero-volume empty leaves).  Leaves keep only bit
    0 (the point hull): a level's point-tree leaves may carry box hulls' bits, the beveled tree is
    for plane shifting alone (docs/FORMAT.md, BVLS)."""

    plane_normals: np.ndarray
    plane_dists: np.ndarray
    node_plane: np.ndarray
    node_children: np.ndarray
    leaf_solid: np.ndarray
    stats: dict = field(default_factory=dict)

    def tree(self) -> Tree:
        return Tree(self.plane_normals, self.plane_dists, self.node_plane, self.node_children, self.leaf_solid)


# --------------------------------------------------------------------------------------------
# Cells


def solid_cells(tree, bounds, chains: bool = False):
    """Yield (leaf, faces) for every solid (bit 0) leaf: faces is a list of (outward plane tag,
    polygon) of the leaf's convex cell within `bounds` grown by CELL_BOX_MARGIN; tags < 0 are
    box faces.  Leaves whose cell is empty (zero volume) are skipped.  With chains=True, yield
    (leaf, faces, chain) where chain lists the ancestors' planes, root first, each oriented
    outward from the leaf (plane p on a back path, p ^ 1 on a front path): plane shifting clips
    with all of them, faces of the cell or not.  The cells are core/compile/trees/cells.py's."""
    cells = solid_cell_arrays(tree, bounds)
    for k, code in enumerate(cells.codes.tolist()):
        yield (-1 - code, cells.faces(k), cells.chains[k]) if chains else (-1 - code, cells.faces(k))


def solid_cell_arrays(tree, bounds) -> CellArrays:
    """The solid (bit 0) leaves' cells within `bounds` grown by CELL_BOX_MARGIN, as
    core/compile/trees/cells.py's CellArrays (depth-first order)."""
    lo = np.asarray(bounds[0], float) - CELL_BOX_MARGIN
    hi = np.asarray(bounds[1], float) + CELL_BOX_MARGIN
    solid = (np.asarray(tree.leaf_solid) & 1).astype(bool)
    return cell_arrays(tree, lo, hi, leaves=solid)


# --------------------------------------------------------------------------------------------
# All cells at once


def _all_edge_bevels(cells: list[_CellPlanes], buffers: dict, settings: BevelSettings, cancel=None,
                     progress=None, n_solid: int = 0) -> None:
    """The edge phase of every cell, in order (cell by cell, edge by edge, as _edge_bevels).

    Each edge's angles are found for all edges at once from the planes the cells have before the
    phase (buffers: _all_cell_planes' views).  An edge bevel chosen earlier in the same cell can
    pass through a later edge and add an angle: such an edge (any plane chosen since the phase
    began through all its vertices) has its angles found again alone, as _edge_bevels would.
    Layout: edges (E,) with cell ec, geometry eu, ew (E, 3), span es; (edge, vertex) rows (R,);
    (edge, vertex, plane) rows (T,); (edge, plane) rows (P,), by edge then plane."""
    limit = math.radians(settings.angle)
    cos_edge = math.cos(limit)
    ec, eu, ew, es, emask = [], [], [], [], []
    per_cell = []
    for c, cell in enumerate(cells):
        fn = cell.fn.tolist()
        mine = []
        for fa, fb, mask in cell.edges:
            frame = _edge_frame(fn, fa, fb)
            if frame is not None:
                mine.append((len(ec), mask) + frame)
                ec.append(c), eu.append(frame[0]), ew.append(frame[1]), es.append(frame[2]), emask.append(mask)
        per_cell.append(mine)
    angles_of: list = []
    if ec:
        ec = np.array(ec)
        eu, ew, es = np.array(eu, float), np.array(ew, float), np.array(es, float)
        count, cap, dfirst, cfirst = buffers["count"], buffers["cap"], buffers["dfirst"], buffers["cfirst"]
        nm = np.array([len(m) for m in emask])
        rv = np.concatenate(emask)  # (R,) the edges' vertices (cell-local)
        re = np.repeat(np.arange(len(ec)), nm)
        n0 = count[ec]  # the planes before the phase
        # (edge, vertex, plane) -> on the plane; all of an edge's vertices -> the plane is through it
        tr = np.repeat(np.arange(len(rv)), n0[re])
        tq = np.arange(len(tr)) - np.repeat(np.cumsum(n0[re]) - n0[re], n0[re])
        te = re[tr]
        on = np.abs(buffers["dist"][dfirst[ec[te]] + rv[tr] * cap[ec[te]] + tq]) <= BEVEL_ON_EPSILON
        pfirst = np.concatenate([[0], np.cumsum(n0)])
        slot = pfirst[te] + tq
        through = np.ones(int(pfirst[-1]), bool)
        np.logical_and.at(through, slot, on)
        pe = np.repeat(np.arange(len(ec)), n0)[through]
        pn = buffers["pn"][cfirst[ec[pe]] + (np.arange(int(pfirst[-1])) - pfirst[np.repeat(np.arange(len(ec)), n0)])[through]]
        a = pn[:, 0] * ew[pe, 0] + pn[:, 1] * ew[pe, 1] + pn[:, 2] * ew[pe, 2]
        b = pn[:, 0] * eu[pe, 0] + pn[:, 1] * eu[pe, 1] + pn[:, 2] * eu[pe, 2]
        ang = np.clip(arctan2(a, b), 0.0, es[pe])
        ang = np.concatenate([ang, np.zeros(len(ec)), es])
        owner = np.concatenate([pe, np.arange(len(ec)), np.arange(len(ec))])
        order = np.lexsort((ang, owner))
        ang, owner = ang[order], owner[order]
        keep = np.ones(len(ang), bool)
        keep[1:] = (owner[1:] != owner[:-1]) | (ang[1:] != ang[:-1])  # np.unique: sorted, equal values once
        ang, owner = ang[keep], owner[keep]
        bounds = np.searchsorted(owner, np.arange(len(ec) + 1)).tolist()
        flat = ang.tolist()
        angles_of = [flat[bounds[e]: bounds[e + 1]] for e in range(len(ec))]
        count0 = count.tolist()
    for c, cell in enumerate(cells):
        if cancel is not None and cancel():
            raise CancelledError()
        if progress is not None and c % PROGRESS_EVERY == PROGRESS_EVERY - 1:
            progress(0.9 * (c + 1) / max(n_solid, 1), f"{c + 1} of {n_solid} solid cells")
        for e, mask, u, w, span in per_cell[c]:
            angles = angles_of[e]
            if cell.count > count0[c] and np.all(np.abs(cell.dist[mask, count0[c]: cell.count]) <= BEVEL_ON_EPSILON,
                                                 axis=0).any():
                angles = _edge_angles(cell, mask, u, w, span)  # a bevel chosen in this phase passes here
            _cut_gaps(cell, angles, u, w, limit, cos_edge)


def _all_cell_planes(cells: CellArrays, normals: np.ndarray, dists: np.ndarray,
                     settings: BevelSettings) -> tuple[list[_CellPlanes], dict]:
    """_CellPlanes of every cell, after the axial (or flat-top) phase, built for all cells at once,
    and the buffers their planes and distances are views of (for _all_edge_bevels).

    Bit for bit what _CellPlanes(faces, ...) and _axial_bevels give one cell at a time: the same
    vertices (first per MIN_EDGE_LENGTH grid cell, in face order), the same planes in the same
    order (real faces, then the touching ancestors, sorted, then the axial bevels in axis order),
    each distance computed by the same products in the same order (detmath's).  Layout: faces
    rows (F,) with owner cell fo; vertices (M,) with owner vo, cell c's at vfirst[c]:vfirst[c+1];
    planes (Q,) with owner qo; (vertex, plane) pairs of one cell (T,), row-major per cell."""
    C, F = len(cells.codes), len(cells.tag)
    fo = np.repeat(np.arange(C), np.diff(cells.first))
    tag = cells.tag
    real = tag >= 0
    fn, fd = np.zeros((F, 3)), np.zeros(F)
    fn[real], fd[real] = normals[tag[real]], dists[tag[real]]
    rows, cols = np.nonzero(np.arange(cells.verts.shape[1]) < cells.count[:, None])
    allv, av_owner = cells.verts[rows, cols], fo[rows]
    keys = np.round(allv / MIN_EDGE_LENGTH).astype(np.int64)  # cells.unique_points, per cell
    order = np.lexsort((keys[:, 2], keys[:, 1], keys[:, 0], av_owner))
    dup = np.zeros(len(order), bool)
    dup[1:] = (av_owner[order][1:] == av_owner[order][:-1]) & np.all(keys[order][1:] == keys[order][:-1], axis=1)
    unique = np.ones(len(allv), bool)
    unique[order[dup]] = False
    verts, vo = allv[unique], av_owner[unique]
    vfirst = np.searchsorted(vo, np.arange(C + 1))
    nv = np.diff(vfirst)
    box = ~real[rows]
    box_lo, box_hi = np.full((C, 3), np.inf), np.full((C, 3), -np.inf)
    np.minimum.at(box_lo, av_owner[box], allv[box])
    np.maximum.at(box_hi, av_owner[box], allv[box])
    has_box = np.bincount(av_owner[box], minlength=C) > 0
    on_box = has_box[vo] & (np.any(np.abs(verts - box_lo[vo]) <= ON_EPSILON, axis=1)
                            | np.any(np.abs(verts - box_hi[vo]) <= ON_EPSILON, axis=1))
    # the planes: real faces in face order, then the ancestors that are not faces, sorted
    first_l = cells.first.tolist()
    width = len(normals) + 1
    real_keys = fo[real] * width + tag[real]  # (cell, plane), cells in order, faces in order
    chain_flat = np.fromiter(itertools.chain.from_iterable(cells.chains), np.int64)
    chain_keys = np.repeat(np.arange(C), [len(ch) for ch in cells.chains]) * width + chain_flat
    extra_keys = np.setdiff1d(chain_keys, real_keys)  # sorted: by cell, then plane
    keys = np.concatenate([real_keys, extra_keys])
    owner_of = keys // width
    order = np.lexsort((np.repeat([0, 1], [len(real_keys), len(extra_keys)]), owner_of))  # stable
    ids = (keys % width)[order]
    n_real = np.bincount(fo[real], minlength=C)
    n_planes = n_real + np.bincount(extra_keys // width, minlength=C)
    pn, pd = normals[ids].reshape(-1, 3), dists[ids].astype(np.float64)
    qfirst = np.concatenate([[0], np.cumsum(n_planes)])
    qo = np.repeat(np.arange(C), n_planes)
    q_local = np.arange(len(ids)) - qfirst[qo]
    # every (vertex, plane) pair of a cell, row-major: matmul(verts, pn.T) - pd of one cell
    n_pairs = nv * n_planes
    pair_first = np.concatenate([[0], np.cumsum(n_pairs)])
    po = np.repeat(np.arange(C), n_pairs)
    local = np.arange(int(pair_first[-1])) - pair_first[po]
    vi = vfirst[po] + local // np.maximum(n_planes[po], 1)
    qi = qfirst[po] + local % np.maximum(n_planes[po], 1)
    dist = verts[vi, 0] * pn[qi, 0] + verts[vi, 1] * pn[qi, 1] + verts[vi, 2] * pn[qi, 2] - pd[qi]
    touching = np.zeros(len(ids), bool)
    touching[qi[(q_local[qi] >= n_real[po]) & (np.abs(dist) <= BEVEL_ON_EPSILON)]] = True
    keep = (q_local < n_real[qo]) | touching
    kept = np.bincount(qo[keep], minlength=C)
    col = np.cumsum(keep) - 1 - np.concatenate([[0], np.cumsum(kept)])[qo]  # a kept plane's column in its cell
    # the axial (or flat-top) phase
    axial = np.zeros((C, 6), bool)
    if settings.axial or settings.flat_top:
        proj = matmul(verts, _AXES.T)
        dmax = np.maximum.reduceat(proj, vfirst[:-1], axis=0) if len(verts) else np.zeros((0, 6))
        boxed = np.logical_or.reduceat(on_box[:, None] & (proj >= dmax[vo] - ON_EPSILON), vfirst[:-1], axis=0)
        same = np.all(np.abs(pn[keep][:, None, :] - _AXES[None]) < NORMAL_EPSILON, axis=2)
        ko = qo[keep]
        had = np.zeros((C, 6), bool)
        np.logical_or.at(had, ko, same & (q_local[keep] < n_real[ko])[:, None])
        np.logical_or.at(had, ko, same & (np.abs(pd[keep][:, None] - dmax[ko]) < ON_EPSILON))
        topped = np.zeros(C, bool)
        np.logical_or.at(topped, fo, real & (fn[:, 2] >= FLAT_TOP_LEVEL_Z))
        axial = ~boxed & ~had
        if not settings.axial:
            axial &= (np.arange(6) == 4)[None] & ~topped[:, None]
    n_axial = axial.sum(axis=1)
    cap = kept + 16
    count = kept + n_axial
    # one buffer for all cells' planes and distances; each cell gets views of its part
    cfirst = np.concatenate([[0], np.cumsum(cap)])
    dfirst = np.concatenate([[0], np.cumsum(nv * cap)])
    pn_buf, pd_buf, dist_buf = np.zeros((int(cfirst[-1]), 3)), np.zeros(int(cfirst[-1])), np.zeros(int(dfirst[-1]))
    pn_buf[cfirst[qo[keep]] + col[keep]] = pn[keep]
    pd_buf[cfirst[qo[keep]] + col[keep]] = pd[keep]
    pk = keep[qi]
    dist_buf[dfirst[po[pk]] + (local[pk] // n_planes[po[pk]]) * cap[po[pk]] + col[qi[pk]]] = dist[pk]
    ac, aj = np.nonzero(axial)  # pushes in axis order per cell
    a_col = kept[ac] + np.cumsum(axial, axis=1)[ac, aj] - 1
    if len(ac):
        pn_buf[cfirst[ac] + a_col] = _AXES[aj]
        pd_buf[cfirst[ac] + a_col] = dmax[ac, aj]
        rep = np.repeat(np.arange(len(ac)), nv[ac])
        v_local = np.arange(len(rep)) - np.concatenate([[0], np.cumsum(nv[ac])])[rep]
        c_, j_ = ac[rep], aj[rep]
        dist_buf[dfirst[c_] + v_local * cap[c_] + a_col[rep]] = proj[vfirst[c_] + v_local, j_] - dmax[c_, j_]
    kind = "axial" if settings.axial else "flat_top"
    pushes: list[list] = [[] for _ in range(C)]
    rows = [_AXES[j].copy() for j in range(6)]  # shared by the cells: bevel normals are never written to
    for c, j, d in zip(ac.tolist(), aj.tolist(), dmax[ac, aj].tolist() if len(ac) else []):
        pushes[c].append((rows[j], d))
    edges = _all_sharp_edges(verts, vfirst, cells.first, real, pn, qfirst, n_real, po, vi, qi, dist, q_local,
                             math.cos(math.radians(settings.angle)))
    # the vertex phase's candidates: off the world box, on three real faces or more (fixed now)
    on_real = (q_local[qi] < n_real[po]) & (np.abs(dist) <= BEVEL_ON_EPSILON)
    todo = np.flatnonzero(~on_box & (np.bincount(vi[on_real], minlength=len(verts)) >= 3))
    todo_local = (todo - vfirst[vo[todo]]).tolist()
    todo_bounds = np.searchsorted(todo, vfirst).tolist()
    out = []
    for c in range(C):
        cell = _CellPlanes.__new__(_CellPlanes)
        cell.edges = edges[c]
        cell.vertex_todo = todo_local[todo_bounds[c]: todo_bounds[c + 1]]
        a, b, v0, v1, k = first_l[c], first_l[c + 1], int(vfirst[c]), int(vfirst[c + 1]), int(cap[c])
        cell.real, cell.fn, cell.fd = real[a:b], fn[a:b], fd[a:b]
        cell.verts, cell.on_box, cell.n_real = verts[v0:v1], on_box[v0:v1], int(n_real[c])
        cell.pn, cell.pd = pn_buf[cfirst[c]: cfirst[c] + k], pd_buf[cfirst[c]: cfirst[c] + k]
        cell.dist = dist_buf[dfirst[c]: dfirst[c + 1]].reshape(v1 - v0, k)
        cell.count = int(count[c])
        cell.out = {"seam": [], "edge": [], "vertex": [], "axial": [], "flat_top": []}
        cell.out[kind] = pushes[c]
        out.append(cell)
    buffers = {"pn": pn_buf, "cfirst": cfirst, "dist": dist_buf, "dfirst": dfirst, "cap": cap, "count": count}
    return out, buffers


def _all_sharp_edges(verts, vfirst, face_first, real, pn, qfirst, n_real, po, vi, qi, dist, q_local, cos_edge):
    """_sharp_edges of every cell, found for all cells at once: per cell a list of (face a, face
    b, vertex indices on both) in the same order (face pairs row-major) with the same tests:
    two real faces sharing two vertices or more (on both planes within BEVEL_ON_EPSILON), the
    cosine of their normals (summed in matmul's order) below the angle's, and the shared
    vertices a real distance apart (np.ptp of their coordinates at least MIN_EDGE_LENGTH).
    Layout: incidences (I,) vertex iv on real face ia of cell ic, sorted by vertex then face."""
    C = len(n_real)
    on = (q_local[qi] < n_real[po]) & (np.abs(dist) <= BEVEL_ON_EPSILON)
    iv, ia, ic = vi[on], q_local[qi[on]], po[on]
    edges: list[list] = [[] for _ in range(C)]
    if not len(iv):
        return edges
    starts = np.flatnonzero(np.concatenate([[True], iv[1:] != iv[:-1]]))
    k = np.diff(np.concatenate([starts, [len(iv)]]))
    pv, pa, pb, pc = [], [], [], []
    for i in range(int(k.max())):
        for j in range(i + 1, int(k.max())):
            has = k > j
            a_, b_ = starts[has] + i, starts[has] + j
            pv.append(iv[a_]), pa.append(ia[a_]), pb.append(ia[b_]), pc.append(ic[a_])
    if not pv:
        return edges
    pv, pa, pb, pc = (np.concatenate(x) for x in (pv, pa, pb, pc))
    width = int(n_real.max()) + 1
    key = (pc * width + pa) * width + pb
    order = np.argsort(key, kind="stable")
    key, pv = key[order], pv[order]
    uniq, first, count = np.unique(key, return_index=True, return_counts=True)
    shared = count >= 2
    uniq, first, count = uniq[shared], first[shared], count[shared]
    c, rest = np.divmod(uniq, width * width)
    a, b = np.divmod(rest, width)
    qa, qb = qfirst[c] + a, qfirst[c] + b
    cos = pn[qa, 0] * pn[qb, 0] + pn[qa, 1] * pn[qb, 1] + pn[qa, 2] * pn[qb, 2]
    sharp = cos < cos_edge - BEVEL_COSINE_SLACK
    c, a, b, first, count = c[sharp], a[sharp], b[sharp], first[sharp], count[sharp]
    if not len(c):
        return edges
    rep = np.repeat(np.arange(len(c)), count)
    vs = pv[np.repeat(first, count) + np.arange(len(rep)) - np.repeat(np.cumsum(count) - count, count)]
    lo, hi = np.full((len(c), 3), np.inf), np.full((len(c), 3), -np.inf)
    np.minimum.at(lo, rep, verts[vs])
    np.maximum.at(hi, rep, verts[vs])
    long_enough = (hi - lo).max(axis=1) >= MIN_EDGE_LENGTH
    local = (vs - vfirst[c[rep]])[np.lexsort((vs, rep))]  # each edge's vertices, ascending (a mask's order)
    real_rows = np.flatnonzero(real)
    real_first = np.searchsorted(real_rows, face_first[:-1])
    fa = (real_rows[real_first[c] + a] - face_first[c]).tolist()
    fb = (real_rows[real_first[c] + b] - face_first[c]).tolist()
    bounds = np.concatenate([[0], np.cumsum(count)]).tolist()
    cl = c.tolist()
    for e in np.flatnonzero(long_enough).tolist():
        edges[cl[e]].append((fa[e], fb[e], local[bounds[e]: bounds[e + 1]]))
    return edges



# --------------------------------------------------------------------------------------------
# The beveled tree


class _PlaneAppender:
    """Adds planes (with flips, canonical member even, as in geometry.PlaneTable) after an
    existing plane table, reusing existing planes equal within tolerance."""

    def __init__(self, normals: np.ndarray, dists: np.ndarray):
        self.normals = np.asarray(normals).tolist()
        self.dists = np.asarray(dists).tolist()
        rounded = np.round(np.asarray(normals)[0::2] * 1e6).astype(np.int64).tolist()
        keys = [tuple(r) + (int(round(d * 1e4)),) for r, d in zip(rounded, self.dists[0::2])]
        self.index: dict = dict(zip(reversed(keys), range(2 * (len(keys) - 1), -1, -2)))  # the first plane of a key

    @staticmethod
    def _key(n, d):
        """n (3 floats) rounded to 1e-6 and d to 1e-4 (round half to even, as np.round)."""
        return (round(n[0] * 1e6), round(n[1] * 1e6), round(n[2] * 1e6), int(round(d * 1e4)))

    def add(self, n: np.ndarray, d: float) -> int:
        n = n.tolist() if isinstance(n, np.ndarray) else list(n)
        a0, a1, a2 = abs(n[0]), abs(n[1]), abs(n[2])
        axis = 0 if a0 >= a1 and a0 >= a2 else (1 if a1 >= a2 else 2)  # the first largest, as np.argmax
        canonical = n[axis] > 0
        cn, cd = (n, d) if canonical else ([-n[0], -n[1], -n[2]], -d)
        key = self._key(cn, cd)
        i = self.index.get(key)
        if i is None or not (all(abs(a - b) < NORMAL_EPSILON for a, b in zip(self.normals[i], cn))
                             and abs(self.dists[i] - cd) < ON_EPSILON):
            i = len(self.dists)
            self.normals.append(cn)
            self.normals.append([-cn[0], -cn[1], -cn[2]])
            self.dists.append(float(cd))
            self.dists.append(float(-cd))
            self.index[key] = i
        return i if canonical else i ^ 1

    def arrays(self):
        return np.array(self.normals, dtype=np.float64).reshape(-1, 3), np.array(self.dists, dtype=np.float64)


def bevel_tree(tree, bounds, settings: BevelSettings | None = None, cancel=None, progress=None,
               cache=None) -> BeveledTree:
    """The beveled solid tree of a point tree (Tree or CompiledLevel; bit 0 = solid).

    bounds: (2, 3) world bounds (level.world_bounds).  Returns a BeveledTree whose plane table
    extends tree's (existing plane indices unchanged) and whose stats count nodes with and without
    bevels and the planes of each kind.  progress(fraction, message) is called as solid cells are
    done; cancel() returning True stops the work with CancelledError.  `cache`: a BakeCache
    (core/compile/bake_cache.py) that keeps each cell's bevels: only cells not seen are beveled.
    """
    settings = settings or BevelSettings()
    return beveled_tree_from(tree, all_cell_bevels(tree, bounds, settings, cancel, progress, cache))


def all_cell_bevels(tree, bounds, settings: BevelSettings, cancel=None, progress=None,
                    cache=None) -> list[tuple[int, dict]]:
    """(solid leaf, cell_bevels' dict of bevel planes) for every solid cell, in depth-first order;
    the phases run for all cells at once (_all_cell_planes, _all_edge_bevels, _all_vertex_bevels),
    or, given a cache, for the cells it lacks (bake_cache.cell_digests)."""
    if not len(np.asarray(tree.node_plane)):
        return []
    normals, dists = np.asarray(tree.plane_normals), np.asarray(tree.plane_dists)
    n_solid = int(np.count_nonzero(np.asarray(tree.leaf_solid) & POINT_HULL_BIT))
    arrays = solid_cell_arrays(tree, bounds)
    if cancel is not None and cancel():
        raise CancelledError()
    seams = seam_planes(arrays, tree, normals, dists)  # counted like ancestors, made as bevels
    arrays.chains = [list(chain) + seam if seam else chain for chain, seam in zip(arrays.chains, seams)]
    leaves = (-1 - arrays.codes).tolist()

    def bevels_of(ks):
        return _cell_outs(arrays.take(ks), [seams[k] for k in ks], normals, dists, settings, cancel, progress, n_solid)

    if cache is None:
        return list(zip(leaves, bevels_of(list(range(len(leaves))))))
    return list(zip(leaves, cache.bevels(arrays, seams, normals, dists, settings, bevels_of)))


def _cell_outs(arrays: CellArrays, seams: list, normals, dists, settings, cancel, progress, n_solid) -> list[dict]:
    """The bevels (cell_bevels' dict) of each of these cells, all phases for all of them at once."""
    cell_planes, buffers = _all_cell_planes(arrays, normals, dists, settings)
    for cell, seam in zip(cell_planes, seams):
        cell.out["seam"] = [(normals[t], float(dists[t])) for t in seam]
    _all_edge_bevels(cell_planes, buffers, settings, cancel, progress, n_solid)
    if settings.vertices:
        _all_vertex_bevels(cell_planes, settings, cancel)
    return [cell.out for cell in cell_planes]



def beveled_tree_from(tree, cells: list[tuple[int, dict]]) -> BeveledTree:
    """The beveled tree of `tree` with each listed solid leaf's bevels (all_cell_bevels' list) as a
    chain of nodes in its place: seam, axial (or flat top), edge, then vertex bevels, each node's plane
    facing into the cell and its other child a new empty leaf of zero volume."""
    normals, dists = np.asarray(tree.plane_normals), np.asarray(tree.plane_dists)
    node_plane = np.asarray(tree.node_plane, dtype=np.int64)
    node_children = np.asarray(tree.node_children, dtype=np.int64).reshape(-1, 2)
    leaf_solid = np.asarray(tree.leaf_solid, dtype=np.uint32) & np.uint32(POINT_HULL_BIT)  # bit 0 only
    planes = _PlaneAppender(normals, dists)
    counts = {"seam": 0, "edge": 0, "vertex": 0, "axial": 0, "flat_top": 0}
    new_planes: list[int] = []
    new_children: list[list[int]] = []
    children = node_children.copy()
    n_leaves = len(leaf_solid)
    beveled_cells = 0
    parent = {}
    for node, (f, b) in enumerate(node_children.tolist()):
        if f < 0:
            parent[-1 - f] = (node, 0)
        if b < 0:
            parent[-1 - b] = (node, 1)
    for leaf, found in cells:
        chain = [(kind, n, d) for kind in ("seam", "axial", "flat_top", "edge", "vertex") for n, d in found[kind]]
        if not chain:
            continue
        beveled_cells += 1
        node, side = parent[leaf]
        first = len(node_plane) + len(new_planes)
        children[node, side] = first
        for k, (kind, n, d) in enumerate(chain):
            counts[kind] += 1
            inward = planes.add(n, d) ^ 1  # the node faces into the cell: front = the cell side
            this = first + k
            nxt = this + 1 if k + 1 < len(chain) else -1 - leaf
            new_planes.append(inward)
            new_children.append([nxt, -1 - n_leaves])
            n_leaves += 1
    out_normals, out_dists = planes.arrays()
    all_plane = np.concatenate([node_plane, np.array(new_planes, dtype=np.int64)]).astype(np.int32)
    all_children = np.concatenate([children, np.array(new_children, dtype=np.int64).reshape(-1, 2)]).astype(np.int32)
    all_solid = np.concatenate([leaf_solid, np.zeros(n_leaves - len(leaf_solid), np.uint32)])
    stats = {"plain_nodes": int(len(node_plane)), "beveled_nodes": int(len(all_plane)),
             "size_ratio": float(len(all_plane) / max(len(node_plane), 1)), "beveled_cells": beveled_cells,
             "solid_cells": int(np.count_nonzero(leaf_solid & 1)), "planes_added": len(out_dists) - len(dists),
             **{f"{k}_bevels": v for k, v in counts.items()}}
    return BeveledTree(out_normals, out_dists, all_plane, all_children, all_solid, stats)


def _all_vertex_bevels(cells: list[_CellPlanes], settings: BevelSettings, cancel=None) -> None:
    """The vertex phase of many cells, their corner reaches solved in one batch (each candidate's
    planes through it, in plane order, gathered per cell with one np.nonzero)."""
    flats, sizes, candidates = [], [], []
    for cell in cells:
        todo, through = _vertex_candidates(cell)
        candidates.append((todo, through))
        if todo:
            _, cols = np.nonzero(through)
            flats.append(cell.pn[cols])
            sizes.append(through.sum(axis=1))
    reach = corner_reaches_flat(np.concatenate(flats), np.concatenate(sizes)) if flats else []
    if cancel is not None and cancel():
        raise CancelledError()
    at = 0
    for cell, found in zip(cells, candidates):
        if found[0]:
            _vertex_bevels(cell, settings, reach[at: at + len(found[0])], found)
            at += len(found[0])


def add_bevels(level, settings: BevelSettings | None = None, cancel=None, progress=None, cache=None) -> dict:
    """Store the beveled tree in a CompiledLevel (bevel_* arrays, plane table grown) and return
    its stats (also merged into level.stats['bevel']).  progress, cancel and cache as for bevel_tree."""
    beveled = bevel_tree(level, level.world_bounds, settings, cancel=cancel, progress=progress, cache=cache)
    level.plane_normals, level.plane_dists = beveled.plane_normals, beveled.plane_dists
    level.bevel_node_plane = beveled.node_plane
    level.bevel_node_children = beveled.node_children
    level.bevel_leaf_solid = beveled.leaf_solid
    level.stats["bevel"] = beveled.stats
    return beveled.stats
