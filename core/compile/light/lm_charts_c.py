"""Light's sample points moved into their faces in C (runtime_c/compiler/light_charts.c) from Python.

lm_charts.nearest_in_faces and move_into_faces are the reference: (point, edge) pair tables of a
few million rows on a big map (slope.map: 841,000 luxels, about 1 s of its light).  The kernel
walks each point's edges in a loop with the same operations in the same order, so the moved points
are the reference's to the bit (tests/core/test_lm_charts_c.py).  Light uses it when its rays are
traced by the C run-time (backend 'c') and the library loads, as lm_pairs_c.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ...native_lib import KernelBinding
from ...tolerances import LUXEL_INSET

_P = ctypes.c_void_p
_I = ctypes.c_int64


def _declare(lib) -> None:
    lib.bbkc_into_faces.restype = None
    lib.bbkc_into_faces.argtypes = [_I, _P, _P, _P, ctypes.c_int] + [_P] * 7 + [ctypes.c_double, _P]


_KERNEL = KernelBinding(_declare)
library, available = _KERNEL.library, _KERNEL.available


def into_faces(num_faces: int, lines, segments, centre: np.ndarray, faces: np.ndarray, st: np.ndarray,
               shrink: np.ndarray | None, nearest: bool) -> np.ndarray:
    """(N, 2) the points moved into their faces: nearest_in_faces' answer (`nearest`), else
    move_into_faces' with `shrink`.  lines = edge_lines(...), segments = lines_segments(...),
    centre = face_centres_2d(...)."""
    lib = library()
    c = lambda a, t=np.float64: np.ascontiguousarray(a, dtype=t)  # noqa: E731
    ef, en, eo = lines
    ef = np.asarray(ef, dtype=np.int64)
    keep = [c(faces, np.int64), c(np.asarray(st).reshape(-1, 2)), None if shrink is None else c(shrink),
            c(np.searchsorted(ef, np.arange(num_faces)), np.int64), c(np.bincount(ef, minlength=num_faces), np.int64),
            c(en), c(eo), c(segments[0]), c(segments[1]), c(centre)]
    n = len(keep[0])
    out = np.empty((n, 2))
    ptr = [0 if k is None else k.ctypes.data for k in keep]
    lib.bbkc_into_faces(n, ptr[0], ptr[1], ptr[2] or None, int(nearest), *ptr[3:], float(LUXEL_INSET), out.ctypes.data)
    return out
