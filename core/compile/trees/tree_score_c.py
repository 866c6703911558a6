"""The BSP builder's splitter scoring in C (runtime_c/compiler/tree_score.c) from Python.

TreeBuilder._score_items is the reference: every candidate plane of every node of a level against
the node's faces, in NumPy (bounds and spheres first, exact distances where they do not decide),
about a fifth of a map's compile.  The kernel classifies each face vertex by vertex with the exact
distances and counts as it goes; the classes, the facings and the chosen splitters are the
reference's to the bit (tests/core/test_tree_score_c.py), so the trees are the same.  A TreeBuilder
takes it when made under the C backend (core/kernels.py).
"""

from __future__ import annotations

import ctypes

import numpy as np

from ...errors import BackendUnavailableError
from ...native_lib import KernelBinding
from ...tolerances import ON_EPSILON

_P = ctypes.c_void_p
_I = ctypes.c_int64

class ScoreInput(ctypes.Structure):
    """bbk_compiler.h's bbkc_score_input."""

    _fields_ = [("items", _I), ("width", _I)] + [(name, _P) for name in (
        "table", "c_count", "s_first", "s_count", "s_ids", "s_planes", "pool", "v_first", "v_count", "normals",
        "dists")] + [("on_epsilon", ctypes.c_double), ("split_weight", ctypes.c_double)]


def _declare(lib) -> None:
    lib.bbkc_score_items.restype = ctypes.c_int
    lib.bbkc_score_items.argtypes = [ctypes.POINTER(ScoreInput), _P, _P, _P]


BINDING = KernelBinding(_declare)
library, available = BINDING.library, BINDING.available


def score_items(pool, v_first, v_count, normals, dists, s_ids, s_planes, s_item, table, c_count,
                split_weight: float):
    """_score_items' answer (best (items,), cls (rows, width) int8, same (rows, width) bool) for rows
    grouped by item (s_item non-decreasing)."""
    lib = BINDING.library()
    c = lambda a, t=np.int64: np.ascontiguousarray(a, dtype=t)  # noqa: E731
    n_items, width = table.shape
    s_count = np.bincount(s_item, minlength=n_items)
    keep = [c(table), c(c_count), c(np.cumsum(s_count) - s_count), c(s_count), c(s_ids), c(s_planes),
            c(pool, np.float64), c(v_first), c(v_count), c(normals, np.float64), c(dists, np.float64)]
    args = ScoreInput(n_items, width, *[k.ctypes.data for k in keep], float(ON_EPSILON), float(split_weight))
    cls = np.zeros((len(s_ids), width), dtype=np.int8)
    same = np.zeros((len(s_ids), width), dtype=bool)
    best = np.zeros(n_items, dtype=np.int64)
    if lib.bbkc_score_items(ctypes.byref(args), cls.ctypes.data, same.ctypes.data, best.ctypes.data) != 0:
        raise BackendUnavailableError("the splitter scoring kernel failed.", hint="Use --backend numpy.")
    return best, cls, same
