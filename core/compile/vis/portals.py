"""Portals between the empty clusters of the structural tree (the thesis's chapter 3).

Method: the cell portals of Quake's qbsp (MakeTreePortals), run over the structural tree only.
The root's cell is the world box, bounded by six portals to the outside.  At each structural node
(top down): the node's plane, as a square larger than the world, is clipped by the planes of the
portals bounding the node's cell, which gives the node's cross-section: a new portal between its
front and back child; then every portal bounding the node is split by the node's plane and its
pieces handed to the child on their side.  When no structural node is left, every cell (a
structural leaf, or the root of a detail subtree: detail never makes portals) is bounded exactly
by its portals, which tile its boundary.  This is the thesis's PLACE-PORTALS (a node's plane
polygon pushed down both sides) without its re-pushing from the root: a portal is split only by
the nodes it bounds, so it is never cut more than needed.

Portals whose two cells are empty clusters are kept; so are the *void portals* between an empty
cluster and the outside of the world box, which the leak flood starts from.  Portals touching a
solid cell (structurally solid, or a structural cell wholly inside detail brushes) are dropped.

Batching: the tree is processed one depth level at a time, every node of a level at once.  A
portal may bound two nodes of the same level (the two children of one parent), so the splits run
in two passes, side 0 then side 1; a node's cross-section is clipped in rounds, the k-th
distinct bounding plane of every node in one split_polygons call, which only gets the polygons
the plane cuts (one wholly on a side goes there as it is: split_polygons' own early answer).
Portals whose two sides are both final cells leave the working set.

Layout of the working set: padded polygons verts (M, W, 3) with counts (M,), each portal's plane
(normal, dist, plane id: a plane-table index, or -1 - k for the world box's face k), and its two
sides as tree codes (node n >= 0, leaf -1 - l, OUTSIDE for the outside).  A portal's side 0 lies
in front of its plane (n.x - d > 0), side 1 behind.  Vertices run counter-clockwise seen from the
front.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ... import kernels
from ...detmath import dot, norm
from ...errors import CancelledError
from ...geometry import cross3
from ..split_c import split_polygons
from . import cell_portals_c
from ...runtime.level import POINT_HULL_BIT, CompiledLevel
from ...tolerances import MIN_EDGE_LENGTH, MIN_POLYGON_AREA, PORTAL_EPSILON


@dataclass
class Portals:
    """The portals of a level's structural tree, as flat arrays.

    Portals [0, num_inner) join two empty clusters; portals [num_inner, P) are void portals, which
    join an empty cluster (clusters[:, 0]) to the outside of the world box (clusters[:, 1] ==
    outside == num_clusters).  Each portal's winding is convex, counter-clockwise seen from the
    front of its plane, and its plane's normal points from clusters[:, 0] into clusters[:, 1];
    inner portals have clusters[:, 0] < clusters[:, 1].  plane is an index into the level's plane
    table (its flip is plane ^ 1), or -1 for a void portal (the world box's faces are not in the
    table); normals and dists hold every portal's plane either way.
    """

    clusters: np.ndarray  # (P, 2) int32
    plane: np.ndarray  # (P,) int32, -1 for void portals
    normals: np.ndarray  # (P, 3) float64
    dists: np.ndarray  # (P,) float64
    first_vertex: np.ndarray  # (P,) int32 into vertices
    num_vertices: np.ndarray  # (P,) int32
    vertices: np.ndarray  # (V, 3) float64
    num_clusters: int
    num_inner: int
    #: (L,) int32: the dense cluster of each empty leaf, -1 for solid leaves
    cluster_of_leaf: np.ndarray
    #: (K,) int32: the dense cluster of each of the level's clusters (level.leaf_cluster values),
    #: -1 for solid ones (structurally solid, or wholly inside detail brushes)
    cluster_of_level_cluster: np.ndarray
    stats: dict = field(default_factory=dict)

    @property
    def outside(self) -> int:
        """The cluster id standing for the outside of the world box (in void portals only)."""
        return self.num_clusters

    @property
    def num_portals(self) -> int:
        return int(len(self.plane))

    def winding(self, i: int) -> np.ndarray:
        first = int(self.first_vertex[i])
        return self.vertices[first : first + int(self.num_vertices[i])]

    def centres(self) -> np.ndarray:
        """(P, 3) the mean of each winding's vertices (a point inside the portal)."""
        owner = np.repeat(np.arange(self.num_portals), self.num_vertices)
        sums = np.zeros((self.num_portals, 3))
        np.add.at(sums, owner, self.vertices)
        return sums / np.maximum(self.num_vertices, 1)[:, None]

    def areas(self) -> np.ndarray:
        """(P,) each portal's area in square metres."""
        verts, counts = _padded(self.vertices, self.first_vertex, self.num_vertices)
        return polygon_areas(verts, counts)


#: a portal side standing for the outside of the world box (no leaf has this code)
def _outside_code(level: CompiledLevel) -> int:
    return -1 - level.num_leaves


@dataclass
class _Cells:
    """What the structural tree is made of: which nodes are structural (their subtree holds more
    than one cluster), the level cluster of every cell code, and which clusters are empty."""

    structural: np.ndarray  # (N,) bool
    node_cluster: np.ndarray  # (N,) int64: the cluster of a non-structural node's subtree
    cluster_empty: np.ndarray  # (K,) bool

    def cluster_of_code(self, level: CompiledLevel, codes: np.ndarray) -> np.ndarray:
        """Level cluster of each cell code (-1 for the outside)."""
        codes = np.asarray(codes, dtype=np.int64)
        out = np.full(len(codes), -1, dtype=np.int64)
        node = codes >= 0
        out[node] = self.node_cluster[codes[node]]
        leaf = (codes < 0) & (codes > _outside_code(level))
        out[leaf] = level.leaf_cluster[-1 - codes[leaf]]
        return out


def structural_cells(level: CompiledLevel) -> _Cells:
    """Structural nodes are those whose subtree holds two or more clusters (a detail subtree holds
    one: the structural leaf it was built in).  Nodes are numbered in preorder, so children come
    after their parent and one reversed pass gives every subtree's smallest and largest cluster."""
    n = level.num_nodes
    lo = np.zeros(n, dtype=np.int64)
    hi = np.zeros(n, dtype=np.int64)
    children = level.node_children.tolist()
    cluster = level.leaf_cluster.tolist()
    lo_l, hi_l = [0] * n, [0] * n
    for i in range(n - 1, -1, -1):
        a, b = children[i]
        la, ha = (lo_l[a], hi_l[a]) if a >= 0 else (cluster[-1 - a], cluster[-1 - a])
        lb, hb = (lo_l[b], hi_l[b]) if b >= 0 else (cluster[-1 - b], cluster[-1 - b])
        lo_l[i], hi_l[i] = min(la, lb), max(ha, hb)
    lo[:], hi[:] = lo_l, hi_l
    k = int(level.leaf_cluster.max()) + 1 if level.num_leaves else 0
    empty = np.zeros(k, dtype=bool)
    empty[level.leaf_cluster[(level.leaf_solid & POINT_HULL_BIT) == 0]] = True
    return _Cells(structural=lo != hi, node_cluster=lo, cluster_empty=empty)


def build_portals(level: CompiledLevel, progress=None, cancel=None) -> Portals:
    """The portals between the empty clusters of the level's structural tree, and the void
    portals to the outside of its world box.

    progress(fraction, message) is called once per tree level; cancel() returning True stops the
    work with CancelledError.  Clusters are numbered 0..C-1 in order of their first leaf.
    """
    cells = structural_cells(level)
    raw = cell_portals(level, cells, progress=progress, cancel=cancel)
    return _cluster_portals(level, cells, raw)


# --------------------------------------------------------------------------------------------
# Cell portals (qbsp's MakeTreePortals, batched by tree level)


@dataclass
class CellPortals:
    """Every portal of every structural cell, solid ones included (working-set layout)."""

    verts: np.ndarray  # (M, W, 3)
    counts: np.ndarray  # (M,)
    normals: np.ndarray  # (M, 3)
    dists: np.ndarray  # (M,)
    plane_id: np.ndarray  # (M,) plane-table index, or -1 - k for world box face k
    sides: np.ndarray  # (M, 2) cell codes: side 0 in front of the plane, side 1 behind

    def __len__(self) -> int:
        return len(self.counts)

    def take(self, idx) -> "CellPortals":
        return CellPortals(self.verts[idx], self.counts[idx], self.normals[idx], self.dists[idx], self.plane_id[idx],
                           self.sides[idx])

    @staticmethod
    def join(parts: list["CellPortals"]) -> "CellPortals":
        parts = [p for p in parts if len(p)]
        if not parts:
            return CellPortals(np.zeros((0, 3, 3)), np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros(0),
                               np.zeros(0, np.int64), np.zeros((0, 2), np.int64))
        width = max(p.verts.shape[1] for p in parts)
        return CellPortals(np.concatenate([_widen(p.verts, width) for p in parts]),
                           np.concatenate([p.counts for p in parts]), np.concatenate([p.normals for p in parts]),
                           np.concatenate([p.dists for p in parts]), np.concatenate([p.plane_id for p in parts]),
                           np.concatenate([p.sides for p in parts]))


def cell_portals(level: CompiledLevel, cells: _Cells | None = None, progress=None, cancel=None) -> CellPortals:
    """The portals bounding every structural cell (qbsp's MakeTreePortals over the structural
    nodes, one depth level at a time); both sides of each are cells or the outside."""
    cells = structural_cells(level) if cells is None else cells
    box = np.asarray(level.world_bounds, dtype=np.float64)
    work = _box_portals(box, level.root, _outside_code(level))
    if kernels.resolve(cell_portals_c.BINDING) == "c" and cell_portals_c.is_tree(level):  # the same portals
        return CellPortals(*cell_portals_c.cell_portals(level, cells.structural, node_squares(level, box, cells),
                                                        work, progress, cancel))
    finished: list[CellPortals] = []
    active = np.array([level.root] if level.root >= 0 and cells.structural[level.root] else [], dtype=np.int64)
    total = max(1, int(cells.structural.sum()))
    done = 0
    children = level.node_children.astype(np.int64)
    while len(active):
        if cancel is not None and cancel():
            raise CancelledError()
        is_active = np.zeros(level.num_nodes, dtype=bool)
        is_active[active] = True
        new = _cross_sections(level, active, work, is_active, box)
        for side in (0, 1):
            work = _split_by_nodes(level, work, side, is_active, children)
        work = CellPortals.join([work, new])
        final = _is_final(work.sides, cells.structural)
        finished.append(work.take(final[:, 0] & final[:, 1]))
        work = work.take(~(final[:, 0] & final[:, 1]))
        done += len(active)
        nxt = children[active].ravel()
        nxt = nxt[nxt >= 0]
        active = nxt[cells.structural[nxt]]
        if progress is not None:
            progress(min(1.0, done / total), f"{done} of {total} structural nodes")
    finished.append(work)
    return CellPortals.join(finished)


def node_squares(level: CompiledLevel, box: np.ndarray, cells: _Cells) -> np.ndarray:
    """(N, 4, 3) each structural node's plane's square over the world box, as _cross_sections
    starts from (zeros for the others, which make no cross-section)."""
    out = np.zeros((level.num_nodes, 4, 3))
    nodes = np.flatnonzero(cells.structural)
    if len(nodes):
        plane = level.node_plane[nodes].astype(np.int64)
        out[nodes] = _base_squares(level.plane_normals[plane], level.plane_dists[plane], box)
    return out


def _is_final(sides: np.ndarray, structural: np.ndarray) -> np.ndarray:
    """(M, 2) bool: the side is a cell (leaf, detail subtree or outside), not a structural node."""
    node = sides >= 0
    out = ~node
    out[node] = ~structural[sides[node]]
    return out


def _box_portals(box: np.ndarray, root: int, outside: int) -> CellPortals:
    """The world box's six faces as portals between the root (in front: normals point inward)
    and the outside."""
    lo, hi = box
    normals, dists, verts = [], [], []
    for axis in range(3):
        for sign in (1.0, -1.0):
            n = np.zeros(3)
            n[axis] = sign
            d = sign * (lo[axis] if sign > 0 else hi[axis])
            u, v = (axis + 1) % 3, (axis + 2) % 3
            quad = []
            for a, b in ((0, 0), (1, 0), (1, 1), (0, 1)):
                p = np.zeros(3)
                p[axis] = d * sign
                p[u] = box[a, u]
                p[v] = box[b, v]
                quad.append(p)
            quad = np.array(quad)
            if sign < 0:
                quad = quad[::-1]  # counter-clockwise seen from the front (the inside)
            normals.append(n)
            dists.append(d)
            verts.append(quad)
    sides = np.array([[root, outside]] * 6, dtype=np.int64)
    return CellPortals(np.array(verts), np.full(6, 4, np.int64), np.array(normals), np.array(dists),
                       -1 - np.arange(6, dtype=np.int64), sides)


def _cross_sections(level: CompiledLevel, active: np.ndarray, work: CellPortals, is_active: np.ndarray,
                    box: np.ndarray) -> CellPortals:
    """Each active node's plane clipped to its cell: a square larger than the world, clipped in
    rounds by the distinct planes of the portals bounding the node (keeping the node's side).
    Returns the new portals, front child on side 0."""
    slot = np.full(level.num_nodes, -1, dtype=np.int64)
    slot[active] = np.arange(len(active))
    plane = level.node_plane[active].astype(np.int64)
    n, d = level.plane_normals[plane], level.plane_dists[plane]
    verts = _base_squares(n, d, box)
    counts = np.full(len(active), 4, dtype=np.int64)
    # incidences (node slot, keep-behind plane): a node on side 0 lies in front, so flip the plane
    rows, keep_n, keep_d, key = [], [], [], []
    for side, sign in ((0, -1.0), (1, 1.0)):
        s = work.sides[:, side]
        hit = np.flatnonzero(s >= 0)
        hit = hit[is_active[s[hit]]]
        rows.append(slot[s[hit]])
        keep_n.append(sign * work.normals[hit])
        keep_d.append(sign * work.dists[hit])
        key.append(2 * work.plane_id[hit] + side)
    rows, keep_n, keep_d, key = map(np.concatenate, (rows, keep_n, keep_d, key))
    if len(rows):
        # one clip per distinct (node, plane, side); rounds: the r-th distinct plane of each node
        # (node, key) pairs as one integer (keys run from -12 up): the same first occurrences as
        # np.unique over the pairs' rows, without sorting them as structured records
        span = int(key.max()) + 13
        _, first = np.unique(rows * span + (key + 12), return_index=True)
        first = np.sort(first)
        order = first[np.lexsort((first, rows[first]))]
        r = rows[order]
        start = np.searchsorted(r, r, side="left")
        rank = np.arange(len(r)) - start
        for k in range(int(rank.max()) + 1):
            pick = order[rank == k]
            tgt = rows[pick]
            cn, cd = keep_n[pick], keep_d[pick]
            dist = dot(verts[tgt], cn[:, None, :]) - cd[:, None]
            whole_front, whole_back = _whole_sides(dist, counts[tgt])
            counts[tgt[whole_front]] = 0  # nothing behind the plane; wholly behind: left as is
            cut = ~(whole_front | whole_back)
            if cut.any():
                tgt, cn, cd = tgt[cut], cn[cut], cd[cut]
                _, _, back, nb = split_polygons(verts[tgt], counts[tgt], dist[cut], cn, cd, eps=PORTAL_EPSILON)
                width = max(verts.shape[1], back.shape[1])
                verts = _widen(verts, width)
                verts[tgt] = _widen(back, width)
                counts[tgt] = nb
    keep = counts >= 3
    act = active[keep]
    sides = level.node_children[act].astype(np.int64)
    return CellPortals(verts[keep], counts[keep], n[keep], d[keep], plane[keep], sides)


def _split_by_nodes(level: CompiledLevel, work: CellPortals, side: int, is_active: np.ndarray,
                    children: np.ndarray) -> CellPortals:
    """Split every portal whose `side` is an active node by that node's plane; each piece's side
    becomes the child it lies in."""
    s = work.sides[:, side]
    idx = np.flatnonzero(s >= 0)
    idx = idx[is_active[s[idx]]]
    if not len(idx):
        return work
    nodes = s[idx]
    plane = level.node_plane[nodes].astype(np.int64)
    n, d = level.plane_normals[plane], level.plane_dists[plane]
    dist = dot(work.verts[idx], n[:, None, :]) - d[:, None]
    counts = work.counts[idx]
    valid = np.arange(work.verts.shape[1]) < counts[:, None]
    on = np.where(valid, np.abs(dist), 0.0).max(axis=1) <= PORTAL_EPSILON
    whole_front, whole_back = _whole_sides(dist, counts)
    if on.any():  # a portal on the node's plane: it bounds the child its cell lies in
        into = dot(work.normals[idx[on]], n[on]) * (1.0 if side == 0 else -1.0) > 0
        to_back = np.flatnonzero(on)[~into]
        whole_front[to_back] = False
        whole_back[to_back] = True
    # split_polygons only where the plane cuts: a portal wholly on one side goes there as it is
    nf = np.where(whole_front, counts, 0)
    nb = np.where(whole_back, counts, 0)
    cut = np.flatnonzero(~(whole_front | whole_back))
    front = back = None
    if len(cut):
        front, nf[cut], back, nb[cut] = split_polygons(work.verts[idx[cut]], counts[cut], dist[cut], n[cut], d[cut],
                                                       eps=PORTAL_EPSILON)
    nf[nf < 3] = 0
    nb[nb < 3] = 0
    parts = [work.take(np.setdiff1d(np.arange(len(work)), idx))]
    for pieces, cnt, child in ((front, nf, 0), (back, nb, 1)):
        got = np.flatnonzero(cnt >= 3)
        piece = work.take(idx[got])
        if len(cut):
            at = np.searchsorted(cut, got)
            was_cut = (at < len(cut)) & (cut[np.minimum(at, len(cut) - 1)] == got)
            piece.verts = _widen(piece.verts, pieces.shape[1])
            piece.verts[was_cut] = _widen(pieces[at[was_cut]], piece.verts.shape[1])
        piece.counts = cnt[got]
        piece.sides = piece.sides.copy()
        piece.sides[:, side] = children[nodes[got], child]
        parts.append(piece)
    return CellPortals.join(parts)


def _whole_sides(dist: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """split_polygons' early answers for each polygon: (whole in front, whole behind), the plane
    cutting neither (every vertex at least -PORTAL_EPSILON, or else at most PORTAL_EPSILON)."""
    valid = np.arange(dist.shape[1]) < counts[:, None]
    lo = np.where(valid, dist, np.inf).min(axis=1)
    hi = np.where(valid, dist, -np.inf).max(axis=1)
    whole_front = lo >= -PORTAL_EPSILON
    return whole_front, ~whole_front & (hi <= PORTAL_EPSILON)


def _base_squares(n: np.ndarray, d: np.ndarray, box: np.ndarray) -> np.ndarray:
    """(M, 4, 3) squares on planes (n, d) covering the box, counter-clockwise seen from the front
    (as geometry.base_polygon makes them)."""
    centre = box.mean(axis=0)
    half = 2.0 * float(norm(box[1] - box[0])) + 1.0
    axis = np.argmax(np.abs(n), axis=1)
    up = np.where((axis == 2)[:, None], np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0]))
    right = cross3(up, n)
    right = right / norm(right, axis=1, keepdims=True)
    up = cross3(n, right)
    foot = centre[None, :] - (dot(n, centre[None, :]) - d)[:, None] * n
    r, u = right * half, up * half
    return np.stack([foot - r - u, foot + r - u, foot + r + u, foot - r + u], axis=1)


def _widen(verts: np.ndarray, width: int) -> np.ndarray:
    if verts.shape[1] >= width:
        return verts
    out = np.zeros((len(verts), width, 3))
    out[:, : verts.shape[1]] = verts
    return out


def _padded(vertices: np.ndarray, first: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    width = int(counts.max()) if len(counts) else 3
    slot = np.arange(width)
    idx = np.minimum(first[:, None] + slot, max(len(vertices) - 1, 0))
    out = vertices[idx] if len(vertices) else np.zeros((len(counts), width, 3))
    return np.where((slot < counts[:, None])[:, :, None], out, 0.0), counts.astype(np.int64)


def _without_short_edges(verts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Drop each vertex closer than MIN_EDGE_LENGTH to the one before it (cutting with
    PORTAL_EPSILON leaves such near-duplicates where a plane passes a hair from a vertex); a
    winding left with fewer than three vertices gets count 0."""
    if not len(counts):
        return verts, counts
    slot = np.arange(verts.shape[1])
    valid = slot < counts[:, None]
    prev = np.where(slot > 0, slot - 1, np.maximum(counts[:, None] - 1, 0))
    step = verts - np.take_along_axis(verts, prev[:, :, None], axis=1)
    keep = valid & (norm(step, axis=2) >= MIN_EDGE_LENGTH)
    if keep.sum() == valid.sum():
        return verts, counts
    n = keep.sum(axis=1)
    out = np.zeros_like(verts)
    rows, cols = np.nonzero(keep)
    out[rows, np.cumsum(keep, axis=1)[rows, cols] - 1] = verts[rows, cols]
    return out, np.where(n >= 3, n, 0)


def _width_classes(counts: np.ndarray, width: int) -> list[tuple[np.ndarray, int]]:
    """Rows of padded polygons grouped by vertex count: (rows, width) for counts up to 4, up to 8,
    and the rest at the full width (most portals have four vertices, the widest a dozen)."""
    out, lo = [], -1
    for hi in (4, 8, width):
        if hi <= lo:
            continue
        rows = np.flatnonzero((counts > lo) & (counts <= hi)) if hi < width else np.flatnonzero(counts > lo)
        if len(rows):
            out.append((rows, min(hi, width)))
        lo = hi
    return out


def polygon_areas(verts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(M,) areas of padded convex polygons (Newell: half the length of the summed edge crosses)."""
    if not len(counts):
        return np.zeros(0)
    width = verts.shape[1]
    slot = np.arange(width)
    nxt = np.where(slot + 1 < counts[:, None], slot + 1, 0)
    q = np.take_along_axis(verts, nxt[:, :, None], axis=1)
    c = cross3(verts, q) * (slot < counts[:, None])[:, :, None]
    total = c[:, 0]
    for k in range(1, width):
        total = total + c[:, k]
    return 0.5 * norm(total, axis=1)


# --------------------------------------------------------------------------------------------
# From cell portals to cluster portals


@dataclass
class _Kept:
    """The cell portals that join two empty clusters or one and the outside (rows idx of the raw
    ones, short edges dropped), and the dense numbering of the clusters."""

    idx: np.ndarray  # (P,) rows of the raw cell portals
    verts: np.ndarray  # (P, W, 3)
    counts: np.ndarray  # (P,)
    dc: np.ndarray  # (M, 2) each raw portal's sides' dense clusters (-1: solid; num_clusters: outside)
    dense: np.ndarray  # (K,) the dense cluster of each level cluster, -1 for solid ones
    num_clusters: int
    cluster_of_leaf: np.ndarray  # (L,) int64


def _kept_portals(level: CompiledLevel, cells: _Cells, raw: CellPortals) -> _Kept:
    """Keep the portals between empty clusters and to the outside, with an area; number clusters
    densely in order of their first leaf."""
    outside_code = _outside_code(level)
    sides = raw.sides
    dense = np.full(len(cells.cluster_empty), -1, dtype=np.int64)
    leaf_cl = level.leaf_cluster.astype(np.int64)
    empty_leaf = cells.cluster_empty[leaf_cl] if len(leaf_cl) else np.zeros(0, bool)
    seen = leaf_cl[empty_leaf]
    uniq, first = np.unique(seen, return_index=True)
    order = uniq[np.argsort(first, kind="stable")]
    dense[order] = np.arange(len(order))
    num_clusters = len(order)
    cl = np.stack([cells.cluster_of_code(level, sides[:, 0]), cells.cluster_of_code(level, sides[:, 1])], axis=1)
    dc = np.where(cl >= 0, dense[np.maximum(cl, 0)], -1)
    is_out = sides == outside_code
    dc[is_out] = num_clusters
    # short edges dropped and areas measured only where the clusters are kept, each polygon at
    # the width of its class of vertex counts (a row's values do not depend on the padding)
    idx = np.flatnonzero(np.all(dc >= 0, axis=1) & ~np.all(is_out, axis=1))
    verts, counts = raw.verts[idx], raw.counts[idx]
    areas = np.zeros(len(idx))
    for rows, width in _width_classes(counts, verts.shape[1]):
        v, c = _without_short_edges(verts[rows, :width], counts[rows])
        verts[rows, :width], counts[rows] = v, c
        areas[rows] = polygon_areas(v, c)
    keep = areas > MIN_POLYGON_AREA
    cluster_of_leaf = np.where(empty_leaf & ((level.leaf_solid & POINT_HULL_BIT) == 0), dense[leaf_cl], -1)
    return _Kept(idx[keep], verts[keep], counts[keep], dc, dense, num_clusters, cluster_of_leaf)


@dataclass
class PortalLinks:
    """Which clusters the portals join, without their windings: all a flood needs."""

    clusters: np.ndarray  # (P, 2) int64, in either order; the outside is num_clusters
    cluster_of_leaf: np.ndarray  # (L,) int64, as Portals'
    num_clusters: int

    @property
    def num_portals(self) -> int:
        return int(len(self.clusters))


def portal_links(level: CompiledLevel, cancel=None) -> PortalLinks:
    """build_portals' cluster pairs (the same portals, as a set), without orienting, sorting or
    packing their windings (the outside fill floods the onion tree's leaves over them)."""
    cells = structural_cells(level)
    kept = _kept_portals(level, cells, cell_portals(level, cells, cancel=cancel))
    return PortalLinks(kept.dc[kept.idx][:, ::-1], kept.cluster_of_leaf, kept.num_clusters)


def _cluster_portals(level: CompiledLevel, cells: _Cells, raw: CellPortals) -> Portals:
    """The kept portals (_kept_portals), oriented and sorted: inner portals by cluster pair, then
    void ones."""
    kept = _kept_portals(level, cells, raw)
    idx, verts, counts, dc, num_clusters = kept.idx, kept.verts, kept.counts, kept.dc, kept.num_clusters
    # side 0 is in front: the normal points from side 1 into side 0, so clusters = (side 1, side 0)
    c0, c1 = dc[idx, 1], dc[idx, 0]
    flip = c0 > c1  # inner: smaller cluster first; void: the outside (num_clusters) second
    a, b = np.where(flip, c1, c0), np.where(flip, c0, c1)
    sign = np.where(flip, -1.0, 1.0)
    normals = raw.normals[idx] * sign[:, None]
    dists = raw.dists[idx] * sign
    pid = raw.plane_id[idx]
    plane = np.where(pid >= 0, np.where(flip, pid ^ 1, pid), -1)
    slot = np.arange(verts.shape[1])
    rev = np.where(flip[:, None], (counts[:, None] - 1 - slot) % np.maximum(counts[:, None], 1), slot)
    verts = np.take_along_axis(verts, rev[:, :, None], axis=1)
    void = b == num_clusters
    order = np.lexsort((np.arange(len(idx)), b, a, void))
    a, b, normals, dists, plane, counts, verts = (x[order] for x in (a, b, normals, dists, plane, counts, verts))
    flat = verts[slot[None, :] < counts[:, None]]
    first_vertex = np.zeros(len(counts), dtype=np.int32)
    if len(counts):
        np.cumsum(counts[:-1], out=first_vertex[1:])
    num_inner = int(np.count_nonzero(~void))
    return Portals(
        clusters=np.stack([a, b], axis=1).astype(np.int32).reshape(-1, 2),
        plane=plane.astype(np.int32),
        normals=normals.reshape(-1, 3),
        dists=dists,
        first_vertex=first_vertex,
        num_vertices=counts.astype(np.int32),
        vertices=flat.reshape(-1, 3),
        num_clusters=num_clusters,
        num_inner=num_inner,
        cluster_of_leaf=kept.cluster_of_leaf.astype(np.int32),
        cluster_of_level_cluster=kept.dense.astype(np.int32),
        stats={"portals": num_inner, "void_portals": len(counts) - num_inner, "clusters": num_clusters,
               "cell_portals": len(raw)},
    )
