"""The shooter-group walk's levels in C (runtime_c/compiler/light_groups.c) from Python, through ctypes.

lm_groups.GroupStep is the reference: about twenty NumPy passes over a level's frontier of (node,
receiver) pairs, the bounce's largest cost once groups cut its rays (slope: some hundred million
pairs a bounce).  The kernel makes one pass per level with the same operations in the same order
and hands back the same arrays, bit for bit (tests/core/test_lm_groups.py).  The bounce uses it
when its rays are traced by the C run-time (backend 'c') and the library loads, as lm_pairs_c.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

from ...native_lib import KernelBinding
from .lm_groups import PatchTerms

_P = ctypes.c_void_p
_I = ctypes.c_int64
_D = ctypes.c_double


class GroupTree(ctypes.Structure):
    """bbk_compiler.h's bbkc_group_tree."""

    _fields_ = [("patches", _I), ("normal", _P), ("centroid", _P), ("radius", _P), ("area_pi", _P),
                ("strength", _P), ("child_first", _P), ("children", _P), ("r_point", _P), ("r_normal", _P),
                ("p_centroid", _P), ("p_near", _P), ("p_low", _P), ("p_area_pi", _P), ("p_strength", _P),
                ("far", _D), ("cutoff", _D)]


def _declare(lib) -> None:
    lib.bbkc_group_step.restype = None
    lib.bbkc_group_step.argtypes = [ctypes.POINTER(GroupTree), _I] + [_P] * 12


_KERNEL = KernelBinding(_declare)
library, available = _KERNEL.library, _KERNEL.available


class GroupKernel:
    """One round's groups as the kernel reads them, and a call per level (GroupStep.step's answers)."""

    def __init__(self, world, groups, cutoff: float, far: float, strength: np.ndarray):
        self.lib = library()
        c = lambda a, t=np.float64: np.ascontiguousarray(a, dtype=t)  # noqa: E731
        g_strength = groups.unshot.max(axis=1) if len(groups.area) else np.zeros(0)
        terms = PatchTerms(world, strength)
        self._keep = [c(groups.normal), c(groups.centroid), c(groups.radius), c(groups.area / math.pi), c(g_strength),
                      c(groups.child_first, np.int64), c(groups.children, np.int64), c(world.point), c(world.normal),
                      c(world.centroid), c(terms.near), c(terms.low), c(terms.area_pi), c(terms.strength)]
        self.tree = GroupTree(groups.n_patches, *[k.ctypes.data for k in self._keep], float(far), float(cutoff))
        #: each group's child count, and 0 for each patch: a frontier's next level is at most the sum
        #: of its nodes' (room for n times the widest group was 140 MB of slope's bounce)
        self.kids = np.concatenate([np.zeros(int(groups.n_patches), np.int64),
                                    np.diff(groups.child_first).astype(np.int64)])

    def step(self, node: np.ndarray, recv: np.ndarray):
        node = np.ascontiguousarray(node, dtype=np.int64)
        recv = np.ascontiguousarray(recv, dtype=np.int64)
        n = len(node)
        counts = np.zeros(3, np.int64)
        leaf_s, leaf_r, link_n, link_r = (np.empty(n, np.int64) for _ in range(4))
        leaf_f, link_f, leaf_near = np.empty(n), np.empty(n), np.empty(n, np.uint8)
        room = int(self.kids[node].sum())
        next_n, next_r = np.empty(room, np.int64), np.empty(room, np.int64)
        self.lib.bbkc_group_step(ctypes.byref(self.tree), n, node.ctypes.data, recv.ctypes.data, counts.ctypes.data,
                                 leaf_s.ctypes.data, leaf_r.ctypes.data, leaf_f.ctypes.data, leaf_near.ctypes.data,
                                 link_n.ctypes.data, link_r.ctypes.data, link_f.ctypes.data, next_n.ctypes.data,
                                 next_r.ctypes.data)
        a, b, d = counts.tolist()
        # copies, not views: the caller keeps every level's pairs until the walk ends, and a view
        # would keep the whole frontier-sized buffer alive with it (slope: 200 MB of a bounce)
        return ((leaf_s[:a].copy(), leaf_r[:a].copy(), leaf_f[:a].copy(), leaf_near[:a].view(bool).copy()),
                (link_n[:b].copy(), link_r[:b].copy(), link_f[:b].copy()), (next_n[:d], next_r[:d]))
