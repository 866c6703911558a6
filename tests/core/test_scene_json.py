"""The JSON scene format: round trips, byte-stable output, every error path, and fuzzing."""

from __future__ import annotations

import copy
import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushbake.core.model.brushes import Contents, box_brush, brush_from_mesh, brush_from_planes
from brushbake.core.errors import (
    BrushbakeError,
    BrushError,
    CancelledError,
    DegenerateBrushError,
    DuplicatePlaneError,
    InvalidCoordinatesError,
    NonConvexBrushError,
    OpenMeshError,
    SceneFormatError,
)
from brushbake.core.model.scene import DetailMesh, Hull, Light, Marker, Scene, Settings
from brushbake.core.formats.scene_json import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MAX_BRUSH_PLANES,
    dumps_scene,
    load_scene_json,
    parse_scene_text,
    save_scene_json,
    scene_from_dict,
    scene_to_dict,
)

CUBE_VERTS = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]]
CUBE_FACES = [[0, 3, 2, 1], [4, 5, 6, 7], [0, 1, 5, 4], [1, 2, 6, 5], [2, 3, 7, 6], [3, 0, 4, 7]]


def rich_scene() -> Scene:
    """A scene using every feature of the format."""
    ramp_n = np.array([-1.0, 0.0, 4.0]) / np.sqrt(17.0)
    brushes = [
        box_brush((-1, -1, -0.25), (5, 5, 0), "floor"),
        box_brush((1, 1, 0), (1.5, 1.5, 2), "pillar", Contents.DETAIL),
        box_brush((3, 0, 0), (3.125, 2, 2), "clip wall", Contents.CLIP),
        box_brush((0, 3, 0), (1, 4, 1), "water", Contents.NONSOLID),
        brush_from_planes(
            [[0, 0, -1], [1, 0, 0], [0, -1, 0], [0, 1, 0], ramp_n],
            [0, 4, 0, 2, float(ramp_n @ [0, 0, 0])],
            "ramp",
            textures=["a", "b", "c", "d", "slope"],
        ),
        brush_from_planes([[1, 0, 0], [0, 1, 0], [0, 0, 1], [-1, -1, -1]], [1, 1, 1, 0], "tetra"),
        brush_from_mesh(np.array(CUBE_VERTS, float) * 0.5 + [2, 2, 0], CUBE_FACES, "mesh cube"),
    ]
    brushes[0].textures = ["concrete"] * 6
    mover = box_brush((0, 0, 0), (1, 0.125, 2), "door")
    mover.entity = "func_door"
    return Scene(
        name="rich",
        brushes=brushes,
        movers=[mover],
        detail_meshes=[DetailMesh("tri", np.array([[0, 0, 1], [1, 0, 1], [0, 1, 1.5]]), [[0, 1, 2]])],
        lights=[Light("lamp", (1.0, 2.0, 3.0), (1.0, 0.5, 0.25), 450.0)],
        markers=[Marker("player_start", "player_start", (2.0, 2.0, 0.78125), 90.0), Marker("x", "inside", (1, 1, 1))],
        hulls=[Hull("stand", (-0.46875, -0.46875, -0.75), (0.46875, 0.46875, 1.0)),
               Hull("crouch", (-0.46875, -0.46875, -0.75), (0.46875, 0.46875, 0.5))],
        settings=Settings(splitter="thesis", split_weight=2.5, max_candidates=0),
    )


def assert_same_brush(a, b):
    assert a.name == b.name
    assert a.contents == b.contents
    assert a.entity == b.entity
    assert len(a.normals) == len(b.normals)
    # same planes, possibly in another order (a box is written as mins/maxs)
    for n, d, t in zip(a.normals, a.dists, a.textures):
        match = [k for k in range(len(b.normals)) if np.allclose(b.normals[k], n, atol=1e-12) and abs(b.dists[k] - d) < 1e-12]
        assert len(match) == 1, (a.name, n, d)
        assert (b.textures[match[0]] or "") == (t or "")
    assert np.allclose(a.bounds, b.bounds, atol=1e-12)
    assert abs(a.volume - b.volume) < 1e-9


def assert_same_scene(a: Scene, b: Scene):
    assert a.name == b.name
    assert a.settings == b.settings
    assert len(a.brushes) == len(b.brushes) and len(a.movers) == len(b.movers)
    for x, y in zip(a.brushes + a.movers, b.brushes + b.movers):
        assert_same_brush(x, y)
    assert [(h.name, tuple(h.mins), tuple(h.maxs)) for h in a.hulls] == [(h.name, tuple(h.mins), tuple(h.maxs)) for h in b.hulls]
    assert [(m.name, m.kind, tuple(m.position), m.angle) for m in a.markers] == [
        (m.name, m.kind, tuple(m.position), m.angle) for m in b.markers]
    assert [(li.name, tuple(li.position), tuple(li.color), li.intensity) for li in a.lights] == [
        (li.name, tuple(li.position), tuple(li.color), li.intensity) for li in b.lights]
    for m, n in zip(a.detail_meshes, b.detail_meshes):
        assert m.name == n.name and np.array_equal(m.vertices, n.vertices) and m.faces == n.faces


# --------------------------------------------------------------------------------------------
# Round trips and stable output


def test_round_trip_dict():
    scene = rich_scene()
    data = scene_to_dict(scene)
    assert data["format"] == FORMAT_NAME and data["version"] == FORMAT_VERSION
    again = scene_from_dict(data, "rich.json")
    assert_same_scene(scene, again)
    assert scene_to_dict(again) == data


def test_round_trip_through_json_text():
    scene = rich_scene()
    again = scene_from_dict(parse_scene_text(dumps_scene(scene)), "rich.json")
    assert_same_scene(scene, again)


def test_boxes_written_as_box_other_brushes_as_planes():
    data = scene_to_dict(rich_scene())
    shapes = {b["name"]: [k for k in ("box", "planes", "mesh") if k in b] for b in data["brushes"]}
    assert shapes["floor"] == ["box"] and shapes["pillar"] == ["box"] and shapes["mesh cube"] == ["box"]
    assert shapes["ramp"] == ["planes"] and shapes["tetra"] == ["planes"]
    ramp = next(b for b in data["brushes"] if b["name"] == "ramp")
    assert ramp["textures"] == ["a", "b", "c", "d", "slope"]
    floor = next(b for b in data["brushes"] if b["name"] == "floor")
    assert floor["box"] == [[-1.0, -1.0, -0.25], [5.0, 5.0, 0.0]] and floor["texture"] == "concrete"
    assert data["movers"][0]["entity"] == "func_door"
    assert data["settings"] == {"splitter": "thesis", "split_weight": 2.5, "max_candidates": 0}


def test_box_with_mixed_textures_is_written_as_planes():
    b = box_brush((0, 0, 0), (1, 1, 1), "crate")
    b.textures = ["a", "b", "a", "a", "a", "a"]
    out = scene_to_dict(Scene("s", brushes=[b]))["brushes"][0]
    assert "planes" in out and out["textures"] == b.textures
    assert_same_brush(b, scene_from_dict(scene_to_dict(Scene("s", brushes=[b]))).brushes[0])


def test_save_twice_is_byte_identical(tmp_path):
    scene = rich_scene()
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    save_scene_json(scene, a)
    save_scene_json(rich_scene(), b)
    assert a.read_bytes() == b.read_bytes()
    save_scene_json(load_scene_json(a), tmp_path / "c.json")
    assert (tmp_path / "c.json").read_bytes() == a.read_bytes()
    text = a.read_text()
    assert "-0.0" not in text and "NaN" not in text
    assert json.loads(text) == scene_to_dict(scene)  # plain JSON any reader takes
    assert list(json.loads(text)) == sorted(json.loads(text))


def test_save_is_atomic_and_leaves_no_temporary_files(tmp_path):
    path = tmp_path / "scene.json"
    save_scene_json(rich_scene(), path)
    before = path.read_bytes()
    bad = rich_scene()
    bad.lights[0].position = (float("nan"), 0.0, 0.0)
    with pytest.raises(InvalidCoordinatesError, match="lamp"):
        save_scene_json(bad, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["scene.json"]
    assert (os.stat(path).st_mode & 0o777) == 0o644


def test_defaults_and_mesh_brushes():
    data = {
        "format": FORMAT_NAME,
        "version": 1,
        "brushes": [{"mesh": {"vertices": CUBE_VERTS, "faces": CUBE_FACES}}],
        "lights": [{"position": [0, 0, 1]}],
        "markers": [{"kind": "player_start", "position": [0.5, 0.5, 0.5]}],
    }
    scene = scene_from_dict(data, "cube.json")
    assert scene.name == "cube"
    assert scene.brushes[0].name == "brush0" and scene.brushes[0].contents == Contents.SOLID
    assert np.allclose(scene.brushes[0].bounds, [[0, 0, 0], [1, 1, 1]])
    assert scene.lights[0].intensity == 300.0 and scene.lights[0].color == (1.0, 1.0, 1.0)
    assert scene.markers[0].angle == 0.0 and scene.settings == Settings()
    assert scene.hulls == [] and scene.detail_meshes == [] and scene.movers == []


def test_progress_and_cancel(tmp_path):
    path = tmp_path / "s.json"
    save_scene_json(rich_scene(), path)
    seen = []
    load_scene_json(path, progress=lambda f, msg: seen.append((f, msg)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0
    assert all(isinstance(m, str) for _, m in seen)
    calls = []

    def cancel():
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(CancelledError):
        load_scene_json(path, cancel=cancel)


# --------------------------------------------------------------------------------------------
# Every error path


def base() -> dict:
    return {
        "format": FORMAT_NAME,
        "version": 1,
        "name": "t",
        "hulls": [{"name": "stand", "mins": [-0.5, -0.5, -0.75], "maxs": [0.5, 0.5, 1.0]}],
        "brushes": [
            {"name": "floor", "contents": "solid", "box": [[0, 0, -1], [4, 4, 0]]},
            {"name": "tet", "contents": "detail", "planes": [[1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1], [-1, -1, -1, 0]]},
            {"name": "cube", "contents": "clip", "mesh": {"vertices": CUBE_VERTS, "faces": CUBE_FACES}},
        ],
        "detail_meshes": [{"name": "tri", "vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, 2]]}],
        "lights": [{"name": "lamp", "position": [1, 1, 1], "color": [1, 1, 1], "intensity": 300}],
        "markers": [{"name": "start", "kind": "player_start", "position": [1, 1, 1], "angle": 0}],
        "settings": {"split_weight": 3},
    }


def test_base_is_valid():
    scene = scene_from_dict(base(), "t.json")
    assert [b.contents for b in scene.brushes] == [Contents.SOLID, Contents.DETAIL, Contents.CLIP]
    assert scene.settings.split_weight == 3.0


def edit(path, value):
    """A function that sets data[path...] = value (value DELETE removes the key)."""

    def apply(data):
        target = data
        for key in path[:-1]:
            target = target[key]
        if value is DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value
        return data

    return apply


DELETE = object()

CASES = [
    # (id, edit, error type, words the message must contain)
    ("top-not-object", lambda d: [d], SceneFormatError, ["not a brushbake scene"]),
    ("wrong-format", edit(["format"], "quake-map"), SceneFormatError, ["not a brushbake scene", "quake-map"]),
    ("no-format", edit(["format"], DELETE), SceneFormatError, ["not a brushbake scene"]),
    ("no-version", edit(["version"], DELETE), SceneFormatError, ["version"]),
    ("newer-version", edit(["version"], 2), SceneFormatError, ["version", "Update"]),
    ("version-string", edit(["version"], "1"), SceneFormatError, ["version", "whole number"]),
    ("unknown-top-key", edit(["levels"], []), SceneFormatError, ["unknown key 'levels'"]),
    ("name-not-string", edit(["name"], 3), SceneFormatError, ["name", "string"]),
    ("brushes-not-list", edit(["brushes"], {}), SceneFormatError, ["brushes", "list"]),
    ("brush-not-object", edit(["brushes", 0], 5), SceneFormatError, ["brushes[0]", "object"]),
    ("brush-unknown-key", edit(["brushes", 0, "colour"], "red"), SceneFormatError, ["floor", "colour"]),
    ("brush-two-shapes", edit(["brushes", 0, "planes"], [[1, 0, 0, 1]] * 4), SceneFormatError,
     ["floor", "both 'box' and 'planes'"]),
    ("brush-no-shape", edit(["brushes", 0, "box"], DELETE), SceneFormatError, ["floor", "no shape"]),
    ("bad-contents", edit(["brushes", 0, "contents"], "water"), SceneFormatError, ["floor", "water", "solid, detail"]),
    ("box-one-corner", edit(["brushes", 0, "box"], [[0, 0, 0]]), SceneFormatError, ["floor", "box"]),
    ("box-two-numbers", edit(["brushes", 0, "box", 0], [0, 0]), SceneFormatError, ["floor", "3 numbers"]),
    ("box-string", edit(["brushes", 0, "box", 0, 1], "0"), SceneFormatError, ["floor", "box[0][1]", "number"]),
    ("box-bool", edit(["brushes", 0, "box", 0, 1], True), SceneFormatError, ["floor", "number"]),
    ("box-null", edit(["brushes", 0, "box", 0, 1], None), SceneFormatError, ["floor", "null"]),
    ("box-inverted", edit(["brushes", 0, "box", 0, 2], 5), DegenerateBrushError, ["floor", "mins.z"]),
    ("box-flat", edit(["brushes", 0, "box", 0, 2], 0), DegenerateBrushError, ["floor"]),
    ("box-huge", edit(["brushes", 0, "box", 1, 0], 1e6), InvalidCoordinatesError, ["floor", "box[1][0]"]),
    ("box-float-overflow", edit(["brushes", 0, "box", 1, 0], 10**400), InvalidCoordinatesError, ["floor"]),
    ("box-nan-value", edit(["brushes", 0, "box", 1, 0], float("nan")), InvalidCoordinatesError, ["floor"]),
    ("planes-three", edit(["brushes", 1, "planes"], [[1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1]]), DegenerateBrushError,
     ["tet", "3 planes"]),
    ("planes-open", edit(["brushes", 1, "planes"], [[1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1], [-1, 0, 0, 0]]),
     DegenerateBrushError, ["tet"]),
    ("planes-duplicate", edit(["brushes", 1, "planes", 3], [1, 0, 0, 1]), DuplicatePlaneError, ["tet"]),
    ("planes-zero-normal", edit(["brushes", 1, "planes", 0], [0, 0, 0, 1]), DegenerateBrushError, ["tet", "zero normal"]),
    ("planes-short-row", edit(["brushes", 1, "planes", 0], [1, 0, 0]), SceneFormatError, ["tet", "planes[0]", "nx, ny, nz, d"]),
    ("planes-empty-space", edit(["brushes", 1, "planes", 3], [-1, -1, -1, -10]), DegenerateBrushError, ["tet"]),
    ("planes-too-many", edit(["brushes", 1, "planes"], [[np.cos(a), np.sin(a), 0, 1] for a in np.linspace(0, 6, MAX_BRUSH_PLANES + 1)]),
     BrushError, ["tet", "at most"]),
    ("textures-with-box", edit(["brushes", 0, "textures"], ["a"] * 6), SceneFormatError, ["floor", "textures"]),
    ("textures-count", edit(["brushes", 1, "textures"], ["a"]), SceneFormatError, ["tet", "1 names for 4 planes"]),
    ("texture-not-string", edit(["brushes", 0, "texture"], 1), SceneFormatError, ["floor", "texture"]),
    ("mesh-open", edit(["brushes", 2, "mesh", "faces"], CUBE_FACES[:-1]), OpenMeshError, ["cube"]),
    ("mesh-nonconvex", edit(["brushes", 2, "mesh", "vertices", 6], [0.5, 0.5, 0.6]), NonConvexBrushError, ["cube"]),
    ("mesh-flat", edit(["brushes", 2, "mesh", "vertices"], [[x, y, 0] for x, y, _ in CUBE_VERTS]), BrushError, ["cube"]),
    ("mesh-bad-index", edit(["brushes", 2, "mesh", "faces", 0, 0], 99), SceneFormatError, ["cube", "vertex index 99"]),
    ("mesh-float-index", edit(["brushes", 2, "mesh", "faces", 0, 0], 1.0), SceneFormatError, ["cube", "whole number"]),
    ("mesh-two-index-face", edit(["brushes", 2, "mesh", "faces", 0], [0, 1]), SceneFormatError, ["cube", "at least 3"]),
    ("mesh-missing-faces", edit(["brushes", 2, "mesh", "faces"], DELETE), SceneFormatError, ["cube", "faces"]),
    ("hull-missing-maxs", edit(["hulls", 0, "maxs"], DELETE), SceneFormatError, ["hull 'stand'", "maxs"]),
    ("hull-inverted", edit(["hulls", 0, "mins", 2], 2.0), SceneFormatError, ["stand", "mins.z"]),
    ("hull-duplicate", lambda d: d["hulls"].append(dict(d["hulls"][0])) or d, SceneFormatError, ["stand", "twice"]),
    ("hull-empty-name", edit(["hulls", 0, "name"], " "), SceneFormatError, ["hulls[0].name", "empty"]),
    ("light-negative-color", edit(["lights", 0, "color", 1], -1), SceneFormatError, ["lamp", "color"]),
    ("light-intensity-string", edit(["lights", 0, "intensity"], "bright"), SceneFormatError, ["lamp", "intensity"]),
    ("light-no-position", edit(["lights", 0, "position"], DELETE), SceneFormatError, ["light 'lamp'", "position"]),
    ("marker-kind-number", edit(["markers", 0, "kind"], 1), SceneFormatError, ["start", "kind"]),
    ("marker-angle-list", edit(["markers", 0, "angle"], [0]), SceneFormatError, ["start", "angle"]),
    ("detail-bad-index", edit(["detail_meshes", 0, "faces", 0, 2], 3), SceneFormatError, ["tri", "vertex index 3"]),
    ("detail-bad-vertex", edit(["detail_meshes", 0, "vertices", 0], [0, 0]), SceneFormatError, ["tri", "3 numbers"]),
    ("settings-unknown", edit(["settings", "speed"], 1), SceneFormatError, ["settings", "speed"]),
    ("settings-type", edit(["settings", "splitter"], 1), SceneFormatError, ["settings.splitter", "string"]),
    ("settings-int", edit(["settings", "max_candidates"], 2.5), SceneFormatError, ["settings.max_candidates"]),
    ("settings-negative", edit(["settings", "max_candidates"], -1), SceneFormatError, ["settings.max_candidates"]),
    ("settings-scale", edit(["settings", "map_scale"], 0), SceneFormatError, ["settings.map_scale"]),
    ("settings-not-object", edit(["settings"], []), SceneFormatError, ["settings", "object"]),
    ("non-string-key", lambda d: d["brushes"][0].update({1: 2}) or d, SceneFormatError, ["floor", "not a string"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_error_paths_dict(case):
    _, apply, error, words = case
    data = apply(copy.deepcopy(base()))
    with pytest.raises(error) as info:
        scene_from_dict(data, "t.json")
    message = str(info.value)
    for word in words:
        assert word in message, message
    assert message.endswith(".") or message.endswith(")")


TEXT_CASES = [
    ("syntax", '{"format": "brushbake-scene", "version": 1,\n "brushes": [}', SceneFormatError,
     ["line 2, column", "not valid JSON"]),
    ("empty", "", SceneFormatError, ["line 1, column 1"]),
    ("trailing-comma", '{"format": "brushbake-scene", "version": 1,}', SceneFormatError, ["line 1"]),
    ("duplicate-key", '{"format": "brushbake-scene", "version": 1, "version": 1}', SceneFormatError,
     ["'version' twice"]),
    ("nan", '{"format": "brushbake-scene", "version": 1, "lights": [{"name": "l", "position": [NaN, 0, 0]}]}',
     InvalidCoordinatesError, ["light 'l'.position[0]", "NaN"]),
    ("infinity", '{"format": "brushbake-scene", "version": 1, "brushes": [{"name": "b", "box": [[0,0,0],[Infinity,1,1]]}]}',
     InvalidCoordinatesError, ["brush 'b'.box[1][0]", "Infinity"]),
    ("minus-infinity", '{"format": "brushbake-scene", "version": 1, "settings": {"split_weight": -Infinity}}',
     InvalidCoordinatesError, ["settings.split_weight", "-Infinity"]),
    ("nan-version", '{"format": "brushbake-scene", "version": NaN}', SceneFormatError, ["version"]),
    ("nan-index", '{"format": "brushbake-scene", "version": 1, "detail_meshes": [{"vertices": [], "faces": [[NaN]]}]}',
     InvalidCoordinatesError, ["faces[0][0]"]),
    ("overflow", '{"format": "brushbake-scene", "version": 1, "lights": [{"position": [1e999, 0, 0]}]}',
     InvalidCoordinatesError, ["position[0]"]),
    ("long-int", '{"format": "brushbake-scene", "version": 1, "lights": [{"position": [' + "9" * 5000 + ', 0, 0]}]}',
     InvalidCoordinatesError, ["position[0]"]),
    ("deep", "[" * 100000 + "]" * 100000, SceneFormatError, []),
]


@pytest.mark.parametrize("case", TEXT_CASES, ids=[c[0] for c in TEXT_CASES])
def test_error_paths_text(case, tmp_path):
    _, text, error, words = case
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(error) as info:
        load_scene_json(path)
    for word in words + ["t.json"]:
        assert word in str(info.value), str(info.value)


def test_error_bad_utf8_and_missing_file(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(b'{"format": "brushbake-scene", "version": 1, "name": "caf\xe9"}')
    with pytest.raises(SceneFormatError, match="UTF-8"):
        load_scene_json(path)
    with pytest.raises(SceneFormatError, match="cannot be read"):
        load_scene_json(tmp_path / "missing.json")
    with pytest.raises(SceneFormatError, match="cannot be read"):
        load_scene_json(tmp_path)


def test_bom_and_unicode_names(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"format": FORMAT_NAME, "version": 1, "name": "caf\u00e9 \ud83d\ude00"}).encode())
    scene = load_scene_json(path)
    assert scene.name == "caf\u00e9 \U0001F600"
    save_scene_json(scene, tmp_path / "out.json")
    assert load_scene_json(tmp_path / "out.json").name == scene.name


# --------------------------------------------------------------------------------------------
# Fuzzing: whatever comes in, the loader answers with a scene or a BrushbakeError


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=30,
)

FUZZ = settings(max_examples=int(os.environ.get("BRUSHBAKE_FUZZ_EXAMPLES", "300")), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


BASE_PATHS = list(_paths(base()))


def _load_or_typed_error(fn, *args):
    try:
        scene = fn(*args)
    except BrushbakeError as exc:
        assert str(exc)
        return None
    assert isinstance(scene, Scene)
    return scene


@FUZZ
@given(json_values)
def test_fuzz_random_values(value):
    _load_or_typed_error(scene_from_dict, value, "fuzz.json")
    _load_or_typed_error(scene_from_dict, {"format": FORMAT_NAME, "version": 1, "brushes": value}, "fuzz.json")


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(BASE_PATHS), st.sampled_from(["set", "delete", "add"]), json_values),
                min_size=1, max_size=4))
def test_fuzz_structured_edits(edits):
    data = copy.deepcopy(base())
    for path, op, value in edits:
        target = data
        try:
            for key in path[:-1]:
                target = target[key]
        except (KeyError, IndexError, TypeError):
            continue
        if not path:
            data = value
            continue
        key = path[-1]
        if op == "set":
            try:
                target[key] = value
            except (IndexError, TypeError):
                pass
        elif op == "delete":
            try:
                del target[key]
            except (KeyError, IndexError, TypeError):
                pass
        elif isinstance(target, dict):
            target[f"{key}x"] = value
        elif isinstance(target, list):
            target.append(value)
    _load_or_typed_error(scene_from_dict, data, "fuzz.json")


BASE_TEXT = dumps_scene(scene_from_dict(base(), "t.json")).encode()


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(["flip", "delete", "insert", "dup"]), st.integers(0, len(BASE_TEXT)),
                          st.binary(min_size=1, max_size=6)), min_size=1, max_size=6))
def test_fuzz_byte_mutations(mutations):
    data = bytearray(BASE_TEXT)
    for op, pos, chunk in mutations:
        pos = min(pos, len(data))
        if op == "flip" and pos < len(data):
            data[pos] ^= chunk[0] or 1
        elif op == "delete":
            del data[pos:pos + len(chunk)]
        elif op == "insert":
            data[pos:pos] = chunk
        else:
            data[pos:pos] = data[pos:pos + 40]
    try:
        value = parse_scene_text(bytes(data), "fuzz.json")
    except BrushbakeError:
        return
    _load_or_typed_error(scene_from_dict, value, "fuzz.json")


@FUZZ
@given(st.lists(st.tuples(st.floats(-3, 3), st.floats(-3, 3), st.floats(-3, 3), st.floats(-3, 3)), min_size=0, max_size=9))
def test_fuzz_random_planes(rows):
    data = {"format": FORMAT_NAME, "version": 1, "brushes": [{"name": "rnd", "planes": [list(r) for r in rows]}]}
    scene = _load_or_typed_error(scene_from_dict, data, "fuzz.json")
    if scene is not None:  # a brush that loads survives a round trip
        again = scene_from_dict(json.loads(dumps_scene(scene)), "fuzz.json")
        assert np.allclose(again.brushes[0].bounds, scene.brushes[0].bounds, atol=1e-6)


def test_the_documented_example_loads():
    from pathlib import Path
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "SCENE_FORMAT.md").read_text()
    example = re.search(r"```json\n(.*?)```", doc, re.S).group(1)
    scene = scene_from_dict(parse_scene_text(example, "example.json"), "example.json")
    assert scene.name == "example" and [b.contents.label for b in scene.brushes] == ["solid", "solid", "detail", "clip"]
    assert scene.settings.split_weight == 2.0 and [h.name for h in scene.hulls] == ["stand", "crouch"]
