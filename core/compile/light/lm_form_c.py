"""Exact point-to-polygon form factors in C (runtime_c/compiler/light_form.c) from Python.

lm_radiosity.point_polygon_form_factor is the reference: the near pairs of a bounce (a receiver
within FORM_FACTOR_NEAR of a shooting patch) clipped and summed edge by edge in (M, K) NumPy
arrays, a third of the bounce's time on a world of rooms (slab_2000: 3.9 of its 11 CPU seconds).
The kernel does each pair in a loop with the same operations in the same order, so the form
factors are the reference's to the bit (tests/core/test_light_form_c.py).  The bounce uses it when
its rays are the C run-time's (backend 'c') and the library loads, as lm_pairs_c.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

from ...detmath import _ATAN_TERMS, _TAN_PI_8
from ...errors import BackendUnavailableError
from ...native_lib import KernelBinding
from ...tolerances import CLIP_SNAP

_P = ctypes.c_void_p
_I = ctypes.c_int64


class FormConsts(ctypes.Structure):
    """bbk_compiler.h's bbkc_form_consts."""

    _fields_ = [("terms", ctypes.c_double * 12)] + [(name, ctypes.c_double) for name in (
        "tan_pi_8", "quarter_pi", "half_pi", "pi", "two_pi", "clip_snap")]


def _declare(lib) -> None:
    lib.bbkc_form_factors.restype = ctypes.c_int
    lib.bbkc_form_factors.argtypes = [_I, _I, _P, _P, _P, _P, ctypes.POINTER(FormConsts), _P]


BINDING = KernelBinding(_declare)
_CONSTS = FormConsts((ctypes.c_double * 12)(*_ATAN_TERMS), _TAN_PI_8, math.pi / 4.0, math.pi / 2.0, math.pi,
                     2.0 * math.pi, CLIP_SNAP)


def form_factors(x: np.ndarray, n: np.ndarray, verts: np.ndarray, count: np.ndarray) -> np.ndarray:
    """point_polygon_form_factor(x, n, verts, count), the same bits."""
    c = lambda a, t=np.float64: np.ascontiguousarray(a, dtype=t)  # noqa: E731
    x, n, verts, count = c(x), c(n), c(verts), c(count, np.int64)
    out = np.empty(len(x))
    if len(x) and BINDING.library().bbkc_form_factors(len(x), verts.shape[1], x.ctypes.data, n.ctypes.data,
                                                      verts.ctypes.data, count.ctypes.data, ctypes.byref(_CONSTS),
                                                      out.ctypes.data) != 0:
        raise BackendUnavailableError("the form factor kernel ran out of memory.", hint="Use --backend numpy.")
    return out
