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
from ..geometry import order_polygon_vertices, snap_normals, split_polygon
from ..runtime.level import POINT_HULL_BIT
from ..runtime.tree import Tree
from ..tolerances import MIN_EDGE_LENGTH, ON_EPSILON

#: unitless. A cell face whose outward normal has z >= this 'tops' the cell (about 18 degrees
#: from level), so section 8's flat-top plane is not needed there.
FLAT_TOP_LEVEL_Z = 0.95

#: m. The world box used for unbounded cells is the level's world bounds grown by this much, so
#: no real face of a solid cell lies on it.
CELL_BOX_MARGIN = 1.0

#: An edge gap wider than the bevel angle is cut into at most this many equal parts (only angles
#: below 180 / MAX_EDGE_PARTS degrees are limited by it).
MAX_EDGE_PARTS = 8


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


def _box_polytope(lo: np.ndarray, hi: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """The box as faces (tag, polygon), tags -1..-6 (box faces are not tree planes)."""
    x0, y0, z0 = lo
    x1, y1, z1 = hi
    c = np.array([[x0, y0, z0], [x1, y0, z0], [x1, y1, z0], [x0, y1, z0],
                  [x0, y0, z1], [x1, y0, z1], [x1, y1, z1], [x0, y1, z1]])
    quads = [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (2, 3, 7, 6), (1, 2, 6, 5), (0, 4, 7, 3)]
    return [(-1 - k, c[list(q)]) for k, q in enumerate(quads)]


def _split_polytope(faces, n: np.ndarray, d: float, plane: int):
    """(front, back) polytopes of a convex polytope cut by plane index `plane` (n.x = d).

    Each is a list of (outward plane tag, polygon) or None when empty.  A polytope within
    ON_EPSILON of one side goes wholly to that side (the other gets nothing: a zero-volume cell).
    """
    dists = [matmul(f[1], n) - d for f in faces]
    lo = min(float(x.min()) for x in dists)
    hi = max(float(x.max()) for x in dists)
    if lo >= -ON_EPSILON:
        return faces, None
    if hi <= ON_EPSILON:
        return None, faces
    front, back, cut = [], [], []
    for (tag, verts), dist in zip(faces, dists):
        f, b = split_polygon(verts, n, d, dist=dist)
        if f is not None:
            front.append((tag, f))
        if b is not None:
            back.append((tag, b))
        on = np.abs(dist) <= ON_EPSILON
        if on.any():
            cut.append(verts[on])
        if f is not None and b is not None:
            cut.append(f[np.abs(matmul(f, n) - d) <= ON_EPSILON])
    pts = _unique_points(np.concatenate(cut)) if cut else np.zeros((0, 3))
    if len(pts) >= 3:
        back.append((plane, order_polygon_vertices(pts, n)))  # back cell: outward normal +n
        front.append((plane ^ 1, order_polygon_vertices(pts, -n)))  # front cell: outward -n
    return (front if len(front) >= 4 else None), (back if len(back) >= 4 else None)


def _unique_points(p: np.ndarray, grid: float = MIN_EDGE_LENGTH) -> np.ndarray:
    _, first = np.unique(np.round(p / grid).astype(np.int64), axis=0, return_index=True)
    return p[np.sort(first)]


def solid_cells(tree, bounds, chains: bool = False):
    """Yield (leaf, faces) for every solid (bit 0) leaf: faces is a list of (outward plane tag,
    polygon) of the leaf's convex cell within `bounds` grown by CELL_BOX_MARGIN; tags < 0 are
    box faces.  Leaves whose cell is empty (zero volume) are skipped.  With chains=True, yield
    (leaf, faces, chain) where chain lists the ancestors' planes, root first, each oriented
    outward from the leaf (plane p on a back path, p ^ 1 on a front path): plane shifting clips
    with all of them, faces of the cell or not."""
    lo = np.asarray(bounds[0], float) - CELL_BOX_MARGIN
    hi = np.asarray(bounds[1], float) + CELL_BOX_MARGIN
    normals, dists = tree.plane_normals, tree.plane_dists
    planes = np.asarray(tree.node_plane).tolist()
    children = np.asarray(tree.node_children).tolist()
    solid = (np.asarray(tree.leaf_solid) & 1).tolist()
    stack = [(tree.root, _box_polytope(lo, hi), ())]
    while stack:
        code, faces, chain = stack.pop()
        if code < 0:
            if solid[-1 - code]:
                yield (-1 - code, faces, list(chain)) if chains else (-1 - code, faces)
            continue
        p = planes[code]
        front, back = _split_polytope(faces, normals[p], float(dists[p]), p)
        if back is not None:
            stack.append((children[code][1], back, chain + (p,)))
        if front is not None:
            stack.append((children[code][0], front, chain + (p ^ 1,)))


# --------------------------------------------------------------------------------------------
# Bevel planes of one cell


def cell_bevels(faces, normals: np.ndarray, dists: np.ndarray, settings: BevelSettings, chain=()) -> dict:
    """Bevel planes of one solid cell: {'edge'|'vertex'|'axial'|'flat_top': [(normal, dist), ...]},
    each an outward plane touching the cell with the whole cell behind it.

    `chain` (plane indices, outward) are the leaf's ancestors' planes.  Plane shifting clips with
    every one of them, so those that touch the cell count like faces: a bevel equal to one of them
    is not made, and they count among the planes at an edge or a vertex.  Order: axial planes (or
    the flat top) first, then edges, then vertices, each kind seeing the planes chosen before it:

    - an edge gets bevels only where two *adjacent* planes through it (faces, touching ancestors,
      bevels already chosen, sorted by angle around the edge) differ by more than the angle, the
      criterion of Melax's section 8 ('at most a 95-degree difference in adjacent planes'); each
      such gap is cut into equal parts of at most the angle (at most MAX_EDGE_PARTS), so an axial
      bevel that already splits a sharp edge into square ones makes the halfway bevel unneeded;
    - a vertex gets a bevel when the corner of the planes through it (faces, touching ancestors,
      bevels) reaches too far.
    """
    out: dict = {"edge": [], "vertex": [], "axial": [], "flat_top": []}
    tags = np.array([t for t, _ in faces])
    real = tags >= 0
    fn = np.array([normals[t] if t >= 0 else np.zeros(3) for t in tags])
    fd = np.array([dists[t] if t >= 0 else 0.0 for t in tags])
    verts = _unique_points(np.concatenate([v for _, v in faces]))
    box_lo = np.min(np.concatenate([v for t, v in faces if t < 0]), axis=0) if (~real).any() else None
    box_hi = np.max(np.concatenate([v for t, v in faces if t < 0]), axis=0) if (~real).any() else None
    on = np.zeros((len(verts), len(faces)), bool)
    for k, (t, v) in enumerate(faces):
        if t >= 0:
            on[:, k] = np.abs(matmul(verts, fn[k]) - fd[k]) <= 2 * ON_EPSILON
    on_box = np.zeros(len(verts), bool)
    if box_lo is not None:
        on_box = np.any(np.abs(verts - box_lo) <= ON_EPSILON, axis=1) | np.any(np.abs(verts - box_hi) <= ON_EPSILON, axis=1)
    # the planes plane shifting clips this cell with that touch it: real faces, then ancestors
    face_set = {int(t) for t in tags[real]}
    extra = sorted({int(p) for p in chain} - face_set)
    if extra:
        cn_, cd_ = normals[extra], dists[extra]
        touching = np.any(np.abs(matmul(verts, cn_.T) - cd_) <= 2 * ON_EPSILON, axis=0)
        an, ad = cn_[touching], cd_[touching]
    else:
        an, ad = np.zeros((0, 3)), np.zeros(0)
    planes_n = [n for n in fn[real]] + list(an)  # every plane at the cell: faces, ancestors, bevels
    planes_d = [float(d) for d in fd[real]] + [float(d) for d in ad]

    def present(n, d) -> bool:
        """The plane is one of the cell's planes already, or a face has its normal."""
        same = np.all(np.abs(np.array(planes_n).reshape(-1, 3) - n) < 1e-7, axis=1)
        if np.any(same & (np.abs(np.array(planes_d) - d) < ON_EPSILON)):
            return True
        return bool(np.any(real & np.all(np.abs(fn - n) < 1e-7, axis=1)))

    def add(kind, n, d):
        if present(n, d):
            return
        planes_n.append(n)
        planes_d.append(d)
        out[kind].append((n, d))

    def through(points) -> np.ndarray:
        """Normals of the planes (faces, touching ancestors, bevels) through all these points."""
        pn, pd = np.array(planes_n).reshape(-1, 3), np.array(planes_d)
        hit = np.all(np.abs(matmul(points, pn.T) - pd) <= 2 * ON_EPSILON, axis=0)
        return pn[hit]

    # axial planes, or the flat top (section 8) when axial planes are off
    if settings.axial or settings.flat_top:
        topped = bool(np.any(real & (fn[:, 2] >= FLAT_TOP_LEVEL_Z)))
        for axis in range(3):
            for sign in (1.0, -1.0):
                kind = "axial" if settings.axial else ("flat_top" if (axis, sign) == (2, 1.0) and not topped else None)
                if kind is None:
                    continue
                a = np.zeros(3)
                a[axis] = sign
                proj = matmul(verts, a)
                d = float(proj.max())
                if on_box[proj >= d - ON_EPSILON].any():
                    continue  # the cell reaches the world box that way: nothing to cap
                add(kind, a, d)

    # edges: two real faces sharing at least two vertices a real distance apart
    limit = math.radians(settings.angle)
    cos_edge = math.cos(limit)
    ri = np.flatnonzero(real)
    share = matmul(on[:, ri].T.astype(np.int32), on[:, ri].astype(np.int32))
    for a, b in zip(*np.nonzero(np.triu(share >= 2, 1))):
        fa, fb = ri[a], ri[b]
        if matmul(fn[fa], fn[fb]) >= cos_edge - 1e-9:  # 'more than' the angle: square edges stay at 90
            continue
        ev = verts[on[:, fa] & on[:, fb]]
        if np.ptp(ev, axis=0).max() < MIN_EDGE_LENGTH:
            continue
        u = fn[fa]
        w = fn[fb] - (matmul(fn[fb], u)) * u
        length = float(norm(w))
        if length < 1e-9:
            continue  # a zero-thickness sliver: the faces are opposite
        w = w / length
        span = math.atan2(float(matmul(fn[fb], w)), float(matmul(fn[fb], u)))
        at = through(ev)
        angles = np.clip(np.arctan2(matmul(at, w), matmul(at, u)), 0.0, span)
        angles = np.unique(np.concatenate([[0.0, span], angles]))
        for lo_, hi_ in zip(angles[:-1], angles[1:]):
            gap = float(hi_ - lo_)
            if math.cos(gap) >= cos_edge - 1e-9:
                continue  # adjacent planes within the angle
            parts = min(MAX_EDGE_PARTS, max(2, math.ceil(gap / max(limit, 1e-9) - 1e-9)))
            for k in range(1, parts):
                phi = lo_ + gap * k / parts
                m = snap_normals((math.cos(phi) * u + math.sin(phi) * w)[None])[0]
                m = m / float(norm(m))
                add("edge", m, float((matmul(verts, m)).max()))

    if settings.vertices:
        reach_limit = 1.0 / math.cos(math.radians(settings.vertex_angle))
        for v in np.flatnonzero(~on_box):
            inc = np.flatnonzero(on[v])
            if len(inc) < 3:
                continue
            if corner_reach(through(verts[v][None])) <= reach_limit:
                continue
            m = fn[inc].sum(axis=0)
            length = float(norm(m))
            if length < 1e-9:
                continue
            m = snap_normals((m / length)[None])[0]
            add("vertex", m, float(matmul(verts[v], m)))
    return out


def corner_reach(normals: np.ndarray) -> float:
    """How far a corner where planes with these outward normals meet reaches when every plane is
    shifted out by 1 (a unit sphere's plane shifting): the largest |x| over the vertices of
    {x : n_i.x <= 1}.  A cube corner reaches sqrt(3); a needle reaches far."""
    n = np.asarray(normals, float)
    k = len(n)
    idx = np.array([(a, b, c) for a in range(k) for b in range(a + 1, k) for c in range(b + 1, k)])
    mats = n[idx]
    ok = np.abs(np.linalg.det(mats)) > 1e-9
    if not ok.any():
        return 1.0
    x = np.linalg.solve(mats[ok], np.ones((int(ok.sum()), 3, 1)))[..., 0]
    x = x[np.all(matmul(x, n.T) <= 1 + 1e-9, axis=1)]
    return float(norm(x, axis=1).max()) if len(x) else 1.0


# --------------------------------------------------------------------------------------------
# The beveled tree


class _PlaneAppender:
    """Adds planes (with flips, canonical member even, as in geometry.PlaneTable) after an
    existing plane table, reusing existing planes equal within tolerance."""

    def __init__(self, normals: np.ndarray, dists: np.ndarray):
        self.normals = [tuple(r) for r in np.asarray(normals).tolist()]
        self.dists = np.asarray(dists).tolist()
        self.index: dict = {}
        for i in range(0, len(self.dists), 2):
            self.index.setdefault(self._key(np.asarray(self.normals[i]), self.dists[i]), i)

    @staticmethod
    def _key(n, d):
        return tuple(np.round(np.asarray(n) * 1e6).astype(np.int64).tolist()) + (int(round(d * 1e4)),)

    def add(self, n: np.ndarray, d: float) -> int:
        axis = int(np.argmax(np.abs(n)))
        canonical = n[axis] > 0
        cn, cd = (n, d) if canonical else (-n, -d)
        key = self._key(cn, cd)
        i = self.index.get(key)
        if i is None or not (np.all(np.abs(np.asarray(self.normals[i]) - cn) < 1e-7) and abs(self.dists[i] - cd) < ON_EPSILON):
            i = len(self.dists)
            self.normals += [tuple(cn), tuple(-cn)]
            self.dists += [float(cd), float(-cd)]
            self.index[key] = i
        return i if canonical else i ^ 1

    def arrays(self):
        return np.array(self.normals, dtype=np.float64).reshape(-1, 3), np.array(self.dists, dtype=np.float64)


def bevel_tree(tree, bounds, settings: BevelSettings | None = None, cancel=None) -> BeveledTree:
    """The beveled solid tree of a point tree (Tree or CompiledLevel; bit 0 = solid).

    bounds: (2, 3) world bounds (level.world_bounds).  Returns a BeveledTree whose plane table
    extends tree's (existing plane indices unchanged) and whose stats count nodes with and without
    bevels and the planes of each kind.
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
    beveled_cells = 0
    if len(node_plane):
        parent = {}
        for node, (f, b) in enumerate(node_children.tolist()):
            if f < 0:
                parent[-1 - f] = (node, 0)
            if b < 0:
                parent[-1 - b] = (node, 1)
        for leaf, faces, chain in solid_cells(tree, bounds, chains=True):
            if cancel is not None and cancel():
                from ..errors import CancelledError

                raise CancelledError()
            found = cell_bevels(faces, normals, dists, settings, chain)
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


def add_bevels(level, settings: BevelSettings | None = None, cancel=None) -> dict:
    """Store the beveled tree in a CompiledLevel (bevel_* arrays, plane table grown) and return
    its stats (also merged into level.stats['bevel'])."""
    beveled = bevel_tree(level, level.world_bounds, settings, cancel=cancel)
    level.plane_normals, level.plane_dists = beveled.plane_normals, beveled.plane_dists
    level.bevel_node_plane = beveled.node_plane
    level.bevel_node_children = beveled.node_children
    level.bevel_leaf_solid = beveled.leaf_solid
    level.stats["bevel"] = beveled.stats
    return beveled.stats
