"""Lightmaps (issue 12) against independent truth: chart layout (no bilinear bleed, no overlap),
a point light over a plane against I cos(theta) / d^2, a light the PVS hides adds nothing,
no seam between coplanar faces, no dark luxels where brushes touch, the furnace against
E / (1 - rho), cancel keeps the bounces so far, byte-identical pages."""

from __future__ import annotations

import math

import numpy as np
import pytest

from brushbake.core.compile.light.lightmap import bake_light
from brushbake.core.compile.light.lm_charts import PADDING, make_charts, pack_charts
from brushbake.core.compile.light.lm_patches import clip_batch, polygon_area_centroid_2d
from brushbake.core.compile.light.lm_radiosity import point_polygon_form_factor
from brushbake.core.compile.pipeline import bake_scene
from brushbake.core.model.brushes import Contents, box_brush
from brushbake.core.model.light_units import POINT_VALUE_PER_WATT
from brushbake.core.model.scene import Light, Marker, Scene

RNG = np.random.default_rng(12)


def room(name, mins, maxs, t=0.25):
    """Six wall brushes enclosing the box mins..maxs (inner faces on it)."""
    lo, hi = np.array(mins, float), np.array(maxs, float)
    out = []
    for axis in range(3):
        for side, (a, b) in enumerate(((lo[axis] - t, lo[axis]), (hi[axis], hi[axis] + t))):
            bmin, bmax = lo - t, hi + t
            bmin[axis], bmax[axis] = a, b
            out.append(box_brush(bmin, bmax, f"{name}_{axis}{side}"))
    return out


def bake(scene, **settings):
    s = scene.settings
    s.light, s.bevels = True, False
    s.vis = settings.pop("vis", "none")
    for k, v in settings.items():
        setattr(s, k, v)
    return bake_scene(scene)


def charts_of(level):
    """The charts a baked level's lightmap was laid out with (same faces lit, same luxel)."""
    return make_charts(level, level.lm_luxel, lit=level.lm_face_page >= 0)


def sample_pages(level, uv, page):
    """Bilinear lookup (U, V) -> value of page texels, texel centres at (x + 0.5) / S."""
    pages = level.lm_pages
    s = pages.shape[1]
    x = uv[:, 0] * s - 0.5
    y = uv[:, 1] * s - 0.5
    x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
    fx, fy = x - x0, y - y0
    out = 0
    for dx, wx in ((0, 1 - fx), (1, fx)):
        for dy, wy in ((0, 1 - fy), (1, fy)):
            out = out + (wx * wy)[:, None] * pages[page, y0 + dy, x0 + dx]
    return out, (x0, y0)


def points_on_face(level, f, n, rng=RNG):
    """n random points inside face f (convex combinations of its vertices)."""
    v = level.face_vertices(f)
    w = rng.dirichlet(np.ones(len(v)), size=n)
    return w @ v


# ---------------------------------------------------------------- charts and packing


def test_charts_never_overlap_and_bilinear_reads_only_its_own_chart():
    from brushbake.core.formats.loaders import load_scene
    from pathlib import Path

    scene = load_scene(Path(__file__).parents[2] / "sample_scenes" / "two_rooms.json")
    scene.hulls = []
    level = bake(scene, bounces=0, luxel=0.5)
    charts = charts_of(level)
    owner = np.full((charts.num_pages, charts.page_size, charts.page_size), -1)
    faces = np.flatnonzero(charts.face_page >= 0)
    for f in faces:
        x, y = charts.chart_origin[f]
        w, h = charts.grid_size[f] + 2 * PADDING
        block = owner[charts.face_page[f], y : y + h, x : x + w]
        assert block.shape == (h, w) and (block == -1).all(), f"chart {f} overlaps another or leaves the page"
        block[...] = f
    for f in faces:
        pts = points_on_face(level, f, 40)
        uv = charts.uv_of_points(np.full(40, f), pts)
        _, (x0, y0) = sample_pages(type("L", (), {"lm_pages": np.zeros((charts.num_pages, charts.page_size,
                                                                        charts.page_size, 3))})(), uv, 0)
        page = charts.face_page[f]
        for dx in (0, 1):
            for dy in (0, 1):
                assert (owner[page, y0 + dy, x0 + dx] == f).all(), f"face {f} reads another chart"
    # the stored UVs are the charts' (same faces, same order)
    assert np.array_equal(level.lm_vertex_uv, charts.vertex_uv)


def test_pack_charts_fits_and_splits_into_pages():
    sizes = RNG.integers(3, 40, size=(300, 2))
    size, pages, page, origin = pack_charts(sizes, 64)
    assert pages > 1 and size == 64
    for k in range(pages):
        img = np.zeros((64, 64), int)
        for c in np.flatnonzero(page == k):
            x, y = origin[c]
            w, h = sizes[c]
            assert x + w <= 64 and y + h <= 64
            img[y : y + h, x : x + w] += 1
        assert img.max() <= 1


def test_clip_batch_against_areas():
    # unit squares clipped by random lines: area against the exact half-plane cut of a square
    n = 200
    sq = np.tile(np.array([[0, 0], [1, 0], [1, 1], [0, 1]], float), (n, 1, 1))
    a = RNG.normal(size=(n, 2))
    c = RNG.uniform(-1, 1, size=n)
    dist = sq @ a[:, :, None]
    dist = dist[..., 0] - c[:, None]
    out, cnt = clip_batch(sq, np.full(n, 4), dist)
    area, _ = polygon_area_centroid_2d(out, cnt)
    g = (np.stack(np.meshgrid(np.linspace(0, 1, 401), np.linspace(0, 1, 401)), -1).reshape(-1, 2))
    truth = ((g @ a.T - c) >= 0).mean(axis=0)
    assert np.abs(area - truth).max() < 0.01


def test_form_factor_of_a_disk_like_square_and_a_hemisphere():
    # a receiver under a huge square sees (almost) the whole hemisphere: F -> 1
    x = np.zeros((1, 3))
    n = np.array([[0.0, 0.0, 1.0]])
    big = np.array([[[-1e4, -1e4, 1], [1e4, -1e4, 1], [1e4, 1e4, 1], [-1e4, 1e4, 1]]], float)
    assert abs(point_polygon_form_factor(x, n, big, np.array([4]))[0] - 1.0) < 1e-3
    # a small square far away: cos cos A / (pi d^2)
    small = np.array([[[-0.05, -0.05, 10], [0.05, -0.05, 10], [0.05, 0.05, 10], [-0.05, 0.05, 10]]], float)
    f = point_polygon_form_factor(x, n, small, np.array([4]))[0]
    assert abs(f - 0.01 / (math.pi * 100)) < 1e-3 * f
    # a square half below the receiver's plane counts only its upper half
    half = np.array([[[1, -1, -1], [1, 1, -1], [1, 1, 1], [1, -1, 1]]], float)
    up = np.array([[[1, -1, 0], [1, 1, 0], [1, 1, 1], [1, -1, 1]]], float)
    assert abs(point_polygon_form_factor(x, n, half, np.array([4]))[0]
               - point_polygon_form_factor(x, n, up, np.array([4]))[0]) < 1e-12


# ---------------------------------------------------------------- direct light


def luxel_centres(level, charts, faces):
    """Luxels of the faces whose whole square lies inside the face (their centre is not moved)."""
    sel = np.isin(charts.luxel_face, faces)
    idx = np.flatnonzero(sel)
    page, y, x = charts.luxel_texels()
    return idx, charts.luxel_centre[idx], level.lm_pages[page[idx], y[idx], x[idx]]


def test_point_light_over_a_plane_matches_inverse_square_cosine():
    floor = box_brush([-10, -10, -0.5], [10, 10, 0.0], "floor")
    light = Light("bulb", (0.3, -0.2, 2.0), color=(1.0, 0.5, 0.25), kind="point", power=1000.0)
    level = bake(Scene("plane", brushes=[floor], lights=[light]), bounces=0, reflectance=0.0)
    charts = charts_of(level)
    top = [f for f in range(len(level.face_plane)) if level.plane_normals[level.face_plane[f]][2] > 0.5]
    idx, centre, value = luxel_centres(level, charts, top)
    inside = (np.abs(centre[:, :2]) < 9.5).all(axis=1)  # luxels wholly on the face: sampled at their centre
    rel = np.array(light.position) - centre[inside]
    d = np.linalg.norm(rel, axis=1)
    truth = 1000.0 * POINT_VALUE_PER_WATT * (rel[:, 2] / d) / d ** 2
    for ch, c in enumerate(light.color):
        got = value[inside, ch]
        assert np.abs(got / (truth * c) - 1).max() < 0.02
    assert inside.sum() > 1000


def test_light_hidden_by_the_pvs_adds_nothing_and_casts_no_ray():
    a = room("a", [0, 0, 0], [4, 4, 3])
    b = room("b", [4.25, 0, 0], [8.25, 4, 3])  # shares the wall brush position x 4..4.25 (sealed apart)
    lights = [Light("lamp_a", (2, 2, 2.5), kind="point", power=2000.0)]
    markers = [Marker("in_b", "info_null", (6, 2, 1))]
    scene = Scene("two_boxes", brushes=a + b, lights=lights, markers=markers)
    level = bake(scene, vis="flow", bounces=2, reflectance=0.5, allow_leak=True)
    charts = charts_of(level)
    page, y, x = charts.luxel_texels()
    values = level.lm_pages[page, y, x].max(axis=1)
    in_b = charts.luxel_centre[:, 0] > 4.2
    in_a = charts.luxel_centre[:, 0] < 4.05
    assert values[in_a].max() > 0.05
    assert values[in_b].max() == 0.0
    rays_vis = level.stats["light"]["direct_rays"]
    level2 = bake(Scene("two_boxes", brushes=room("a", [0, 0, 0], [4, 4, 3]) + room("b", [4.25, 0, 0], [8.25, 4, 3]),
                        lights=lights, markers=markers), vis="none", bounces=0)
    assert rays_vis < level2.stats["light"]["direct_rays"]  # room b's luxels facing the lamp got no ray


def test_coplanar_faces_meet_without_a_seam_and_touching_brushes_leave_no_dark_luxels():
    # a floor of two brushes meeting at x = 0.3 (off the luxel grid), a crate standing on it
    floor = [box_brush([-6, -6, -0.5], [0.3, 6, 0], "floor_w"), box_brush([0.3, -6, -0.5], [6, 6, 0], "floor_e")]
    crate = box_brush([-2.1, -1.1, 0], [-0.9, 0.6, 1.0], "crate")
    sun = Light("sun", (0, 0, 10), kind="sun", power=3.0, direction=(0.0, 0.0, -1.0))
    lamp = Light("lamp", (0.3, 2.0, 6.0), kind="point", power=5000.0)
    for light in (sun, lamp):
        level = bake(Scene("seam", brushes=floor + [crate], lights=[light]), bounces=0, reflectance=0.0)
        charts = charts_of(level)
        top = [f for f in range(len(level.face_plane))
               if level.plane_normals[level.face_plane[f]][2] > 0.5 and level.face_vertices(f)[:, 2].max() < 0.01]
        # across the seam: bilinear reads 1 cm either side agree within 2%
        ys = np.linspace(-5.5, 5.5, 23)
        for y in ys:
            vals = []
            for x in (0.29, 0.31):
                p = np.array([[x, y, 0.0]])
                f = [g for g in top if _inside(level.face_vertices(g), p[0])]
                assert f  # two where a region's line (y = 0) cuts the floor too: both must agree
                for g in f:
                    v, _ = sample_pages(level, charts.uv_of_points(np.array([g]), p), level.lm_face_page[g])
                    vals.append(v[0, 0])
            assert max(vals) / min(vals) - 1 < 0.02, (light.kind, y, vals)
        if light.kind == "sun":  # straight down: every floor point is lit, right up to the crate
            for f in top:
                pts = points_on_face(level, f, 60)
                v, _ = sample_pages(level, charts.uv_of_points(np.full(60, f), pts), level.lm_face_page[f])
                assert np.abs(v[:, 0] / (3.0 / math.pi) - 1).max() < 0.02, f


def test_a_floor_split_on_a_lattice_line_reads_the_same_on_both_sides():
    """Two brushes meeting at x = 1.0 (a multiple of the 0.5 m luxel), no regions: each face's
    chart ends on the line, so a bilinear read there takes the padding ring's texels; they must be
    the other face's luxels, else the two sides differ by a luxel's gradient of a lamp close by."""
    floor = [box_brush([-3, -3, -0.5], [1.0, 3, 0], "floor_w"), box_brush([1.0, -3, -0.5], [4, 3, 0], "floor_e")]
    lamp = Light("lamp", (1.3, 0.2, 1.5), kind="point", power=2000.0)
    level = bake(Scene("lattice_seam", brushes=floor, lights=[lamp]), bounces=0, reflectance=0.0, region_size=0.0)
    charts = charts_of(level)
    top = [f for f in range(len(level.face_plane))
           if level.plane_normals[level.face_plane[f]][2] > 0.5 and level.face_vertices(f)[:, 2].max() < 0.01]
    assert charts.luxel == 0.5
    for y in np.linspace(-2.97, 2.97, 23):  # up to the floor's ends: the corner padding too
        vals = []
        for x in (1.0 - 1e-4, 1.0, 1.0 + 1e-4):
            p = np.array([[x, y, 0.0]])
            for g in [g for g in top if _inside(level.face_vertices(g), p[0])]:
                v, _ = sample_pages(level, charts.uv_of_points(np.array([g]), p), level.lm_face_page[g])
                vals.append(v[0, 0])
        assert len(vals) >= 4  # on the line itself both faces read
        assert max(vals) / min(vals) - 1 < 0.02, (y, vals)


def test_padding_holds_a_touching_coplanar_neighbours_luxel_else_the_edge_copy():
    """Floors A (x in [-2, 1]) and B ([1, 3]) meet on a lattice line; C ([3.2, 4]) lies past a gap
    whose far side's luxel cell [3.0, 3.5] has its centre on C.  A padding texel takes the luxel of
    the same lattice cell of a coplanar face that meets the chart's edge there (checked against a
    plain loop: the shared side's middle, or the shared corner, on both faces, and the neighbour's
    luxel centre on it), a corner texel with none takes its sides' (the column's, else the row's),
    else a copy of the chart's nearest edge luxel; pages hold exactly that."""
    from brushbake.core.compile.light.lightmap import fill_pages
    from brushbake.core.compile.light.lm_charts import chart_texels, edge_lines

    floor = [box_brush([-2, -2, -0.5], [1, 2, 0], "a"), box_brush([1, -2, -0.5], [3, 2, 0], "b"),
             box_brush([3.2, -2, -0.5], [4, 2, 0], "c")]
    scene = Scene("pad", brushes=floor, lights=[Light("l", (0, 0, 3), kind="point", power=100.0)])
    level = bake(scene, bounces=0, region_size=0.0)
    charts = charts_of(level)
    page, y, x, lux = chart_texels(level, charts)
    lux_of = {(int(page[k]), int(y[k]), int(x[k])): int(lux[k]) for k in range(len(lux))}
    assert len(lux_of) == len(lux)  # no texel written twice
    cell_of = {(int(level.face_plane[f]), *map(int, charts.grid_lo[f] + ij)): n
               for n, (f, ij) in enumerate(zip(charts.luxel_face, charts.luxel_ij))}
    luxel = charts.luxel
    checked = {"neighbour": 0, "copy": 0, "corner": 0}
    for f in np.flatnonzero(charts.face_page >= 0):
        verts = level.face_vertices(f)
        w, h = charts.grid_size[f]
        u, v, n = charts.face_u[f], charts.face_v[f], charts.face_normal[f]
        to_3d = lambda st: st[0] * u + st[1] * v + charts.face_dist[f] * n  # noqa: E731

        def lender(tx, ty):  # the neighbour's luxel the padding texel (tx, ty) shows, or None
            i, j = min(max(tx - PADDING, 0), w - 1), min(max(ty - PADDING, 0), h - 1)
            cell = charts.grid_lo[f] + (tx - PADDING, ty - PADDING)
            meet = to_3d((cell + charts.grid_lo[f] + (i, j) + 1) * 0.5 * luxel)
            m = cell_of.get((int(level.face_plane[f]), int(cell[0]), int(cell[1])))
            if m is not None and _inside(verts, meet):
                g = level.face_vertices(int(charts.luxel_face[m]))
                if _inside(g, meet) and _inside(g, to_3d((cell + 0.5) * luxel)):
                    return m
            return None

        for ty in range(h + 2 * PADDING):
            for tx in range(w + 2 * PADDING):
                i, j = min(max(tx - PADDING, 0), w - 1), min(max(ty - PADDING, 0), h - 1)
                key = (int(charts.face_page[f]), int(charts.chart_origin[f, 1] + ty), int(charts.chart_origin[f, 0] + tx))
                own = int(charts.luxel_first[f] + j * w + i)
                if (i, j) == (tx - PADDING, ty - PADDING):
                    assert lux_of[key] == own
                    continue
                expect, kind = lender(tx, ty), "neighbour"
                if expect is None and i != tx - PADDING and j != ty - PADDING:  # a corner: its sides' lenders
                    expect, kind = lender(tx, j + PADDING), "corner"
                    expect = expect if expect is not None else lender(i + PADDING, ty)
                if expect is None:
                    expect, kind = own, "copy"
                assert lux_of[key] == expect, (f, tx, ty)
                checked[kind] += 1
    assert checked["neighbour"] >= 2 * 8 and checked["copy"] > 0 and checked["corner"] >= 4
    # the cases named: A's east padding holds B's luxels, B's east padding (the gap) its own edge
    top = {name: next(f for f in range(len(level.face_plane)) if level.plane_normals[level.face_plane[f]][2] > 0.5
                      and level.face_vertices(f)[:, 2].max() < 0.01 and _inside(level.face_vertices(f), np.array(p)))
           for name, p in (("a", (0.5, 0.25, 0)), ("b", (2.0, 0.25, 0)), ("c", (3.5, 0.25, 0)))}

    def texel_at(f, px, py):  # the texel of face f's chart holding the lattice cell of (px, py)
        st = np.array([np.dot((px, py, 0.0), charts.face_u[f]), np.dot((px, py, 0.0), charts.face_v[f])])
        c = np.floor(st / luxel).astype(int) - charts.grid_lo[f] + PADDING
        return (int(charts.face_page[f]), int(charts.chart_origin[f, 1] + c[1]), int(charts.chart_origin[f, 0] + c[0]))

    b_cell = cell_of[(int(level.face_plane[top["b"]]), *map(int, np.floor(np.array(
        [np.dot((1.25, 0.25, 0.0), charts.face_u[top["b"]]), np.dot((1.25, 0.25, 0.0), charts.face_v[top["b"]])]) / luxel)))]
    assert int(charts.luxel_face[b_cell]) == top["b"] and lux_of[texel_at(top["a"], 1.25, 0.25)] == b_cell
    assert charts.luxel_face[lux_of[texel_at(top["b"], 3.25, 0.25)]] == top["b"]  # not C's, past the gap
    assert charts.luxel_face[lux_of[texel_at(top["a"], -2.25, 0.25)]] == top["a"]  # nothing west of A
    # fill_pages writes exactly those luxels' values
    values = np.arange(charts.num_luxels, dtype=np.float64)[:, None] * np.array([1.0, 0.5, 0.25])
    pages = fill_pages(level, charts, values, edge_lines(level, charts))
    assert np.array_equal(pages[page, y, x], values[lux].astype(np.float32))


def _inside(verts, p):
    n = np.cross(verts[1] - verts[0], verts[2] - verts[0])
    for k in range(len(verts)):
        e = verts[(k + 1) % len(verts)] - verts[k]
        if np.dot(np.cross(e, p - verts[k]), n) < -1e-9:
            return False
    return True


# ---------------------------------------------------------------- bounces


def furnace(rho, **kw):
    walls = room("box", [0, 0, 0], [4, 3, 2.5])
    glow = Light("glow", (2, 1.5, 1.2), kind="surface", texture="glow", power=1.0)
    for b in walls:
        b.textures = ["glow"] * len(b.normals)
    return bake(Scene("furnace", brushes=walls, lights=[glow]), vis="fast", reflectance=rho, **kw)


def test_furnace_converges_to_emission_over_one_minus_rho():
    rho = 0.5
    level = furnace(rho, bounces=30, light_threshold=0.0, patch=2)
    charts = charts_of(level)
    page, y, x = charts.luxel_texels()
    v = level.lm_pages[page, y, x]
    assert len(v) > 200
    assert np.abs(v / (1.0 / (1 - rho)) - 1).max() < 0.02


def test_cancel_during_bounces_keeps_the_light_so_far():
    calls = {"n": 0}

    def cancel():
        calls["n"] += 1
        return calls["n"] > 3  # after charts, direct light and bounce 1: stop in bounce 2

    walls = room("box", [0, 0, 0], [4, 3, 2.5])
    scene = Scene("box", brushes=walls, lights=[Light("l", (2, 1.5, 2), kind="point", power=500.0)])
    scene.settings.light, scene.settings.bevels, scene.settings.vis = True, False, "none"
    scene.settings.patch = 1
    level = bake_scene(scene)
    full = level.stats["light"]
    from brushbake.core.compile.pipeline import compile_scene

    level2 = compile_scene(scene)
    stats = bake_light(level2, scene, cancel=cancel)
    assert stats["cancelled"] and stats["bounces_done"] < full["bounces_done"]
    assert level2.has_light and level2.lm_pages.max() > 0
    assert (level2.lm_pages <= level.lm_pages + 1e-6).all()  # less bounce light, never more


def test_bake_is_byte_identical():
    a = furnace(0.4, bounces=3)
    b = furnace(0.4, bounces=3)
    assert a.lm_pages.tobytes() == b.lm_pages.tobytes()
    assert a.lm_vertex_uv.tobytes() == b.lm_vertex_uv.tobytes()


def test_a_light_with_a_radius_casts_soft_edges():
    """A wall between a lamp and part of the floor: with radius 0 every floor luxel is fully lit or
    fully dark (against the unshadowed I cos / d^2); with a radius, luxels along the shadow's edge
    get a share in between (several rays per luxel to the lamp's disk)."""
    floor = box_brush([-6, -6, -0.5], [6, 6, 0], "floor")
    wall = box_brush([0.0, -6, 0], [0.2, 6, 1.0], "wall")
    shares = {}
    for radius in (0.0, 0.5):
        lamp = Light("lamp", (-1.0, 0.0, 2.0), kind="point", power=2000.0, radius=radius)
        level = bake(Scene("soft", brushes=[floor, wall], lights=[lamp]), bounces=0, reflectance=0.0, light_samples=16)
        charts = charts_of(level)
        top = [f for f in range(len(level.face_plane))
               if level.plane_normals[level.face_plane[f]][2] > 0.5 and level.face_vertices(f)[:, 2].max() < 0.01]
        idx, centre, value = luxel_centres(level, charts, top)
        ok = (np.abs(centre[:, :2]) < 5.5).all(axis=1) & (centre[:, 0] > 0.5)
        rel = np.array(lamp.position) - centre[ok]
        d = np.linalg.norm(rel, axis=1)
        free = 2000.0 * POINT_VALUE_PER_WATT * (rel[:, 2] / d) / d ** 2
        shares[radius] = value[ok, 0] / free
    hard, soft = shares[0.0], shares[0.5]
    assert np.all((hard < 1e-9) | (np.abs(hard - 1) < 2e-3))  # (the 1 mm lift, float32 pages)
    between = (soft > 0.05) & (soft < 0.95)
    assert between.sum() >= 10 and ((hard < 1e-9).sum() > 10) and ((hard > 0.99).sum() > 10)


def test_solid_angle_is_the_mean_of_cos_over_d2():
    """A patch's direct light is the light's solid angle over its area: against the mean of
    cos / d^2 over a dense grid of the polygon (a lamp 0.2 m above a 0.5 m square, off centre too)."""
    from brushbake.core.compile.light.lm_direct import solid_angle

    square = np.array([[[0, 0, 0], [0.5, 0, 0], [0.5, 0.5, 0], [0, 0.5, 0], [0, 0, 0]]], float)
    g = (np.arange(400) + 0.5) / 400 * 0.5
    xs, ys = np.meshgrid(g, g)
    for lamp in ([0.25, 0.25, 0.2], [0.9, -0.3, 0.7]):
        rel = np.array(lamp) - np.stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)], axis=1)
        d2 = (rel ** 2).sum(axis=1)
        mean = (rel[:, 2] / np.sqrt(d2) / d2).mean()
        got = solid_angle(np.array(lamp, float), square, np.array([4]))[0] / 0.25
        assert abs(got / mean - 1) < 1e-3


def test_compare_counts_whole_luxels_and_is_zero_for_equal_pages():
    from brushbake.core.compile.light.lm_compare import face_luxels, relative_rmse

    floor = box_brush([-2.2, -1.0, -0.5], [2.0, 1.0, 0.0], "floor")  # 4.2 x 2 m: 8 x 4 whole luxels on top
    level = bake(Scene("f", brushes=[floor], lights=[Light("l", (0, 0, 2), kind="point", power=100.0)]), bounces=0)
    page, y, x = face_luxels(level)
    charts = charts_of(level)
    top = [f for f in range(len(level.face_plane)) if level.plane_normals[level.face_plane[f]][2] > 0.5]
    pt, yt, xt = charts.luxel_texels()
    on_top = set(zip(pt[np.isin(charts.luxel_face, top)].tolist(), yt[np.isin(charts.luxel_face, top)].tolist(),
                     xt[np.isin(charts.luxel_face, top)].tolist()))
    assert len(on_top & set(zip(page.tolist(), y.tolist(), x.tolist()))) == 8 * 4
    assert relative_rmse(level, level.lm_pages, level.lm_pages) == 0.0
    # 10% too bright everywhere: 10% per lit luxel, less where the floor (dark sides) takes over
    assert 0.05 < relative_rmse(level, 1.1 * level.lm_pages, level.lm_pages) <= 0.1 + 1e-6


def test_a_dim_scene_keeps_its_bounce_light():
    """BOUNCE_CUTOFF is a fraction of white: a furnace glowing at 1/64 of white would lose much of
    its bounce light to it (13.7% short with the absolute cutoff).  The cutoff follows the scene's
    brightness by a power of two (lm_radiosity.bounce_cutoff), so the dim furnace converges to
    E / (1 - rho) as the bright one does, and is the bright one divided by 64 within 1%."""
    rho = 0.5
    bright = furnace(rho, bounces=30, light_threshold=0.0, patch=2)
    walls = room("box", [0, 0, 0], [4, 3, 2.5])
    glow = Light("glow", (2, 1.5, 1.2), kind="surface", texture="glow", power=1.0 / 64.0)
    for b in walls:
        b.textures = ["glow"] * len(b.normals)
    dim = bake(Scene("furnace", brushes=walls, lights=[glow]), vis="fast", reflectance=rho, bounces=30,
               light_threshold=0.0, patch=2)
    lit = bright.lm_pages > 0
    assert np.abs(dim.lm_pages[lit] * 64.0 / bright.lm_pages[lit] - 1).max() < 0.01
    charts = charts_of(dim)
    page, y, x = charts.luxel_texels()
    v = dim.lm_pages[page, y, x]
    assert np.abs(v / ((1.0 / 64.0) / (1 - rho)) - 1).max() < 0.02
