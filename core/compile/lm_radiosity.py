"""Bounce light by progressive refinement: the thesis's RADIOSITY (chapter 4) over patches.

Every patch (core/compile/lm_patches.py) holds *unshot* radiance.  A round (one bounce) lets
every patch holding some shoot it, the patches with the most unshot power (area x radiance)
first, as the thesis's loop picks 'the patch with the most unsent energy': shooter j sends to
every patch i of the clusters its cluster can see (the PVS)

    dW_i = F_ij * unshot_j,    F_ij = (1 / pi) integral over j of cos_i cos_j / d^2 dA_j,

the form factor from the point i (the receiver's centre) to the polygon j: the issue's
cos_i cos_j A_j / (pi d^2) integrated exactly over the patch by Lambert's formula (the polygon
first clipped to the receiver's half-space), so the form factors of a closed room sum to 1
however coarse its patches (the furnace converges to E / (1 - rho)).  The visibility H_ij is
one ray from receiver to shooter through the point tree.  What a patch receives in a round is
its irradiance (lightmap units); rho times it is what it shoots next round.  Rounds stop after
`bounces`, or when the unshot power falls below `threshold` of what it was after direct light.
progress() after each round; cancel() stops between batches of shooters and keeps the light
received so far (RadiosityResult.cancelled).

Pairs whose unshadowed contribution (a disk's form factor, cos_i cos_j A / (pi d^2 + A), times
the shooter's radiance) is below BOUNCE_CUTOFF cast no ray.  Sums are np.add.at in pair order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..detmath import dot
from ..geometry import cross3
from ..runtime.trace import RAY_E, find_first_transitions
from ..tolerances import BOUNCE_CUTOFF
from .lm_direct import RAY_BATCH
from .lm_patches import clip_batch

#: shooter x receiver pairs examined at once (memory bound)
PAIR_CHUNK = 1 << 21


@dataclass
class PatchWorld:
    """Patches as radiosity sees them (3-D)."""

    verts: np.ndarray  # (P, K, 3) polygon, padded
    count: np.ndarray  # (P,) vertices (0: empty patch, never shoots nor receives)
    area: np.ndarray  # (P,)
    point: np.ndarray  # (P, 3) the receiver point: the centroid lifted off the face
    centroid: np.ndarray  # (P, 3) on the face
    normal: np.ndarray  # (P, 3)
    cluster: np.ndarray  # (P,) PVS cluster of the point (-1: sees everything)
    reflectance: np.ndarray  # (P, 3)


@dataclass
class RadiosityResult:
    received: np.ndarray  # (P, 3) irradiance gathered from shooting, lightmap units
    rounds: list = field(default_factory=list)  # per round: shooters, pairs, rays, seconds, unshot power
    cancelled: bool = False


def point_polygon_form_factor(x: np.ndarray, n: np.ndarray, verts: np.ndarray, count: np.ndarray) -> np.ndarray:
    """(M,) form factor from points x with unit normals n to convex polygons (Lambert's formula:
    F = |sum_k gamma_k n . (r_k x r_k+1) / |r_k x r_k+1|| / (2 pi)), the polygons clipped to the
    points' front half-spaces first.  Exact for an unoccluded differential receiver."""
    rel = verts - x[:, None, :]
    dist = dot(rel, n[:, None, :])
    kk = verts.shape[1]
    dist = np.where(np.arange(kk)[None, :] < count[:, None], dist, 0.0)
    rel, cnt = clip_batch(rel, count, dist)
    total = np.zeros(len(x))
    rows = np.arange(len(x))
    for k in range(rel.shape[1]):
        live = k < cnt
        if not live.any():
            break
        nxt = np.where(k + 1 < cnt, k + 1, 0)
        a, b = rel[:, k], rel[rows, nxt]
        c = cross3(a, b)
        cn = np.sqrt(dot(c, c))
        ok = live & (cn > 0)
        gamma = np.arctan2(cn, dot(a, b))
        total = total + np.where(ok, gamma * dot(n, c) / np.where(ok, cn, 1.0), 0.0)
    return np.abs(total) / (2.0 * math.pi)


def shoot(world: PatchWorld, level, shooters: np.ndarray, unshot: np.ndarray, see, counters: dict,
          cancel=None) -> tuple[np.ndarray, bool]:
    """One round: every shooter sends its unshot radiance to the patches its cluster sees.
    Returns (received (P, 3), cancelled)."""
    p = len(world.area)
    received = np.zeros((p, 3))
    live = np.flatnonzero(world.count > 0)
    tree = level.point_tree()
    per_chunk = max(1, PAIR_CHUNK // max(len(live), 1))
    pending: list = []
    pending_size = 0
    for start in range(0, len(shooters), per_chunk):
        if cancel is not None and cancel():
            _trace(tree, pending, received, counters)
            return received, True
        chunk = shooters[start : start + per_chunk]
        si, ri = _pairs(world, chunk, live, see)
        f_est = _disk_estimate(world, si, ri)
        strength = unshot[si].max(axis=1)
        keep = f_est * strength >= BOUNCE_CUTOFF
        si, ri = si[keep], ri[keep]
        counters["pairs"] = counters.get("pairs", 0) + len(si)
        f = point_polygon_form_factor(world.point[ri], world.normal[ri], world.verts[si], world.count[si])
        value = f[:, None] * unshot[si]
        keep = value.max(axis=1) >= BOUNCE_CUTOFF
        pending.append((ri[keep], world.point[ri[keep]], world.point[si[keep]], value[keep]))
        pending_size += int(keep.sum())
        if pending_size >= RAY_BATCH:
            _trace(tree, pending, received, counters)
            pending, pending_size = [], 0
    _trace(tree, pending, received, counters)
    return received, False


def _pairs(world: PatchWorld, chunk: np.ndarray, live: np.ndarray, see) -> tuple[np.ndarray, np.ndarray]:
    """(shooter, receiver) pairs: the PVS lets the shooter's cluster see the receiver's, the
    receiver lies in front of the shooter's plane, and the shooter is not wholly behind the
    receiver's plane (its centroid within its own radius of the front)."""
    mask = np.ones((len(chunk), len(live)), dtype=bool) if see is None else see(world.cluster[chunk], world.cluster[live])
    sj, rj = np.nonzero(mask)
    si, ri = chunk[sj], live[rj]
    front = dot(world.normal[si], world.point[ri] - world.centroid[si]) > 0
    si, ri = si[front], ri[front]
    radius = np.sqrt(world.area[si])  # a bound on half the polygon's diameter, generous
    above = dot(world.normal[ri], world.centroid[si] - world.point[ri]) > -radius
    keep = above & (si != ri)
    return si[keep], ri[keep]


def _disk_estimate(world: PatchWorld, si: np.ndarray, ri: np.ndarray) -> np.ndarray:
    """A cheap, never much too small form factor: a disk of the shooter's area, cosines clamped
    to at least 0.25 so a grazing pair is not cut for its centre's angle."""
    rel = world.centroid[si] - world.point[ri]
    d2 = dot(rel, rel)
    d = np.sqrt(np.maximum(d2, 1e-300))
    cos_r = np.maximum(dot(world.normal[ri], rel) / d, 0.25)
    cos_s = np.maximum(-dot(world.normal[si], rel) / d, 0.25)
    a = world.area[si]
    return cos_r * cos_s * a / (math.pi * d2 + a) * 4.0


def _trace(tree, pending: list, received: np.ndarray, counters: dict) -> None:
    if not pending:
        return
    ri = np.concatenate([q[0] for q in pending])
    if not len(ri):
        return
    start = np.concatenate([q[1] for q in pending])
    end = np.concatenate([q[2] for q in pending])
    value = np.concatenate([q[3] for q in pending])
    for k in range(0, len(ri), RAY_BATCH):
        kind, _, _ = find_first_transitions(tree, start[k : k + RAY_BATCH], end[k : k + RAY_BATCH])
        clear = kind == RAY_E
        np.add.at(received, ri[k : k + RAY_BATCH][clear], value[k : k + RAY_BATCH][clear])
    counters["rays"] = counters.get("rays", 0) + len(ri)


def unshot_power(world: PatchWorld, unshot: np.ndarray) -> float:
    return float((world.area * unshot.max(axis=1)).sum())


def radiosity(world: PatchWorld, level, emission: np.ndarray, direct: np.ndarray, bounces: int, threshold: float,
              see, progress=None, cancel=None, counters: dict | None = None, clock=None) -> RadiosityResult:
    """Progressive refinement.  `emission` (P, 3): surface lights' radiance, shot first (that is
    direct light from area lights, round 0); `direct` (P, 3): point, spot and sun light at the
    patches.  Then `bounces` rounds, each shooting rho times what the patches received in the
    round before (round 1 shoots rho (direct + round 0))."""
    counters = counters if counters is not None else {}
    result = RadiosityResult(np.zeros_like(direct))
    total = 1 + bounces
    if emission.max(initial=0.0) > 0:
        got, stop = _round(world, level, emission, see, counters, cancel, result, 0, clock)
        result.received += got
        if stop:
            return result
        incoming = direct + got
    else:
        incoming = direct
    if progress is not None:
        progress(1 / total, "direct light shot")
    unshot = world.reflectance * incoming
    first_power = unshot_power(world, unshot)
    for b in range(1, bounces + 1):
        power = unshot_power(world, unshot)
        if power <= 0 or power < threshold * first_power:
            break
        got, stop = _round(world, level, unshot, see, counters, cancel, result, b, clock)
        result.received += got
        if stop:
            break
        unshot = world.reflectance * got
        if progress is not None:
            progress((b + 1) / total, f"bounce {b}/{bounces}")
    return result


def _round(world, level, unshot, see, counters, cancel, result: RadiosityResult, number: int, clock):
    """One round of shooting, recorded in result.rounds."""
    t0 = clock() if clock else 0.0
    power = world.area * unshot.max(axis=1)
    shooters = np.flatnonzero((power > 0) & (world.count > 0))
    shooters = shooters[np.lexsort((shooters, -power[shooters]))]  # most unshot power first
    before = dict(counters)
    got, stop = shoot(world, level, shooters, unshot, see, counters, cancel)
    result.rounds.append({"round": number, "shooters": int(len(shooters)),
                          "pairs": counters.get("pairs", 0) - before.get("pairs", 0),
                          "rays": counters.get("rays", 0) - before.get("rays", 0),
                          "unshot_power": float(power.sum()),
                          "seconds": (clock() - t0) if clock else 0.0})
    result.cancelled = stop
    return got, stop
