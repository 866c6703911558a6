"""The cell portals of a structural tree in C (runtime_c/compiler/cell_portals.c) from Python.

portals.cell_portals is the reference: qbsp's MakeTreePortals one depth level at a time in NumPy,
where a level's work is a few dozen array passes over the whole working set (e3m4's outside fill:
about 58 levels over 200,000 portals of the onion tree, 1.1 s).  The kernel runs the same levels in
the same order and gives the same portals, to the bit (tests/core/test_cell_portals_c.py); this
side steps it a level at a time for progress and cancel.  Used under the C backend
(core/kernels.py)."""

from __future__ import annotations

import ctypes

import numpy as np

from ...errors import CancelledError
from ...native_lib import KernelBinding
from ...tolerances import PORTAL_EPSILON

_P = ctypes.c_void_p
_I = ctypes.c_int64


def _declare(lib) -> None:
    lib.bbkc_cells_start.restype = _P
    lib.bbkc_cells_start.argtypes = [_I] + [_P] * 6 + [_I, _I] + [_P] * 5 + [ctypes.c_double]
    lib.bbkc_cells_step.restype = _I
    lib.bbkc_cells_step.argtypes = [_P]
    lib.bbkc_cells_pending.restype = _I
    lib.bbkc_cells_pending.argtypes = [_P]
    lib.bbkc_cells_size.restype = None
    lib.bbkc_cells_size.argtypes = [_P, _P, _P]
    lib.bbkc_cells_take.restype = None
    lib.bbkc_cells_take.argtypes = [_P, _I] + [_P] * 6
    lib.bbkc_cells_free.restype = None
    lib.bbkc_cells_free.argtypes = [_P]


BINDING = KernelBinding(_declare)


def is_tree(level) -> bool:
    """Whether the level's nodes make a tree the kernel may walk: every plane index within the
    plane table, every node code within the tree, and every node a child of one node only, one
    numbered before it (compiled trees are numbered in preorder).  The kernel trusts this; the
    reference copes with anything, so anything else goes to it."""
    n = len(level.node_plane)
    if not n:
        return True
    plane = np.asarray(level.node_plane, dtype=np.int64)
    kids = np.asarray(level.node_children, dtype=np.int64).reshape(-1, 2)
    if plane.min() < 0 or plane.max() >= len(level.plane_dists) or kids.max() >= n:
        return False
    parent = np.repeat(np.arange(n), 2)[kids.ravel() >= 0]
    child = kids.ravel()[kids.ravel() >= 0]
    return bool(np.all(child > parent)) and len(np.unique(child)) == len(child) and not (level.root > 0)


def kernel_inputs(level, structural: np.ndarray, squares: np.ndarray, box_portals) -> list[np.ndarray]:
    """bbkc_cells_start's arrays in its order, C-contiguous: the tree's six (node planes,
    children, structural, the plane table's normals and dists, the squares), then the world box
    portals' five (verts, plane ids, normals, dists, sides)."""
    c = np.ascontiguousarray
    return [c(level.node_plane, dtype=np.int64), c(level.node_children, dtype=np.int64).reshape(-1, 2),
            c(structural, dtype=np.uint8), c(level.plane_normals, dtype=np.float64),
            c(level.plane_dists, dtype=np.float64), c(squares, dtype=np.float64),
            c(box_portals.verts, dtype=np.float64), c(box_portals.plane_id, dtype=np.int64),
            c(box_portals.normals, dtype=np.float64), c(box_portals.dists, dtype=np.float64),
            c(box_portals.sides, dtype=np.int64)]


def cell_portals(level, structural: np.ndarray, squares: np.ndarray, box_portals, progress=None, cancel=None):
    """(verts, counts, normals, dists, plane_id, sides) of every structural cell's portals, as
    portals.cell_portals gives them.  structural (N,) bool; squares (N, 4, 3): each node's plane's
    square over the world box (portals._base_squares); box_portals: the world box's (CellPortals)."""
    lib = BINDING.library()
    keep = kernel_inputs(level, structural, squares, box_portals)
    p = [a.ctypes.data for a in keep]
    handle = lib.bbkc_cells_start(len(keep[0]), *p[:6], int(level.root), len(keep[7]), *p[6:], PORTAL_EPSILON)
    if not handle:
        raise MemoryError("the cell portals' C kernel could not allocate its work space")
    try:
        total, done = max(1, int(np.count_nonzero(structural))), 0
        while lib.bbkc_cells_pending(handle):  # cancel asked before each level, as the reference asks
            if cancel is not None and cancel():
                raise CancelledError()
            got = lib.bbkc_cells_step(handle)
            if got < 0:
                raise MemoryError("the cell portals' C kernel ran out of memory")
            done += got
            if progress is not None:
                progress(min(1.0, done / total), f"{done} of {total} structural nodes")
        if lib.bbkc_cells_step(handle) < 0:  # the last: the portals left are cells' too
            raise MemoryError("the cell portals' C kernel ran out of memory")
        size = np.zeros(2, np.int64)
        lib.bbkc_cells_size(handle, size.ctypes.data, size[1:].ctypes.data)
        m, width = int(size[0]), int(size[1])
        out = (np.zeros((m, width, 3)), np.zeros(m, np.int64), np.zeros((m, 3)), np.zeros(m),
               np.zeros(m, np.int64), np.zeros((m, 2), np.int64))
        lib.bbkc_cells_take(handle, width, *(a.ctypes.data for a in out))
        return out
    finally:
        lib.bbkc_cells_free(handle)
