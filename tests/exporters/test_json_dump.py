"""The JSON dump: exact round trips, stable text, and LevelFormatError for anything else."""

from __future__ import annotations

import json

import numpy as np
import pytest
from level_builders import BEVEL_FIELDS, assert_levels_equal, beveled_level, box_level, empty_level, random_level
from hypothesis import given, settings
from hypothesis import strategies as st

from brushbake.core.errors import LevelFormatError
from brushbake.exporters import level_from_json, level_to_json, write_level_json


@pytest.mark.parametrize("make", [empty_level, box_level])
def test_round_trip(make, tmp_path):
    level = make()
    path = tmp_path / "level.json"
    write_level_json(level, path)
    assert_levels_equal(level, level_from_json(path.read_text(encoding="utf-8"), str(path)))


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_round_trip_random_levels(seed):
    level = random_level(seed)
    text = level_to_json(level)
    assert_levels_equal(level, level_from_json(text))
    assert level_to_json(level_from_json(text)) == text


@pytest.fixture(scope="module")
def beveled():
    return beveled_level()


def test_beveled_tree_round_trip_and_shape_traces(beveled, tmp_path):
    """The bevel arrays are written and read back exactly (as the .bbk's optional sections), and the
    loaded beveled tree answers every shape's traces bit for bit as the original."""
    from brushbake.core.runtime.shift import Box, ConvexHull, Cylinder, Sphere, hit_checks

    level = beveled
    assert level.has_bevel and len(level.bevel_node_plane) > level.num_nodes
    path = tmp_path / "level.json"
    write_level_json(level, path)
    text = path.read_text(encoding="utf-8")
    assert all(f'"{name}"' in text for name in BEVEL_FIELDS)
    loaded = level_from_json(text, str(path))
    assert_levels_equal(level, loaded)
    assert loaded.has_bevel and level_to_json(loaded) == text
    rng = np.random.default_rng(5)
    lo, hi = level.world_bounds
    s = lo + rng.random((3000, 3)) * (hi - lo)
    e = s + rng.normal(size=(3000, 3))
    hull = ConvexHull(rng.normal(size=(12, 3)) * 0.4)
    for shape in (Sphere(0.5), Cylinder(0.4, 1.8), Box((0.3, 0.5, 0.9)), hull):
        a, b = hit_checks(level.bevel_tree(), shape, s, e), hit_checks(loaded.bevel_tree(), shape, s, e)
        assert a.hit.any()
        for key in ("fraction", "point", "normal", "plane", "start_solid", "hit", "impact", "nodes_visited"):
            np.testing.assert_array_equal(getattr(a, key), getattr(b, key), err_msg=key)
    # the plain tree would answer differently: the dump really carried the bevels
    plain = hit_checks(loaded.point_tree(), Sphere(0.5), s, e)
    assert not np.array_equal(plain.fraction, hit_checks(loaded.bevel_tree(), Sphere(0.5), s, e).fraction)


def test_a_level_without_bevels_dumps_no_bevel_arrays(box):
    doc = json.loads(level_to_json(box))
    assert not any(name in doc for name in BEVEL_FIELDS)
    assert not level_from_json(json.dumps(doc)).has_bevel


def test_rejects_bad_bevel_arrays(beveled):
    doc = json.loads(level_to_json(beveled))
    for name in BEVEL_FIELDS:  # all three or none
        reject_json(json.dumps({k: v for k, v in doc.items() if k != name}), f"no {name}", "beveled tree")
    solid = list(doc["bevel_leaf_solid"])
    solid[0] = 2
    reject_json(json.dumps({**doc, "bevel_leaf_solid": solid}), "bevel leaf 0", "solid bits")
    children = [list(c) for c in doc["bevel_node_children"]]
    children[-1][0] = 0
    reject_json(json.dumps({**doc, "bevel_node_children": children}), "bevel node", "later node")
    reject_json(json.dumps({**doc, "bevel_node_plane": doc["bevel_node_plane"][:-1]}), "bevel_node_children has")
    reject_json(json.dumps({**doc, "bevel_node_plane": "x"}), "bevel_node_plane")


def test_text_is_stable_and_readable(box):
    box.vertices = box.vertices + 0.1  # floats that need their shortest repr
    box.stats = {"seconds": 1.0}
    text = level_to_json(box)
    assert text == level_to_json(box) and text.endswith("}\n")
    doc = json.loads(text)
    assert list(doc) == sorted(doc)
    assert "stats" not in doc
    assert doc["format"] == "brushbake-level" and doc["version"] == [1, 1]
    assert text.startswith('{\n "brush_names": [\n  "Crate.001')
    assert "\n   1.1,\n" in text  # repr(0.1 + 1.0)
    assert doc["node_children"][5] == [-6, -7]


def test_text_does_not_depend_on_input_dtypes(box):
    text = level_to_json(box)
    box.node_plane = box.node_plane.astype(np.int64)
    box.vertices = box.vertices.astype(">f8")
    assert level_to_json(box) == text


def reject_json(text: str, *words: str) -> None:
    with pytest.raises(LevelFormatError) as info:
        level_from_json(text, "dump.json")
    for word in words:
        assert word in str(info.value)


def test_rejects_bad_dumps(box):
    doc = json.loads(level_to_json(box))
    reject_json("{", "not valid JSON")
    reject_json("[]", "not a brushbake level dump")
    reject_json(json.dumps({**doc, "version": [2, 0]}), "dump version")
    reject_json(json.dumps({k: v for k, v in doc.items() if k != "vertices"}), "has no 'vertices'")
    reject_json(json.dumps({**doc, "node_plane": [0, 3, 4, 7, 8, 12]}), "node_plane[5] is 12")
    reject_json(json.dumps({**doc, "node_plane": [[0], [1, 2]]}), "node_plane")
    reject_json(json.dumps({**doc, "node_plane": ["a"] * 6}), "element type")
    reject_json(json.dumps({**doc, "node_plane": [10**30] * 6}), "node_plane")
    reject_json(json.dumps({**doc, "hull_names": "point"}), "list of strings")
    reject_json(json.dumps({**doc, "hull_names": ["point", 3]}), "list of strings")
    doc["vertices"][3][1] = float("nan")
    reject_json(json.dumps(doc), "vertices holds NaN")


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(),
                    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=30))
def test_fuzz_json_values(value):
    try:
        level_from_json(json.dumps(value))
    except LevelFormatError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.data())
def test_fuzz_edited_dumps(seed, data):
    doc = json.loads(level_to_json(random_level(seed)))
    key = data.draw(st.sampled_from(sorted(doc)))
    doc[key] = data.draw(st.none() | st.integers() | st.lists(st.integers(-3, 40), max_size=8) | st.text())
    try:
        level_from_json(json.dumps(doc))
    except LevelFormatError:
        pass
