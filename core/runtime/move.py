"""Character movement on top of swept box traces: collide-and-slide and stepping (issue point 6).

One idea in one module (over 600 lines): the Quake III slide move, once for one character in plain
Python floats and once for many in NumPy, operation for operation, so the two agree bit for bit.

The behaviour follows Quake III's player movement (PM_SlideMove, PM_StepSlideMove, PM_GroundTrace
in bg_slidemove.c / bg_pmove.c, as summarised in ../shared/REFERENCE.md); the code is brushbake's
own, on the onion tree's box traces (core/trace.py) and in metres.

slide_move, one call per frame and character:
1. Seed the clip-plane list with the ground plane (when the caller passes a walkable one: never
   turn against the ground; a velocity into it is first clipped along it, so walking up or down
   a ramp follows the ramp) and the direction of that velocity (never turn back).
2. Up to `max_bumps` times: trace the hull from the position to position + time_left * velocity;
   move to the hit, backed off so the gap to the hit plane along its normal is `surface_gap`
   (Quake's DIST_EPSILON, see SURFACE_GAP); spend that share of the time; add the hit plane to
   the list (at most `max_clip_planes` planes in all: more stops the character dead); a plane
   nearly equal to one already listed (dot > 0.99) nudges the velocity out along it instead.
3. Clip the velocity against the listed planes it runs into: v - (v.n) n * overclip.  When the
   clipped velocity runs into a second plane, it slides along their crease (the cross product of
   the two normals); when that crease runs into a third plane, the character stops.
4. Afterwards: the ground check (a short downward trace) and a guard that the reference point is
   not in solid (it never is when the traces are right; a move that would end there is undone
   and reported as `reverted`).

step_slide_move: the slide; if it was blocked (it hit a plane too steep to stand on), the same
move (same velocity and ground plane) again from `step_height` higher: trace up, slide, trace
down by as much as it went up plus the ground probe.  The step is taken only when the down trace
lands on walkable ground (normal z >= ground_normal_z) and the stepped move went further
horizontally than the plain one.  As in Quake III, no step while rising (velocity z > 0) unless
there is walkable ground within a step below the start.

A character pushing into a wall ends up to (overclip - 1) * |v.n| * dt away from the gap
position: the overclipped velocity (0.1% of the speed into the wall, away from it) carries it
back for the rest of the frame.  That is Quake's behaviour and keeps later starts clear.

The batch versions (slide_move_batch, step_slide_move_batch) run the same iterations for many
characters at once: one trace_hulls call per bump for every character still moving, the plane
logic as masked NumPy operations over characters.  They do the same floating-point operations in
the same order as the single versions; the traces are the Python and NumPy walks of the same tree
(core/trace.py), which agree to rounding (in the tests to the last bit, 10,000 random moves).

Speed on the sample scenes (one core, busy machine): single ~7,000 moves a second, batch
~30,000 (slide) and ~25,000 (step) for 10,000 characters; 88% of the batch time is
find_first_transitions.

Gravity, friction and jumping are the caller's: change the velocity between calls.  The start
must be empty for the hull; a trace that starts in solid does not move the character (reported
as `start_solid`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..tolerances import (
    CREASE_EPSILON,
    GROUND_PROBE,
    INTO_EPSILON,
    NUDGE_SPEED,
    SAME_PLANE_DOT,
    STEP_GAIN_EPSILON,
    SURFACE_GAP,
)
from ..units import QUAKE_UNIT
from .cruntime import c_level, check_backend
from .query import point_solid
from .results import MoveBatch, MoveResult
from .trace import trace_hull, trace_hulls
from .tree import Tree, as_tree

# --------------------------------------------------------------------------------------------
# Tolerances of movement (each with its unit and reason)









@dataclass(frozen=True)
class MoveSettings:
    """Movement settings.  Defaults are Quake III's, in metres (1 unit = 1/32 m)."""

    #: planes a slide move may collect, the two seed planes (ground, original velocity) included
    max_clip_planes: int = 5
    #: traces per slide move (Quake III: 4)
    max_bumps: int = 4
    #: m. The highest ledge a character walks up (18 units)
    step_height: float = 18 * QUAKE_UNIT
    #: a plane with normal z at least this is ground (walkable); steeper planes block
    ground_normal_z: float = 0.7
    #: velocity clipping factor: v - (v.n) n * overclip pushes slightly away from the plane
    overclip: float = 1.001
    surface_gap: float = SURFACE_GAP
    ground_probe: float = GROUND_PROBE
    nudge_speed: float = NUDGE_SPEED
    into_epsilon: float = INTO_EPSILON

    def __post_init__(self):
        if self.max_clip_planes < 3:
            raise ValueError("max_clip_planes must be at least 3 (ground and velocity seeds plus one hit)")
        if self.max_bumps < 1:
            raise ValueError("max_bumps must be at least 1")
        if not 0.0 < self.ground_normal_z <= 1.0:
            raise ValueError("ground_normal_z must lie in (0, 1]")
        if self.step_height < 0 or self.surface_gap <= 0 or self.ground_probe <= self.surface_gap:
            raise ValueError("need step_height >= 0 and 0 < surface_gap < ground_probe")
        if self.overclip < 1.0:
            raise ValueError("overclip must be at least 1")


DEFAULT_SETTINGS = MoveSettings()


# --------------------------------------------------------------------------------------------
# Single character (plain Python floats over the tree's cached list form)

def _solid_point(tree: Tree, p, hull: int) -> bool:
    """point_solid for one point (open solids: on a plane, solid only where both sides are)."""
    x, y, z = p
    return tree.lists.solid_open(tree.root, float(x), float(y), float(z), 1 << hull)


def _dot(a, b) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _clip_velocity(v, n, overclip: float):
    """v - (v.n) n * overclip (Quake's PM_ClipVelocity: the overclip always pushes away)."""
    backoff = v[0] * n[0] + v[1] * n[1] + v[2] * n[2]
    backoff = backoff * overclip if backoff < 0 else backoff / overclip
    return (v[0] - n[0] * backoff, v[1] - n[1] * backoff, v[2] - n[2] * backoff)


def _normalize(v):
    length = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    if length < CREASE_EPSILON:
        return (0.0, 0.0, 0.0)
    return (v[0] / length, v[1] / length, v[2] / length)


def _clip_to_planes(vel, planes, s: MoveSettings):
    """Clip the velocity against the planes it runs into: (new velocity, stopped dead)."""
    eps = s.into_epsilon
    for i, pi in enumerate(planes):
        if _dot(vel, pi) >= eps:
            continue
        clip = _clip_velocity(vel, pi, s.overclip)
        for j, pj in enumerate(planes):
            if j == i or _dot(clip, pj) >= eps:
                continue
            clip = _clip_velocity(clip, pj, s.overclip)
            if _dot(clip, pi) >= 0:
                continue
            d = _normalize((pi[1] * pj[2] - pi[2] * pj[1], pi[2] * pj[0] - pi[0] * pj[2], pi[0] * pj[1] - pi[1] * pj[0]))
            k = _dot(d, vel)
            clip = (d[0] * k, d[1] * k, d[2] * k)
            for m, pm in enumerate(planes):
                if m != i and m != j and _dot(clip, pm) < eps:
                    return (0.0, 0.0, 0.0), True
        return clip, False
    return vel, False


def _backed_off(t: float, delta, n, gap: float) -> float:
    """The fraction along delta where the gap to the hit plane (normal n, crossed at t) is `gap`."""
    into = -(delta[0] * n[0] + delta[1] * n[1] + delta[2] * n[2])
    if not into > 0:
        return 0.0
    f = t - gap / into
    return min(max(f, 0.0), t)


def _trace(level, tree, hull, start, end):
    return trace_hull(tree, start, end, hull)


def ground_check(level, hull: int, position, settings: MoveSettings | None = None, *, tree=None):
    """(on_ground, normal): a trace ground_probe straight down hits a plane with normal z >=
    ground_normal_z.  normal is the hit plane's (zero when nothing is hit or the start is solid)."""
    s = settings or DEFAULT_SETTINGS
    tree = tree or as_tree(level, hull)
    p = tuple(float(v) for v in position)
    tr = _trace(level, tree, hull, p, (p[0], p[1], p[2] - s.ground_probe))
    if tr.start_solid or not tr.hit:
        return False, np.zeros(3)
    normal = np.asarray(tr.normal, dtype=np.float64)
    return bool(normal[2] >= s.ground_normal_z), normal


def slide_move(level, hull: int, position, velocity, dt: float, settings: MoveSettings | None = None,
               ground_normal=None, *, tree=None) -> MoveResult:
    """Collide and slide one character for dt seconds (see the module docstring).

    level: a CompiledLevel with an onion tree (or any tree for hull 0); hull: index into
    level.hull_names; ground_normal: the ground the character stands on (e.g. the previous
    result's), seeding the clip planes when walkable.
    """
    s = settings or DEFAULT_SETTINGS
    tree = tree or as_tree(level, hull)
    pos, vel, planes, hits, blocked, stopped, start_solid = _slide(level, tree, hull, position, velocity, dt, s,
                                                                   ground_normal)
    return _finish(level, tree, hull, position, pos, vel, hits, blocked or stopped, start_solid, False, s)


def _seed_planes(vel, ground_normal, s: MoveSettings):
    """(velocity, planes): a velocity into the walkable ground is first clipped along it (Quake
    III's slide along the ground plane; a velocity away from it, a jump, is left alone)."""
    planes = []
    if ground_normal is not None:
        g = tuple(float(v) for v in ground_normal)
        if g[2] >= s.ground_normal_z:
            planes.append(g)
            if _dot(vel, g) < 0:
                vel = _clip_velocity(vel, g, s.overclip)
    speed = math.sqrt(vel[0] * vel[0] + vel[1] * vel[1] + vel[2] * vel[2])
    if speed > 0:
        planes.append((vel[0] / speed, vel[1] / speed, vel[2] / speed))
    return vel, planes


def _slide(level, tree, hull, position, velocity, dt, s: MoveSettings, ground_normal):
    pos = tuple(float(v) for v in position)
    vel = tuple(float(v) for v in velocity)
    vel, planes = _seed_planes(vel, ground_normal, s)
    hits, blocked, stopped, start_solid = 0, False, False, False
    time_left = float(dt)
    for _ in range(s.max_bumps):
        delta = (vel[0] * time_left, vel[1] * time_left, vel[2] * time_left)
        end = (pos[0] + delta[0], pos[1] + delta[1], pos[2] + delta[2])
        if end == pos:
            break
        tr = _trace(level, tree, hull, pos, end)
        if tr.start_solid:
            start_solid = True
            break
        if not tr.hit:
            pos = end
            break
        n = (float(tr.normal[0]), float(tr.normal[1]), float(tr.normal[2]))
        f = _backed_off(float(tr.fraction), delta, n, s.surface_gap)
        if f > 0:
            pos = (pos[0] + f * delta[0], pos[1] + f * delta[1], pos[2] + f * delta[2])
        time_left -= time_left * f
        hits += 1
        if n[2] < s.ground_normal_z:
            blocked = True
        if len(planes) >= s.max_clip_planes:
            vel, stopped = (0.0, 0.0, 0.0), True
            break
        if any(_dot(n, p) > SAME_PLANE_DOT for p in planes):
            vel = (vel[0] + n[0] * s.nudge_speed, vel[1] + n[1] * s.nudge_speed, vel[2] + n[2] * s.nudge_speed)
            continue
        planes.append(n)
        vel, stopped = _clip_to_planes(vel, planes, s)
        if stopped:
            break
    return pos, vel, planes, hits, blocked, stopped, start_solid


def _finish(level, tree, hull, start, pos, vel, hits, blocked, start_solid, stepped, s: MoveSettings,
            ground=None) -> MoveResult:
    reverted = False
    if _solid_point(tree, pos, hull):  # never end in solid (a guard: correct traces never get here)
        pos, vel, reverted, ground = tuple(float(v) for v in start), (0.0, 0.0, 0.0), True, None
    on_ground, normal = ground if ground is not None else ground_check(level, hull, pos, s, tree=tree)
    return MoveResult(np.array(pos, dtype=np.float64), np.array(vel, dtype=np.float64), bool(on_ground),
                      np.asarray(normal, dtype=np.float64), int(hits), bool(stepped), bool(blocked),
                      bool(start_solid), reverted)


def step_slide_move(level, hull: int, position, velocity, dt: float, settings: MoveSettings | None = None,
                    ground_normal=None, *, tree=None) -> MoveResult:
    """slide_move, and when that is blocked, the same move from step_height higher, taken when it
    lands on walkable ground and gets further (see the module docstring)."""
    s = settings or DEFAULT_SETTINGS
    tree = tree or as_tree(level, hull)
    start = tuple(float(v) for v in position)
    first = slide_move(level, hull, start, velocity, dt, s, ground_normal, tree=tree)
    if first.start_solid or not first.blocked or first.reverted or s.step_height <= 0:
        return first
    vel = tuple(float(v) for v in velocity)
    if vel[2] > 0:  # never step up while rising, unless there is ground within a step below
        tr = _trace(level, tree, hull, start, (start[0], start[1], start[2] - s.step_height))
        if tr.start_solid or not tr.hit or tr.normal[2] < s.ground_normal_z:
            return first
    up_end = (start[0], start[1], start[2] + s.step_height)
    tr = _trace(level, tree, hull, start, up_end)
    if tr.start_solid:
        return first
    rise = s.step_height
    if tr.hit:
        rise = s.step_height * _backed_off(float(tr.fraction), (0.0, 0.0, s.step_height), tuple(tr.normal),
                                           s.surface_gap)
    if rise <= 0:
        return first
    raised = (start[0], start[1], start[2] + rise)
    pos, vel2, _, hits, blocked, stopped, solid2 = _slide(level, tree, hull, raised, vel, dt, s, ground_normal)
    if solid2:
        return first
    drop = rise + s.ground_probe
    delta = (0.0, 0.0, -drop)
    tr = _trace(level, tree, hull, pos, (pos[0], pos[1], pos[2] - drop))
    if tr.start_solid or not tr.hit or tr.normal[2] < s.ground_normal_z:
        return first
    n = (float(tr.normal[0]), float(tr.normal[1]), float(tr.normal[2]))
    f = _backed_off(float(tr.fraction), delta, n, s.surface_gap)
    landed = (pos[0], pos[1], pos[2] - f * drop)
    gain_step = math.hypot(landed[0] - start[0], landed[1] - start[1])
    gain_flat = math.hypot(float(first.position[0]) - start[0], float(first.position[1]) - start[1])
    if not gain_step > gain_flat + STEP_GAIN_EPSILON:
        return first
    vel2 = _clip_velocity(vel2, n, s.overclip)
    return _finish(level, tree, hull, start, landed, vel2, hits, blocked or stopped, False, True, s,
                   ground=(True, np.array(n)))


# --------------------------------------------------------------------------------------------
# Many characters at once


def _dotv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def _clip_velocity_v(v: np.ndarray, n: np.ndarray, overclip: float) -> np.ndarray:
    backoff = _dotv(v, n)
    backoff = np.where(backoff < 0, backoff * overclip, backoff / overclip)
    return v - n * backoff[:, None]


def _normalize_v(v: np.ndarray) -> np.ndarray:
    length = np.sqrt(v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1] + v[:, 2] * v[:, 2])
    ok = length >= CREASE_EPSILON
    out = np.zeros_like(v)
    out[ok] = v[ok] / length[ok, None]
    return out


def _cross_v(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1], a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                     a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], axis=1)


def _clip_to_planes_v(vel: np.ndarray, planes: np.ndarray, count: np.ndarray, s: MoveSettings):
    """_clip_to_planes for rows of (velocity (M, 3), planes (M, P, 3), plane count (M,))."""
    eps = s.into_epsilon
    m, p_max = len(vel), planes.shape[1]
    out = vel.copy()
    pending = np.ones(m, bool)
    stopped = np.zeros(m, bool)
    for i in range(p_max):
        mi = pending & (i < count)
        if not mi.any():
            continue
        mi &= _dotv(vel, planes[:, i]) < eps
        if not mi.any():
            continue
        pi = planes[:, i]
        clip = vel.copy()
        clip[mi] = _clip_velocity_v(vel[mi], pi[mi], s.overclip)
        dead = np.zeros(m, bool)
        for j in range(p_max):
            if j == i:
                continue
            pj = planes[:, j]
            mj = mi & ~dead & (j < count)
            mj &= _dotv(clip, pj) < eps
            if not mj.any():
                continue
            clip[mj] = _clip_velocity_v(clip[mj], pj[mj], s.overclip)
            mc = mj & (_dotv(clip, pi) < 0)
            if not mc.any():
                continue
            d = _normalize_v(_cross_v(pi[mc], pj[mc]))
            k = _dotv(d, vel[mc])
            clip[mc] = d * k[:, None]
            for q in range(p_max):
                if q == i or q == j:
                    continue
                mq = mc & ~dead & (q < count)
                dead |= mq & (_dotv(clip, planes[:, q]) < eps)
        out[mi] = clip[mi]
        out[dead] = 0.0
        stopped |= dead
        pending &= ~mi
    return out, stopped


def _backed_off_v(t: np.ndarray, delta: np.ndarray, n: np.ndarray, gap: float) -> np.ndarray:
    into = -(delta[:, 0] * n[:, 0] + delta[:, 1] * n[:, 1] + delta[:, 2] * n[:, 2])
    ok = into > 0
    f = np.zeros(len(t))
    f[ok] = t[ok] - gap / into[ok]
    return np.minimum(np.maximum(f, 0.0), t) * ok


def _as_rows(a, n: int, what: str) -> np.ndarray:
    arr = np.asarray(a, dtype=np.float64)
    if arr.shape == (3,):
        arr = np.broadcast_to(arr, (n, 3))
    if arr.shape != (n, 3):
        raise ValueError(f"{what} must have shape ({n}, 3), got {arr.shape}")
    return np.array(arr, dtype=np.float64)


def ground_check_batch(level, hull: int, positions, settings: MoveSettings | None = None):
    """ground_check for many positions: (on_ground (N,) bool, normal (N, 3))."""
    s = settings or DEFAULT_SETTINGS
    p = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    down = p.copy()
    down[:, 2] -= s.ground_probe
    _hits = trace_hulls(level, p, down, hull)
    out, solid = _hits.packed(), _hits.start_solid
    normal = out[:, 4:7].copy()
    normal[solid] = 0.0
    return normal[:, 2] >= s.ground_normal_z, normal


def _slide_v(level, hull, pos, vel, dt, s: MoveSettings, ground_normals):
    """The slide iterations for rows; returns (pos, vel, hits, blocked, start_solid)."""
    n = len(pos)
    pos, vel = pos.copy(), vel.copy()
    p_max = s.max_clip_planes
    planes = np.zeros((n, p_max, 3))
    count = np.zeros(n, dtype=np.int64)
    if ground_normals is not None:
        g = _as_rows(ground_normals, n, "ground_normals")
        ok = g[:, 2] >= s.ground_normal_z
        planes[ok, 0] = g[ok]
        count[ok] = 1
        into = np.flatnonzero(ok & (_dotv(vel, g) < 0))
        vel[into] = _clip_velocity_v(vel[into], g[into], s.overclip)
    speed = np.sqrt(vel[:, 0] * vel[:, 0] + vel[:, 1] * vel[:, 1] + vel[:, 2] * vel[:, 2])
    moving = speed > 0
    rows = np.flatnonzero(moving)
    planes[rows, count[rows]] = vel[rows] / speed[rows, None]
    count[rows] += 1
    time_left = np.broadcast_to(np.asarray(dt, dtype=np.float64), (n,)).copy()
    hits = np.zeros(n, dtype=np.int64)
    blocked = np.zeros(n, bool)
    start_solid = np.zeros(n, bool)
    active = np.ones(n, bool)
    for _ in range(s.max_bumps):
        a = np.flatnonzero(active)
        if not len(a):
            break
        delta = vel[a] * time_left[a, None]
        end = pos[a] + delta
        still = np.all(end == pos[a], axis=1)
        active[a[still]] = False
        a, delta, end = a[~still], delta[~still], end[~still]
        if not len(a):
            break
        _hits = trace_hulls(level, pos[a], end, hull)
        out, solid = _hits.packed(), _hits.start_solid
        start_solid[a[solid]] = True
        active[a[solid]] = False
        normal = out[:, 4:7]
        hit = ~solid & np.any(normal != 0.0, axis=1)
        free = ~solid & ~hit
        pos[a[free]] = end[free]
        active[a[free]] = False
        a, delta, normal, t = a[hit], delta[hit], normal[hit], out[hit, 0]
        if not len(a):
            continue
        f = _backed_off_v(t, delta, normal, s.surface_gap)
        go = f > 0
        pos[a[go]] = pos[a[go]] + f[go, None] * delta[go]
        time_left[a] -= time_left[a] * f
        hits[a] += 1
        blocked[a[normal[:, 2] < s.ground_normal_z]] = True
        full = count[a] >= p_max
        vel[a[full]] = 0.0
        blocked[a[full]] = True
        active[a[full]] = False
        a, normal = a[~full], normal[~full]
        if not len(a):
            continue
        same = np.zeros(len(a), bool)
        for k in range(p_max):
            same |= (k < count[a]) & (_dotv(normal, planes[a, k]) > SAME_PLANE_DOT)
        vel[a[same]] = vel[a[same]] + normal[same] * s.nudge_speed
        a, normal = a[~same], normal[~same]
        if not len(a):
            continue
        planes[a, count[a]] = normal
        count[a] += 1
        new_vel, dead = _clip_to_planes_v(vel[a], planes[a], count[a], s)
        vel[a] = new_vel
        blocked[a[dead]] = True
        active[a[dead]] = False
    return pos, vel, hits, blocked, start_solid


def _finish_v(level, hull, starts, pos, vel, s: MoveSettings):

    bad = point_solid(level, pos, hull).astype(bool)
    pos[bad] = starts[bad]
    vel[bad] = 0.0
    on_ground, normal = ground_check_batch(level, hull, pos, s)
    return bad, on_ground, normal


def slide_move_batch(level, hull: int, positions, velocities, dt, settings: MoveSettings | None = None,
                     ground_normals=None, backend: str = "numpy") -> MoveBatch:
    """slide_move for N characters at once (positions, velocities (N, 3); dt scalar or (N,);
    ground_normals None or (N, 3), rows with normal z below ground_normal_z meaning 'none').
    backend "c": the C run-time (core/runtime/cruntime.py), slide_move's answers to the bit."""
    s = settings or DEFAULT_SETTINGS
    if backend != "numpy":
        return _c_move(level, hull, positions, velocities, dt, s, ground_normals, False, backend)
    starts = np.asarray(positions, dtype=np.float64).reshape(-1, 3).copy()
    vel0 = _as_rows(velocities, len(starts), "velocities")
    pos, vel, hits, blocked, start_solid = _slide_v(level, hull, starts, vel0, dt, s, ground_normals)
    reverted, on_ground, normal = _finish_v(level, hull, starts, pos, vel, s)
    n = len(starts)
    return MoveBatch(pos, vel, on_ground, normal, hits, np.zeros(n, bool), blocked, start_solid, reverted)


def _c_move(level, hull, positions, velocities, dt, s, ground_normals, step: bool, backend: str) -> MoveBatch:
    check_backend(backend)
    level.collision_tree(hull)  # the typed UnknownHullError, as the NumPy path gives
    if s.max_clip_planes > 64:
        raise ValueError("the C run-time keeps at most 64 clip planes (BBK_MAX_CLIP_PLANES)")
    return c_level(level).move(hull, positions, velocities, dt, s, ground_normals, step)


def step_slide_move_batch(level, hull: int, positions, velocities, dt, settings: MoveSettings | None = None,
                          ground_normals=None, backend: str = "numpy") -> MoveBatch:
    """step_slide_move for N characters at once (arguments as slide_move_batch; backend "c": the C
    run-time, step_slide_move's answers to the bit)."""
    s = settings or DEFAULT_SETTINGS
    if backend != "numpy":
        return _c_move(level, hull, positions, velocities, dt, s, ground_normals, True, backend)
    starts = np.asarray(positions, dtype=np.float64).reshape(-1, 3).copy()
    n = len(starts)
    vel0 = _as_rows(velocities, n, "velocities")
    first = slide_move_batch(level, hull, starts, vel0, dt, s, ground_normals)
    if s.step_height <= 0:
        return first
    try_step = first.blocked & ~first.start_solid & ~first.reverted
    rising = try_step & (vel0[:, 2] > 0)
    if rising.any():
        r = np.flatnonzero(rising)
        below = starts[r].copy()
        below[:, 2] -= s.step_height
        _hits = trace_hulls(level, starts[r], below, hull)
        out, solid = _hits.packed(), _hits.start_solid
        ground = ~solid & np.any(out[:, 4:7] != 0.0, axis=1) & (out[:, 6] >= s.ground_normal_z)
        try_step[r[~ground]] = False
    c = np.flatnonzero(try_step)
    if not len(c):
        return first
    up = starts[c].copy()
    up[:, 2] += s.step_height
    _hits = trace_hulls(level, starts[c], up, hull)
    out, solid = _hits.packed(), _hits.start_solid
    rise = np.full(len(c), s.step_height)
    hit = ~solid & np.any(out[:, 4:7] != 0.0, axis=1)
    if hit.any():
        delta = np.zeros((int(hit.sum()), 3))
        delta[:, 2] = s.step_height
        rise[hit] = s.step_height * _backed_off_v(out[hit, 0], delta, out[hit, 4:7], s.surface_gap)
    ok = ~solid & (rise > 0)
    c, rise = c[ok], rise[ok]
    if not len(c):
        return first
    raised = starts[c].copy()
    raised[:, 2] = raised[:, 2] + rise
    pos, vel2, hits, blocked, solid2 = _slide_v(level, hull, raised, vel0[c], dt if np.ndim(dt) == 0 else
                                                np.asarray(dt, dtype=np.float64)[c], s,
                                                None if ground_normals is None else _as_rows(ground_normals, n,
                                                                                            "ground_normals")[c])
    drop = rise + s.ground_probe
    low = pos.copy()
    low[:, 2] = low[:, 2] - drop
    _hits = trace_hulls(level, pos, low, hull)
    out, solid3 = _hits.packed(), _hits.start_solid
    n_hit = out[:, 4:7]
    lands = ~solid2 & ~solid3 & np.any(n_hit != 0.0, axis=1) & (n_hit[:, 2] >= s.ground_normal_z)
    delta = np.zeros((len(c), 3))
    delta[:, 2] = -drop
    f = _backed_off_v(out[:, 0], delta, n_hit, s.surface_gap)
    landed = pos.copy()
    landed[:, 2] = pos[:, 2] - f * drop
    gain_step = np.hypot(landed[:, 0] - starts[c, 0], landed[:, 1] - starts[c, 1])
    gain_flat = np.hypot(first.position[c, 0] - starts[c, 0], first.position[c, 1] - starts[c, 1])
    take = lands & (gain_step > gain_flat + STEP_GAIN_EPSILON)
    if not take.any():
        return first
    t = c[take]
    vel_t = _clip_velocity_v(vel2[take], n_hit[take], s.overclip)
    pos_t = landed[take]

    bad = point_solid(level, pos_t, hull).astype(bool)
    pos_t[bad] = starts[t][bad]
    vel_t[bad] = 0.0
    first.position[t] = pos_t
    first.velocity[t] = vel_t
    first.on_ground[t] = ~bad
    first.ground_normal[t] = np.where(bad[:, None], 0.0, n_hit[take])
    if bad.any():  # undone moves get a fresh ground check, as the single version does
        g, gn = ground_check_batch(level, hull, pos_t[bad], s)
        first.on_ground[t[bad]] = g
        first.ground_normal[t[bad]] = gn
    first.clip_planes[t] = hits[take]
    first.stepped[t] = True
    first.blocked[t] = blocked[take]
    first.reverted[t] = bad
    return first
