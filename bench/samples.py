"""Sample points for the benchmarks: inside the level, not in the void around it.

Random points in a map's bounds mostly fall in the void around the level (empty, but nobody
traces there), which makes queries look cheaper than in play.  bench/trace.py and bench/shift.py
keep only points the InsideOracle accepts.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from brushbake.core.runtime.query import point_leaves
from brushbake.core.runtime.trace import RAY_E2S, find_first_transitions

#: directions of the enclosure test: the 6 axes and the 8 cube diagonals
ENCLOSURE_DIRS = np.vstack([np.eye(3), -np.eye(3), np.array(list(itertools.product((-1, 1), repeat=3)))
                            / math.sqrt(3.0)])


class InsideOracle:
    """Is a point inside the level (not in the void around or beside it)?

    Decided per empty leaf of the point tree, once, from the first sample point that lands in it:
    the leaf is inside when rays from that point in all 14 ENCLOSURE_DIRS directions hit solid
    within twice the bounds' diagonal.  In a sealed level an empty leaf, being convex, lies wholly
    inside or wholly outside, so one probe per leaf decides it (the test can only be fooled by
    concave pockets of the outside, where a probe sees solid all round).  A box hull's start counts
    as inside when its reference point is.
    """

    def __init__(self, level, bounds):
        self.tree = level.point_tree()
        self.state = np.full(self.tree.num_leaves, -1, dtype=np.int8)  # -1 unknown, 0 outside, 1 inside
        lo, hi = np.asarray(bounds, dtype=np.float64)
        self.reach = 2.0 * float(np.linalg.norm(hi - lo)) + 1.0

    def __call__(self, pts: np.ndarray) -> np.ndarray:
        leaves = point_leaves(self.tree, pts)
        unknown = self.state[leaves] < 0
        if unknown.any():
            new_leaves, first = np.unique(leaves[unknown], return_index=True)
            probes = pts[np.flatnonzero(unknown)[first]]
            inside = (self.tree.leaf_solid[new_leaves] & 1) == 0
            for d in ENCLOSURE_DIRS:
                idx = np.flatnonzero(inside)
                if not len(idx):
                    break
                kind, _, _ = find_first_transitions(self.tree, probes[idx], probes[idx] + self.reach * d, 0)
                inside[idx[kind != RAY_E2S]] = False
            self.state[new_leaves] = inside
        return self.state[leaves] == 1
