"""Run-time PVS queries (core/runtime/pvs.py) and interest management (core/runtime/interest.py)
against a brute-force reading of the same bits, on a compiled level with a random PVS."""

from __future__ import annotations

import numpy as np
import pytest

from brushbake.core.model.brushes import box_brush
from brushbake.core.model.scene import Scene
from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.runtime.interest import UPDATE_BYTES, bandwidth, relevant_entities
from brushbake.core.runtime.pvs import Visibility
from brushbake.core.runtime.pvs_rows import compress_rows, pack_bits
from brushbake.core.runtime.query import point_leaves


@pytest.fixture(scope="module")
def level():
    """Three boxes in a row of empty space: a few leaves, clusters given at random below."""
    brushes = [box_brush((x, 0, 0), (x + 1, 1, 1), f"b{x}") for x in (0, 3, 6)]
    return compile_scene(Scene("row", brushes=brushes))


def with_vis(level, seed):
    rng = np.random.default_rng(seed)
    empty = np.flatnonzero((level.leaf_solid & 1) == 0)
    c = max(1, len(empty) // 2)
    lc = np.full(level.num_leaves, -1, dtype=np.int32)
    lc[empty] = rng.integers(0, c, len(empty))
    lc[empty[:c]] = np.arange(c)
    see = rng.random((c, c)) < 0.4
    see = see | see.T | np.eye(c, dtype=bool)
    level.vis_leaf_cluster = lc
    level.vis_row_offset, level.vis_rows = compress_rows(pack_bits(see))
    level.__dict__.pop("_visibility", None)
    return see


@pytest.mark.parametrize("seed", range(4))
def test_queries_match_the_matrix(level, seed):
    see = with_vis(level, seed)
    vis = Visibility(level)
    assert (vis.matrix() == see).all()
    rng = np.random.default_rng(seed)
    lo, hi = level.world_bounds
    pts = rng.uniform(lo, hi, size=(400, 3))
    cl = level.vis_leaf_cluster[point_leaves(level, pts)].astype(np.int64)
    a, b = cl[:200], cl[200:]
    want = np.where((a < 0) | (b < 0), True, see[np.maximum(a, 0), np.maximum(b, 0)])
    assert (vis.can_see(a, b) == want).all()
    assert (vis.can_see_points(np.stack([pts[:200], pts[200:]], axis=1)) == want).all()
    sm = vis.see_matrix(a, b)
    assert (sm == np.where((a[:, None] < 0) | (b[None, :] < 0), True, see[np.maximum(a, 0)][:, np.maximum(b, 0)])).all()
    mask = vis.visible_leaf_mask(pts[:50])
    for i in range(50):
        c = cl[i]
        expect = np.ones(level.num_leaves, bool) if c < 0 else (level.vis_leaf_cluster >= 0) & see[c][np.maximum(level.vis_leaf_cluster, 0)]
        assert (mask[i] == expect).all()
        assert (vis.visible_leaves(pts[i]) == np.flatnonzero(expect)).all()


def test_interest_management_is_the_pvs_and_counts_bytes(level):
    see = with_vis(level, 7)
    rng = np.random.default_rng(7)
    lo, hi = level.world_bounds
    clients, entities = rng.uniform(lo, hi, (15, 3)), rng.uniform(lo, hi, (40, 3))
    own = np.arange(15)  # client k controls entity k
    mask = relevant_entities(level, clients, entities, own)
    cc = level.vis_leaf_cluster[point_leaves(level, clients)]
    ce = level.vis_leaf_cluster[point_leaves(level, entities)]
    for k in range(15):
        for e in range(40):
            want = e != k and (cc[k] < 0 or ce[e] < 0 or see[cc[k], ce[e]])
            assert mask[k, e] == want
    bw = bandwidth(mask, own)
    assert bw.all_bytes_per_second == (15 * 40 - 15) * UPDATE_BYTES * 20
    assert bw.bytes_per_second == mask.sum() * UPDATE_BYTES * 20
    # the thesis's example: 15 clients each told about the 14 others, 20 ticks of 42 bytes
    everyone = bandwidth(np.ones((15, 15), bool) & ~np.eye(15, dtype=bool))
    assert everyone.bytes_per_second == 20 * 15 * 14 * 42


def test_a_level_without_vis_says_how_to_get_one(level):
    level.vis_row_offset = np.zeros(0, np.uint32)
    level.__dict__.pop("_visibility", None)
    with pytest.raises(ValueError, match="--vis"):
        Visibility(level)
