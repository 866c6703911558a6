"""The input model: what a level designer made, before any compiling.

Loaders (.map, .json, Blender) produce a Scene; the compiler reads only this.  Units are metres,
Z is up.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from ..errors import InvalidSettingError
from .brushes import Brush, Contents
from .setting_specs import HINT, SPEC, SPECS, SettingRange, from_table, setting_error  # noqa: F401 (SettingRange: re-exported)


@dataclass
class Hull:
    """An axis-aligned box, mins and maxs relative to the character's reference point (metres)."""

    name: str
    mins: tuple[float, float, float]
    maxs: tuple[float, float, float]


@dataclass
class Light:
    name: str
    position: tuple[float, float, float]
    color: tuple[float, float, float] = (1.0, 1.0, 1.0)
    #: Quake's 'light' value (300 by default): brightness at the light, falling off linearly
    #: to zero at `intensity` units; stored unscaled so a .map round trip is lossless.
    intensity: float = 300.0
    #: 'point', 'spot', 'sun', 'area' or 'surface' (faces whose texture is `texture` emit); see
    #: core/model/light_units.py for the units and the Quake rule
    kind: str = "point"
    #: Blender's units: watts (point, spot, area), W/m^2 (sun), emission strength (surface); None:
    #: converted from `intensity` by the Quake rule
    power: float | None = None
    #: spot, sun and area: the direction the light shines in (unit; an area light's normal)
    direction: tuple[float, float, float] = (0.0, 0.0, -1.0)
    spot_size: float = 45.0  # degrees, the cone's full angle (Blender's Spot Size)
    spot_blend: float = 0.15  # Blender's Spot Blend, 0..1
    radius: float = 0.0  # m: point and spot lights' size (soft shadows); sun: angular diameter in degrees
    texture: str = ""  # surface lights: the texture name whose faces emit
    #: area lights (Blender's Area light, one-sided, centred on `position`): 'square', 'rectangle',
    #: 'disk' or 'ellipse'; `size` is the side (square, rectangle along `axis`) or the diameter
    #: (disk, ellipse along `axis`), `size_y` the other side or diameter (rectangle, ellipse)
    shape: str = "square"
    size: float = 1.0  # m
    size_y: float = 1.0  # m
    spread: float = 180.0  # degrees: Blender's Spread (180 = a Lambertian emitter)
    axis: tuple[float, float, float] = (1.0, 0.0, 0.0)  # area: the light's local X (unit, across `direction`)
    #: lit as Quake's light tools light it (a .map's lights; point, spot and sun with `power`
    #: None): the keys below.  False (a .json light with no power): the older Quake rule, an
    #: inverse-square light of light_units.quake_light_watts
    quake: bool = False
    #: ericw-tools' keys of a Quake light (`quake` True; see
    #: core/model/light_units.py quake_light_value): 'delay', the falloff formula (QUAKE_FALLOFFS:
    #: 0 linear, reaching zero at intensity / wait units; 1 inverse; 2 inverse square; 3 none;
    #: 4 local minlight; 5 inverse square from 128 units on); 'wait', the falloff distance scale;
    #: '_falloff', the distance in units where a linear light reaches zero (0: not given);
    #: '_anglescale', how much the angle of incidence counts, 0 to 1
    delay: int = 0
    wait: float = 1.0
    falloff: float = 0.0
    anglescale: float = 0.5
    #: Quake spot: the inner cone in degrees, full light inside it, fading linearly in the cosine
    #: to the `spot_size` cone ('_softangle'; 0: a hard edge)
    softangle: float = 0.0
    #: a light the map places at a point (the leak check counts it as inside); False for a
    #: .map worldspawn's '_sunlight', which has no place
    entity: bool = True


@dataclass
class Marker:
    """A named point: a player start, an 'inside' marker for leak checks, any info_* entity."""

    name: str
    kind: str
    position: tuple[float, float, float]
    angle: float = 0.0  # degrees about +Z


@dataclass
class DetailMesh:
    """Render-only triangle or polygon geometry (Blender meshes that are not brushes)."""

    name: str
    vertices: np.ndarray  # (V, 3)
    faces: list[list[int]]


@dataclass
@from_table
class Settings:
    """Compile settings: one field per setting of core/model/setting_specs.py's table, its default
    there (what `bake` uses; see docs/USER_GUIDE.md).  Each value is checked when it is set, so a
    Settings is never out of range: InvalidSettingError names the field and its range, in the
    words the command line and the add-on use."""


#: accepted range of every numeric setting (the table's; exporters/native.py checks crowd grids by it)
SETTING_RANGES: dict[str, SettingRange] = {s.name: s.range for s in SPECS if s.range is not None}
SPLITTERS = SPEC["splitter"].values
VIS_MODES = SPEC["vis"].values
SEAL_RULES = SPEC["seal"].values
BOOL_SETTINGS = tuple(s.name for s in SPECS if s.kind is bool)


def check_settings(settings: "Settings", where: str = "settings") -> None:
    """Raise InvalidSettingError naming the first setting out of its range (a Settings checks
    itself when set; this checks again, naming `where`, for one whose fields were forced)."""
    for f in fields(settings):
        problem = setting_error(f.name, getattr(settings, f.name))
        if problem:
            raise InvalidSettingError(f"{f.name} {problem}", subject=where, hint=HINT)


@dataclass
class Scene:
    name: str
    brushes: list[Brush] = field(default_factory=list)
    detail_meshes: list[DetailMesh] = field(default_factory=list)
    lights: list[Light] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    hulls: list[Hull] = field(default_factory=list)
    settings: Settings = field(default_factory=Settings)
    #: brushes of moving entities (doors, platforms): kept for later issues, not compiled
    movers: list[Brush] = field(default_factory=list)
    #: the light no luxel falls below, linear RGB (a .map's worldspawn 'light' or '_minlight' n
    #: with '_minlight_color': n / 255 of that colour); applied after the bounces
    minlight: tuple[float, float, float] = (0.0, 0.0, 0.0)
    #: non-fatal remarks from loading (skipped entities, dropped planes), shown to the user
    warnings: list[str] = field(default_factory=list)

    def brushes_with(self, *contents: Contents) -> list[Brush]:
        return [b for b in self.brushes if b.contents in contents]

    @property
    def bounds(self) -> np.ndarray:
        if not self.brushes:
            return np.zeros((2, 3))
        b = np.array([br.bounds for br in self.brushes])
        return np.array([b[:, 0].min(axis=0), b[:, 1].max(axis=0)])
