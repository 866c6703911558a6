"""Light's sums into per-point totals in C (runtime_c/compiler/light_sum.c) from Python.

np.add.at(out, index, values) is the reference: it adds row after row in the rows' order, and so
does the kernel, to the bit (tests/core/test_light_sum_c.py); NumPy 1.26's ufunc.at costs about
ten times a plain loop (slope.map: 0.6 s of its light, on the thread that must wait for it).
Light sums through it when its rays are the C run-time's and the library loads.  add_clear is a
bounce block's sum: each clear ray's form factor times its shooter's light, added to its receiver,
with the products made as they are added (np.add.at of f[clear, None] * sent[src[clear]]: the same
products and sums, to the bit, without the arrays of them; slope: 0.6 s of the bounce threads')."""

from __future__ import annotations

import ctypes

import numpy as np

from ...native_lib import KernelBinding

_P = ctypes.c_void_p
_I = ctypes.c_int64


def _declare(lib) -> None:
    lib.bbkc_add_rows.restype = ctypes.c_int
    lib.bbkc_add_rows.argtypes = [_I, _I, _I, _P, _P, _P]
    lib.bbkc_add_clear.restype = ctypes.c_int
    lib.bbkc_add_clear.argtypes = [_I, _I, _I, _I, _P, _P, _P, _P, ctypes.c_int8, _P, _P]


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


def clear_adder(backend: str):
    """add_clear(out, index, kind, f, src, sent, clear): add_clear_numpy, or the kernel under backend
    'c' where it loads."""
    if backend == "c" and BINDING.available():
        return add_clear
    return add_clear_numpy


def add_clear_numpy(out: np.ndarray, index: np.ndarray, kind: np.ndarray, f: np.ndarray, src: np.ndarray,
                    sent: np.ndarray, clear: int) -> None:
    """For the rays whose kind is `clear`, in order: f times row src of sent added to row index of
    out (the reference)."""
    c = np.flatnonzero(kind == clear)
    np.add.at(out, index[c], f[c, None] * sent[src[c]])


def add_clear(out: np.ndarray, index: np.ndarray, kind: np.ndarray, f: np.ndarray, src: np.ndarray,
              sent: np.ndarray, clear: int) -> None:
    """add_clear_numpy by the kernel, to the bit: out (P, W) and sent (S, W) float64, out
    C-contiguous; a clear ray's index outside [0, P) or src outside [0, S) refused, IndexError,
    before any row changes."""
    if not (out.dtype == np.float64 and out.flags.c_contiguous and out.ndim == 2):
        raise ValueError("add_clear sums into a C-contiguous (P, W) float64 array")
    index, src, kind = np.asarray(index), np.asarray(src), np.asarray(kind)
    if index.dtype.kind not in "iu" or src.dtype.kind not in "iu" or kind.dtype.kind not in "iub":
        raise IndexError("add_clear: indices and kinds must be integers")  # as np.add.at refuses them
    n = len(index)
    index, src = (np.ascontiguousarray(a, dtype=np.int64) for a in (index, src))
    f = np.ascontiguousarray(f, dtype=np.float64)
    clear_mask = np.ascontiguousarray(kind == clear, dtype=np.int8)  # (no kind wraps round an int8)
    sent = np.asarray(sent, dtype=np.float64)
    if sent.ndim != 2 or sent.shape[1] != out.shape[1]:
        raise ValueError("add_clear: sent's rows must be as wide as out's")
    # the products are NumPy's before any sum: a sent sharing memory with out is read as it was
    sent = sent.copy() if np.may_share_memory(sent, out) else np.ascontiguousarray(sent)
    if not (len(src) == len(f) == len(clear_mask) == n):
        raise ValueError("add_clear: index, kind, f and src must be as long")
    if BINDING.library().bbkc_add_clear(n, out.shape[1], len(out), len(sent), index.ctypes.data, src.ctypes.data,
                                        f.ctypes.data, clear_mask.ctypes.data, 1, sent.ctypes.data,
                                        out.ctypes.data) != 0:
        raise IndexError("add_clear: a clear ray's index outside the rows")
