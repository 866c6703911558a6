"""The pipeline: a Scene in, a CompiledLevel out.

:func:`bake_scene` is the one entry the command line and the add-on call; everything it does is
decided by ``scene.settings``.  Stages: brushes -> plane table -> CSG union of faces (structural,
then detail) -> structural tree -> detail faces pushed and split into the empty leaves -> flat
arrays (:func:`compile_scene`) -> onion tree for the scene's box hulls -> visibility (portals,
leak check, PVS) and the outside fill of a sealed map (settings.fill) -> bevels for plane shifting
-> crowd slices (settings.slices) -> light.  Each stage is timed and counted in level.stats for the command line's table.
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import LeakError
from ..model.brushes import Contents
from ..model.scene import Scene, check_settings
from ..runtime.level import CompiledLevel
from .crowds.slices import SliceSettings, slice_world
from .light.lightmap import bake_light
from .stage_progress import StageProgress
from .trees.bevel import BevelSettings, add_bevels
from .. import kernels
from .trees.build import compile_scene, splitter_settings  # noqa: F401 -- the first stage, named here for callers
from .vis.leaks import check_scene, inside_points
from .vis.outside_fill import fill_outside
from .vis.sliver_seal import qbsp_leak_report
from .vis.vis import bake_vis


def bake_scene(scene: Scene, progress=None, cancel=None, extra_points=(), light_backend: str = "auto",
               vis_backend: str = "auto", jobs: int | None = None, farm=None, tree_backend: str = "auto",
               cache=None) -> CompiledLevel:
    """Everything a bake computes for a scene, as its settings ask: the trees (compile_scene),
    the beveled tree when ``settings.bevels``, and visibility unless ``settings.vis`` is 'none':
    portals, the leak check (from the scene's markers and lights and `extra_points`, points the
    user names) and the PVS by that method.  A leaking map raises LeakError unless
    ``settings.allow_leak``; the leak report is left in ``level.stats['leak_report']`` either way.
    With ``settings.light``, lightmaps last (core/compile/light/lightmap.py; a cancel during its bounces
    keeps the light so far; `light_backend` traces its rays, core/compile/light/lm_rays.py: 'auto' = the
    C run-time where it builds, else NumPy, the same bytes either way); `vis_backend` runs the full
    vis's flow (core/compile/vis/flow_c.py: 'auto' = its C kernel where it builds, else NumPy, the
    same rows either way); `tree_backend` runs the compiler's kernels of the trees and portals (core/kernels.py:
    'auto' = C where the library builds, else NumPy, the same level either way).
    progress(fraction, message) and cancel() as for compile_scene.  `jobs`: cores the full vis and
    the regions' subtrees may use (None: all; the output is the same for any number).  `farm`: the workers of a cluster that
    run the full vis's sources and light's rays instead of this machine's cores (the bake farm's
    brushbake.farm.level.LevelFarm; the core never imports it), and the regions' subtrees of the
    trees: the same output.  `cache`: a BakeCache (core/compile/bake_cache.py) holding earlier
    bakes' work; only what an edit reached is computed again, the output is the same, and the
    cache then holds this bake's work (level.stats['cache']: what was built and reused)."""
    settings = scene.settings
    check_settings(settings, where=f"scene {scene.name!r}")
    weights = {"compile": 3.0}
    if settings.vis != "none":
        weights["vis"] = 2.0
    if settings.bevels:
        weights["bevel"] = 1.0  # reports per solid cell
    if settings.slices:
        weights["slices"] = 1.0
    if settings.light:
        weights["light"] = 6.0
    bar = StageProgress(progress, weights)
    regions = farm if farm is not None else _local_regions(jobs, len(scene.brushes))
    if cache is not None:
        cache.start()
    ok = False
    try:
        with kernels.using(tree_backend):  # every stage's compiler kernels: trees, portals, bevels, slices
            level = compile_scene(scene, progress=bar.stage("compile") if progress else None, cancel=cancel,
                                  farm=regions, cache=cache)
            _after_compile(scene, level, settings, bar, progress, extra_points, cancel, jobs, farm, vis_backend,
                           light_backend, cache)
        if cache is not None:
            level.stats["cache"] = cache.summary()
        ok = True
    finally:
        if cache is not None:
            cache.finish(ok)
    return level


def _after_compile(scene, level, settings, bar, progress, extra_points, cancel, jobs, farm, vis_backend,
                   light_backend, cache=None) -> None:
    """bake_scene's stages after the trees, in order."""
    if settings.vis != "none":  # before the bevels: the outside fill changes the point tree they bevel
        visibility_stage(scene, level, extra_points, bar.stage("vis") if progress else None, cancel, jobs=jobs,
                         farm=farm, backend=vis_backend)
    if settings.bevels:
        t0 = time.perf_counter()
        report = bar.stage("bevel")
        add_bevels(level, BevelSettings.from_settings(settings), cancel=cancel, progress=report, cache=cache)
        level.stats.setdefault("times", {})["bevel"] = time.perf_counter() - t0
        report(1.0, "done")
    if settings.slices:
        slices_stage(scene, level, bar.stage("slices") if progress else None, cancel)
    if settings.light:
        t0 = time.perf_counter()
        bake_light(level, scene, progress=bar.stage("light") if progress else None, cancel=cancel,
                   backend=light_backend, farm=farm)
        level.stats.setdefault("times", {})["light"] = time.perf_counter() - t0


def _local_regions(jobs: int | None, brushes: int):
    """The regions' subtrees and the onion's unions on `jobs` of this machine's cores (None: all),
    or None for one; the trees only for a world of LocalRegions.MIN_BRUSHES brushes or more."""
    from .trees.region_jobs import LocalRegions
    from .vis.wave_jobs import default_jobs

    n = default_jobs() if jobs is None else jobs
    return LocalRegions(n, brushes) if n > 1 else None


def slices_stage(scene: Scene, level: CompiledLevel, progress=None, cancel=None) -> None:
    """The crowd slices (core/compile/crowds/slices.py, Algorithms 2 and 3) over the bounds of what
    avatars collide with, into level.crowd; counts and seconds for the bake table."""
    s = scene.settings
    t0 = time.perf_counter()
    colliding = [b for b in scene.brushes if b.contents in (Contents.SOLID, Contents.DETAIL, Contents.CLIP)]
    if colliding:
        b = np.array([br.bounds for br in colliding])
        bounds = np.array([b[:, 0].min(axis=0), b[:, 1].max(axis=0)])
    else:
        bounds = np.zeros((2, 3))
    crowd = slice_world(scene.brushes, bounds, SliceSettings.from_settings(s),
                        progress=progress, cancel=cancel)
    level.crowd = crowd
    ny, nx = crowd.shape
    level.stats.update({"slices_taken": crowd.taken, "slices_kept": crowd.kept, "slice_grid": f"{nx} x {ny}",
                        "slice_bytes": crowd.nbytes()})
    level.stats.setdefault("times", {})["slices"] = time.perf_counter() - t0


def visibility_stage(scene: Scene, level: CompiledLevel, extra_points=(), progress=None, cancel=None,
                     jobs: int | None = None, farm=None, backend: str = "auto") -> None:
    """Portals and the leak check (core/compile/vis/leaks.py), then the PVS (core/compile/vis/vis.py
    bake_vis) into the level.  On a sealed map the cells the void reaches are left out of the PVS;
    a leaking map stops here with LeakError unless scene.settings.allow_leak (then nothing is left
    out).  With settings.seal 'qbsp' (the default) a map sealed in exact geometry is checked again
    as qbsp's tree could hold it (core/compile/vis/sliver_seal.py): its tips under 0.1 unit that the
    tree could cut are cut, and a leak there is the map's leak (report.rule 'qbsp')."""
    split = StageProgress(progress, {"portals": 1.0, "seal": 1.0, "pvs": 4.0})
    portals, report = check_scene(scene, level, extra_points, progress=split.stage("portals") if progress else None,
                                  cancel=cancel)
    outside = report.outside_mask if report.judged else None
    if scene.settings.seal == "qbsp" and report.judged and not report.leaks:
        t0 = time.perf_counter()
        qbsp_report, sites = qbsp_leak_report(scene, extra_points, progress=split.stage("seal") if progress else None,
                                              cancel=cancel, exact=(level, portals, report))
        level.stats["leaks"]["sliver_sites"] = len(sites)
        level.stats.setdefault("times", {})["seal"] = time.perf_counter() - t0
        if qbsp_report is not None and qbsp_report.leaks:
            if not scene.settings.allow_leak:
                raise LeakError(qbsp_report, hint="Thicken the brushes where the chain leaves (a seal there rests on "
                                "a tip under 0.1 unit that qbsp-based compilers drop), or bake with --seal exact.")
            report, outside = qbsp_report, None  # baked anyway, as unsealed: the warning and pointfile show it
    level.stats["leak_report"] = report
    if report.leaks and not scene.settings.allow_leak:
        raise LeakError(report, hint="Fix the hole (the chain shows where), or bake with --allow-leak.")
    bake_vis(level, scene.settings.vis, portals=portals, outside=outside,
             progress=split.stage("pvs") if progress else None, cancel=cancel, jobs=jobs, farm=farm,
             backend=backend)
    if scene.settings.fill and outside is not None and outside.any():
        fill_outside(level, portals, outside, inside_points(scene, extra_points)[0], cancel=cancel)
