"""Radiosity's pair selection in C (runtime_c/compiler/light_pairs.c) from Python, through ctypes.

lm_radiosity._pairs tests every (shooter, receiver) pair of a block -- in front, the point form
factor times the shooter's brightest unshot channel at least the cutoff, or near -- as (S x R)
NumPy products: about 35 passes over arrays of the block's size, the bounce's largest cost on an
open map where every cluster sees every other (slope: 1.1 billion pairs for one bounce).  The
kernel makes one pass, each pair through the same operations in the same order, and hands back
the selected pairs in the same order with the same form factors, bit for bit
(tests/core/test_lm_pairs_c.py); the near pairs' exact form factors stay in NumPy.  The NumPy path
stays the reference; the bounce uses the kernel when its rays are traced by the C run-time
(backend 'c') and the library loads.  ctypes lets go of the GIL during a call, so the threads of
ShadowRays.ordered run blocks side by side.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

from ...detmath import dot
from ...native_lib import KernelBinding
from ...tolerances import FORM_FACTOR_NEAR


_P = ctypes.c_void_p
_I = ctypes.c_int64
_D = ctypes.c_double


class PairBlock(ctypes.Structure):
    """bbk_compiler.h's bbkc_pair_block."""

    _fields_ = [("shooters", _I), ("receivers", _I), ("s_normal", _P), ("s_centroid", _P), ("s_dot", _P),
                ("s_cc", _P), ("s_near", _P), ("s_low", _P), ("s_area_pi", _P), ("s_strength", _P), ("s_id", _P),
                ("r_normal", _P), ("r_point", _P), ("r_dot", _P), ("r_pp", _P), ("r_id", _P), ("cutoff", _D)]


def _declare(lib) -> None:
    lib.bbkc_bounce_pairs.restype = _I
    lib.bbkc_bounce_pairs.argtypes = [ctypes.POINTER(PairBlock), _P, _P, _P, _P]


_KERNEL = KernelBinding(_declare)
library, available = _KERNEL.library, _KERNEL.available


class PairKernel:
    """One round's per-patch terms, computed once as _pairs computes them, and a call per block."""

    def __init__(self, world, strength: np.ndarray, cutoff: float):
        self.lib = library()
        self.cutoff = float(cutoff)
        n, c, p = world.normal, world.centroid, world.point
        self.normal = np.ascontiguousarray(n, dtype=np.float64)
        self.centroid = np.ascontiguousarray(c, dtype=np.float64)
        self.point = np.ascontiguousarray(p, dtype=np.float64)
        self.s_dot = dot(n, c)
        self.s_cc = dot(c, c)
        a = world.area
        self.s_near = FORM_FACTOR_NEAR * a
        self.s_low = -np.sqrt(a)
        self.s_area_pi = a / math.pi
        self.strength = np.ascontiguousarray(strength, dtype=np.float64)
        self.r_dot = dot(n, p)
        self.r_pp = dot(p, p)

    def pairs(self, si: np.ndarray, ri: np.ndarray, scratch) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(shooter rows, receiver rows, point form factors, near) of the block's selected pairs,
        rows into si and ri (int64), as _pairs selects them (the self pairs left out)."""
        si = np.ascontiguousarray(si, dtype=np.int64)
        g = lambda a: np.ascontiguousarray(a[si])  # noqa: E731
        cached = getattr(scratch, "receivers", None)  # a group's blocks share one receivers array
        if cached is None or cached[0] is not ri:
            rows = np.ascontiguousarray(ri, dtype=np.int64)
            cached = scratch.receivers = (ri, [np.ascontiguousarray(a[rows]) for a in (self.normal, self.point, self.r_dot,
                                                                                        self.r_pp)] + [rows])
        keep = [g(self.normal), g(self.centroid), g(self.s_dot), g(self.s_cc), g(self.s_near), g(self.s_low),
                g(self.s_area_pi), g(self.strength), si, *cached[1]]
        block = PairBlock(len(si), len(ri), *[k.ctypes.data for k in keep], self.cutoff)
        out_s, out_r, out_f, out_near = scratch.take_out(len(si) * len(ri))
        count = self.lib.bbkc_bounce_pairs(ctypes.byref(block), out_s.ctypes.data, out_r.ctypes.data,
                                           out_f.ctypes.data, out_near.ctypes.data)
        del keep
        return (out_s[:count].astype(np.int64), out_r[:count].astype(np.int64), out_f[:count].copy(),
                out_near[:count].view(bool).copy())
