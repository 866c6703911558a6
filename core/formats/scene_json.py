"""The brushbake JSON scene format (version 1): read and write.

One idea in one module (over 600 lines): the .json scene format, both directions, every field
checked with an error naming it.

A scene file is one JSON object; docs/SCENE_FORMAT.md describes it field by field.  Units are
metres, Z is up, planes are n.x = d with outward normals.

Reading checks everything and raises only BrushbakeError subclasses, each naming the file, the
object and the field:

- SceneFormatError: not JSON (with line and column), not a brushbake scene, a newer version,
  missing, unknown or repeated keys, values of the wrong type or shape;
- InvalidCoordinatesError: NaN / Infinity literals, numbers too large for a float, coordinates
  beyond MAX_COORDINATE;
- BrushError subclasses (from brush_from_planes / brush_from_mesh): a brush that is not a valid
  convex solid; they name the brush;
- CancelledError: the cancel check returned True.

Writing is deterministic: keys sorted, floats written by Python's shortest round-trip repr
(-0.0 written as 0.0), one list item per line, so the same scene gives the same bytes.
Brushes are written as "box" when they are axis-aligned boxes with one texture, otherwise as
exact "planes".
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..model.brushes import Brush, Contents, box_brush, brush_from_mesh, brush_from_planes
from ..detmath import dot, matmul, norm
from ..errors import (
    BrushbakeError,
    BrushError,
    DegenerateBrushError,
    InvalidCoordinatesError,
    SceneFormatError,
    check_cancel,
)
from ..model.hulls import MAX_HULL_EXTENT
from ..model.light_units import AREA_SHAPES, LIGHT_KINDS
from ..model.scene import DetailMesh, Hull, Light, Marker, Scene, Settings, setting_error
from ..tolerances import (  # noqa: F401 -- MAX_BRUSH_PLANES is this reader's limit too (tests import it here)
    DEGENERATE_FACE_AREA,
    MAX_BRUSH_PLANES,
    MAX_COORDINATE,
    MIN_NORMAL_LENGTH,
    PLANE_COUNT_DECIMALS,
)

FORMAT_NAME = "brushbake-scene"
FORMAT_VERSION = 1

#: Largest |value| accepted for numbers that are not coordinates (settings, angles, intensity).
_MAX_NUMBER = 1.0e15

ProgressFn = Callable[[float, str], None]
CancelFn = Callable[[], bool]

_BRUSH_SHAPES = ("box", "planes", "mesh")
_CONTENTS_NAMES = tuple(c.label for c in Contents)
_TOP_KEYS = {
    "format", "version", "name", "settings", "hulls", "brushes", "detail_meshes", "lights",
    "markers", "movers", "minlight",
}


# --------------------------------------------------------------------------------------------
# Reading


class _NonFinite:
    """Stands in for a NaN / Infinity literal until validation can name the field it sits in."""

    def __init__(self, literal: str):
        self.literal = literal


def _parse_int(text: str):
    # Python refuses to turn very long digit strings into ints (ValueError); such a number is
    # out of range for a coordinate anyway, so it becomes a float (inf) and is rejected by name.
    return int(text) if len(text) <= 40 else float(text)


class _Reader:
    """Validation helpers that name the file and the field in every error."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, where: str, message: str, hint: str | None = None) -> SceneFormatError:
        return SceneFormatError(message, subject=f"{self.source}, {where}" if where else self.source, hint=hint)

    def obj(self, value: Any, where: str, required: tuple[str, ...], optional: tuple[str, ...]) -> dict:
        if not isinstance(value, dict):
            raise self.fail(where, f"must be a JSON object {{...}}, not {_kind(value)}.",
                            "See docs/SCENE_FORMAT.md for its fields.")
        for key in value:
            if not isinstance(key, str):
                raise self.fail(where, f"has a key {key!r} that is not a string.")
        missing = [k for k in required if k not in value]
        if missing:
            raise self.fail(where, f"is missing the key {missing[0]!r}.",
                            f"Add it; {where or 'this object'} needs {', '.join(map(repr, required))}.")
        allowed = set(required) | set(optional)
        unknown = sorted(k for k in value if k not in allowed)
        if unknown:
            raise self.fail(where, f"has an unknown key {unknown[0]!r}.",
                            f"Remove it or fix its spelling; allowed keys: {', '.join(sorted(allowed))}.")
        return value

    def list(self, value: Any, where: str) -> list:
        if not isinstance(value, list):
            raise self.fail(where, f"must be a JSON list [...], not {_kind(value)}.")
        return value

    def string(self, value: Any, where: str, *, empty: bool = False) -> str:
        if not isinstance(value, str):
            raise self.fail(where, f"must be a string, not {_kind(value)}.")
        if not empty and not value.strip():
            raise self.fail(where, "must not be empty.", "Give it a name.")
        return value

    def number(self, value: Any, where: str, limit: float = _MAX_NUMBER) -> float:
        if isinstance(value, _NonFinite):
            raise InvalidCoordinatesError(
                f"is {value.literal}, which is not a number.",
                subject=f"{self.source}, {where}",
                hint="JSON has no NaN or Infinity: write a finite number.",
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(where, f"must be a number, not {_kind(value)}.")
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise InvalidCoordinatesError(
                "is not a finite number (NaN, infinite, or too large for a float).",
                subject=f"{self.source}, {where}",
                hint="Write a finite number.",
            )
        if abs(number) > limit:
            raise InvalidCoordinatesError(
                f"is {number:.6g}; the largest accepted magnitude is {limit:.6g}.",
                subject=f"{self.source}, {where}",
                hint="Check the units (metres) and move the level near the origin.",
            )
        return number

    def coordinate(self, value: Any, where: str) -> float:
        return self.number(value, where, MAX_COORDINATE)

    def integer(self, value: Any, where: str) -> int:
        if isinstance(value, _NonFinite):
            self.number(value, where)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(where, f"must be a whole number, not {_kind(value)}.")
        return value

    def vec3(self, value: Any, where: str, *, coordinate: bool = True) -> tuple[float, float, float]:
        items = self.list(value, where)
        if len(items) != 3:
            raise self.fail(where, f"must be a list of 3 numbers [x, y, z], not {len(items)} values.")
        read = self.coordinate if coordinate else self.number
        return tuple(read(v, f"{where}[{i}]") for i, v in enumerate(items))  # type: ignore[return-value]

    def points(self, value: Any, where: str) -> np.ndarray:
        items = self.list(value, where)
        return np.array([self.vec3(v, f"{where}[{i}]") for i, v in enumerate(items)], dtype=np.float64).reshape(-1, 3)

    def faces(self, value: Any, where: str, n_vertices: int) -> list[list[int]]:
        out = []
        for i, face in enumerate(self.list(value, where)):
            fw = f"{where}[{i}]"
            indices = [self.integer(v, f"{fw}[{j}]") for j, v in enumerate(self.list(face, fw))]
            if len(indices) < 3:
                raise self.fail(fw, f"has {len(indices)} vertex indices; a face needs at least 3.",
                                "Remove the face or complete it.")
            bad = [k for k in indices if not 0 <= k < n_vertices]
            if bad:
                raise self.fail(fw, f"uses vertex index {bad[0]}, but there are {n_vertices} vertices "
                                f"(indices 0 to {n_vertices - 1}).", "Fix the index.")
            out.append(indices)
        return out


def _label(item: Any, where: str, kind: str) -> str:
    """'brush 'floor'' when the item has a usable name, else its position 'brushes[3]'."""
    name = item.get("name") if isinstance(item, dict) else None
    return f"{kind} {name!r}" if isinstance(name, str) and name.strip() else where


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, _NonFinite):
        return value.literal
    if isinstance(value, (int, float)):
        text = repr(value)
        return f"the number {text if len(text) <= 24 else text[:20] + '...'}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def parse_scene_text(text: str | bytes, source_name: str = "<scene>") -> Any:
    """Parse JSON text into Python values, rejecting what Python's json module lets through.

    NaN / Infinity literals are kept as markers so validation can name their field; repeated
    keys, bad UTF-8 and absurd nesting raise SceneFormatError.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise SceneFormatError(
                f"is not UTF-8 text (byte {exc.start} cannot be decoded).",
                subject=source_name,
                hint="Save the file as UTF-8 JSON.",
            ) from None
    elif text.startswith("\ufeff"):
        text = text[1:]
    try:
        return json.loads(
            text,
            parse_constant=_NonFinite,
            parse_int=_parse_int,
            object_pairs_hook=_pairs_hook,
        )
    except json.JSONDecodeError as exc:
        raise SceneFormatError(
            f"is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.",
            subject=source_name,
            hint="Fix the syntax there (a missing comma, quote or bracket is the usual cause).",
        ) from None
    except _DuplicateKey as exc:
        raise SceneFormatError(
            f"has the key {exc.key!r} twice in one object.",
            subject=source_name,
            hint="Keep one of them; JSON readers disagree on which one wins.",
        ) from None
    except RecursionError:
        raise SceneFormatError(
            "is nested too deeply to be a scene.", subject=source_name, hint="Check the brackets."
        ) from None
    except ValueError as exc:  # e.g. a number the float parser refuses
        raise SceneFormatError(f"is not valid JSON: {exc}.", subject=source_name) from None


def load_scene_json(
    path: str | os.PathLike,
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> Scene:
    """Read a brushbake JSON scene file.

    progress(fraction, message) is called as brushes are built; cancel() returning True raises
    CancelledError.  Every problem with the file raises a BrushbakeError subclass.
    """
    path = Path(path)
    source = path.name or str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SceneFormatError(
            f"cannot be read ({exc.strerror or exc}).",
            subject=str(path),
            hint="Check the path and that the file is readable.",
        ) from None
    if progress:
        progress(0.0, f"Reading {source}")
    value = parse_scene_text(data, source)
    return scene_from_dict(value, source, progress=progress, cancel=cancel)


def scene_from_dict(
    data: Any,
    source_name: str = "<scene>",
    progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> Scene:
    """Build a Scene from parsed JSON values (dicts, lists, str, int, float, bool, None)."""
    try:
        return _scene_from_dict(data, source_name, progress, cancel)
    except BrushbakeError:
        raise
    except RecursionError:
        raise SceneFormatError("is nested too deeply to be a scene.", subject=source_name) from None


def _scene_from_dict(data: Any, source: str, progress, cancel) -> Scene:
    """A Scene from a parsed scene file: the header, then each section in turn."""
    r = _Reader(source)
    name = _read_header(r, data, source)
    scene = Scene(name=name)
    if "settings" in data:
        scene.settings = _read_settings(r, data["settings"])
    _read_hulls(r, data, scene)
    _read_brushes(r, data, scene, progress, cancel)
    _read_detail_meshes(r, data, scene)
    _read_lights(r, data, scene)
    _read_markers(r, data, scene)
    if "minlight" in data:
        minlight = r.vec3(data["minlight"], "minlight", coordinate=False)
        if min(minlight) < 0.0:
            raise r.fail("minlight", "has a negative component.", "Give linear RGB, each 0 or more (1 is full).")
        scene.minlight = minlight
    if progress:
        progress(1.0, f"Loaded {name}")
    return scene


def _read_header(r: "_Reader", data: Any, source: str) -> str:
    """Check the format and version; the scene's name."""
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        found = data.get("format") if isinstance(data, dict) else None
        raise SceneFormatError(
            "is not a brushbake scene" + (f" (its format is {found!r})." if isinstance(found, str) else "."),
            subject=source,
            hint=f'A scene file is a JSON object starting {{"format": "{FORMAT_NAME}", "version": {FORMAT_VERSION}, ...}}.',
        )
    r.obj(data, "", ("format", "version"), tuple(sorted(_TOP_KEYS - {"format", "version"})))
    version = data["version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise r.fail("version", f"must be a whole number, not {_kind(version)}.")
    if version != FORMAT_VERSION:
        newer = version > FORMAT_VERSION
        raise r.fail(
            "version",
            f"is {version}; this brushbake reads version {FORMAT_VERSION}.",
            "Update brushbake to read it." if newer else "Re-export the scene with this brushbake.",
        )
    return r.string(data["name"], "name") if "name" in data else (Path(source).stem or "scene")


def _read_hulls(r: "_Reader", data: Any, scene: Scene) -> None:
    hull_names: set[str] = set()
    for i, item in enumerate(r.list(data.get("hulls", []), "hulls")):
        where = _label(item, f"hulls[{i}]", "hull")
        r.obj(item, where, ("name", "mins", "maxs"), ())
        hname = r.string(item["name"], f"{where}.name")
        where = f"hull {hname!r}"
        if hname in hull_names:
            raise r.fail(where, "appears twice.", "Give every hull its own name.")
        hull_names.add(hname)
        mins, maxs = r.vec3(item["mins"], f"{where}.mins"), r.vec3(item["maxs"], f"{where}.maxs")
        for axis, lo, hi in zip("xyz", mins, maxs):
            if lo > hi:
                raise r.fail(where, f"has mins.{axis} = {lo:g} above maxs.{axis} = {hi:g}.", "Swap them.")
        if max(map(abs, mins + maxs)) > MAX_HULL_EXTENT:
            raise r.fail(where, f"reaches {max(map(abs, mins + maxs)):g} m from its reference point; the limit is "
                         f"{MAX_HULL_EXTENT:g} m.", "Give the hull's size in metres (a player is about 2 m tall).")
        scene.hulls.append(Hull(hname, mins, maxs))


def _read_brushes(r: "_Reader", data: Any, scene: Scene, progress, cancel) -> None:
    """Brushes and movers, with progress per brush."""
    brush_items = r.list(data.get("brushes", []), "brushes")
    mover_items = r.list(data.get("movers", []), "movers")
    total = max(1, len(brush_items) + len(mover_items))
    done = 0
    for key, items, target in (("brushes", brush_items, scene.brushes), ("movers", mover_items, scene.movers)):
        for i, item in enumerate(items):
            check_cancel(cancel)
            target.append(_read_brush_named(r, item, f"{key}[{i}]", f"brush{i}" if key == "brushes" else f"mover{i}"))
            done += 1
            if progress:
                progress(done / total, f"Brush {target[-1].name}")


def _read_detail_meshes(r: "_Reader", data: Any, scene: Scene) -> None:
    for i, item in enumerate(r.list(data.get("detail_meshes", []), "detail_meshes")):
        where = _label(item, f"detail_meshes[{i}]", "detail mesh")
        r.obj(item, where, ("vertices", "faces"), ("name",))
        mname = r.string(item["name"], f"{where}.name") if "name" in item else f"detail{i}"
        where = f"detail mesh {mname!r}"
        verts = r.points(item["vertices"], f"{where}.vertices")
        faces = r.faces(item["faces"], f"{where}.faces", len(verts))
        scene.detail_meshes.append(DetailMesh(mname, verts, faces))


def _read_lights(r: "_Reader", data: Any, scene: Scene) -> None:
    for i, item in enumerate(r.list(data.get("lights", []), "lights")):
        where = _label(item, f"lights[{i}]", "light")
        r.obj(item, where, ("position",), ("name", "color", "intensity", "type", "power", "direction", "spot_size",
                                           "spot_blend", "radius", "texture", "shape", "size", "size_y", "spread",
                                           "axis", "quake", "delay", "wait", "falloff", "anglescale", "softangle", "entity"))
        lname = r.string(item["name"], f"{where}.name") if "name" in item else f"light{i}"
        where = f"light {lname!r}"
        light = Light(lname, r.vec3(item["position"], f"{where}.position"))
        if "color" in item:
            color = r.vec3(item["color"], f"{where}.color", coordinate=False)
            if min(color) < 0.0:
                raise r.fail(f"{where}.color", "has a negative component.",
                             "Colours are linear RGB, each 0 or more (1 is full).")
            light.color = color
        if "intensity" in item:
            light.intensity = r.number(item["intensity"], f"{where}.intensity")
        _read_light_kind(r, item, where, light)
        scene.lights.append(light)


def _read_light_kind(r: "_Reader", item: dict, where: str, light: Light) -> None:
    """The light's kind and Blender units (docs/SCENE_FORMAT.md, core/model/light_units.py)."""
    if "type" in item:
        light.kind = _read_choice(r, item["type"], f"{where}.type", LIGHT_KINDS, "Use point, spot, sun, area or surface.")
    for key, low, high, unit in (("power", 0.0, 1e9, "watts, W/m^2 or emission strength"),
                                 ("spot_size", 0.0, 180.0, "degrees"), ("spot_blend", 0.0, 1.0, "0 to 1"),
                                 ("radius", 0.0, 1e4, "metres (sun: degrees)"), ("size", 1e-6, 1e4, "metres"),
                                 ("size_y", 1e-6, 1e4, "metres"), ("spread", 1e-3, 180.0, "degrees")):
        if key in item:
            value = r.number(item[key], f"{where}.{key}")
            if not low <= value <= high:
                raise r.fail(f"{where}.{key}", f"is {value!r}; it must be from {low:g} to {high:g} ({unit}).",
                             "docs/SCENE_FORMAT.md lists the light fields.")
            setattr(light, key, float(value))
    if "direction" in item:
        d = r.vec3(item["direction"], f"{where}.direction", coordinate=False)
        if float(norm(np.asarray(d, dtype=np.float64))) == 0.0:
            raise r.fail(f"{where}.direction", "is the zero vector.", "Give the direction the light shines in.")
        light.direction = d
    _read_area_fields(r, item, where, light)
    _read_quake_fields(r, item, where, light)
    if "texture" in item:
        light.texture = r.string(item["texture"], f"{where}.texture")
    if light.kind == "surface" and not light.texture:
        raise r.fail(f"{where}.texture", "is missing: a surface light names the texture whose faces emit.",
                     "Add \"texture\": the name of the emitting faces' texture.")


def _read_choice(r: "_Reader", value, where: str, choices, hint: str) -> str:
    """A string that must be one of `choices`."""
    text = r.string(value, where)
    if text not in choices:
        raise r.fail(where, f"is {text!r}; it must be one of {', '.join(choices)}.", hint)
    return text


def _read_quake_fields(r: "_Reader", item: dict, where: str, light: Light) -> None:
    """A Quake light's falloff keys (core/model/light_units.py) and whether it is an entity."""
    for key, low, high, unit in (("delay", 0, 5, "a falloff formula"), ("wait", 1e-6, 1e6, "a distance scale"),
                                 ("falloff", 0.0, 1e9, "units"), ("anglescale", 0.0, 1.0, "0 to 1"),
                                 ("softangle", 0.0, 180.0, "degrees")):
        if key in item:
            value = r.number(item[key], f"{where}.{key}")
            if not low <= value <= high or (key == "delay" and value != int(value)):
                raise r.fail(f"{where}.{key}", f"is {value!r}; it must be from {low:g} to {high:g} ({unit}).",
                             "docs/SCENE_FORMAT.md lists the light fields.")
            setattr(light, key, int(value) if key == "delay" else float(value))
    for key in ("quake", "entity"):
        if key in item:
            if not isinstance(item[key], bool):
                raise r.fail(f"{where}.{key}", "must be true or false.", "docs/SCENE_FORMAT.md lists the light fields.")
            setattr(light, key, item[key])


def _read_area_fields(r: "_Reader", item: dict, where: str, light: Light) -> None:
    """An area light's shape and its local X axis (across its direction)."""
    if "shape" in item:
        light.shape = _read_choice(r, item["shape"], f"{where}.shape", AREA_SHAPES,
                                   "Use square, rectangle, disk or ellipse (Blender's area light shapes).")
    if "axis" in item:
        a = np.asarray(r.vec3(item["axis"], f"{where}.axis", coordinate=False), dtype=np.float64)
        d = np.asarray(light.direction, dtype=np.float64)
        across = a - float(dot(a, d)) / float(dot(d, d)) * d
        if float(norm(across)) <= 1e-6 * max(float(norm(a)), 1e-300):
            raise r.fail(f"{where}.axis", "is zero or parallel to the light's direction.",
                         "Give the direction of the light's local X (its 'size' side), across its direction.")
        light.axis = tuple(float(v) for v in a)


def _read_markers(r: "_Reader", data: Any, scene: Scene) -> None:
    for i, item in enumerate(r.list(data.get("markers", []), "markers")):
        where = _label(item, f"markers[{i}]", "marker")
        r.obj(item, where, ("kind", "position"), ("name", "angle"))
        mname = r.string(item["name"], f"{where}.name") if "name" in item else f"marker{i}"
        where = f"marker {mname!r}"
        kind = r.string(item["kind"], f"{where}.kind")
        marker = Marker(mname, kind, r.vec3(item["position"], f"{where}.position"))
        if "angle" in item:
            marker.angle = r.number(item["angle"], f"{where}.angle", 1.0e6)
        scene.markers.append(marker)


def _read_settings(r: _Reader, value: Any) -> Settings:
    defaults = Settings()
    names = tuple(f.name for f in dataclasses.fields(Settings))
    r.obj(value, "settings", (), names)
    changes = {}
    for key, v in value.items():
        where = f"settings.{key}"
        default = getattr(defaults, key)
        if isinstance(default, bool):
            if not isinstance(v, bool):
                raise r.fail(where, f"must be true or false, not {_kind(v)}.")
            changes[key] = v
        elif isinstance(default, int):
            changes[key] = r.integer(v, where)  # its range: below, from the one table
        elif isinstance(default, float):
            changes[key] = r.number(v, where)
        elif isinstance(default, str):
            changes[key] = r.string(v, where)
        else:  # a tuple of numbers
            items = r.list(v, where)
            changes[key] = tuple(r.number(x, f"{where}[{i}]") for i, x in enumerate(items))
    for key, v in changes.items():
        problem = setting_error(key, v)
        if problem:
            raise r.fail(f"settings.{key}", problem, "docs/USER_GUIDE.md lists every setting's range.")
    return dataclasses.replace(defaults, **changes)


def _read_brush_named(r: _Reader, item: Any, where: str, default_name: str) -> Brush:
    """_read_brush, with the file added to the errors that brush building raises (which name
    only the brush)."""
    try:
        return _read_brush(r, item, where, default_name)
    except (BrushError, InvalidCoordinatesError) as exc:
        if exc.subject is None or exc.subject.startswith(f"{r.source}, ") or type(exc).__init__ is not BrushbakeError.__init__:
            raise
        raise type(exc)(exc.problem, subject=f"{r.source}, brush {exc.subject!r}", hint=exc.hint) from exc


def _read_brush(r: _Reader, item: Any, where: str, default_name: str) -> Brush:
    optional = ("name", "contents", "entity", "texture", "textures") + _BRUSH_SHAPES
    r.obj(item, _label(item, where, "brush"), (), optional)
    name = r.string(item["name"], f"{where}.name") if "name" in item else default_name
    where = f"brush {name!r}"
    shapes = [k for k in _BRUSH_SHAPES if k in item]
    if len(shapes) != 1:
        raise r.fail(
            where,
            ("has both " + " and ".join(map(repr, shapes)) + ".") if shapes else "has no shape.",
            'Give it exactly one of "box", "planes" or "mesh".',
        )
    shape = shapes[0]
    contents = Contents.SOLID
    if "contents" in item:
        label = r.string(item["contents"], f"{where}.contents")
        if label not in _CONTENTS_NAMES:
            raise r.fail(f"{where}.contents", f"is {label!r}, which is not a kind of contents.",
                         f"Use one of {', '.join(_CONTENTS_NAMES)}.")
        contents = Contents[label.upper()]
    entity = r.string(item["entity"], f"{where}.entity") if "entity" in item else "worldspawn"
    texture = r.string(item["texture"], f"{where}.texture", empty=True) if "texture" in item else ""
    if "textures" in item and ("texture" in item or shape != "planes"):
        raise r.fail(where, '"textures" (one per plane) goes only with "planes", and not with "texture".',
                     'Use "texture" for one texture on every face.')

    if shape == "box":
        corners = r.list(item["box"], f"{where}.box")
        if len(corners) != 2:
            raise r.fail(f"{where}.box", f"must be [[minx, miny, minz], [maxx, maxy, maxz]], not {len(corners)} values.")
        mins, maxs = r.vec3(corners[0], f"{where}.box[0]"), r.vec3(corners[1], f"{where}.box[1]")
        for axis, lo, hi in zip("xyz", mins, maxs):
            if not lo < hi:
                raise DegenerateBrushError(
                    f"has box mins.{axis} = {lo:g} not below maxs.{axis} = {hi:g}.",
                    subject=name,
                    hint="The first corner is the minimum, the second the maximum, and a box needs thickness.",
                )
        brush = box_brush(mins, maxs, name, contents)
        brush.textures = [texture] * len(brush.normals)
        brush.entity = entity
        return brush

    if shape == "planes":
        return _read_plane_brush(r, item, where, name, contents, texture, entity)

    mesh = r.obj(item["mesh"], f"{where}.mesh", ("vertices", "faces"), ())
    verts = r.points(mesh["vertices"], f"{where}.mesh.vertices")
    faces = r.faces(mesh["faces"], f"{where}.mesh.faces", len(verts))
    planes = _count_face_planes(verts, faces)
    if planes > MAX_BRUSH_PLANES:
        raise BrushError(f"has {planes} distinct face planes; brushbake takes at most {MAX_BRUSH_PLANES} per brush.",
                         subject=name, hint="Simplify it (Decimate, planar) or split it into simpler brushes.")
    brush = brush_from_mesh(verts, faces, name, contents)
    brush.textures = [texture] * len(brush.normals)
    brush.entity = entity
    return brush


def _read_plane_brush(r: _Reader, item: Any, where: str, name: str, contents, texture: str, entity: str) -> Brush:
    """A brush given as planes [nx, ny, nz, d] (outward normals), with a texture per plane or one."""
    rows = r.list(item["planes"], f"{where}.planes")
    if len(rows) > MAX_BRUSH_PLANES:
        raise BrushError(f"has {len(rows)} planes; brushbake takes at most {MAX_BRUSH_PLANES} per brush.",
                         subject=name, hint="Split it into simpler brushes.")
    normals, dists = [], []
    for i, row in enumerate(rows):
        pw = f"{where}.planes[{i}]"
        values = r.list(row, pw)
        if len(values) != 4:
            raise r.fail(pw, f"must be [nx, ny, nz, d], not {len(values)} values.")
        n = [r.number(v, f"{pw}[{j}]", MAX_COORDINATE) for j, v in enumerate(values[:3])]
        d = r.coordinate(values[3], f"{pw}[3]")
        length = math.sqrt(sum(c * c for c in n))
        if not length > MIN_NORMAL_LENGTH:
            raise DegenerateBrushError(f"has plane {i} with a zero normal.", subject=name,
                                       hint="Give every plane an outward unit normal, or delete the plane.")
        normals.append([c / length for c in n])
        dists.append(d / length)
    textures = [texture] * len(rows)
    if "textures" in item:
        texts = r.list(item["textures"], f"{where}.textures")
        if len(texts) != len(rows):
            raise r.fail(f"{where}.textures", f"has {len(texts)} names for {len(rows)} planes.",
                         "Give one texture name per plane, in the same order.")
        textures = [r.string(t, f"{where}.textures[{i}]", empty=True) for i, t in enumerate(texts)]
    return brush_from_planes(normals, dists, name, contents, textures=textures, entity=entity)


def _count_face_planes(verts: np.ndarray, faces: list[list[int]]) -> int:
    """Roughly how many distinct planes the faces lie on (coplanar faces count once)."""
    keys = set()
    for f in faces:
        p = verts[f]
        n = np.cross(p - p.mean(axis=0), np.roll(p, -1, axis=0) - p.mean(axis=0)).sum(axis=0)
        length = float(norm(n))
        if not length > DEGENERATE_FACE_AREA:
            continue
        n = n / length
        keys.add(tuple(np.round(np.append(n, matmul(n, p.mean(axis=0))), PLANE_COUNT_DECIMALS)))
    return len(keys)


# --------------------------------------------------------------------------------------------
# Writing


def _f(value: Any, what: str) -> float:
    x = float(value)
    if not math.isfinite(x):
        raise InvalidCoordinatesError(f"has a NaN or infinite value ({x}).", subject=what,
                                      hint="Fix the object before saving; JSON cannot hold it.")
    return x + 0.0  # -0.0 -> 0.0


def _v(values: Any, what: str) -> list[float]:
    return [_f(x, what) for x in np.asarray(values, dtype=np.float64).reshape(-1)]


def _is_box(brush: Brush) -> bool:
    if len(brush.normals) != 6:
        return False
    axes = {tuple(float(c) for c in n) for n in np.asarray(brush.normals)}
    return axes == {(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0),
                    (-1.0, 0.0, 0.0), (0.0, -1.0, 0.0), (0.0, 0.0, -1.0)}


def brush_to_dict(brush: Brush) -> dict:
    """One brush as a JSON object: "box" for an axis-aligned box with one texture, else "planes"."""
    what = f"brush {brush.name!r}"
    out: dict[str, Any] = {"name": str(brush.name), "contents": Contents(brush.contents).label}
    if brush.entity and brush.entity != "worldspawn":
        out["entity"] = str(brush.entity)
    textures = [str(t) for t in (brush.textures or [])]
    textures += [""] * (len(brush.normals) - len(textures))
    one_texture = len(set(textures)) <= 1
    if _is_box(brush) and one_texture:
        normals = np.asarray(brush.normals, dtype=np.float64)
        dists = np.asarray(brush.dists, dtype=np.float64)
        maxs, mins = [0.0] * 3, [0.0] * 3
        for n, d in zip(normals, dists):
            axis = int(np.argmax(np.abs(n)))
            if n[axis] > 0:
                maxs[axis] = _f(d, what)
            else:
                mins[axis] = _f(-d, what)
        out["box"] = [mins, maxs]
    else:
        out["planes"] = [_v(n, what) + [_f(d, what)] for n, d in zip(brush.normals, brush.dists)]
        if not one_texture:
            out["textures"] = textures
    if one_texture and textures and textures[0]:
        out["texture"] = textures[0]
    return out


def scene_to_dict(scene: Scene) -> dict:
    """The scene as JSON-ready values (format version 1).  Settings are written only where they
    differ from the defaults; warnings are not written."""
    defaults = Settings()
    settings = {}
    for f in dataclasses.fields(Settings):
        value = getattr(scene.settings, f.name)
        if value != getattr(defaults, f.name):
            if isinstance(value, float):
                value = _f(value, f"settings.{f.name}")
            elif isinstance(value, tuple):
                value = _v(value, f"settings.{f.name}")
            settings[f.name] = value
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "name": str(scene.name),
        "settings": settings,
        "hulls": [
            {"name": str(h.name), "mins": _v(h.mins, f"hull {h.name!r}"), "maxs": _v(h.maxs, f"hull {h.name!r}")}
            for h in scene.hulls
        ],
        "brushes": [brush_to_dict(b) for b in scene.brushes],
        "movers": [brush_to_dict(b) for b in scene.movers],
        "detail_meshes": [
            {
                "name": str(m.name),
                "vertices": [_v(p, f"detail mesh {m.name!r}") for p in np.asarray(m.vertices, dtype=np.float64).reshape(-1, 3)],
                "faces": [[int(k) for k in face] for face in m.faces],
            }
            for m in scene.detail_meshes
        ],
        "lights": [
            {
                "name": str(li.name),
                "position": _v(li.position, f"light {li.name!r}"),
                "color": _v(li.color, f"light {li.name!r}"),
                "intensity": _f(li.intensity, f"light {li.name!r}"),
                **_light_kind_dict(li),
            }
            for li in scene.lights
        ],
        "markers": [
            {
                "name": str(mk.name),
                "kind": str(mk.kind),
                "position": _v(mk.position, f"marker {mk.name!r}"),
                "angle": _f(mk.angle, f"marker {mk.name!r}"),
            }
            for mk in scene.markers
        ],
        **({"minlight": _v(scene.minlight, "minlight")} if any(scene.minlight) else {}),
    }


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(", ", ": "), ensure_ascii=True, allow_nan=False)


def dumps_scene(scene: Scene) -> str:
    """The scene file's text: sorted keys, one list item per line, a newline at the end."""
    data = scene_to_dict(scene)
    lines = ["{"]
    keys = sorted(data)
    for k, key in enumerate(keys):
        value = data[key]
        comma = "," if k < len(keys) - 1 else ""
        if isinstance(value, list) and value:
            lines.append(f" {json.dumps(key)}: [")
            for i, item in enumerate(value):
                lines.append(f"  {_compact(item)}" + ("," if i < len(value) - 1 else ""))
            lines.append(f" ]{comma}")
        else:
            lines.append(f" {json.dumps(key)}: {_compact(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def save_scene_json(scene: Scene, path: str | os.PathLike) -> None:
    """Write the scene atomically (temporary file in the same folder, then os.replace)."""
    path = Path(path)
    data = dumps_scene(scene).encode("ascii")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        try:  # mkstemp makes the file private (0600); give it the usual permissions
            os.chmod(tmp, os.stat(path).st_mode & 0o777 if path.exists() else 0o644)
        except OSError:
            pass
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _light_kind_dict(li: Light) -> dict:
    """The light fields that differ from a Quake point light's defaults (so old scenes keep
    their bytes)."""
    out: dict = {}
    default = Light(li.name, li.position)
    if li.kind != default.kind:
        out["type"] = li.kind
    if li.power is not None:
        out["power"] = _f(li.power, f"light {li.name!r}")
    for key in ("direction", "spot_size", "spot_blend", "radius", "texture", "shape", "size", "size_y", "spread",
                "axis", "quake", "delay", "wait", "falloff", "anglescale", "softangle", "entity"):
        value = getattr(li, key)
        if value != getattr(default, key):
            out[key] = _v(value, f"light {li.name!r}") if key in ("direction", "axis") else (
                value if key in ("texture", "shape", "delay", "entity", "quake") else _f(value, f"light {li.name!r}"))
    return out
