"""Lights in Blender's units from .json and .map (issue 12 point 2): the kinds and fields round
trip through .json, bad fields are named, and the .map rule (a Quake 'light V' is the point light
giving V / 255 at 128 units; '_sun', '_surface', 'mangle' spots) is what the docs state."""

from __future__ import annotations

import math

import numpy as np
import pytest

from brushbake.core.errors import SceneFormatError
from brushbake.core.formats.scene_json import dumps_scene, load_scene_json
from brushbake.core.model.light_units import POINT_VALUE_PER_WATT, light_power, quake_light_watts
from brushbake.core.model.scene import Light, Scene

ROOM = """{
"classname" "worldspawn"
{
( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) floor 0 0 0 1 1
( 0 0 -16 ) ( 1 0 -16 ) ( 0 1 -16 ) floor 0 0 0 1 1
( 0 0 0 ) ( 0 0 1 ) ( 0 1 0 ) floor 0 0 0 1 1
( 256 0 0 ) ( 256 1 0 ) ( 256 0 1 ) floor 0 0 0 1 1
( 0 0 0 ) ( 1 0 0 ) ( 0 0 1 ) floor 0 0 0 1 1
( 0 256 0 ) ( 0 256 1 ) ( 1 256 0 ) floor 0 0 0 1 1
}
}
"""


def test_json_round_trip_of_every_kind(tmp_path):
    lights = [Light("p", (1, 2, 3), color=(1, 0.5, 0.25), kind="point", power=100.0, radius=0.1),
              Light("s", (1, 2, 3), kind="spot", power=50.0, direction=(0, 1, 0), spot_size=60.0, spot_blend=0.3),
              Light("sun", (0, 0, 9), kind="sun", power=3.0, direction=(0.3, 0, -1), radius=1.0),
              Light("glow", (0, 0, 1), kind="surface", power=2.0, texture="lamp"),
              Light("quake", (0, 0, 1), intensity=200.0),
              Light("panel", (0, 0, 2.9), kind="area", power=60.0, shape="ellipse", size=1.5, size_y=0.5,
                    spread=60.0, axis=(0, 1, 0), direction=(0, 0, -1)),
              Light("sq", (0, 0, 2.9), kind="area", power=60.0)]
    path = tmp_path / "s.json"
    path.write_text(dumps_scene(Scene("s", lights=lights)))
    back = load_scene_json(path).lights
    for a, b in zip(lights, back):
        for key in ("kind", "power", "spot_size", "spot_blend", "radius", "texture", "intensity", "shape", "size",
                    "size_y", "spread", "axis"):
            assert getattr(a, key) == getattr(b, key), key
        assert np.allclose(a.direction, b.direction) and np.allclose(a.color, b.color)
    assert '"type"' not in dumps_scene(Scene("s", lights=[lights[4]]))  # old scenes keep their bytes


@pytest.mark.parametrize("field,value,words", [
    ("type", "tube", "one of point, spot, sun, area, surface"),
    ("shape", "star", "one of square, rectangle, disk, ellipse"),
    ("size", 0, "size"),
    ("spread", 0, "spread"),
    ("axis", [0, 0, -2], "parallel"),
    ("power", -1, "power"),
    ("spot_size", 200, "spot_size"),
    ("direction", [0, 0, 0], "zero vector"),
    ("type", "surface", "texture"),
])
def test_bad_light_fields_are_named(tmp_path, field, value, words):
    import json

    doc = {"format": "brushbake-scene", "version": 1, "lights": [{"name": "lamp", "position": [0, 0, 1], field: value}]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SceneFormatError, match=words):
        load_scene_json(path)


def test_quake_rule():
    # V / 255 at 128 units on a face square to the light, by the point light's inverse square
    for scale in (1 / 32, 1 / 40):
        watts = quake_light_watts(300, scale)
        d = 128 * scale
        assert math.isclose(watts * POINT_VALUE_PER_WATT / d ** 2, 300 / 255)
    assert math.isclose(quake_light_watts(300, 1 / 32), 743.1231549055517)
    sun = Light("s", (0, 0, 0), kind="sun", intensity=255.0)
    assert math.isclose(light_power(sun, 1 / 32) / math.pi, 1.0)  # full white under a Quake sun of 255


def test_map_light_entities(tmp_path):
    from brushbake.core.formats.loaders import load_scene

    text = ROOM + """{
"classname" "light"
"origin" "128 128 64"
"light" "200"
}
{
"classname" "light"
"origin" "64 64 64"
"_sun" "1"
"mangle" "0 -90 0"
"light" "255"
}
{
"classname" "light"
"origin" "32 32 32"
"_surface" "floor"
}
{
"classname" "light_spot"
"origin" "96 96 96"
"mangle" "90 -45 0"
"_cone" "30"
}
"""
    path = tmp_path / "l.map"
    path.write_text(text)
    lights = load_scene(path).lights
    assert [li.kind for li in lights] == ["point", "sun", "surface", "spot"]
    assert math.isclose(light_power(lights[0], 1 / 32), quake_light_watts(200, 1 / 32))
    assert np.allclose(lights[1].direction, (0, 0, -1), atol=1e-12)
    assert lights[2].texture == "floor"
    assert np.allclose(lights[3].direction, (0, math.sqrt(0.5), -math.sqrt(0.5)), atol=1e-12)
    assert lights[3].spot_size == 30.0
