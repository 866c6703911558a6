"""Which near brushes may cut each face, in C (runtime_c/compiler/csg_touch.c) from Python.

csg._touching_brushes is the reference: per brush, one product of its vertices with every near
brush's planes and per-face extremes (thousands of small NumPy calls on a big map: 8,000 on
slab_2000's unions, half a second).  The kernel answers for many brushes in one call, the same
booleans (tests/core/test_csg_touch_c.py), and stops at the first plane that separates.  The CSG
uses it under the C backend (core/kernels.py)."""

from __future__ import annotations

import ctypes

import numpy as np

from ...native_lib import KernelBinding
from ...tolerances import ON_EPSILON

_P = ctypes.c_void_p
_I = ctypes.c_int64

#: brushes answered by one call (cancel is checked between calls)
CHUNK = 512


def _declare(lib) -> None:
    lib.bbkc_touching.restype = None
    lib.bbkc_touching.argtypes = [_I] + [_P] * 9 + [ctypes.c_double, _P]


BINDING = KernelBinding(_declare)


def touching(brushes, ids: list[int], near_of: list[np.ndarray], offsets: np.ndarray, counts: np.ndarray,
             all_n: np.ndarray, all_d: np.ndarray, check=None) -> list[np.ndarray | None]:
    """For each brush of `ids`: _touching_brushes' (faces, near) bool table, None without near
    brushes.  check(): called between chunks (cancel)."""
    lib = BINDING.library()
    c = lambda a, t=np.int64: np.ascontiguousarray(a, dtype=t)  # noqa: E731
    plane_first, plane_count = c(offsets[:-1]), c(counts)
    normals, dists = c(all_n, np.float64), c(all_d, np.float64)
    out: list[np.ndarray | None] = []
    for a in range(0, len(ids), CHUNK):
        if check is not None:
            check()
        part = ids[a : a + CHUNK]
        faces = [f for i in part for f in brushes[i].faces]
        n_faces = np.array([len(brushes[i].faces) for i in part], dtype=np.int64)
        n_near = np.array([len(near_of[i]) for i in part], dtype=np.int64)
        face_first = c(np.concatenate([[0], np.cumsum(n_faces)]))
        near_first = c(np.concatenate([[0], np.cumsum(n_near)]))
        near = c(np.concatenate([near_of[i] for i in part])) if len(part) else np.zeros(0, np.int64)
        verts = c(np.concatenate(faces), np.float64)
        face_count = c([len(f) for f in faces])
        cells = n_faces * n_near
        table = np.zeros(int(cells.sum()) + 1, dtype=np.uint8)
        lib.bbkc_touching(len(part), verts.ctypes.data, face_count.ctypes.data, face_first.ctypes.data,
                          near_first.ctypes.data, near.ctypes.data, plane_first.ctypes.data, plane_count.ctypes.data,
                          normals.ctypes.data, dists.ctypes.data, float(ON_EPSILON), table.ctypes.data)
        start = np.cumsum(cells) - cells
        for k in range(len(part)):
            out.append(table[start[k] : start[k] + cells[k]].view(bool).reshape(n_faces[k], n_near[k])
                       if n_near[k] else None)
    return out
