"""The bounce's pair selection and form factors in their fast forms, against the plain forms they
replaced, to the bit (core/compile/light/lm_radiosity.py, lm_direct.py, lm_rays.py):

- _pairs (scratch buffers, the self pair dropped after the selection) gives the same pairs in the
  same order and the same form factors as _pairs_dense (every test over the whole block), on the
  blocks of two sample scenes (one with its PVS), at several cutoffs and chunk sizes;
- point_polygon_form_factor (every edge at once, padding cut to the longest polygon) equals the
  edge-by-edge loop on random polygons, straddling receivers' planes or not;
- solid_angle reads nothing past the longest polygon (cut padding, same bits);
- ShadowRays.segments answers as transitions;
- the C pair selection (lm_pairs_c.PairKernel) gives _pairs' pairs, order and form factors to the
  bit, on the same blocks and on random patches (hypothesis);
- RayBatcher._in_sky (face by face) answers as the (points x faces) matmul table (hypothesis)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brushbake.core.compile.light import lm_radiosity
from brushbake.core.compile.light.lightmap import patch_world
from brushbake.core.compile.light.lm_charts import edge_lines, lit_faces, make_charts
from brushbake.core.compile.light.lm_direct import solid_angle
from brushbake.core.compile.light.lm_patches import clip_batch, make_patches
from brushbake.core.compile.light.lm_radiosity import _blocks, _pairs, _pairs_dense, point_polygon_form_factor
from brushbake.core.compile.light.lm_rays import ShadowRays
from brushbake.core.compile.pipeline import compile_scene, visibility_stage
from brushbake.core.detmath import arctan2_upper, dot
from brushbake.core.formats.loaders import load_scene
from brushbake.core.geometry import cross3
from brushbake.core.runtime.pvs import has_vis, visibility
from brushbake.core.tolerances import BOUNCE_CUTOFF

REPO = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(47)


def _world(name: str, vis: str):
    scene = load_scene(REPO / name)
    scene.hulls = []
    scene.settings.bevels, scene.settings.vis, scene.settings.allow_leak = False, vis, True
    level = compile_scene(scene)
    if vis != "none":
        visibility_stage(scene, level)
    charts = make_charts(level, 0.5, lit=lit_faces(level))
    patches = make_patches(level, charts, 4)
    world = patch_world(level, charts, patches, edge_lines(level, charts), 0.5)
    see = visibility(level).see_matrix if has_vis(level) else None
    return world, see


@pytest.mark.parametrize("name, vis", [("sample_scenes/two_rooms.json", "fast"), ("sample_scenes/garage.json", "none")])
def test_pairs_equal_the_dense_reference_to_the_bit(monkeypatch, name, vis):
    world, see = _world(name, vis)
    live = np.flatnonzero(world.count > 0)
    strength = np.zeros(len(world.area))
    strength[live] = RNG.random(len(live)) ** 4  # bright and dim shooters, some far under the cutoff
    shooters = live[np.argsort(-strength[live], kind="stable")]
    shooters = np.concatenate([shooters[:150], shooters[len(shooters) // 2 :][:150]])  # bright and dim ones
    for chunk, cutoff in ((1 << 20, BOUNCE_CUTOFF), (3000, BOUNCE_CUTOFF), (5000, 1e-3), (4096, 1e-9), (2000, 0.0)):
        monkeypatch.setattr(lm_radiosity, "PAIR_CHUNK", chunk)
        pairs = near = 0
        for si, ri in _blocks(world, shooters, see):
            got = _pairs(world, si, ri, strength[si], cutoff)
            want = _pairs_dense(world, si, ri, strength[si], cutoff)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and g.tobytes() == w.tobytes()
            pairs += len(got[0])
            d2 = ((world.centroid[got[0]] - world.point[got[1]]) ** 2).sum(axis=1)
            near += int((d2 < 16.0 * world.area[got[0]]).sum())
        assert pairs > 1000 and near > 10, (pairs, near)  # far pairs and exact form factors both checked


def _random_polygons(m: int, k: int):
    """Convex polygons (vertices on a circle, padded to k), and receivers above, beside and across
    their planes (straddling)."""
    count = RNG.integers(3, 9, m)
    verts = np.zeros((m, k, 3))
    for i in range(m):
        a = np.sort(RNG.random(count[i])) * 2 * np.pi
        r = 0.2 + RNG.random() * 0.05  # on a circle: convex
        poly = np.stack([r * np.cos(a), r * np.sin(a), np.zeros(count[i])], axis=1)
        q, _ = np.linalg.qr(RNG.normal(size=(3, 3)))
        verts[i, : count[i]] = poly @ q.T + RNG.normal(size=3)
    x = verts[np.arange(m), 0] + RNG.normal(size=(m, 3)) * RNG.choice([0.01, 0.3, 2.0], (m, 1))
    n = RNG.normal(size=(m, 3))
    n /= np.sqrt((n * n).sum(axis=1))[:, None]
    return x, n, verts, count


def _form_factor_edge_loop(x: np.ndarray, n: np.ndarray, verts: np.ndarray, count: np.ndarray) -> np.ndarray:
    """point_polygon_form_factor edge by edge, as it was before it took every edge at once."""
    rel = verts - x[:, None, :]
    dist = dot(rel, n[:, None, :])
    kk = verts.shape[1]
    dist = np.where(np.arange(kk)[None, :] < count[:, None], dist, 0.0)
    cnt = np.where(count >= 3, count, 0)
    straddle = np.flatnonzero((dist < 0).any(axis=1))
    if len(straddle):
        rel = np.concatenate([rel, np.zeros((len(rel), 1, 3))], axis=1)
        rel[straddle], cnt[straddle] = clip_batch(rel[straddle, :kk], count[straddle], dist[straddle])
    total = np.zeros(len(x))
    rows = np.arange(len(x))
    for k in range(rel.shape[1]):
        live = k < cnt
        if not live.any():
            break
        nxt = np.where(k + 1 < cnt, k + 1, 0)
        a, b = rel[:, k], rel[rows, nxt]
        c = cross3(a, b)
        cn = np.sqrt(dot(c, c))
        ok = live & (cn > 0)
        gamma = arctan2_upper(cn, dot(a, b))
        total = total + np.where(ok, gamma * dot(n, c) / np.where(ok, cn, 1.0), 0.0)
    return np.abs(total) / (2.0 * math.pi)


def test_point_polygon_form_factor_equals_the_edge_loop_to_the_bit():
    x, n, verts, count = _random_polygons(3000, 16)
    want = _form_factor_edge_loop(x, n, verts, count)
    assert (want > 0).sum() > 1000
    for v in (verts, verts[:, : int(count.max())]):
        got = point_polygon_form_factor(x, n, v, count)
        assert got.tobytes() == want.tobytes()
    assert point_polygon_form_factor(x[:0], n[:0], verts[:0], count[:0]).shape == (0,)


def test_a_polygon_wholly_behind_the_point_gives_zero_as_the_edge_loop_does():
    x, n, verts, count = _random_polygons(2000, 16)
    e1, e2 = verts[:, 1] - verts[:, 0], verts[:, 2] - verts[:, 0]
    up = np.cross(e1, e2)
    up /= np.sqrt((up * up).sum(axis=1))[:, None]
    lift = RNG.choice([1e-4, -1e-4], (len(x), 1))  # above the polygon (all of it behind) or below
    x = verts[:, :3].mean(axis=1) + lift * up
    want = _form_factor_edge_loop(x, up, verts, count)
    got = point_polygon_form_factor(x, up, verts, count)
    assert got.tobytes() == want.tobytes()
    assert (want[lift[:, 0] > 0] == 0).all() and (want[lift[:, 0] < 0] > 0).all()


def test_solid_angle_reads_nothing_past_the_longest_polygon():
    _, _, verts, count = _random_polygons(2000, 16)
    origin = np.array([0.3, -0.2, 0.5])
    want = solid_angle(origin, verts, count)
    assert want.tobytes() == solid_angle(origin, verts[:, : int(count.max())], count).tobytes()


def test_segments_answer_as_transitions():
    level = compile_scene(load_scene(REPO / "sample_scenes/two_rooms.json"))
    lo, hi = np.asarray(level.world_bounds, dtype=np.float64)
    a = lo + RNG.random((5000, 3)) * (hi - lo)
    b = lo + RNG.random((5000, 3)) * (hi - lo)
    for backend in ("numpy", "auto"):
        rays = ShadowRays(level, backend)
        kind, t = rays.transitions(a, b)
        k2, t2 = rays.segments(np.ascontiguousarray(np.stack([a, b], axis=1)))
        assert kind.tobytes() == k2.tobytes() and t.tobytes() == t2.tobytes()


def test_a_receiver_in_the_polygons_plane_gets_no_light_and_no_error():
    """A receiver point lying (up to rounding) in a polygon's plane beside it, facing along its
    normal: the polygon is seen edge on, F = 0.  Rounding used to scatter the vertices' signs;
    clip_batch then found more than two crossings and overran its rows (IndexError)."""
    x, n, verts, count = _random_polygons(2000, 16)
    e1, e2 = verts[:, 1] - verts[:, 0], verts[:, 2] - verts[:, 0]
    up = np.cross(e1, e2)
    up /= np.sqrt((up * up).sum(axis=1))[:, None]
    a, b = RNG.random((2, len(x), 1)) * 0.4
    x = verts[:, 0] - a * e1 - b * e2  # in the plane, up to rounding, outside the polygon
    for side in (1.0, -1.0):
        got = point_polygon_form_factor(x, side * up, verts, count)
        assert np.isfinite(got).all() and np.abs(got).max() < 1e-9


def test_collinear_vertices_on_the_receivers_plane_are_kept():
    """A polygon with an edge in the receiver's plane, split by collinear vertices whose heights
    are rounding noise of alternating sign: the same light as without them."""
    quad = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 1], [0, 1, 1.0]])
    noisy = np.array([[0, 0, 0], [0.25, 0, -1e-16], [0.5, 0, 1e-16], [0.75, 0, -1e-16], [1, 0, 0], [1, 1, 1],
                      [0, 1, 1.0]])
    x = np.array([[0.5, -0.5, 0.0]])
    n = np.array([[0.0, 0.0, 1.0]])
    want = point_polygon_form_factor(x, n, quad[None], np.array([4]))
    got = point_polygon_form_factor(x, n, noisy[None], np.array([7]))
    assert want[0] > 0.01
    assert abs(got[0] - want[0]) < 1e-12
    clipped, cnt = clip_batch(noisy[None] - x[:, None], np.array([7]), noisy[None, :, 2] - 0.0)
    assert cnt[0] == 7


# -- the C pair selection (core/compile/light/lm_pairs_c.py, runtime_c/compiler/light_pairs.c)


def _kernel_or_skip():
    from brushbake.core.compile.light import lm_pairs_c

    if not lm_pairs_c.available():
        pytest.skip("the native library does not load here (no C compiler)")
    return lm_pairs_c.PairKernel


@pytest.mark.parametrize("name, vis", [("sample_scenes/two_rooms.json", "fast"), ("sample_scenes/garage.json", "none")])
def test_c_pairs_equal_numpy_to_the_bit(monkeypatch, name, vis):
    kernel_of = _kernel_or_skip()
    world, see = _world(name, vis)
    live = np.flatnonzero(world.count > 0)
    strength = np.zeros(len(world.area))
    strength[live] = RNG.random(len(live)) ** 4
    shooters = live[np.argsort(-strength[live], kind="stable")]
    shooters = np.concatenate([shooters[:150], shooters[len(shooters) // 2 :][:150]])
    for chunk, cutoff in ((1 << 20, BOUNCE_CUTOFF), (3000, BOUNCE_CUTOFF), (5000, 1e-3), (4096, 1e-9)):
        monkeypatch.setattr(lm_radiosity, "PAIR_CHUNK", chunk)
        kernel = kernel_of(world, strength, cutoff)
        scratch = lm_radiosity._Scratch()
        pairs = near = 0
        for si, ri in _blocks(world, shooters, see):
            got = _pairs(world, si, ri, strength[si], cutoff, scratch, kernel)
            want = _pairs(world, si, ri, strength[si], cutoff)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and g.tobytes() == w.tobytes()
            pairs += len(got[0])
            d2 = ((world.centroid[got[0]] - world.point[got[1]]) ** 2).sum(axis=1)
            near += int((d2 < 16.0 * world.area[got[0]]).sum())
        assert pairs > 1000 and near > 10, (pairs, near)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spread=st.sampled_from([0.3, 3.0, 30.0]),
       cutoff=st.sampled_from([BOUNCE_CUTOFF, 1e-6, 1e-2]))
def test_c_pairs_equal_numpy_on_random_patches(seed, spread, cutoff):
    """Random patches (points, normals, areas, strengths; some coincident, some facing away, some
    within the near distance; shooters among the receivers, so self pairs occur): the same pairs,
    order and bits."""
    kernel_of = _kernel_or_skip()
    rng = np.random.default_rng(seed)
    p = 200
    centroid = rng.normal(size=(p, 3)) * spread
    centroid[rng.random(p) < 0.1] = centroid[0]  # coincident patches: d2 at its floor
    normal = rng.normal(size=(p, 3))
    normal /= np.sqrt((normal * normal).sum(axis=1))[:, None]
    area = rng.random(p) ** 2 * rng.choice([0.01, 1.0, 100.0], p)
    point = centroid + 0.01 * normal
    square = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], dtype=float) * 0.5
    verts = np.zeros((p, 5, 3))
    verts[:, :4] = centroid[:, None, :] + square[None] * np.sqrt(area)[:, None, None]
    world = lm_radiosity.PatchWorld(verts, np.full(p, 4), area, point, centroid, normal, np.zeros(p, np.int64),
                                    np.full((p, 3), 0.5))
    strength = rng.random(p) ** 3
    si = np.sort(rng.choice(p, 40, replace=False))
    ri = np.arange(p)
    got = _pairs(world, si, ri, strength[si], cutoff, lm_radiosity._Scratch(), kernel_of(world, strength, cutoff))
    want = _pairs(world, si, ri, strength[si], cutoff)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.tobytes() == w.tobytes()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), brushes=st.integers(0, 4))
def test_in_sky_equals_the_matmul_form_to_the_bit(seed, brushes):
    """RayBatcher._in_sky (face by face on the points still inside) answers as the (points x
    faces) table it replaced, points on and near the faces included."""
    from brushbake.core.compile.light.lm_direct import RayBatcher
    from brushbake.core.detmath import matmul

    rng = np.random.default_rng(seed)
    sky = []
    for _ in range(brushes):
        k = int(rng.integers(0, 8))
        normals = rng.normal(size=(k, 3))
        normals /= np.sqrt((normals * normals).sum(axis=1))[:, None]
        sky.append((normals, rng.random(k) * rng.choice([0.0, 1.0, 3.0])))
    points = rng.normal(size=(500, 3))
    for normals, dists in sky[:1]:  # points on a face's plane and a hair either side of it
        if len(normals):
            points[:60] = points[:60] - (matmul(points[:60], normals[0]) - dists[0])[:, None] * normals[0]
            points[20:40] += 1e-12 * normals[0]
            points[40:60] -= 1e-12 * normals[0]
    batcher = RayBatcher.__new__(RayBatcher)
    batcher.sky = sky
    want = np.zeros(len(points), dtype=bool)
    for normals, dists in sky:
        want |= np.all(matmul(points, np.asarray(normals, dtype=np.float64).T) - np.asarray(dists)[None, :] < 0, axis=1)
    assert np.array_equal(batcher._in_sky(points), want)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), brushes=st.integers(1, 6))
def test_in_sky_with_boxes_equals_the_matmul_form_to_the_bit(seed, brushes):
    """_in_sky given each brush's box grown by SKY_BOX_MARGIN (as sky_brushes gives them: only the
    points in a brush's box are tested on its planes) answers as the whole (points x faces) table,
    on rotated boxes with points in, around and on their faces and corners."""
    from brushbake.core.compile.light.lm_direct import RayBatcher
    from brushbake.core.detmath import matmul
    from brushbake.core.tolerances import SKY_BOX_MARGIN

    rng = np.random.default_rng(seed)
    sky, points = [], [rng.uniform(-6, 6, size=(200, 3))]
    for _ in range(brushes):
        rot, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        centre, half = rng.uniform(-3, 3, 3), rng.uniform(0.01, 2.0, 3)
        normals = np.concatenate([rot.T, -rot.T])  # rows: the box's axes, both ways
        dists = matmul(normals, centre) + np.concatenate([half, half])
        corners = centre + (np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T * half) @ rot.T
        box = np.array([corners.min(axis=0) - SKY_BOX_MARGIN, corners.max(axis=0) + SKY_BOX_MARGIN])
        sky.append((normals, dists, box))
        inner = centre + (rng.uniform(-1.2, 1.2, size=(100, 3)) * half) @ rot.T
        local = rng.uniform(-1.0, 1.0, size=(100, 3)) * half
        local[:, 0] = half[0]  # on the box's +x face (to rounding)
        on = centre + local @ rot.T
        points += [inner, corners, corners + rng.normal(size=corners.shape) * 1e-12, on]
    points = np.concatenate(points)
    batcher = RayBatcher.__new__(RayBatcher)
    batcher.sky = sky
    want = np.zeros(len(points), dtype=bool)
    for normals, dists, _ in sky:
        want |= np.all(matmul(points, normals.T) - dists[None, :] < 0, axis=1)
    assert want.any()
    assert np.array_equal(batcher._in_sky(points), want)
