"""Light's points down the point tree in C (runtime_c/compiler/point_locate.c) from Python.

Tree.locate (core/runtime/tree.py) is the reference: a NumPy pass per tree level over every point
not yet in a leaf.  Light locates every luxel and patch centre for the lights' views (which leaves a
light can reach), about 0.2 s of lq_e0m3's 2.4 s of light on one thread that holds the GIL.  The
kernel walks each point down alone, the same sums in the same order: the same leaves and touched
flags (tests/core/test_lm_locate_c.py).  Light uses it when its rays are the C run-time's and the
library loads."""

from __future__ import annotations

import ctypes

import numpy as np

from ...native_lib import KernelBinding
from ...tolerances import TOUCH_EPSILON

_P = ctypes.c_void_p
_I = ctypes.c_int64


def _declare(lib) -> None:
    lib.bbkc_locate.restype = ctypes.c_int
    lib.bbkc_locate.argtypes = [_I, _P, _I, _I, _I, _P, _P, _P, _P, ctypes.c_double, _P, _P]


BINDING = KernelBinding(_declare)


def locate(tree, points, backend: str) -> tuple[np.ndarray, np.ndarray]:
    """tree.locate(points): (leaf (N,) int64, touched (N,) bool), by the kernel under backend 'c'
    where it loads, else by Tree.locate itself."""
    if backend != "c" or not BINDING.available():
        return tree.locate(points)
    pts = np.ascontiguousarray(np.asarray(points, dtype=np.float64).reshape(-1, 3))
    c = lambda a, t=np.int64: np.ascontiguousarray(a, dtype=t)  # noqa: E731
    node_plane, children = c(tree.node_plane), c(np.asarray(tree.node_children).reshape(-1, 2))
    normals, dists = c(tree.plane_normals, np.float64), c(tree.plane_dists, np.float64)
    leaf, touched = np.empty(len(pts), np.int64), np.zeros(len(pts), np.uint8)
    if len(children) != len(node_plane) or len(dists) != len(normals):
        raise ValueError("locate: the point tree's arrays do not match")
    if BINDING.library().bbkc_locate(len(pts), pts.ctypes.data, int(tree.root), len(node_plane), len(dists),
                                     node_plane.ctypes.data, children.ctypes.data, normals.ctypes.data,
                                     dists.ctypes.data, float(TOUCH_EPSILON), leaf.ctypes.data,
                                     touched.ctypes.data) != 0:
        raise ValueError("locate: the point tree's nodes do not form a tree")
    return leaf, touched.view(bool)
