"""The PVS of real scenes and maps against the ray ground truth (core/truth/vis_truth.py: random
segments between empty points that hit nothing, by the point tree's batch traces, independent of
the portals): zero misses for both conservative modes, the fast mode's rows contain the full
mode's, rows symmetric, every cluster sees itself and its portal neighbours; the sampled method's
misses are counted (it may miss).  A fast seeded subset here; bench/pvs.py runs 1,000,000 clear
segments a map."""

from __future__ import annotations

import numpy as np
import pytest

from brushbake.core.compile.vis.portals import build_portals
from brushbake.core.compile.vis.pvs_flow import directed_portals  # noqa: F401 (the contract the stage uses)
from brushbake.core.compile.vis.vis import compute_vis, inner_directed_portals, store_vis, void_reachable
from brushbake.core.truth.vis_truth import compare, ray_truth
from brushbake.core.runtime.pvs import Visibility

SMALL = ["two_rooms.json", "garage.json", "qbspfeatures.map", "q1_rocks.map", "lq_e1m6.map", "light_general.map"]


def pick(paths, names):
    return [p for p in paths if p.name in names]


@pytest.fixture(scope="module")
def cache():
    return {}


def vis_of(levels, path, cache):
    if path not in cache:
        level = levels.get(path).level
        portals = build_portals(level)
        outside = void_reachable(portals)
        outside = None if outside.all() else outside
        cache[path] = (level, portals, outside,
                       {m: compute_vis(level, portals, m, outside=outside) for m in ("fast", "flow", "sample")})
    return cache[path]


def test_scenes_and_maps_have_no_misses(levels, map_paths, sample_paths, cache):
    chosen = pick(sample_paths, SMALL) + pick(map_paths, SMALL)
    assert len(chosen) >= 5
    for path in chosen:
        level, portals, outside, res = vis_of(levels, path, cache)
        fast, flow, sample = res["fast"], res["flow"], res["sample"]
        truth = ray_truth(level, flow.leaf_cluster, clear_segments=20_000, seed=1)
        for name, r in (("fast", fast), ("flow", flow)):
            got = compare(r.visible, truth)
            assert got["misses"] == 0, (path.name, name, got)
        assert (flow.visible <= fast.visible).all(), path.name
        dp, _, _ = inner_directed_portals(portals, outside)
        for r in (fast, flow, sample):
            assert (r.visible == r.visible.T).all() and r.visible.diagonal().all(), path.name
            assert r.visible[dp.src, dp.dst].all(), path.name
        compare(sample.visible, truth)  # counted (bench/pvs.py reports it); may be non-zero


def test_stored_rows_answer_as_computed(levels, map_paths, cache):
    path = pick(map_paths, ["lq_e1m6.map"])[0]
    level, portals, outside, res = vis_of(levels, path, cache)
    store_vis(level, res["flow"])
    try:
        vis = Visibility(level)
        assert (vis.matrix() == res["flow"].visible).all()
        from brushbake.exporters import level_from_bytes, level_to_bytes

        back = level_from_bytes(level_to_bytes(level))
        assert (Visibility(back).matrix() == res["flow"].visible).all()
        # a point's leaves: those whose cluster its row holds
        rng = np.random.default_rng(0)
        lo, hi = level.world_bounds
        pts = rng.uniform(lo, hi, (200, 3))
        mask = vis.visible_leaf_mask(pts)
        cl = vis.clusters_of_points(pts)
        for i in np.flatnonzero(cl >= 0)[:20]:
            lc = level.vis_leaf_cluster
            assert (mask[i] == ((lc >= 0) & res["flow"].visible[cl[i]][np.maximum(lc, 0)])).all()
    finally:
        level.vis_row_offset = np.zeros(0, np.uint32)
        level.vis_rows = np.zeros(0, np.uint8)
        level.vis_leaf_cluster = np.zeros(0, np.int32)
        level.__dict__.pop("_visibility", None)
