"""bench/worlds.py, the scale benchmark's world generator: exact brush counts, the same bytes for the
same seed, and every layout loads without a skipped brush and bakes sealed (no leak from the
player start or any light)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from brushbake.core.compile.pipeline import bake_scene
from brushbake.core.formats.mapfile import load_map_text

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_worlds", REPO / "bench" / "worlds.py")
worlds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(worlds)


@pytest.mark.parametrize("layout", worlds.LAYOUTS)
def test_a_world_has_exactly_the_brushes_asked_and_the_same_bytes_for_a_seed(layout):
    text = worlds.make_world(layout, 260, seed=3)
    assert text == worlds.make_world(layout, 260, seed=3)
    assert text != worlds.make_world(layout, 260, seed=4)
    scene = load_map_text(text, name=f"{layout}_260")
    assert len(scene.brushes) == 260 and not scene.warnings
    assert any(m.kind == "player_start" for m in scene.markers) and scene.lights


@pytest.mark.parametrize("layout", worlds.LAYOUTS)
def test_a_world_is_sealed(layout):
    scene = load_map_text(worlds.make_world(layout, 160, seed=1), name=layout)
    scene.hulls = []
    level = bake_scene(scene)  # raises LeakError on a leak
    assert level.stats["leaks"]["judged"] and not level.stats["leaks"]["leaks"]


def test_too_few_brushes_or_an_unknown_layout_say_so():
    with pytest.raises(ValueError, match="too few"):
        worlds.make_world("slab", 5)
    with pytest.raises(ValueError, match="unknown layout"):
        worlds.make_world("caves", 1000)
