"""The vis stage's counts (core/compile/vis/vis.py visible_counts) against a count pair by pair."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from brushbake.core.compile.vis import vis


@settings(max_examples=30, deadline=None)
@given(c=st.integers(1, 70), density=st.floats(0.0, 1.0), seed=st.integers(0, 2**32 - 1), block=st.integers(1, 500))
def test_visible_counts_are_the_pairs_counted(c, density, seed, block):
    rng = np.random.default_rng(seed)
    visible = rng.random((c, c)) < density
    leaf_cluster = rng.integers(-1, c, size=3 * c).astype(np.int32)
    old = vis.VISIBLE_COUNT_BLOCK
    vis.VISIBLE_COUNT_BLOCK = block  # rows a block at a time, blocks of every size
    try:
        got = vis.visible_counts(visible, leaf_cluster)
    finally:
        vis.VISIBLE_COUNT_BLOCK = old
    leaves_in = [int(np.sum(leaf_cluster == k)) for k in range(c)]
    sees = [sum(leaves_in[j] for j in range(c) if visible[i, j]) for i in range(c)]
    empty = [int(k) for k in leaf_cluster if k >= 0]
    assert got["avg_clusters_visible"] == sum(int(visible[i].sum()) for i in range(c)) / c
    assert got["avg_leaves_visible"] == (sum(sees[k] for k in empty) / len(empty) if empty else 0.0)
