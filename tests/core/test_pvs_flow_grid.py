"""Portal flow (core/compile/vis/pvs_flow.py) on grid worlds, whose visibility has an exact ground truth
independent of portals and of the BSP (tests/core/vis_grid.py): zero misses for both conservative
modes, the fast mode's rows contain the full mode's, symmetric, each cluster sees itself and its
portal neighbours; the full mode's rows one way (before their AND with the other direction) hold
every line of sight too.  Random grids by hypothesis."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from vis_grid import grid_truth, make_grid

from brushbake.core.compile.vis.pvs_flow import directed_portals, fast_vis
from brushbake.core.compile.vis.pvs_merged import merged_flow
from brushbake.core.compile.vis.vis import inner_directed_portals, void_reachable


def both_modes(g):
    dp = directed_portals(g.clusters, g.plane, g.first_vertex, g.num_vertices, g.vertices, g.num_clusters,
                          g.normals, g.dists)
    flood, fast = fast_vis(dp)
    full = merged_flow(dp, flood)
    return dp, fast, full


def check(g, segments, rng):
    dp, fast, full = both_modes(g)
    truth = grid_truth(g, segments, rng)
    assert not (truth & ~full).any(), np.argwhere(truth & ~full)[:5]
    one_way = merged_flow(dp, fast_vis(dp)[0], one_way=True)
    assert not ((truth | truth.T) & ~one_way).any()
    assert (full == one_way & one_way.T).all()
    assert not (truth & ~fast).any()
    assert (full <= fast).all()
    for m in (fast, full):
        assert (m == m.T).all() and m.diagonal().all()
        assert m[dp.src, dp.dst].all()
    return truth, fast, full


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.floats(0.2, 0.5))
def test_random_grids_have_no_misses(seed, density):
    rng = np.random.default_rng(seed)
    solid = rng.random((5, 5, 3)) < density
    if solid.all():
        return
    check(make_grid(solid), 20000, rng)


def test_a_wall_with_a_door_blocks_what_it_should():
    """Two rooms 4 x 3 x 1 joined by a one-cube door: the far corners cannot see each other, and
    the full mode knows it (the fast mode may not)."""
    solid = np.zeros((9, 3, 1), bool)
    solid[4, :, 0] = True
    solid[4, 0, 0] = False  # the door at y = 0
    g = make_grid(solid)
    truth, fast, full = check(g, 50000, np.random.default_rng(1))
    a, b = g.cluster[0, 2, 0], g.cluster[8, 2, 0]
    assert not full[a, b]
    assert full[g.cluster[0, 0, 0], g.cluster[8, 0, 0]]
    assert full.sum() < fast.sum() or full.sum() == truth.sum()


def test_outside_clusters_are_left_out():
    g = make_grid(np.zeros((3, 1, 1), bool))
    outside = np.array([False, False, True])
    dp, kept, new_of = inner_directed_portals(g, outside)
    assert dp.num_clusters == 2 and kept.tolist() == [0, 1] and new_of.tolist() == [0, 1, -1]
    assert dp.num == 2  # the one portal between the two kept clusters, both ways
    assert not void_reachable(g).any()  # no void portals in a grid
