"""Issue 20, hostile input: every input gives a result or the project's typed error, fast.

A fast seeded subset of the fuzzer in tests/hostile_fuzz.py (the long run is bench/fuzz_hostile.py),
targeted checks of each class, and one command-line test per class: non-zero exit, one line on
stderr, no traceback, nothing written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hostile_fuzz as hf  # noqa: E402

from brushbake.core.errors import InvalidSettingError, LevelFormatError, UnknownHullError  # noqa: E402
from brushbake.core.model.scene import SETTING_RANGES, Settings, check_settings  # noqa: E402
from brushbake.exporters import native  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

#: cases per kind in the default run (a few seconds in all)
SUBSET = {"tree": 300, "hull": 40, "coords": 150, "options": 150, "degenerate": 8, "crowd": 200, "junk": 40, "settings": 40}


@pytest.mark.parametrize("kind", list(SUBSET))
def test_fuzz_subset_gives_results_or_typed_errors_fast(kind):
    outcomes = {"result": 0, "typed": 0}
    for seed in range(SUBSET[kind]):
        outcome, detail, measure = hf.run_case_measured(kind, seed)
        assert outcome != "crash", f"case ({kind!r}, {seed}) crashed: {detail}"
        seconds = measure["cpu_s"]  # the code under test's CPU time, not the forging of its input
        assert seconds < 2.0, f"case ({kind!r}, {seed}) took {seconds:.2f} s"
        outcomes[outcome] += 1
    assert outcomes["typed"] > 0  # the mutator does reach the checks
    if kind != "hull":
        assert outcomes["result"] > 0  # ... and not only them


# --------------------------------------------------------------------------------------------
# Class 1: trees


def _forged(**changes) -> bytes:
    f = hf._copy(hf.base_fields())
    for prefix, (plane, children, solid) in changes.items():
        hf._set_tree(f, "" if prefix == "point" else prefix + "_", plane, children, solid)
    return hf.pack_unchecked(f)


def _chain(depth: int):
    children = np.stack([np.arange(1, depth + 1), -1 - np.arange(depth)], axis=1)
    children[-1, 0] = -1 - depth
    return np.zeros(depth, int), children, np.zeros(depth + 1, int)


@pytest.mark.parametrize("tree", ["point", "onion", "bevel"])
def test_doubling_dag_is_rejected_fast(tree):
    """Node k's two children both node k + 1, for 60 levels: 2^60 paths from 60 nodes."""
    depth = 60
    data = _forged(**{tree: (np.zeros(depth, int), [[k + 1, k + 1] for k in range(depth - 1)] + [[-1, -1]], [0])})
    t0 = time.perf_counter()
    with pytest.raises(LevelFormatError, match="tree"):
        native.level_from_bytes(data)
    assert time.perf_counter() - t0 < 0.5


@pytest.mark.parametrize("tree", ["point", "onion", "bevel"])
def test_depth_limit_is_exact_and_cheap(tree):
    level = native.level_from_bytes(_forged(**{tree: _chain(native.MAX_TREE_DEPTH)}))
    hf.run_level_queries(level, np.random.default_rng(0))  # a legal deep tree answers queries
    with pytest.raises(LevelFormatError, match=f"more than {native.MAX_TREE_DEPTH} nodes deep"):
        native.level_from_bytes(_forged(**{tree: _chain(native.MAX_TREE_DEPTH + 1)}))
    t0 = time.perf_counter()
    with pytest.raises(LevelFormatError, match="deep"):
        native.level_from_bytes(_forged(**{tree: _chain(300_000)}))
    assert time.perf_counter() - t0 < 1.5


@pytest.mark.parametrize("what, words", [
    ("shared_child", "is the child of nodes"), ("both", "reached twice from node"), ("orphan_leaf", "is the child of no node"),
    ("cycle", "must be a later node"), ("leaf_as_node", "must be a later node"),
])
def test_each_forgery_names_the_node(what, words):
    f = hf._copy(hf.base_fields())
    ch = f["node_children"]
    node = int(np.flatnonzero(ch[:, 0] > 1)[0])
    if what == "shared_child":
        other = int(np.flatnonzero(ch[:, 1] >= 0)[-1])
        ch[node, 0] = ch[other, 1]
    elif what == "both":
        ch[node, 1] = ch[node, 0]
    elif what == "orphan_leaf":
        hf._set_tree(f, "", f["node_plane"], ch, np.concatenate([f["leaf_solid"], [0]]))
    elif what == "cycle":
        ch[node, 0] = node
    else:
        ch[node, 0] = len(ch)
    with pytest.raises(LevelFormatError, match=words):
        native.level_from_bytes(hf.pack_unchecked(f))
    with pytest.raises(LevelFormatError, match=words):  # the JSON dump's reader makes the same checks
        from brushbake.exporters.json_dump import level_from_json

        level_from_json(hf.json_unchecked(f))


def test_compiled_levels_are_trees():
    """Every tree the compiler makes passes the checks (the writer runs them): L = N + 1 etc."""
    level = hf.base_level()
    for prefix in hf.TREES:
        children = getattr(level, prefix + "node_children")
        assert len(getattr(level, prefix + "leaf_solid")) == len(children) + 1
    native.level_from_bytes(native.level_to_bytes(level))


# --------------------------------------------------------------------------------------------
# Class 2: hulls


def test_hull_table_and_trees_must_agree():
    f = hf._copy(hf.base_fields())
    hf._set_tree(f, "onion_", [], np.zeros((0, 2)), [])
    with pytest.raises(LevelFormatError, match=r"3 hulls \(point, stand, crouch\) but no onion tree"):
        native.level_from_bytes(hf.pack_unchecked(f))


@pytest.mark.parametrize("hull", [3, -1, 99])
def test_collision_tree_for_a_missing_hull_lists_the_hulls(hull):
    from brushbake.core.runtime.query import point_solid

    level = hf.base_level()
    with pytest.raises(UnknownHullError, match="0 point, 1 stand, 2 crouch"):
        point_solid(level, np.zeros((1, 3)), hull=hull)


# --------------------------------------------------------------------------------------------
# Class 4: settings


def test_every_setting_has_a_range():
    from dataclasses import fields

    from brushbake.core.model.scene import BOOL_SETTINGS

    names = {f.name for f in fields(Settings)}
    assert names == set(SETTING_RANGES) | set(BOOL_SETTINGS) | {"splitter", "vis", "seal"}


@pytest.mark.parametrize("name", list(SETTING_RANGES))
def test_every_setting_range_is_enforced(name):
    r = SETTING_RANGES[name]
    check_settings(Settings(**{name: type(getattr(Settings(), name))(r.low)}))
    check_settings(Settings(**{name: type(getattr(Settings(), name))(r.high)}))
    bad = [r.low - 1, r.high + 1, float("nan"), float("inf"), -float("inf")]
    if r.integer:
        bad += [1.5, True]
    for value in bad:
        with pytest.raises(InvalidSettingError, match=f"{name} is .* {r.text()}"):
            check_settings(Settings(**{name: value}))


def test_bake_scene_checks_settings_before_any_work():
    from brushbake.core.compile.pipeline import bake_scene
    from brushbake.core.model.scene import Scene

    with pytest.raises(InvalidSettingError, match="relation_scale"):
        bake_scene(Scene("s", settings=Settings(splitter="thesis", relation_scale=1.0)))


def test_json_settings_use_the_table():
    from brushbake.core.errors import SceneFormatError
    from brushbake.core.formats.scene_json import scene_from_dict

    for key, value in [("max_candidates", -1), ("bevel_angle", 1e9), ("map_scale", 0), ("min_relation", 2)]:
        doc = {"format": "brushbake-scene", "version": 1, "name": "s", "settings": {key: value}}
        with pytest.raises(SceneFormatError, match=f"settings.{key}: is .* from {SETTING_RANGES[key].text()}"):
            scene_from_dict(doc, "s.json")


# --------------------------------------------------------------------------------------------
# Class 5: degenerate input in the onion stage


@pytest.mark.parametrize("brushes", [[], [{"box": [[0, 0, 0], [1, 1, 1]], "contents": "nonsolid", "name": "water"}]])
def test_box_hulls_with_no_colliding_brush_bake_an_empty_level(brushes):
    """Was IndexError in the onion stage (no face in any space: the tree is one leaf)."""
    from brushbake.core.compile.pipeline import bake_scene
    from brushbake.core.formats.scene_json import scene_from_dict
    from brushbake.core.model.hulls import parse_hull

    scene = scene_from_dict({"format": "brushbake-scene", "version": 1, "name": "s", "brushes": brushes}, "s.json")
    scene.hulls = [parse_hull("stand")]
    level = native.level_from_bytes(native.level_to_bytes(bake_scene(scene)))
    assert level.num_nodes == 0 and list(level.onion_leaf_solid) == [0]


# --------------------------------------------------------------------------------------------
# The command line: one test per class


def run_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-m", "brushbake", *args], capture_output=True, text=True, cwd=tmp_path,
                          env=env, timeout=60)


def assert_clean_failure(proc, tmp_path: Path, before: set, words: str, code: int = 1) -> None:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == code, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and words in lines[0], lines[0]
    assert set(tmp_path.iterdir()) == before  # nothing written, no temporary file left


def test_cli_class1_forged_tree(tmp_path):
    depth = 40
    bad = tmp_path / "forged.bbk"
    bad.write_bytes(_forged(point=(np.zeros(depth, int), [[k + 1, k + 1] for k in range(depth - 1)] + [[-1, -1]], [0])))
    np.save(tmp_path / "p.npy", np.zeros((2, 3)))
    before = set(tmp_path.iterdir())
    assert_clean_failure(run_cli(tmp_path, "info", "forged.bbk"), tmp_path, before, "node 1 is reached twice from node 0")
    proc = run_cli(tmp_path, "query", "forged.bbk", "--points", "p.npy", "-o", "out.npy")
    assert_clean_failure(proc, tmp_path, before, "forged.bbk")


def test_cli_class2_missing_hull(tmp_path):
    (tmp_path / "level.bbk").write_bytes(native.level_to_bytes(hf.base_level()))
    np.save(tmp_path / "p.npy", np.zeros((2, 3)))
    f = hf._copy(hf.base_fields())
    hf._set_tree(f, "onion_", [], np.zeros((0, 2)), [])
    (tmp_path / "disagree.bbk").write_bytes(hf.pack_unchecked(f))
    before = set(tmp_path.iterdir())
    proc = run_cli(tmp_path, "query", "level.bbk", "--hull", "tall", "--points", "p.npy", "-o", "out.npy")
    assert_clean_failure(proc, tmp_path, before, "point, stand, crouch")
    proc = run_cli(tmp_path, "query", "disagree.bbk", "--hull", "stand", "--points", "p.npy", "-o", "out.npy")
    assert_clean_failure(proc, tmp_path, before, "no onion tree")


@pytest.mark.parametrize("number", ["99999999999999999999", "3200001"])
def test_cli_class3_world_limit(tmp_path, number):
    text = hf.BASE_MAP_TEXT.replace("( -64 -64 -16 )", f"( {number} -64 -16 )", 1)
    assert text != hf.BASE_MAP_TEXT
    (tmp_path / "far.map").write_text(text)
    before = set(tmp_path.iterdir())
    t0 = time.perf_counter()
    proc = run_cli(tmp_path, "bake", "far.map", "-o", "far.bbk", "-q")
    assert time.perf_counter() - t0 < 10  # process start included; the check itself is one NumPy test
    assert_clean_failure(proc, tmp_path, before, "far.map:entity0:brush0 (line 4)")


@pytest.mark.parametrize("option, value, words", [
    ("--scale", "0", "--scale: is 0.0; it must be from 0.0009765625 to 100"),
    ("--bevel-angle", "nan", "--bevel-angle: is nan"),
    ("--bevel-angle", "inf", "0 to 180"),
    ("--max-candidates", "-1", "--max-candidates: is -1; it must be from 0 to 1000000"),
])
def test_cli_class4_options_checked_when_parsed(tmp_path, option, value, words):
    (tmp_path / "room.map").write_text(hf.BASE_MAP_TEXT)
    before = set(tmp_path.iterdir())
    proc = run_cli(tmp_path, "bake", "room.map", "-o", "room.bbk", f"{option}={value}")
    assert_clean_failure(proc, tmp_path, before, words, code=2)


@pytest.mark.parametrize("spec", ["x=-1e300,-1,-1,1,1,1", "x=-0.5,-0.5,-1,0.5,0.5,1001"])
def test_hull_boxes_beyond_their_limit_are_refused(spec):
    from brushbake.core.errors import BrushbakeError
    from brushbake.core.model.hulls import MAX_HULL_EXTENT, parse_hull

    with pytest.raises(BrushbakeError, match=f"the limit is {MAX_HULL_EXTENT:.0f} m"):
        parse_hull(spec)
    parse_hull("x=-1000,-1,-1,1,1,1000")


def test_cli_help_shows_the_ranges(tmp_path):
    out = run_cli(tmp_path, "bake", "--help").stdout
    for name in ("map_scale", "max_candidates", "bevel_angle"):
        assert SETTING_RANGES[name].text() in " ".join(out.split())


def test_cli_class5_degenerate_brush_is_named(tmp_path):
    tiny = 1e-4
    planes = [[1, 0, 0, tiny], [-1, 0, 0, 0], [0, 1, 0, tiny], [0, -1, 0, 0], [0, 0, 1, tiny], [0, 0, -1, 0],
              [0, 0, -1, 0]]
    doc = {"format": "brushbake-scene", "version": 1, "name": "s",
           "brushes": [{"box": [[-1, -1, -1], [1, 1, 0]], "name": "floor"},
                       {"planes": planes, "name": "speck"}],
           "hulls": [{"name": "stand", "mins": [-0.4, -0.4, -0.9], "maxs": [0.4, 0.4, 0.9]}]}
    (tmp_path / "s.json").write_text(json.dumps(doc))
    before = set(tmp_path.iterdir())
    proc = run_cli(tmp_path, "bake", "s.json", "-o", "s.bbk", "-q")
    assert_clean_failure(proc, tmp_path, before, "brush 'speck'")


def _tiny_room_map(scale: float = 1e-4) -> str:
    """The fuzzer's room with its pillar (brush 3) scaled by `scale` about its centre and its first
    plane line written twice: issue 20's item 5 as a .map."""
    brushes = []
    for j, (lo, hi) in enumerate(hf.ROOM_BRUSHES):
        lo, hi = np.array(lo, float), np.array(hi, float)
        if j == 3:
            c = (lo + hi) / 2
            lo, hi = c + (lo - c) * scale, c + (hi - c) * scale
        block = hf._box(lo.tolist(), hi.tolist())
        if j == 3:
            lines = block.split("\n")
            lines.insert(2, lines[1])
            block = "\n".join(lines)
        brushes.append(block)
    return hf.BASE_MAP % "\n".join(brushes)


def test_class5_tiny_brush_with_a_repeated_plane_in_a_map_is_named(tmp_path):
    """Issue 20 item 5 through a .map: the repeated line is dropped with a warning, the brush that
    has no volume left is skipped with a warning naming it (Quake's rule; a strict load raises the
    degenerate-brush error naming it), and the bake with box hulls and bevels goes through."""
    from brushbake.core.errors import DegenerateBrushError
    from brushbake.core.formats.mapfile import load_map_text

    text = _tiny_room_map()
    with pytest.raises(DegenerateBrushError, match=r"tiny\.map:entity0:brush3 \(line 27\).*no volume"):
        load_map_text(text, "tiny.map", strict=True)
    (tmp_path / "tiny.map").write_text(text)
    proc = run_cli(tmp_path, "bake", "tiny.map", "-o", "tiny.bbk", "-q", "--hull", "stand", "--hull", "crouch",
                   "--vis", "none")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines == ["warning: tiny.map:entity0:brush3: dropped a duplicate plane on line 29 (same as line 28).",
                     "warning: tiny.map:entity0:brush3 (line 27) skipped: has no volume (its planes meet in a point, "
                     "a line or a flat sheet)."], lines
    level = native.level_from_bytes((tmp_path / "tiny.bbk").read_bytes())
    assert level.has_bevel and level.hull_names == ["point", "stand", "crouch"]


def test_class5_tiny_mesh_with_repeated_planes_from_the_addon_bridge_is_named():
    """Issue 20 item 5 through what addon/bridge.py calls for a mesh object (brush_from_mesh with
    its world-space vertices): a box scaled by 1e-4 whose quads are split into two triangles each
    (every plane twice) is the degenerate-brush error naming the object.  The same scaled by 1e-4
    on one axis only is a thin brush that bakes with box hulls and bevels.  Real Blender:
    tests/addon/test_workflow.py::test_tiny_brush_with_repeated_planes_is_named."""
    from brushbake.core.compile.pipeline import bake_scene
    from brushbake.core.errors import DegenerateBrushError
    from brushbake.core.formats.scene_json import scene_from_dict
    from brushbake.core.model.brushes import brush_from_mesh
    from brushbake.core.model.hulls import parse_hull

    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    quads = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    tris = [t for q in quads for t in ([q[0], q[1], q[2]], [q[0], q[2], q[3]])]
    centre = np.array([2.0, 2.0, 1.5])
    with pytest.raises(DegenerateBrushError, match="Speck: has no volume"):
        brush_from_mesh(centre + signs * 0.5 * 1e-4, tris, "Speck")
    room = {"format": "brushbake-scene", "version": 1, "name": "s",
            "brushes": [{"box": [[-2, -2, -0.5], [6, 6, 0]], "name": "floor"}]}
    scene = scene_from_dict(room, "s.json")
    scene.brushes.append(brush_from_mesh(centre + signs * 0.5 * np.array([1, 1, 1e-4]), tris, "Thin"))
    scene.hulls = [parse_hull("stand"), parse_hull("crouch")]
    scene.settings.vis = "none"
    level = bake_scene(scene)
    assert level.brush_names == ["floor", "Thin"] and level.has_bevel
