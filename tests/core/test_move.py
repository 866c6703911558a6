"""Collide-and-slide for box hulls (core/move.py) against independent truths.

The truths never use the onion tree or the traces:
- positions read off the sample scenes' geometry (sample_scenes/make_samples.py): tunnel height,
  wall planes, step risers, the ramp's slope;
- a brute-force box-against-brush overlap test by separating axes (brush normals, the three box
  axes, and brush edge x box axis): a box overlaps a convex brush by more than BAND only if its
  projection overlaps the brush's by more than BAND on every one of those axes;
- the single-character functions for the batch ones.
"""

from __future__ import annotations

import math
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from brushbake.core.model.brushes import Contents, box_brush
from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.model.hulls import preset
from brushbake.core.runtime.move import (
    SURFACE_GAP,
    MoveSettings,
    ground_check,
    ground_check_batch,
    slide_move,
    slide_move_batch,
    step_slide_move,
    step_slide_move_batch,
)
from brushbake.core.runtime.query import point_solid
from brushbake.core.model.scene import Scene

SAMPLES = Path(__file__).resolve().parents[2] / "sample_scenes"


class _SampleCache:
    """Loaded and compiled sample scenes, when tests/conftest.py's session cache is not there."""

    def __init__(self):
        self._cache = {}

    def get(self, path):
        from types import SimpleNamespace

        from brushbake.core.compile.pipeline import compile_scene
        from brushbake.core.formats.loaders import load_scene

        if path not in self._cache:
            scene = load_scene(path)
            self._cache[path] = SimpleNamespace(path=path, scene=scene, level=compile_scene(scene))
        return self._cache[path]


_OWN_CACHE = _SampleCache()


@pytest.fixture
def scenes(request):
    """tests/conftest.py's session cache of compiled scenes (`levels`, shared with the other
    ground-truth tests) when present, else this module's own."""
    try:
        return request.getfixturevalue("levels")
    except pytest.FixtureLookupError:
        return _OWN_CACHE
BAND = 1e-4  # m: the brute force makes no claim about overlaps shallower than this

STAND, CROUCH = 1, 2  # hull indices in the sample scenes (level.hull_names = point, stand, crouch)
HALF = 15 / 32  # the Quake III box's half width (m)
FEET = 24 / 32  # reference point above the feet (m)
STEP = 18 / 32  # Quake III step height (m)


def sample(scenes, name):
    c = scenes.get(SAMPLES / f"{name}.json")
    assert c.level.hull_names == ["point", "stand", "crouch"]
    return c


def seed_of(text: str) -> int:
    return zlib.crc32(text.encode())


# --------------------------------------------------------------------------------------------
# Brute force: box against convex brushes by separating axes


class BoxTruth:
    """The colliding brushes of a scene for a box hull, with their separating axes."""

    def __init__(self, scene, mins, maxs):
        wanted = (Contents.SOLID, Contents.DETAIL, Contents.CLIP)
        self.mins, self.maxs = np.asarray(mins, float), np.asarray(maxs, float)
        self.brushes = []
        for b in scene.brushes:
            if b.contents not in wanted:
                continue
            verts = np.unique(np.concatenate(b.faces), axis=0)
            axes = [np.asarray(b.normals, float), np.eye(3)]
            for face in b.faces:
                edges = np.roll(face, -1, axis=0) - face
                for e in edges:
                    for k in range(3):
                        c = np.cross(e, np.eye(3)[k])
                        length = np.linalg.norm(c)
                        if length > 1e-9:
                            axes.append((c / length)[None])
            axes = np.concatenate(axes)
            axes = np.unique(np.round(axes, 12), axis=0)
            proj = verts @ axes.T
            self.brushes.append((b.name, axes, proj.min(axis=0), proj.max(axis=0), verts.min(axis=0), verts.max(axis=0)))

    def penetration(self, positions) -> tuple[np.ndarray, list]:
        """(depth (N,), names): the deepest overlap of each box with any brush (the smallest
        overlap over that brush's separating axes, negative when separated) and the brush."""
        p = np.asarray(positions, float).reshape(-1, 3)
        depth = np.full(len(p), -np.inf)
        names = [""] * len(p)
        centre = p + (self.mins + self.maxs) / 2
        half = (self.maxs - self.mins) / 2
        lo, hi = p + self.mins, p + self.maxs
        for name, axes, bmin, bmax, vlo, vhi in self.brushes:
            near = np.flatnonzero(np.all(lo <= vhi + 1e-3, axis=1) & np.all(hi >= vlo - 1e-3, axis=1))
            if not len(near):
                continue
            c = centre[near] @ axes.T
            r = np.abs(axes) @ half
            overlap = np.minimum(bmax, c + r) - np.maximum(bmin, c - r)
            d = overlap.min(axis=1)
            deeper = d > depth[near]
            depth[near[deeper]] = d[deeper]
            for i in near[deeper]:
                names[i] = name
        return depth, names


def assert_never_inside(level, hull, scene, positions, what):
    positions = np.asarray(positions, float).reshape(-1, 3)
    solid = point_solid(level, positions, hull)
    assert not solid.any(), f"{what}: {int(solid.sum())} end positions are solid for the hull, e.g. {positions[solid == 1][:3]}"
    mins, maxs = level.hull_boxes[hull]
    depth, names = BoxTruth(scene, mins, maxs).penetration(positions)
    bad = np.flatnonzero(depth > BAND)
    assert not len(bad), (f"{what}: {len(bad)} boxes overlap a brush by more than {BAND} m, e.g. "
                          + "; ".join(f"{positions[i].tolist()} in {names[i]} by {depth[i]:.2e}" for i in bad[:4]))
    return depth


# --------------------------------------------------------------------------------------------
# The brute force itself must be able to fail


def test_box_truth_sees_overlaps_and_gaps(scenes):
    c = sample(scenes, "low_tunnel")
    truth = BoxTruth(c.scene, *c.level.hull_boxes[STAND])
    floor_rest = [2.0, 3.0, FEET]
    depth, _ = truth.penetration([floor_rest, [2.0, 3.0, FEET - 0.01], [2.0, 3.0, FEET + 0.01],
                                  [6.0 - HALF + 0.02, 3.0, FEET + 0.5], [6.0 - HALF - 0.02, 3.0, FEET + 0.5]])
    assert abs(depth[0]) < 1e-12  # touching the floor
    assert depth[1] == pytest.approx(0.01)  # sunk 1 cm into it
    assert depth[2] < 0  # 1 cm above it, touching nothing
    assert depth[3] == pytest.approx(0.02)  # into the wall beside the tunnel mouth (the lintel above 1.5 m)
    assert depth[4] < 0


# --------------------------------------------------------------------------------------------
# The low tunnel: 1.5 m high; standing is 1.75 m, crouching 1.25 m


@pytest.mark.parametrize("dt,frames", [(1.0, 1), (1 / 30, 30)])
def test_crouch_passes_the_tunnel_and_stand_stops_at_its_mouth(scenes, dt, frames):
    c = sample(scenes, "low_tunnel")
    start = np.array([2.0, 3.0, FEET + SURFACE_GAP])
    velocity = np.array([11.0, 0.0, 0.0])  # to x = 13: room B (x 10.5 .. 16.5)
    ends = {}
    for hull in (STAND, CROUCH):
        p, g = start.copy(), None
        for _ in range(frames):  # the player holds 'forward': the same velocity every frame
            r = slide_move(c.level, hull, p, velocity, dt, ground_normal=g)
            p, g = r.position, r.ground_normal
            assert not r.start_solid and not r.reverted
        ends[hull] = (p, r)
    crouch, stand = ends[CROUCH], ends[STAND]
    assert crouch[0] == pytest.approx([13.0, 3.0, start[2]], abs=1e-9)
    assert crouch[1].on_ground and not crouch[1].blocked
    # the wall around the tunnel mouth is at x = 6; the lintel's underside at z = 1.5 is above the
    # crouch box (0.751 + 0.5) and below the standing one (0.751 + 1.0)
    # (within the overclip's bounce: (overclip - 1) * speed * dt back from the wall)
    mouth = 6.0 - HALF - SURFACE_GAP
    assert mouth - 0.001 * 11.0 * dt - 1e-9 <= stand[0][0] <= mouth + 1e-9
    assert stand[0][1:] == pytest.approx(start[1:], abs=1e-9)
    assert stand[1].blocked and stand[1].on_ground
    assert_never_inside(c.level, STAND, c.scene, [stand[0]], "stand at the tunnel")
    assert_never_inside(c.level, CROUCH, c.scene, [crouch[0]], "crouch through the tunnel")


def test_crouch_slides_along_the_tunnel_wall(scenes):
    """Drifting sideways inside the tunnel (1.2 m wide, y 2.4 .. 3.6): the box slides along the
    +y wall and keeps its speed along the tunnel."""
    c = sample(scenes, "low_tunnel")
    r = slide_move(c.level, CROUCH, [2.0, 3.0, FEET + SURFACE_GAP], [11.0, 0.3, 0.0], 1.0, ground_normal=(0, 0, 1))
    assert r.position[0] == pytest.approx(13.0, abs=1e-9)
    wall = 3.6 - HALF - SURFACE_GAP  # then drifting off it at the overclip's 0.0003 m/s at most 1 s
    assert wall - 0.0003 - 1e-9 <= r.position[1] <= wall + 1e-9
    assert r.velocity[0] == pytest.approx(11.0, abs=1e-12)
    assert -0.001 <= r.velocity[1] <= 0.0  # clipped, overclipped away from the wall
    assert r.clip_planes == 1 and r.blocked


# --------------------------------------------------------------------------------------------
# Sliding, corners, solid starts (two_rooms: room A is 0..8 x 0..8 x 0..4)


def test_a_move_along_a_wall_keeps_its_tangential_velocity(scenes):
    c = sample(scenes, "two_rooms")
    z = FEET + SURFACE_GAP
    r = slide_move(c.level, STAND, [1.0, 6.5, z], [3.0, 3.0, 0.0], 1.0, ground_normal=(0, 0, 1))
    assert r.position[0] == pytest.approx(4.0, abs=1e-9)  # all of the x motion
    wall = 8.0 - HALF - SURFACE_GAP  # stopped at the north wall (then the overclip's drift)
    assert wall - 0.003 - 1e-9 <= r.position[1] <= wall + 1e-9
    assert r.position[2] == pytest.approx(z, abs=1e-12)
    assert r.velocity[0] == 3.0
    assert r.velocity[1] == pytest.approx(-0.003)  # v.n * (overclip - 1), away from the wall
    assert r.clip_planes == 1 and r.blocked and r.on_ground


def test_a_move_into_a_corner_stops_in_it(scenes):
    c = sample(scenes, "two_rooms")
    z = FEET + SURFACE_GAP
    r = slide_move(c.level, STAND, [6.0, 6.5, z], [4.0, 3.0, 0.0], 1.0, ground_normal=(0, 0, 1))
    corner = 8.0 - HALF - SURFACE_GAP
    assert np.all(r.position[:2] <= corner + 1e-9) and np.all(r.position[:2] >= corner - 0.005)  # overclip drift
    assert np.abs(r.velocity).max() < 0.02
    assert r.clip_planes == 2 and r.blocked


def test_a_start_in_solid_does_not_move(scenes):
    c = sample(scenes, "two_rooms")
    inside_pillar = [4.0, 5.5, 1.5]
    assert point_solid(c.level, [inside_pillar], STAND)[0] == 1
    r = slide_move(c.level, STAND, inside_pillar, [1.0, 0.0, 0.0], 1.0)
    assert r.start_solid and r.position.tolist() == inside_pillar
    b = slide_move_batch(c.level, STAND, [inside_pillar], [[1.0, 0.0, 0.0]], 1.0)
    assert b.start_solid[0] and b.position[0].tolist() == inside_pillar


def test_clip_rails_stop_boxes_only(scenes):
    """two_rooms has clip rails (x 20 .. 20.125) on the platform's edge either side of the ramp:
    boxes stop at them; the platform is 1 m high, so a box walking along it at y = 2 meets the rail."""
    c = sample(scenes, "two_rooms")
    z = 1.0 + FEET + SURFACE_GAP
    r = slide_move(c.level, STAND, [22.0, 2.0, z], [-5.0, 0.0, 0.0], 1.0, ground_normal=(0, 0, 1))
    rail = 20.125 + HALF + SURFACE_GAP
    assert rail - 1e-9 <= r.position[0] <= rail + 0.001 * 5.0  # (overclip drift)
    assert r.blocked and r.on_ground


# --------------------------------------------------------------------------------------------
# Ground


def test_ground_on_the_floor_in_the_air_and_on_the_ramp(scenes):
    c = sample(scenes, "two_rooms")
    on, n = ground_check(c.level, STAND, [2.0, 2.0, FEET + SURFACE_GAP])
    assert on and n.tolist() == [0.0, 0.0, 1.0]
    on, n = ground_check(c.level, STAND, [2.0, 2.0, FEET + 0.05])
    assert not on and not n.any()
    # the ramp (x 16 .. 20, y 4 .. 6) rises 1 m over 4 m: normal (-1, 0, 4) / sqrt(17)
    ramp = np.array([-1.0, 0.0, 4.0]) / math.sqrt(17.0)
    # the box rests on its uphill bottom edge (x + HALF): slope height there plus FEET
    rest_z = (18.0 + HALF - 16.0) / 4.0 + FEET
    on, n = ground_check(c.level, STAND, [18.0, 5.0, rest_z + 0.002])
    assert on and n == pytest.approx(ramp, abs=1e-9)
    on, n = ground_check(c.level, STAND, [18.0, 5.0, rest_z + 0.02])
    assert not on
    # dropped onto it (one bump: no sliding down afterwards), it stops SURFACE_GAP off the slope
    dropped = slide_move(c.level, STAND, [18.0, 5.0, 3.0], [0.0, 0.0, -10.0], 1.0, MoveSettings(max_bumps=1))
    assert dropped.on_ground and dropped.ground_normal == pytest.approx(ramp, abs=1e-9)
    assert dropped.position == pytest.approx([18.0, 5.0, rest_z + SURFACE_GAP / ramp[2]], abs=1e-9)
    assert dropped.clip_planes == 1 and not dropped.blocked  # the ramp is ground, not an obstacle
    assert ramp[2] > 0.7  # walkable by default ...
    strict = MoveSettings(ground_normal_z=0.98)  # ... and not when ground must be flatter
    on, n = ground_check(c.level, STAND, dropped.position, strict)
    assert not on and n == pytest.approx(ramp, abs=1e-9)
    g, gn = ground_check_batch(c.level, STAND, [dropped.position, [2.0, 2.0, FEET + SURFACE_GAP]], strict)
    assert g.tolist() == [False, True] and gn[0] == pytest.approx(ramp)


def test_walking_up_the_ramp_stays_on_it(scenes):
    c = sample(scenes, "two_rooms")
    p, v, g = np.array([14.5, 5.0, FEET + SURFACE_GAP]), np.array([3.0, 0.0, 0.0]), (0.0, 0.0, 1.0)
    for _ in range(60):
        r = step_slide_move(c.level, STAND, p, v, 1 / 30, ground_normal=g)
        p, v, g = r.position, np.array([3.0, 0.0, 0.0]), r.ground_normal
    assert p[0] > 19.0 and r.on_ground
    surface = min(max((p[0] + HALF - 16.0) / 4.0, 0.0), 1.0)  # the slope under the box's uphill edge
    assert p[2] >= surface + FEET - 1e-9


# --------------------------------------------------------------------------------------------
# Stepping (staircase: 0.25 m risers, 0.3125 m treads, y 0 .. 1.5; a 0.8 m ledge at y 1.5 .. 3)


def walk(level, hull, start, velocity, frames, settings=None, dt=1 / 30):
    p, g = np.asarray(start, float), (0.0, 0.0, 1.0)
    path = [p]
    results = []
    for _ in range(frames):
        r = step_slide_move(level, hull, p, velocity, dt, settings, ground_normal=g)
        assert not r.start_solid and not r.reverted
        p, g = r.position, r.ground_normal if r.on_ground else None
        path.append(p)
        results.append(r)
    return np.array(path), results


def test_steps_are_climbed_and_the_ledge_is_not(scenes):
    c = sample(scenes, "staircase")
    z0 = FEET + SURFACE_GAP
    path, results = walk(c.level, STAND, [0.5, 0.75, z0], [4.0, 0.0, 0.0], 60)
    rises = np.diff(path[:, 2])
    assert rises.max() <= STEP + 1e-9, "a single move rose more than the step height"
    assert path[-1][2] == pytest.approx(2.0 + z0, abs=1e-9)  # on the landing (8 risers of 0.25 m)
    assert path[-1][0] > 4.5 and any(r.stepped for r in results)
    assert all(r.on_ground for r in results)
    # the stepped path never leaves the staircase's profile: the box's front-bottom corner is
    # above the top of every step it overhangs
    assert_never_inside(c.level, STAND, c.scene, path, "climbing the stairs")
    # the 0.8 m ledge (x 2.5 .. 4, y 1.5 .. 3) is higher than a step: walking at it stops
    path, results = walk(c.level, STAND, [3.25, 4.5, z0], [0.0, -4.0, 0.0], 30)
    ledge = 3.0 + HALF + SURFACE_GAP
    assert ledge - 1e-9 <= path[-1][1] <= ledge + 0.001 * 4.0 / 30  # (overclip drift)
    assert path[:, 2] == pytest.approx(z0, abs=1e-12)
    assert not any(r.stepped for r in results)


def test_a_lower_step_height_cannot_climb_the_first_step(scenes):
    c = sample(scenes, "staircase")
    z0 = FEET + SURFACE_GAP
    path, results = walk(c.level, STAND, [0.5, 0.75, z0], [4.0, 0.0, 0.0], 20, MoveSettings(step_height=0.2))
    riser = 1.5 - HALF - SURFACE_GAP
    assert riser - 0.001 * 4.0 / 30 <= path[-1][0] <= riser + 1e-9  # (overclip drift)
    assert path[:, 2] == pytest.approx(z0, abs=1e-12)


def test_step_height_is_the_limit(tmp_path):
    """Blocks just under and just over the step height, each in its own lane: the box climbs
    the ones no higher than step_height (plus the gap it keeps above the floor) only."""
    heights = [0.25, STEP - 0.01, STEP + 0.01, 0.8]
    scene = Scene("steps", hulls=[preset("stand"), preset("crouch")])
    scene.brushes += [box_brush((-1, -1, -1), (12, 2 * len(heights) + 1, 0), "floor"),
                      box_brush((-1, -1, 4), (12, 2 * len(heights) + 1, 5), "ceiling")]
    for i, h in enumerate(heights):
        scene.brushes.append(box_brush((4, 2 * i, 0), (6, 2 * i + 1.5, h), f"block_{i}"))
    level = compile_scene(scene)
    z0 = FEET + SURFACE_GAP
    starts = [[2.0, 2 * i + 0.75, z0] for i in range(len(heights))]
    ends = []
    for s in starts:
        path, _ = walk(level, STAND, s, [4.0, 0.0, 0.0], 20)
        ends.append(path[-1])
    batch_p = np.array(starts, float)
    g = np.tile([0.0, 0.0, 1.0], (len(starts), 1))
    for _ in range(20):
        b = step_slide_move_batch(level, STAND, batch_p, np.tile([4.0, 0.0, 0.0], (len(starts), 1)), 1 / 30,
                                  ground_normals=g)
        batch_p, g = b.position, np.where(b.on_ground[:, None], b.ground_normal, 0.0)
    for i, h in enumerate(heights):
        climbed = ends[i][2] > z0 + 0.1
        assert climbed == (h <= STEP), f"block {h} m: climbed={climbed}"
        if climbed:
            assert ends[i][2] == pytest.approx(h + z0, abs=1e-9)
        else:
            face = 4.0 - HALF - SURFACE_GAP
            assert face - 0.001 * 4.0 / 30 <= ends[i][0] <= face + 1e-9  # (overclip drift)
    assert batch_p == pytest.approx(np.array(ends), abs=1e-9)


# --------------------------------------------------------------------------------------------
# 10,000 random moves: never inside solid; batch == single


SCENES = ["two_rooms", "garage", "staircase", "low_tunnel", "cornell_box"]
MOVES = {"two_rooms": 2500, "garage": 2500, "staircase": 1800, "low_tunnel": 1600, "cornell_box": 1600}


def random_moves(c, hull, n, rng):
    """Starts: half uniform in the scene's bounds (empty for the hull), half of those dropped to
    the surface below (resting SURFACE_GAP above it, like a walking character); velocities up to
    ~15 m/s, horizontal for the resting ones, for 1/60 .. 1 s (log-uniform)."""
    lo, hi = c.scene.bounds
    pts = lo + rng.random((6 * n, 3)) * (hi - lo)
    pts = pts[point_solid(c.level, pts, hull) == 0][:n]
    assert len(pts) == n
    rest = rng.random(n) < 0.5
    dropped = slide_move_batch(c.level, hull, pts[rest], np.tile([0.0, 0.0, -30.0], (int(rest.sum()), 1)), 1.0)
    pts[rest] = dropped.position
    vel = rng.normal(size=(n, 3)) * 6.0
    vel[rest, 2] = 0.0
    dt = np.exp(rng.uniform(np.log(1 / 60), np.log(1.0), n))
    ground = np.zeros((n, 3))
    ground[np.flatnonzero(rest)[dropped.on_ground]] = dropped.ground_normal[dropped.on_ground]
    return pts, vel, dt, ground


@pytest.mark.parametrize("name", SCENES)
def test_random_moves_never_end_inside_solid_and_batch_equals_single(scenes, name):
    c = sample(scenes, name)
    rng = np.random.default_rng(seed_of(name))
    n = MOVES[name]
    counts = {"hits": 0, "stepped": 0, "blocked": 0}
    for hull in (STAND, CROUCH):
        m = n // 2
        pts, vel, dt, ground = random_moves(c, hull, m, rng)
        mins, maxs = c.level.hull_boxes[hull]
        depth0, _ = BoxTruth(c.scene, mins, maxs).penetration(pts)
        assert (depth0 <= BAND).all(), "a start the onion tree calls empty overlaps a brush"
        step = rng.random(m) < 0.5
        single, t0 = [], time.perf_counter()
        for i in range(m):
            fn = step_slide_move if step[i] else slide_move
            g = ground[i] if ground[i].any() else None
            single.append(fn(c.level, hull, pts[i], vel[i], dt[i], ground_normal=g))
        t_single = time.perf_counter() - t0
        t0 = time.perf_counter()
        b_slide = slide_move_batch(c.level, hull, pts[~step], vel[~step], dt[~step], ground_normals=ground[~step])
        b_step = step_slide_move_batch(c.level, hull, pts[step], vel[step], dt[step], ground_normals=ground[step])
        t_batch = time.perf_counter() - t0
        ends = np.array([r.position for r in single])
        assert not any(r.start_solid or r.reverted for r in single)
        assert not (b_slide.reverted.any() or b_step.reverted.any())
        assert_never_inside(c.level, hull, c.scene, ends, f"{name} hull {hull}")
        # batch == single, row for row
        for mask, b in ((~step, b_slide), (step, b_step)):
            idx = np.flatnonzero(mask)
            sp = np.array([single[i].position for i in idx]).reshape(-1, 3)
            sv = np.array([single[i].velocity for i in idx]).reshape(-1, 3)
            assert b.position == pytest.approx(sp, abs=1e-9)
            assert b.velocity == pytest.approx(sv, abs=1e-9)
            for field in ("on_ground", "clip_planes", "stepped", "blocked", "start_solid"):
                got = getattr(b, field).tolist()
                want = [getattr(single[i], field) for i in idx]
                assert got == want, f"{field} differs between batch and single"
            assert b.ground_normal == pytest.approx(np.array([single[i].ground_normal for i in idx]).reshape(-1, 3))
        counts["hits"] += sum(r.clip_planes > 0 for r in single)
        counts["stepped"] += sum(r.stepped for r in single)
        counts["blocked"] += sum(r.blocked for r in single)
        print(f"{name} hull {hull}: {m} moves, single {m / t_single:.0f}/s, batch {m / t_batch:.0f}/s")
    # the moves must exercise collisions, or this test could not fail
    assert counts["hits"] > n * 0.2 and counts["blocked"] > n * 0.1
    if name in ("staircase", "two_rooms", "garage"):
        assert counts["stepped"] > 0
