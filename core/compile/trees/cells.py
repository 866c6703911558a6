"""Leaf cells: the convex polytopes a tree's planes cut from a box, built once for every user.

A node's region is split by its plane into its children's regions; a leaf's region is its *cell*.
:func:`cell_arrays` walks the tree from the box down one depth at a time, splitting every region
at that depth by its node's plane in one pass of array operations, and returns the cells (and
node regions) asked for as arrays in depth-first order; :func:`tree_cells` yields them one by one.
The bevel stage (core/compile/trees/bevel.py) reads the solid leaves' cells; the add-on's overlays
(addon/overlays.py) draw every leaf's cell and the bevel nodes' regions.

A polytope is a list of faces (tag, polygon): the polygon is convex, counter-clockwise seen from
outside, and the tag names the plane it lies on, *outward* from the cell (plane index p, or its
flip p ^ 1; tags -1..-6 are the box's faces, which are not tree planes).

Splitting (:func:`_split_level`) keeps every vertex it can: a face wholly on one side goes there
unchanged, a face cut by the plane is split by geometry.split_polygons (split_polygon bit for
bit; new vertices exactly on axial planes), and the new face on the splitting plane (the *cap*) is
the cut points, one per MIN_EDGE_LENGTH grid cell (the first met), sorted around their centre.  A
polytope within ON_EPSILON of one side goes wholly to that side: the other side is empty (a
zero-volume cell).  The bevel stage's answers depend on these exact floats and orders, so they are
fixed here: each region gets the same floats in the same order as when polytopes were split one
at a time, face by face (tests/core/cells_reference.py keeps that walk; tests/core/test_cells.py
compares the two bit for bit).
"""

from __future__ import annotations

import numpy as np

from ...detmath import arctan2, dot
from ...geometry import cross3
from ..split_c import split_polygons
from ...tolerances import MIN_EDGE_LENGTH, ON_EPSILON

#: the box's faces, outward, as indices into box_polytope's eight corners
BOX_QUADS = ((0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (2, 3, 7, 6), (1, 2, 6, 5), (0, 4, 7, 3))


def box_polytope(lo, hi) -> list[tuple[int, np.ndarray]]:
    """The box [lo, hi] as faces (tag, polygon), tags -1..-6 (box faces are not tree planes)."""
    x0, y0, z0 = np.asarray(lo, dtype=np.float64)
    x1, y1, z1 = np.asarray(hi, dtype=np.float64)
    c = np.array([[x0, y0, z0], [x1, y0, z0], [x1, y1, z0], [x0, y1, z0],
                  [x0, y0, z1], [x1, y0, z1], [x1, y1, z1], [x0, y1, z1]])
    return [(-1 - k, c[list(q)]) for k, q in enumerate(BOX_QUADS)]


def unique_points(p: np.ndarray, grid: float = MIN_EDGE_LENGTH) -> np.ndarray:
    """The points, one per grid cell (the first in order), in their order."""
    keys = np.round(p / grid).astype(np.int64).tolist()
    first: dict = {}
    for i, k in enumerate(keys):
        first.setdefault(tuple(k), i)
    if len(first) == len(keys):
        return p
    return p[sorted(first.values())]


def _frames(n: np.ndarray) -> np.ndarray:
    """(R, 3, 2): for each unit normal n, geometry.order_polygon_vertices' frame in its plane as
    the columns (v, u): u = n x (the axis after n's largest), normalised, and v = n x u; the same
    operations on each row as on one normal."""
    axis = np.argmax(np.abs(n), axis=1)
    u = cross3(n, np.eye(3)[(axis + 1) % 3])
    u = u / np.sqrt(u[:, 0] * u[:, 0] + u[:, 1] * u[:, 1] + u[:, 2] * u[:, 2])[:, None]
    return np.stack([cross3(n, u), u], axis=2)


class _Level:
    """The regions at one depth of the walk, as arrays.  Layout: codes (R,) each region's node;
    chains (R tuples); faces grouped by region in order, owner (F,) nondecreasing, tag (F,),
    count (F,) and verts (F, W, 3) padded with zeros to the widest face."""

    def __init__(self, codes, chains, owner, tag, count, verts):
        self.codes, self.chains = codes, chains
        self.owner, self.tag, self.count, self.verts = owner, tag, count, verts


def _region_starts(owner: np.ndarray, n_regions: int) -> np.ndarray:
    """(R + 1,) the first face of each region and the end (faces are grouped by region)."""
    return np.searchsorted(owner, np.arange(n_regions + 1))


def _pad(arrays: list[np.ndarray]) -> np.ndarray:
    """(sum F, max W, 3): the (F_i, W_i, 3) arrays stacked, padded with zeros to the widest."""
    width = max(a.shape[1] for a in arrays)
    return np.concatenate([a if a.shape[1] == width else np.pad(a, ((0, 0), (0, width - a.shape[1]), (0, 0)))
                           for a in arrays])


def _caps(pts: np.ndarray, owner: np.ndarray, n_regions: int, frames: np.ndarray):
    """The cap points of each region (pts grouped by owner, in the order split_polytope met them):
    one per MIN_EDGE_LENGTH grid cell (the first met), and the orders (up, down) that sort each
    region's points by angle around their centre seen from the front of n and of -n (the frame's
    columns (v, u)); returns (pts, owner, counts (R,), up, down), up/down index the kept points.

    Bit for bit as one polytope at a time: the centre is each region's points summed in order
    (as NumPy sums the rows of an (n, 3) array) over their count, the frame product is summed in
    detmath's order, and np.lexsort is stable, as argsort(kind='stable') within one region."""
    keys = np.round(pts / MIN_EDGE_LENGTH).astype(np.int64)
    order = np.lexsort((keys[:, 2], keys[:, 1], keys[:, 0], owner))
    ks, os_ = keys[order], owner[order]
    dup = np.zeros(len(order), bool)
    dup[1:] = (os_[1:] == os_[:-1]) & np.all(ks[1:] == ks[:-1], axis=1)
    keep = np.ones(len(pts), bool)
    keep[order[dup]] = False
    pts, owner = pts[keep], owner[keep]
    counts = np.bincount(owner, minlength=n_regions)
    first = np.concatenate([[0], np.cumsum(counts)])
    slot = np.arange(len(pts)) - first[owner]
    width = int(counts.max()) if len(counts) else 0
    padded = np.zeros((n_regions, max(width, 1), 3))
    padded[owner, slot] = pts
    total = padded[:, 0].copy()
    for k in range(1, width):
        more = (k < counts)[:, None]
        total = np.where(more, total + padded[:, k], total)
    centre = total / np.maximum(counts, 1)[:, None]
    rel = pts - centre[owner]
    f = frames[owner]
    y = rel[:, 0] * f[:, 0, 0] + rel[:, 1] * f[:, 1, 0] + rel[:, 2] * f[:, 2, 0]
    x = rel[:, 0] * f[:, 0, 1] + rel[:, 1] * f[:, 1, 1] + rel[:, 2] * f[:, 2, 1]
    up = np.lexsort((arctan2(y, x), owner))
    down = np.lexsort((arctan2(y, -x), owner))
    return pts, owner, counts, first, up, down


def _split_level(lv: _Level, node_plane, children, normals, dists, want_leaf, sub):
    """Split every region of one depth by its node's plane.  Returns (child codes (C,), child
    chains, the children's _Level-style face arrays (owner by child)): only non-empty wanted
    children, in the order (region, front before back).

    Per region, exactly as one polytope split alone: vertex distances n.x - d (detmath's order);
    a region within ON_EPSILON of one side goes wholly to that side; otherwise every face is
    split (geometry.split_polygons, split_polygon bit for bit), the cap's points are, face by
    face, the face's vertices on the plane, then those of its front piece when it is cut, and a
    side with fewer than four faces is empty."""
    R = len(lv.codes)
    planes = node_plane[lv.codes]
    n, d = normals[planes], dists[planes]
    fn, fd = n[lv.owner], d[lv.owner]
    slot = np.arange(lv.verts.shape[1])
    valid = slot < lv.count[:, None]
    dist = dot(lv.verts, fn[:, None, :]) - fd[:, None]
    r_first = _region_starts(lv.owner, R)
    lo = np.minimum.reduceat(np.where(valid, dist, np.inf).min(axis=1), r_first[:-1])
    hi = np.maximum.reduceat(np.where(valid, dist, -np.inf).max(axis=1), r_first[:-1])
    whole_front = lo >= -ON_EPSILON
    whole_back = ~whole_front & (hi <= ON_EPSILON)
    kids = children[lv.codes]
    want = np.where(kids < 0, want_leaf[np.where(kids < 0, -1 - kids, 0)], sub[np.where(kids < 0, 0, kids)])
    cut = ~whole_front & ~whole_back & want.any(axis=1)
    # every output face: (child = 2 region + side, rank within the child, verts, count, tag)
    out_child, out_rank, out_verts, out_count, out_tag = [], [], [], [], []
    face_index = np.arange(len(lv.owner))
    for side, whole in ((0, whole_front), (1, whole_back)):
        take = (whole & want[:, side])[lv.owner]
        out_child.append(2 * lv.owner[take] + side)
        out_rank.append(face_index[take])
        out_verts.append(lv.verts[take])
        out_count.append(lv.count[take])
        out_tag.append(lv.tag[take])
    sel = np.flatnonzero(cut[lv.owner])
    if len(sel):
        owner = lv.owner[sel]
        front, nf, back, nb = split_polygons(lv.verts[sel], lv.count[sel], dist[sel], fn[sel], fd[sel])
        for side, piece, count in ((0, front, nf), (1, back, nb)):
            take = (count > 0) & want[owner, side]
            out_child.append(2 * owner[take] + side)
            out_rank.append(sel[take])
            out_verts.append(piece[take])
            out_count.append(count[take])
            out_tag.append(lv.tag[sel][take])
        on = valid[sel] & (np.abs(dist[sel]) <= ON_EPSILON)
        both = (nf > 0) & (nb > 0)
        front_on = ((np.arange(front.shape[1]) < nf[:, None]) & both[:, None]
                    & (np.abs(dot(front, fn[sel][:, None, :]) - fd[sel][:, None]) <= ON_EPSILON))
        mask = np.concatenate([on, front_on], axis=1)
        rows, cols = np.nonzero(mask)
        pts = np.concatenate([lv.verts[sel], front], axis=1)[rows, cols]
        regions = np.flatnonzero(cut)
        local = np.full(R, -1)
        local[regions] = np.arange(len(regions))
        frames = _frames(n[regions])
        pts, powner, counts, first, up, down = _caps(pts, local[owner[rows]], len(regions), frames)
        has = counts >= 3
        width = int(counts[has].max()) if has.any() else 0
        for side, order, tag_of in ((0, down, lambda p: p ^ 1), (1, up, lambda p: p)):
            capped = has & want[regions, side]
            if not capped.any():
                continue
            o_owner = powner[order]
            keep = capped[o_owner]
            polys = np.zeros((len(regions), width, 3))
            polys[o_owner[keep], (np.arange(len(order)) - first[o_owner])[keep]] = pts[order][keep]
            out_child.append(2 * regions[capped] + side)
            out_rank.append(np.full(int(capped.sum()), len(lv.owner)))  # the cap comes last
            out_verts.append(polys[capped])
            out_count.append(counts[capped])
            out_tag.append(tag_of(planes[regions[capped]]))
    child = np.concatenate(out_child)
    order = np.lexsort((np.concatenate(out_rank), child))
    child = child[order]
    verts = _pad([v for v in out_verts])[order]
    count = np.concatenate(out_count)[order]
    tag = np.concatenate(out_tag)[order]
    # a child of a cut region with fewer than four faces is empty (a whole side keeps its >= 4)
    n_faces = np.bincount(child, minlength=2 * R)
    alive = np.flatnonzero(n_faces >= 4)
    keep = np.isin(child, alive)
    new_owner = np.searchsorted(alive, child[keep])
    child_codes = kids.reshape(-1)[alive]
    chains = [lv.chains[c >> 1] + ((int(planes[c >> 1]) ^ 1,) if (c & 1) == 0 else (int(planes[c >> 1]),))
              for c in alive.tolist()]
    return child_codes, chains, new_owner, tag[keep], count[keep], verts[keep]


def _wanted_subtrees(node_children: np.ndarray, wanted_leaves: np.ndarray) -> np.ndarray:
    """(N,) bool: the node's subtree holds a wanted leaf.  Children have larger indices than
    their parent in a flattened tree, but this does not rely on it (passes until stable)."""
    n = len(node_children)
    out = np.zeros(n, bool)
    for _ in range(n + 1):
        ch = node_children
        leaf_w = np.where(ch < 0, wanted_leaves[np.where(ch < 0, -1 - ch, 0)], False)
        node_w = np.where(ch >= 0, out[np.where(ch >= 0, ch, 0)], False)
        new = (leaf_w | node_w).any(axis=1)
        if np.array_equal(new, out):
            break
        out = new
    return out


def _preorder(children: np.ndarray, root: int, n_leaves: int) -> tuple[np.ndarray, np.ndarray]:
    """Each node's and leaf's rank in a depth-first walk from the root, front child first (the
    order tree_cells yields in)."""
    node_rank = np.full(len(children), -1, np.int64)
    leaf_rank = np.full(n_leaves, -1, np.int64)
    ch = children.tolist()
    stack, k = [root], 0
    while stack:
        c = stack.pop()
        if c < 0:
            leaf_rank[-1 - c] = k
        else:
            node_rank[c] = k
            stack += (ch[c][1], ch[c][0])
        k += 1
    return node_rank, leaf_rank


class CellArrays:
    """Cells as arrays, in depth-first order (a node before its subtree, front child first).
    codes (K,) each cell's leaf code (-1 - leaf) or node; chains (K lists) its planes above,
    outward; its faces are rows first[k]:first[k + 1] of tag (F,), count (F,) and verts (F, W, 3)
    (each face's polygon padded with zeros to the widest)."""

    def __init__(self, codes, chains, first, tag, count, verts):
        self.codes, self.chains, self.first = codes, chains, first
        self.tag, self.count, self.verts = tag, count, verts

    def take(self, ks) -> "CellArrays":
        """The cells ks (indices, in their order) alone."""
        ks = np.asarray(ks, dtype=np.int64)
        rows = np.concatenate([np.arange(self.first[k], self.first[k + 1]) for k in ks.tolist()] or [np.zeros(0, np.int64)])
        sizes = self.first[ks + 1] - self.first[ks]
        return CellArrays(self.codes[ks], [self.chains[k] for k in ks.tolist()],
                          np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), self.tag[rows], self.count[rows],
                          self.verts[rows])

    def faces(self, k: int) -> list:
        """Cell k's faces as (tag, polygon) pairs."""
        a, b = int(self.first[k]), int(self.first[k + 1])
        tags, counts = self.tag[a:b].tolist(), self.count[a:b].tolist()
        return [(t, self.verts[a + i, :n].copy()) for i, (t, n) in enumerate(zip(tags, counts))]


def cell_arrays(tree, lo, hi, leaves=None, nodes: bool = False) -> CellArrays:
    """The cells tree_cells yields (same arguments), all at once as a CellArrays.

    The walk goes one depth at a time: every region at a depth is split by its node's plane in
    one pass of array operations (_split_level), with the same floats and orders as splitting
    each polytope alone (tests/core/cells_reference.py is that walk; the tests compare them)."""
    children = np.asarray(tree.node_children, dtype=np.int64).reshape(-1, 2)
    n_leaves = len(np.asarray(tree.leaf_solid))
    wanted = np.ones(n_leaves, bool) if leaves is None else np.asarray(leaves, bool)
    box = box_polytope(lo, hi)
    box_tags, box_verts = np.array([t for t, _ in box]), np.stack([v for _, v in box])
    none = CellArrays(np.zeros(0, np.int64), [], np.zeros(1, np.int64), np.zeros(0, np.int64),
                      np.zeros(0, np.int64), np.zeros((0, 1, 3)))
    if not len(children):
        if n_leaves and wanted[0]:
            return CellArrays(np.array([-1]), [[]], np.array([0, 6]), box_tags, np.full(6, 4), box_verts)
        return none
    node_plane = np.asarray(tree.node_plane, dtype=np.int64)
    normals = np.asarray(tree.plane_normals, dtype=np.float64)
    dists = np.asarray(tree.plane_dists, dtype=np.float64)
    sub = _wanted_subtrees(children, wanted)
    node_rank, leaf_rank = _preorder(children, tree.root, n_leaves)
    lv = _Level(np.array([tree.root]), [()], np.zeros(6, np.int64), box_tags, np.full(6, 4), box_verts)
    parts = []  # (ranks, codes, chains, owner, tag, count, verts) of the cells found at each depth
    while len(lv.codes):
        if nodes:
            parts.append((node_rank[lv.codes], lv.codes, lv.chains, lv.owner, lv.tag, lv.count, lv.verts))
        codes, chains, owner, tag, count, verts = _split_level(lv, node_plane, children, normals, dists, wanted, sub)
        is_leaf = codes < 0
        for pick in (is_leaf, ~is_leaf):
            keep = np.flatnonzero(pick)
            faces = pick[owner]
            remap = np.full(len(codes), -1)
            remap[keep] = np.arange(len(keep))
            found = (codes[keep], [chains[i] for i in keep.tolist()], remap[owner[faces]], tag[faces], count[faces],
                     verts[faces])
            if pick is is_leaf:
                parts.append((leaf_rank[-1 - found[0]],) + found)
            else:
                lv = _Level(*found)
    if not parts:
        return none
    ranks = np.concatenate([p[0] for p in parts])
    order = np.argsort(ranks, kind="stable")
    codes = np.concatenate([p[1] for p in parts])[order]
    chains = [list(c) for p in parts for c in p[2]]
    chains = [chains[i] for i in order.tolist()]
    base = np.cumsum([0] + [len(p[1]) for p in parts[:-1]])
    owner = np.concatenate([p[3] + b for p, b in zip(parts, base)])
    new_index = np.empty(len(order), np.int64)
    new_index[order] = np.arange(len(order))
    face_order = np.argsort(new_index[owner], kind="stable")
    owner = new_index[owner][face_order]
    first = _region_starts(owner, len(codes))
    tag = np.concatenate([p[4] for p in parts])[face_order]
    count = np.concatenate([p[5] for p in parts])[face_order]
    verts = _pad([p[6] for p in parts])[face_order]
    return CellArrays(codes, chains, first, tag, count, verts)


def tree_cells(tree, lo, hi, leaves=None, nodes: bool = False, chains: bool = False):
    """Yield (code, faces, chain) for the cells of `tree` (Tree or CompiledLevel) within the box
    [lo, hi]: a leaf's cell (code = -1 - leaf) for every leaf where `leaves` ((L,) bool, default
    all) is set, and with nodes=True also each node's region (code = node) on the way down to
    them, in depth-first order (a node before its subtree, front child first).  Regions that
    are empty within the box (zero volume) are not yielded.  chain lists the planes above, root
    first, each oriented outward from the cell (plane p on a back path, p ^ 1 on a front path).
    Subtrees holding no wanted leaf are not visited, and neither side of a split is built unless
    wanted.  The cells are cell_arrays' (one depth of the tree split at a time)."""
    cells = cell_arrays(tree, lo, hi, leaves=leaves, nodes=nodes)
    for k, code in enumerate(cells.codes.tolist()):
        yield code, cells.faces(k), cells.chains[k]
