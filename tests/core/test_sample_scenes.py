"""The sample scenes: reproducible, loadable, sealed, sized for a human, and each doing its job."""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest

from brushbake.core.model.brushes import Brush, Contents
from brushbake.core.model.scene import Scene
from brushbake.core.formats.scene_json import load_scene_json

SAMPLES = Path(__file__).resolve().parents[2] / "sample_scenes"
JSON_SAMPLES = ["two_rooms.json", "low_tunnel.json", "staircase.json", "garage.json", "cornell_box.json"]

STAND_HEIGHT = 1.75
CROUCH_HEIGHT = 1.25
HULL_WIDTH = 30 / 32
STEP_HEIGHT = 18 / 32


def _make_samples():
    spec = importlib.util.spec_from_file_location("make_samples", SAMPLES / "make_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_samples = _make_samples()


@pytest.fixture(scope="module", params=JSON_SAMPLES)
def sample(request) -> Scene:
    return load_scene_json(SAMPLES / request.param)


def load(name: str) -> Scene:
    return load_scene_json(SAMPLES / name)


# --------------------------------------------------------------------------------------------
# Tiny brute-force geometry, independent of the compiler


def ray_hit(brush: Brush, origin, direction, max_t: float = 1.0e4) -> float | None:
    """Distance along a unit direction to where the ray enters the convex brush (slab test)."""
    origin, direction = np.asarray(origin, float), np.asarray(direction, float)
    t0, t1 = 0.0, max_t
    for n, d in zip(brush.normals, brush.dists):
        denom = float(n @ direction)
        dist = float(n @ origin - d)
        if abs(denom) < 1e-12:
            if dist > 0:
                return None
            continue
        t = -dist / denom
        if denom < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return None
    return t0


def first_hit(brushes, origin, direction) -> tuple[float, Brush] | None:
    hits = [(t, b) for b in brushes if (t := ray_hit(b, origin, direction)) is not None]
    return min(hits, key=lambda h: h[0]) if hits else None


def box_overlaps_brush(brush: Brush, mins, maxs, margin: float = 1e-6) -> bool:
    """Separating-axis test on the brush's face normals and the three axes (conservative: may
    call an edge-separated pair overlapping, never the reverse)."""
    mins, maxs = np.asarray(mins, float), np.asarray(maxs, float)
    center, half = (mins + maxs) / 2, (maxs - mins) / 2
    verts = brush.vertices
    for n in list(brush.normals) + list(np.eye(3)):
        c, r = float(n @ center), float(np.abs(n) @ half)
        p = verts @ n
        if p.max() <= c - r + margin or p.min() >= c + r - margin:
            return False
    return True


def directions() -> np.ndarray:
    """The 26 grid directions plus 200 spread over the sphere (Fibonacci)."""
    grid = [np.array(v, float) for v in np.ndindex(3, 3, 3) if v != (1, 1, 1)]
    grid = [(v - 1) / np.linalg.norm(v - 1) for v in grid]
    k = np.arange(200) + 0.5
    z = 1 - 2 * k / 200
    phi = math.pi * (1 + 5**0.5) * k
    fib = np.stack([np.sqrt(1 - z * z) * np.cos(phi), np.sqrt(1 - z * z) * np.sin(phi), z], axis=1)
    return np.vstack([grid, fib])


def collidable(scene: Scene) -> list[Brush]:
    return scene.brushes_with(Contents.SOLID, Contents.DETAIL, Contents.CLIP)


def marker(scene: Scene, name: str):
    return next(m for m in scene.markers if m.name == name)


def brush(scene: Scene, name: str) -> Brush:
    return next(b for b in scene.brushes if b.name == name)


def top(b: Brush) -> float:
    return float(b.bounds[1, 2])


# --------------------------------------------------------------------------------------------
# Every sample


def test_samples_are_reproducible():
    """The committed files are exactly what make_samples.py writes now."""
    outputs = make_samples.outputs()
    assert sorted(outputs) == sorted(JSON_SAMPLES + ["two_rooms.map"])
    for name, data in outputs.items():
        assert (SAMPLES / name).read_bytes() == data, f"{name} is stale: run python sample_scenes/make_samples.py"
    assert make_samples.DEFAULT_SAMPLE == "two_rooms.json"


def test_sample_loads_and_saves_back_identically(sample, tmp_path):
    from brushbake.core.formats.scene_json import save_scene_json

    save_scene_json(sample, tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == (SAMPLES / f"{sample.name}.json").read_bytes()
    assert sample.brushes and not sample.warnings


def test_standard_hulls(sample):
    hulls = {h.name: h for h in sample.hulls}
    assert list(hulls) == ["stand", "crouch"]
    assert hulls["stand"].mins == pytest.approx((-0.46875, -0.46875, -0.75))
    assert hulls["stand"].maxs == pytest.approx((0.46875, 0.46875, 1.0))
    assert hulls["crouch"].mins == pytest.approx((-0.46875, -0.46875, -0.75))
    assert hulls["crouch"].maxs == pytest.approx((0.46875, 0.46875, 0.5))


def test_player_start_is_free(sample):
    starts = [m for m in sample.markers if m.kind == "player_start"]
    assert len(starts) == 1
    p = np.array(starts[0].position)
    for b in sample.brushes:
        assert not b.contains(p)[0], f"player start inside {b.name}"
    stand = sample.hulls[0]
    for b in collidable(sample):
        assert not box_overlaps_brush(b, p + stand.mins, p + stand.maxs), f"standing player overlaps {b.name}"
    # standing on a floor: straight down, the first thing hit is 0.75 m (plus a unit of air) below
    t, floor = first_hit(collidable(sample), p, [0, 0, -1])
    assert t == pytest.approx(0.75 + 1 / 32)


def test_sealed(sample):
    """From the player start and every 'inside' marker, every ray meets a structural brush."""
    solids = sample.brushes_with(Contents.SOLID)
    points = [m for m in sample.markers if m.kind in ("player_start", "inside")]
    assert points
    for m in points:
        for b in sample.brushes:
            assert not b.contains(m.position)[0], f"{m.name} inside {b.name}"
        for d in directions():
            assert first_hit(solids, m.position, d) is not None, f"{sample.name}: ray from {m.name} along {d} escapes"


def test_human_sized_and_near_the_origin(sample):
    lo, hi = sample.bounds
    size = hi - lo
    assert np.all(size >= 4.0) and np.all(size < 60.0)
    for b in sample.brushes:
        assert b.volume > 1e-4, b.name
    for li in sample.lights:
        assert all(c >= 0 for c in li.color) and li.intensity > 0
        assert not any(b.contains(li.position)[0] for b in collidable(sample)), li.name


def test_lights_and_markers_inside_the_shell(sample):
    solids = sample.brushes_with(Contents.SOLID)
    for thing in list(sample.lights) + list(sample.markers):
        for d in np.vstack([np.eye(3), -np.eye(3)]):
            assert first_hit(solids, thing.position, d) is not None, thing.name


# --------------------------------------------------------------------------------------------
# Each sample's job


def test_two_rooms_has_every_kind_of_brush():
    s = load("two_rooms.json")
    kinds = {b.contents for b in s.brushes}
    assert kinds == {Contents.SOLID, Contents.DETAIL, Contents.CLIP}
    ramp = brush(s, "ramp")
    axial = [np.count_nonzero(n) == 1 for n in ramp.normals]
    assert not all(axial)
    slope = ramp.normals[~np.array(axial)][0]
    assert slope[2] >= 0.7  # walkable
    assert brush(s, "pillar").contents == Contents.DETAIL
    assert s.detail_meshes and len(s.lights) >= 2


def test_two_rooms_rooms_are_connected():
    """A ray from room A through the corridor reaches room B's far wall (the doorways line up)."""
    s = load("two_rooms.json")
    t, b = first_hit(collidable(s), (2.0, 3.5, 0.5), [1, 0, 0])
    assert b.name == "platform" and t == pytest.approx(18.0)
    t, b = first_hit(collidable(s), (2.0, 3.5, 2.75), [1, 0, 0])
    assert b.name == "room_b_wall+x" and t == pytest.approx(22.0)


def test_low_tunnel_fits_only_crouching():
    s = load("low_tunnel.json")
    mid = np.array(marker(s, "tunnel_middle").position)
    solids = collidable(s)
    up, _ = first_hit(solids, mid, [0, 0, 1])
    down, _ = first_hit(solids, mid, [0, 0, -1])
    left, _ = first_hit(solids, mid, [0, 1, 0])
    right, _ = first_hit(solids, mid, [0, -1, 0])
    height, width = up + down, left + right
    assert height == pytest.approx(1.5)
    assert CROUCH_HEIGHT < height < STAND_HEIGHT
    assert width == pytest.approx(1.2) and width > HULL_WIDTH
    stand, crouch = s.hulls
    feet = mid - [0, 0, down]
    center = feet - [0, 0, stand.mins[2]] + [0, 0, 1 / 32]
    tunnel = [b for b in solids if b.name.startswith("tunnel")]
    assert any(box_overlaps_brush(b, center + stand.mins, center + stand.maxs) for b in tunnel)
    assert not any(box_overlaps_brush(b, center + crouch.mins, center + crouch.maxs) for b in solids)


def test_staircase_steps_and_ledge():
    s = load("staircase.json")
    steps = sorted((b for b in s.brushes if b.name.startswith("step_")), key=top)
    assert len(steps) == 8
    heights = [0.0] + [top(b) for b in steps]
    risers = np.diff(heights)
    assert np.allclose(risers, 0.25) and risers.max() <= STEP_HEIGHT
    treads = np.diff([b.bounds[0, 0] for b in steps])
    assert np.all(treads > HULL_WIDTH / 4)
    landing = brush(s, "landing")
    assert top(landing) == pytest.approx(top(steps[-1]))
    assert landing.bounds[0, 0] == pytest.approx(steps[-1].bounds[1, 0])
    ledge = brush(s, "ledge")
    assert top(ledge) == pytest.approx(0.8) and top(ledge) > STEP_HEIGHT
    # the ledge stands right beside the stairs
    assert ledge.bounds[0, 1] == pytest.approx(steps[0].bounds[1, 1])


def test_garage_levels_ramps_and_openings():
    s = load("garage.json")
    solids = collidable(s)
    # three floors, 3 m apart, under a point away from the ramps: drop from under each ceiling
    floors = [z - first_hit(solids, [15.0, 10.0, z], [0, 0, -1])[0] for z in (8.5, 5.5, 2.5)]
    assert floors == pytest.approx([6.0, 3.0, 0.0])
    ceilings = [z + first_hit(solids, [15.0, 10.0, z], [0, 0, 1])[0] for z in (0.5, 3.5, 6.5)]
    assert ceilings == pytest.approx([2.75, 5.75, 8.75])
    ramps = [b for b in s.brushes if b.name.startswith("ramp")]
    assert len(ramps) == 2
    for ramp in ramps:
        slope = [n for n in ramp.normals if np.count_nonzero(np.abs(n) > 1e-12) > 1]
        assert len(slope) == 1 and 0.7 <= slope[0][2] < 1.0
        lo, hi = ramp.bounds
        assert hi[2] - lo[2] == pytest.approx(3.0)
        # headroom above the middle of the ramp: the slab above has an opening
        mid = (lo + hi) / 2
        surface = first_hit(solids, [mid[0], mid[1], hi[2] + 0.5], [0, 0, -1])
        stand_on = hi[2] + 0.5 - surface[0]
        up = first_hit(solids, [mid[0], mid[1], stand_on + 0.01], [0, 0, 1])
        assert up[0] > STAND_HEIGHT, ramp.name
    pillars = [b for b in s.brushes if b.name.startswith("pillar")]
    assert len(pillars) >= 6 * 3 and all(b.contents == Contents.SOLID for b in pillars)
    slabs = [b for b in s.brushes if b.name.startswith("slab")]
    assert len(slabs) >= 6


def test_cornell_box():
    s = load("cornell_box.json")
    interior = [b for b in s.brushes if b.name.startswith("box_")]
    walls = {b.name for b in interior}
    assert {"box_floor", "box_ceiling", "box_wall-x", "box_wall+x", "box_wall-y", "box_wall+y"} <= walls
    textures = {b.name: set(b.textures) for b in interior}
    assert textures["box_wall-x"] == {"red"} and textures["box_wall+x"] == {"green"}
    center = np.array([2.75, 2.75, 2.75])
    extents = [first_hit(interior, center, d)[0] for d in np.vstack([np.eye(3), -np.eye(3)])]
    assert np.allclose(np.array(extents[:3]) + extents[3:], 5.5)
    blocks = [brush(s, "short_block"), brush(s, "tall_block")]
    assert top(blocks[1]) == pytest.approx(2 * top(blocks[0]))
    for b in blocks:
        assert any(np.count_nonzero(np.abs(n) > 1e-12) > 1 for n in b.normals)  # turned
    light = s.lights[0]
    assert light.position[2] > 5.0 and light.intensity > 0 and len(light.color) == 3
    assert max(light.color) <= 1.0 and min(light.color) > 0.0


# --------------------------------------------------------------------------------------------
# The .map version of two_rooms


def parse_map(text: str) -> list[dict]:
    """Just enough of the Quake .map format for the test: entities with keys and brushes of
    planes, the normal from three points as qbsp computes it, (p0 - p1) x (p2 - p1)."""
    text = re.sub(r"//[^\n]*", "", text)
    entities, depth, current, brush_planes = [], 0, None, None
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "{":
            depth += 1
            if depth == 1:
                current = {"keys": {}, "brushes": []}
            else:
                brush_planes = []
        elif line == "}":
            if depth == 2:
                current["brushes"].append(brush_planes)
            else:
                entities.append(current)
            depth -= 1
        elif depth == 1:
            key, value = re.match(r'"([^"]*)"\s+"([^"]*)"', line).groups()
            current["keys"][key] = value
        else:
            nums = re.findall(r"\(([^)]*)\)", line)
            p0, p1, p2 = (np.array([float(x) for x in n.split()]) for n in nums)
            n = np.cross(p0 - p1, p2 - p1)
            n = n / np.linalg.norm(n)
            texture = line.rsplit(")", 1)[1].split()[0]
            brush_planes.append((n, float(n @ p0), texture))
    return entities


def test_two_rooms_map_matches_the_json():
    scene = load("two_rooms.json")
    entities = parse_map((SAMPLES / "two_rooms.map").read_text())
    assert entities[0]["keys"]["classname"] == "worldspawn"
    by_class: dict[str, list] = {}
    for e in entities:
        for b in e["brushes"]:
            by_class.setdefault(e["keys"]["classname"], []).append(b)
    expected = {"worldspawn": scene.brushes_with(Contents.SOLID, Contents.CLIP),
                "func_detail": scene.brushes_with(Contents.DETAIL)}
    assert sorted(by_class) == sorted(expected)
    for classname, brushes in expected.items():
        assert len(by_class[classname]) == len(brushes)
        for b, planes in zip(brushes, by_class[classname]):
            assert len(planes) == len(b.normals), b.name
            for n, d in zip(b.normals, b.dists):
                assert any(np.allclose(n, m, atol=1e-12) and abs(d / (1 / 32) - e) < 1e-9 for m, e, _ in planes), b.name
            if b.contents == Contents.CLIP:
                assert {t for _, _, t in planes} == {"clip"}
    for e in entities[1:]:
        for word in e["keys"].get("origin", "").split():
            assert re.fullmatch(r"-?\d+", word), "origins are whole units"
    starts = [e for e in entities if e["keys"]["classname"] == "info_player_start"]
    assert len(starts) == 1
    origin = np.array([float(x) for x in starts[0]["keys"]["origin"].split()]) / 32
    assert np.allclose(origin, marker(scene, "player_start").position)
    assert sum(e["keys"]["classname"] == "light" for e in entities) == len(scene.lights)
    # every plane point is on the 1-unit grid
    for line in (SAMPLES / "two_rooms.map").read_text().splitlines():
        if line.startswith("//"):
            continue
        for group in re.findall(r"\(([^)]*)\)", line):
            assert all(re.fullmatch(r"-?\d+", w) for w in group.split()), line


def test_two_rooms_map_loads_with_the_map_loader():
    mapfile = pytest.importorskip("brushbake.core.formats.mapfile")
    from_map = mapfile.load_map(SAMPLES / "two_rooms.map", scale=1 / 32)
    from_json = load("two_rooms.json")
    for contents in (Contents.SOLID, Contents.DETAIL, Contents.CLIP):
        a, b = from_json.brushes_with(contents), from_map.brushes_with(contents)
        assert len(a) == len(b), contents
        key = lambda br: tuple(np.round(br.bounds, 6).ravel())  # noqa: E731
        for x, y in zip(sorted(a, key=key), sorted(b, key=key)):
            assert np.allclose(x.bounds, y.bounds, atol=1e-9)
            assert abs(x.volume - y.volume) < 1e-9
    # both loaders name kinds without the 'info_' prefix (player_start)
    starts = [m for m in from_map.markers if m.kind == "player_start"]
    assert len(starts) == 1
    assert np.allclose(starts[0].position, marker(from_json, "player_start").position)
    assert [(li.color, li.intensity) for li in from_map.lights] == [(li.color, li.intensity) for li in from_json.lights]
    assert not from_map.warnings and not from_map.movers
