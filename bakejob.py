"""The work of `bake` as functions, files aside: the flags that decide a level (bake_options),
one scene file loaded, its flags applied and baked (bake_scene_file), the leak messages, and the
outputs checked before the work and written all or none.  The command line's `bake` and the bake
farm's workers (brushbake/farm) both run this, so a level baked on the farm is the level `bake`
writes; the farm imports this module, never cli.py (which imports the farm only in its commands).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .core.errors import BrushbakeError, LeakError

EXIT_OK, EXIT_USER_ERROR, EXIT_CANCELLED = 0, 1, 130
#: bake: the map leaks (the chain is written beside the output as LEVEL.pts); --allow-leak bakes anyway
EXIT_LEAK = 3


def brush_roles(scene) -> dict:
    """How many of the scene's brushes have each role: what the load's progress line counted
    (its brushes, then its movers), split as the table shows it."""
    from .core.model.brushes import Contents

    return {"brushes": len(scene.brushes),
            "structural": len(scene.brushes_with(Contents.SOLID)), "detail": len(scene.brushes_with(Contents.DETAIL)),
            "clip": len(scene.brushes_with(Contents.CLIP)), "nonsolid": len(scene.brushes_with(Contents.NONSOLID)),
            "movers": len(scene.movers)}


# Files: outputs are checked before the work and written together at the end; messages name the
# paths the user gave (never a temporary file) and say whether reading or writing failed.

WRITE_HINT = "Check that the folder exists and that you may write there; nothing was written."


def check_outputs(targets: list[tuple[str, Path]], source: Path, default_name: str) -> None:
    """Fail before any work when an output cannot be written: its folder is missing or not
    writable, it names a folder, it is the input itself, or two outputs name the same file."""
    seen: dict[Path, str] = {}
    for flag, target in targets:
        where = target.resolve()
        folder = where.parent
        if target.is_dir():
            raise BrushbakeError(f"is a folder; {flag} names the file to write.", subject=str(target),
                                 hint=f"Name a file in it, e.g. {flag} {target / default_name}")
        if not folder.is_dir():
            raise BrushbakeError(f"cannot be written: the folder {folder} does not exist.",
                                 subject=str(target), hint="Create the folder or choose another output path.")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise BrushbakeError(f"cannot be written: you may not write in the folder {folder}.",
                                 subject=str(target), hint="Choose another output path or change the folder's permissions.")
        if where == source.resolve():
            raise BrushbakeError(f"is the input file; {flag} would overwrite it.", subject=str(target),
                                 hint="Choose another output path.")
        if where in seen:
            raise BrushbakeError(f"is named by both {seen[where]} and {flag}.", subject=str(target),
                                 hint="Give each output its own file name.")
        seen[where] = flag


def write_outputs(files: list[tuple[Path, bytes]]) -> None:
    """Write all the files or none (exporters/native.write_all_atomic)."""
    from .exporters.native import write_all_atomic

    try:
        write_all_atomic(files)
    except OSError as err:
        raise BrushbakeError(f"cannot be written ({err.strerror or err}).", subject=err.filename or str(files[0][0]),
                             hint=WRITE_HINT) from None


#: the bake flags that decide a level's bytes: `farm` sends them to its workers as a plain dict
BAKE_FLAGS = ("scale", "splitter", "max_candidates", "map_trees", "no_bevels", "bevel_angle", "no_hulls", "hull",
              "point", "vis", "allow_leak", "no_fill", "seal", "slices", "light", "no_light", "luxel", "patch", "bounces",
              "reflectance", "light_samples", "light_threshold", "shoot_fraction", "luxel_samples", "png", "exposure",
              "backend")


def bake_options(args) -> dict:
    """The flags of BAKE_FLAGS that `args` holds, as a plain (picklable) dict."""
    return {name: getattr(args, name, None) for name in BAKE_FLAGS}


@dataclass
class Baked:
    """What bake_scene_file made: the level, or the leak that stopped it (no level is written for
    a leaking map unless --allow-leak), with the times, the brushes by role and the warnings."""

    level: object | None
    leak: LeakError | None
    times: dict
    roles: dict
    warnings: list
    settings: object  # the scene's settings as baked (the PNG pages' exposure)


def bake_scene_file(scene_path: Path, opts: dict, progress=None, jobs: int | None = None, warn=None,
                    farm=None) -> Baked:
    """The work of `bake` for one scene file, files aside: load it, apply the flags in `opts`
    (bake_options), bake.  `bake` and `farm`'s workers both run this, so a level baked on the
    farm is the level `bake` writes.  `progress`: a ProgressLine or None; `jobs`: cores for the
    full vis; warn(text) for each of the scene's warnings, once it is loaded; `farm`: a cluster's
    workers for the level's long work (bake --scheduler: brushbake.farm.level.LevelFarm)."""
    from .core.compile.pipeline import bake_scene
    from .core.formats.loaders import load_scene

    times: dict = {}
    t0 = time.perf_counter()
    if progress is not None:
        progress.start("load")
    scene = load_scene(scene_path, progress=progress, map_scale=opts["scale"])
    if progress is not None:
        progress.done()
    times["load"] = time.perf_counter() - t0
    apply_bake_options(scene, opts, scene_path)
    for warning in scene.warnings if warn is not None else ():
        warn(warning)
    roles = brush_roles(scene)
    extra_points = [parse_point(text) for text in opts["point"] or []]
    if progress is not None:
        progress.start("bake")
    try:
        level = bake_scene(scene, progress=progress, extra_points=extra_points, light_backend=opts["backend"] or "auto",
                           vis_backend=opts["backend"] or "auto", jobs=jobs, farm=farm)
        leak = None
    except LeakError as err:
        level, leak = None, err
    if progress is not None:
        progress.done(finished=leak is None)  # a leaking bake does not claim 100%
    if level is not None:
        times.update(level.stats.get("times", {}))
    return Baked(level, leak, times, roles, list(scene.warnings), scene.settings)


def apply_bake_options(scene, opts: dict, scene_path: Path) -> None:
    """The command line's flags (bake_options) onto a loaded scene's settings and hulls (a .map
    without --hull or hulls of its own gets qbsp's hulls 1 and 2, as qbsp builds them)."""
    st = scene.settings
    if opts["splitter"]:
        st.splitter = opts["splitter"]
    if opts["max_candidates"] is not None:
        st.max_candidates = opts["max_candidates"]
    if opts["map_trees"]:
        st.onion_map_trees = True
    if opts["no_bevels"]:
        st.bevels = False
    if opts["bevel_angle"] is not None:
        st.bevel_angle = opts["bevel_angle"]
    if opts["no_hulls"]:
        scene.hulls = []
    elif not opts["hull"] and Path(scene_path).suffix.lower() == ".map" and not scene.hulls:
        from .core.model.hulls import quake_map_hulls

        scene.hulls = quake_map_hulls(st.map_scale)  # qbsp's hulls 1 and 2, as qbsp builds them
    elif opts["hull"]:
        scene.hulls = option_hulls(opts)
    if opts["vis"] is not None:
        st.vis = opts["vis"]
    if opts["allow_leak"]:
        st.allow_leak = True
    if opts["no_fill"]:
        st.fill = False
    if opts["exposure"] is not None:
        st.png_exposure = opts["exposure"]
    if opts["seal"] is not None:
        st.seal = opts["seal"]
    if opts["slices"] is not None:
        st.slices = True
        st.slice_width, st.slice_height, st.slice_step = opts["slices"][:3]
        if len(opts["slices"]) == 4:
            st.slice_cell = opts["slices"][3]
    apply_light_options(st, opts)


def option_hulls(opts: dict) -> list:
    """The hulls --hull names (bake_options), each parsed, their names all different."""
    from .core.model.hulls import parse_hull

    hulls = [parse_hull(spec) for spec in opts["hull"] or []]
    names = [h.name for h in hulls]
    if len(set(names)) != len(names):
        raise BrushbakeError(f"hull names must be different (got {', '.join(names)}).",
                             hint="Give each --hull its own NAME=...")
    return hulls


def leak_error_text(err: LeakError, pointfile: Path) -> str:
    """What `bake` says when a map leaks and no level is written."""
    exact = " or --seal exact (judge the seal without qbsp's 0.1-unit cuts)" if err.report.rule == "qbsp" else ""
    return (f"{err.report.message()}. Wrote the chain to {pointfile} (load it as a pointfile in the "
            f"editor); fix the hole, or bake with --allow-leak{exact}.")


def leak_warning_text(report, pointfile: Path) -> str:
    """What `bake --allow-leak` says when the map leaks and the level is written anyway."""
    return (f"{report.message()}. Wrote the chain to {pointfile}; baking anyway (--allow-leak): "
            "the map is treated as unsealed.")


NOTHING_INSIDE = ("no player start, light, marker or --point lies in empty space, so nothing says what is "
                  "inside: the leak check was skipped.")


LIGHT_OPTIONS = ("luxel", "patch", "bounces", "reflectance", "light_samples", "light_threshold", "shoot_fraction", "luxel_samples")


def apply_light_options(settings, opts: dict) -> None:
    """--light and its settings (each given one also turns light on; --no-light turns it off)."""
    given = [name for name in LIGHT_OPTIONS if opts[name] is not None]
    for name in given:
        setattr(settings, name, opts[name])
    if opts["light"] or given or opts["png"]:
        settings.light = True
    if opts["no_light"]:
        settings.light = False


def parse_point(text: str) -> tuple[float, float, float]:
    """'X,Y,Z' in metres -> a point (a typed error otherwise)."""
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) != 3 or not all(np.isfinite(values)):
        raise BrushbakeError(f"is not a point: --point takes X,Y,Z in metres, e.g. --point 1.5,2,0.8.",
                             subject=text, hint="Give three numbers separated by commas, no spaces.")
    return values[0], values[1], values[2]


def pointfile_text(chain) -> bytes:
    """A Quake pointfile: one 'x y z' line per point (metres, as the level)."""
    return "".join(f"{x:.6f} {y:.6f} {z:.6f}\n" for x, y, z in np.asarray(chain, dtype=np.float64).tolist()).encode()
