"""Every bake setting, declared once: its default, range, unit, help, command-line flag and add-on
property.

ericw-tools' habit (one `setting_scalar` line drives the parser, the default and the help): each
SettingSpec below is the only place a setting is written.  Settings (core/model/scene.py) and the
narrower objects a stage takes (SplitterSettings, BevelSettings, SliceSettings) take their fields'
defaults from it and check themselves against it; the command line (cli.py) makes its flags and
help from it and bakejob.py copies them into Settings by it; the add-on (addon/properties.py)
makes its bpy properties from it, and addon/bridge.py copies them into Settings by it.  One
checker, setting_error, so every reader says the same thing about a bad value
(tests/core/test_settings.py, tests/test_cli_settings.py).

Ranges are closed (low <= value <= high) and finite: Blender's properties clamp to a closed range.
Blender stores floats as float32; from_float32 reads one back as the decimal the user typed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidSettingError
from ..units import QUAKE_UNIT

#: what an InvalidSettingError tells the user to do
HINT = "Change that setting; docs/USER_GUIDE.md lists every range."


@dataclass(frozen=True)
class SettingRange:
    """The values one numeric setting accepts: low <= value <= high, finite; `integer` settings
    take whole numbers only; `why` says what the number is (shown with the range)."""

    low: float
    high: float
    integer: bool = False
    why: str = ""

    def text(self) -> str:
        fmt = (lambda v: f"{int(v)}") if self.integer else (lambda v: f"{v:.10g}")
        return f"{fmt(self.low)} to {fmt(self.high)}"


@dataclass(frozen=True)
class Choice:
    """One value of a setting that takes one of a few words: the word, and the add-on's label
    and tooltip for it."""

    value: str
    label: str
    tip: str


@dataclass(frozen=True)
class Toggle:
    """The add-on shows a choice setting as a checkbox plus a menu: the checkbox off means the
    choice `off_value` (Visibility off = vis 'none'), which the menu then leaves out."""

    prop: str
    label: str
    tip: str
    default: bool
    off_value: str


@dataclass(frozen=True)
class SettingSpec:
    """One bake setting.

    name: the Settings field (and the .json scene's key).  default: its value, whose type is the
    setting's (bool, int, float or str).  range: numbers only; choices: str only.
    help: the command line's help, with {range} and {default} filled in.
    flag: the command-line option that sets it (a bool: to True); off_flag, off_help: the option
    that sets a bool to False.  part: the setting is item `part` of a flag that takes several
    (--slices W,H,STEP[,CELL]); metavar: the flag's, where not argparse's own; words: words the
    flag takes for values ('auto' for 0).  enables: the bool setting any value given turns on (--luxel turns
    on light).  loader: the flag's value goes to the scene loader (--scale), which sets the setting.
    prop: the add-on property's name (None: not in the add-on); label, tip: its name and tooltip
    (tip None: the help, capitalised); unit: 'm' shows it as a length in Blender; precision: the
    digits Blender shows; toggle: see Toggle."""

    name: str
    default: bool | int | float | str
    help: str
    range: SettingRange | None = None
    choices: tuple[Choice, ...] = ()
    unit: str = ""
    flag: str | None = None
    off_flag: str | None = None
    off_help: str = ""
    part: int | None = None
    enables: str | None = None
    loader: bool = False
    prop: str | None = ""  # "": the same as name
    label: str = ""
    tip: str | None = None
    precision: int | None = None
    toggle: Toggle | None = None
    metavar: str | None = None
    words: tuple[tuple[str, object], ...] = ()

    @property
    def kind(self) -> type:
        return type(self.default)

    @property
    def prop_name(self) -> str | None:
        return self.name if self.prop == "" else self.prop

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(c.value for c in self.choices)

    @property
    def dest(self) -> str | None:
        """The argparse attribute of `flag` (argparse's own: --max-candidates -> max_candidates)."""
        return None if self.flag is None else self.flag.lstrip("-").replace("-", "_")

    def help_text(self) -> str:
        return self.help.format(range=self.range.text() if self.range else "", default=self.default)

    def tip_text(self) -> str:
        if self.tip is not None:
            return self.tip
        text = self.help_text()
        return text[:1].upper() + text[1:]


def _r(low, high, why, integer=False) -> SettingRange:
    return SettingRange(float(low) if not integer else low, float(high) if not integer else high, integer, why)


#: The table.  Its order is the order of Settings' fields.
SPECS: tuple[SettingSpec, ...] = (
    # the tree
    SettingSpec("splitter", "onion", "splitter heuristic (default onion)", flag="--splitter", label="Splitter",
                choices=(Choice("onion", "Onion", "Balance plus weighted splits (the onion article)"),
                         Choice("thesis", "Thesis", "CHOOSE-DIVIDING-POLYGON (the thesis)")), tip=""),
    SettingSpec("split_weight", 8.0, "onion splitter score: |front - back| + weight * splits ({range}; default "
                "{default:g})", _r(0, 1e6, "a weight on the split count"), flag="--split-weight",
                label="Split weight", tip="Onion splitter score: |front - back| + weight * splits"),
    SettingSpec("min_relation", 0.8, "thesis splitter's MINIMUMRELATION: the smallest ratio of the faces on a "
                "plane's two sides, min/max ({range}; default {default:g})",
                _r(0, 1, "a ratio of face counts, min/max"), flag="--min-relation", label="Min relation"),
    SettingSpec("relation_scale", 2.0, "thesis splitter's MINRELATIONSCALE: MINIMUMRELATION is divided by it until "
                "a plane qualifies ({range}; default {default:g})",
                _r(1.1, 100, "MinRelation is divided by it until a plane qualifies; 1 or less would never relax it"),
                flag="--relation-scale", label="Relation scale"),
    SettingSpec("max_candidates", 48, "splitter planes scored per node ({range}; 0 = all)",
                _r(0, 1_000_000, "a count; 0 = all", integer=True), flag="--max-candidates", label="Candidates",
                tip="Splitter planes scored per node (0 = all)"),
    SettingSpec("max_score_faces", 1024, "faces sampled to score a big node's candidate planes ({range}; 0 = all; "
                "default {default})", _r(0, 100_000_000, "a count; 0 = all", integer=True),
                flag="--max-score-faces", label="Scored faces"),
    SettingSpec("region_size", 64.0, "regions: the world grid's cell (metres; {range}; 0 = none; default {default:g}, "
                "2048 units at the default --scale); the trees are cut along its lines first, each cell's subtree "
                "built from its own faces", _r(0, 1e5, "metres: the cell size of the world grid; 0 = no regions"),
                flag="--region-size", label="Region size",
                tip="Cell of the world grid the trees are cut along first (metres; 0 = none)"),
    SettingSpec("map_scale", QUAKE_UNIT, "metres per .map unit ({range}; default 1/32)",
                _r(1 / 1024, 100, "metres per .map unit; 0 would scale the world to nothing"), flag="--scale",
                loader=True, label="Map scale", precision=5,
                tip="Metres per .map unit when importing (1/32: a 56-unit Quake player is 1.75 m)"),
    SettingSpec("onion_map_trees", False, "also build each hull's separate map tree: leaf solidity by Listing 3 "
                "verbatim, and the onion tree's size against the separate trees in the table", flag="--map-trees",
                label="Map trees"),
    SettingSpec("bevels", True, "", off_flag="--no-bevels", off_help="do not build the beveled tree (plane shifting)",
                prop="use_bevels", label="Bevels",
                tip="Also build the beveled tree for plane shifting (spheres, cylinders, any box)"),
    SettingSpec("bevel_angle", 90.0, "edge bevels where adjacent planes at a solid cell's edge differ by more than "
                "this (degrees, {range}; default {default:g})", _r(0, 180, "an angle between planes, in degrees"),
                unit="degrees", flag="--bevel-angle", label="Bevel angle",
                tip="Edge bevels where adjacent planes at a solid cell's edge differ by more than this (degrees)"),
    # visibility
    SettingSpec("vis", "fast", "visibility: portals, the leak check and the PVS by this method: fast (conservative "
                "portal flood, seconds; the default unless the scene's settings say otherwise), flow (conservative "
                "portal flow with separating planes, chains merged: tight, about a minute on big maps), sample "
                "(Ranta-Eskola's sample rays: may miss); 'none' skips all three", flag="--vis", prop="vis_mode", label="Method",
                choices=(Choice("flow", "Flow", "Conservative portal flow with separating planes: tighter, slower"),
                         Choice("fast", "Fast", "Conservative portal flood: seconds on every map"),
                         Choice("sample", "Sample", "The thesis's sample rays: fast, may miss"),
                         Choice("none", "None", "No portals, leak check or PVS")), tip="",
                toggle=Toggle("use_vis", "Visibility", "Also build portals, check for leaks and bake the PVS (the "
                              "command line's --vis)", default=False, off_value="none")),
    SettingSpec("allow_leak", False, "bake a leaking map anyway, treated as unsealed (the chain is still written as "
                "LEVEL.pts)", flag="--allow-leak", label="Allow leak",
                tip="Bake a leaking map anyway, treated as unsealed (the leak is still drawn)"),
    SettingSpec("fill", True, "", off_flag="--no-fill",
                off_help="keep the void outside a sealed map empty; by default it is made solid in the point tree and "
                "every hull's tree, as qbsp's fill makes it (queries there answer solid).  A leaking map, or a bake "
                "with --vis none, is never filled", label="Fill outside",
                tip="Make the void outside a sealed map solid in every tree, as qbsp's fill does (the command "
                "line's default; --no-fill keeps it empty)"),
    SettingSpec("seal", "qbsp", "the leak check's rule: qbsp (the default: also a leak where the seal rests on a brush "
                "tip under 0.1 unit that qbsp-based compilers such as ericw-tools can drop; a map sealed in exact "
                "geometry is checked again with those tips cut) or exact (the brushes as they are)", flag="--seal",
                label="Seal rule", tip="",
                choices=(Choice("exact", "Exact", "The brushes as they are: brushes meeting at an edge or a vertex "
                                "seal (--seal exact)"),
                         Choice("qbsp", "As qbsp", "Also a leak where the seal rests on a brush tip under 0.1 unit "
                                "that qbsp-based compilers (ericw-tools) can drop: the verdict those compilers give "
                                "(the command line's --seal qbsp, the default)"))),
    # crowd slices (core/compile/crowds/slices.py); the command line's --slices W,H,STEP[,CELL]
    SettingSpec("slices", False, "", prop="use_slices", label="Crowd slices",
                tip="Also slice the world for crowds: multi-level height maps (the command line's --slices)"),
    SettingSpec("slice_width", 1.0, "", _r(0, 100, "metres: the avatar's width"), unit="m", flag="--slices", part=0,
                enables="slices", label="Width", tip="Avatar width (metres)"),
    SettingSpec("slice_height", 1.75, "", _r(0.0625, 100, "metres: the avatar's height; 0 would fit under anything"),
                unit="m", flag="--slices", part=1, enables="slices", label="Height",
                tip="The smallest avatar height the slices serve (metres)"),
    SettingSpec("slice_step", 0.5625, "", _r(0, 100, "metres: the largest step up or down"), unit="m",
                flag="--slices", part=2, enables="slices", label="Step",
                tip="The largest step an avatar takes up or down (metres)"),
    SettingSpec("slice_cell", 0.25, "", _r(0.015625, 100, "metres: the grid's cell size; smaller grids grow as the "
                                           "square"), unit="m", flag="--slices", part=3, enables="slices",
                label="Cell", tip="The slices' grid cell (metres)"),
    SettingSpec("slice_resolution", 0.1, "crowd slices' spacing, the head room error (metres, {range}; default "
                "{default:g}; turns slices on)", _r(0.0078125, 10, "metres between slices; the head room error"),
                unit="m", flag="--slice-resolution", enables="slices", label="Resolution"),
    # light (core/compile/light/lightmap.py)
    SettingSpec("light", False, "bake lightmaps after visibility: direct light and radiosity bounces "
                "(docs/USER_GUIDE.md)", flag="--light", off_flag="--no-light",
                off_help="no lightmaps, even if the scene's settings ask for them", prop="use_light", label="Light",
                tip="Also bake lightmaps: direct light and radiosity bounces (the command line's --light)"),
    SettingSpec("luxel", 0.5, "metres per luxel ({range}; default {default:g})",
                _r(1 / 64, 16, "metres per lightmap luxel"), unit="m", flag="--luxel", enables="light",
                label="Luxel", tip="Side of a lightmap luxel (0.5 m: Quake's 16 units)"),
    SettingSpec("patch", 4, "luxels per radiosity patch side ({range}; default {default})",
                _r(1, 64, "luxels per radiosity patch side", integer=True), flag="--patch", enables="light",
                label="Patch", tip="Luxels per radiosity patch side"),
    SettingSpec("bounces", 8, "radiosity bounces ({range}; default {default})",
                _r(0, 1000, "a count of light bounces", integer=True), flag="--bounces", enables="light",
                prop="light_bounces", label="Bounces", tip="Radiosity bounces after direct light (progressive refinement)"),
    SettingSpec("light_threshold", 1e-3, "stop bouncing below this fraction of unshot power ({range}; default "
                "{default:g})", _r(0, 1, "a fraction of the light's power"), flag="--light-threshold",
                enables="light", label="Threshold"),
    SettingSpec("reflectance", 0.5, "diffuse reflectance of every face ({range}; default {default:g})",
                _r(0, 0.9375, "a diffuse albedo; 1 or more would never converge"), flag="--reflectance",
                enables="light", label="Reflectance",
                tip="Diffuse reflectance of every face (the bake and the Cycles comparison use it)"),
    SettingSpec("light_samples", 8, "shadow rays per luxel for lights with a radius ({range}; default {default})",
                _r(1, 256, "shadow rays per luxel", integer=True), flag="--light-samples", enables="light",
                label="Light samples"),
    SettingSpec("luxel_samples", 1, "direct light at N x N points a luxel, averaged: antialiased shadow edges "
                "({range}; default {default}, the centre)", _r(1, 16, "points a luxel side", integer=True),
                flag="--luxel-samples", enables="light", label="Luxel samples"),
    SettingSpec("shoot_fraction", 0.95, "a bounce shoots its brightest patches holding this fraction of its unshot "
                "power, the rest waits for the next ({range}; default {default:g}; 1: every patch, exact bounces)",
                _r(0.0625, 1, "a fraction of a bounce's unshot power"), flag="--shoot-fraction", enables="light",
                label="Shoot fraction"),
    # the lightmap PNGs the command line writes (bake --png)
    SettingSpec("png_exposure", 0.0, "the PNG pages' values times X (1: as baked); auto (the default) picks the one "
                "that clips at most 1%% of the lit texels, never above 1",
                _r(0, 1e6, "a factor on the PNG pages' values; 0 or auto picks one"), flag="--exposure",
                metavar="X|auto", words=(("auto", 0.0),), prop=None, label="PNG exposure"),
)

SPEC: dict[str, SettingSpec] = {s.name: s for s in SPECS}


def setting_error(name: str, value) -> str | None:
    """None if `value` is acceptable for setting `name`, else the one-line reason (with the range):
    the text the command line, the .json reader, the add-on and every settings object show."""
    spec = SPEC.get(name)
    if spec is None:
        return None
    shown = _shown(value)
    if spec.choices:
        ok = isinstance(value, str) and value in spec.values
        return None if ok else f"is {shown}; it must be one of {', '.join(spec.values)}."
    if spec.kind is bool:
        return None if isinstance(value, bool) else f"is {shown}; it must be true or false."
    r = spec.range
    numbers = (int, np.integer) if r.integer else (int, float, np.integer, np.floating)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers):
        return f"is {shown}; it must be {'a whole number' if r.integer else 'a number'} from {r.text()} ({r.why})."
    finite = not isinstance(value, (float, np.floating)) or math.isfinite(value)  # an int of any size is finite
    if not (finite and r.low <= value <= r.high):
        return f"is {shown}; it must be from {r.text()} ({r.why})."
    return None


def from_float32(value: float) -> float:
    """A float32 (a Blender float property) as the shortest decimal that gives it back: 0.1 typed
    in Blender is 0.1 here, as on the command line, not 0.10000000149011612."""
    return float(str(np.float32(value)))


def _shown(value) -> str:
    """The value as a message shows it: its repr, cut short when long (an int of 400 digits)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:24]}... ({len(text)} characters)"


def invalid(name: str, problem: str, subject: str) -> InvalidSettingError:
    return InvalidSettingError(f"{name} {problem}", subject=subject, hint=HINT)


def check_value(name: str, value, subject: str = "settings", shown: str | None = None) -> None:
    """Raise InvalidSettingError (`shown`, default `name`, then the reason) when `value` is out of
    setting `name`'s range."""
    problem = setting_error(name, value)
    if problem:
        raise invalid(shown or name, problem, subject)


def from_table(cls):
    """Class decorator for Settings: one field per SettingSpec, its default the table's, in the
    table's order, each checked when set (so a Settings is never out of range).  Put it under
    @dataclass."""
    cls.__annotations__ = {s.name: s.kind.__name__ for s in SPECS}
    for s in SPECS:
        setattr(cls, s.name, s.default)

    def __setattr__(self, name, value):
        check_value(name, value)
        object.__setattr__(self, name, value)

    cls.__setattr__ = __setattr__
    return cls


def setting_view(**names: str):
    """Class decorator for the narrower settings a stage takes (SliceSettings(width=...) is the
    setting slice_width): its fields named here come first, their defaults the table's, and each
    is checked when the object is made (__post_init__), with the table's range and message.  The
    class's own fields (not settings a user sets) follow; its own __post_init__ runs after.  Put
    it under @dataclass."""

    def wrap(cls):
        own = dict(cls.__dict__.get("__annotations__", {}))
        cls.__annotations__ = {**{f: SPEC[n].kind.__name__ for f, n in names.items()}, **own}
        for field, name in names.items():
            setattr(cls, field, SPEC[name].default)
        original = cls.__dict__.get("__post_init__")

        def __post_init__(self):
            for field, name in names.items():
                check_value(name, getattr(self, field), subject=cls.__name__,
                            shown=field if field == name else f"{field} (the setting {name})")
            if original is not None:
                original(self)

        def from_settings(view, settings, **own):
            """The view of a Settings (its fields copied by the names above); `own`: the class's
            other fields."""
            return view(**{field: getattr(settings, name) for field, name in names.items()}, **own)

        cls.__post_init__ = __post_init__
        cls.from_settings = classmethod(from_settings)
        cls.setting_names = names
        return cls

    return wrap
