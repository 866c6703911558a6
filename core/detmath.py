"""Products and norms that give the same bits on every machine and every NumPy version.

NumPy hands matrix products (`@`, np.matmul, np.dot) and the norm of a whole array to BLAS, whose
kernels are picked per CPU at run time (SSE, AVX2 with fused multiply-add, AVX-512) and round
differently.  The same level baked on two machines then differs in the last bits of a vertex or a
bevel plane, which breaks 'same input, byte-identical output' for anyone who keeps level files
in version control (and a bake in Blender's NumPy against one on the command line's).  core/
computes its products here instead: plain multiplies and adds in a fixed order, each of which
IEEE 754 rounds exactly the same everywhere.  The shapes follow np.matmul and np.linalg.norm.

Transcendental functions have the same problem across NumPy versions: NumPy 2 computes arctan2
(also arccos, exp and log) with its own SIMD code, which differs from NumPy 1.26's in the last bit
on about half of all arguments (sin, cos and sqrt agree).  `arctan2` here calls the C library's
atan2 for each element, which does not depend on NumPy.  `cos`, `sin` and `tan` likewise call the
C library's: NumPy's own tan differs from it in the last bit on ~40% of arguments, and the camera
queries' C run-time (runtime_c/brushbake.c) must start from the same bits as the NumPy reference.
"""

from __future__ import annotations

import math

import numpy as np

_ATAN2 = np.frompyfunc(math.atan2, 2, 1)
_UNARY = {name: np.frompyfunc(getattr(math, name), 1, 1) for name in ("cos", "sin", "tan")}


def matmul(a, b) -> np.ndarray:
    """np.matmul(a, b) for real arrays, summed over the shared axis in order k = 0, 1, ...
    (1-D operands are promoted and the added axis removed, as np.matmul does)."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.dtype != np.float64 or b.dtype != np.float64:
        if a.dtype.kind not in "fc" and b.dtype.kind not in "fc":
            return np.matmul(a, b)  # integers and booleans: exact anyway
        a = a.astype(np.float64, copy=False)
        b = b.astype(np.float64, copy=False)
    k = a.shape[-1]
    if k != b.shape[-2 if b.ndim > 1 else 0]:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} do not align")
    if b.ndim == 1:  # (..., K) @ (K,): a matrix-vector product (or a dot product)
        def pair(i):
            return a[..., i], b[i]
    elif a.ndim == 1:  # (K,) @ (..., K, N)
        def pair(i):
            return a[i], b[..., i, :]
    else:
        def pair(i):
            return a[..., :, i, None], b[..., None, i, :]
    if k == 0:  # an empty sum: zeros of np.matmul's shape
        if b.ndim == 1:
            return np.zeros(a.shape[:-1])
        if a.ndim == 1:
            return np.zeros(b.shape[:-2] + b.shape[-1:])
        return np.zeros(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + a.shape[-2:-1] + b.shape[-1:])
    out = np.multiply(*pair(0))
    if out.ndim == 0:  # a dot product of two vectors: a NumPy scalar, as np.matmul gives
        for i in range(1, k):
            out = out + np.multiply(*pair(i))
        return out
    # Summed in place into one buffer, each product into one scratch array: the same roundings
    # as (t0 + t1) + t2 + ... with fresh arrays, without allocating (and page-faulting) a new
    # array of the result's size for every term and every partial sum.
    scratch = np.empty_like(out)
    for i in range(1, k):
        np.multiply(*pair(i), out=scratch)
        out += scratch
    return out


def dot(a, b) -> np.ndarray:
    """Row-wise dot product over the last axis of broadcastable arrays (einsum 'ij,ij->i'),
    summed in order."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    out = a[..., 0] * b[..., 0]
    for i in range(1, max(a.shape[-1], b.shape[-1])):
        out = out + a[..., i] * b[..., i]
    return out


def run_sums(rows: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Each run rows[starts[i]:ends[i]] (each at least one row) summed in order, first row first:
    the same bits everywhere (np.add.reduceat and reduce sum short runs in an order of NumPy's own,
    differently from this even for three rows), and the order a C kernel can follow."""
    total = rows[starts].copy()
    length = ends - starts
    for j in range(1, int(length.max(initial=1))):
        live = np.flatnonzero(length > j)
        total[live] += rows[starts[live] + j]
    return total


def norm(x, axis=None, keepdims: bool = False):
    """np.linalg.norm(x, axis=axis, keepdims=keepdims) (the 2-norm of vectors), squares summed
    in order along the axis (all of x, flattened, when axis is None)."""
    x = np.asarray(x, dtype=np.float64)
    if axis is None:
        out = np.sqrt(dot(x.reshape(-1), x.reshape(-1))) if x.size else np.float64(0.0)
        return np.reshape(out, (1,) * x.ndim) if keepdims else out
    moved = np.moveaxis(x, axis, -1)
    out = np.sqrt(dot(moved, moved)) if moved.shape[-1] else np.zeros(moved.shape[:-1])
    return np.expand_dims(out, axis) if keepdims else out


def arctan2(y, x) -> np.ndarray:
    """NumPy's arctan2 of (y, x) as float64, by the C library's atan2 element by element (the same
    bits with NumPy 1.26 and 2.x; about 100 ns an element)."""
    y = np.asarray(y, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    out = _ATAN2(y, x)
    return np.asarray(out, dtype=np.float64) if isinstance(out, np.ndarray) else np.float64(out)


def _libm(name: str, x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    out = _UNARY[name](x)
    return np.asarray(out, dtype=np.float64) if isinstance(out, np.ndarray) else np.float64(out)


def cos(x) -> np.ndarray:
    """np.cos by the C library's cos element by element (the C run-time's bits; ~100 ns an element)."""
    return _libm("cos", x)


def sin(x) -> np.ndarray:
    """np.sin by the C library's sin element by element."""
    return _libm("sin", x)


def tan(x) -> np.ndarray:
    """np.tan by the C library's tan element by element (NumPy's own differs in the last bit)."""
    return _libm("tan", x)


#: atan's Taylor terms 1/1, -1/3, 1/5, ... to the 23rd power: below 1e-17 for |u| <= tan(pi/16)
_ATAN_TERMS = tuple((-1.0) ** k / (2 * k + 1) for k in range(12))
_TAN_PI_8 = 0.41421356237309503


def arctan2_upper(y, x) -> np.ndarray:
    """arctan2(y, x) for y >= 0 (angles in [0, pi]: the angle between two vectors from the norm
    of their cross product and their dot product) in plain IEEE arithmetic -- divisions, one square
    root, a fixed polynomial -- so the same bits under any NumPy, and about 20 ns an element
    instead of arctan2's 100.  Within 4 units in the last place of the C library's atan2.
    arctan2_upper(0, 0) = 0."""
    y = np.asarray(y, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    swap = y > ax
    num = np.where(swap, ax, y)
    den = np.where(swap, y, ax)
    t = num / np.where(den > 0, den, 1.0)  # in [0, 1]
    big = t > _TAN_PI_8
    u = np.where(big, (t - 1.0) / (t + 1.0), t)  # |u| <= tan(pi/8)
    u = u / (1.0 + np.sqrt(1.0 + u * u))  # half the angle: |u| <= tan(pi/16)
    u2 = u * u
    poly = np.full_like(u, _ATAN_TERMS[-1])
    for c in _ATAN_TERMS[-2::-1]:
        poly = poly * u2 + c
    r = 2.0 * (u * poly) + np.where(big, math.pi / 4.0, 0.0)
    r = np.where(swap, math.pi / 2.0 - r, r)
    return np.where(x < 0, math.pi - r, r)
