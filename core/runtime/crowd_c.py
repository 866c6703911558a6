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


def kernel():
    """bbkc_crowd_pass; BackendUnavailableError where the library cannot be had."""
    global _FN
    with _LOCK:
        if _FN is None:
            try:
                fn = load_library().bbkc_crowd_pass
            except (OSError, AttributeError) as err:
                raise BackendUnavailableError(f"the crowd's C pass cannot be loaded ({err}).") from None
            fn.restype = _I
            fn.argtypes = [_I, _P, _P, _P, _P, _P, _I, _P, _P, ctypes.c_int, _P, _P, _P]
            _FN = fn
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
