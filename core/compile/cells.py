"""Leaf cells: the convex polytopes a tree's planes cut from a box, built once for every user.

A node's region is split by its plane into its children's regions; a leaf's region is its *cell*.
:func:`tree_cells` walks the tree from the box down, splitting a polytope at every node, and
yields the cells (and node regions) asked for.  The bevel stage (core/compile/bevel.py) reads the
solid leaves' cells; the add-on's overlays (addon/overlays.py) draw every leaf's cell and the
bevel nodes' regions.

A polytope is a list of faces (tag, polygon): the polygon is convex, counter-clockwise seen from
outside, and the tag names the plane it lies on, *outward* from the cell (plane index p, or its
flip p ^ 1; tags -1..-6 are the box's faces, which are not tree planes).

Splitting (:func:`split_polytope`) keeps every vertex it can: a face wholly on one side goes there
unchanged, a face cut by the plane is split by geometry.split_polygon (new vertices exactly on
axial planes), and the new face on the splitting plane (the *cap*) is the cut points, one per
MIN_EDGE_LENGTH grid cell (the first met), sorted around their centre.  A polytope within
ON_EPSILON of one side goes wholly to that side: the other side is empty (a zero-volume cell).
The bevel stage's answers depend on these exact floats and orders, so they are fixed here.
"""

from __future__ import annotations

import math

import numpy as np

from ..detmath import matmul
from ..geometry import cross3, split_polygon
from ..tolerances import MIN_EDGE_LENGTH, ON_EPSILON

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


_FRAMES: dict = {}


def _frame(n: np.ndarray) -> np.ndarray:
    """geometry.order_polygon_vertices' frame in the plane of unit normal n as the columns (v, u)
    of a (3, 2) array (cached: a tree splits by each plane many times)."""
    key = n.tobytes()
    frame = _FRAMES.get(key)
    if frame is None:
        if len(_FRAMES) > 1 << 16:
            _FRAMES.clear()
        axis = int(np.argmax(np.abs(n)))
        u = cross3(n, np.eye(3)[(axis + 1) % 3])
        u /= math.sqrt(float(matmul(u, u)))
        frame = _FRAMES[key] = np.stack([cross3(n, u), u], axis=1)  # (3, 2): v, u
    return frame


def _ordered_caps(pts: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cap polygon both ways: counter-clockwise seen from the front of n (the back cell's
    outward face) and seen from the front of -n (the front cell's), each sorted by angle around
    the points' centre as geometry.order_polygon_vertices sorts them, bit for bit (its frame for
    -n is (-u, v), so the angles are arctan2(y, -x))."""
    rel = pts - pts.mean(axis=0)
    yx = matmul(rel, _frame(n))  # each column summed as matmul(rel, v) and matmul(rel, u) are
    y, x = yx[:, 0].copy(), yx[:, 1].copy()
    return pts[np.argsort(np.arctan2(y, x), kind="stable")], pts[np.argsort(np.arctan2(y, -x), kind="stable")]


def split_polytope(faces, n: np.ndarray, d: float, plane: int, want=(True, True)):
    """(front, back) polytopes of a convex polytope cut by plane index `plane` (n.x = d).

    Each is a list of faces or None when empty (fewer than four faces) or not wanted
    (want = (front wanted, back wanted)).  A polytope within ON_EPSILON of one side goes wholly
    to that side.  The cap's points are, face by face, the face's vertices on the plane, then
    the vertices on the plane of the face's front piece when the plane cuts it.
    """
    counts = [len(v) for _, v in faces]
    allv = np.concatenate([v for _, v in faces])
    alld = matmul(allv, n) - d
    lo, hi = float(alld.min()), float(alld.max())
    if lo >= -ON_EPSILON:
        return (faces if want[0] else None), None
    if hi <= ON_EPSILON:
        return None, (faces if want[1] else None)
    on_all = (np.abs(alld) <= ON_EPSILON).tolist()
    dist_all = alld.tolist()
    front, back, cut, pieces = [], [], [], []
    start = 0
    for (tag, verts), k in zip(faces, counts):
        f, b = split_polygon(verts, n, d, dist=dist_all[start:start + k])
        if f is not None:
            front.append((tag, f))
        if b is not None:
            back.append((tag, b))
        on = on_all[start:start + k]
        if any(on):
            cut.append(verts[on])
        if f is not None and b is not None:
            pieces.append(len(cut))
            cut.append(f)
        start += k
    if pieces:  # the front pieces' vertices on the plane, all in one product
        split = np.concatenate([cut[i] for i in pieces])
        keep = np.abs(matmul(split, n) - d) <= ON_EPSILON
        at = 0
        for i in pieces:
            k = len(cut[i])
            cut[i] = cut[i][keep[at:at + k]]
            at += k
    pts = unique_points(np.concatenate(cut)) if cut else np.zeros((0, 3))
    if len(pts) >= 3:
        up, down = _ordered_caps(pts, n)
        back.append((plane, up))  # back cell: outward normal +n
        front.append((plane ^ 1, down))  # front cell: outward -n
    return (front if want[0] and len(front) >= 4 else None), (back if want[1] and len(back) >= 4 else None)


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


def tree_cells(tree, lo, hi, leaves=None, nodes: bool = False, chains: bool = False):
    """Yield (code, faces, chain) for the cells of `tree` (Tree or CompiledLevel) within the box
    [lo, hi]: a leaf's cell (code = -1 - leaf) for every leaf where `leaves` ((L,) bool, default
    all) is set, and with nodes=True also each node's region (code = node) on the way down to
    them.  Regions that are empty within the box (zero volume) are not yielded.  chain lists the
    planes above, root first, each oriented outward from the cell (plane p on a back path, p ^ 1
    on a front path).  Subtrees holding no wanted leaf are not visited, and neither side of a
    split is built unless wanted."""
    node_plane = np.asarray(tree.node_plane).tolist()
    children_arr = np.asarray(tree.node_children, dtype=np.int64).reshape(-1, 2)
    n_leaves = len(np.asarray(tree.leaf_solid))
    wanted = np.ones(n_leaves, bool) if leaves is None else np.asarray(leaves, bool)
    if not len(node_plane):
        if n_leaves and wanted[0]:
            yield -1, box_polytope(lo, hi), []
        return
    sub = _wanted_subtrees(children_arr, wanted).tolist()
    wanted_l = wanted.tolist()
    children = children_arr.tolist()
    normals, dists = tree.plane_normals, tree.plane_dists
    stack = [(tree.root, box_polytope(lo, hi), ())]
    while stack:
        code, faces, chain = stack.pop()
        if code < 0:
            yield code, faces, list(chain)
            continue
        if nodes:
            yield code, faces, list(chain)
        p = node_plane[code]
        f_code, b_code = children[code]
        want = tuple((wanted_l[-1 - c] if c < 0 else sub[c]) for c in (f_code, b_code))
        if not (want[0] or want[1]):
            continue
        front, back = split_polytope(faces, normals[p], float(dists[p]), p, want)
        if back is not None:
            stack.append((b_code, back, chain + (p,)))
        if front is not None:
            stack.append((f_code, front, chain + (p ^ 1,)))
