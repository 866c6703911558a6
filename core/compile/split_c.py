"""Polygons split by planes for the compiler: core/geometry.py's split_polygons (the reference),
or its C kernel (runtime_c/compiler/split.c) under the C backend (core/kernels.py), the same
pieces to the bit (tests/core/test_split_c.py).  The CSG, the BSP builder's partitions, the cells
and the portals split through here: thousands of calls of a few hundred polygons on a big map,
where NumPy's cost is its per-call passes (e3m4: 1.6 s of its compile)."""

from __future__ import annotations

import ctypes

import numpy as np

from ..geometry import split_polygons as split_polygons_numpy
from ..native_lib import KernelBinding
from ..tolerances import ON_EPSILON
from .. import kernels

_P = ctypes.c_void_p
_I = ctypes.c_int64


def _declare(lib) -> None:
    lib.bbkc_split_polygons.restype = None
    lib.bbkc_split_polygons.argtypes = [_I, _I, _P, _P, _P, _P, _P, ctypes.c_double, _P, _P, _P, _P]


BINDING = KernelBinding(_declare)


def split_polygons(verts, counts, dist, normals, dists, eps: float = ON_EPSILON):
    """geometry.split_polygons' answer: (front, front_counts, back, back_counts)."""
    if kernels.resolve(BINDING) == "numpy":
        return split_polygons_numpy(verts, counts, dist, normals, dists, eps)
    c = lambda a, t=np.float64: np.ascontiguousarray(a, dtype=t)  # noqa: E731
    verts, counts, dist, normals, dists = c(verts), c(counts, np.int64), c(dist), c(normals), c(dists)
    m, v = verts.shape[:2]
    if v == 0 or (len(counts) and (counts.min() < 0 or counts.max() > v)):  # rows of no vertex, or bad counts
        return split_polygons_numpy(verts, counts, dist, normals, dists, eps)
    front, back = np.zeros((m, 2 * v, 3)), np.zeros((m, 2 * v, 3))
    nf, nb = np.empty(m, np.int64), np.empty(m, np.int64)
    BINDING.library().bbkc_split_polygons(m, v, verts.ctypes.data, counts.ctypes.data, dist.ctypes.data,
                                          normals.ctypes.data, dists.ctypes.data, float(eps), front.ctypes.data,
                                          nf.ctypes.data, back.ctypes.data, nb.ctypes.data)
    front = np.ascontiguousarray(front[:, : max(int(nf.max(initial=0)), 1)])
    back = np.ascontiguousarray(back[:, : max(int(nb.max(initial=0)), 1)])
    nf[nf < 3] = 0
    nb[nb < 3] = 0
    return front, nf, back, nb
