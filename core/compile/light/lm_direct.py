"""Direct light at sample points: point, spot, sun and area lights, shadow rays in batches.

For each light, the sample points (luxels and patch centres, lifted off their faces) it may
light are those of the clusters its own cluster can see (the PVS: a light hidden from a cluster
adds nothing there, and costs no ray), facing it, inside a spot's cone, and getting more than
LIGHT_CUTOFF unshadowed.  Their shadow rays (point to light; sun: point toward the sun, out of
the world or into a sky brush) go through the point tree in batches of RAY_BATCH segments
(core/compile/light/lm_rays.py: the NumPy lock-step walk or the C run-time).  The lights' own
arithmetic runs on the threads too (ShadowRays.ordered), the rays added in light order.  Lights with a radius (or a
sun with an angle) cast `samples` rays per point to a fixed spiral of points on the light's disk
seen from the point: soft shadow edges.  Area lights are sampled over their surface by
core/compile/light/lm_area.py through the same batches.  Values are in lightmap units (core/model/light_units.py).
A Quake light (a .map's, no power given) falls off and weighs the angle by ericw-tools' formulas
(light_units.quake_light_value); its 'delay 4' (local minlight) raises the points it reaches to
its value after every other light has added its own.

Sums are np.add.at (or lm_sum_c's loop) in the order the rays were made: the same scene gives the same bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...detmath import arctan2_upper, dot, norm
from ...errors import check_cancel
from ...geometry import cross3
from ...model.light_units import (POINT_VALUE_PER_WATT, QUAKE_FULL, is_quake_light, light_power, quake_angle,
                                   quake_light_value)
from ...runtime.trace import RAY_E, RAY_E2S
from ...tolerances import FORM_FACTOR_NEAR, LIGHT_CUTOFF
from .lm_area import area_direct, area_source
from .lm_rays import RAY_BATCH, ShadowRays
from .lm_sum_c import adder

#: rays below which a batch is traced on its light's own thread, not handed to the batch threads
LATER_RAYS = 8192

#: golden angle (radians) of the sample spiral
GOLDEN_ANGLE = math.pi * (3.0 - math.sqrt(5.0))


@dataclass
class SourceLight:
    """A point, spot or sun light ready to shine: power already in lightmap units."""

    name: str
    kind: str  # 'point', 'spot' or 'sun'
    position: np.ndarray  # (3,)
    rgb: np.ndarray  # (3,) value at 1 m square to the light (point, spot); W/m^2 / pi (sun)
    direction: np.ndarray  # (3,) unit, where it shines
    cos_half: float = -1.0  # spot: cos(size / 2)
    smooth: float = 0.0  # spot: blend * (1 - cos_half)
    radius: float = 0.0  # m (point, spot); sun: tan of half its angle
    cluster: int = -1  # PVS cluster of its position (-1: sees everything)
    #: a Quake light (light_units.quake_light_value): (delay, light, wait, falloff, anglescale,
    #: metres per unit); rgb is then its colour alone
    quake: tuple | None = None

    @property
    def local_min(self) -> bool:
        """A Quake 'delay 4' light: it raises what it sees to its value instead of adding."""
        return self.quake is not None and self.quake[0] == 4


def source_lights(scene, map_scale: float, samples: int = 8) -> list:
    """The scene's point, spot and sun lights in lightmap units, and its area lights
    (lm_area.AreaSource, `samples` cells each); surface lights are patches."""
    out = []
    for light in scene.lights:
        if light.kind == "surface":
            continue
        if light.kind == "area":
            out.append(area_source(light, map_scale, samples))
            continue
        color = np.asarray(light.color, dtype=np.float64)
        d = np.asarray(light.direction, dtype=np.float64)
        length = float(norm(d))
        d = d / length if length > 0 else np.array([0.0, 0.0, -1.0])
        if is_quake_light(light):
            out.append(_quake_source(light, color, d, map_scale))
            continue
        power = light_power(light, map_scale)
        if light.kind == "sun":
            radius = math.tan(math.radians(min(max(light.radius, 0.0), 179.0)) / 2.0)
            out.append(SourceLight(light.name, "sun", np.asarray(light.position, float), color * power / math.pi, d,
                                   radius=radius))
            continue
        src = SourceLight(light.name, light.kind, np.asarray(light.position, float), color * power * POINT_VALUE_PER_WATT,
                          d, radius=max(float(light.radius), 0.0))
        if light.kind == "spot":
            src.cos_half = math.cos(math.radians(min(max(light.spot_size, 0.0), 180.0)) / 2.0)
            src.smooth = min(max(light.spot_blend, 0.0), 1.0) * (1.0 - src.cos_half)
        out.append(src)
    return out


def _quake_source(light, color: np.ndarray, direction: np.ndarray, map_scale: float) -> SourceLight:
    """A Quake light (no power) as it shines: its colour, its keys, its cone or sun angle."""
    quake = (int(light.delay), float(light.intensity), float(light.wait), float(light.falloff),
             float(light.anglescale), float(map_scale))
    if light.kind == "sun":
        radius = math.tan(math.radians(min(max(light.radius, 0.0), 179.0)) / 2.0)
        return SourceLight(light.name, "sun", np.asarray(light.position, float), color, direction, radius=radius,
                           quake=quake)
    src = SourceLight(light.name, light.kind, np.asarray(light.position, float), color, direction,
                      radius=max(float(light.radius), 0.0), quake=quake)
    if light.kind == "spot":  # ericw-tools' cone: linear in the cosine from the soft cone to the edge
        src.cos_half = math.cos(math.radians(min(max(light.spot_size, 0.0), 180.0)) / 2.0)
        soft = min(max(float(light.softangle), 0.0), float(light.spot_size))
        src.smooth = (math.cos(math.radians(soft) / 2.0) - src.cos_half) if soft > 0 else 0.0
    return src


def disk_offsets(samples: int) -> np.ndarray:
    """(S, 2) points of the unit disk on a golden-angle spiral (one point, the centre, if S = 1)."""
    if samples <= 1:
        return np.zeros((1, 2))
    k = np.arange(samples)
    r = np.sqrt((k + 0.5) / samples)
    a = k * GOLDEN_ANGLE
    return np.stack([r * np.cos(a), r * np.sin(a)], axis=1)


def perpendicular_basis(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors perpendicular to each unit row of w (and to each other)."""
    ref = np.zeros_like(w)
    steep = np.abs(w[:, 2]) >= 0.7
    ref[steep, 0] = 1.0
    ref[~steep, 2] = 1.0
    a = cross3(ref, w)
    a = a / norm(a, axis=1)[:, None]
    return a, cross3(w, a)


def spot_factor(light: SourceLight, to_point: np.ndarray) -> np.ndarray:
    """The spot's cone for unit vectors from the light to the points: Blender's smoothstep over
    its blend, or for a Quake spot ericw-tools' linear ramp in the cosine from its soft cone."""
    c = dot(to_point, light.direction[None, :])
    if light.smooth <= 0:
        return (c > light.cos_half).astype(np.float64)
    t = np.clip((c - light.cos_half) / light.smooth, 0.0, 1.0)
    return t if light.quake is not None else t * t * (3.0 - 2.0 * t)


class RayBatcher:
    """Collects shadow rays (point index, start, end, value) and traces them RAY_BATCH at a time;
    clear rays add their value to out[point] (out None: they are kept in `found`, for the caller
    to add in order: a worker thread traces a light's rays, the caller sums them).  `sky` (list of (normals, dists) brushes): a ray
    stopped by one of them counts as clear (sunlight through the sky).  `rays`: the ShadowRays
    that trace them (None: the NumPy walk through the level's point tree).

    With out None, a batch is traced on the rays' batch threads (ShadowRays.later) while the light's
    thread makes the next: one sun lights most of a map, and its batches' arithmetic (the sky
    test, the clear rays' values) ran on one thread while the others waited (slope: the direct
    light's tracing threads idle half its 1.5 s).  `found` hands the batches back in the order
    they were made, whichever thread finished first: the same sums.  At most a batch a thread is
    in flight, and a batch holds at most RAY_BATCH rays: the memory does not grow with the
    threads (batches of whole disk samples, eight in flight, took slope's direct light from 212
    to 604 MB above its start on 8 threads)."""

    def __init__(self, level, out: np.ndarray | None, sky=(), counters: dict | None = None,
                 rays: ShadowRays | None = None):
        self.rays = rays if rays is not None else ShadowRays(level, "numpy")
        self.out, self.sky = out, list(sky)
        self._found: list = []  # out None: each batch's (points, values) of clear rays, or its job
        self.counters = counters if counters is not None else {}
        self.parts: list = []
        self.size = 0

    def add(self, index, start, end, value, sun: bool = False) -> None:
        """The rays, cut where a batch reaches RAY_BATCH (views: a sun's disk sample of every lit
        point is many batches, so the batches in flight bound the rays held)."""
        n, at = len(index), 0
        while at < n:
            take = min(n - at, RAY_BATCH - self.size)
            cut = slice(at, at + take)
            self.parts.append((index[cut], start[cut], end[cut], value[cut], sun))
            self.size += take
            at += take
            if self.size >= RAY_BATCH:
                self.flush()

    def flush(self) -> None:
        if not self.parts:
            return
        parts, size = self.parts, self.size
        self.parts, self.size = [], 0
        self.counters["rays"] = self.counters.get("rays", 0) + size
        if self.out is None and size >= LATER_RAYS:
            self._found.append(self.rays.later(self._traced, parts))
            self._found = self.rays.settle(self._found, self.rays.threads)  # at most a batch a thread in flight
        elif self.out is None:  # a small batch (a lamp's last): handing it over costs more than it gains
            self._found.append(self._traced(parts))
        else:
            index, value = self._traced(parts)
            np.add.at(self.out, index, value)

    def wait(self) -> None:
        """Until every batch handed to the batch threads is answered."""
        self.rays.settle(self._found, 0)

    @property
    def found(self) -> list:
        """Each batch's (point indices, values) of its clear rays, in the order they were made."""
        return self.rays.settle(self._found, 0)

    def _traced(self, parts: list) -> tuple[np.ndarray, np.ndarray]:
        """The clear rays of a batch of add()'s parts: (point indices, values).  A batch of one part
        (a slice of a sun's disk sample) is read as it is, not copied."""
        index, start, end, value = (parts[0][k] if len(parts) == 1 else np.concatenate([p[k] for p in parts])
                                    for k in range(4))
        sun = np.concatenate([np.full(len(p[0]), p[4]) for p in parts])
        kind, t = self.rays.transitions(start, end)
        clear = kind == RAY_E
        if self.sky and sun.any():
            stopped = np.flatnonzero(sun & (kind == RAY_E2S))
            if len(stopped):  # start + (t + 1e-6) (end - start), the products and sums in that order
                beyond = end[stopped]
                beyond -= start[stopped]
                beyond *= (t[stopped] + 1e-6)[:, None]
                beyond += start[stopped]
                clear[stopped] = self._in_sky(beyond)
        return index[clear], value[clear]

    def _in_sky(self, points: np.ndarray) -> np.ndarray:
        """Which points lie inside a sky brush (behind every face plane).  Each distance is
        x * nx + y * ny + z * nz - dist in that order, as matmul(points, normals.T) - dists gives
        it, to the bit.  A brush given with its grown box (sky_brushes) is tested only on the
        points in the box, found in the points sorted by x (2026-12-02:
        slope.map's light, 5 sky brushes over the whole map, 1.06 s -> 0.2 s, the same points)."""
        inside = np.zeros(len(points), dtype=bool)
        x, y, z = (np.ascontiguousarray(points[:, k]) for k in range(3))
        by_x = np.argsort(x, kind="stable")
        xs = x[by_x]
        for brush in self.sky:
            normals = np.asarray(brush[0], dtype=np.float64).reshape(-1, 3)
            dists = np.asarray(brush[1], dtype=np.float64).reshape(-1)
            if len(brush) > 2:
                box = np.asarray(brush[2], dtype=np.float64)
                left = by_x[np.searchsorted(xs, box[0, 0], "left"):np.searchsorted(xs, box[1, 0], "right")]
                py, pz = y[left], z[left]
                left = left[~inside[left] & (py >= box[0, 1]) & (py <= box[1, 1]) & (pz >= box[0, 2]) & (pz <= box[1, 2])]
            else:
                left = np.flatnonzero(~inside)
            keep = np.ones(len(left), dtype=bool)
            px, py, pz = x[left], y[left], z[left]
            d = np.empty(len(left))
            for k in range(len(normals)):
                np.multiply(px, normals[k, 0], out=d)
                d += py * normals[k, 1]
                d += pz * normals[k, 2]
                d -= dists[k]
                keep &= d < 0
            inside[left[keep]] = True
        return inside


def direct_light(level, lights: list[SourceLight], points: np.ndarray, normals: np.ndarray, clusters: np.ndarray,
                 see, samples: int = 8, sky=(), far: float = 1e4, progress=None, cancel=None,
                 counters: dict | None = None, patches=None, rays: ShadowRays | None = None,
                 views=None) -> np.ndarray:
    """(N, 3) direct light at the points (lifted sample points with their faces' normals).
    see(cluster, clusters) -> bool mask is the PVS test (None: every cluster sees every other).
    patches = (first, verts (P, K, 3), count (P,), area (P,)): points[first:] stand for these
    polygons, and get a point or spot light's *average* over the polygon (the solid angle it
    subtends from the light over its area, instead of cos / d^2 at one point) where the light is
    within FORM_FACTOR_NEAR (d^2 / area) of the patch, with the shadow ray to the point: a patch
    20 cm under a lamp shoots its mean light, not its hot centre's.
    A light's candidates are the points of the clusters it sees, cluster by cluster; each point
    still sums its lights in light order, so the order within a light changes no bit.
    views = (point_leaf (N,), touched (N,), per light (L,) bool leaves or None): a light with
    leaves (core/compile/light/lm_views.py) also skips the points in leaves it cannot reach -- rays that
    would have been blocked -- except points within TOUCH_EPSILON of a plane on their way down the
    tree (Tree.locate's `touched`: such a point may be reached from the leaf on the plane's other
    side)."""
    out = np.zeros((len(points), 3))
    shadow = rays if rays is not None else ShadowRays(level, "numpy")
    add = adder(shadow.backend)  # np.add.at, or its C loop: the same sums
    offsets = disk_offsets(samples)
    by_cluster = _ClusterRanges(clusters) if see is not None else None

    def light_rays(k: int) -> RayBatcher:
        """Light k's shadow rays traced on the worker's thread: the clear ones' points and values."""
        light = lights[k]
        if by_cluster is not None and light.kind != "sun":
            candidates = by_cluster.points_of(_light_sees(light, see, by_cluster.clusters))
        else:
            candidates = np.arange(len(points))
        if views is not None and views[2][k] is not None:
            candidates = candidates[views[2][k][views[0][candidates]] | views[1][candidates]]
        if light.kind == "sun":
            parts = _sun(light, points, normals, candidates, offsets, far)
        elif light.kind == "area":
            parts = _Parts()
            area_direct(light, points, normals, candidates, parts)
        else:
            parts = _point(light, points, normals, candidates, offsets, patches)
        traced = RayBatcher(level, None, sky, {}, shadow)
        for part in parts:
            traced.add(*part)
        traced.flush()
        traced.wait()  # every batch answered before the light is handed back: the lights waiting to
        return traced  # be summed hold their clear rays only, never batches in flight

    local = None  # Quake 'delay 4' lights: the most any of them gives each point
    for k, traced in enumerate(shadow.ordered(light_rays, range(len(lights)))):  # summed in light order
        check_cancel(cancel)
        own = np.zeros_like(out) if getattr(lights[k], "local_min", False) else out  # area lights are never Quake lights
        for index, value in traced.found:
            add(own, index, value)
        if counters is not None:
            counters["rays"] = counters.get("rays", 0) + traced.counters.get("rays", 0)
        if own is not out:
            local = own if local is None else np.maximum(local, own)
        if progress is not None:
            progress((k + 1) / max(len(lights), 1), f"light {k + 1}/{len(lights)}")
    return out if local is None else np.maximum(out, local)


class _Parts(list):
    """Collects RayBatcher.add's arguments (for lm_area.area_direct, which adds its rays)."""

    def add(self, *args) -> None:
        self.append(args)


def _light_sees(light, see, clusters: np.ndarray) -> np.ndarray:
    """The PVS mask over `clusters` of a light: its cluster's row, or the OR of the rows of every
    cluster under an area light (lm_area.pvs_points)."""
    under = getattr(light, "clusters", ()) or (light.cluster,)
    mask = see(under[0], clusters)
    for c in under[1:]:
        mask = mask | see(c, clusters)
    return mask


class _ClusterRanges:
    """Points grouped by cluster: points_of(mask over the distinct clusters) -> their indices."""

    def __init__(self, clusters: np.ndarray):
        self.order = np.argsort(clusters, kind="stable")
        self.clusters, first = np.unique(clusters[self.order], return_index=True)
        self.first = first
        self.size = np.diff(np.append(first, len(clusters)))

    def points_of(self, seen: np.ndarray) -> np.ndarray:
        which = np.flatnonzero(seen)
        size = self.size[which]
        total = int(size.sum())
        if total == 0:
            return np.zeros(0, dtype=np.int64)
        start = np.cumsum(size) - size  # where each cluster's run begins in the output
        at = np.arange(total) + np.repeat(self.first[which] - start, size)
        return self.order[at]


def _point(light: SourceLight, points, normals, candidates, offsets, patches=None) -> list:
    """The light's shadow rays, as RayBatcher.add's arguments."""
    to_light = light.position[None, :] - points[candidates]
    d2 = dot(to_light, to_light)
    cos_d = dot(to_light, normals[candidates])  # cos_r * d
    live = (d2 > 0) & (cos_d > 0)
    candidates, to_light, d2 = candidates[live], to_light[live], d2[live]
    d = np.sqrt(d2)
    w = to_light / d[:, None]
    cos_r = dot(w, normals[candidates])
    if light.quake is not None:  # Quake's falloff and angle, in .map units (light_units.quake_light_value)
        delay, value, wait, falloff, anglescale, scale = light.quake
        factor = quake_light_value(delay, value, wait, falloff, d / scale) * quake_angle(anglescale, cos_r) / QUAKE_FULL
        patches = None  # not an emitter of power: a patch takes its centre's value
    else:
        factor = cos_r / d2
    if patches is not None:
        first, verts, count, area = patches
        sel = np.flatnonzero((candidates >= first) & (cos_r > 0))
        p = candidates[sel] - first
        near = (area[p] > 0) & (d2[sel] < FORM_FACTOR_NEAR * area[p])
        sel, p = sel[near], p[near]
        width = max(int(count[p].max(initial=0)), 3)  # the padding past the longest polygon is not read
        factor[sel] = solid_angle(light.position, verts[p, :width], count[p]) / area[p]
    if light.kind == "spot":
        factor = factor * spot_factor(light, -w)
    # the brightest channel of factor * rgb is factor * max(rgb) (factor >= 0 where cos_r > 0)
    keep = (cos_r > 0) & (factor * float(light.rgb.max()) >= LIGHT_CUTOFF)
    idx, w = candidates[keep], w[keep]
    value = factor[keep, None] * light.rgb[None, :]
    if light.radius > 0 and len(offsets) > 1:
        a, b = perpendicular_basis(w)
        starts = points[idx]
        return [(idx, starts, light.position[None, :] + light.radius * (ox * a + oy * b), value / len(offsets))
                for ox, oy in offsets.tolist()]
    return [(idx, points[idx], np.broadcast_to(light.position, (len(idx), 3)).copy(), value)]


def solid_angle(origin: np.ndarray, verts: np.ndarray, count: np.ndarray) -> np.ndarray:
    """(M,) solid angle of convex polygons (padded (M, K, 3), count (M,)) seen from one point:
    a fan of triangles, each by Van Oosterom and Strackee's formula."""
    rel = verts - origin[None, None, :]
    length = np.sqrt(dot(rel, rel))
    total = np.zeros(len(verts))
    a, la = rel[:, 0], length[:, 0]
    for j in range(1, verts.shape[1] - 1):
        live = j + 1 < count
        b, c, lb, lc = rel[:, j], rel[:, j + 1], length[:, j], length[:, j + 1]
        num = np.abs(dot(a, cross3(b, c)))
        den = la * lb * lc + dot(a, b) * lc + dot(a, c) * lb + dot(b, c) * la
        total = total + np.where(live, 2.0 * arctan2_upper(num, den), 0.0)
    return total


def _sun(light: SourceLight, points, normals, candidates, offsets, far: float):
    """The sun's shadow rays, as RayBatcher.add's arguments: a list, or with a radius a generator
    making one disk sample's rays as it is read (a sun lights most points: on slope its eight
    samples' rays made at once held about 300 MB)."""
    w = -light.direction
    cos_r = dot(normals[candidates], w[None, :])
    if light.quake is not None:  # Quake's sun: L A / 255 (light_units)
        value = (quake_angle(light.quake[4], cos_r) * (light.quake[1] / QUAKE_FULL))[:, None] * light.rgb[None, :]
    else:
        value = cos_r[:, None] * light.rgb[None, :]
    keep = (cos_r > 0) & (value.max(axis=1) >= LIGHT_CUTOFF)
    idx, value = candidates[keep], value[keep]
    if light.radius > 0 and len(offsets) > 1:
        return _sun_disk(light, w, points, idx, value, offsets, far)
    return [(idx, points[idx], points[idx] + far * w[None, :], value, True)]


def _sun_disk(light: SourceLight, w, points, idx, value, offsets, far: float):
    """_sun's rays for a sun with a radius, one disk sample at a time."""
    a, b = perpendicular_basis(w[None, :])
    start, share = points[idx], value / len(offsets)  # every sample's: made once
    for ox, oy in offsets.tolist():
        d = w + light.radius * (ox * a[0] + oy * b[0])
        d = d / float(norm(d))
        yield (idx, start, start + far * d[None, :], share, True)
