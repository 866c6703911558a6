"""The full flow with merged states (core/compile/vis/pvs_merged.py): its pieces against brute force,
and the whole against the ray ground truth on hypothesis scenes of random brushes (zero misses,
inside the fast mode's rows), plus a case where merging must not lose a line of sight: two chains
of portals reaching the same portal through different parts of it."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_portals import brush_specs, build

from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.compile.vis.portals import build_portals
from brushbake.core.compile.vis.pvs_flow import DirectedPortals, fast_vis
from brushbake.core.compile.vis.pvs_merged import (clip_by_cutting, extents, kdop_directions, merged_flow,
                                               pass_polygons, wait_keys)
from brushbake.core.compile.vis.pvs_winding import clip_front
from brushbake.core.compile.vis.vis import compute_vis, inner_directed_portals, void_reachable
from brushbake.core.truth.vis_truth import compare, ray_truth
from brushbake.core.model.brushes import box_brush
from brushbake.core.model.scene import Scene
from brushbake.core.tolerances import FLOW_CLIP_MARGIN


def regular_polygon(rng, k, centre, normal, radius):
    normal = normal / np.linalg.norm(normal)
    u = np.cross(normal, [1.0, 0, 0] if abs(normal[0]) < 0.6 else [0, 1.0, 0])
    u /= np.linalg.norm(u)
    v = np.cross(normal, u)
    ang = np.sort(rng.uniform(0, 2 * np.pi, k))
    return centre + radius * (np.cos(ang)[:, None] * u + np.sin(ang)[:, None] * v)


def padded(polys):
    m = max(len(p) for p in polys)
    w = np.zeros((len(polys), m, 3))
    for i, p in enumerate(polys):
        w[i, : len(p)] = p
    return w, np.array([len(p) for p in polys])


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_clipping_by_cutting_planes_only_equals_clipping_by_all(seed):
    rng = np.random.default_rng(seed)
    b, s = 40, 6
    polys = [regular_polygon(rng, int(rng.integers(3, 9)), rng.normal(size=3), rng.normal(size=3), 1.0)
             for _ in range(b)]
    w, n = padded(polys)
    normal = rng.normal(size=(b, s, 3))
    normal /= np.linalg.norm(normal, axis=2)[..., None]
    dist = np.einsum("bsx,bx->bs", normal, w[:, 0]) + rng.uniform(-1.5, 0.5, (b, s))
    counts = rng.integers(0, s + 1, b)
    got_w, got_n = clip_by_cutting(w.copy(), n.copy(), normal, dist, counts)
    for i in range(b):
        ew, en = w[i: i + 1], n[i: i + 1]
        for k in range(counts[i]):
            if en[0] == 0:
                break
            ew, en = clip_front(ew, en, normal[i, k: k + 1], dist[i, k: k + 1])
        assert got_n[i] == en[0]
        if en[0]:
            np.testing.assert_allclose(got_w[i, : en[0]], ew[0, : en[0]], atol=1e-12)


def test_a_pass_polygon_holds_every_target_merged_into_it():
    """k-DOP merging: the portal clipped to the max of the extents of several parts of it holds
    every vertex of every part (so no line through any part is lost)."""
    rng = np.random.default_rng(5)
    for _ in range(50):
        normal = rng.normal(size=3)
        normal /= np.linalg.norm(normal)
        q = regular_polygon(rng, 7, rng.normal(size=3), normal, 2.0)
        w, n = padded([q])
        dp = DirectedPortals(np.zeros(1, np.int64), np.ones(1, np.int64), np.zeros(1, np.int64), normal[None],
                             np.array([normal @ q[0]]), w, n, 2)
        dirs = kdop_directions(dp)
        full = extents(w, n, dirs)
        parts = []
        for _ in range(3):  # random convex parts of q: q clipped by a random in-plane half-plane
            d = np.cross(normal, rng.normal(size=3))
            d /= np.linalg.norm(d)
            pw, pn = clip_front(w, n, d[None], np.array([d @ q[0] + rng.uniform(-2, 2)]))
            if pn[0]:
                parts.append(pw[0, : pn[0]])
        if not parts:
            continue
        h = np.max([extents(p[None], np.array([len(p)]), dirs)[0] for p in parts], axis=0) + FLOW_CLIP_MARGIN
        poly_w, poly_n = pass_polygons(dp, np.zeros(1, np.int64), h[None], dirs, full)
        poly = poly_w[0, : poly_n[0]]
        centre = poly.mean(axis=0)
        for p in parts:
            for x in p:  # inside every edge of the pass polygon (within rounding)
                for a, b in zip(poly, np.roll(poly, -1, axis=0)):
                    side = np.dot(np.cross(b - a, x - a), normal) * np.sign(np.dot(np.cross(b - a, centre - a), normal))
                    assert side >= -1e-9


def scene_vis(brushes):
    level = compile_scene(Scene("random", brushes=brushes))
    portals = build_portals(level)
    outside = void_reachable(portals)
    outside = None if outside.all() else outside
    fast = compute_vis(level, portals, "fast", outside=outside)
    flow = compute_vis(level, portals, "flow", outside=outside)
    return level, portals, outside, fast, flow


@settings(max_examples=12, deadline=None, derandomize=True, report_multiple_bugs=False,
          phases=[Phase.explicit, Phase.generate, Phase.shrink], suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(brush_specs(), min_size=2, max_size=12), seed=st.integers(0, 2**32 - 1))
def test_random_scenes_flow_has_no_misses(specs, seed):
    brushes = [b for b in (build(s, f"b{i}") for i, s in enumerate(specs)) if b is not None]
    brushes.append(box_brush((-4.0, -4.0, -4.0), (4.0, 4.0, -3.5), "floor"))
    level, portals, outside, fast, flow = scene_vis(brushes)
    truth = ray_truth(level, flow.leaf_cluster, clear_segments=3000, seed=seed % 1000)
    assert compare(flow.visible, truth)["misses"] == 0
    assert (flow.visible <= fast.visible).all()
    assert (flow.visible == flow.visible.T).all() and flow.visible.diagonal().all()


def test_pillars_in_a_hall_two_chains_to_one_portal():
    """A hall of pillars: many chains of portals reach the same far portals through different
    parts of them, so states merge; the flow must hold every pair the rays join, and be tighter
    than the fast mode (the pillars hide some cells from others)."""
    brushes = [box_brush((-1.0, -1.0, -1.0), (13.0, 13.0, 0.0), "floor"),
               box_brush((-1.0, -1.0, 3.0), (13.0, 13.0, 4.0), "ceiling")]
    for side, (lo, hi) in enumerate([((-1, -1), (0, 13)), ((12, -1), (13, 13)), ((-1, -1), (13, 0)),
                                     ((-1, 12), (13, 13))]):
        brushes.append(box_brush((float(lo[0]), float(lo[1]), 0.0), (float(hi[0]), float(hi[1]), 3.0), f"wall{side}"))
    k = 0
    for x in range(2, 12, 3):
        for y in range(2, 12, 3):
            brushes.append(box_brush((x, y, 0.0), (x + 1.5, y + 1.5, 3.0), f"pillar{k}"))
            k += 1
    level, portals, outside, fast, flow = scene_vis(brushes)
    truth = ray_truth(level, flow.leaf_cluster, clear_segments=200_000, seed=2)
    assert compare(flow.visible, truth)["misses"] == 0
    assert compare(fast.visible, truth)["misses"] == 0
    assert (flow.visible <= fast.visible).all()
    assert flow.visible.sum() < fast.visible.sum()
    assert flow.stats["states_expanded"] > 0


def test_flow_on_portals_without_clusters_is_empty():
    dp, _, _ = inner_directed_portals(type("P", (), dict(num_clusters=1, clusters=np.zeros((0, 2), np.int64),
                                                         first_vertex=np.zeros(0, np.int64),
                                                         num_vertices=np.zeros(0, np.int64),
                                                         vertices=np.zeros((0, 3)), plane=np.zeros(0, np.int64),
                                                         normals=np.zeros((0, 3)), dists=np.zeros(0)))())
    flood, _ = fast_vis(dp)
    assert merged_flow(dp, flood).tolist() == [[True]]


def pillar_hall_portals():
    brushes = [box_brush((-1.0, -1.0, -1.0), (13.0, 13.0, 0.0), "floor"),
               box_brush((-1.0, -1.0, 3.0), (13.0, 13.0, 4.0), "ceiling")]
    for side, (lo, hi) in enumerate([((-1, -1), (0, 13)), ((12, -1), (13, 13)), ((-1, -1), (13, 0)),
                                     ((-1, 12), (13, 13))]):
        brushes.append(box_brush((float(lo[0]), float(lo[1]), 0.0), (float(hi[0]), float(hi[1]), 3.0), f"wall{side}"))
    for k, (x, y) in enumerate([(2, 2), (5, 3), (8, 2), (3, 6), (7, 7), (10, 9), (2, 10)]):
        brushes.append(box_brush((x, y, 0.0), (x + 1.5, y + 1.5, 3.0), f"pillar{k}"))
    level = compile_scene(Scene("hall", brushes=brushes))
    portals = build_portals(level)
    outside = void_reachable(portals)
    dp, _, _ = inner_directed_portals(portals, None if outside.all() else outside)
    return dp, fast_vis(dp)[0]


def test_flow_rows_and_work_do_not_depend_on_the_number_of_jobs(monkeypatch):
    """Same rows, and the same states expanded, with 1, 2 or 3 workers, forked or threads, and
    waves of 8 sources (so that later waves read earlier ones' rows): the output never depends on
    the machine's cores."""
    from brushbake.core.compile.vis import pvs_merged, wave_jobs

    monkeypatch.setattr(pvs_merged, "WAVE_BYTES", 1)
    dp, flood = pillar_hall_portals()
    assert dp.num > 40
    runs = []
    for jobs, fork in [(1, True), (2, True), (3, True), (2, False)]:
        monkeypatch.setattr(wave_jobs, "can_fork", lambda fork=fork: fork)
        stats: dict = {}
        runs.append((merged_flow(dp, flood, stats=stats, jobs=jobs), stats))
    for vis, stats in runs[1:]:
        assert (vis == runs[0][0]).all()
        assert stats["states_expanded"] == runs[0][1]["states_expanded"] > 0
        assert stats["targets_clipped"] == runs[0][1]["targets_clipped"]
    assert [s["flow_jobs"] for _, s in runs] == [1, 2, 3, 2]


def test_cancel_stops_the_forked_workers():
    import multiprocessing

    import pytest

    from brushbake.core.errors import CancelledError

    dp, flood = pillar_hall_portals()
    with pytest.raises(CancelledError):
        merged_flow(dp, flood, cancel=lambda: True, jobs=2)
    assert not multiprocessing.active_children()


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(brush_specs(), min_size=2, max_size=8))
def test_base_portal_vis_is_its_definition_pair_by_pair(specs):
    """BasePortalVis reads one table of (plane, portal) extremes for both directions of each portal;
    checked against its definition evaluated for every ordered pair of directed portals."""
    from brushbake.core.compile.vis.pvs_flow import base_portal_vis
    from brushbake.core.tolerances import FLOW_PLANE_EPSILON as eps
    brushes = [b for b in (build(s, f"b{i}") for i, s in enumerate(specs)) if b is not None]
    brushes.append(box_brush((-4.0, -4.0, -4.0), (4.0, 4.0, -3.5), "floor"))
    portals = build_portals(compile_scene(Scene("random", brushes=brushes)))
    dp, _, _ = inner_directed_portals(portals)
    got = base_portal_vis(dp, chunk=3)
    want = np.zeros_like(got)
    for s in range(dp.num):
        for q in range(dp.num):
            wq, ws = dp.windings[q, : dp.count[q]], dp.windings[s, : dp.count[s]]
            front = any(_plane_dist(x, dp.normal[s], dp.dist[s]) > eps for x in wq)
            behind = any(_plane_dist(x, dp.normal[q], dp.dist[q]) < -eps for x in ws)
            want[s, q] = s != q and front and behind
    assert dp.num > 2
    assert (got == want).all()


def _plane_dist(x, n, d):
    return x[0] * n[0] + x[1] * n[1] + x[2] * n[2] - d


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-5.0, 3000.0, allow_nan=False), min_size=2, max_size=40), st.integers(1, 1 << 20))
def test_wait_keys_rank_a_source_s_states_alike_at_any_index_in_its_wave(dist, w):
    """The order of a source's waiting states (pvs_merged: nearest its plane first) must not depend
    on the source's index in its wave, or the work and the rows would depend on how the sources
    are shared among workers; keys sort by source first.  Near ties (a float key w * 1e7 + dist
    orders 1e-7 m apart differently at w = 0 and w = 500) included."""
    d = np.array([x + 1e-7 for x in dist] + dist)
    a = np.argsort(wait_keys(np.zeros(len(d), np.int64), d), kind="stable")
    b = np.argsort(wait_keys(np.full(len(d), w), d), kind="stable")
    assert np.array_equal(a, b)
    both = np.concatenate([wait_keys(np.full(len(d), w - 1), d), wait_keys(np.full(len(d), w), d)])
    assert both[: len(d)].max() < both[len(d):].min()
