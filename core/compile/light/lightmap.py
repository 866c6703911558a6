"""The light stage: charts, sample points, direct light, radiosity bounces, pages into the level.

bake_light(level, scene) runs, as scene.settings says (light, luxel, patch, bounces,
light_threshold, reflectance, light_samples):

1. charts (lm_charts.make_charts) and patches (lm_patches.make_patches);
2. sample points: each luxel's centre (or n x n points spread over it, luxel_samples, averaged)
   and each patch's centroid moved to the nearest point of its
   face, LUXEL_INSET inside its edges, and lifted off it (lm_charts.nearest_in_faces, lift); a point still inside solid is moved halfway to the
   face's centre again, up to SOLID_RETRIES times (then it is left at the centre): luxels are
   moved, never sampled inside solid;
3. direct light at luxels and patch centres (lm_direct.direct_light), each light culled by the
   PVS of its cluster when the level has visibility;
4. bounces (lm_radiosity.radiosity): surface lights shot first, then progressive refinement;
   each luxel adds its face's patch light, bilinearly interpolated over the patch grid;
5. a scene's minlight (a Quake worldspawn's) raises every luxel to it;
6. pages: linear float32 RGB, each chart's padding ring holding a coplanar neighbour's luxels
   where the face meets one on the luxel lattice (no seam where a face is split on a lattice
   line: a region's line, an axial node plane), else repeating its edge luxels.

A cancel during bounces keeps the light so far (level.stats['light']['cancelled']).
"""

from __future__ import annotations

import time

import numpy as np

from ...errors import check_cancel
from ...model.light_units import light_power
from ...model.scene import check_settings
from ...runtime.pvs import has_vis, visibility
from ...runtime.query import point_leaves, point_solid
from ...tolerances import LUXEL_LIFT, SKY_BOX_MARGIN
from .lm_area import pvs_points
from .lm_charts import PADDING, Charts, chart_texels, edge_lines, lift, lit_faces, make_charts, move_into_faces, nearest_in_faces
from .lm_direct import direct_light, source_lights
from .lm_patches import Patches, make_patches
from .lm_locate_c import locate
from .lm_radiosity import PatchWorld, radiosity
from .lm_rays import ShadowRays
from .lm_views import light_views

#: times a sample point found inside solid is moved halfway to its face's centre again
SOLID_RETRIES = 4


def sample_points(level, charts: Charts, faces: np.ndarray, st: np.ndarray, lines,
                  backend: str = "numpy") -> tuple[np.ndarray, int]:
    """Lifted sample points for (s, t) positions on faces, moved into the faces and out of solid
    (the solid test and the moves by `backend`, 'numpy' or 'c': the same answers).
    Returns (points (N, 3), how many had to be moved out of solid)."""
    moves = "c" if backend == "c" and _charts_kernel() else "numpy"  # who moves points into faces
    moved = nearest_in_faces(level, charts, faces, st, lines=lines, backend=moves)
    points = lift(charts, faces, moved, LUXEL_LIFT)
    solid = np.flatnonzero(point_solid(level, points, backend=backend))
    count = len(solid)
    shrink = np.ones(len(solid))
    for _ in range(SOLID_RETRIES):
        if not len(solid):
            break
        shrink = shrink * 0.5
        again = move_into_faces(level, charts, faces[solid], st[solid], shrink=shrink, lines=lines, backend=moves)
        points[solid] = lift(charts, faces[solid], again, LUXEL_LIFT)
        still = point_solid(level, points[solid], backend=backend) != 0
        solid, shrink = solid[still], shrink[still]
    if len(solid):
        centre = move_into_faces(level, charts, faces[solid], st[solid], shrink=np.zeros(len(solid)), lines=lines,
                                 backend=moves)
        points[solid] = lift(charts, faces[solid], centre, LUXEL_LIFT)
    return points, count


def _charts_kernel() -> bool:
    from .lm_charts_c import available

    return available()


def clusters_of(level, points: np.ndarray, backend: str = "numpy") -> np.ndarray:
    leaves = point_leaves(level, points, backend=backend)
    if has_vis(level):
        return np.asarray(level.vis_leaf_cluster, dtype=np.int64)[leaves]
    return np.full(len(points), -1, dtype=np.int64)


def patch_world(level, charts: Charts, patches: Patches, lines, reflectance: float, backend: str = "numpy") -> PatchWorld:
    f = patches.face
    live = patches.count > 0
    points = np.zeros((len(f), 3))
    if live.any():
        points[live] = sample_points(level, charts, f[live], patches.centroid_st[live], lines, backend)[0]
    centroid = lift(charts, f, patches.centroid_st, 0.0)
    k = patches.st.shape[1]
    flat = lift(charts, np.repeat(f, k), patches.st.reshape(-1, 2), 0.0).reshape(len(f), k, 3)
    rho = np.full((len(f), 3), float(reflectance))
    return PatchWorld(flat, patches.count, patches.area, points, centroid, charts.face_normal[f],
                      clusters_of(level, points, backend), rho, f, patches.cell)


def interpolate_patches(charts: Charts, patches: Patches, values: np.ndarray) -> np.ndarray:
    """(N, 3) each luxel's value read bilinearly from its face's patch grid (patch centres at
    block centres; empty patches left out and the weights renormalised; a luxel with no live
    patch around gets its face's mean)."""
    f = charts.luxel_face
    b = patches.block
    g = (charts.luxel_ij + 0.5) / b - 0.5
    size = patches.grid_size[f]
    g0 = np.clip(np.floor(g).astype(np.int64), 0, size - 1)
    g1 = np.minimum(g0 + 1, size - 1)
    frac = np.clip(g - g0, 0.0, 1.0)
    live = patches.count > 0
    total = np.zeros((len(f), 3))
    weight = np.zeros(len(f))
    for cx, wx in ((g0[:, 0], 1.0 - frac[:, 0]), (g1[:, 0], frac[:, 0])):
        for cy, wy in ((g0[:, 1], 1.0 - frac[:, 1]), (g1[:, 1], frac[:, 1])):
            idx = patches.grid_first[f] + cy * size[:, 0] + cx
            w = wx * wy * live[idx]
            total = total + w[:, None] * values[idx]
            weight = weight + w
    face_sum = np.zeros((len(charts.face_page), 3))
    face_area = np.zeros(len(charts.face_page))
    np.add.at(face_sum, patches.face, patches.area[:, None] * values)
    np.add.at(face_area, patches.face, patches.area)
    mean = face_sum / np.where(face_area > 0, face_area, 1.0)[:, None]
    ok = weight > 0
    return np.where(ok[:, None], total / np.where(ok, weight, 1.0)[:, None], mean[f])


def fill_pages(level, charts: Charts, luxel_values: np.ndarray, lines=None, texels=None) -> np.ndarray:
    """(K, S, S, 3) float32 pages: every chart's luxels, and its padding ring (lm_charts.chart_texels):
    a coplanar neighbour's luxel where the face meets one on the lattice, else the nearest edge
    luxel (clamped index).  Bilinear filtering never reads another chart's texels, and reads the
    same luxels on both sides of a face split on a lattice line: no seam.  `texels`: chart_texels'
    answer made already (the bake makes it on a worker thread while the light is traced)."""
    s = charts.page_size
    pages = np.zeros((charts.num_pages, s, s, 3), dtype=np.float32)
    if len(charts.face_page) == 0:
        return pages
    page, y, x, lux = texels if texels is not None else chart_texels(level, charts, lines)
    pages[page, y, x] = luxel_values[lux].astype(np.float32)
    return pages


def surface_emission(scene, level, patches: Patches, map_scale: float) -> np.ndarray:
    """(P, 3) radiance of patches on faces whose brush face carries a surface light's texture."""
    return face_emission(scene, level, map_scale)[patches.face]


def face_emission(scene, level, map_scale: float) -> np.ndarray:
    """(F, 3) radiance of each level face whose brush face carries a surface light's texture
    (also what the add-on's Bake with Cycles gives those faces)."""
    emission = np.zeros((len(np.asarray(level.face_plane)), 3))
    surface = [li for li in scene.lights if li.kind == "surface" and li.texture]
    if not surface:
        return emission
    face_texture = face_textures(scene, level)
    for li in surface:
        rgb = np.asarray(li.color, dtype=np.float64) * light_power(li, map_scale)
        hit = np.array([t.lower() == li.texture.lower() for t in face_texture], dtype=bool)
        emission[hit] += rgb
    return emission


def face_textures(scene, level) -> list[str]:
    """The texture of each level face: its brush's face on the same plane (by direction)."""
    from ...model.brushes import Contents  # the model, for the scene's brush order

    ordered = scene.brushes_with(Contents.SOLID) + scene.brushes_with(Contents.DETAIL)
    out = []
    normals = np.asarray(level.plane_normals)[np.asarray(level.face_plane)]
    dists = np.asarray(level.plane_dists)[np.asarray(level.face_plane)]
    for f, b in enumerate(np.asarray(level.face_brush).tolist()):
        brush = ordered[b] if 0 <= b < len(ordered) else None
        if brush is None or not brush.textures:
            out.append("")
            continue
        score = np.abs(brush.normals - normals[f]).sum(axis=1) + np.abs(brush.dists - dists[f])
        k = int(np.argmin(score))
        out.append(brush.textures[k] if k < len(brush.textures) else "")
    return out


def sky_brushes(scene) -> list:
    """(normals, dists, box) of brushes with a texture named sky*: sunlight comes through them.
    box (2, 3): the brush's bounds grown by SKY_BOX_MARGIN, which lets RayBatcher._in_sky test a
    brush's planes only on the points inside its box."""
    return [(b.normals, b.dists, b.bounds + np.array([[-SKY_BOX_MARGIN], [SKY_BOX_MARGIN]]))
            for b in scene.brushes if any(t.lower().startswith("sky") for t in (b.textures or []))]


def bake_light(level, scene, progress=None, cancel=None, backend: str = "auto", farm=None) -> dict:
    """Lightmaps for a compiled level (after visibility), stored into level.lm_*.  Returns the
    stage's stats (also level.stats['light']): counts, rays, seconds of direct light and of each
    bounce, and whether a cancel cut the bounces short.  `backend` traces the rays
    (core/compile/light/lm_rays.py: 'auto' = the C run-time where it builds, else NumPy; 'numpy';
    'c'): the same pages either way.  `farm` (the bake farm's LevelFarm: shadow_rays(level,
    backend)) traces the large ray batches on a cluster's workers: the same pages again."""
    check_settings(scene.settings, where=f"scene {scene.name!r}")  # the light settings, where first used
    clock = time.perf_counter
    t0 = clock()
    stats: dict = {"rays": 0}
    rays = ShadowRays(level, backend) if farm is None else farm.shadow_rays(level, backend)
    try:
        return _bake_light(level, scene, progress, cancel, rays, stats, clock, t0)
    finally:
        if farm is not None:
            stats["farmed_rays"] = rays.farmed
            rays.close()


def _bake_light(level, scene, progress, cancel, rays, stats: dict, clock, t0) -> dict:
    s = scene.settings
    stats["backend"], stats["threads"] = rays.backend, rays.threads
    stats["native"] = rays.native  # which library traced them, and why (the bake table)
    charts = make_charts(level, s.luxel, lit=lit_faces(level))
    lines = edge_lines(level, charts)

    def patch_side():  # the patches and their points: on a batch thread while the luxels' are made here
        patches = make_patches(level, charts, s.patch)
        return patches, patch_world(level, charts, patches, lines, s.reflectance, rays.backend)

    side = rays.later(patch_side)
    n = s.luxel_samples  # n x n points a luxel, averaged (1: its centre)
    sub = (np.arange(n) + 0.5) / n
    offsets = np.stack(np.meshgrid(sub, sub, indexing="ij"), axis=-1).reshape(-1, 2)
    lux_face = np.repeat(charts.luxel_face, len(offsets))
    ij_st = ((charts.grid_lo[charts.luxel_face] + charts.luxel_ij)[:, None, :] + offsets[None]).reshape(-1, 2) * s.luxel
    # which luxel each page texel shows depends on the charts alone: made beside the light
    texels = rays.later(chart_texels, level, charts, lines) if len(charts.face_page) else None
    points, moved = sample_points(level, charts, lux_face, ij_st, lines, rays.backend)
    clusters = clusters_of(level, points, rays.backend)
    patches, world = rays.settle([side], 0)[0]
    stats.update(faces=int((charts.face_page >= 0).sum()), luxels=charts.num_luxels, patches=int((patches.count > 0).sum()),
                 pages=charts.num_pages, page_size=charts.page_size, luxels_moved_out_of_solid=moved,
                 charts_seconds=clock() - t0)
    check_cancel(cancel)
    vis = visibility(level) if has_vis(level) else None
    lights = source_lights(scene, s.map_scale, s.light_samples)
    if vis is not None and lights:
        light_clusters = clusters_of(level, np.array([li.position for li in lights]), rays.backend)
        for li, c in zip(lights, light_clusters.tolist()):
            li.cluster = c
            if li.kind == "area":  # a light across a portal reaches what any cluster under it sees
                li.clusters = tuple(np.unique(clusters_of(level, pvs_points(li), rays.backend)).tolist())
    see_one = None if vis is None else (lambda c, cl: vis.see_matrix([c], cl)[0])
    see_many = None if vis is None else vis.see_matrix
    bar = _Split(progress, 1.0, 1.0 + s.bounces)
    t1 = clock()
    both = np.concatenate([points, world.point])
    normals = np.concatenate([charts.face_normal[lux_face], world.normal])
    views = None
    if vis is not None:
        seen = light_views(level, lights, _far(level), rays.backend)
        if any(v is not None for v in seen):
            views = (*locate(level.point_tree(), both, rays.backend), seen)
    stats["views_seconds"] = clock() - t1
    direct = direct_light(level, lights, both, normals, np.concatenate([clusters, world.cluster]), see_one,
                          s.light_samples, sky_brushes(scene), far=_far(level), progress=bar.first,
                          cancel=cancel, counters=stats, patches=(len(points), world.verts, world.count, world.area),
                          rays=rays, views=views)
    direct_lux = direct[: len(points)].reshape(charts.num_luxels, len(offsets), 3).mean(axis=1)
    direct_patch = direct[len(points):]
    direct_patch[world.count == 0] = 0.0
    stats["direct_seconds"] = clock() - t1
    stats["direct_rays"] = stats["rays"]
    emission = surface_emission(scene, level, patches, s.map_scale)
    result = radiosity(world, level, emission, direct_patch, s.bounces, s.light_threshold, see_many,
                       progress=bar.second, cancel=cancel, counters=stats, clock=clock, shoot_fraction=s.shoot_fraction,
                       rays=rays)
    values = direct_lux + interpolate_patches(charts, patches, result.received)
    if any(scene.minlight):  # a Quake worldspawn's minlight: no luxel darker (core/model/light_units.py)
        values = np.maximum(values, np.asarray(scene.minlight, dtype=np.float64)[None, :])
    store_light(level, charts, fill_pages(level, charts, values, lines, rays.settle([texels], 0)[0]))
    stats.update(bounce_rounds=result.rounds, unshot_left=result.unshot_left, bounces_done=sum(1 for r in result.rounds if r["round"] > 0),
                 cancelled=result.cancelled, seconds=clock() - t0)
    level.stats["light"] = stats
    return stats


def store_light(level, charts: Charts, pages: np.ndarray) -> None:
    """The lightmap into the level (.bbk sections LMHD, LMPG, LMFP, LMFR, LMUV)."""
    level.lm_luxel = float(charts.luxel)
    level.lm_pages = pages
    level.lm_face_page = charts.face_page.astype(np.int32)
    size = charts.grid_size + 2 * PADDING
    rect = np.concatenate([charts.chart_origin, size], axis=1).astype(np.int32)
    rect[charts.face_page < 0] = 0  # no chart: no rectangle
    level.lm_face_rect = rect
    level.lm_vertex_uv = np.asarray(charts.vertex_uv, dtype=np.float64)


def _far(level) -> float:
    b = np.asarray(level.world_bounds, dtype=np.float64)
    return float(2.0 * np.sqrt(((b[1] - b[0]) ** 2).sum()) + 1.0)


class _Split:
    """Two parts of one progress bar, weighted a : b."""

    def __init__(self, progress, a: float, b: float):
        self.progress, self.cut = progress, a / (a + b)

    def first(self, fraction: float, message: str = "") -> None:
        if self.progress is not None:
            self.progress(self.cut * fraction, f"direct: {message}")

    def second(self, fraction: float, message: str = "") -> None:
        if self.progress is not None:
            self.progress(self.cut + (1 - self.cut) * fraction, message)
