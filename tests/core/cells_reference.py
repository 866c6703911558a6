"""The leaf-cell walk as it was before core/compile/trees/cells.py split a whole depth of the tree at once:
one polytope at a time, face by face (geometry.split_polygon), the cap ordered by
geometry-like angle sort.  tests/core/test_cells.py checks that tree_cells gives these cells bit for
bit (same faces, same order, same floats), so the bevel stage's answers cannot move."""

from __future__ import annotations

import numpy as np

import math

from brushbake.core.compile.trees.cells import _wanted_subtrees, box_polytope, unique_points
from brushbake.core.detmath import matmul
from brushbake.core.geometry import cross3, split_polygon
from brushbake.core.tolerances import ON_EPSILON


_FRAMES: dict = {}


def _frame(n: np.ndarray) -> np.ndarray:
    """the old per-plane frame (cells._frames does all at once): in the plane of unit normal n as the columns (v, u)
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
    rel = pts - pts.mean(axis=0)
    yx = matmul(rel, _frame(n))
    y, x = yx[:, 0].copy(), yx[:, 1].copy()
    return pts[np.argsort(np.arctan2(y, x), kind="stable")], pts[np.argsort(np.arctan2(y, -x), kind="stable")]


def split_polytope(faces, n: np.ndarray, d: float, plane: int, want=(True, True)):
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
    if pieces:
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
        back.append((plane, up))
        front.append((plane ^ 1, down))
    return (front if want[0] and len(front) >= 4 else None), (back if want[1] and len(back) >= 4 else None)


def tree_cells_reference(tree, lo, hi, leaves=None, nodes: bool = False):
    """The old tree_cells: (code, faces, chain) in depth-first order, front child first."""
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
