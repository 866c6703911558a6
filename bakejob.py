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
from .core.model.setting_specs import SPECS


def _dest(flag: str) -> str:
    """argparse's attribute for a flag: --max-candidates -> max_candidates."""
    return flag.lstrip("-").replace("-", "_")

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


#: the bake flags that decide a level's bytes: every setting's flag (the table's,
#: core/model/setting_specs.py) and the others; `farm` sends them to its workers as a plain dict
BAKE_FLAGS = tuple(dict.fromkeys([_dest(s.flag) for s in SPECS if s.flag] + [_dest(s.off_flag) for s in SPECS if s.off_flag]
                                 + ["no_hulls", "hull", "point", "png", "backend"]))


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
                    farm=None, cache=None) -> Baked:
    """The work of `bake` for one scene file, files aside: load it, apply the flags in `opts`
    (bake_options), bake.  `bake` and `farm`'s workers both run this, so a level baked on the
    farm is the level `bake` writes.  `progress`: a ProgressLine or None; `jobs`: cores for the
    full vis; warn(text) for each of the scene's warnings, once it is loaded; `farm`: a cluster's
    workers for the level's long work (bake --scheduler: brushbake.farm.level.LevelFarm); `cache`:
    the work of an earlier bake (bake --update: core/compile/bake_cache.py), the same level."""
    from .core import kernels
    from .core.compile.pipeline import bake_scene
    from .core.formats.loaders import load_scene

    times: dict = {}
    t0 = time.perf_counter()
    if progress is not None:
        progress.start("load")
    with kernels.using(opts["backend"] or "auto"):  # a .map's brushes: the C kernel or NumPy, the same brushes
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
                           tree_backend=opts["backend"] or "auto",
                           vis_backend=opts["backend"] or "auto", jobs=jobs, farm=farm, cache=cache)
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
    apply_setting_flags(st, opts)
    if opts["no_hulls"]:
        scene.hulls = []
    elif not opts["hull"] and Path(scene_path).suffix.lower() == ".map" and not scene.hulls:
        from .core.model.hulls import quake_map_hulls

        scene.hulls = quake_map_hulls(st.map_scale)  # qbsp's hulls 1 and 2, as qbsp builds them
    elif opts["hull"]:
        scene.hulls = option_hulls(opts)


def apply_setting_flags(settings, opts: dict) -> None:
    """The setting flags given (bake_options), copied into `settings` by the table
    (core/model/setting_specs.py): a value flag sets its setting (and turns on the one it
    `enables`: --luxel turns on light, --slices slices), a bool flag sets True; then --png turns
    light on, and an off flag (--no-light, --no-bevels, --no-fill) sets False, whatever else was
    given.  --scale went to the loader, which set map_scale."""
    for spec in SPECS:
        if spec.flag is None or spec.loader:
            continue
        value = opts.get(_dest(spec.flag))
        if spec.part is not None:
            value = value[spec.part] if value is not None and len(value) > spec.part else None
        if spec.kind is bool:
            if value:
                setattr(settings, spec.name, True)
        elif value is not None:
            setattr(settings, spec.name, value)
            if spec.enables:
                setattr(settings, spec.enables, True)
    if opts.get("png"):
        settings.light = True
    for spec in SPECS:
        if spec.off_flag and opts.get(_dest(spec.off_flag)):
            setattr(settings, spec.name, False)


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
