"""Ground truth for crowd moves, independent of the slices: the exact collision of a box of the
avatar's size in the level's onion tree (core/runtime/query.point_solid, core/runtime/trace.py).

A move (feet before, feet after; one step) is legal for the truth when the box fits at the feet
after (lifted by `lift`, since feet rest exactly on a floor and solids are open), the height
difference is within the avatar's step, and the box's path is clear: the paper's decomposition,
up first at A then across when climbing, across first then down at B when descending (two swept
box traces).  Two sets of random moves (seeded) for tests and bench/crowd.py:
- slice_moves: from random standing places of the slices to the neighbouring cell in a random
  direction, at the height the slices give there: every one the slices call legal must be legal
  for the truth (disagreements are counted, and whether they are within one resolution of a
  surface: legal again when lifted by one resolution);
- truth_moves: from random points of the level dropped onto the floor (a box trace down), one
  cell across in a random direction and dropped again: the legal ones the slices refuse measure
  how conservative they are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..runtime.crowd import DIRECTIONS, INVALID, CrowdSlices, check_moves, standing_spots
from ..runtime.query import point_solid
from ..runtime.trace import trace_hulls

#: m. Feet are lifted this much for the truth's box tests: solids are open, and a box resting
#: exactly on a floor must fit; far below a height unit's effect on any answer that matters.
TRUTH_LIFT = 2.0 ** -12


def exact_legal(level, hull: int, moves: np.ndarray, step: float, lift: float = TRUTH_LIFT) -> np.ndarray:
    """(N,) bool: the truth's verdict on moves (N, 2, 3) for the box hull `hull` (module doc)."""
    m = np.asarray(moves, dtype=np.float64).reshape(-1, 2, 3)
    p0, p1 = m[:, 0].copy(), m[:, 1].copy()
    p0[:, 2] += lift
    p1[:, 2] += lift
    ok = np.abs(p1[:, 2] - p0[:, 2]) <= step + 1e-9
    ok &= point_solid(level, p1, hull=hull) == 0
    mid = np.where((p1[:, 2] > p0[:, 2])[:, None], np.column_stack([p0[:, :2], p1[:, 2]]),
                   np.column_stack([p1[:, :2], p0[:, 2]]))
    idx = np.flatnonzero(ok)
    if len(idx):
        first = trace_hulls(level, p0[idx], mid[idx], hull=hull)
        second = trace_hulls(level, mid[idx], p1[idx], hull=hull)
        ok[idx] = ~first.hit & ~second.hit
    return ok


@dataclass
class CrowdTruth:
    moves: int  # moves checked in each set
    slice_legal: int  # slice moves the slices call legal
    wrong: int  # of those, illegal for the truth
    wrong_near: int  # of those, legal when lifted by one resolution (within one resolution of a surface)
    wrong_far: int  # the rest: through a wall or off a ledge (must be 0)
    truth_legal: int  # truth moves the truth calls legal
    refused: int  # of those, refused by the slices (conservativeness)
    truth_wrong: int  # truth moves the slices call legal and the truth does not
    truth_wrong_near: int  # of those, legal when lifted by one resolution
    truth_wrong_far: int  # the rest (must be 0)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def slice_moves(s: CrowdSlices, n: int, rng) -> np.ndarray:
    """n moves from random standing places of the slices (random points inside the cells) to the
    neighbouring cell in a random direction, landing at the slices' ground there (the slice read
    at the start; the start's own height where it has none)."""
    p = s.padded()
    spots = standing_spots(p, p.height_u)
    if not len(spots) or not n:
        return np.zeros((0, 2, 3))
    key = spots[rng.integers(0, len(spots), size=n)]
    d = rng.integers(0, 8, size=n)
    ground = p.ground
    kb = key + p.offsets[d]
    fa, fb = ground[key], ground[kb]
    fb = np.where(fb == INVALID, fa, fb)
    out = np.empty((n, 2, 3))
    for side, (k, f) in enumerate(((key, fa), (kb, fb))):
        out[:, side, :2] = p.centre(k % p.cells) + (rng.random((n, 2)) - 0.5) * s.cell * (1 - 1e-6)
        out[:, side, 2] = s.metres(f)
    return out


def truth_moves(level, hull: int, s: CrowdSlices, n: int, rng, bounds) -> np.ndarray:
    """n moves between floor points found by the truth alone (module docstring); fewer when
    random points land in solid or fall out of the world."""
    lo, hi = np.asarray(bounds, dtype=np.float64)
    pts = lo + rng.random((2 * n, 3)) * (hi - lo)
    free = point_solid(level, pts, hull=hull) == 0
    pts = pts[free][:n]
    down = pts.copy()
    down[:, 2] = lo[2] - 1.0
    hit = trace_hulls(level, pts, down, hull=hull)
    keep = hit.hit & ~hit.start_solid
    start = hit.point[keep]
    d = DIRECTIONS[rng.integers(0, 8, size=len(start))]
    top = start.copy()
    top[:, :2] += d * s.cell
    top[:, 2] += s.step + TRUTH_LIFT
    bottom = top.copy()
    bottom[:, 2] = start[:, 2] - s.step - 2 * s.resolution
    land = trace_hulls(level, top, bottom, hull=hull)
    ok = land.hit & ~land.start_solid
    return np.stack([start[ok], land.point[ok]], axis=1)


def check_crowd(level, hull: int, n: int, seed: int = 0, bounds=None) -> CrowdTruth:
    """Both sets of n random moves against the truth (module docstring)."""
    s: CrowdSlices = level.crowd
    rng = np.random.default_rng(seed)
    bounds = level.world_bounds if bounds is None else bounds
    a = slice_moves(s, n, rng)
    legal = check_moves(s, a).astype(bool)
    truth = exact_legal(level, hull, a[legal], s.step)
    wrong = np.flatnonzero(~truth)
    near = exact_legal(level, hull, a[legal][wrong], s.step, lift=s.resolution) if len(wrong) else np.zeros(0, bool)
    b = truth_moves(level, hull, s, n, rng, bounds)
    tb = exact_legal(level, hull, b, s.step)
    sb = check_moves(s, b).astype(bool)
    bad = b[sb & ~tb]
    bad_near = exact_legal(level, hull, bad, s.step, lift=s.resolution) if len(bad) else np.zeros(0, bool)
    return CrowdTruth(moves=n, slice_legal=int(legal.sum()), wrong=len(wrong), wrong_near=int(near.sum()),
                      wrong_far=int(len(wrong) - near.sum()), truth_legal=int(tb.sum()),
                      refused=int((tb & ~sb).sum()), truth_wrong=len(bad), truth_wrong_near=int(bad_near.sum()),
                      truth_wrong_far=int(len(bad) - bad_near.sum()))
