"""Levels made by the real compiler (core/compile/pipeline.py) go through both exporters unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from level_builders import assert_levels_equal

from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.model.brushes import Contents, box_brush
from brushbake.core.model.scene import Hull, Scene
from brushbake.exporters import (
    level_from_bytes,
    level_from_json,
    level_to_bytes,
    level_to_json,
    read_level,
    write_level,
)

SAMPLES = Path(__file__).resolve().parents[2] / "sample_scenes"


def small_scene(hulls=()) -> Scene:
    return Scene(
        "room with a crate",
        hulls=list(hulls),
        brushes=[
            box_brush([-4, -4, -1], [4, 4, 0], "floor"),
            box_brush([-4, -4, 3], [4, 4, 4], "ceiling"),
            box_brush([-5, -4, -1], [-4, 4, 4], "wall west"),
            box_brush([4, -4, -1], [5, 4, 4], "wall east"),
            box_brush([-1, -1, 0], [1, 1, 1], "crate", Contents.DETAIL),
        ],
    )


PLAYER = Hull("player", (-0.4, -0.4, -0.9), (0.4, 0.4, 0.9))


@pytest.mark.parametrize(
    "scene", [small_scene(), small_scene([PLAYER]), Scene("empty")], ids=["room", "room+onion", "empty"]
)
def test_compiled_scene_round_trips(scene, tmp_path):
    level = compile_scene(scene)
    assert level.has_onion == bool(scene.hulls)
    write_level(level, tmp_path / "level.bbk")
    assert_levels_equal(level, read_level(tmp_path / "level.bbk"))
    assert_levels_equal(level, level_from_json(level_to_json(level)))
    assert level_to_bytes(compile_scene(scene)) == (tmp_path / "level.bbk").read_bytes()


@pytest.mark.parametrize("name", ["two_rooms.json", "staircase.json", "cornell_box.json"])
def test_sample_scenes_round_trip(name):
    assert (SAMPLES / name).exists(), f"sample_scenes/{name} is missing: the repository ships it"
    from brushbake.core.formats.loaders import load_scene

    level = compile_scene(load_scene(SAMPLES / name))
    assert_levels_equal(level, level_from_bytes(level_to_bytes(level), name))
