"""Procedural worlds of a chosen size, as Quake .map text (so ericw-tools reads the same file).

Three layouts, each sealed, with an info_player_start and a light in every room or building:
- 'slab':    rooms on a grid, walls with offset doorways, crates and turned posts; ONE floor brush
             and ONE ceiling brush span the whole world (the case that made CSG quadratic).
- 'tiled':   the same rooms, with a floor and a ceiling brush per room.
- 'terrain': a height field of small sloped brushes (two triangular prisms a cell) with hollow
             buildings on it, under a sky ceiling inside four boundary walls.
The brush count is hit exactly (filler crates or rocks make up the rest), so sizes are comparable
between layouts.  Everything is integer arithmetic and Python's seeded Mersenne Twister: the same
(layout, brushes, seed) gives the same bytes on any machine.  Units are Quake units (32 a metre).

    python bench/worlds.py slab 5000 [--seed 0] [-o world.map]
"""

from __future__ import annotations

import argparse
import math
import random
import sys

LAYOUTS = ("slab", "tiled", "terrain")

ROOM = 256      # room pitch on the grid (wall centre to wall centre)
HEIGHT = 128    # floor to ceiling
WALL = 16       # wall, floor and ceiling thickness
DOOR_W, DOOR_H = 64, 96
CELL = 128      # terrain cell
BLOCK = 6       # terrain cells per building site (a side)


class _Writer:
    """Collects brushes (as plane triples) and point entities, and writes the .map text."""

    def __init__(self, title: str):
        self.title = title
        self.brushes: list[list[tuple]] = []
        self.points: list[dict] = []

    def box(self, lo, hi, texture="wall"):
        (x0, y0, z0), (x1, y1, z1) = lo, hi
        assert x0 < x1 and y0 < y1 and z0 < z1, (lo, hi)
        self.brushes.append([  # each (p0, p1, p2): (p0 - p1) x (p2 - p1) points out of the brush
            ((x1, y1, z0), (x1, y0, z0), (x1, y0, z1), texture), ((x0, y0, z0), (x0, y1, z0), (x0, y0, z1), texture),
            ((x0, y1, z0), (x1, y1, z0), (x0, y1, z1), texture), ((x1, y0, z0), (x0, y0, z0), (x1, y0, z1), texture),
            ((x0, y1, z1), (x1, y1, z1), (x0, y0, z1), texture), ((x1, y1, z0), (x0, y1, z0), (x1, y0, z0), texture),
        ])

    def convex(self, triples, inside, texture="wall"):
        """A brush from planes given by three integer points each, turned to face away from
        `inside` (an integer point strictly inside the brush)."""
        faces = []
        for p0, p1, p2 in triples:
            n = _cross(_sub(p0, p1), _sub(p2, p1))
            if _dot(n, _sub(inside, p1)) > 0:
                p0, p2 = p2, p0
            faces.append((p0, p1, p2, texture))
        self.brushes.append(faces)

    def prism(self, top, z0, texture="ground"):
        """A vertical prism under the triangle `top` ((x, y, z) integer corners) down to z0."""
        a, b, c = top
        inside_xy = (sum(p[0] for p in top), sum(p[1] for p in top))  # 3x the centroid
        inside = (inside_xy[0], inside_xy[1], 3 * z0 + 1)  # scaled by 3 below
        planes = [(a, b, c), ((0, 0, z0), (1, 0, z0), (0, 1, z0))]
        for p, q in ((a, b), (b, c), (c, a)):
            planes.append((p, q, (p[0], p[1], z0)))
        scaled = [tuple(tuple(3 * v for v in pt) for pt in tri) for tri in planes]
        faces = []
        for (p0, p1, p2), (s0, s1, s2) in zip(planes, scaled):
            n = _cross(_sub(s0, s1), _sub(s2, s1))
            if _dot(n, _sub(inside, s1)) > 0:
                p0, p2 = p2, p0
            faces.append((p0, p1, p2, texture))
        self.brushes.append(faces)

    def point(self, classname, origin, **keys):
        self.points.append({"classname": classname, "origin": " ".join(str(v) for v in origin), **keys})

    def text(self) -> str:
        out = ["// Game: Quake", "// Format: Standard", f"// {self.title}",
               f"// {len(self.brushes)} brushes; written by brushbake bench/worlds.py", "{",
               '"classname" "worldspawn"', '"wad" "brushbake.wad"']
        for i, faces in enumerate(self.brushes):
            out.append(f"// brush {i}")
            out.append("{")
            for p0, p1, p2, tex in faces:
                pts = " ".join("( " + " ".join(str(v) for v in p) + " )" for p in (p0, p1, p2))
                out.append(f"{pts} {tex} 0 0 0 1 1")
            out.append("}")
        out.append("}")
        for ent in self.points:
            out.append("{")
            out.extend(f'"{k}" "{v}"' for k, v in ent.items())
            out.append("}")
        return "\n".join(out) + "\n"


def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


# ---------------------------------------------------------------------------------------------- rooms


def _room_base(nx: int, ny: int, tiled: bool) -> int:
    """Brushes of an nx x ny room grid before filler: inner walls with doors (3 brushes each), outer
    walls (1 a room side), one crate a room, the floor and ceiling (2, or 2 a room when tiled)."""
    inner = 3 * ((nx - 1) * ny + (ny - 1) * nx)
    outer = 2 * (nx + ny)
    return inner + outer + nx * ny + (2 * nx * ny if tiled else 2)


def _room_grid(brushes: int, tiled: bool) -> tuple[int, int]:
    nx = max(1, math.isqrt(max(1, brushes // (10 if tiled else 8))))
    ny = nx
    while ny > 1 and _room_base(nx, ny, tiled) > brushes:
        ny -= 1
    while _room_base(nx, ny + 1, tiled) <= brushes:
        ny += 1
    return nx, ny


def _rooms(w: _Writer, brushes: int, seed: int, tiled: bool) -> None:
    nx, ny = _room_grid(brushes, tiled)
    if _room_base(nx, ny, tiled) > brushes:
        raise ValueError(f"{brushes} brushes are too few for one room (need {_room_base(1, 1, tiled)})")
    rng = random.Random(seed)
    h, t = HEIGHT, WALL // 2
    X, Y = nx * ROOM, ny * ROOM
    if not tiled:
        w.box((-t, -t, -WALL), (X + t, Y + t, 0), "floor")
        w.box((-t, -t, h), (X + t, Y + t, h + WALL), "ceiling")
    for j in range(ny):
        for i in range(nx):
            x0, y0 = i * ROOM, j * ROOM
            if tiled:  # a room's tiles reach under the walls' halves (the outer walls wholly)
                lo = (x0 - (t if i == 0 else 0), y0 - (t if j == 0 else 0))
                hi = (x0 + ROOM + (t if i == nx - 1 else 0), y0 + ROOM + (t if j == ny - 1 else 0))
                w.box((lo[0], lo[1], -WALL), (hi[0], hi[1], 0), "floor")
                w.box((lo[0], lo[1], h), (hi[0], hi[1], h + WALL), "ceiling")
            if i == 0:
                w.box((-t, y0 - t, 0), (t, y0 + ROOM + t, h))
            if j == 0:
                w.box((x0 - t, -t, 0), (x0 + ROOM + t, t, h))
            _wall(w, rng, "x", x0 + ROOM, y0, door=i < nx - 1)
            _wall(w, rng, "y", y0 + ROOM, x0, door=j < ny - 1)
    rooms = [(i, j) for j in range(ny) for i in range(nx)]
    filler = brushes - len(w.brushes) - len(rooms)
    for k, (i, j) in enumerate(rooms):  # one crate a room, filler spread round the rooms
        for _ in range(1 + filler // len(rooms) + (1 if k < filler % len(rooms) else 0)):
            _furniture(w, rng, i * ROOM, j * ROOM)
    for i, j in rooms:
        w.point("light", (i * ROOM + 32, j * ROOM + 32, h - 24), light="300")  # clear of the furniture
    w.point("info_player_start", (32, 32, 24), angle="0")


def _wall(w: _Writer, rng: random.Random, axis: str, at: int, start: int, door: bool) -> None:
    """The wall on the line `axis` = at along one room (from start to start + ROOM): one brush
    on the world's edge, else three round a doorway at a seeded place (so doors do not line up)."""
    t, h = WALL // 2, HEIGHT

    def box(a0, a1, z0, z1):
        if axis == "x":
            w.box((at - t, a0, z0), (at + t, a1, z1))
        else:
            w.box((a0, at - t, z0), (a1, at + t, z1))

    a0, a1 = start - t, start + ROOM + t
    if not door:
        box(a0, a1, 0, h)
        return
    d0 = start + t + 16 + rng.randrange(0, ROOM - WALL - 32 - DOOR_W + 1, 8)
    box(a0, d0, 0, h)
    box(d0 + DOOR_W, a1, 0, h)
    box(d0, d0 + DOOR_W, DOOR_H, h)


def _furniture(w: _Writer, rng: random.Random, x0: int, y0: int) -> None:
    """A crate (box) or a post turned 45 degrees (non-axial planes) in the room's middle, clear of
    the corner that holds the light and the player start."""
    cx = x0 + rng.randrange(ROOM // 4 + 16, 3 * ROOM // 4, 4)
    cy = y0 + rng.randrange(ROOM // 4 + 16, 3 * ROOM // 4, 4)
    r = rng.choice((8, 12, 16, 24))
    top = rng.choice((16, 32, 48, 64, HEIGHT))
    if rng.random() < 0.7:
        w.box((cx - r, cy - r, 0), (cx + r, cy + r, top), "crate")
        return
    ring = [(cx + r, cy, 0), (cx, cy + r, 0), (cx - r, cy, 0), (cx, cy - r, 0)]
    sides = [(p, q, (p[0], p[1], top)) for p, q in zip(ring, ring[1:] + ring[:1])]
    w.convex(sides + [((0, 0, 0), (1, 0, 0), (0, 1, 0)), ((0, 0, top), (1, 0, top), (0, 1, top))],
             (cx, cy, 1), "post")


# ---------------------------------------------------------------------------------------------- terrain


def _heights(gx: int, gy: int, rng: random.Random) -> list[list[int]]:
    """Heights at the (gx + 1) x (gy + 1) cell corners: seeded values on a lattice every 4 cells,
    interpolated bilinearly in integers and rounded down to 8 units (0..120)."""
    lx, ly = gx // 4 + 2, gy // 4 + 2
    lattice = [[rng.randrange(0, 121, 8) for _ in range(lx)] for _ in range(ly)]
    out = []
    for j in range(gy + 1):
        row = []
        for i in range(gx + 1):
            a, fa = divmod(i, 4)
            b, fb = divmod(j, 4)
            v = ((4 - fa) * (4 - fb) * lattice[b][a] + fa * (4 - fb) * lattice[b][a + 1]
                 + (4 - fa) * fb * lattice[b + 1][a] + fa * fb * lattice[b + 1][a + 1])
            row.append((v // 16) // 8 * 8)
        out.append(row)
    return out


def _terrain(w: _Writer, brushes: int, seed: int) -> None:
    per_block = 2 * BLOCK * BLOCK + 7  # prisms and one building
    k = max(1, math.isqrt(max(1, (brushes - 5) // per_block)))
    gx = gy = k * BLOCK
    while gy > 1 and 2 * gx * gy + 7 * (gx // BLOCK) * (gy // BLOCK) + 5 > brushes:
        gy -= 1
    if 2 * gx * gy + 5 > brushes:
        raise ValueError(f"{brushes} brushes are too few for a terrain (need {2 * gx + 5} at least)")
    rng = random.Random(seed)
    hts = _heights(gx, gy, rng)
    base, t = -64, WALL
    X, Y = gx * CELL, gy * CELL
    sky = 120 + HEIGHT + 256
    w.box((-t, -t, base - t), (0, Y + t, sky), "edge")
    w.box((X, -t, base - t), (X + t, Y + t, sky), "edge")
    w.box((0, -t, base - t), (X, 0, sky), "edge")
    w.box((0, Y, base - t), (X, Y + t, sky), "edge")
    w.box((-t, -t, sky), (X + t, Y + t, sky + t), "sky")
    for j in range(gy):
        for i in range(gx):
            c = [(x * CELL, y * CELL, hts[y][x]) for x, y in ((i, j), (i + 1, j), (i + 1, j + 1), (i, j + 1))]
            tri = ((c[0], c[1], c[2]), (c[0], c[2], c[3])) if (i + j) % 2 else ((c[0], c[1], c[3]), (c[1], c[2], c[3]))
            for top in tri:
                w.prism(top, base)
    sites = [(bi, bj) for bj in range(gy // BLOCK) for bi in range(gx // BLOCK)]
    for bi, bj in sites:
        _building(w, rng, hts, bi * BLOCK, bj * BLOCK, base)
    filler = brushes - len(w.brushes)
    for k in range(filler):  # rocks half sunk in the ground, spread over the field
        i, j = rng.randrange(gx), rng.randrange(gy)
        x, y = i * CELL + rng.randrange(16, CELL - 16, 4), j * CELL + rng.randrange(16, CELL - 16, 4)
        top = max(hts[j][i], hts[j][i + 1], hts[j + 1][i], hts[j + 1][i + 1]) + 16
        w.box((x - 12, y - 12, base), (x + 12, y + 12, top), "rock")
    for bi, bj in sites:
        cx, cy = (bi * BLOCK + 1) * CELL, (bj * BLOCK + 1) * CELL
        w.point("light", (cx, cy, max(hts[bj * BLOCK + 1][bi * BLOCK + 1], 0) + 96), light="300")
        ox, oy = (bi * BLOCK + 4) * CELL + CELL // 2, (bj * BLOCK + 4) * CELL + CELL // 2
        w.point("light", (ox, oy, 120 + 64), light="300")
    w.point("info_player_start", (CELL // 2 + (BLOCK - 2) * CELL, CELL // 2, 120 + 40), angle="0")


def _building(w: _Writer, rng: random.Random, hts, ci: int, cj: int, base: int) -> None:
    """A hollow 2 x 2-cell building in the site's corner cells (ci+0..2): four walls standing in the
    ground (one with a door), a roof; 7 brushes."""
    x0, y0, x1, y1 = ci * CELL + 16, cj * CELL + 16, (ci + 2) * CELL - 16, (cj + 2) * CELL - 16
    ground = max(hts[j][i] for j in range(cj, cj + 3) for i in range(ci, ci + 3))
    top = ground + HEIGHT
    t = WALL
    w.box((x0, y0, base), (x0 + t, y1, top))
    w.box((x1 - t, y0, base), (x1, y1, top))
    w.box((x0 + t, y1 - t, base), (x1 - t, y1, top))
    d0 = x0 + t + 16 + rng.randrange(0, x1 - x0 - 2 * t - 32 - DOOR_W + 1, 8)
    w.box((x0 + t, y0, base), (d0, y0 + t, top))
    w.box((d0 + DOOR_W, y0, base), (x1 - t, y0 + t, top))
    w.box((d0, y0, ground + DOOR_H), (d0 + DOOR_W, y0 + t, top))
    w.box((x0, y0, top), (x1, y1, top + t), "roof")


# ---------------------------------------------------------------------------------------------- entry


def make_world(layout: str, brushes: int, seed: int = 0) -> str:
    """The .map text of a `layout` world of exactly `brushes` brushes (ValueError when too few for
    one room or terrain row, or an unknown layout)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}: use one of {', '.join(LAYOUTS)}")
    w = _Writer(f"brushbake world: layout {layout}, {brushes} brushes, seed {seed}")
    if layout == "terrain":
        _terrain(w, brushes, seed)
    else:
        _rooms(w, brushes, seed, tiled=layout == "tiled")
    assert len(w.brushes) == brushes, (len(w.brushes), brushes)
    return w.text()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("layout", choices=LAYOUTS)
    ap.add_argument("brushes", type=int)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", help="file to write (default: stdout)")
    args = ap.parse_args(argv)
    text = make_world(args.layout, args.brushes, args.seed)
    if args.output:
        with open(args.output, "w", encoding="ascii", newline="\n") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
