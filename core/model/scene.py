"""The input model: what a level designer made, before any compiling.

Loaders (.map, .json, Blender) produce a Scene; the compiler reads only this.  Units are metres,
Z is up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np

from ..errors import InvalidSettingError
from ..units import QUAKE_UNIT
from .brushes import Brush, Contents


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
class Settings:
    """Compile settings.  Defaults are what `bake` uses; see docs/USER_GUIDE.md."""

    splitter: str = "onion"  # 'onion' (balance + weight * splits) or 'thesis' (CHOOSE-DIVIDING-POLYGON)
    split_weight: float = 8.0  # onion score: |front - back| + split_weight * splits
    min_relation: float = 0.8  # thesis MINIMUMRELATION
    relation_scale: float = 2.0  # thesis MINRELATIONSCALE
    max_candidates: int = 48  # splitter planes scored per node (0 = all); see docs/ARCHITECTURE.md
    max_score_faces: int = 1024  # faces sampled to score them in big nodes (0 = all)
    map_scale: float = QUAKE_UNIT  # metres per Quake unit, used by the .map loader
    onion_map_trees: bool = False  # build each hull's map tree too (Listing 3 verbatim; for reports)
    bevels: bool = True  # build the beveled tree for plane shifting (core/compile/trees/bevel.py)
    bevel_angle: float = 90.0  # degrees: edge bevels where a solid cell's adjacent planes differ by more
    vis: str = "fast"  # visibility: 'fast' (conservative portal flood), 'flow', 'sample' or 'none'
    allow_leak: bool = False  # bake a leaking map anyway, treated as unsealed
    fill: bool = True  # a sealed map's void made solid in every tree, as qbsp's fill (core/compile/vis/outside_fill.py)
    seal: str = "qbsp"  # leak check: 'qbsp' (also tips under 0.1 unit qbsp's tree could cut), or 'exact' brushes
    # crowd slices (core/compile/crowds/slices.py; the command line's --slices W,H,STEP[,CELL])
    slices: bool = False  # slice the world for crowds (multi-level height maps)
    slice_width: float = 1.0  # m, avatar width (a Quake player: 32 units)
    slice_height: float = 1.75  # m, the smallest avatar height the slices serve (56 units)
    slice_step: float = 0.5625  # m, the largest step up or down (18 units)
    slice_cell: float = 0.25  # m, the grid's cell size
    slice_resolution: float = 0.1  # m, the paper's resolution: slice spacing and head room error
    light: bool = False  # bake lightmaps (core/compile/light/lightmap.py) after visibility
    luxel: float = 0.5  # m, side of a lightmap luxel (Quake's 16 units)
    patch: int = 4  # luxels per radiosity patch side (4: Quake 2's 64 units)
    bounces: int = 8  # radiosity rounds of progressive refinement after direct light
    light_threshold: float = 1e-3  # stop bouncing when unshot power falls below this fraction
    reflectance: float = 0.5  # diffuse reflectance of every face (no materials yet)
    light_samples: int = 8  # shadow rays per luxel for lights with a radius (soft shadows)
    luxel_samples: int = 1  # n: direct light at n x n points a luxel, averaged (antialiased edges)
    shoot_fraction: float = 0.95  # a bounce shoots its brightest patches holding this much of its power
    png_exposure: float = 0.0  # lightmap PNGs (bake --png): times this; 0 = auto, at most 1% of lit texels clipped


@dataclass(frozen=True)
class SettingRange:
    """The values one numeric Settings field accepts: low <= value <= high, finite; `integer`
    fields take whole numbers only.  The one table the command line, .json scenes and the
    add-on's properties all check against (tests/core/test_settings.py and the add-on's
    'settings' scenario compare them).  Every bound is exact in float32, as Blender stores it."""

    low: float
    high: float
    integer: bool = False
    why: str = ""

    def text(self) -> str:
        fmt = (lambda v: f"{int(v)}") if self.integer else (lambda v: f"{v:.10g}")
        return f"{fmt(self.low)} to {fmt(self.high)}"


#: accepted range of every numeric setting (booleans are true/false; splitter one of SPLITTERS)
SETTING_RANGES: dict[str, SettingRange] = {
    "split_weight": SettingRange(0.0, 1.0e6, why="a weight on the split count"),
    "min_relation": SettingRange(0.0, 1.0, why="a ratio of face counts, min/max"),
    "relation_scale": SettingRange(1.1, 100.0, why="MinRelation is divided by it until a plane qualifies; "
                                   "1 or less would never relax it"),
    "max_candidates": SettingRange(0, 1_000_000, integer=True, why="a count; 0 = all"),
    "max_score_faces": SettingRange(0, 100_000_000, integer=True, why="a count; 0 = all"),
    "map_scale": SettingRange(1 / 1024, 100.0, why="metres per .map unit; 0 would scale the world to nothing"),
    "bevel_angle": SettingRange(0.0, 180.0, why="an angle between planes, in degrees"),
    "slice_width": SettingRange(0.0, 100.0, why="metres: the avatar's width"),
    "slice_height": SettingRange(0.0625, 100.0, why="metres: the avatar's height; 0 would fit under anything"),
    "slice_step": SettingRange(0.0, 100.0, why="metres: the largest step up or down"),
    "slice_cell": SettingRange(0.015625, 100.0, why="metres: the grid's cell size; smaller grids grow "
                               "as the square"),
    "slice_resolution": SettingRange(0.0078125, 10.0, why="metres between slices; the head room error"),
    "luxel": SettingRange(1 / 64, 16.0, why="metres per lightmap luxel"),
    "patch": SettingRange(1, 64, integer=True, why="luxels per radiosity patch side"),
    "bounces": SettingRange(0, 1000, integer=True, why="a count of light bounces"),
    "light_threshold": SettingRange(0.0, 1.0, why="a fraction of the light's power"),
    "reflectance": SettingRange(0.0, 0.9375, why="a diffuse albedo; 1 or more would never converge"),
    "light_samples": SettingRange(1, 256, integer=True, why="shadow rays per luxel"),
    "luxel_samples": SettingRange(1, 16, integer=True, why="points a luxel side"),
    "shoot_fraction": SettingRange(0.0625, 1.0, why="a fraction of a bounce's unshot power"),
    "png_exposure": SettingRange(0.0, 1.0e6, why="a factor on the PNG pages' values; 0 picks one"),
}
SPLITTERS = ("onion", "thesis")
VIS_MODES = ("flow", "fast", "sample", "none")
SEAL_RULES = ("exact", "qbsp")
BOOL_SETTINGS = ("onion_map_trees", "bevels", "allow_leak", "fill", "slices", "light")


def setting_error(name: str, value, where: str | None = None) -> str | None:
    """None if `value` is acceptable for setting `name`, else the one-line reason (with the range)."""
    if name == "splitter":
        return None if value in SPLITTERS else f"is {value!r}; it must be one of {', '.join(SPLITTERS)}."
    if name == "vis":
        return None if value in VIS_MODES else f"is {value!r}; it must be one of {', '.join(VIS_MODES)}."
    if name == "seal":
        return None if value in SEAL_RULES else f"is {value!r}; it must be one of {', '.join(SEAL_RULES)}."
    if name in BOOL_SETTINGS:
        return None if isinstance(value, bool) else f"is {value!r}; it must be true or false."
    r = SETTING_RANGES.get(name)
    if r is None:  # a setting without a range (tests/test_hostile.py requires every one to have one)
        return None
    ok_type = isinstance(value, (int, np.integer)) if r.integer else isinstance(value, (int, float, np.integer, np.floating))
    if isinstance(value, bool) or not ok_type:
        return f"is {value!r}; it must be {'a whole number' if r.integer else 'a number'} from {r.text()} ({r.why})."
    if not (math.isfinite(value) and r.low <= value <= r.high):
        return f"is {value!r}; it must be from {r.text()} ({r.why})."
    return None


def check_settings(settings: "Settings", where: str = "settings") -> None:
    """Raise InvalidSettingError naming the first setting out of its range (SETTING_RANGES)."""
    for f in fields(settings):
        problem = setting_error(f.name, getattr(settings, f.name))
        if problem:
            raise InvalidSettingError(f"{f.name} {problem}", subject=where,
                                      hint="Change that setting; docs/USER_GUIDE.md lists every range.")


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
