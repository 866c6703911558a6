"""Bevels for plane shifting (Melax, 'Dynamic Plane Shifting BSP Traversal', sections 5 and 8).

When a shape's planes are shifted during a trace (core/shift.py), each solid cell of the point
tree grows by moving its planes outward.  Where two faces of a cell meet at a sharp angle the grown
cell sticks out far beyond the shape's true reach: the 'invisible walls' of section 5.  Beveling
caps those corners with extra planes, inserted as extra nodes *under* each solid leaf.

The planes a trace clips a solid cell with are its faces, its ancestors' planes that touch it
without being faces (through an edge or a vertex), and its bevels; all of them count below, in
this order per cell:

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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..detmath import matmul, norm
from ..errors import CancelledError
from ..geometry import snap_normals
from ..runtime.level import POINT_HULL_BIT
from ..runtime.tree import Tree
from ..tolerances import (BEVEL_COSINE_SLACK, BEVEL_MIN_DIRECTION, BEVEL_ON_EPSILON, CELL_BOX_MARGIN,
                          CORNER_DETERMINANT, CORNER_FEASIBLE_SLACK, FLAT_TOP_LEVEL_Z, MIN_EDGE_LENGTH,
                          NORMAL_EPSILON, ON_EPSILON)
from .cells import tree_cells, unique_points

#: An edge gap wider than the bevel angle is cut into at most this many equal parts (only angles
#: below 180 / MAX_EDGE_PARTS degrees are limited by it).
MAX_EDGE_PARTS = 8

#: The bevel stage reports progress every this many solid cells.
PROGRESS_EVERY = 64


@dataclass
class BevelSettings:
    """What bevels to add (angles in degrees)."""

    angle: float = 90.0  #: edge bevels where adjacent planes at a cell's edge differ by more than this
    vertices: bool = True
    vertex_angle: float = 60.0  #: vertex bevel where the grown corner reaches over 1/cos(this) times the shift
    axial: bool = True
    flat_top: bool = True

    @classmethod
    def off(cls) -> "BevelSettings":
        return cls(angle=180.0, vertices=False, axial=False, flat_top=False)


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
    with all of them, faces of the cell or not.  The cells are core/compile/cells.py's."""
    lo = np.asarray(bounds[0], float) - CELL_BOX_MARGIN
    hi = np.asarray(bounds[1], float) + CELL_BOX_MARGIN
    solid = (np.asarray(tree.leaf_solid) & 1).astype(bool)
    for code, faces, chain in tree_cells(tree, lo, hi, leaves=solid, chains=True):
        yield (-1 - code, faces, chain) if chains else (-1 - code, faces)


# --------------------------------------------------------------------------------------------
# Bevel planes of one cell


class _CellPlanes:
    """One solid cell and the planes plane shifting clips it with, as the bevel phases add to them.

    verts: the cell's vertices (one per MIN_EDGE_LENGTH grid cell); fn, fd: each face's plane
    (zeros for box faces), real: not a box face; on_box: vertices on the world box.  pn, pd (the
    first `count` rows): the planes at the cell in the order they count, real faces, then the
    ancestors that touch the cell (an edge or a vertex, without being a face), then the bevels as
    they are chosen; dist: (V, count) each vertex's distance to each of them, computed once per
    plane (detmath products, so each entry has the bits of a product of that vertex and plane).
    """

    def __init__(self, faces, normals: np.ndarray, dists: np.ndarray, chain):
        tags = [t for t, _ in faces]
        tag_arr = np.array(tags)
        self.real = tag_arr >= 0
        self.fn, self.fd = np.zeros((len(tags), 3)), np.zeros(len(tags))
        self.fn[self.real], self.fd[self.real] = normals[tag_arr[self.real]], dists[tag_arr[self.real]]
        self.verts = unique_points(np.concatenate([v for _, v in faces]))
        box = [v for t, v in faces if t < 0]
        self.on_box = np.zeros(len(self.verts), bool)
        if box:
            box_lo, box_hi = np.min(np.concatenate(box), axis=0), np.max(np.concatenate(box), axis=0)
            self.on_box = (np.any(np.abs(self.verts - box_lo) <= ON_EPSILON, axis=1)
                           | np.any(np.abs(self.verts - box_hi) <= ON_EPSILON, axis=1))
        real_tags = [t for t in tags if t >= 0]
        self.n_real = len(real_tags)
        extra = sorted({int(p) for p in chain} - set(real_tags))
        pn = np.concatenate([normals[real_tags].reshape(-1, 3), normals[extra].reshape(-1, 3)])
        pd = np.concatenate([dists[real_tags], dists[extra]]).astype(np.float64)
        dist = matmul(self.verts, pn.T) - pd
        keep = np.ones(len(pd), bool)
        keep[self.n_real:] = np.any(np.abs(dist[:, self.n_real:]) <= BEVEL_ON_EPSILON, axis=0)  # touching ancestors
        cap = int(keep.sum()) + 16
        self.pn, self.pd = np.zeros((cap, 3)), np.zeros(cap)
        self.dist = np.zeros((len(self.verts), cap))
        self.count = int(keep.sum())
        self.pn[: self.count], self.pd[: self.count], self.dist[:, : self.count] = pn[keep], pd[keep], dist[:, keep]
        self.out: dict = {"edge": [], "vertex": [], "axial": [], "flat_top": []}

    def on(self) -> np.ndarray:
        """(V, real faces) bool: the vertex lies on the face's plane."""
        return np.abs(self.dist[:, : self.n_real]) <= BEVEL_ON_EPSILON

    def through(self, rows) -> np.ndarray:
        """(P,) bool: the planes (faces, touching ancestors, bevels) through all these vertices."""
        return np.all(np.abs(self.dist[rows, : self.count]) <= BEVEL_ON_EPSILON, axis=0)

    def add(self, kind: str, n: np.ndarray, d: float) -> bool:
        """Choose the bevel (n, d) unless the cell has it already (a plane equal within tolerance,
        or a face with its normal); True when chosen."""
        same = np.all(np.abs(self.pn[: self.count] - n) < NORMAL_EPSILON, axis=1)
        if same[: self.n_real].any() or (same & (np.abs(self.pd[: self.count] - d) < ON_EPSILON)).any():
            return False
        self.push(kind, n, d, matmul(self.verts, n) - d)
        return True

    def push(self, kind: str, n: np.ndarray, d: float, dist: np.ndarray) -> None:
        """Choose the bevel (n, d) whose vertex distances are `dist`, without looking for it."""
        if self.count == len(self.pd):
            grow = len(self.pd)
            self.pn = np.concatenate([self.pn, np.zeros((grow, 3))])
            self.pd = np.concatenate([self.pd, np.zeros(grow)])
            self.dist = np.concatenate([self.dist, np.zeros((len(self.verts), grow))], axis=1)
        self.pn[self.count], self.pd[self.count] = n, d
        self.dist[:, self.count] = dist
        self.count += 1
        self.out[kind].append((n, d))


#: the six axial directions in the order the axial phase tries them (+x, -x, +y, -y, +z, -z)
_AXES = np.array([[1.0, 0, 0], [-1.0, 0, 0], [0, 1.0, 0], [0, -1.0, 0], [0, 0, 1.0], [0, 0, -1.0]])


def _axial_bevels(cell: _CellPlanes, settings: BevelSettings) -> None:
    """The six axis-aligned planes through the cell's extremes (or only the flat top, section 8,
    when axial planes are off and no face tops the cell), except where the cell reaches the
    world box that way or has the plane already.  All six are looked for at once: two axial
    planes are never the same plane, so choosing one never hides another."""
    topped = bool(np.any(cell.real & (cell.fn[:, 2] >= FLAT_TOP_LEVEL_Z)))
    proj = matmul(cell.verts, _AXES.T)
    d = proj.max(axis=0)
    boxed = np.any(cell.on_box[:, None] & (proj >= d - ON_EPSILON), axis=0)  # reaches the world box that way
    same = np.all(np.abs(cell.pn[: cell.count, None, :] - _AXES[None]) < NORMAL_EPSILON, axis=2)
    had = same[: cell.n_real].any(axis=0) | (same & (np.abs(cell.pd[: cell.count, None] - d) < ON_EPSILON)).any(axis=0)
    for j in np.flatnonzero(~boxed & ~had).tolist():
        if settings.axial:
            kind = "axial"
        elif j == 4 and not topped:
            kind = "flat_top"
        else:
            continue
        cell.push(kind, _AXES[j].copy(), float(d[j]), proj[:, j] - d[j])


def _sharp_edges(cell: _CellPlanes, cos_edge: float):
    """(face a, face b, vertex mask) for each edge of the cell (two real faces sharing vertices a
    real distance apart) whose faces differ by more than the bevel angle, in face-pair order."""
    on = cell.on()
    share = matmul(on.T.astype(np.int32), on.astype(np.int32))
    fr = cell.pn[: cell.n_real]
    cosines = matmul(fr, fr.T)
    ri = np.flatnonzero(cell.real)
    for a, b in zip(*np.nonzero(np.triu(share >= 2, 1) & (cosines < cos_edge - BEVEL_COSINE_SLACK))):
        mask = on[:, a] & on[:, b]
        if np.ptp(cell.verts[mask], axis=0).max() >= MIN_EDGE_LENGTH:
            yield ri[a], ri[b], mask


def _edge_bevels(cell: _CellPlanes, settings: BevelSettings) -> None:
    """Around each sharp edge, planes through it (faces, touching ancestors, bevels so far) sorted
    by angle; each gap between adjacent ones wider than the angle is cut into equal parts.  The
    3-vectors are Python floats (the same IEEE operations, in the order detmath sums them)."""
    limit = math.radians(settings.angle)
    cos_edge = math.cos(limit)
    fn = cell.fn.tolist()
    for fa, fb, mask in _sharp_edges(cell, cos_edge):
        u, b = fn[fa], fn[fb]
        bu = b[0] * u[0] + b[1] * u[1] + b[2] * u[2]
        w = [b[0] - bu * u[0], b[1] - bu * u[1], b[2] - bu * u[2]]
        length = math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
        if length < BEVEL_MIN_DIRECTION:
            continue  # a zero-thickness sliver: the faces are opposite
        w = [w[0] / length, w[1] / length, w[2] / length]
        span = math.atan2(b[0] * w[0] + b[1] * w[1] + b[2] * w[2], bu)
        at = cell.pn[: cell.count][cell.through(mask)]
        angles = np.clip(np.arctan2(matmul(at, np.array(w)), matmul(at, np.array(u))), 0.0, span)
        angles = np.unique(np.concatenate([[0.0, span], angles])).tolist()
        for lo_, hi_ in zip(angles[:-1], angles[1:]):
            gap = hi_ - lo_
            if math.cos(gap) >= cos_edge - BEVEL_COSINE_SLACK:
                continue  # adjacent planes within the angle
            parts = min(MAX_EDGE_PARTS, max(2, math.ceil(gap / max(limit, BEVEL_COSINE_SLACK) - BEVEL_COSINE_SLACK)))
            for k in range(1, parts):
                phi = lo_ + gap * k / parts
                c, s_ = math.cos(phi), math.sin(phi)
                m = snap_normals(np.array([[c * u[0] + s_ * w[0], c * u[1] + s_ * w[1], c * u[2] + s_ * w[2]]]))[0]
                m = m / float(norm(m))
                cell.add("edge", m, float((matmul(cell.verts, m)).max()))


def _vertex_candidates(cell: _CellPlanes) -> tuple[list[int], np.ndarray]:
    """The vertices the vertex phase looks at (off the world box, on three real faces or more)
    and, for each, which of the cell's planes pass through it: (vertices, (V', P) bool)."""
    on = cell.on()
    todo = np.flatnonzero(~cell.on_box & (on.sum(axis=1) >= 3))
    return todo.tolist(), np.abs(cell.dist[todo, : cell.count]) <= BEVEL_ON_EPSILON


def _vertex_bevels(cell: _CellPlanes, settings: BevelSettings, reach=None) -> None:
    """At each vertex (off the world box, on three faces or more) whose corner, grown by a unit
    shift of every plane through it, reaches beyond 1 / cos(vertex_angle): a plane through it
    with the mean of its faces' normals.  `reach`: each candidate's corner_reach, computed for
    many cells at once by the caller (else here); a later vertex that a chosen vertex bevel
    passes through is computed again with it."""
    reach_limit = 1.0 / math.cos(math.radians(settings.vertex_angle))
    todo, through = _vertex_candidates(cell)
    if not todo:
        return
    if reach is None:
        reach = corner_reaches([cell.pn[: cell.count][row] for row in through])
    on = cell.on()
    ri = np.flatnonzero(cell.real)
    first = cell.count
    for v, r in zip(todo, reach):
        if cell.count > first and (np.abs(cell.dist[v, first: cell.count]) <= BEVEL_ON_EPSILON).any():
            r = corner_reach(cell.pn[: cell.count][cell.through([v])])  # a vertex bevel passes here too
        if r <= reach_limit:
            continue
        m = cell.fn[ri[np.flatnonzero(on[v])]].sum(axis=0)
        length = float(norm(m))
        if length < BEVEL_MIN_DIRECTION:
            continue
        m = snap_normals((m / length)[None])[0]
        cell.add("vertex", m, float(matmul(cell.verts[v], m)))


def _cell_phases(faces, normals: np.ndarray, dists: np.ndarray, settings: BevelSettings, chain) -> _CellPlanes:
    """A solid cell after the axial (or flat-top) and edge phases; the vertex phase is left to
    the caller, which may batch it over many cells."""
    cell = _CellPlanes(faces, normals, dists, chain)
    if settings.axial or settings.flat_top:
        _axial_bevels(cell, settings)
    _edge_bevels(cell, settings)
    return cell


def cell_bevels(faces, normals: np.ndarray, dists: np.ndarray, settings: BevelSettings, chain=()) -> dict:
    """Bevel planes of one solid cell: {'edge'|'vertex'|'axial'|'flat_top': [(normal, dist), ...]},
    each an outward plane touching the cell with the whole cell behind it.

    `chain` (plane indices, outward) are the leaf's ancestors' planes.  Plane shifting clips with
    every one of them, so those that touch the cell count like faces: a bevel equal to one of them
    is not made, and they count among the planes at an edge or a vertex.  Three phases, each
    seeing the planes chosen before it: axial planes (or the flat top), edges, vertices:

    - an edge gets bevels only where two *adjacent* planes through it (faces, touching ancestors,
      bevels already chosen, sorted by angle around the edge) differ by more than the angle, the
      criterion of Melax's section 8 ('at most a 95-degree difference in adjacent planes'); each
      such gap is cut into equal parts of at most the angle (at most MAX_EDGE_PARTS), so an axial
      bevel that already splits a sharp edge into square ones makes the halfway bevel unneeded;
    - a vertex gets a bevel when the corner of the planes through it (faces, touching ancestors,
      bevels) reaches too far.
    """
    cell = _cell_phases(faces, normals, dists, settings, chain)
    if settings.vertices:
        _vertex_bevels(cell, settings)
    return cell.out


def corner_reach(normals: np.ndarray) -> float:
    """How far a corner where planes with these outward normals meet reaches when every plane is
    shifted out by 1 (a unit sphere's plane shifting): the largest |x| over the vertices of
    {x : n_i.x <= 1}.  A cube corner reaches sqrt(3); a needle reaches far."""
    return corner_reaches([normals])[0]


#: corner_reaches solves at most this many 3x3 systems at once (memory: 72 bytes each, twice)
REACH_CHUNK = 1 << 16


def corner_reaches(groups) -> list[float]:
    """corner_reach of each (k_i, 3) array of normals, in batches: every triple of each group is
    one 3x3 system (LAPACK solves each matrix of a stack alone, so a value never depends on the
    rest of the batch, and each is the value corner_reach would give alone)."""
    groups = [np.asarray(g, float).reshape(-1, 3) for g in groups]
    out: list[float] = []
    start = 0
    while start < len(groups):
        end, systems = start, 0
        while end < len(groups) and (end == start or systems + _n_triples(len(groups[end])) <= REACH_CHUNK):
            systems += _n_triples(len(groups[end]))
            end += 1
        out += _reaches(groups[start:end])
        start = end
    return out


def _n_triples(k: int) -> int:
    return k * (k - 1) * (k - 2) // 6


def _triples(k: int) -> np.ndarray:
    t = _TRIPLES.get(k)
    if t is None:
        t = _TRIPLES[k] = np.array([(a, b, c) for a in range(k) for b in range(a + 1, k) for c in range(b + 1, k)],
                                   dtype=np.int64).reshape(-1, 3)
    return t


def _reaches(groups: list[np.ndarray]) -> list[float]:
    """corner_reaches of one batch.  Layout: padded (G, W, 3) the groups' normals padded with zero
    rows to the widest (a zero row never makes a vertex infeasible); mats (T, 3, 3) every group's
    triples, grouped by size; owner (T,) the group of each."""
    out = [1.0] * len(groups)
    sizes = np.array([len(g) for g in groups])
    width = int(sizes.max()) if len(groups) else 0
    if width < 3:
        return out
    padded = np.zeros((len(groups), width, 3))
    for i, g in enumerate(groups):
        padded[i, : len(g)] = g
    mats, owners = [], []
    for k in np.unique(sizes[sizes >= 3]).tolist():
        g = np.flatnonzero(sizes == k)
        t = _triples(k)
        mats.append(padded[g[:, None, None], t[None]].reshape(-1, 3, 3))
        owners.append(np.repeat(g, len(t)))
    mats, owner = np.concatenate(mats), np.concatenate(owners)
    ok = np.abs(np.linalg.det(mats)) > CORNER_DETERMINANT
    if not ok.any():
        return out
    x = np.linalg.solve(mats[ok], np.ones((int(ok.sum()), 3, 1)))[..., 0]
    owner = owner[ok]
    n = padded[owner]
    feasible = np.all(x[:, None, 0] * n[:, :, 0] + x[:, None, 1] * n[:, :, 1] + x[:, None, 2] * n[:, :, 2]
                      <= 1 + CORNER_FEASIBLE_SLACK, axis=1)
    best = np.full(len(groups), -np.inf)
    np.maximum.at(best, owner[feasible], norm(x[feasible], axis=1))
    return [b if b != -np.inf else 1.0 for b in best.tolist()]


_TRIPLES: dict = {}


# --------------------------------------------------------------------------------------------
# The beveled tree


class _PlaneAppender:
    """Adds planes (with flips, canonical member even, as in geometry.PlaneTable) after an
    existing plane table, reusing existing planes equal within tolerance."""

    def __init__(self, normals: np.ndarray, dists: np.ndarray):
        self.normals = [tuple(r) for r in np.asarray(normals).tolist()]
        self.dists = np.asarray(dists).tolist()
        self.index: dict = {}
        rounded = np.round(np.asarray(normals)[0::2] * 1e6).astype(np.int64).tolist()
        for i, r in zip(range(0, len(self.dists), 2), rounded):
            self.index.setdefault(tuple(r) + (int(round(self.dists[i] * 1e4)),), i)

    @staticmethod
    def _key(n, d):
        """n (3 floats) rounded to 1e-6 and d to 1e-4 (round half to even, as np.round)."""
        return (round(n[0] * 1e6), round(n[1] * 1e6), round(n[2] * 1e6), int(round(d * 1e4)))

    def add(self, n: np.ndarray, d: float) -> int:
        n = n.tolist() if isinstance(n, np.ndarray) else list(n)
        axis = max(range(3), key=lambda i: abs(n[i]))  # the first largest, as np.argmax
        canonical = n[axis] > 0
        cn, cd = (n, d) if canonical else ([-x for x in n], -d)
        key = self._key(cn, cd)
        i = self.index.get(key)
        if i is None or not (all(abs(a - b) < NORMAL_EPSILON for a, b in zip(self.normals[i], cn))
                             and abs(self.dists[i] - cd) < ON_EPSILON):
            i = len(self.dists)
            self.normals += [tuple(cn), tuple(-x for x in cn)]
            self.dists += [float(cd), float(-cd)]
            self.index[key] = i
        return i if canonical else i ^ 1

    def arrays(self):
        return np.array(self.normals, dtype=np.float64).reshape(-1, 3), np.array(self.dists, dtype=np.float64)


def bevel_tree(tree, bounds, settings: BevelSettings | None = None, cancel=None, progress=None) -> BeveledTree:
    """The beveled solid tree of a point tree (Tree or CompiledLevel; bit 0 = solid).

    bounds: (2, 3) world bounds (level.world_bounds).  Returns a BeveledTree whose plane table
    extends tree's (existing plane indices unchanged) and whose stats count nodes with and without
    bevels and the planes of each kind.  progress(fraction, message) is called as solid cells are
    done; cancel() returning True stops the work with CancelledError.
    """
    settings = settings or BevelSettings()
    normals, dists = np.asarray(tree.plane_normals), np.asarray(tree.plane_dists)
    node_plane = np.asarray(tree.node_plane, dtype=np.int64)
    node_children = np.asarray(tree.node_children, dtype=np.int64).reshape(-1, 2)
    leaf_solid = np.asarray(tree.leaf_solid, dtype=np.uint32) & np.uint32(POINT_HULL_BIT)  # bit 0 only
    planes = _PlaneAppender(normals, dists)
    counts = {"edge": 0, "vertex": 0, "axial": 0, "flat_top": 0}
    new_planes: list[int] = []
    new_children: list[list[int]] = []
    children = node_children.copy()
    n_leaves = len(leaf_solid)
    n_solid = int(np.count_nonzero(leaf_solid))
    beveled_cells = 0
    if len(node_plane):
        parent = {}
        for node, (f, b) in enumerate(node_children.tolist()):
            if f < 0:
                parent[-1 - f] = (node, 0)
            if b < 0:
                parent[-1 - b] = (node, 1)
        cells = []
        for leaf, faces, chain in solid_cells(tree, bounds, chains=True):
            if cancel is not None and cancel():
                raise CancelledError()
            if progress is not None and len(cells) % PROGRESS_EVERY == PROGRESS_EVERY - 1:
                progress(0.9 * (len(cells) + 1) / max(n_solid, 1), f"{len(cells) + 1} of {n_solid} solid cells")
            cells.append((leaf, _cell_phases(faces, normals, dists, settings, chain)))
        if settings.vertices:
            _all_vertex_bevels([c for _, c in cells], settings, cancel)
        for leaf, cell in cells:
            found = cell.out
            chain = [(kind, n, d) for kind in ("axial", "flat_top", "edge", "vertex") for n, d in found[kind]]
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
    """The vertex phase of many cells, their corner reaches solved in one batch."""
    groups, spans = [], []
    for cell in cells:
        _, through = _vertex_candidates(cell)
        spans.append((len(groups), len(groups) + len(through)))
        groups += [cell.pn[: cell.count][row] for row in through]
    reach = corner_reaches(groups)
    if cancel is not None and cancel():
        raise CancelledError()
    for cell, (a, b) in zip(cells, spans):
        if b > a:
            _vertex_bevels(cell, settings, reach[a:b])


def add_bevels(level, settings: BevelSettings | None = None, cancel=None, progress=None) -> dict:
    """Store the beveled tree in a CompiledLevel (bevel_* arrays, plane table grown) and return
    its stats (also merged into level.stats['bevel']).  progress and cancel as for bevel_tree."""
    beveled = bevel_tree(level, level.world_bounds, settings, cancel=cancel, progress=progress)
    level.plane_normals, level.plane_dists = beveled.plane_normals, beveled.plane_dists
    level.bevel_node_plane = beveled.node_plane
    level.bevel_node_children = beveled.node_children
    level.bevel_leaf_solid = beveled.leaf_solid
    level.stats["bevel"] = beveled.stats
    return beveled.stats
