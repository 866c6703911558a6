"""Direct light from area lights (Blender's Area light): stratified samples over the light, one
shadow ray each, for soft shadow edges.

An area light (core/model/light_units.py) is a one-sided Lambertian square, rectangle, disk or
ellipse of radiance L = P / (pi A).  At a sample point x with normal n (lifted off its face) in
front of the light, the unshadowed value is L F(x), F the form factor from x to the light's
polygon by Lambert's formula (lm_radiosity.point_polygon_form_factor, the polygon clipped to x's
front half-space; a disk or ellipse is the ELLIPSE_SIDES-gon of the same area): exact, however
near the light.  The light's surface is cut into n x n cells of equal area (n = ceil(sqrt(
samples)); disks and ellipses by Shirley and Chiu's concentric map of the square's cells), the
same fixed pattern for every point, so the bake is deterministic; each cell centre gets one
shadow ray carrying the share

    L F(x) * s_k w_k / sum_j w_j,    w_k = cos_x cos_light / d^2 toward cell k,

s_k Cycles' spread factor for the direction to cell k (1 at the default 180 degrees).  Unshadowed,
the shares sum to L F(x) exactly (at 180 degrees); a shadow edge hides some of them: the
penumbra.

A narrowed spread (half angle a) lights x only from the part of the light within R = h tan a of
the foot of x on the light's plane (h: x's height over it), where Cycles' factor is
(N / h) (R - r), r the distance from the foot (N its normalisation).  Where that disk is smaller
than the light (pi R^2 < A) the fixed cells would miss the cone between them, so x's samples are
instead drawn on the disk with the density of that factor (r by the inverse of its distribution
3 (r / R)^2 - 2 (r / R)^3, stratified in r and angle, the same pattern for every point), each
kept if it lies on the light and carrying

    L (N R^3 / (3 h S)) cos_x cos_light / d^2,

the factor's integral over the disk (N pi R^3 / (3 h)) split evenly, times what varies little
over a narrow cone.

A light reaches the clusters that any cluster under its surface can see: the PVS rows of the
clusters of a fine grid over the light (PVS_GRID x PVS_GRID points, its outline and its cells),
each AREA_LIGHT_GAP in front of it, ORed (a light reaching across a portal lights what either side
sees; the cluster in front of its centre alone would cull luxels round a corner that see only
the far part).  Rays stop AREA_LIGHT_GAP short of the light.  Rays
go through the same batches as the other lights' (lm_direct).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...detmath import dot, norm
from ...geometry import cross3
from ...model.light_units import (AREA_RADIANCE_PER_WATT, area_light_area, area_spread_factor, light_power,
                                 spread_constants)
from ...tolerances import AREA_LIGHT_GAP, LIGHT_CUTOFF
from .lm_radiosity import point_polygon_form_factor

#: sides of the polygon (of the same area) that stands for a disk or an ellipse in the form factor
ELLIPSE_SIDES = 32
#: points a side of the grid whose clusters make the light's PVS (with the outline and the cells)
PVS_GRID = 17
#: sample points handled at once (memory: CHUNK x samples x 3 doubles, several times)
CHUNK = 1 << 15


@dataclass
class AreaSource:
    """An area light ready to shine: radiance in lightmap units, its polygon and sample cells."""

    name: str
    centre: np.ndarray  # (3,)
    normal: np.ndarray  # (3,) unit, where it shines
    rgb: np.ndarray  # (3,) radiance L (colour x P / (pi A))
    polygon: np.ndarray  # (K, 3) the outline (an area-matched polygon for disks and ellipses)
    cells: np.ndarray  # (S, 3) the sample cells' centres, on the light
    spread: float = 180.0  # degrees
    position: np.ndarray | None = None  # (3,) where its PVS cluster is found
    cluster: int = -1
    clusters: tuple = ()  # every cluster under the light (its PVS is the OR of theirs); () = (cluster,)
    kind: str = "area"
    u: np.ndarray | None = None  # (3,) the light's local X (unit)
    v: np.ndarray | None = None  # (3,) its local Y
    half: tuple = (0.5, 0.5)  # half sizes along u and v
    round: bool = False  # disk or ellipse
    cone_cells: np.ndarray | None = None  # (S, 2) the narrow spread's pattern on the unit disk


def light_frame(light) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(normal, u, v): unit normal (the light's direction), u its local X made perpendicular to
    the normal (any perpendicular if `axis` is parallel to it), v = normal x u."""
    n = np.asarray(light.direction, dtype=np.float64)
    n = n / float(norm(n))
    u = np.asarray(light.axis, dtype=np.float64)
    u = u - float(dot(u, n)) * n
    if float(norm(u)) < 1e-9:
        u = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        u = u - float(dot(u, n)) * n
    u = u / float(norm(u))
    return n, u, cross3(n, u)


def unit_cells(shape: str, samples: int) -> np.ndarray:
    """(S, 2) equal-area cell centres of the light in units of its half sizes ([-1, 1]^2, or the
    unit disk for disks and ellipses), S = ceil(sqrt(samples))^2, row by row."""
    n = max(1, math.ceil(math.sqrt(max(int(samples), 1)) - 1e-9))
    c = (np.arange(n) + 0.5) / n * 2.0 - 1.0
    a, b = [x.ravel() for x in np.meshgrid(c, c, indexing="xy")]
    if shape not in ("disk", "ellipse"):
        return np.stack([a, b], axis=1)
    out = np.zeros((len(a), 2))
    for k, (x, y) in enumerate(zip(a.tolist(), b.tolist())):  # Shirley and Chiu's concentric map
        if x == 0.0 and y == 0.0:
            continue
        if abs(x) > abs(y):
            r, phi = x, (math.pi / 4.0) * (y / x)
        else:
            r, phi = y, math.pi / 2.0 - (math.pi / 4.0) * (x / y)
        out[k] = (r * math.cos(phi), r * math.sin(phi))
    return out


def cone_cells(samples: int) -> np.ndarray:
    """(S, 2) points of the unit disk with density (1 - r) (the spread factor's cone): n rings at
    r = the inverse of 3 r^2 - 2 r^3 at (i + 0.5) / n, n points each, turned by the golden angle
    ring to ring; S = ceil(sqrt(samples))^2."""
    n = max(1, math.ceil(math.sqrt(max(int(samples), 1)) - 1e-9))
    out = []
    for i in range(n):
        target, lo, hi = (i + 0.5) / n, 0.0, 1.0
        for _ in range(60):  # bisection: 3 r^2 - 2 r^3 rises from 0 to 1 on [0, 1]
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if 3 * mid * mid - 2 * mid ** 3 < target else (lo, mid)
        r = 0.5 * (lo + hi)
        for j in range(n):
            t = 2.0 * math.pi * (j + 0.5) / n + i * (math.pi * (3.0 - math.sqrt(5.0)))
            out.append((r * math.cos(t), r * math.sin(t)))
    return np.array(out)


def area_source(light, map_scale: float, samples: int) -> AreaSource:
    """The core Light (kind 'area') as an AreaSource with ceil(sqrt(samples))^2 cells."""
    n, u, v = light_frame(light)
    hx = 0.5 * float(light.size)
    hy = 0.5 * float(light.size_y) if light.shape in ("rectangle", "ellipse") else hx
    area = area_light_area(light)
    c = np.asarray(light.position, dtype=np.float64)
    if light.shape in ("disk", "ellipse"):
        grow = math.sqrt(2.0 * math.pi / (ELLIPSE_SIDES * math.sin(2.0 * math.pi / ELLIPSE_SIDES)))
        ang = [2.0 * math.pi * k / ELLIPSE_SIDES for k in range(ELLIPSE_SIDES)]
        outline = np.array([(grow * math.cos(t), grow * math.sin(t)) for t in ang])
    else:
        outline = np.array([(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)])
    # counter-clockwise seen from the lit side (irrelevant to the form factor, kept tidy)
    outline = outline[::-1] if float(dot(cross3(u, v), n)) < 0 else outline
    polygon = c[None, :] + (hx * outline[:, :1]) * u[None, :] + (hy * outline[:, 1:]) * v[None, :]
    cells2 = unit_cells(light.shape, samples)
    cells = c[None, :] + (hx * cells2[:, :1]) * u[None, :] + (hy * cells2[:, 1:]) * v[None, :]
    power = light_power(light, map_scale)
    rgb = np.asarray(light.color, dtype=np.float64) * (power * AREA_RADIANCE_PER_WATT / area if area > 0 else 0.0)
    return AreaSource(light.name, c, n, rgb, polygon, cells, float(light.spread), c + AREA_LIGHT_GAP * n, u=u, v=v,
                      half=(hx, hy), round=light.shape in ("disk", "ellipse"),
                      cone_cells=cone_cells(samples))


def pvs_points(light: AreaSource) -> np.ndarray:
    """(P, 3) points AREA_LIGHT_GAP in front of the light whose clusters make its PVS: a
    PVS_GRID x PVS_GRID grid over the light (inside its outline for disks and ellipses), the
    outline pulled in by the same gap, and the sample cells."""
    g = np.linspace(-1.0, 1.0, PVS_GRID)
    a, b = [x.ravel() for x in np.meshgrid(g, g, indexing="xy")]
    if light.round:
        keep = a * a + b * b <= 1.0
        a, b = a[keep], b[keep]
    hx, hy = light.half
    grid = light.centre[None, :] + (hx * a[:, None]) * light.u[None, :] + (hy * b[:, None]) * light.v[None, :]
    towards = light.centre[None, :] - light.polygon
    length = np.maximum(norm(towards, axis=1), 1e-300)[:, None]
    outline = light.polygon + towards * np.minimum(1.0, AREA_LIGHT_GAP / length)
    return np.concatenate([grid, outline, light.cells]) + AREA_LIGHT_GAP * light.normal[None, :]


def unshadowed(light: AreaSource, points: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """(M,) L's factor F: the form factor from each point to the light's polygon (0 behind it)."""

    front = dot(points - light.centre[None, :], light.normal[None, :]) > 0
    f = np.zeros(len(points))
    if front.any():
        k = len(light.polygon)
        verts = np.broadcast_to(light.polygon, (int(front.sum()), k, 3))
        f[front] = point_polygon_form_factor(points[front], normals[front], verts, np.full(len(verts), k))
    return f


def area_direct(light: AreaSource, points: np.ndarray, normals: np.ndarray, candidates: np.ndarray, rays) -> None:
    """Shadow rays of one area light to the candidate points, added to `rays` (a RayBatcher)."""
    for k in range(0, len(candidates), CHUNK):
        _chunk(light, points, normals, candidates[k : k + CHUNK], rays)


def _chunk(light: AreaSource, points, normals, idx, rays) -> None:
    f = unshadowed(light, points[idx], normals[idx])
    keep = f * float(light.rgb.max()) >= LIGHT_CUTOFF
    idx, f = idx[keep], f[keep]
    if not len(idx):
        return
    x = points[idx]
    narrow = np.zeros(len(idx), dtype=bool)
    if light.spread < 180.0:
        tan_a = math.tan(math.radians(light.spread) / 2.0)
        height = dot(x - light.centre[None, :], light.normal[None, :])
        narrow = math.pi * (height * tan_a) ** 2 < _area(light)
    if narrow.any():
        _narrow(light, x[narrow], normals[idx[narrow]], idx[narrow], height[narrow] * tan_a, rays)
    wide = ~narrow
    if wide.any():
        _cells(light, x[wide], normals[idx[wide]], idx[wide], f[wide], rays)


def _area(light: AreaSource) -> float:
    hx, hy = light.half
    return 4.0 * hx * hy * (math.pi / 4.0 if light.round else 1.0)


def _cells(light: AreaSource, x, nx, idx, f, rays) -> None:
    """The fixed cells, each ray a share of the exact L F(x) (see the module's notes)."""
    to_cell = light.cells[None, :, :] - x[:, None, :]  # (M, S, 3)
    d2 = dot(to_cell, to_cell)
    d = np.maximum(np.sqrt(d2), 1e-12)
    cos_x = np.maximum(dot(to_cell, nx[:, None, :]), 0.0) / d
    cos_l = np.maximum(-dot(to_cell, light.normal[None, None, :]), 0.0) / d
    w = cos_x * cos_l / d2
    total = w.sum(axis=1)
    none = total <= 0  # every cell behind the point's face: share equally (a grazing light)
    w[none] = 1.0
    total[none] = w.shape[1]
    share = w / total[:, None]
    if light.spread < 180.0:
        share = share * area_spread_factor(light.spread, _tan(cos_l))
    value = f[:, None, None] * share[..., None] * light.rgb[None, None, :]  # (M, S, 3)
    _send(light, x, idx, to_cell, d, value, rays)


def _narrow(light: AreaSource, x, nx, idx, radius, rays) -> None:
    """Samples drawn on the disk of radius R = h tan a around each point's foot on the light with
    the spread factor's density, kept where on the light (see the module's notes)."""
    height = dot(x - light.centre[None, :], light.normal[None, :])
    foot = x - height[:, None] * light.normal[None, :]
    cells = light.cone_cells
    q = (foot[:, None, :] + radius[:, None, None] * (cells[None, :, :1] * light.u[None, None, :]
                                                     + cells[None, :, 1:] * light.v[None, None, :]))
    rel = q - light.centre[None, None, :]
    a = dot(rel, light.u[None, None, :]) / light.half[0]
    b = dot(rel, light.v[None, None, :]) / light.half[1]
    on = (a * a + b * b <= 1.0) if light.round else ((np.abs(a) <= 1.0) & (np.abs(b) <= 1.0))
    to_cell = q - x[:, None, :]
    d2 = dot(to_cell, to_cell)
    d = np.maximum(np.sqrt(d2), 1e-12)
    cos_x = np.maximum(dot(to_cell, nx[:, None, :]), 0.0) / d
    cos_l = np.maximum(-dot(to_cell, light.normal[None, None, :]), 0.0) / d
    _, scale = spread_constants(light.spread)
    share = scale * radius ** 3 / (3.0 * height * len(cells))
    w = on * cos_x * cos_l / d2 * share[:, None]
    _send(light, x, idx, to_cell, d, w[..., None] * light.rgb[None, None, :], rays)


def _tan(cos_l: np.ndarray) -> np.ndarray:
    sin_l = np.sqrt(np.maximum(1.0 - cos_l * cos_l, 0.0))
    return np.where(cos_l > 0, sin_l / np.where(cos_l > 0, cos_l, 1.0), np.inf)


def _send(light: AreaSource, x, idx, to_cell, d, value, rays) -> None:
    """One shadow ray per (point, cell) with a value, stopping AREA_LIGHT_GAP short of the light."""
    ends = x[:, None, :] + to_cell * (1.0 - AREA_LIGHT_GAP / d)[..., None]
    for s in range(to_cell.shape[1]):
        live = value[:, s].max(axis=1) > 0
        rays.add(idx[live], x[live], ends[live, s], value[live, s])
