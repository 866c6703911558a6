"""Area lights (issue 12 points 2 and 3): Blender's Area light in its units against closed forms,
soft shadow edges from the samples over the light, spread, and bounces.

Truth: the form factor from a point to a parallel rectangle by the corner formula (Howell's
catalogue, C-11 superposed), to a coaxial disk R^2 / (R^2 + h^2), and for a narrowed spread a
dense midpoint sum over the light; an area light of P watts and area A is a Lambertian emitter
of radiance P / (pi A) (what Cycles renders: tests/addon/test_light.py, 'area_units')."""

from __future__ import annotations

import math

import numpy as np
import pytest

from brushbake.core.compile.light.lm_area import area_source, unit_cells
from brushbake.core.model.brushes import box_brush
from brushbake.core.model.light_units import area_light_area, area_spread_factor
from brushbake.core.model.scene import Light, Scene

from test_lightmap import bake, charts_of, luxel_centres


def corner_ff(x, y, h):
    """Form factor from a point to a parallel rectangle [0, x] x [0, y] at height h, the point
    under the corner (signed: x, y may be negative)."""
    X, Y = np.abs(x) / h, np.abs(y) / h
    a, b = np.sqrt(1 + X * X), np.sqrt(1 + Y * Y)
    f = (X / a * np.arctan(Y / a) + Y / b * np.arctan(X / b)) / (2 * math.pi)
    return f * np.sign(x) * np.sign(y)


def rect_ff(px, py, cx, cy, sx, sy, h):
    """Form factor from points (px, py, 0) facing up to the rectangle centred (cx, cy, h), sides
    sx, sy, facing down: four corner rectangles superposed."""
    out = 0.0
    for ex, sgx in ((cx + sx / 2, 1), (cx - sx / 2, -1)):
        for ey, sgy in ((cy + sy / 2, 1), (cy - sy / 2, -1)):
            out = out + sgx * sgy * corner_ff(ex - px, ey - py, h)
    return out


def floor_values(level, z=0.0):
    charts = charts_of(level)
    up = [f for f in range(len(level.face_plane)) if level.plane_normals[level.face_plane[f]][2] > 0.5
          and abs(level.face_vertices(f)[:, 2].max() - z) < 1e-6]
    _, centre, value = luxel_centres(level, charts, up)
    return centre, value


def plane_scene(lights, extra=()):
    return Scene("plane", brushes=[box_brush([-8, -8, -0.5], [8, 8, 0.0], "floor"), *extra], lights=lights)


@pytest.mark.parametrize("shape,size,size_y", [("square", 1.0, 1.0), ("rectangle", 2.0, 0.5)])
def test_rectangle_light_over_a_plane_matches_the_closed_form(shape, size, size_y):
    """Every floor luxel within 3 m of a rectangle light 1 m up (centred over a luxel centre):
    L F by the corner formula, L = P / (pi A), within 2%; the centre luxel within 0.5%."""
    p, h = 100.0, 1.0
    light = Light("panel", (0.25, 0.25, h), color=(1.0, 0.5, 0.25), kind="area", power=p, shape=shape,
                  size=size, size_y=size_y, direction=(0, 0, -1))
    level = bake(plane_scene([light]), bounces=0, reflectance=0.0, vis="none", light_samples=4)
    centre, value = floor_values(level)
    near = np.abs(centre[:, :2] - 0.25).max(axis=1) < 3.0
    radiance = p / (math.pi * size * size_y)
    truth = radiance * rect_ff(centre[near, 0], centre[near, 1], 0.25, 0.25, size, size_y, h)
    for ch, c in enumerate(light.color):
        assert np.abs(value[near, ch] / (truth * c) - 1).max() < 0.02
    at = np.flatnonzero(np.abs(centre[:, :2] - 0.25).max(axis=1) < 1e-9)
    assert len(at) == 1
    x = size / (2 * h)
    if shape == "square":  # the closed form at the centre: (4 / pi) x / sqrt(1 + x^2) atan(x / sqrt(1 + x^2))
        q = x / math.sqrt(1 + x * x)
        assert value[at[0], 0] == pytest.approx(radiance * 4 / math.pi * q * math.atan(q), rel=5e-3)
    assert near.sum() > 100


def test_disk_light_at_its_centre_and_one_sidedness():
    """Under a disk of radius R at h: F = R^2 / (R^2 + h^2) (the 32-gon of the same area: within
    1%); a light facing up lights nothing below it."""
    p, h, r = 50.0, 0.8, 0.6
    down = Light("disk", (0.25, 0.25, h), kind="area", power=p, shape="disk", size=2 * r, direction=(0, 0, -1))
    level = bake(plane_scene([down]), bounces=0, reflectance=0.0, vis="none")
    centre, value = floor_values(level)
    at = np.flatnonzero(np.abs(centre[:, :2] - 0.25).max(axis=1) < 1e-9)[0]
    assert value[at, 0] == pytest.approx(p / (math.pi * math.pi * r * r) * r * r / (r * r + h * h), rel=0.01)
    up = Light("disk", (0.25, 0.25, h), kind="area", power=p, shape="disk", size=2 * r, direction=(0, 0, 1))
    level = bake(plane_scene([up]), bounces=0, reflectance=0.0, vis="none")
    assert floor_values(level)[1].max() == 0.0


@pytest.mark.parametrize("spread", [60.0, 10.0])
def test_narrow_spread_matches_a_dense_sum_and_keeps_the_power(spread):
    """Spread 60 degrees (the light's cells: its cone is wider than the light) and 10 degrees
    (samples drawn in the cone on the light): luxels against the midpoint sum of
    L s(theta) cos cos / (pi d^2) over a 400 x 400 grid on the light (within 2% where lit above
    5% of the peak); the spread factor integrates to the same power as the plain emitter."""
    p, h, size = 100.0, 1.5, 1.0
    light = Light("softbox", (0.25, 0.25, h), kind="area", power=p, size=size, spread=spread, direction=(0, 0, -1))
    level = bake(plane_scene([light]), bounces=0, reflectance=0.0, vis="none", light_samples=64)
    centre, value = floor_values(level)
    near = np.abs(centre[:, :2] - 0.25).max(axis=1) < 2.5
    m = 400
    g = ((np.arange(m) + 0.5) / m - 0.5) * size
    u, v = [a.ravel() + 0.25 for a in np.meshgrid(g, g)]
    truth = np.zeros(int(near.sum()))
    for k, (px, py) in enumerate(centre[near, :2]):
        dx, dy = u - px, v - py
        d2 = dx * dx + dy * dy + h * h
        cos = h / np.sqrt(d2)
        s = area_spread_factor(spread, np.sqrt(dx * dx + dy * dy) / h)
        truth[k] = (s * cos * cos / d2).sum() * (size * size / (m * m)) / math.pi
    truth *= p / (math.pi * size * size)
    lit = truth > 0.05 * truth.max()
    assert np.abs(value[near, 0][lit] / truth[lit] - 1).max() < 0.02
    assert (value[near, 0][~lit] <= 0.05 * truth.max() * 1.1).all()
    theta = (np.arange(20000) + 0.5) / 20000 * (math.pi / 2)
    for width in (1.0, 5.0, 30.0, 90.0, 179.0):  # 2 pi integral s cos sin dtheta = pi
        s = area_spread_factor(width, np.tan(theta))
        assert 2 * math.pi * (s * np.cos(theta) * np.sin(theta)).sum() * (math.pi / 2 / 20000) == pytest.approx(
            math.pi, rel=2e-3)


def test_area_light_casts_soft_shadow_edges():
    """A wall between a 2 m panel and part of the floor: far behind the wall no light, far from it
    the unshadowed closed form, and along the shadow's edge a band of luxels with a share in
    between (several rays per luxel to cells of the light), increasing away from the wall."""
    p, h = 400.0, 2.0
    light = Light("panel", (-1.25, 0.25, h), kind="area", power=p, size=2.0, direction=(0, 0, -1))
    wall = box_brush([0.0, -8, 0], [0.2, 8, 1.0], "wall")
    level = bake(plane_scene([light], [wall]), bounces=0, reflectance=0.0, vis="none", light_samples=16, luxel=0.25)
    centre, value = floor_values(level)
    ok = (np.abs(centre[:, 1] - 0.25) < 0.15) & (centre[:, 0] > 0.3) & (centre[:, 0] < 6.0)
    free = p / (math.pi * 4.0) * rect_ff(centre[ok, 0], centre[ok, 1], -1.25, 0.25, 2.0, 2.0, h)
    share = value[ok, 0] / free
    x = centre[ok, 0]
    order = np.argsort(x)
    assert (share[x < 0.6] < 0.05).all()  # the wall hides the whole panel just behind it
    between = (share > 0.1) & (share < 0.9)
    assert between.sum() >= 6  # the penumbra runs from x = 0.65 to 2.65 m
    assert np.all(np.diff(share[order]) >= -0.02)  # the penumbra brightens away from the wall
    unshadowed = (np.abs(centre[:, 1] - 0.25) < 0.15) & (centre[:, 0] < -3.0)
    truth = p / (math.pi * 4.0) * rect_ff(centre[unshadowed, 0], centre[unshadowed, 1], -1.25, 0.25, 2.0, 2.0, h)
    assert np.abs(value[unshadowed, 0] / truth - 1).max() < 0.02


def test_area_light_bounces_and_is_deterministic():
    """In a closed room an area light's light bounces (more with bounces than without), and two
    bakes are byte-identical."""
    from test_lightmap import room

    light = Light("panel", (2.0, 2.0, 2.99), kind="area", power=200.0, shape="ellipse", size=1.0, size_y=0.5,
                  direction=(0, 0, -1))
    scene = Scene("box", brushes=room("r", [0, 0, 0], [4, 4, 3]), lights=[light])
    direct = bake(scene, bounces=0, reflectance=0.5, vis="none")
    a = bake(scene, bounces=2, reflectance=0.5, vis="none")
    b = bake(scene, bounces=2, reflectance=0.5, vis="none")
    assert a.lm_pages.tobytes() == b.lm_pages.tobytes()
    assert a.lm_pages.sum() > 1.2 * direct.lm_pages.sum()
    # the ceiling around the lamp gets only bounced light
    assert direct.stats["light"]["direct_rays"] > 0


def test_cells_are_stratified_and_equal_area():
    sq = unit_cells("square", 8)
    assert sq.shape == (9, 2) and np.allclose(np.sort(np.unique(sq[:, 0])), [-2 / 3, 0, 2 / 3])
    disk = unit_cells("disk", 16)
    assert disk.shape == (16, 2) and (np.hypot(disk[:, 0], disk[:, 1]) <= 1).all()
    assert np.allclose(disk.mean(axis=0), 0, atol=1e-12)
    src = area_source(Light("e", (0, 0, 0), kind="area", power=1.0, shape="ellipse", size=2.0, size_y=1.0,
                            axis=(0, 1, 0)), 1 / 32, 9)
    assert np.ptp(src.cells[:, 1]) > np.ptp(src.cells[:, 0])  # size along the axis (y)
    assert area_light_area(Light("e", (0, 0, 0), kind="area", shape="ellipse", size=2.0, size_y=1.0)) == \
        pytest.approx(math.pi / 2)


def test_an_area_light_through_a_wall_lights_both_rooms_as_without_a_pvs(monkeypatch):
    """An area light reaches the clusters that any cluster under it sees: a panel through the
    wall of two rooms sealed apart, centred in room a, lights room b by its part there, and the
    PVS changes no bit (truth: the same bake with the PVS test answering 'visible' for every
    cluster; the PVS may only skip rays that would be blocked).  Culling by the cluster in front
    of its centre alone left room b dark."""
    from test_lightmap import room

    from brushbake.core.compile.light import lm_direct
    from brushbake.core.model.scene import Marker

    brushes = room("a", [0, 0, 0], [4, 4, 3]) + room("b", [4.25, 0, 0], [8.25, 4, 3])
    panel = Light("panel", (3.5, 2.0, 2.9), kind="area", power=400.0, size=3.0, size_y=1.0, shape="rectangle",
                  direction=(0, 0, -1))

    def baked():
        scene = Scene("through", brushes=brushes, lights=[panel], markers=[Marker("in_b", "info_null", (6, 2, 1))])
        return bake(scene, vis="flow", bounces=0, reflectance=0.0, light_samples=16, allow_leak=True)

    level = baked()
    with monkeypatch.context() as m:
        m.setattr(lm_direct, "_light_sees", lambda light, see, clusters: np.ones(len(clusters), dtype=bool))
        truth = baked()
    charts = charts_of(level)
    page, y, x = charts.luxel_texels()
    in_b = charts.luxel_centre[:, 0] > 4.3
    assert truth.lm_pages[page, y, x][in_b].max() > 0.5  # the part of the panel in room b lights it
    assert np.array_equal(level.lm_pages, truth.lm_pages)
