"""Quake .map files: read them into a Scene.

One idea in one module (over 600 lines): the .map format, its tokens, entities and brushes and
their conversion to a Scene, with every error naming file, entity, brush and line.

Formats read
------------
* standard (id's qbsp):  ``( x y z ) ( x y z ) ( x y z ) TEXTURE xoff yoff rot xscale yscale``
* Valve 220:             ``( x y z ) ( x y z ) ( x y z ) TEXTURE [ ux uy uz uoff ] [ vx vy vz voff ] rot xscale yscale``
* Quake 2 / Quake 3 extra trailing numbers (content flags, surface flags, value) on either form,
  ``//`` comments (whole line or trailing), CRLF or LF line endings, UTF-8 or Latin-1 text, tabs,
  quoted keys and values with spaces, entities without brushes.  Quake 3 ``patchDef*`` blocks are
  skipped with a warning (curved patches are not brushes); ``brushDef`` (brush primitives) is refused
  with a hint to re-save the map in the standard or Valve 220 format.

Plane orientation
-----------------
qbsp takes the three points p0 p1 p2 of a plane line and builds the normal
``(p0 - p1) x (p2 - p1)``, which points *out of* the brush (TrenchBroom writes points clockwise
seen from outside).  That is brushbake's convention too: the brush is the intersection of the back
half-spaces ``n.x <= d``.  tests/core/test_mapfile.py checks it on ericw-tools' q1_cube.map.

Two stages, each a plain function:

* :func:`parse_map_text` (syntax only, fast, linear in the file: map_lines reads the data lines)
  -> :class:`MapFile`
* :func:`scene_from_mapfile` (scale, contents rules, brush building) -> :class:`Scene`

:func:`load_map` reads a file and does both.

Errors
------
A file that is not a well-formed .map (unexpected end of file, unbalanced braces, binary bytes,
a malformed plane or key line) raises :class:`SceneFormatError` naming the file and line, always.
A brush that is well-formed text but not a valid solid (fewer than 4 planes, more than
MAX_BRUSH_PLANES, three collinear points, no volume, open) is, by default, skipped with a line in ``scene.warnings`` naming the
brush, as qbsp does; ``strict=True`` raises the typed error (a :class:`BrushError` subclass or
:class:`InvalidCoordinatesError`) instead.  Exact duplicate planes in a brush are dropped (the
first is kept) with a warning in both modes, as qbsp does, so one repeated face never costs a
whole brush.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from ..model.brushes import Contents, batch_brushes, brush_from_planes
from ..detmath import norm
from ..errors import (
    BrushbakeError,
    BrushError,
    CancelledError,
    DegenerateBrushError,
    InvalidCoordinatesError,
    SceneFormatError,
)
from ..model.scene import Light, Marker, Scene, Settings
from ..model.setting_specs import check_value
from ..tolerances import COLLINEAR_SINE, DIST_EPSILON, MAX_BRUSH_PLANES, MAX_COORDINATE, NORMAL_EPSILON
from ..units import QUAKE_UNIT
from .map_lines import key_fields, plane_fields

__all__ = [
    "DEFAULT_SCALE",
    "MapBrush",
    "MapEntity",
    "MapFile",
    "brush_contents",
    "decode_map_bytes",
    "entity_role",
    "load_map",
    "load_map_text",
    "parse_map_text",
    "quake_to_scene",
    "scene_from_mapfile",
]

#: metres per Quake unit (a 64-unit corridor is 2 m wide, a 56-unit player 1.75 m tall)
DEFAULT_SCALE = QUAKE_UNIT

#: brushes built together (model/brushes.py batch_brushes)
BRUSH_BATCH = 256

ProgressFn = Callable[[float, str], None]
CancelFn = Callable[[], bool]

# --------------------------------------------------------------------------------------------
# Axis and unit conversion


def quake_to_scene(points, scale: float = DEFAULT_SCALE) -> np.ndarray:
    """Quake units -> brushbake metres.  The one place where .map coordinates are converted.

    Quake is right-handed with Z up, like Blender and brushbake, so the axes map one to one
    (x -> x, y -> y, z -> z) and only the unit changes: metres = units * scale.  A pure uniform
    scale keeps plane orientation (no handedness flip), so normals computed after conversion
    still point out of the brush.
    """
    with np.errstate(over="ignore"):  # a number beyond float64 after scaling is inf: refused later
        return np.asarray(points, dtype=np.float64) * float(scale)


# --------------------------------------------------------------------------------------------
# Contents rules (documented in docs/USER_GUIDE.md, "Brush contents from .map textures")

#: face textures that draw nothing and collide with nothing; a brush made only of these is NONSOLID
NONSOLID_TEXTURES = frozenset({"trigger", "skip", "hint", "hintskip", "origin"})
#: collision-only texture; a brush made only of it is CLIP
CLIP_TEXTURE = "clip"

#: Tool textures of other games and editors (Quake 2 and 3, Half-Life, Source) whose meaning
#: brushbake does not apply.  They follow rule 4 like any ordinary name (a brush of them is SOLID),
#: but the loader counts their faces and warns once per name, since the game they come from may
#: mean clip, non-solid or a portal.  Names under a tools folder ('common/', 'tools/') that no rule
#: knows are treated the same way.
UNKNOWN_TOOL_TEXTURES = frozenset({
    "caulk", "nodraw", "nodrawnonsolid", "nonsolid", "null", "nullskip", "invisible", "playerclip",
    "monsterclip", "botclip", "weapclip", "fullclip", "full_clip", "npcclip", "noclip", "nodrop",
    "areaportal", "antiportal", "occluder", "cluster", "donotenter", "lightgrid", "fog", "ladder",
    "blocklight", "aaatrigger", "toolsclip", "toolsnodraw", "toolsplayerclip", "toolsinvisible",
    "toolstrigger", "toolsskip", "toolshint", "toolsareaportal", "toolsblocklight", "toolsskybox",
})
TOOL_FOLDERS = ("common/", "tools/")

#: entities whose brushes are the static world
WORLD_CLASSES = frozenset({"worldspawn", "func_group"})


def _texture_key(texture: str) -> str:
    """Lower-case last path component: 'textures/common/clip' and 'CLIP' are both 'clip'."""
    t = texture.strip('"').lower()
    return t.rsplit("/", 1)[-1]


def brush_contents(textures: Iterable[str], detail: bool = False) -> Contents:
    """Contents of a brush from its face textures (case-insensitive, path prefix ignored).

    1. any liquid face (name starting with '*')              -> NONSOLID
    2. every face 'clip'                                     -> CLIP
    3. every face one of trigger/skip/hint/hintskip/origin  -> NONSOLID
    4. anything else (sky, mixed skip + normal faces, ...)   -> SOLID, or DETAIL if `detail`
    """
    keys = [_texture_key(t) for t in textures]
    if any(k.startswith("*") for k in keys):
        return Contents.NONSOLID
    if keys and all(k == CLIP_TEXTURE for k in keys):
        return Contents.CLIP
    if keys and all(k in NONSOLID_TEXTURES for k in keys):
        return Contents.NONSOLID
    return Contents.DETAIL if detail else Contents.SOLID


def unknown_texture_warnings(mapfile: "MapFile", brushes: Iterable["MapBrush"]) -> list[str]:
    """One warning per unknown tool texture (UNKNOWN_TOOL_TEXTURES, or a name under a tools folder
    that no rule knows) among the faces of `brushes`, with how many faces and brushes carry it."""
    known = NONSOLID_TEXTURES | {CLIP_TEXTURE}
    found: dict[str, list] = {}  # key -> [first spelling, first line, faces, brushes]
    for mb in brushes:
        keys_here = set()
        for i in range(mb.first_plane, mb.first_plane + mb.plane_count):
            name = mapfile.textures[i]
            key = _texture_key(name)
            lower = name.strip('"').lower()
            tool_folder = any(f"/{folder}" in f"/{lower}" for folder in TOOL_FOLDERS)
            if key in known or key.startswith("*") or key.startswith("sky") or not (
                    key in UNKNOWN_TOOL_TEXTURES or tool_folder):
                continue
            rec = found.setdefault(key, [name, int(mapfile.plane_lines[i]), 0, 0])
            rec[2] += 1
            keys_here.add(key)
        for key in keys_here:
            found[key][3] += 1
    return [f"{mapfile.source_name}: texture '{name}' ({faces} face{'s' * (faces != 1)} on {count} "
            f"brush{'es' * (count != 1)}, first on line {line}) is not one brushbake knows; its faces count as "
            "ordinary ones (a brush made of them is solid). If it means clip or non-solid in your game, give those "
            "faces 'clip', 'skip' or 'trigger' (docs/USER_GUIDE.md, 'Brush contents from .map textures')."
            for name, line, faces, count in found.values()]


def entity_role(classname: str) -> str:
    """'world', 'detail', 'illusionary' (static, never collides) or 'mover' for a brush entity.

    worldspawn, func_group: world.  func_detail, func_detail_wall, func_detail_fence and any other
    func_detail_*: detail.  func_detail_illusionary: illusionary.  Everything else with brushes
    (func_door, func_plat, func_wall, func_illusionary, trigger_*, ...) is a mover: a brush model
    with its own life, kept in scene.movers and not compiled into the static world.
    """
    c = classname.lower()
    if c in WORLD_CLASSES:
        return "world"
    if c == "func_detail_illusionary":
        return "illusionary"
    if c == "func_detail" or c.startswith("func_detail_"):
        return "detail"
    return "mover"


# --------------------------------------------------------------------------------------------
# The parsed file


@dataclass
class MapBrush:
    entity_index: int  #: E in 'entity E / brush B' (0-based, as TrenchBroom's comments count)
    index: int  #: B, the brush's index within its entity (0-based)
    line: int  #: 1-based line of the brush's opening '{'
    first_plane: int  #: into MapFile.points / textures / plane_lines
    plane_count: int
    patch: bool = False  #: a skipped Quake 3 patchDef (counted so brush numbers match the editor's)


@dataclass
class MapEntity:
    index: int
    line: int  #: 1-based line of the entity's opening '{'
    properties: dict[str, str] = field(default_factory=dict)
    key_lines: dict[str, int] = field(default_factory=dict)
    brushes: list[MapBrush] = field(default_factory=list)

    @property
    def classname(self) -> str:
        return self.properties.get("classname", "")


@dataclass
class MapFile:
    """A .map file after syntax checking: entities plus every plane's three points (Quake units)."""

    source_name: str
    entities: list[MapEntity]
    points: np.ndarray  #: (P, 3, 3) float64: plane p's points p0, p1, p2, as written
    textures: list[str]  #: (P,) texture name of each plane, as written
    plane_lines: np.ndarray  #: (P,) int: 1-based line of each plane
    warnings: list[str] = field(default_factory=list)

    @property
    def brush_count(self) -> int:
        return sum(len(e.brushes) for e in self.entities)


# --------------------------------------------------------------------------------------------
# Decoding and parsing

_BINARY_RE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_BRACES = re.compile(r"[{}\s]*")  # a greedy class with nothing after it: never backtracks

_SYNTAX_HINT = "Fix that line in a text editor, or open and re-save the map in your editor (TrenchBroom, J.A.C.K., NetRadiant)."
_TRUNCATED_HINT = "The file looks truncated or has an unbalanced '{'; re-save it from the editor, or restore it from a backup."


def _braces_only(line: str) -> bool:
    """The line is braces and whitespace only (and not empty)."""
    return bool(line) and _BRACES.match(line).end() == len(line)


def _snippet(line: str, limit: int = 60) -> str:
    line = line.strip()
    return repr(line if len(line) <= limit else line[:limit] + "...")


def _syntax_error(source: str, lineno: int, message: str, hint: str = _SYNTAX_HINT) -> SceneFormatError:
    return SceneFormatError(message, subject=f"{source}, line {lineno}", hint=hint)


def decode_map_bytes(data: bytes, source_name: str = "<map>") -> str:
    """Bytes -> text: UTF-8 if valid, else Latin-1 (every byte is a character; Quake's 'gold' message
    text uses bytes 128-255).  A byte-order mark and a trailing DOS end-of-file (Ctrl-Z) are dropped.
    Binary data (NUL and other control bytes) raises SceneFormatError naming the line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.rstrip("\x1a")
    _check_text(text, source_name)
    return text


def _check_text(text: str, source: str) -> None:
    m = _BINARY_RE.search(text)
    if m:
        lineno = text.count("\n", 0, m.start()) + 1
        column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
        raise _syntax_error(
            source,
            lineno,
            f"binary byte 0x{ord(m.group()):02x} at column {column}: this is not a .map text file, or it is corrupt.",
            hint="Check that you picked the .map source (not a compiled .bsp) and that it was saved as plain text.",
        )


def parse_map_text(
    text: str,
    source_name: str = "<map>",
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> MapFile:
    """Check the syntax of a .map file and collect its entities and planes (nothing is built yet).

    Raises SceneFormatError (with the line number and what to do) for anything that is not a
    well-formed .map, CancelledError if cancel() returns True.
    """
    if not isinstance(text, str):
        raise SceneFormatError("is not text.", subject=source_name, hint="Pass the decoded file (see decode_map_bytes).")
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.rstrip("\x1a")
    _check_text(text, source_name)
    lines = text.split("\n")  # not splitlines(): it also splits at \x85, \x0c, ... and shifts line numbers
    n_lines = len(lines)
    parser = _MapParser(source_name)
    check_every = 4096
    for lineno, raw in enumerate(lines, 1):
        if lineno % check_every == 0:
            if cancel is not None and cancel():
                raise CancelledError()
            if progress is not None:
                progress(lineno / n_lines, f"Reading {source_name}: line {lineno} of {n_lines}")
        line = raw.strip()
        if line and not line.startswith("//"):
            parser.line(lineno, line)
    mapfile = parser.finish(n_lines)
    if progress is not None:
        progress(1.0, f"Read {source_name}: {len(mapfile.entities)} entities")
    return mapfile


class _MapParser:
    """parse_map_text's state machine, one method per kind of line.  depth 0: between entities,
    1: in an entity, 2: in a brush; skip_depth > 0 while skipping a patchDef block."""

    def __init__(self, source: str):
        self.source = source
        self.entities: list[MapEntity] = []
        self.coords: list[tuple[str, ...]] = []
        self.textures: list[str] = []
        self.plane_lines: list[int] = []
        self.warnings: list[str] = []
        self.depth = 0
        self.entity: MapEntity | None = None
        self.brush_line = 0
        self.brush_first = 0
        self.skip_depth = 0
        self.skip_brush = False

    def line(self, lineno: int, line: str) -> None:
        """One stripped, non-empty, non-comment line."""
        if self.skip_depth:
            self.skip_depth += line.count("{") - line.count("}")
            if self.skip_depth < 0:
                raise _syntax_error(self.source, lineno, "unbalanced '}' inside a patch.", _TRUNCATED_HINT)
            return
        if self.depth == 2 and self.in_brush(lineno, line):
            return
        if line[0] == "{" or line[0] == "}":
            self.braces(lineno, line)
        elif self.depth == 1 and line[0] == '"':
            self.key(lineno, line)
        elif self.depth == 0:
            raise _syntax_error(self.source, lineno, f"expected '{{' to start an entity, got {_snippet(line)}.")
        else:
            raise _syntax_error(self.source, lineno,
                                f"expected '\"key\" \"value\"', '{{' or '}}' in an entity, got {_snippet(line)}.")

    def in_brush(self, lineno: int, line: str) -> bool:
        """A line inside a brush; False if it is a brace line for braces() to handle."""
        if line[0] == "(":
            self.plane(lineno, line)
            return True
        if line == "}":
            self.close_brush()
            return True
        word = line.split(None, 1)[0]
        if word.lower().startswith("patchdef") and len(self.coords) == self.brush_first and not self.skip_brush:
            assert self.entity is not None
            self.warnings.append(
                f"{self.source}:entity{self.entity.index}: skipped a Quake 3 {word} (curved patch, line {lineno}); "
                "patches are not brushes. Convert it to brushes in the editor if it must collide."
            )
            self.skip_brush = True
            self.skip_depth = 0
            return True
        if word.lower().startswith("brushdef"):
            raise _syntax_error(
                self.source,
                lineno,
                f"Quake 3 '{word}' brushes (brush primitives) are not supported.",
                hint="Save the map in the standard (Quake) or Valve 220 format and load it again.",
            )
        if self.skip_brush and line[0] == "{":
            self.skip_depth = line.count("{") - line.count("}")
            return True
        if line[0] != "{" and line[0] != "}":
            raise _syntax_error(
                self.source,
                lineno,
                f"expected a plane line '( x y z ) ( x y z ) ( x y z ) TEXTURE ...' or '}}', got {_snippet(line)}.",
            )
        return False

    def plane(self, lineno: int, line: str) -> None:
        fields = plane_fields(line)
        if fields is None:
            raise _syntax_error(
                self.source,
                lineno,
                f"malformed plane line {_snippet(line)}: expected '( x y z ) ( x y z ) ( x y z ) TEXTURE "
                "xoff yoff rot xscale yscale' or the Valve 220 form "
                "'... TEXTURE [ ux uy uz uoff ] [ vx vy vz voff ] rot xscale yscale'.",
            )
        coords, texture = fields
        self.coords.append(coords)
        self.textures.append(texture)
        self.plane_lines.append(lineno)

    def close_brush(self) -> None:
        """The brush's '}' (alone on its line, or among other braces)."""
        entity = self.entity
        assert entity is not None
        entity.brushes.append(MapBrush(entity.index, len(entity.brushes), self.brush_line, self.brush_first,
                                       len(self.coords) - self.brush_first, self.skip_brush))
        self.skip_brush = False
        self.depth = 1

    def braces(self, lineno: int, line: str) -> None:
        """A line of braces only (a trailing comment allowed): open or close entities and brushes."""
        if not _braces_only(line):
            i = line.find("//")
            if i < 0 or not _braces_only(line[:i]):
                raise _syntax_error(self.source, lineno, f"unexpected text after a brace: {_snippet(line)}.")
            line = line[:i]
        for ch in line:
            if ch == "{":
                if self.depth == 0:
                    self.entity = MapEntity(index=len(self.entities), line=lineno)
                    self.entities.append(self.entity)
                    self.depth = 1
                elif self.depth == 1:
                    self.depth = 2
                    self.brush_line = lineno
                    self.brush_first = len(self.coords)
                else:
                    assert self.entity is not None
                    raise _syntax_error(
                        self.source,
                        lineno,
                        f"'{{' inside brush {len(self.entity.brushes)} of entity {self.entity.index} (opened at line "
                        f"{self.brush_line}): that brush is missing its closing '}}'.",
                        _TRUNCATED_HINT,
                    )
            elif ch == "}":
                if self.depth == 1:
                    self.depth = 0
                elif self.depth == 2:
                    self.close_brush()
                else:
                    raise _syntax_error(self.source, lineno, "'}' without a matching '{'.", _TRUNCATED_HINT)

    def key(self, lineno: int, line: str) -> None:
        fields = key_fields(line)
        if fields is None:
            raise _syntax_error(self.source, lineno, f"malformed key line {_snippet(line)}: expected '\"key\" \"value\"'.")
        assert self.entity is not None
        key, value = fields
        self.entity.properties[key] = value
        self.entity.key_lines[key] = lineno

    def finish(self, n_lines: int) -> MapFile:
        """The end of the file: everything closed, at least one entity; the numbers parsed."""
        if self.depth != 0 or self.skip_depth:
            entity = self.entity
            assert entity is not None
            where = f"brush {len(entity.brushes)} (opened at line {self.brush_line})" if self.depth == 2 else "it"
            raise _syntax_error(
                self.source,
                n_lines,
                f"unexpected end of file: entity {entity.index} (opened at line {entity.line}) is not closed; "
                f"{where} needs its '}}'.",
                _TRUNCATED_HINT,
            )
        if not self.entities:
            raise SceneFormatError(
                "has no entities: a .map needs at least a worldspawn entity '{ \"classname\" \"worldspawn\" ... }'.",
                subject=self.source,
                hint="Check that this is the right file; an empty or truncated file cannot be loaded.",
            )
        if self.coords:
            # numbers checked by plane_fields: float() cannot fail (a huge exponent gives inf, caught later)
            points = np.array([float(v) for g in self.coords for v in g], dtype=np.float64).reshape(-1, 3, 3)
        else:
            points = np.zeros((0, 3, 3))
        return MapFile(
            source_name=self.source,
            entities=self.entities,
            points=points,
            textures=self.textures,
            plane_lines=np.array(self.plane_lines, dtype=np.int64),
            warnings=self.warnings,
        )


# --------------------------------------------------------------------------------------------
# Building the scene


def _mangle_direction(mangle) -> tuple[float, float, float]:
    """Quake's 'mangle' (yaw, pitch, roll in degrees; pitch up positive) as a unit direction."""
    yaw, pitch = (np.radians(float(v)) for v in mangle[:2])
    return (float(np.cos(yaw) * np.cos(pitch)), float(np.sin(yaw) * np.cos(pitch)), float(np.sin(pitch)))


def _floats(value: str) -> list[float] | None:
    try:
        out = [float(v) for v in value.split()]
    except ValueError:
        return None
    return out if all(math.isfinite(v) for v in out) else None


class _Builder:
    def __init__(self, mapfile: MapFile, scale: float, strict: bool, warnings: list[str]):
        self.map = mapfile
        self.scale = scale
        self.strict = strict
        self.warnings = warnings

    def bad_value(self, entity: MapEntity, key: str, expected: str, default: str) -> None:
        lineno = entity.key_lines.get(key, entity.line)
        value = entity.properties.get(key, "")
        message = f"entity {entity.index} ({entity.classname}) has a bad '{key}' value {value!r}: expected {expected}."
        if self.strict:
            raise _syntax_error(self.map.source_name, lineno, message, hint="Fix the value in the editor's entity inspector.")
        self.warnings.append(f"{self.map.source_name}, line {lineno}: {message} Using {default}.")

    def vector(self, entity: MapEntity, key: str, count: int, default: tuple[float, ...]) -> tuple[float, ...]:
        if key not in entity.properties:
            return default
        values = _floats(entity.properties[key])
        if values is None or len(values) != count:
            self.bad_value(entity, key, f"{count} numbers", f"{' '.join(f'{v:g}' for v in default)}")
            return default
        return tuple(values)

    def origin(self, entity: MapEntity) -> tuple[float, float, float]:
        o = self.vector(entity, "origin", 3, (0.0, 0.0, 0.0))
        p = quake_to_scene(o, self.scale)
        if not (np.abs(p) <= MAX_COORDINATE).all():
            lineno = entity.key_lines.get("origin", entity.line)
            raise InvalidCoordinatesError(
                f"its origin on line {lineno} lies beyond the world limit of {MAX_COORDINATE:.0f} m "
                f"({MAX_COORDINATE / self.scale:.6g} units) from the origin.",
                subject=f"{self.map.source_name}:entity{entity.index} ({entity.classname})",
                hint="Move the entity back towards the origin; see 'World limit' in docs/USER_GUIDE.md.",
            )
        return (float(p[0]), float(p[1]), float(p[2]))

    def light(self, entity: MapEntity, name: str) -> Light:
        intensity = 300.0
        key = "light" if "light" in entity.properties else "_light" if "_light" in entity.properties else None
        color = (1.0, 1.0, 1.0)
        if key is not None:
            values = _floats(entity.properties[key])
            if values is not None and len(values) == 1:
                intensity = values[0]
            elif values is not None and len(values) == 4:  # Half-Life style 'r g b brightness'
                color = tuple(values[:3])
                intensity = values[3]
                if max(color) > 1.0:
                    color = tuple(c / 255.0 for c in color)
            else:
                self.bad_value(entity, key, "one number (brightness, 300 by default)", "300")
        ckey = "_color" if "_color" in entity.properties else "color" if "color" in entity.properties else None
        if ckey is not None:
            c = self.vector(entity, ckey, 3, color)
            if max(c) > 1.0:  # 0-255 -> 0-1
                c = tuple(v / 255.0 for v in c)
            color = c
        light = Light(name=name, position=self.origin(entity), color=tuple(float(v) for v in color), intensity=float(intensity))
        self.light_kind(entity, light)
        self.falloff_keys(entity, light)
        light.quake = True
        return light

    def number(self, entity: MapEntity, keys: tuple[str, ...], low: float, high: float, default: float,
               expected: str) -> float:
        """The first of `keys` the entity has, as one number in [low, high] (a warning and the
        default otherwise, or an error with strict)."""
        key = next((k for k in keys if k in entity.properties), None)
        if key is None:
            return default
        values = _floats(entity.properties[key])
        if values is None or len(values) != 1 or not low <= values[0] <= high:
            self.bad_value(entity, key, expected, f"{default:g}")
            return default
        return values[0]

    def falloff_keys(self, entity: MapEntity, light: Light) -> None:
        """ericw-tools' falloff keys (core/model/light_units.py): 'delay' 0-5, 'wait' (> 0),
        '_falloff' (units, linear lights), '_anglescale' / '_anglesense' (0 to 1)."""
        delay = self.number(entity, ("delay",), 0, 5, 0, "a falloff formula 0 to 5")
        if delay != int(delay):
            self.bad_value(entity, "delay", "a falloff formula 0 to 5", "0")
            delay = 0
        light.delay = int(delay)
        light.wait = self.number(entity, ("wait",), 1e-6, 1e6, 1.0, "a positive distance scale")
        light.falloff = self.number(entity, ("_falloff",), 0.0, 1e9, 0.0, "a distance in units, 0 or more")
        light.anglescale = self.number(entity, ("_anglescale", "_anglesense"), 0.0, 1.0, 0.5, "a number from 0 to 1")

    def colour(self, entity: MapEntity, keys: tuple[str, ...]) -> tuple[float, float, float]:
        """An 'r g b' key, 0-255 or 0-1, as 0-1 (white when absent)."""
        key = next((k for k in keys if k in entity.properties), None)
        if key is None:
            return (1.0, 1.0, 1.0)
        c = self.vector(entity, key, 3, (1.0, 1.0, 1.0))
        if min(c) < 0:
            self.bad_value(entity, key, "three numbers 0 to 255", "255 255 255")
            return (1.0, 1.0, 1.0)
        return tuple(float(v) / 255.0 for v in c) if max(c) > 1.0 else tuple(float(v) for v in c)

    def worldspawn(self, entity: MapEntity, scene: Scene, name: str) -> None:
        """ericw-tools' worldspawn light keys: 'light' / '_minlight' n with '_minlight_color' /
        '_mincolor' (every luxel at least n / 255 of it), and '_sunlight' n, shining along
        '_sun_mangle' / '_sunlight_mangle' in '_sunlight_color', '_sunlight_penumbra' degrees
        wide, weighed by '_anglescale' (a sun that is no entity: the leak check skips it)."""
        minlight = self.number(entity, ("_minlight", "light"), 0.0, 1e6, 0.0, "a light level, 0 or more")
        if minlight > 0:
            c = self.colour(entity, ("_minlight_color", "_mincolor"))
            scene.minlight = tuple(minlight / 255.0 * v for v in c)
        sun = self.number(entity, ("_sunlight",), -1e6, 1e6, 0.0, "a light level")
        if sun > 0:
            mangle = ("_sun_mangle" if "_sun_mangle" in entity.properties else "_sunlight_mangle")
            scene.lights.append(Light(
                name=f"{name} sun", position=(0.0, 0.0, 0.0), color=self.colour(entity, ("_sunlight_color",)),
                intensity=sun, kind="sun", direction=_mangle_direction(self.vector(entity, mangle, 3, (0.0, -90.0, 0.0))),
                radius=self.number(entity, ("_sunlight_penumbra",), 0.0, 179.0, 0.0, "degrees, 0 to 179"),
                anglescale=self.number(entity, ("_anglescale", "_anglesense"), 0.0, 1.0, 0.5, "a number from 0 to 1"),
                entity=False, quake=True))

    def light_kind(self, entity: MapEntity, light: Light) -> None:
        """ericw-tools' keys (docs/USER_GUIDE.md, 'Light'): '_surface' TEX makes the faces with
        that texture emit (a surface light); '_sun' 1 makes a sun shining along 'mangle' (yaw pitch
        in degrees; default straight down); otherwise 'mangle' makes a spot light of 'angle' degrees
        (the cone's full angle, default 40; '_cone' is read where 'angle' is absent), its edge
        fading linearly in the cosine from the '_softangle' cone in (default 0: a hard edge), as
        ericw-tools' light does (core/compile/light/lm_direct.spot_factor)."""
        props = entity.properties
        if props.get("_surface"):
            light.kind, light.texture = "surface", props["_surface"].strip()
            return
        sun = _floats(props.get("_sun", "0"))
        if sun and sun[0] != 0:
            light.kind = "sun"
            light.direction = _mangle_direction(self.vector(entity, "mangle", 3, (0.0, -90.0, 0.0)))
            return
        if "mangle" in props:
            light.kind = "spot"
            light.direction = _mangle_direction(self.vector(entity, "mangle", 3, (0.0, -90.0, 0.0)))
            light.spot_size = self.number(entity, ("angle", "_cone"), 1e-3, 180.0, 40.0,
                                          "the spot's cone in degrees, above 0 up to 180")
            soft = self.number(entity, ("_softangle",), 0.0, 180.0, 0.0, "the inner cone in degrees, 0 to 180")
            light.spot_blend = 0.0
            light.softangle = soft if soft < light.spot_size else 0.0

    def marker(self, entity: MapEntity, name: str) -> Marker:
        angle = 0.0
        if "angle" in entity.properties:
            angle = self.vector(entity, "angle", 1, (0.0,))[0]
        elif "angles" in entity.properties:  # 'pitch yaw roll'
            angle = self.vector(entity, "angles", 3, (0.0, 0.0, 0.0))[1]
        if "origin" not in entity.properties:
            self.warnings.append(
                f"{name} ({entity.classname}) has no 'origin'; placed at 0 0 0. Move it in the editor to give it one."
            )
        # one convention for every loader: 'info_player_start' -> 'player_start' (see SCENE_FORMAT.md)
        kind = entity.classname[5:] if entity.classname.lower().startswith("info_") else entity.classname
        return Marker(name=name, kind=kind, position=self.origin(entity), angle=float(angle))


def _fail(strict: bool, err: BrushbakeError, warnings: list[str], name: str, lineno: int) -> None:
    """Raise `err` (strict) or record that brush `name` is skipped."""
    if strict:
        raise err
    warnings.append(f"{name} (line {lineno}) skipped: {err.problem}")


def _with_line(err: BrushbakeError, lineno: int) -> BrushbakeError:
    """The same error, its subject extended with the brush's line number."""
    try:
        new = type(err)(err.problem, subject=f"{err.subject} (line {lineno})" if err.subject else None, hint=err.hint)
    except TypeError:
        return err
    new.__cause__ = err
    return new


def scene_from_mapfile(
    mapfile: MapFile,
    scale: float = DEFAULT_SCALE,
    name: str | None = None,
    strict: bool = False,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> Scene:
    """Turn a parsed .map into a Scene: scale, sort entities, pick contents, build brushes.

    strict=False (default): a brush that cannot be built is skipped with a warning (as qbsp does);
    strict=True: the first such brush raises its typed error.  Checks that need no geometry (too
    few planes, collinear points, non-finite numbers) run over the whole file before the slow
    building, so strict mode fails fast.  A coordinate beyond the world limit (MAX_COORDINATE
    metres after scaling) raises InvalidCoordinatesError in both modes, before anything else; a
    scale out of map_scale's range (core/model/setting_specs.py), InvalidSettingError.
    """
    check_value("map_scale", scale, subject=mapfile.source_name)  # its range, before any work (1/32 for Quake)
    source = mapfile.source_name
    warnings: list[str] = list(mapfile.warnings)
    builder = _Builder(mapfile, float(scale), strict, warnings)
    scene = Scene(name=name if name is not None else Path(source).stem or source, warnings=warnings)
    scene.settings = Settings(map_scale=float(scale))
    planes = _plane_table(mapfile, float(scale))
    jobs = _sort_entities(mapfile, planes, builder, scene)
    _build_brushes(mapfile, planes, jobs, strict, scene, progress, cancel)
    return scene


@dataclass
class _Planes:
    """Every plane of the file at once: unit normals and distances in metres, and the cheap check
    (all points are finite and within the world limit: _check_world_limit ran first)."""

    normals: np.ndarray  #: (P, 3)
    dists: np.ndarray  #: (P,)
    collinear: np.ndarray  #: (P,) bool: the three points lie on one line


def _plane_table(mapfile: MapFile, scale: float) -> _Planes:
    """Points -> metres -> unit normals and distances; raises at once for a point beyond the world
    limit (or not finite), naming the entity, brush and line."""
    pts = quake_to_scene(mapfile.points, scale)  # (P, 3, 3)
    _check_world_limit(mapfile, pts, scale)
    with np.errstate(all="ignore"):
        a = pts[:, 0] - pts[:, 1]
        b = pts[:, 2] - pts[:, 1]
        cross = np.cross(a, b)
        length = norm(cross, axis=1)
        scale_ab = norm(a, axis=1) * norm(b, axis=1)
        normals = cross / length[:, None]
        dists = np.einsum("ij,ij->i", normals, pts[:, 0])
    # sin(angle between the edges) below COLLINEAR_SINE: the three points are on one line
    collinear = ~(length > COLLINEAR_SINE * scale_ab)
    return _Planes(normals, dists, collinear)


def _check_world_limit(mapfile: MapFile, pts: np.ndarray, scale: float) -> None:
    """InvalidCoordinatesError for the first plane point farther than MAX_COORDINATE metres from the
    origin on any axis (or not finite): one vectorised test over the whole file."""
    with np.errstate(invalid="ignore"):
        outside = ~(np.abs(pts) <= MAX_COORDINATE).all(axis=(1, 2))
    if not outside.any():
        return
    plane = int(np.argmax(outside))
    lineno = int(mapfile.plane_lines[plane])
    where = next(((e, b) for e in mapfile.entities for b in e.brushes
                  if b.first_plane <= plane < b.first_plane + b.plane_count), None)
    subject = f"{mapfile.source_name}:entity{where[0].index}:brush{where[1].index}" if where else mapfile.source_name
    limit_units = MAX_COORDINATE / scale
    raise InvalidCoordinatesError(
        f"has a point beyond the world limit of {MAX_COORDINATE:.0f} m ({limit_units:.6g} units at "
        f"{scale:g} m per unit) from the origin.",
        subject=f"{subject} (line {lineno})",
        hint="Move the brush back towards the origin or fix the number; see 'World limit' in docs/USER_GUIDE.md.",
    )


def _omitted_layers(mapfile: MapFile) -> set:
    """TrenchBroom layers marked 'omit from export' (left out, as ericw-tools' qbsp does)."""
    omitted = {
        e.properties.get("_tb_id")
        for e in mapfile.entities
        if e.properties.get("_tb_type") == "_tb_layer" and e.properties.get("_tb_layer_omit_from_export") == "1"
    }
    omitted.discard(None)
    return omitted


def _sort_entities(mapfile: MapFile, planes: _Planes, builder: _Builder, scene: Scene) -> list:
    """Phase 1: lights and markers into the scene, the cheap checks on every brush; returns the
    brushes to build as (MapBrush, name, contents, classname, plane indices)."""
    source, warnings = mapfile.source_name, builder.warnings
    omitted_layers = _omitted_layers(mapfile)
    jobs: list[tuple[MapBrush, str, Contents, str, np.ndarray]] = []
    worldspawns = 0
    for entity in mapfile.entities:
        classname = entity.classname
        ename = f"{source}:entity{entity.index}"
        if classname.lower() == "worldspawn":
            worldspawns += 1
            if worldspawns == 1:
                builder.worldspawn(entity, scene, ename)
        if entity.properties.get("_tb_layer") in omitted_layers or (
            entity.properties.get("_tb_type") == "_tb_layer" and entity.properties.get("_tb_id") in omitted_layers
        ):
            if entity.brushes or entity.properties.get("_tb_type") == "_tb_layer":
                warnings.append(f"{ename} ({classname or 'no classname'}) left out: its TrenchBroom layer is marked 'omit from export'.")
            continue
        if not entity.brushes:
            lower = classname.lower()
            if lower.startswith("light"):
                scene.lights.append(builder.light(entity, ename))
            elif lower.startswith("info_"):
                scene.markers.append(builder.marker(entity, ename))
            elif not classname:
                warnings.append(f"{ename} (line {entity.line}) has no 'classname'; ignored.")
            continue
        if not classname:
            warnings.append(f"{ename} (line {entity.line}) has brushes but no 'classname'; its brushes are treated as a mover.")
        role = entity_role(classname)
        for mb in entity.brushes:
            if mb.patch:
                continue
            job = _check_brush(mapfile, planes, mb, f"{ename}:brush{mb.index}", role, classname, builder)
            if job is not None:
                jobs.append(job)
    warnings.extend(unknown_texture_warnings(mapfile, [job[0] for job in jobs]))
    if worldspawns == 0:
        warnings.append(f"{source} has no worldspawn entity; Quake tools expect the first entity to be worldspawn.")
    return jobs


def _check_brush(mapfile: MapFile, planes: _Planes, mb: MapBrush, bname: str, role: str, classname: str,
                 builder: _Builder):
    """The cheap checks of one brush: its build job, or None when it is skipped (not strict)."""
    sl = slice(mb.first_plane, mb.first_plane + mb.plane_count)
    contents = brush_contents(mapfile.textures[sl], detail=role == "detail")
    if role == "illusionary":
        contents = Contents.NONSOLID
    err: BrushbakeError | None = None
    if mb.plane_count < 4:
        err = DegenerateBrushError(
            f"has only {mb.plane_count} planes; a closed convex brush needs at least 4.",
            subject=bname,
            hint="Delete it or give it the missing faces.",
        )
    elif mb.plane_count > MAX_BRUSH_PLANES:  # building costs the cube of the planes: refused before any work
        err = DegenerateBrushError(
            f"has {mb.plane_count} planes; brushbake takes at most {MAX_BRUSH_PLANES} per brush.",
            subject=bname,
            hint="Split it into simpler brushes in the editor.",
        )
    elif planes.collinear[sl].any():
        bad = int(mapfile.plane_lines[mb.first_plane + int(np.argmax(planes.collinear[sl]))])
        err = DegenerateBrushError(
            f"has a plane whose three points lie on one line (line {bad}), so it defines no plane.",
            subject=bname,
            hint="Delete that face or the brush, or re-save the map from the editor to recompute its points.",
        )
    if err is not None:
        _fail(builder.strict, err, builder.warnings, bname, mb.line)
        return None
    keep = _drop_duplicate_planes(planes.normals, planes.dists, mb, bname, mapfile, builder.warnings)
    return (mb, bname, contents, classname or "", keep)


def _build_brushes(mapfile: MapFile, planes: _Planes, jobs: list, strict: bool, scene: Scene,
                   progress: ProgressFn | None, cancel: CancelFn | None) -> None:
    """Phase 2, the slow part: build each brush that passed the cheap checks."""
    source, warnings = mapfile.source_name, scene.warnings
    total = max(len(jobs), 1)
    step = max(1, total // 200)
    built: list = []
    for k, (mb, bname, contents, classname, keep) in enumerate(jobs):
        if cancel is not None and cancel():
            raise CancelledError()
        if progress is not None and k % step == 0:
            progress(k / total, f"Building brushes of {source}: {k} of {len(jobs)}")
        if k % BRUSH_BATCH == 0:  # the next batch's brushes built together (batch_brushes), the same brushes
            built = batch_brushes([(planes.normals[j[4]], planes.dists[j[4]], j[1], j[2], j[3],
                                    [mapfile.textures[i] for i in j[4]]) for j in jobs[k : k + BRUSH_BATCH]])
        brush = built[k % BRUSH_BATCH]
        if brush is None:  # brush_from_planes builds it, or says what is wrong with it, in order
            try:
                brush = brush_from_planes(
                    planes.normals[keep],
                    planes.dists[keep],
                    bname,
                    contents=contents,
                    textures=[mapfile.textures[i] for i in keep],
                    entity=classname,
                )
            except (BrushError, InvalidCoordinatesError) as exc:
                _fail(strict, _with_line(exc, mb.line), warnings, bname, mb.line)
                continue
        if entity_role(classname) == "mover":
            scene.movers.append(brush)
        else:
            scene.brushes.append(brush)
    if progress is not None:
        nb, nm = len(scene.brushes), len(scene.movers)
        progress(1.0, f"Built {nb} brush{'es' * (nb != 1)} and {nm} mover brush{'es' * (nm != 1)} from {source}")


def _drop_duplicate_planes(
    normals: np.ndarray, dists: np.ndarray, mb: MapBrush, bname: str, mapfile: MapFile, warnings: list[str]
) -> np.ndarray:
    """Indices of the brush's planes with exact repeats removed (the first is kept), as qbsp does."""
    idx = np.arange(mb.first_plane, mb.first_plane + mb.plane_count)
    n, d = normals[idx], dists[idx]
    same = np.all(np.abs(n[:, None, :] - n[None, :, :]) < NORMAL_EPSILON, axis=2) & (
        np.abs(d[:, None] - d[None, :]) < DIST_EPSILON
    )
    dup = np.triu(same, 1).any(axis=0)
    if not dup.any():
        return idx
    for j in np.flatnonzero(dup):
        first = int(np.argmax(same[:, j]))
        warnings.append(
            f"{bname}: dropped a duplicate plane on line {int(mapfile.plane_lines[idx[j]])} "
            f"(same as line {int(mapfile.plane_lines[idx[first]])})."
        )
    return idx[~dup]


# --------------------------------------------------------------------------------------------
# Entry points


def load_map_text(
    text: str,
    source_name: str = "<map>",
    scale: float = DEFAULT_SCALE,
    name: str | None = None,
    strict: bool = False,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> Scene:
    """parse_map_text + scene_from_mapfile (for text already in memory; tests, sample scenes)."""
    parse_progress = None if progress is None else (lambda f, m: progress(0.05 * f, m))
    build_progress = None if progress is None else (lambda f, m: progress(0.05 + 0.95 * f, m))
    mapfile = parse_map_text(text, source_name, progress=parse_progress, cancel=cancel)
    return scene_from_mapfile(mapfile, scale=scale, name=name, strict=strict, progress=build_progress, cancel=cancel)


def load_map(
    path,
    scale: float = DEFAULT_SCALE,
    name: str | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
    strict: bool = False,
) -> Scene:
    """Read a Quake .map file (standard or Valve 220) into a Scene in metres (Z up).

    scale: metres per Quake unit (1/32 by default).  name: the scene's name (default: the file's
    stem).  Brush names are '<file name>:entity<E>:brush<B>'.  progress(fraction, message) and
    cancel() are called during the work; cancel() returning True raises CancelledError.
    Raises SceneFormatError for an unreadable or malformed file (always) and, with strict=True,
    the BrushError / InvalidCoordinatesError of the first bad brush (otherwise: skipped, warned).
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise SceneFormatError(
            f"cannot be opened ({exc.strerror or exc.__class__.__name__}).",
            subject=str(p),
            hint="Check the path and that the file exists and is readable.",
        ) from exc
    if cancel is not None and cancel():
        raise CancelledError()
    text = decode_map_bytes(data, p.name)
    return load_map_text(text, p.name, scale=scale, name=name if name is not None else p.stem, strict=strict,
                         progress=progress, cancel=cancel)
