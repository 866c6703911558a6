"""pvs_flow.and_transpose, the cluster tables' symmetric AND done in place block by block, against
vis & vis.T on random tables of every size around the block's (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 1300), density=st.sampled_from([0.0, 0.01, 0.3, 1.0]), seed=st.integers(0, 2**32 - 1))
def test_and_transpose_in_place_is_vis_and_its_transpose(n, density, seed):
    """and_transpose (block by block, in place) gives vis & vis.T, across block edges too."""
    from brushbake.core.compile.vis.pvs_flow import and_transpose

    vis = np.random.default_rng(seed).random((n, n)) < density
    want = vis & vis.T
    got = and_transpose(vis)
    assert got is vis and np.array_equal(got, want)
