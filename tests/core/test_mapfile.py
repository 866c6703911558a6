"""Quake .map loading: formats, orientation, scale, contents rules, entities, bad input."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushbake.core.model.brushes import Contents, brush_from_planes
from brushbake.core.errors import (
    BrushbakeError,
    BrushError,
    CancelledError,
    DegenerateBrushError,
    InvalidCoordinatesError,
    InvalidSettingError,
    SceneFormatError,
)
from brushbake.core.formats.mapfile import (
    DEFAULT_SCALE,
    brush_contents,
    decode_map_bytes,
    entity_role,
    load_map,
    load_map_text,
    parse_map_text,
    quake_to_scene,
    scene_from_mapfile,
)

MAPS_DIR = (Path(__file__).parents[2] / "maps").resolve()


def _map_paths() -> list[Path]:
    if not MAPS_DIR.is_dir():
        pytest.fail(
            f"The real test maps are missing: expected them in {MAPS_DIR} (maps/ in the repository). "
            "Restore it from git; these tests must not be skipped."
        )
    paths = sorted(MAPS_DIR.glob("*/*.map"))
    if not paths:
        pytest.fail(f"No .map files found under {MAPS_DIR}.")
    return paths


MAP_NAMES = [p.name for p in sorted(MAPS_DIR.glob("*/*.map"))] or ["<missing maps>"]


def _path(name: str) -> Path:
    for p in _map_paths():
        if p.name == name:
            return p
    pytest.fail(f"{name} is missing from {MAPS_DIR}")


@pytest.fixture(scope="module")
def loaded_scenes() -> dict:
    """Every real map, loaded once (e3m4 takes a few seconds)."""
    return {p.name: load_map(p) for p in _map_paths()}


# --------------------------------------------------------------------------------------------
# Hand-written maps

CUBE_STANDARD = """// Game: Quake
// Format: Standard
{
"classname" "worldspawn"
{
( 0 0 0 ) ( 0 1 0 ) ( 0 0 1 ) {tex} 0 0 0 1 1
( 0 0 0 ) ( 0 0 1 ) ( 1 0 0 ) {tex} 0 0 0 1 1
( 0 0 0 ) ( 1 0 0 ) ( 0 1 0 ) {tex} 0 0 0 1 1
( 64 32 16 ) ( 64 32 17 ) ( 64 33 16 ) {tex} 0 0 0 1 1
( 64 32 16 ) ( 65 32 16 ) ( 64 32 17 ) {tex} 0 0 0 1 1
( 64 32 16 ) ( 64 33 16 ) ( 65 32 16 ) {tex} 0 0 0 1 1
}
}
"""

CUBE_VALVE = """// Game: Quake
// Format: Valve
{
"classname" "worldspawn"
"mapversion" "220"
{
( 0 0 0 ) ( 0 1 0 ) ( 0 0 1 ) {tex} [ 0 1 0 0 ] [ 0 0 -1 0 ] 0 1 1
( 0 0 0 ) ( 0 0 1 ) ( 1 0 0 ) {tex} [ 1 0 0 0 ] [ 0 0 -1 0 ] 0 1 1
( 0 0 0 ) ( 1 0 0 ) ( 0 1 0 ) {tex} [ 1 0 0 0 ] [ 0 -1 0 0 ] 0 1 1
( 64 32 16 ) ( 64 32 17 ) ( 64 33 16 ) {tex} [ 0 1 0 0 ] [ 0 0 -1 0 ] 0 1 1
( 64 32 16 ) ( 65 32 16 ) ( 64 32 17 ) {tex} [ 1 0 0 0 ] [ 0 0 -1 0 ] 0 1 1
( 64 32 16 ) ( 64 33 16 ) ( 65 32 16 ) {tex} [ 1 0 0 0 ] [ 0 -1 0 0 ] 0 1 1
}
}
"""


def box_lines(mins, maxs, textures) -> str:
    """Six standard-format plane lines of an axis-aligned box (outward normals by qbsp's rule)."""
    x0, y0, z0 = mins
    x1, y1, z1 = maxs
    if isinstance(textures, str):
        textures = [textures] * 6
    planes = [
        ((x0, y0, z0), (x0, y0 + 1, z0), (x0, y0, z0 + 1)),  # -x
        ((x0, y0, z0), (x0, y0, z0 + 1), (x0 + 1, y0, z0)),  # -y
        ((x0, y0, z0), (x0 + 1, y0, z0), (x0, y0 + 1, z0)),  # -z
        ((x1, y1, z1), (x1, y1, z1 + 1), (x1, y1 + 1, z1)),  # +x
        ((x1, y1, z1), (x1 + 1, y1, z1), (x1, y1, z1 + 1)),  # +y
        ((x1, y1, z1), (x1, y1 + 1, z1), (x1 + 1, y1, z1)),  # +z
    ]
    out = []
    for (p0, p1, p2), tex in zip(planes, textures):
        pts = " ".join("( %s )" % " ".join(f"{v:.17g}" for v in p) for p in (p0, p1, p2))
        out.append(f"{pts} {tex} 0 0 0 1 1")
    return "\n".join(out)


def brush_block(mins=(0, 0, 0), maxs=(64, 64, 64), textures="wall") -> str:
    return "{\n" + box_lines(mins, maxs, textures) + "\n}"


def entity_block(classname: str, *brushes: str, **keys: str) -> str:
    kv = [f'"classname" "{classname}"'] + [f'"{k}" "{v}"' for k, v in keys.items()]
    return "{\n" + "\n".join(kv + list(brushes)) + "\n}\n"


def one_brush_scene(textures, classname="worldspawn", **kw):
    if classname == "worldspawn":
        text = entity_block("worldspawn", brush_block(textures=textures))
    else:
        text = entity_block("worldspawn", brush_block((200, 0, 0), (264, 64, 64))) + entity_block(
            classname, brush_block(textures=textures)
        )
    return load_map_text(text, "tiny.map", **kw)


# --------------------------------------------------------------------------------------------
# Real maps


def test_maps_folder_present():
    assert len(_map_paths()) >= 12


@pytest.mark.parametrize("map_name", MAP_NAMES)
def test_real_map_loads_with_sensible_counts(map_name, loaded_scenes):
    path = _path(map_name)
    scene = loaded_scenes[map_name]
    text = path.read_text(encoding="latin-1")
    assert scene.name == path.stem
    assert len(scene.brushes) > 0
    assert all(b.name.startswith(f"{map_name}:entity") for b in scene.brushes + scene.movers)
    # every block in the file is accounted for: brushes + movers + skipped == parsed brushes
    mapfile = parse_map_text(text, map_name)
    skipped = [w for w in scene.warnings if " skipped: " in w]
    assert len(scene.brushes) + len(scene.movers) + len(skipped) == mapfile.brush_count
    # the real maps are clean: no brush is skipped, no plane dropped
    assert scene.warnings == []
    if re.search(r'"classname"\s+"info_player_start"', text):
        assert any(m.kind == "player_start" for m in scene.markers)
    n_lights = len(re.findall(r'"classname"\s+"light[^"]*"', text))
    assert len([li for li in scene.lights if li.entity]) == n_lights  # a worldspawn '_sunlight' is no entity
    for b in scene.brushes:
        assert b.contents in (Contents.SOLID, Contents.DETAIL, Contents.CLIP, Contents.NONSOLID)
        assert b.entity.lower() in ("worldspawn", "func_group") or b.entity.lower().startswith("func_detail")
    # sensible size: a Quake level is tens to a few hundred metres across at 1/32 m per unit
    extent = scene.bounds[1] - scene.bounds[0]
    assert np.all(extent >= 0.25) and np.all(extent < 1000.0)


def test_light_general_has_lights(loaded_scenes):
    scene = loaded_scenes["light_general.map"]
    assert len(scene.lights) >= 10
    assert sum(light.intensity > 0 for light in scene.lights) >= 10
    assert any(light.intensity < 0 for light in scene.lights)  # an antilight, kept as written
    for light in scene.lights:
        assert np.isfinite(light.intensity)
        assert all(0.0 <= c <= 1.0 for c in light.color)


def test_expected_contents_in_real_maps(loaded_scenes):
    e1m7 = loaded_scenes["e1m7.map"]
    assert any(b.contents == Contents.NONSOLID for b in e1m7.brushes)  # water / lava
    assert any(b.contents == Contents.CLIP for b in e1m7.brushes)
    assert any(m.kind == "player_deathmatch" for m in e1m7.markers)
    assert any(b.entity == "func_door" for b in e1m7.movers)
    e3m4 = loaded_scenes["e3m4.map"]
    assert len(e3m4.brushes) > 2000
    assert any(b.contents == Contents.DETAIL for b in e3m4.brushes)
    features = loaded_scenes["qbspfeatures.map"]
    illusionary = [b for b in features.brushes if b.entity == "func_detail_illusionary"]
    assert illusionary and all(b.contents == Contents.NONSOLID for b in illusionary)


def test_standard_and_valve_real_maps_are_both_covered():
    e1m7 = _path("e1m7.map").read_text(encoding="latin-1")
    plane_lines = [l for l in e1m7.splitlines() if l.startswith("(")]
    assert plane_lines and not any("[" in l for l in plane_lines)
    lq = _path("lq_e1m6.map").read_text(encoding="latin-1")
    assert all("[" in l for l in lq.splitlines() if l.startswith("("))


def test_plane_orientation_on_q1_cube():
    """qbsp's rule: normal = (p0 - p1) x (p2 - p1) points out of the brush."""
    path = _path("q1_cube.map")
    mapfile = parse_map_text(path.read_text(), path.name)
    assert mapfile.brush_count == 1
    p0, p1, p2 = mapfile.points[:, 0], mapfile.points[:, 1], mapfile.points[:, 2]
    n = np.cross(p0 - p1, p2 - p1)
    n /= np.linalg.norm(n, axis=1)[:, None]
    d = np.einsum("ij,ij->i", n, p0)
    brush = brush_from_planes(n, d, "cube")
    assert np.all(brush.vertices @ n.T - d <= 1e-9)  # every vertex behind every plane
    np.testing.assert_allclose(brush.bounds, [[32, -240, 80], [80, -144, 112]])
    # the opposite orientation encloses nothing
    with pytest.raises(BrushError):
        brush_from_planes(-n, -d, "inside-out")
    scene = load_map(path, scale=1.0)
    np.testing.assert_allclose(scene.brushes[0].bounds, [[32, -240, 80], [80, -144, 112]])
    assert scene.brushes[0].name == "q1_cube.map:entity0:brush0"
    start = scene.markers[0]
    assert start.kind == "player_start" and start.position == (56.0, -208.0, 136.0)


# --------------------------------------------------------------------------------------------
# Formats


def test_standard_and_valve_give_identical_brushes():
    a = load_map_text(CUBE_STANDARD.replace("{tex}", "wall"), "std.map").brushes
    b = load_map_text(CUBE_VALVE.replace("{tex}", "wall"), "valve.map").brushes
    assert len(a) == len(b) == 1
    np.testing.assert_array_equal(a[0].normals, b[0].normals)
    np.testing.assert_array_equal(a[0].dists, b[0].dists)
    assert len(a[0].faces) == len(b[0].faces)
    for fa, fb in zip(a[0].faces, b[0].faces):
        np.testing.assert_array_equal(fa, fb)
    assert a[0].textures == b[0].textures == ["wall"] * 6
    np.testing.assert_allclose(a[0].bounds, [[0, 0, 0], [2, 1, 0.5]])


def test_scale_and_axes():
    np.testing.assert_array_equal(quake_to_scene([[32, -64, 16]]), [[1.0, -2.0, 0.5]])
    np.testing.assert_array_equal(quake_to_scene([1, 2, 3], 2.0), [2, 4, 6])
    assert DEFAULT_SCALE == 1.0 / 32.0
    text = CUBE_STANDARD.replace("{tex}", "wall")
    metres = load_map_text(text, "a.map").brushes[0]
    units = load_map_text(text, "a.map", scale=1.0).brushes[0]
    # no axis swap: 64 x 32 x 16 units stay x, y, z; Z is up in both
    np.testing.assert_allclose(units.bounds, [[0, 0, 0], [64, 32, 16]])
    np.testing.assert_allclose(metres.bounds, units.bounds / 32.0)
    np.testing.assert_allclose(metres.volume, units.volume / 32.0**3)
    scene = load_map_text(text, "a.map", scale=0.5)
    assert scene.settings.map_scale == 0.5
    for bad in (0.0, float("nan"), 1000.0):  # the setting map_scale's range, checked before any work
        with pytest.raises(InvalidSettingError, match=r"a.map: map_scale is .*; it must be from 0.0009765625 to 100"):
            load_map_text(text, "a.map", scale=bad)


def test_tolerated_syntax_variants():
    text = (
        "// a comment\r\n"
        "{\r\n"
        '"classname" "worldspawn" // trailing comment\r\n'
        '"message"\t"Hello, world with spaces"\r\n'
        '"wad" "C:\\quake\\id1\\"\r\n'
        "{ // brush 0\r\n"
        # Quake 2 style: three extra numbers (contents, flags, value), tabs, no space inside ()
        "(0 0 0) (0 1 0) (0 0 1) e1u1/wall 0 0 0 1 1 0 0 0\r\n"
        "( 0 0 0 ) ( 0 0 1 ) ( 1 0 0 ) e1u1/wall\t0 0 0 1 1 0 0 0 // side\r\n"
        '( 0 0 0 ) ( 1 0 0 ) ( 0 1 0 ) "e1u1/wall" 0 0 0 1 1\r\n'
        "( 64 64 64 ) ( 64 64 65 ) ( 64 65 64 ) WALL -16.5 +8 90 0.5 -1.000000e+00\r\n"
        "( 64 64 64 ) ( 65 64 64 ) ( 64 64 65 ) wall [ 1 0 0 0 ] [ 0 0 -1 0 ] 0 1 1 0 0 0\r\n"
        "( 64 64 64 ) ( 64 65 64 ) ( 65 64 64 ) wall [ 1 0 0 0 ] [ 0 -1 0 0 ] 0 1 1\r\n"
        "}\r\n"
        "}\r\n"
        "{\r\n"
        '"classname" "info_player_start"\r\n'
        '"origin" "32 32 96"\r\n'
        '"angle" "90"\r\n'
        "}\r\n"
        "{\r\n"
        '"classname" "path_corner"\r\n'
        '"origin" "0 0 0"\r\n'
        "}\r\n"
    )
    scene = load_map_text(text, "variants.map")
    assert len(scene.brushes) == 1 and scene.warnings == []
    assert scene.brushes[0].textures[0] == "e1u1/wall"
    assert scene.markers[0].kind == "player_start"
    assert scene.markers[0].position == (1.0, 1.0, 3.0)
    assert scene.markers[0].angle == 90.0
    assert len(scene.markers) == 1  # path_corner is neither a light nor an info_ marker
    mapfile = parse_map_text(text, "variants.map")
    assert mapfile.entities[0].properties["message"] == "Hello, world with spaces"
    assert mapfile.entities[0].properties["wad"] == "C:\\quake\\id1\\"


def test_bytes_decoding():
    text = entity_block("worldspawn", brush_block(), message="caf\u00e9")
    for data in (text.encode("utf-8"), text.encode("latin-1"), b"\xef\xbb\xbf" + text.encode("utf-8"), text.encode() + b"\x1a"):
        decoded = decode_map_bytes(data, "enc.map")
        assert len(load_map_text(decoded, "enc.map").brushes) == 1
    # Quake 'gold' text: bytes 128-255 are fine in values
    gold = text.replace("caf\u00e9", "").encode() .replace(b'"message" ""', b'"message" "\x85\xc1\xe2\xff"')
    decoded = decode_map_bytes(gold, "gold.map")
    assert parse_map_text(decoded, "gold.map").entities[0].properties["message"] == "\x85\xc1\xe2\xff"


def test_entities_without_brushes_and_empty_worldspawn():
    text = entity_block("worldspawn") + entity_block("info_null", origin="0 0 0") + entity_block("light", origin="64 0 0")
    scene = load_map_text(text, "empty.map")
    assert scene.brushes == [] and len(scene.markers) == 1 and len(scene.lights) == 1


def test_patches_are_skipped_with_a_warning():
    patch = "{\npatchDef2\n{\ncommon/caulk\n( 3 3 0 0 0 )\n(\n( ( 0 0 0 0 0 ) ( 0 1 0 0 1 ) ( 0 2 0 0 2 ) )\n)\n}\n}"
    text = entity_block("worldspawn", patch, brush_block())
    scene = load_map_text(text, "q3.map")
    assert len(scene.brushes) == 1
    assert scene.brushes[0].name == "q3.map:entity0:brush1"  # numbered as the editor counts
    assert any("patchDef2" in w for w in scene.warnings)
    brushdef = "{\nbrushDef\n{\n( 0 0 0 ) ( 1 0 0 ) ( 0 1 0 ) ( ( 1 0 0 ) ( 0 1 0 ) ) tex 0 0 0\n}\n}"
    with pytest.raises(SceneFormatError, match="brushDef"):
        load_map_text(entity_block("worldspawn", brushdef), "q3.map")


def test_omit_from_export_layers():
    layer = entity_block(
        "func_group", brush_block((100, 0, 0), (164, 64, 64)),
        _tb_type="_tb_layer", _tb_id="7", _tb_name="junk", _tb_layer_omit_from_export="1",
    )
    member = entity_block("func_detail", brush_block((200, 0, 0), (264, 64, 64)), _tb_layer="7")
    scene = load_map_text(entity_block("worldspawn", brush_block()) + layer + member, "layers.map")
    assert [b.name for b in scene.brushes] == ["layers.map:entity0:brush0"]
    assert len(scene.warnings) == 2


# --------------------------------------------------------------------------------------------
# Contents rules


@pytest.mark.parametrize(
    "textures, classname, expected",
    [
        ("wall", "worldspawn", Contents.SOLID),
        ("sky4", "worldspawn", Contents.SOLID),
        ("SKY", "worldspawn", Contents.SOLID),
        ("*water1", "worldspawn", Contents.NONSOLID),
        (["*lava1", "wall", "wall", "wall", "wall", "wall"], "worldspawn", Contents.NONSOLID),
        ("*slime", "func_detail", Contents.NONSOLID),
        ("clip", "worldspawn", Contents.CLIP),
        ("CLIP", "func_group", Contents.CLIP),
        ("textures/common/clip", "worldspawn", Contents.CLIP),
        ("clip", "func_detail", Contents.CLIP),
        (["clip", "wall", "clip", "clip", "clip", "clip"], "worldspawn", Contents.SOLID),
        ("trigger", "worldspawn", Contents.NONSOLID),
        ("skip", "worldspawn", Contents.NONSOLID),
        ("hint", "worldspawn", Contents.NONSOLID),
        ("HintSkip", "worldspawn", Contents.NONSOLID),
        ("origin", "worldspawn", Contents.NONSOLID),
        (["hint", "skip", "skip", "skip", "skip", "skip"], "worldspawn", Contents.NONSOLID),
        (["skip", "wall", "skip", "skip", "skip", "skip"], "worldspawn", Contents.SOLID),
        (["skip", "wall", "skip", "skip", "skip", "skip"], "func_detail", Contents.DETAIL),
        ("wall", "func_detail", Contents.DETAIL),
        ("wall", "func_detail_wall", Contents.DETAIL),
        ("wall", "func_detail_fence", Contents.DETAIL),
        ("wall", "func_detail_illusionary", Contents.NONSOLID),
        ("wall", "func_group", Contents.SOLID),
    ],
)
def test_contents_rules(textures, classname, expected):
    scene = one_brush_scene(textures, classname)
    brush = [b for b in scene.brushes if b.entity == classname][0]
    assert brush.contents == expected
    assert brush.entity == classname
    if entity_role(classname) != "illusionary":
        assert brush_contents(brush.textures, detail=entity_role(classname) == "detail") == expected


@pytest.mark.parametrize("classname", ["func_door", "func_plat", "func_wall", "trigger_once", "func_illusionary"])
def test_movers_are_kept_apart(classname):
    textures = "trigger" if classname.startswith("trigger") else "door"
    scene = one_brush_scene(textures, classname)
    assert [b.entity for b in scene.brushes] == ["worldspawn"]
    assert len(scene.movers) == 1
    mover = scene.movers[0]
    assert mover.entity == classname
    assert mover.name == "tiny.map:entity1:brush0"
    assert mover.contents == (Contents.NONSOLID if textures == "trigger" else Contents.SOLID)


def test_entity_roles():
    assert entity_role("worldspawn") == entity_role("FUNC_GROUP") == "world"
    assert entity_role("func_detail") == entity_role("func_detail_wall") == entity_role("func_detail_fence") == "detail"
    assert entity_role("func_detail_illusionary") == "illusionary"
    assert entity_role("func_door") == entity_role("trigger_multiple") == entity_role("") == "mover"


# --------------------------------------------------------------------------------------------
# Lights and markers


def test_lights_and_markers():
    text = (
        entity_block("worldspawn", brush_block())
        + entity_block("light", origin="32 64 -32")
        + entity_block("light_torch_small_walltorch", origin="0 0 0", light="200", _color="255 128 0")
        + entity_block("light", origin="0 0 0", color="1 0.5 0.25")
        + entity_block("info_player_start", origin="16 16 24", angle="270")
        + entity_block("info_player_deathmatch", origin="0 0 24", angles="0 45 0")
        + entity_block("info_player_coop", origin="0 0 24")
        + entity_block("info_intermission", origin="0 0 24", mangle="10 20 0")
        + entity_block("info_null", origin="1 2 3")
        + entity_block("monster_army", origin="0 0 0")
    )
    scene = load_map_text(text, "ents.map")
    assert scene.warnings == []
    lights = scene.lights
    assert len(lights) == 3
    assert lights[0].position == (1.0, 2.0, -1.0) and lights[0].intensity == 300.0 and lights[0].color == (1, 1, 1)
    assert lights[0].name == "ents.map:entity1"
    assert lights[1].intensity == 200.0
    np.testing.assert_allclose(lights[1].color, (1.0, 128 / 255, 0.0))
    np.testing.assert_allclose(lights[2].color, (1.0, 0.5, 0.25))
    kinds = [m.kind for m in scene.markers]
    assert kinds == ["player_start", "player_deathmatch", "player_coop", "intermission", "null"]
    assert scene.markers[0].angle == 270.0 and scene.markers[0].position == (0.5, 0.5, 0.75)
    assert scene.markers[1].angle == 45.0


def test_bad_entity_values_warn_or_raise():
    text = entity_block("worldspawn", brush_block()) + entity_block("light", origin="1 2", light="bright")
    scene = load_map_text(text, "bad.map")
    assert scene.lights[0].position == (0.0, 0.0, 0.0) and scene.lights[0].intensity == 300.0
    assert len(scene.warnings) == 2 and "line" in scene.warnings[0]
    with pytest.raises(SceneFormatError, match=r"bad\.map, line \d+"):
        load_map_text(text, "bad.map", strict=True)


# --------------------------------------------------------------------------------------------
# Bad brushes


def two_plane_brush() -> str:
    lines = box_lines((0, 0, 0), (64, 64, 64), "wall").split("\n")
    return "{\n" + "\n".join(lines[:2]) + "\n}"


def test_two_plane_brush_is_skipped_or_raises():
    text = entity_block("worldspawn", brush_block(), two_plane_brush(), brush_block((100, 0, 0), (164, 64, 64)))
    scene = load_map_text(text, "bad.map")
    assert [b.name for b in scene.brushes] == ["bad.map:entity0:brush0", "bad.map:entity0:brush2"]
    assert len(scene.warnings) == 1
    assert "bad.map:entity0:brush1" in scene.warnings[0] and "skipped" in scene.warnings[0]
    with pytest.raises(DegenerateBrushError, match=r"bad\.map:entity0:brush1"):
        load_map_text(text, "bad.map", strict=True)


def test_collinear_points_name_the_brush_and_line():
    brush = "{\n" + box_lines((0, 0, 0), (64, 64, 64), "wall") + "\n( 0 0 0 ) ( 1 1 1 ) ( 2 2 2 ) wall 0 0 0 1 1\n}"
    text = entity_block("worldspawn", brush_block(), brush)
    with pytest.raises(DegenerateBrushError, match=r"entity0:brush1.*line 18"):
        load_map_text(text, "col.map", strict=True)
    scene = load_map_text(text, "col.map")
    assert len(scene.brushes) == 1 and "col.map:entity0:brush1" in scene.warnings[0]


def test_brush_without_volume_and_open_brush():
    flat = "{\n" + box_lines((0, 0, 0), (64, 64, 0), "wall") + "\n}"
    lines = box_lines((0, 0, 0), (64, 64, 64), "wall").split("\n")
    open_brush = "{\n" + "\n".join(lines[:5] + [lines[1]]) + "\n}"  # no +z face, -y twice
    text = entity_block("worldspawn", flat)
    with pytest.raises(DegenerateBrushError, match="entity0:brush0"):
        load_map_text(text, "flat.map", strict=True)
    with pytest.raises(DegenerateBrushError, match="entity0:brush0"):
        load_map_text(entity_block("worldspawn", open_brush), "open.map", strict=True)


def test_duplicate_planes_are_dropped_with_a_warning():
    lines = box_lines((0, 0, 0), (64, 64, 64), "wall").split("\n")
    dup = "{\n" + "\n".join(lines + [lines[3].replace("wall", "other")]) + "\n}"
    for strict in (False, True):
        scene = load_map_text(entity_block("worldspawn", dup), "dup.map", strict=strict)
        assert len(scene.brushes) == 1 and len(scene.brushes[0].normals) == 6
        assert "wall" in scene.brushes[0].textures and "other" not in scene.brushes[0].textures
        assert len(scene.warnings) == 1 and "duplicate plane on line 10 (same as line 7)" in scene.warnings[0]


def test_huge_coordinates():
    text = entity_block("worldspawn", brush_block((0, 0, 0), (1e9, 64, 64)))
    with pytest.raises(InvalidCoordinatesError, match="entity0:brush0"):
        load_map_text(text, "huge.map", strict=True)
    text = entity_block("worldspawn", brush_block()).replace("( 64 64 64 )", "( 1e999 64 64 )", 1)
    with pytest.raises(InvalidCoordinatesError, match="entity0:brush0"):
        load_map_text(text, "inf.map", strict=True)
    with pytest.raises(InvalidCoordinatesError, match="entity0:brush0"):  # not skipped: the whole map is refused
        load_map_text(text, "inf.map")


@pytest.mark.parametrize("number", ["99999999999999999999", "3200001", "-3200000.5", "1e999"])
def test_world_limit_is_checked_at_once_naming_entity_brush_and_line(number):
    """Issue 20: a point beyond MAX_COORDINATE after scaling is refused in both modes before any brush
    is built, naming the entity, brush and line; 3.2e6 units at 1/32 m is exactly the limit."""
    good = entity_block("worldspawn", brush_block(), brush_block())
    lines = good.split("\n")
    at = [i for i, line in enumerate(lines) if line.startswith("(")][8]  # brush 1's third plane
    parts = lines[at].split()
    parts[1] = number
    lines[at] = " ".join(parts)
    for strict in (False, True):
        with pytest.raises(InvalidCoordinatesError, match=rf"entity0:brush1 \(line {at + 1}\)") as info:
            load_map_text("\n".join(lines), "far.map", strict=strict)
        assert "100000 m" in str(info.value)
    edge = entity_block("worldspawn", brush_block((3199935, -3200000, 0), (3199999, -3199936, 64)))
    assert len(load_map_text(edge, "edge.map", strict=True).brushes) == 1  # up to the limit: accepted
    far = entity_block("worldspawn", brush_block((1000, 0, 0), (1064, 64, 64)))
    with pytest.raises(InvalidCoordinatesError, match="entity0:brush0"):
        load_map_text(far, "scaled.map", scale=100)  # the limit is in metres, after scaling
    with pytest.raises(InvalidSettingError, match="map_scale is 100000.0; it must be from 0.0009765625 to 100"):
        load_map_text(good, "scaled.map", scale=1e5)  # beyond map_scale's range, before any work


def test_entity_origin_beyond_the_world_limit_is_refused():
    text = entity_block("worldspawn", brush_block()) + entity_block("light", origin="4000000 0 0")
    with pytest.raises(InvalidCoordinatesError, match=r"entity1 \(light\)"):
        load_map_text(text, "far_light.map")


# --------------------------------------------------------------------------------------------
# Syntax errors


@pytest.mark.parametrize(
    "text, line, pattern",
    [
        ("", 1, "no entities"),
        ("// only a comment\n", 1, "no entities"),
        ('{\n"classname" "worldspawn"\n', 3, "unexpected end of file"),
        ('{\n"classname" "worldspawn"\n{\n( 0 0 0 ) ( 0 1 0 ) ( 0 0 1 ) w 0 0 0 1 1\n', 5, "unexpected end of file"),
        ('{\n"classname" "worldspawn"\n}\n}\n', 4, "without a matching"),
        ('{\n"classname" "worldspawn"\n}\ngarbage\n', 4, "expected '{'"),
        ('{\n"classname" "worldspawn\n}\n', 2, "malformed key"),
        ('{\nclassname worldspawn\n}\n', 2, "expected '\"key\" \"value\"'"),
        ('{\n"classname" "worldspawn"\n{\n( 0 0 0 ) ( 0 1 0 ) ( 0 0 w 0 0 0 1 1\n}\n}\n', 4, "malformed plane"),
        ('{\n"classname" "worldspawn"\n{\n( 0 0 0 ) ( 0 1 0 ) ( 0 0 1 ) w 0 0 0 1\n}\n}\n', 4, "malformed plane"),
        ('{\n"classname" "worldspawn"\n{\n( 0 0 0 ) ( 0 1 0 ) ( 0 0 1 ) w [ 0 1 0 0 ] 0 0 0 1 1\n}\n}\n', 4, "malformed plane"),
        ('{\n"classname" "worldspawn"\n{\nwall\n}\n}\n', 4, "expected a plane line"),
        ('{\n"classname" "worldspawn"\n{\n{\n}\n}\n', 4, "missing its closing"),
        ('{\n"classname" "worldspawn"\n}\n{ junk\n', 4, "after a brace"),
        ('{\n"classname" "world\x00spawn"\n}\n', 2, "binary byte 0x00"),
    ],
)
def test_syntax_errors_name_the_line(text, line, pattern):
    with pytest.raises(SceneFormatError, match=pattern) as info:
        load_map_text(text, "syn.map")
    if line:
        assert f"line {line}" in str(info.value) or "no entities" in str(info.value)
    assert info.value.hint  # says what to do


def test_unreadable_files(tmp_path):
    missing = tmp_path / "nope.map"
    with pytest.raises(SceneFormatError, match="nope.map"):
        load_map(missing)
    with pytest.raises(SceneFormatError, match="cannot be opened"):
        load_map(tmp_path)  # a directory
    binary = tmp_path / "level.bsp"
    binary.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(SceneFormatError, match="binary"):
        load_map(binary)


# --------------------------------------------------------------------------------------------
# Corrupted copies of every real map


def _plane_line_offsets(data: bytes) -> list[int]:
    return [m.start() for m in re.finditer(rb"^\(", data, re.M)]


@pytest.mark.parametrize("map_name", MAP_NAMES)
def test_corrupted_real_maps_raise_typed_errors(map_name, tmp_path):
    path = _path(map_name)
    data = path.read_bytes()
    planes = _plane_line_offsets(data)
    rng = np.random.default_rng(len(data))
    picks = sorted(rng.choice(len(planes), size=min(4, len(planes)), replace=False))

    def expect_error(blob: bytes, kinds=(SceneFormatError,), strict=True, name="bad.map"):
        target = tmp_path / name
        target.write_bytes(blob)
        with pytest.raises(BrushbakeError) as info:
            load_map(target, strict=strict)
        assert isinstance(info.value, kinds), repr(info.value)
        return info.value

    # truncated inside a plane line, just after a '{', and just before the last '}'
    for k in picks:
        cut = planes[k] + 7
        err = expect_error(data[:cut])
        assert "unexpected end of file" in str(err) or "malformed plane" in str(err)
    expect_error(data[: data.index(b"{") + 1])
    expect_error(data[: data.rindex(b"}")])
    # garbage bytes: binary, and printable junk inside a plane line and at the start of one
    for k in picks[:2]:
        at = planes[k] + 3
        expect_error(data[:at] + b"\x00\xff\x13garbage" + data[at:])
        expect_error(data[:at] + b"#@!" + data[at:])
        expect_error(data[: planes[k]] + b"junk " + data[planes[k]:])
    # an extra '}' / a lost '}'
    expect_error(data + b"\n}\n")
    # one brush reduced to two planes: strict raises DegenerateBrushError naming it
    k = picks[0]
    start = data.rindex(b"\n{", 0, planes[k]) + 1
    end = data.index(b"\n}", planes[k])
    body = data[start:end].split(b"\n")
    plane_rows = [row for row in body if row.startswith(b"(")]
    corrupted = data[:start] + b"{\n" + b"\n".join(plane_rows[:2]) + data[end:]
    err = expect_error(corrupted, kinds=(DegenerateBrushError,))
    assert "has only 2 planes" in str(err)
    assert re.search(r"bad\.map:entity\d+:brush\d+", str(err))
    if len(data) < 100_000:  # the default mode keeps going and warns (big maps: too slow to rebuild here)
        target = tmp_path / "warn.map"
        target.write_bytes(corrupted)
        scene = load_map(target)
        assert sum("skipped" in w and "has only 2 planes" in w for w in scene.warnings) == 1


def test_two_plane_brush_name_matches_trenchbroom_comments(tmp_path):
    """TrenchBroom writes '// entity E' and '// brush B' comments; our names use the same numbers."""
    data = _path("lq_e1m6.map").read_text(encoding="latin-1")
    m = list(re.finditer(r"// brush (\d+)\n\{\n", data))[-1]
    b = m.group(1)
    e = re.findall(r"// entity (\d+)\n", data[: m.start()])[-1]
    start = m.end()
    end = data.index("\n}", start)
    rows = data[start:end].split("\n")[:2]
    corrupted = data[:start] + "\n".join(rows) + data[end:]
    with pytest.raises(DegenerateBrushError, match=rf"x\.map:entity{e}:brush{b}\b"):
        load_map_text(corrupted, "x.map", strict=True)


# --------------------------------------------------------------------------------------------
# Fuzzing


FUZZ_BASE = (CUBE_VALVE.replace("{tex}", "wall") + entity_block("light", origin="8 8 8", _color="255 0 0")).encode()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["replace", "insert", "delete"]),
            st.integers(min_value=0, max_value=len(FUZZ_BASE) - 1),
            st.binary(min_size=1, max_size=4) | st.sampled_from([b"{", b"}", b"(", b")", b'"', b"[", b"]", b"e9", b"-", b"\n", b"//", b"."]),
        ),
        min_size=1,
        max_size=5,
    ),
    st.booleans(),
)
def test_fuzz_byte_mutations(mutations, strict):
    data = bytearray(FUZZ_BASE)
    for op, pos, blob in mutations:
        pos = min(pos, len(data))
        if op == "replace":
            data[pos : pos + len(blob)] = blob
        elif op == "insert":
            data[pos:pos] = blob
        else:
            del data[pos : pos + len(blob)]
    try:
        text = decode_map_bytes(bytes(data), "fuzz.map")
        scene = load_map_text(text, "fuzz.map", strict=strict)
    except BrushbakeError:
        return
    for b in scene.brushes:
        assert np.all(np.isfinite(b.normals)) and np.all(np.isfinite(b.dists))


# --------------------------------------------------------------------------------------------
# Progress and cancel


def test_progress_and_cancel():
    path = _path("lq_e1m6.map")
    seen: list[float] = []
    scene = load_map(path, progress=lambda f, msg: seen.append(f))
    assert seen and seen == sorted(seen) and 0.0 <= seen[0] and seen[-1] == pytest.approx(1.0)
    assert len(scene.brushes) > 0
    calls = []

    def cancel_after_20():
        calls.append(1)
        return len(calls) > 20

    with pytest.raises(CancelledError):
        load_map(path, cancel=cancel_after_20)
    with pytest.raises(CancelledError):
        load_map(path, cancel=lambda: True)


def test_parse_and_build_are_separate_stages():
    mapfile = parse_map_text(CUBE_STANDARD.replace("{tex}", "wall"), "s.map")
    assert mapfile.brush_count == 1 and mapfile.points.shape == (6, 3, 3)
    assert list(mapfile.plane_lines) == [6, 7, 8, 9, 10, 11]
    scene = scene_from_mapfile(mapfile, scale=1.0, name="custom")
    assert scene.name == "custom" and len(scene.brushes) == 1
