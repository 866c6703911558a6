"""A crowd tick's pass in C (runtime_c/compiler/crowd_pass.c) from Python, through ctypes.

Crowd._pass in NumPy is some twenty passes over the avatars (gathers, scatters, products); the
kernel does the same in three loops, with the step table's and the occupancy's scattered reads
prefetched a few avatars ahead, and gives the same claims, winners, places and tag bases, bit for
bit (tests/core/test_crowd.py).  The NumPy pass stays the reference and runs where the library
cannot be had ($BRUSHBAKE_NATIVE=off, no compiler, no shipped wheel).
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from ..errors import BackendUnavailableError
from ..native_lib import load_library

_P = ctypes.c_void_p
_I = ctypes.c_int64
_LOCK = threading.Lock()
_FN = None
_WALK = None


def _bind(name: str, what: str, restype, argtypes):
    """One kernel of the library, typed; BackendUnavailableError where it cannot be had."""
    try:
        fn = getattr(load_library(), name)
    except (OSError, AttributeError) as err:
        raise BackendUnavailableError(f"the crowd's C {what} cannot be loaded ({err}).") from None
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


def kernel():
    """bbkc_crowd_pass; BackendUnavailableError where the library cannot be had."""
    global _FN
    with _LOCK:
        if _FN is None:
            _FN = _bind("bbkc_crowd_pass", "pass", _I, [_I, _P, _P, _P, _P, _P, _I, _P, _P, ctypes.c_int, _P, _P, _P])
        return _FN


def available() -> bool:
    try:
        kernel()
        return True
    except BackendUnavailableError:
        return False


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def crowd_pass(crowd, who, dirs) -> "np.ndarray | int":
    """Crowd._pass through the kernel: the refused avatars (who None: all, in their order) or how
    many moved (who: the avatars, with their new directions dirs)."""
    w = crowd.walk
    n = len(crowd.place) if who is None else len(who)
    i, kb, _o, tag = crowd._buf[:4]
    if who is None:
        dirs = crowd.dir
    else:
        who = np.ascontiguousarray(who, dtype=np.int64)
        dirs = np.ascontiguousarray(dirs, dtype=np.uint8)
    got = kernel()(n, None if who is None else _ptr(who), _ptr(dirs), _ptr(crowd.place), _ptr(crowd.base),
                   _ptr(w.step), int(w.stride), _ptr(crowd.occupant), _ptr(crowd.place_base),
                   crowd.occupant.dtype.itemsize, _ptr(kb), _ptr(tag), _ptr(i) if who is None else None)
    if got < 0:
        raise ValueError(f"no crowd pass for tags of {crowd.occupant.dtype}")
    return i[:got].copy() if who is None else int(got)


def walk_steps(walk, groups):
    """Walk._steps through the kernel bbkc_walk_steps (the same grounds, steps and risers, in the
    same order), as a function of Walk._steps' arguments for this walk; `groups` is crowd._groups
    (passed in: this module imports nothing of crowd)."""
    fn = walk_kernel()
    risers_buf = np.empty(8 * (1 << 15), np.int32)
    counts = np.zeros(8, np.int64)

    def steps(step, risers, buf, value, place, a, at, tk, top, height_u, step_u, offsets):
        n = len(a)
        if 8 * n > len(risers_buf):
            raise ValueError("a chunk larger than the riser buffer")
        a = np.ascontiguousarray(a, dtype=np.intp)
        fn(n, _ptr(a), _ptr(value), _ptr(place), int(tk), int(tk - height_u), int(step_u), int(walk.nx), int(at),
           int(step.shape[1]), _ptr(walk.ground), _ptr(step), _ptr(risers_buf), _ptr(counts))
        kept = len(top)
        for d in (0, 2, 4, 6, 1, 3, 5, 7):
            m = int(counts[d])
            if not m:
                continue
            r = risers_buf[d * n:d * n + m].astype(np.intp)
            off = int(offsets[d])
            fb = np.minimum(value.take(a.take(r) + off), tk)
            j = np.searchsorted(top, fb.astype(np.int64) + height_u)
            for jj, sub in groups(j, r):
                if jj < kept:
                    ca = a.take(sub)
                    cb = ca + off
                    risers[jj].append((sub.astype(np.int32) + np.int32(at), d, ca, cb, value.take(ca),
                                       np.minimum(value.take(cb), tk)))

    return steps


def walk_kernel():
    """bbkc_walk_steps; BackendUnavailableError where the library cannot be had."""
    global _WALK
    with _LOCK:
        if _WALK is None:
            _WALK = _bind("bbkc_walk_steps", "walk", ctypes.c_int,
                          [_I, _P, _P, _P, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, _I, _I, _I, _P, _P, _P, _P])
        return _WALK
