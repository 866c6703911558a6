"""Light's sums into per-point totals in C (runtime_c/compiler/light_sum.c) from Python.

np.add.at(out, index, values) is the reference: it adds row after row in the rows' order, and so
does the kernel, to the bit (tests/core/test_light_sum_c.py); NumPy 1.26's ufunc.at costs about
ten times a plain loop (slope.map: 0.6 s of its light, on the thread that must wait for it).
Light sums through it when its rays are the C run-time's and the library loads."""

from __future__ import annotations

import ctypes

import numpy as np

from ...native_lib import KernelBinding

_P = ctypes.c_void_p
_I = ctypes.c_int64


def _declare(lib) -> None:
    lib.bbkc_add_rows.restype = ctypes.c_int
    lib.bbkc_add_rows.argtypes = [_I, _I, _I, _P, _P, _P]


BINDING = KernelBinding(_declare)


def adder(backend: str):
    """add(out, index, values): np.add.at, or the kernel under backend 'c' where it loads."""
    if backend == "c" and BINDING.available():
        return add_rows
    return np.add.at


def add_rows(out: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
    """np.add.at(out, index, values) for out (P, W) or (P,) float64 C-contiguous and values of the
    matching shape (N, W) or (N,), indices 0 <= i < P (np.add.at would wrap a negative one: here it
    is refused, IndexError, as one past the end is, before any row changes)."""
    if not (out.dtype == np.float64 and out.flags.c_contiguous):
        raise ValueError("add_rows sums into a C-contiguous float64 array")
    width = 1 if out.ndim == 1 else out.shape[1]
    index = np.ascontiguousarray(index, dtype=np.int64)
    values = np.ascontiguousarray(np.broadcast_to(values, (len(index),) + out.shape[1:]), dtype=np.float64)
    if BINDING.library().bbkc_add_rows(len(index), width, len(out), index.ctypes.data, values.ctypes.data,
                                       out.ctypes.data) != 0:
        raise IndexError("add_rows: an index outside the rows")
