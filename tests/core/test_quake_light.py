"""Quake lights as ericw-tools' light documents them (core/model/light_units.py), each against its
formula on a plane: a floor brush, one light above it, no bounces, every luxel wholly on the face
compared at its sample point (its centre lifted LUXEL_LIFT).

- 'delay' 0 linear (the default, zero at 'light' units; 'wait' scales the distance; '_falloff'
  sets where it ends), 1 inverse, 2 inverse square, 3 none, 5 inverse square from 128 units,
  4 local minlight (raises what it sees to its value, adds nothing);
- '_color' (0-255 and 0-1), '_anglescale' 0, 0.5 and 1; spots ('mangle', 'angle', '_softangle');
- worldspawn '_sunlight' with '_sun_mangle' and '_sunlight_color', and a '_sun 1' entity;
- worldspawn 'light' / '_minlight' with '_minlight_color': no luxel darker;
- Blender lights (a power given) keep Blender's units, and a .json light with no power the older
  inverse-square rule;
- the keys read from a .map, bad values named; JSON round trip;
- PNG pages: the automatic exposure saturates at most 1% of the lit texels, `--exposure` sets it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from brushbake.core.formats.mapfile import load_map_text
from brushbake.core.formats.scene_json import dumps_scene, load_scene_json
from brushbake.core.model.light_units import POINT_VALUE_PER_WATT, quake_angle, quake_light_value, quake_light_watts
from brushbake.core.tolerances import LIGHT_CUTOFF, LUXEL_LIFT
from brushbake.exporters.png import SRGB8_TOP, auto_exposure, lightmap_png_files, read_png_rgb8

from test_lightmap import bake, charts_of, luxel_centres

S = 1 / 32  # metres per unit
FLOOR = """{
"classname" "worldspawn"
%s
{
( -640 0 0 ) ( -640 1 0 ) ( -640 0 1 ) floor 0 0 0 1 1
( 640 0 0 ) ( 640 0 1 ) ( 640 1 0 ) floor 0 0 0 1 1
( 0 0 -16 ) ( 0 1 -16 ) ( -1 0 -16 ) floor 0 0 0 1 1
( 0 0 0 ) ( -1 0 0 ) ( 0 1 0 ) floor 0 0 0 1 1
( 0 -640 0 ) ( -1 -640 0 ) ( 0 -640 1 ) floor 0 0 0 1 1
( 0 640 0 ) ( 0 640 1 ) ( -1 640 0 ) floor 0 0 0 1 1
}
}
"""


def light_entity(keys: dict) -> str:
    return "{\n" + "".join(f'"{k}" "{v}"\n' for k, v in {"classname": "light", **keys}.items()) + "}\n"


def plane_scene(lights: list[dict], world: dict | None = None):
    world_keys = "".join(f'"{k}" "{v}"\n' for k, v in (world or {}).items())
    return load_map_text(FLOOR % world_keys + "".join(light_entity(k) for k in lights))


def floor_luxels(scene, **settings):
    """(sample points (N, 3) in metres, values (N, 3)) of the floor's top face's whole luxels."""
    level = bake(scene, bounces=0, reflectance=0.0, luxel=0.5, **settings)
    charts = charts_of(level)
    top = [f for f in range(len(level.face_plane)) if level.plane_normals[level.face_plane[f]][2] > 0.5]
    _, centre, value = luxel_centres(level, charts, top)
    inside = (np.abs(centre[:, :2]) < 19.5).all(axis=1)
    return centre[inside] + [0.0, 0.0, LUXEL_LIFT], value[inside].astype(np.float64), level


def expected_point(points, origin_units, delay=0, light=300.0, wait=1.0, falloff=0.0, anglescale=0.5,
                   color=(1.0, 1.0, 1.0)):
    rel = np.asarray(origin_units, dtype=np.float64) * S - points
    d = np.linalg.norm(rel, axis=1)
    cos = rel[:, 2] / d
    v = quake_light_value(delay, light, wait, falloff, d / S) * quake_angle(anglescale, cos) / 255.0
    return v[:, None] * np.asarray(color)[None, :]


def compare(got, want):
    """Equal to float32 rounding, except texels too near the cutoff to call."""
    live = want.max(axis=1) >= LIGHT_CUTOFF
    near = np.abs(want.max(axis=1) / LIGHT_CUTOFF - 1) < 0.01
    want = np.where(live[:, None], want, 0.0)
    ok = np.isclose(got, want, rtol=2e-6, atol=1e-7) | near[:, None]
    assert ok.all(), f"{(~ok).any(axis=1).sum()} luxels differ, e.g. got {got[~ok.all(axis=1)][0]} want " \
                     f"{want[~ok.all(axis=1)][0]}"
    return live


ORIGIN = (24, -40, 96)


@pytest.mark.parametrize("keys, formula", [
    ({}, {}),  # linear, 300: zero at 300 units
    ({"light": "200", "wait": "2"}, {"light": 200.0, "wait": 2.0}),  # zero at 100 units
    ({"light": "250", "_falloff": "400"}, {"light": 250.0, "falloff": 400.0}),
    ({"light": "150", "delay": "1", "wait": "0.5"}, {"delay": 1, "light": 150.0, "wait": 0.5}),
    ({"light": "150", "delay": "2"}, {"delay": 2, "light": 150.0}),
    ({"light": "90", "delay": "3"}, {"delay": 3, "light": 90.0}),
    ({"light": "400", "delay": "5", "wait": "1.5"}, {"delay": 5, "light": 400.0, "wait": 1.5}),
    ({"_color": "255 128 0"}, {"color": (1.0, 128 / 255, 0.0)}),
    ({"_color": "0.25 0.5 1", "_anglescale": "1"}, {"color": (0.25, 0.5, 1.0), "anglescale": 1.0}),
    ({"_anglescale": "0"}, {"anglescale": 0.0}),
], ids=["linear", "wait", "falloff", "inverse", "inverse-square", "none", "inverse-square-128", "color255",
        "color1-anglescale1", "anglescale0"])
def test_each_falloff_on_a_plane(keys, formula):
    points, got, _ = floor_luxels(plane_scene([{"origin": " ".join(map(str, ORIGIN)), **keys}]))
    live = compare(got, expected_point(points, ORIGIN, **formula))
    assert live.sum() > 5
    if not formula.get("delay") and not formula.get("falloff"):  # linear: dark from light / wait units on
        reach = formula.get("light", 300.0) / formula.get("wait", 1.0)
        d = np.linalg.norm(np.asarray(ORIGIN) * S - points, axis=1) / S
        assert not got[d >= reach].any() and got[d < reach - 1].max(axis=1).min() > 0


def test_linear_300_is_quakes_default():
    """'light 300' gives 300 / 255 of white under the light (A = 1 straight down) and 172 / 255 at 128
    units, and nothing past 300 units (the issue's complaint: it was an inverse square)."""
    assert math.isclose(float(quake_light_value(0, 300, 1, 0, 128.0)), 172.0)
    assert float(quake_light_value(0, 300, 1, 0, 300.0)) == 0.0
    assert math.isclose(float(quake_light_value(2, 300, 1, 0, 256.0)), 75.0)
    assert math.isclose(float(quake_light_value(1, 300, 1, 0, 256.0)), 150.0)
    assert math.isclose(float(quake_light_value(5, 300, 1, 0, 128.0)), 75.0)
    assert float(quake_light_value(0, 300, 1, 0, 0.0)) == 300.0 - 0.1  # d is at least 0.1 unit
    assert float(quake_angle(0.5, -0.1)) == 0.0 and float(quake_angle(0.5, 0.0001)) > 0.5


@pytest.mark.parametrize("keys, cone, soft", [({"angle": "60", "_softangle": "30"}, 60.0, 30.0),
                                             ({"angle": "50"}, 50.0, 0.0), ({}, 40.0, 0.0),
                                             ({"_cone": "70", "_softangle": "90"}, 70.0, 0.0)])
def test_a_quake_spot_on_a_plane(keys, cone, soft):
    """'mangle' makes a spot of 'angle' degrees (default 40), full inside '_softangle', fading
    linearly in the cosine to the edge (ericw-tools' rule); a soft cone wider than the cone is none."""
    scene = plane_scene([{"origin": " ".join(map(str, ORIGIN)), "mangle": "30 -70 0", "light": "500", **keys}])
    light = scene.lights[0]
    assert (light.kind, light.spot_size, light.softangle) == ("spot", cone, soft)
    points, got, _ = floor_luxels(scene)
    rel = points - np.asarray(ORIGIN) * S
    c = (rel / np.linalg.norm(rel, axis=1)[:, None]) @ np.asarray(light.direction)
    lo, hi = math.cos(math.radians(cone / 2)), math.cos(math.radians(soft / 2))
    spot = np.clip((c - lo) / (hi - lo), 0, 1) if soft else (c > lo).astype(float)
    want = expected_point(points, ORIGIN, light=500.0) * spot[:, None]
    edge = np.abs(c - lo) < 1e-9  # on the hard edge itself: either side
    live = compare(np.where(edge[:, None], 0, got), np.where(edge[:, None], 0, want))
    assert live.sum() > 10 and (spot == 0).sum() > 100
    if soft:
        assert ((spot > 0.05) & (spot < 0.95)).sum() > 10  # the ramp is seen


def test_local_minlight_raises_and_does_not_add():
    """delay 4 with a linear light: each luxel is the larger of the two, not their sum."""
    lights = [{"origin": "24 -40 96"}, {"origin": "-200 100 64", "light": "60", "delay": "4"}]
    points, got, _ = floor_luxels(plane_scene(lights))
    linear = expected_point(points, (24, -40, 96))
    local = expected_point(points, (-200, 100, 64), delay=4, light=60.0)
    compare(got, np.maximum(linear, np.where(local.max(axis=1, keepdims=True) >= LIGHT_CUTOFF, local, 0.0)))
    assert (got > linear + 1e-3).any() and (got < linear + local - 1e-3).any()


@pytest.mark.parametrize("world, sun_entity", [
    ({"_sunlight": "200", "_sun_mangle": "30 -60 0", "_sunlight_color": "255 200 100"}, None),
    ({"_sunlight": "150", "_sunlight_mangle": "0 -90 0", "_anglescale": "1"}, None),
    ({}, {"origin": "0 0 64", "_sun": "1", "light": "180", "mangle": "120 -45 0", "_color": "0.5 1 1"}),
])
def test_sunlight_on_a_plane(world, sun_entity):
    scene = plane_scene([sun_entity] if sun_entity else [], world)
    assert [li.kind for li in scene.lights] == ["sun"]
    sun = scene.lights[0]
    points, got, _ = floor_luxels(scene)
    cos = -np.asarray(sun.direction)[2] / np.linalg.norm(sun.direction)
    want = float(quake_angle(sun.anglescale, cos)) * sun.intensity / 255.0 * np.asarray(sun.color)
    assert np.allclose(got, want[None, :], rtol=2e-6, atol=1e-7)
    assert len(points) > 100
    if not sun_entity:  # the worldspawn's sun is no entity: the leak check does not judge it
        from brushbake.core.compile.vis.leaks import inside_points

        assert len(inside_points(scene)[0]) == 0


def test_minlight_is_the_floor_of_every_luxel():
    world = {"light": "40", "_minlight_color": "255 0 128"}
    scene = plane_scene([{"origin": "24 -40 96", "light": "100"}], world)
    assert np.allclose(scene.minlight, (40 / 255, 0.0, 40 / 255 * 128 / 255))
    points, got, level = floor_luxels(scene)
    compare(got, np.maximum(expected_point(points, ORIGIN, light=100.0), np.asarray(scene.minlight)[None, :]))
    assert np.isclose(got, np.asarray(scene.minlight)[None, :], atol=1e-7).all(axis=1).sum() > 100
    assert plane_scene([], {"_minlight": "20"}).minlight == pytest.approx((20 / 255,) * 3)


@pytest.mark.parametrize("power, quake", [(500.0, True), (None, False)])
def test_blender_lights_keep_blenders_units(power, quake):
    """A power given (Blender's light), or a .json light with none (Light.quake False: the older
    Quake rule's watts), is a point light falling off with the inverse square."""
    scene = plane_scene([{"origin": " ".join(map(str, ORIGIN))}])
    scene.lights[0].power, scene.lights[0].quake = power, quake
    points, got, _ = floor_luxels(scene)
    rel = np.asarray(ORIGIN) * S - points
    d = np.linalg.norm(rel, axis=1)
    watts = power if power is not None else quake_light_watts(300.0, S)
    want = watts * POINT_VALUE_PER_WATT * (rel[:, 2] / d) / d ** 2
    assert np.allclose(got[:, 0], np.where(want >= LIGHT_CUTOFF, want, 0.0), rtol=1e-5, atol=1e-7)


def test_keys_are_read_and_bad_ones_named(tmp_path):
    scene = plane_scene([{"origin": "0 0 64", "delay": "2", "wait": "0.5", "_falloff": "77", "_anglesense": "0.25"}],
                        {"_sunlight": "90", "_sun_mangle": "0 -45 0", "_sunlight_penumbra": "4"})
    sun, point = scene.lights  # the worldspawn (entity 0) first
    assert (point.delay, point.wait, point.falloff, point.anglescale, point.entity) == (2, 0.5, 77.0, 0.25, True)
    assert (sun.kind, sun.intensity, sun.radius, sun.entity) == ("sun", 90.0, 4.0, False)
    assert np.allclose(sun.direction, (math.sqrt(0.5), 0, -math.sqrt(0.5)))
    bad = plane_scene([{"origin": "0 0 64", "delay": "7", "wait": "-1", "_anglescale": "2"}])
    assert (bad.lights[0].delay, bad.lights[0].wait, bad.lights[0].anglescale) == (0, 1.0, 0.5)
    assert sum("'delay'" in w or "'wait'" in w or "'_anglescale'" in w for w in bad.warnings) == 3
    path = tmp_path / "s.json"
    path.write_text(dumps_scene(scene))
    back = load_scene_json(path)
    for a, b in zip(scene.lights, back.lights):
        assert (a.delay, a.wait, a.falloff, a.anglescale, a.entity, a.kind, a.quake) == (
            b.delay, b.wait, b.falloff, b.anglescale, b.entity, b.kind, True)
    scene.minlight = (0.1, 0.2, 0.3)
    path.write_text(dumps_scene(scene))
    assert load_scene_json(path).minlight == pytest.approx((0.1, 0.2, 0.3))


def test_png_exposure_clips_at_most_one_percent(tmp_path):
    _, _, level = floor_luxels(plane_scene([{"origin": "0 0 24", "light": "600"}]))
    bright = level.lm_pages.max(axis=-1)
    lit = bright[bright > 0]
    assert (lit > 1).mean() > 0.05  # the baked values clip a lot as they are
    e = auto_exposure(level.lm_pages)
    assert e < 1
    files = lightmap_png_files(level, tmp_path / "x.bbk")
    assert level.stats["png"]["exposure"] == e and level.stats["png"]["clipped"] <= 0.01
    rgb = np.concatenate([read_png_rgb8(data).reshape(-1, 3) for _, data in files])
    lit8 = rgb.max(axis=1)[np.concatenate([b[::-1].ravel() for b in bright]) > 0]
    assert 0 < (lit8 == 255).mean() <= 0.01
    raw = lightmap_png_files(level, tmp_path / "x.bbk", exposure=1.0)
    rgb = np.concatenate([read_png_rgb8(data).reshape(-1, 3) for _, data in raw])
    assert (rgb.max(axis=1)[np.concatenate([b[::-1].ravel() for b in bright]) > 0] == 255).mean() > 0.05
    dim = np.full((1, 4, 4, 3), 0.25)
    assert auto_exposure(dim) == 1.0  # never brightens
    assert SRGB8_TOP < 1.0
