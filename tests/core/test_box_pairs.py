"""core/compile/trees/box_pairs.py: the grid gives exactly the overlapping pairs a test of every
pair gives (touching counts), with big boxes, flat boxes and repeated boxes among them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from brushbake.core.compile.trees.box_pairs import overlapping_pairs, points_in_boxes


def all_pairs(lo, hi):
    hit = np.all(lo[:, None] <= hi[None], axis=2) & np.all(lo[None] <= hi[:, None], axis=2)
    return np.nonzero(np.triu(hit, 1))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(n=st.integers(0, 80), big=st.integers(0, 3), seed=st.integers(0, 2**31))
def test_the_grid_finds_every_overlapping_pair_once(n, big, seed):
    rng = np.random.default_rng(seed)
    lo = rng.integers(0, 24, (n, 3)) * 0.5
    hi = lo + rng.integers(0, 6, (n, 3)) * 0.5  # zero extents too: flat boxes
    for b in range(min(big, n)):
        hi[b] = lo[b] + rng.integers(10, 40, 3)  # a slab or a sky box
    if n > 3:
        lo[3], hi[3] = lo[2], hi[2]  # the same box twice
    i, j = overlapping_pairs(lo, hi)
    want_i, want_j = all_pairs(lo, hi)
    assert np.array_equal(i, want_i) and np.array_equal(j, want_j)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(n=st.integers(0, 60), points=st.integers(0, 200), big=st.integers(0, 2), seed=st.integers(0, 2**31))
def test_the_grid_finds_every_point_in_every_box(n, points, big, seed):
    rng = np.random.default_rng(seed)
    lo = rng.integers(0, 24, (n, 3)) * 0.5
    hi = lo + rng.integers(0, 6, (n, 3)) * 0.5
    for b in range(min(big, n)):
        hi[b] = lo[b] + rng.integers(10, 40, 3)
    pts = rng.integers(-4, 60, (points, 3)) * 0.25  # on box faces and corners too, and outside the grid
    p, b = points_in_boxes(pts, lo, hi)
    hit = np.all((pts[None] >= lo[:, None]) & (pts[None] <= hi[:, None]), axis=2)  # (box, point)
    want_b, want_p = np.nonzero(hit)
    assert np.array_equal(p, want_p) and np.array_equal(b, want_b)
