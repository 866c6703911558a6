"""Build brushbake's sample scenes in Python and write them as JSON (and two_rooms as a .map).

    python sample_scenes/make_samples.py [output_folder]

The JSON files in this folder are this script's output: edit the script, run it, commit both.
Output is byte-identical from run to run (tests/core/test_sample_scenes.py checks that).

Every scene is in metres, Z up, sealed by a shell of 0.25 m walls, floor and ceiling, and has an
'info' marker 'player_start' inside and the two Quake III hulls 'stand' and 'crouch'.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

try:
    from brushbake.core.model.brushes import Brush, Contents, box_brush, brush_from_planes
    from brushbake.core.model.scene import DetailMesh, Hull, Light, Marker, Scene
    from brushbake.core.formats.scene_json import dumps_scene
except ImportError:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from brushbake.core.model.brushes import Brush, Contents, box_brush, brush_from_planes
    from brushbake.core.model.scene import DetailMesh, Hull, Light, Marker, Scene
    from brushbake.core.formats.scene_json import dumps_scene

HERE = Path(__file__).resolve().parent

#: metres per Quake unit
UNIT = 1.0 / 32.0
#: Quake III player box (-15,-15,-24)..(15,15,32) units; crouching lowers the top to 16 units.
STAND = Hull("stand", (-15 * UNIT, -15 * UNIT, -24 * UNIT), (15 * UNIT, 15 * UNIT, 32 * UNIT))
CROUCH = Hull("crouch", (-15 * UNIT, -15 * UNIT, -24 * UNIT), (15 * UNIT, 15 * UNIT, 16 * UNIT))
#: Quake III step height, 18 units: the highest ledge a character walks up without jumping.
STEP_HEIGHT = 18 * UNIT
#: Height of the hull's reference point above the floor it stands on, plus one unit of air.
EYE_OFFSET = -STAND.mins[2] + UNIT
#: Wall, floor and ceiling thickness.
T = 0.25

DEFAULT_SAMPLE = "two_rooms.json"


# --------------------------------------------------------------------------------------------
# Building blocks



def dot3(a, b) -> float:
    """a . b summed left to right in Python floats: the same bits on every machine (a NumPy
    product of two 3-vectors goes through BLAS, whose kernels round differently per CPU)."""
    return float(a[0]) * float(b[0]) + float(a[1]) * float(b[1]) + float(a[2]) * float(b[2])

class Builder:
    def __init__(self, name: str):
        self.scene = Scene(name=name, hulls=[STAND, CROUCH])

    def box(self, name, mins, maxs, contents=Contents.SOLID, texture=""):
        b = box_brush(mins, maxs, name, contents)
        b.textures = [texture] * len(b.normals)
        self.scene.brushes.append(b)
        return b

    def planes(self, name, planes, contents=Contents.SOLID, texture=""):
        planes = np.asarray(planes, dtype=np.float64)
        b = brush_from_planes(planes[:, :3], planes[:, 3], name, contents, textures=[texture] * len(planes))
        self.scene.brushes.append(b)
        return b

    def wedge(self, name, mins, maxs, rises_to, contents=Contents.SOLID, texture=""):
        """A ramp block filling the box mins..maxs under a slope that rises from mins.z at one
        end to maxs.z at the other; rises_to is '+x', '-x', '+y' or '-y' (the high end)."""
        (x0, y0, z0), (x1, y1, z1) = mins, maxs
        sign = 1.0 if rises_to[0] == "+" else -1.0
        axis = "xy".index(rises_to[1])
        lo, hi = (x0, x1) if axis == 0 else (y0, y1)
        run, rise = hi - lo, z1 - z0
        slope = [0.0, 0.0, run]
        slope[axis] = -sign * rise
        start = [0.0, 0.0, z0]
        start[axis] = lo if sign > 0 else hi
        n = np.array(slope) / math.hypot(run, rise)
        high_end = [0.0, 0.0, 0.0, 0.0]
        high_end[axis] = sign
        high_end[3] = sign * (hi if sign > 0 else lo)
        side = 1 - axis  # the other horizontal axis
        side_lo = [0.0, 0.0, 0.0, -(x0, y0)[side]]
        side_lo[side] = -1.0
        side_hi = [0.0, 0.0, 0.0, (x1, y1)[side]]
        side_hi[side] = 1.0
        planes = [[0, 0, -1, -z0], high_end, side_lo, side_hi, [*n, dot3(n, start)]]
        return self.planes(name, planes, contents, texture)

    def turned_box(self, name, center, size, z0, z1, degrees, contents=Contents.SOLID, texture=""):
        """A box standing on z0, turned about +Z by `degrees` around its centre (x, y)."""
        a = math.radians(degrees)
        u = np.array([math.cos(a), math.sin(a), 0.0])
        v = np.array([-math.sin(a), math.cos(a), 0.0])
        c = np.array([center[0], center[1], 0.0])
        planes = [[0, 0, 1, z1], [0, 0, -1, -z0]]
        for axis, half in ((u, size[0] / 2), (v, size[1] / 2)):
            planes.append([*axis, dot3(axis, c) + half])
            planes.append([*(-axis), dot3(-axis, c) + half])
        return self.planes(name, planes, contents, texture)

    def room(self, prefix, lo, hi, doors=(), textures=None):
        """A sealed room around the interior box lo..hi: floor, ceiling and four walls of
        thickness T.  doors: (side, (a, b), (z0, z1)) cuts an opening a..b along the wall and
        z0..z1 high into the wall on side '+x', '-x', '+y' or '-y'."""
        tex = {"floor": "floor", "ceiling": "ceiling", "-x": "wall", "+x": "wall", "-y": "wall", "+y": "wall"}
        tex.update(textures or {})
        (x0, y0, z0), (x1, y1, z1) = lo, hi
        self.box(f"{prefix}_floor", (x0 - T, y0 - T, z0 - T), (x1 + T, y1 + T, z0), texture=tex["floor"])
        self.box(f"{prefix}_ceiling", (x0 - T, y0 - T, z1), (x1 + T, y1 + T, z1 + T), texture=tex["ceiling"])
        doors = {side: (span, height) for side, span, height in doors}
        for side in ("-x", "+x", "-y", "+y"):
            axis = "xy".index(side[1])
            if axis == 0:  # the x walls run the full length in y, covering the corners
                w0, w1 = (x0 - T, x0) if side == "-x" else (x1, x1 + T)
                along = (y0 - T, y1 + T)
            else:
                w0, w1 = (y0 - T, y0) if side == "-y" else (y1, y1 + T)
                along = (x0, x1)

            def piece(name, a, b, za, zb, axis=axis, w0=w0, w1=w1, side=side):
                if b - a <= 0 or zb - za <= 0:
                    return
                if axis == 0:
                    self.box(name, (w0, a, za), (w1, b, zb), texture=tex[side])
                else:
                    self.box(name, (a, w0, za), (b, w1, zb), texture=tex[side])

            name = f"{prefix}_wall{side}"
            if side not in doors:
                piece(name, along[0], along[1], z0, z1)
                continue
            (a, b), (za, zb) = doors[side]
            piece(f"{name}_left", along[0], a, z0, z1)
            piece(f"{name}_right", b, along[1], z0, z1)
            piece(f"{name}_lintel", a, b, zb, z1)
            piece(f"{name}_sill", a, b, z0, za)

    def corridor(self, prefix, lo, hi, axis="x"):
        """Floor, ceiling and two side walls around the interior lo..hi; open at both ends
        along `axis` (where it meets the door openings of two rooms)."""
        (x0, y0, z0), (x1, y1, z1) = lo, hi
        if axis == "x":
            self.box(f"{prefix}_floor", (x0, y0 - T, z0 - T), (x1, y1 + T, z0), texture="floor")
            self.box(f"{prefix}_ceiling", (x0, y0 - T, z1), (x1, y1 + T, z1 + T), texture="ceiling")
            self.box(f"{prefix}_wall-y", (x0, y0 - T, z0), (x1, y0, z1), texture="wall")
            self.box(f"{prefix}_wall+y", (x0, y1, z0), (x1, y1 + T, z1), texture="wall")
        else:
            self.box(f"{prefix}_floor", (x0 - T, y0, z0 - T), (x1 + T, y1, z0), texture="floor")
            self.box(f"{prefix}_ceiling", (x0 - T, y0, z1), (x1 + T, y1, z1 + T), texture="ceiling")
            self.box(f"{prefix}_wall-x", (x0 - T, y0, z0), (x0, y1, z1), texture="wall")
            self.box(f"{prefix}_wall+x", (x1, y0, z0), (x1 + T, y1, z1), texture="wall")

    def light(self, name, position, color=(1.0, 1.0, 1.0), intensity=300.0):
        self.scene.lights.append(Light(name, tuple(position), tuple(color), float(intensity)))

    def marker(self, name, kind, position, angle=0.0):
        self.scene.markers.append(Marker(name, kind, tuple(position), float(angle)))

    def player_start(self, x, y, floor_z, angle=0.0):
        self.marker("player_start", "player_start", (x, y, floor_z + EYE_OFFSET), angle)


# --------------------------------------------------------------------------------------------
# The scenes


def two_rooms() -> Scene:
    """Two rooms joined by a corridor (the onion BSP article's Figure 1, in 3D).

    Room A (8 x 8 x 4 m) has a detail pillar; room B (10 x 10 x 5 m) has a 1 m high platform at
    its far end, reached by a 2 m wide ramp (14 degrees), with clip rails along the platform's
    edge either side of the ramp.  The corridor is 2 m wide, 3 m high, 5.5 m long.
    All coordinates are multiples of 1/8 m, so the .map version has integer coordinates.
    """
    s = Builder("two_rooms")
    door = ((3.0, 5.0), (0.0, 3.0))
    s.room("room_a", (0.0, 0.0, 0.0), (8.0, 8.0, 4.0), doors=[("+x", *door)])
    s.corridor("corridor", (8.0 + T, 3.0, 0.0), (14.0 - T, 5.0, 3.0))
    s.room("room_b", (14.0, 0.0, 0.0), (24.0, 10.0, 5.0), doors=[("-x", *door)])
    s.box("pillar", (3.5, 5.0, 0.0), (4.5, 6.0, 4.0), Contents.DETAIL, texture="pillar")
    s.box("platform", (20.0, 0.0, 0.0), (24.0, 10.0, 1.0), texture="floor")
    s.wedge("ramp", (16.0, 4.0, 0.0), (20.0, 6.0, 1.0), "+x", texture="floor")
    s.box("clip_rail_south", (20.0, 0.0, 1.0), (20.125, 4.0, 2.5), Contents.CLIP, texture="clip")
    s.box("clip_rail_north", (20.0, 6.0, 1.0), (20.125, 10.0, 2.5), Contents.CLIP, texture="clip")
    # a render-only lamp shade (a square pyramid) hanging under room A's light
    s.scene.detail_meshes.append(DetailMesh(
        "lamp_shade",
        np.array([[1.75, 1.75, 3.5], [2.25, 1.75, 3.5], [2.25, 2.25, 3.5], [1.75, 2.25, 3.5], [2.0, 2.0, 3.875]]),
        [[0, 3, 2, 1], [0, 1, 4], [1, 2, 4], [2, 3, 4], [3, 0, 4]],
    ))
    s.light("light_room_a", (2.0, 2.0, 3.25), (1.0, 0.9, 0.75), 300)
    s.light("light_corridor", (11.0, 4.0, 2.5), (1.0, 1.0, 1.0), 200)
    s.light("light_room_b", (19.0, 5.0, 4.5), (0.8, 0.9, 1.0), 400)
    s.player_start(2.0, 2.0, 0.0, angle=0.0)
    s.marker("inside_room_b", "inside", (17.0, 8.0, 2.0))
    return s.scene


def low_tunnel() -> Scene:
    """Two 6 x 6 x 3.5 m rooms joined by a tunnel 4 m long, 1.2 m wide and 1.5 m high:
    lower than the standing hull (1.75 m), higher than the crouching one (1.25 m)."""
    s = Builder("low_tunnel")
    width, height, length = 1.2, 1.5, 4.0
    y0, y1 = 3.0 - width / 2, 3.0 + width / 2
    door = ((y0, y1), (0.0, height))
    ax1 = 6.0
    bx0 = ax1 + T + length + T
    s.room("room_a", (0.0, 0.0, 0.0), (ax1, 6.0, 3.5), doors=[("+x", *door)])
    s.corridor("tunnel", (ax1 + T, y0, 0.0), (bx0 - T, y1, height))
    s.room("room_b", (bx0, 0.0, 0.0), (bx0 + 6.0, 6.0, 3.5), doors=[("-x", *door)])
    s.light("light_room_a", (3.0, 3.0, 3.0))
    s.light("light_room_b", (bx0 + 3.0, 3.0, 3.0))
    s.player_start(2.0, 3.0, 0.0)
    s.marker("tunnel_middle", "info_null", ((ax1 + bx0) / 2, 3.0, height / 2))
    s.marker("inside_room_b", "inside", (bx0 + 3.0, 3.0, 1.5))
    return s.scene


def staircase() -> Scene:
    """A 10 x 6 x 5 m room; 8 steps with 0.25 m risers and 0.3125 m treads, 1.5 m wide, go up
    to a 2 m high landing that fills the far part of the room.  Beside the stairs stands a
    0.8 m ledge: higher than the 0.5625 m step height, so it has to be jumped, not stepped."""
    s = Builder("staircase")
    s.room("room", (0.0, 0.0, 0.0), (10.0, 6.0, 5.0))
    riser, tread, steps, x_start = 0.25, 0.3125, 8, 1.5
    landing_x = x_start + steps * tread
    for i in range(steps):
        s.box(f"step_{i + 1}", (x_start + i * tread, 0.0, 0.0), (landing_x, 1.5, riser * (i + 1)), texture="step")
    s.box("landing", (landing_x, 0.0, 0.0), (10.0, 6.0, steps * riser), texture="floor")
    s.box("ledge", (landing_x - 1.5, 1.5, 0.0), (landing_x, 3.0, 0.8), texture="ledge")
    s.light("light_low", (1.5, 4.0, 3.0))
    s.light("light_landing", (7.0, 3.0, 4.5))
    s.player_start(0.75, 3.5, 0.0)
    s.marker("on_landing", "inside", (7.0, 3.0, steps * riser + 1.0))
    return s.scene


def garage() -> Scene:
    """A three-level car park, 30 x 20 m, 3 m floor to floor (the multi-level collision paper's
    Figure 1).  Ramps climb 3 m over 12 m (14 degrees): ground to level 1 along the south side
    (rising +x), level 1 to level 2 along the north side (rising -x).  The slab above each ramp
    has an opening; parapets (1 m) guard the openings' edges.  Six 0.5 m pillars per level;
    two cars (detail boxes)."""
    s = Builder("garage")
    X, Y, H = 30.0, 20.0, 3.0
    s.room("shell", (0.0, 0.0, 0.0), (X, Y, 3 * H - T), textures={"floor": "concrete", "ceiling": "concrete"})
    ramp_x = (10.0, 22.0)
    south, north = (0.0, 4.0), (16.0, 20.0)
    for level in (1, 2):
        z = level * H
        hole = south if level == 1 else north
        rest = (hole[1], Y) if level == 1 else (0.0, hole[0])
        s.box(f"slab_{level}_main", (0.0, rest[0], z - T), (X, rest[1], z), texture="concrete")
        s.box(f"slab_{level}_west", (0.0, hole[0], z - T), (ramp_x[0], hole[1], z), texture="concrete")
        s.box(f"slab_{level}_east", (ramp_x[1], hole[0], z - T), (X, hole[1], z), texture="concrete")
    s.wedge("ramp_0_1", (ramp_x[0], south[0], 0.0), (ramp_x[1], south[1], H), "+x", texture="concrete")
    s.wedge("ramp_1_2", (ramp_x[0], north[0], H), (ramp_x[1], north[1], 2 * H), "-x", texture="concrete")
    # parapets along the openings: level 1 around the south hole (open at the ramp's top, east)
    s.box("parapet_1_side", (ramp_x[0], south[1], H), (ramp_x[1], south[1] + 0.2, H + 1.0), texture="concrete")
    s.box("parapet_1_end", (ramp_x[0] - 0.2, south[0], H), (ramp_x[0], south[1], H + 1.0), texture="concrete")
    # level 2 around the north hole (open at the ramp's top, west)
    s.box("parapet_2_side", (ramp_x[0], north[0] - 0.2, 2 * H), (ramp_x[1], north[0], 2 * H + 1.0), texture="concrete")
    s.box("parapet_2_end", (ramp_x[1], north[0], 2 * H), (ramp_x[1] + 0.2, north[1], 2 * H + 1.0), texture="concrete")
    for level in range(3):
        for x in (5.0, 15.0, 25.0):
            for y in (8.0, 12.0):
                s.box(f"pillar_{level}_{int(x)}_{int(y)}", (x, y, level * H), (x + 0.5, y + 0.5, (level + 1) * H - T),
                      texture="concrete")
    s.box("car_ground", (2.0, 13.0, 0.0), (6.5, 14.8, 1.5), Contents.DETAIL, texture="car")
    s.box("car_level_1", (24.0, 13.5, H), (28.5, 15.3, H + 1.5), Contents.DETAIL, texture="car")
    for level in range(3):
        s.light(f"light_level_{level}", (15.0, 10.0, level * H + 2.5), (1.0, 1.0, 0.9), 400)
    s.player_start(3.0, 6.0, 0.0)
    s.marker("inside_level_2", "inside", (15.0, 6.0, 2 * H + 1.0))
    return s.scene


def cornell_box() -> Scene:
    """The Cornell box at 10x scale: a 5.5 m cube room, red left wall, green right wall, white
    floor, ceiling, back and front (the front is closed to seal it; the camera is outside), a
    short block (1.65 m) turned -17 degrees and a tall block (3.3 m) turned +17 degrees, and a
    warm light under the ceiling over a non-solid light panel."""
    s = Builder("cornell_box")
    L = 5.5
    s.room("box", (0.0, 0.0, 0.0), (L, L, L),
           textures={"floor": "white", "ceiling": "white", "-x": "red", "+x": "green", "-y": "white", "+y": "white"})
    s.turned_box("short_block", (3.7, 1.85), (1.65, 1.65), 0.0, 1.65, -17.0, texture="white")
    s.turned_box("tall_block", (1.85, 3.6), (1.65, 1.65), 0.0, 3.3, 17.0, texture="white")
    s.box("light_panel", (2.2, 2.2, L - 0.05), (3.3, 3.3, L), Contents.NONSOLID, texture="light")
    s.light("ceiling_light", (L / 2, L / 2, L - 0.2), (1.0, 0.85, 0.6), 600)
    s.player_start(1.0, 1.0, 0.0, angle=90.0)
    return s.scene


SAMPLES = {
    "two_rooms.json": two_rooms,
    "low_tunnel.json": low_tunnel,
    "staircase.json": staircase,
    "garage.json": garage,
    "cornell_box.json": cornell_box,
}


# --------------------------------------------------------------------------------------------
# Quake .map output


def _quake_number(value: float) -> str:
    units = value / UNIT
    if abs(units - round(units)) < 1e-6:
        return str(int(round(units)))
    return f"{units:.6f}".rstrip("0").rstrip(".")


def _face_points(face: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three corners of a face polygon (counter-clockwise from outside) spanning the largest
    triangle, returned clockwise seen from outside, as Quake's .map format wants them."""
    best, pick = -1.0, (0, 1, 2)
    k = len(face)
    for j in range(1, k - 1):
        for m in range(j + 1, k):
            area = float(np.linalg.norm(np.cross(face[j] - face[0], face[m] - face[0])))
            if area > best + 1e-12:
                best, pick = area, (0, j, m)
    a, b, c = (face[i] for i in pick)
    return a, c, b


def _map_brush(brush: Brush) -> list[str]:
    lines = ["{"]
    for i, face in enumerate(brush.faces):
        texture = brush.textures[i] if i < len(brush.textures) and brush.textures[i] else "wall"
        pts = " ".join("( " + " ".join(_quake_number(c) for c in p) + " )" for p in _face_points(face))
        lines.append(f"{pts} {texture} 0 0 0 1 1")
    lines.append("}")
    return lines


def _kv(key: str, value: str) -> str:
    return f'"{key}" "{value}"'


def map_text(scene: Scene) -> str:
    """A Quake (standard format) .map of the scene at 32 units per metre: structural and clip
    brushes in worldspawn (clip brushes textured 'clip'), detail brushes in func_detail,
    non-solid brushes in func_illusionary, lights as 'light' entities, markers as
    info_<kind> entities.  Hulls and detail meshes have no place in a .map and are left out."""
    out = ["// Game: Quake", "// Format: Standard",
           f"// Written by brushbake sample_scenes/make_samples.py from the scene '{scene.name}'.",
           "// 32 units per metre; read it with load_map(path, scale=1/32).",
           "// entity 0", "{", _kv("classname", "worldspawn"), _kv("message", scene.name)]
    groups: dict[str, list[Brush]] = {"worldspawn": [], "func_detail": [], "func_illusionary": []}
    for b in scene.brushes:
        key = {Contents.DETAIL: "func_detail", Contents.NONSOLID: "func_illusionary"}.get(b.contents, "worldspawn")
        if b.contents == Contents.CLIP:
            b = Brush(b.name, b.contents, b.normals, b.dists, b.faces, ["clip"] * len(b.faces), b.entity)
        groups[key].append(b)
    count = 0
    for b in groups["worldspawn"]:
        out.append(f"// brush {count}: {b.name}")
        out.extend(_map_brush(b))
        count += 1
    out.append("}")
    entity = 1
    for classname in ("func_detail", "func_illusionary"):
        for b in groups[classname]:
            out += [f"// entity {entity}", "{", _kv("classname", classname), f"// brush 0: {b.name}"]
            out.extend(_map_brush(b))
            out.append("}")
            entity += 1

    def origin(p):
        return " ".join(_quake_number(c) for c in p)

    for li in scene.lights:
        color = " ".join(f"{c:g}" for c in li.color)
        out += [f"// entity {entity}", "{", _kv("classname", "light"), _kv("origin", origin(li.position)),
                _kv("light", f"{li.intensity:g}"), _kv("_color", color), _kv("targetname", li.name), "}"]
        entity += 1
    for mk in scene.markers:
        classname = mk.kind if mk.kind.startswith("info_") else f"info_{mk.kind}"
        out += [f"// entity {entity}", "{", _kv("classname", classname), _kv("origin", origin(mk.position)),
                _kv("angle", f"{mk.angle:g}"), _kv("targetname", mk.name), "}"]
        entity += 1
    return "\n".join(out) + "\n"


MAP_SAMPLES = {"two_rooms.map": two_rooms}


def outputs() -> dict[str, bytes]:
    """File name -> exact bytes of every sample file this script writes."""
    files = {name: dumps_scene(build()).encode("ascii") for name, build in SAMPLES.items()}
    files.update({name: map_text(build()).encode("ascii") for name, build in MAP_SAMPLES.items()})
    return files


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    folder = Path(argv[0]) if argv else HERE
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in outputs().items():
        tmp = folder / f".{name}.tmp"
        tmp.write_bytes(data)
        tmp.replace(folder / name)
        print(f"wrote {folder / name} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
