"""Box hulls: named axis-aligned boxes relative to a character's reference point, and presets.

A hull need not be symmetric: Quake's player box has its reference point 24 units above the feet.
Units are metres.  Hull 0 of every level is the point hull (the unexpanded world).
"""

from __future__ import annotations

import math

from ..errors import BrushbakeError
from ..units import QUAKE_UNIT
from .scene import Hull


def _q(mins, maxs) -> tuple[tuple[float, ...], tuple[float, ...]]:
    return tuple(v * QUAKE_UNIT for v in mins), tuple(v * QUAKE_UNIT for v in maxs)


#: name -> (mins, maxs).  Sources: ../shared/REFERENCE.md (Quake III player and crouch boxes,
#: Quake 1 hulls 1 and 2, hesperus 'stand' and 'crouch' half extents 0.5, 0.5, 1 and 0.5, 0.5, 0.5).
PRESETS: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "q3_stand": _q((-15, -15, -24), (15, 15, 32)),
    "q3_crouch": _q((-15, -15, -24), (15, 15, 16)),
    "q1_player": _q((-16, -16, -24), (16, 16, 32)),  # hull 1, 32 x 32 x 56
    "q1_large": _q((-32, -32, -24), (32, 32, 64)),  # hull 2, 64 x 64 x 88
    "onion_stand": ((-0.5, -0.5, -1.0), (0.5, 0.5, 1.0)),
    "onion_crouch": ((-0.5, -0.5, -0.5), (0.5, 0.5, 0.5)),
}
#: what `--hull stand` and `--hull crouch` mean: the Quake III player, the most common reference
PRESETS["stand"] = PRESETS["q3_stand"]
PRESETS["crouch"] = PRESETS["q3_crouch"]

DEFAULT_HULLS = ("stand", "crouch")

#: what a .map bake builds when no --hull is given: qbsp's hulls 1 and 2, in .map units (Quake
#: unit boxes: the player 32 x 32 x 56, the large monsters' 64 x 64 x 88), named for what the
#: queries ask of them.  'stand' here is Quake's player box (the preset q1_player), not the
#: preset 'stand' (Quake III's, 30 units wide), so that a Quake map answers as Quake does.
QUAKE_MAP_HULLS = (("stand", (-16, -16, -24), (16, 16, 32)), ("large", (-32, -32, -24), (32, 32, 64)))


def quake_map_hulls(scale: float) -> list[Hull]:
    """The hulls a .map bake builds by default (QUAKE_MAP_HULLS), at the map's scale (metres per
    .map unit), so they stay the size of the map's own player."""
    return [make_hull(name, [v * scale for v in mins], [v * scale for v in maxs]) for name, mins, maxs in QUAKE_MAP_HULLS]

#: m. Largest distance of a hull's box from its reference point: brushes grown by it must stay
#: within the world limit (MAX_COORDINATE, docs/USER_GUIDE.md), so it is a small share of that.
MAX_HULL_EXTENT = 1000.0


def preset(name: str, rename: str | None = None) -> Hull:
    if name not in PRESETS:
        raise BrushbakeError(
            f"'{name}' is not a hull preset.",
            hint=f"Use one of {', '.join(sorted(PRESETS))}, or NAME=MINX,MINY,MINZ,MAXX,MAXY,MAXZ in metres.",
        )
    mins, maxs = PRESETS[name]
    return Hull(rename or name, tuple(mins), tuple(maxs))


def parse_hull(spec: str) -> Hull:
    """'NAME=MINX,MINY,MINZ,MAXX,MAXY,MAXZ' (metres), 'NAME=PRESET', or a preset name."""
    spec = spec.strip()
    if "=" not in spec:
        return preset(spec)
    name, _, values = spec.partition("=")
    name = name.strip()
    if not name or name == "point":
        raise BrushbakeError(f"hull '{spec}' needs a name other than 'point'.", hint="Write NAME=MINX,...,MAXZ.")
    if values.strip() in PRESETS:
        return preset(values.strip(), rename=name)
    try:
        nums = [float(v) for v in values.split(",")]
    except ValueError:
        nums = []
    if len(nums) != 6:
        raise BrushbakeError(
            f"hull '{spec}' must give six numbers.",
            hint="Write NAME=MINX,MINY,MINZ,MAXX,MAXY,MAXZ in metres, e.g. stand=-0.47,-0.47,-0.75,0.47,0.47,1.0.",
        )
    return make_hull(name, nums[:3], nums[3:])


def make_hull(name: str, mins, maxs) -> Hull:
    mins, maxs = tuple(float(v) for v in mins), tuple(float(v) for v in maxs)
    if not all(math.isfinite(v) for v in mins + maxs):
        raise BrushbakeError(f"hull '{name}' has a NaN or infinite size.", hint="Give finite sizes in metres.")
    if any(lo > 0 or hi < 0 for lo, hi in zip(mins, maxs)) or any(lo >= hi for lo, hi in zip(mins, maxs)):
        raise BrushbakeError(
            f"hull '{name}' must contain its reference point and have positive size on every axis "
            f"(mins {mins}, maxs {maxs}).",
            hint="Mins must be <= 0 and maxs >= 0, with mins < maxs.",
        )
    if max(abs(v) for v in mins + maxs) > MAX_HULL_EXTENT:
        raise BrushbakeError(
            f"hull '{name}' reaches {max(abs(v) for v in mins + maxs):.6g} m from its reference point; the limit "
            f"is {MAX_HULL_EXTENT:.0f} m.", hint="Give the hull's size in metres (a player is about 2 m tall).",
        )
    return Hull(name, mins, maxs)
