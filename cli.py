"""The headless command line: bake a scene, inspect a level, query it from scripts.

    python -m brushbake bake SCENE [-o OUT.bbk] [--json OUT.json] [--vis fast|flow|sample|none]
    python -m brushbake farm SCENES... -o OUTDIR [--scheduler tcp://HOST:PORT | --workers N]  (docs/FARM.md)
    python -m brushbake info LEVEL
    python -m brushbake query LEVEL (--points IN.npy | --segments IN.npy) -o OUT.npy
    python -m brushbake query LEVEL --segments IN.npy --shape sphere:0.5 [--impact] -o OUT.npy
    python -m brushbake query LEVEL --see PAIRS.npy -o OUT.npy
    python -m brushbake bake SCENE -o LEVEL.bbk --slices W,H,STEP[,CELL]
    python -m brushbake query LEVEL --moves MOVES.npy -o OUT.npy
    python -m brushbake crowd LEVEL --avatars N --ticks T
    python -m brushbake query LEVEL --cameras CAMS.npy --cull pvs|frustum|portal --seen PTS.npy -o OUT.npy
    python -m brushbake query LEVEL --cameras CAMS.npy --cull MODE --stats -o OUT.json

User errors (bad scenes, corrupt files, wrong arrays, outputs that cannot be written: checked
before the work) print one paragraph and exit 1; Ctrl-C cancels cleanly (exit 130) and leaves no
file behind; a closed pipe (`info LEVEL | head -1`) ends quietly with 141, as SIGPIPE would.
Anything else is a bug and may show a traceback.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

import numpy as np

from . import __version__
from .bakejob import (EXIT_CANCELLED, EXIT_LEAK, EXIT_OK, EXIT_USER_ERROR, NOTHING_INSIDE, bake_options,  # noqa: F401
                      bake_scene_file, check_outputs, leak_error_text, leak_warning_text, pointfile_text, write_outputs)
from .core.errors import BrushbakeError, CancelledError
from .core.malloc_arenas import limit_arenas
from .core.model.setting_specs import SPEC, SPECS, setting_error
from .core.native_lib import backend_report

#: 128 + SIGPIPE: what `cat`, `grep` and others end with when the reader of their output is gone
EXIT_CLOSED_PIPE = 141


class ProgressLine:
    """Progress on stderr: one rewritten line on a terminal, a line per 10% otherwise."""

    def __init__(self, stream=None, enabled: bool = True):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.last_decile = -1
        self.label = ""

    def __call__(self, fraction: float, message: str = "") -> None:
        if not self.enabled:
            return
        pct = int(round(100 * fraction))
        if self.tty:
            self.last_decile = pct // 10
            self.stream.write(f"\r{self.label}{pct:3d}%  {message[:60]:<60}")
            self.stream.flush()
        elif pct // 10 != self.last_decile:
            self.last_decile = pct // 10
            self.stream.write(f"{self.label}{pct:3d}%  {message}\n")

    def start(self, label: str) -> None:
        self.label = f"{label:<8}"
        self.last_decile = -1

    def done(self, finished: bool = True) -> None:
        """End the stage's line; a finished stage shows 100% (its last step may have reported less:
        a stage left out, radiosity converged before its last bounce)."""
        if self.enabled and finished and self.last_decile != 10:
            self(1.0, "done")
        if self.enabled and self.tty:
            self.stream.write("\n")


def _table(rows: list[tuple[str, str, str]]) -> str:
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    w2 = max(len(r[2]) for r in rows)
    line = "-" * (w0 + w1 + w2 + 6)
    out = [line]
    for i, (a, b, c) in enumerate(rows):
        out.append(f"{a:<{w0}}   {b:>{w1}}   {c:>{w2}}")
        if i == 0:
            out.append(line)
    out.append(line)
    return "\n".join(out)


def bake_table(stats: dict, times: dict, roles: dict | None = None) -> str:
    """The bake's table of counts and seconds, read through core/compile/bake_stats.py's records
    (each key named once there: a misspelt or missing one fails, never prints 0)."""
    from .core.compile.bake_stats import BakeStats, StageSeconds

    st, t = BakeStats.of(stats), StageSeconds.of(times)
    tr = st.tree
    rows = [("stage", "count", "seconds")]
    if roles is not None:
        # the same figures as the load's last progress line ('Built N brushes and M mover brushes'):
        # the brushes by role, then the movers, which are read but not compiled yet
        rows += [
            ("load: brushes", f"{roles['brushes']}", f"{t.load:.2f}"),
            ("  structural / detail / clip / nonsolid",
             f"{roles['structural']} / {roles['detail']} / {roles['clip']} / {roles['nonsolid']}", ""),
            ("  movers: skipped, not compiled yet", f"{roles['movers']}", ""),
        ]
    else:
        rows += [
            ("load: brushes", f"{tr.brushes}", f"{t.load:.2f}"),
            ("  structural / detail", f"{tr.structural_brushes} / {tr.detail_brushes}", ""),
        ]
    rows += [
        ("csg: faces before / after", f"{tr.faces_before_csg} / {tr.faces_after_csg}", f"{t.csg:.2f}"),
        ("tree: splits", f"{tr.splits}", f"{t.tree:.2f}"),
        ("  nodes", f"{tr.nodes}", ""),
        ("  leaves (solid / empty)", f"{tr.leaves} ({tr.solid_leaves} / {tr.leaves - tr.solid_leaves})", ""),
        ("  depth", f"{tr.depth}", ""),
        ("detail: nodes added", f"{tr.nodes - tr.structural_nodes}", f"{t.detail:.2f}"),
        ("arrays: faces / planes", f"{tr.faces} / {tr.planes}", f"{t.arrays:.2f}"),
    ]
    if st.onion is not None:
        on = st.onion
        rows += [("onion: expand + csg (faces per hull)", " / ".join(map(str, on.space_faces)), f"{t.expand_csg:.2f}")]
        if on.map_tree_nodes:
            rows += [
                ("  map trees (nodes per hull)", " / ".join(map(str, on.map_tree_nodes)), f"{t.map_trees:.2f}"),
                ("  onion tree nodes (separate trees)", f"{on.onion_nodes} ({on.separate_tree_nodes})",
                 f"{t.onion_tree:.2f}"),
            ]
        else:
            rows += [("  onion tree nodes", f"{on.onion_nodes}", f"{t.onion_tree:.2f}")]
        rows += [("  leaf solidity", f"{on.onion_leaves} leaves", f"{t.leaf_solidity:.2f}")]
    if st.bevel is not None:
        bv = st.bevel
        rows += [("bevel: nodes plain / beveled", f"{bv.plain_nodes} / {bv.beveled_nodes}", f"{t.bevel:.2f}"),
                 ("  edge / vertex / axial / flat-top",
                  f"{bv.edge_bevels} / {bv.vertex_bevels} / {bv.axial_bevels} / {bv.flat_top_bevels}", "")]
    if st.leaks is not None:
        lk = st.leaks
        rows += [
            ("portals: clusters / portals / void", f"{lk.clusters} / {lk.portals} / {lk.void_portals}", f"{t.portals:.2f}"),
            ("leaks: verdict (inside points judged)", f"{'LEAKS' if lk.leaks else 'sealed'} ({lk.judged})",
             f"{t.leaks:.2f}"),
            ("  clusters the void reaches", f"{lk.outside_clusters}", ""),
        ]
        if lk.sliver_sites is not None:
            rows.append(("  seal as qbsp: brush tips cut", f"{lk.sliver_sites}", f"{t.seal:.2f}"))
    if st.fill is not None:
        fl = st.fill
        per_hull = " / ".join(str(v) for v in fl.onion_filled or [])
        rows.append(("outside fill: point leaves (onion, per hull)",
                     f"{fl.point_filled}" + (f" ({per_hull})" if per_hull else ""), f"{t.fill:.2f}"))
        if fl.point_nodes:
            rows.append(("  point nodes pruned after it (before / after)", " / ".join(map(str, fl.point_nodes)), ""))
        if fl.onion_nodes:
            rows.append(("  onion nodes pruned after it (before / after)", " / ".join(map(str, fl.onion_nodes)), ""))
        if fl.onion_leaking:
            rows.append(("  hulls not filled (their void reaches an entity)", ", ".join(fl.onion_leaking), ""))
    if st.vis is not None:
        vs = st.vis
        by = {"c": " in C", "numpy": " in NumPy"}.get(vs.vis_backend, "")
        rows += [
            (f"vis ({vs.mode}){by}: clusters / portals", f"{vs.clusters} / {vs.portals}", f"{t.vis:.2f}"),
            ("  avg clusters / leaves visible", f"{vs.avg_clusters_visible:.1f} / {vs.avg_leaves_visible:.1f}", ""),
            ("  compressed rows (bytes)", f"{vs.compressed_bytes}", ""),
        ]
    if st.png is not None:
        pg = st.png
        rows.append(("png: exposure (lit texels clipped)",
                     f"{pg.exposure:.4g}{' auto' if pg.auto else ''} ({100 * pg.clipped:.2f}%)", ""))
    if st.slices is not None and st.slices.slices_taken:
        sl = st.slices
        rows += [
            ("slices: taken / kept", f"{sl.slices_taken} / {sl.slices_kept}", f"{t.slices:.2f}"),
            ("  grid (cells) / bytes kept", f"{sl.slice_grid} / {sl.slice_bytes}", ""),
        ]
    if st.cache is not None:
        ca = st.cache
        rows += [("update: regions / pieces / hull brushes / bevels rebuilt",
                  f"{ca.regions[0]} / {ca.pieces[0]} / {ca.expanded[0]} / {ca.bevels[0]}", ""),
                 ("  taken from the last bake", f"{ca.regions[1]} / {ca.pieces[1]} / {ca.expanded[1]} / {ca.bevels[1]}",
                  ""),
                 ("  (the splits above are this bake's: taken subtrees add none)", "", "")]
    if st.light is not None:
        lt = st.light
        rows += [
            ("light: faces / luxels / patches", f"{lt.faces} / {lt.luxels} / {lt.patches}", f"{t.light:.2f}"),
            ("  pages (texels a side)", f"{lt.pages} ({lt.page_size})", f"{lt.charts_seconds:.2f}"),
            ("  rays traced by", lt.native if lt.native is not None else lt.backend, ""),
            ("  direct: shadow rays", f"{lt.direct_rays}", f"{lt.direct_seconds:.2f}"),
        ]
        rows += [(f"  bounce {r.round}: shooters / rays" if r.round else "  surface lights: shooters / rays",
                  f"{r.shooters} / {r.rays}", f"{r.seconds:.2f}") for r in lt.bounce_rounds]
        if lt.cancelled:
            rows.append(("  cancelled: bounces kept", f"{lt.bounces_done}", ""))
    rows += [
        ("write", "", f"{t.write:.2f}"),
        ("total", "", f"{t.total():.2f}"),
    ]
    return _table(rows)


def _vec(v) -> str:
    return "(" + ", ".join(f"{x:.2f}" for x in v) + ")"


def _size(v) -> str:
    return " x ".join(f"{x:.2f}" for x in v)


def level_table(level) -> str:
    """`info`: what a level file holds.  Clusters are counted over the point tree's empty leaves (a
    detail brush splits a structural leaf into several that share its cluster); markers are not
    stored in level files, and the table says so."""
    solid_mask = (level.leaf_solid & 1) != 0
    solid = int(np.count_nonzero(solid_mask))
    clusters = len(np.unique(level.leaf_cluster[~solid_mask]))
    lo, hi = np.asarray(level.world_bounds, dtype=np.float64)
    rows = [
        ("item", "count", ""),
        ("planes", str(len(level.plane_dists)), ""),
        ("nodes", str(level.num_nodes), ""),
        ("leaves", str(level.num_leaves), ""),
        ("  solid / empty (point hull)", f"{solid} / {level.num_leaves - solid}", ""),
        ("  clusters of empty leaves", str(clusters), ""),
        ("faces", str(len(level.face_plane)), ""),
        ("vertices", str(len(level.vertices)), ""),
        ("depth", str(level.depth()), ""),
        ("brushes (structural + detail)", str(len(level.brush_names)), ""),
        ("bounds: size (m)", _size(hi - lo), ""),
        ("  mins / maxs", _vec(lo), _vec(hi)),
        ("hulls: box size / mins (m)", str(len(level.hull_names)), ""),
    ]
    for h, name in enumerate(level.hull_names):
        box = np.asarray(level.hull_boxes[h], dtype=np.float64)
        rows.append((f"  {name}", "point", "") if not (box[1] - box[0]).any() else
                    (f"  {name}", _size(box[1] - box[0]), _vec(box[0])))
    if level.has_onion:
        rows += [("onion nodes", str(len(level.onion_node_plane)), ""),
                 ("onion leaves", str(len(level.onion_leaf_solid)), "")]
        for h, name in enumerate(level.hull_names):
            solid = int(np.count_nonzero(level.onion_leaf_solid & (1 << h)))
            rows.append((f"  solid leaves for {name}", str(solid), ""))
    if level.has_bevel:
        n = len(level.bevel_node_plane)
        ratio = f"{n / level.num_nodes:.2f}x the point tree" if level.num_nodes else ""
        rows.append(("bevels (plane shifting)", f"yes: {n} nodes", ratio))
    else:
        rows.append(("bevels (plane shifting)", "none", "baked with --no-bevels"))
    if level.has_vis:  # the method (fast, flow, sample) is not stored: the rows are the same
        rows.append(("visibility (PVS): clusters", str(len(level.vis_row_offset)), ""))
        if level.has_cull_portals:
            rows.append(("  portals for camera queries", str(len(level.cull_portal_plane)), ""))
    else:
        rows.append(("visibility (PVS)", "none", "baked with --vis none"))
    if level.has_light:
        pages = level.lm_pages
        rows.append(("lightmap: pages x texels a side, luxel (m)",
                     f"{pages.shape[0]} x {pages.shape[1]}, {level.lm_luxel:g}", ""))
    else:
        rows.append(("lightmap", "none", "bake with --light"))
    c = level.crowd
    if c is not None:
        ny, nx = c.shape
        rows += [("crowd slices: kept / taken", f"{c.kept} / {c.taken}", f"{nx} x {ny} cells of {c.cell:g} m"),
                 ("  avatar width / height / step (m)", f"{c.width:g} / {c.height:g} / {c.step:g}",
                  f"resolution {c.resolution:g} m"),
                 ("  height unit (m) / bytes", f"{c.unit:g} / {c.nbytes()}", "")]
    else:
        rows.append(("crowd slices", "none", "bake with --slices"))
    rows.append(("markers", "not stored", "(.bbk keeps none)"))
    native = backend_report()
    rows.append(("queries here run on", native.name, native.why))
    return _table(rows)


# --------------------------------------------------------------------------------------------
# Files: outputs are checked before the work and written together at the end; messages name the
# paths the user gave (never a temporary file) and say whether reading or writing failed.

def read_level_file(path: str):
    """read_level, with a reading hint when the file cannot be opened."""
    from .exporters.native import read_level

    try:
        return read_level(path)
    except IsADirectoryError:
        raise BrushbakeError("is a folder, not a level file.", subject=path,
                             hint="Name a .bbk file written by 'bake'.") from None
    except FileNotFoundError:
        raise BrushbakeError("does not exist.", subject=path,
                             hint="Check the path; 'bake SCENE -o LEVEL.bbk' writes a level file.") from None
    except OSError as err:
        raise BrushbakeError(f"cannot be read ({err.strerror or err}).", subject=path,
                             hint="Check that the file exists and that you may read it.") from None


def open_update_cache(old: Path):
    """The work kept beside the level `old` (bake --update OLD.bbk), or an empty cache, with a
    note saying why, when there is none to use: the bake is then a full one, and keeps its work."""
    from .core.compile.bake_cache import BakeCache, cache_path

    path = cache_path(old)
    if old.is_dir():
        raise BrushbakeError("is a folder, not a level file.", subject=str(old),
                             hint="Name the .bbk file an earlier 'bake --update' wrote.")
    cache = BakeCache.from_file(path) if path.is_file() else None
    if cache is None:
        why = ("was made by another version of brushbake, or cannot be read" if path.is_file() else
               "does not exist (only 'bake --update' writes one)")
        print(f"note: {path} {why}: this is a full bake, and the next --update reuses its work.", file=sys.stderr)
        cache = BakeCache()
    return cache


def cmd_bake(args) -> int:
    from .exporters.json_dump import level_to_json
    from .exporters.native import level_to_bytes

    progress = ProgressLine(enabled=not args.quiet)
    scene_path = Path(args.scene)
    out = Path(args.output) if args.output else Path(scene_path.stem + ".bbk")
    from .core.compile.bake_cache import BakeCache, cache_path

    if args.update and cache_path(out).is_dir():
        raise BrushbakeError("is a folder, where bake --update keeps the level's work for the next update.",
                             subject=str(cache_path(out)), hint="Move the folder away, or bake without --update.")
    check_outputs([("-o", out)] + ([("--json", Path(args.json))] if args.json else [])
                  + ([("--update's cache", cache_path(out))] if args.update else []), scene_path,
                  default_name=scene_path.stem + ".bbk")
    cache = open_update_cache(Path(args.update)) if args.update else None
    farm = None
    if args.scheduler:  # reached, and its workers' versions checked, before any work
        from .farm import require_dask

        require_dask()
        from .farm.level import open_level_farm

        farm = open_level_farm(args.scheduler)
    try:
        try:
            baked = bake_scene_file(scene_path, bake_options(args), progress=progress, jobs=args.jobs,
                                    warn=lambda text: print(f"warning: {text}", file=sys.stderr), farm=farm,
                                    cache=cache)
        except (BrushbakeError, CancelledError, KeyboardInterrupt):
            raise
        except Exception as err:  # a cache file made by hand, or damaged in a way its checks let through
            if cache is None or not cache.from_disk:
                raise
            print(f"\nnote: {cache_path(Path(args.update))} could not be used ({type(err).__name__}): baking in full.",
                  file=sys.stderr)
            cache = BakeCache()
            baked = bake_scene_file(scene_path, bake_options(args), progress=progress, jobs=args.jobs,
                                    warn=None, farm=farm, cache=cache)
    finally:
        if farm is not None:
            farm.close()
    pointfile = out.with_suffix(".pts")
    if baked.leak is not None:  # the chain only: no level is written for a leaking map
        write_outputs([(pointfile, pointfile_text(baked.leak.report.chain))])
        print(f"error: {leak_error_text(baked.leak, pointfile)}", file=sys.stderr)
        return EXIT_LEAK
    level, times, files = baked.level, baked.times, []
    report = level.stats.get("leak_report")
    if report is not None and report.leaks:
        files.append((pointfile, pointfile_text(report.chain)))
        print(f"warning: {leak_warning_text(report, pointfile)}", file=sys.stderr)
    elif report is not None and report.judged == 0:
        print(f"warning: {NOTHING_INSIDE}", file=sys.stderr)
    t0 = time.perf_counter()
    files.insert(0, (out, level_to_bytes(level)))
    if args.json:
        files.insert(1, (Path(args.json), level_to_json(level).encode("utf-8")))
    if args.png and level.has_light:
        from .exporters.png import lightmap_png_files

        files[1 + bool(args.json):1 + bool(args.json)] = lightmap_png_files(level, out, baked.settings.png_exposure)
    if cache is not None:  # this bake's work, for the next --update; first, so that the level is
        files.insert(0, (cache_path(out), cache.to_bytes()))  # not replaced if it cannot be written
    write_outputs(files)  # all or none: nothing is written when anything fails
    if report is not None and not report.leaks and pointfile.is_file():
        pointfile.unlink()  # a chain left by an earlier, leaking bake would point at a hole now closed
    times["write"] = time.perf_counter() - t0
    if not args.quiet:
        print(bake_table(level.stats, times, baked.roles))
    pngs = [str(path) for path, _ in files if path.suffix == ".png"]
    print(f"wrote {out}" + (f" and {args.json}" if args.json else "") + (f" and {', '.join(pngs)}" if pngs else "")
          + (f" and {pointfile}" if report is not None and report.leaks else "")
          + (f" (its work for the next --update: {cache_path(out)})" if cache is not None else ""))
    return EXIT_OK


def cmd_farm(args) -> int:
    """`farm SCENES... -o OUTDIR`: brushbake.farm (Dask, the [farm] extra) bakes them."""
    from .farm import require_dask

    require_dask()
    from .farm.command import run_farm

    return run_farm(args)


def cmd_info(args) -> int:
    level = read_level_file(args.level)
    print(f"{args.level}")
    print(level_table(level))
    return EXIT_OK


def _shape(tail: tuple) -> str:
    return "(" + ", ".join(["N", *("K" if t is None else str(t) for t in tail)]) + ")"


def _load_array(path: str, what: str, shape_tail: tuple[int, ...]) -> np.ndarray:
    try:
        arr = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise BrushbakeError("does not exist.", subject=path,
                             hint=f"Check the path; {what} are an array of shape {_shape(shape_tail)} saved with numpy.save.") from None
    except IsADirectoryError:
        raise BrushbakeError(f"is a folder; name the .npy file of {what}.", subject=path,
                             hint=f"Save an array of shape {_shape(shape_tail)} with numpy.save.") from None
    except (OSError, ValueError) as exc:
        raise BrushbakeError(
            f"cannot be read as a NumPy .npy array ({exc}).",
            subject=path,
            hint=f"Save an array of shape {_shape(shape_tail)} with numpy.save.",
        ) from None
    if not isinstance(arr, np.ndarray) or arr.ndim != 1 + len(shape_tail) or any(
            want is not None and got != want for got, want in zip(arr.shape[1:], shape_tail)):
        raise BrushbakeError(
            f"holds an array of shape {getattr(arr, 'shape', '?')}; {what} must have shape {_shape(shape_tail)}.",
            subject=path,
            hint="Reshape it (for points: arr.reshape(-1, 3); for segments: arr.reshape(-1, 2, 3)).",
        )
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise BrushbakeError(f"holds {arr.dtype} values, not real numbers.", subject=path,
                             hint="Save float64 coordinates in metres.")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise BrushbakeError("contains NaN or infinite coordinates.", subject=path,
                             hint="Remove or fix those rows and query again.")
    return arr


def _save_array_atomic(path: str, arr: np.ndarray) -> None:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    write_outputs([(Path(path), buf.getvalue())])


def _query_cameras(args, level, hull: int) -> int:
    """--cameras: what each camera draws in the --cull mode: --seen points answered (N, K) uint8, or
    --stats per camera as JSON."""
    import json

    from .core.runtime.camera import as_cameras
    from .core.runtime.cull import cull

    if hull:
        raise BrushbakeError("--cameras answers for the eye (the point tree), which does not depend on a hull.",
                             hint="Use --cameras without --hull.")
    cams = as_cameras(_load_array(args.cameras, "cameras", (8,)), subject=args.cameras)
    seen = None
    if args.seen:
        seen = _load_array(args.seen, "points seen", (None, 3))
        if len(seen) != len(cams):
            raise BrushbakeError(f"holds points for {len(seen)} cameras but {args.cameras} has {len(cams)}.",
                                 subject=args.seen, hint="Give an (N, K, 3) array: K points for each of the N cameras.")
    result = cull(level, cams, args.cull, backend=args.backend)
    if seen is not None:
        answers = result.points_drawn(seen)
        _save_array_atomic(args.output, answers)
        print(f"wrote {args.output}: {answers.shape[0]} cameras x {answers.shape[1]} points ({args.cull})")
        return EXIT_OK
    per = result.seconds / max(len(cams), 1)
    leaves, clusters, faces = result.leaf_counts(), result.cluster_counts(), result.face_counts()
    doc = {"mode": args.cull, "cameras": len(cams), "seconds": result.seconds, "faces_total": int(len(level.face_plane)),
           "per_camera": [{"leaves": int(leaves[i]), "clusters": int(clusters[i]), "faces": int(faces[i]),
                           "seconds": per, "fallback": bool(result.overflow[i])} for i in range(len(cams))]}
    write_outputs([(Path(args.output), (json.dumps(doc, indent=1) + "\n").encode("utf-8"))])
    print(f"wrote {args.output}: {len(cams)} cameras ({args.cull}), {faces.mean() if len(cams) else 0:.1f} faces "
          f"drawn on average of {len(level.face_plane)}")
    return EXIT_OK


def _check_camera_options(args) -> None:
    """--cull, --seen and --stats belong to --cameras, which needs --cull and one of the two."""
    if not args.cameras:
        for flag, value in (("--cull", args.cull), ("--seen", args.seen), ("--stats", args.stats)):
            if value:
                raise BrushbakeError(f"{flag} goes with --cameras CAMS.npy.",
                                     hint="query LEVEL --cameras CAMS.npy --cull pvs|frustum|portal "
                                          "(--seen PTS.npy | --stats) -o OUT")
        return
    if not args.cull:
        raise BrushbakeError("--cameras needs --cull pvs, frustum or portal.",
                             hint="query LEVEL --cameras CAMS.npy --cull portal --seen PTS.npy -o OUT.npy")
    if bool(args.seen) == bool(args.stats):
        raise BrushbakeError("--cameras needs exactly one of --seen PTS.npy (answers (N, K) uint8) and --stats "
                             "(answers JSON).", hint="query LEVEL --cameras CAMS.npy --cull portal --stats -o OUT.json")
    if args.shape or args.impact:
        raise BrushbakeError("--shape and --impact go with --segments, not --cameras.")


def cmd_query(args) -> int:
    from .core.runtime.query import point_solid, segment_hits
    _check_camera_options(args)
    check_outputs([("-o", Path(args.output))], Path(args.level), default_name="answers.npy")
    level = read_level_file(args.level)
    hull = 0
    if args.hull:
        if args.hull not in level.hull_names:
            raise BrushbakeError(f"has no hull named '{args.hull}'.", subject=args.level,
                                 hint=f"Hulls in this level: {', '.join(level.hull_names)}. Bake again with "
                                 f"--hull {args.hull}=MINX,MINY,MINZ,MAXX,MAXY,MAXZ (metres) or a preset "
                                 "(--hull stand, --hull q1_player, ...); a .map bake without --hull or --no-hulls "
                                 "builds Quake's 'stand' and 'large'.")
        hull = level.hull_names.index(args.hull)
    if args.shape:
        from .core.runtime.shift import parse_shape, shift_hits

        if args.points or hull:
            raise BrushbakeError("--shape answers swept segments through the beveled point tree.",
                                 hint="Use --segments without --hull.")
        try:
            shape = parse_shape(args.shape)
        except (ValueError, OSError) as err:
            raise BrushbakeError(f"is not a shape ({err}).", subject=args.shape,
                                 hint="Use sphere:R, cylinder:R,H, box:HX,HY,HZ or hull:POINTS.npy (metres).") from None
        seg = _load_array(args.segments, "segments", (2, 3))
        if not level.has_bevel:
            print(f"warning: {args.level} has no beveled tree (it was baked with --no-bevels); the shape is swept "
                  "through the plain point tree, where it can stop short near outside corners and edges. "
                  "Bake again without --no-bevels for exact answers.", file=sys.stderr)
        target = level if args.backend == "c" else level.bevel_tree()
        result = shift_hits(target, shape, seg[:, 0], seg[:, 1], impact=args.impact, backend=args.backend)
    elif args.see:
        from .core.runtime.pvs import visibility

        if hull:
            raise BrushbakeError("--see answers from the PVS, which does not depend on a hull.",
                                 hint="Use --see without --hull.")
        if not level.has_vis:
            raise BrushbakeError("was baked without visibility (--vis none), so it has no PVS to query.",
                                 subject=args.level, hint="Bake it again with --vis flow, fast or sample.")
        result = visibility(level).can_see_points(_load_array(args.see, "point pairs", (2, 3)), backend=args.backend)
    elif args.moves:
        from .core.runtime.crowd import check_moves

        if args.backend == "c":
            raise BrushbakeError("--moves is answered by the NumPy run-time only (the C run-time has no crowd "
                                 "slices yet).", hint="Use --moves without --backend c.")

        if hull:
            raise BrushbakeError("--moves answers from the crowd slices, baked for one avatar.",
                                 hint="Use --moves without --hull.")
        if level.crowd is None:
            raise BrushbakeError("was baked without crowd slices, so it cannot judge moves.", subject=args.level,
                                 hint="Bake it again with --slices W,H,STEP[,CELL].")
        result = check_moves(level.crowd, _load_array(args.moves, "moves", (2, 3)))
    elif args.cameras:
        return _query_cameras(args, level, hull)
    elif args.points:
        result = point_solid(level, _load_array(args.points, "points", (3,)), hull=hull, backend=args.backend)
    else:
        seg = _load_array(args.segments, "segments", (2, 3))
        result = segment_hits(level, seg[:, 0], seg[:, 1], hull=hull, backend=args.backend)
    _save_array_atomic(args.output, result)
    print(f"wrote {args.output}: {result.shape[0]} answers")
    return EXIT_OK


def cmd_crowd(args) -> int:
    """`crowd LEVEL --avatars N --ticks T`: spawn N avatars on the level's slices and time T ticks
    (core/runtime/crowd.py Crowd); one JSON object on stdout."""
    import json

    from .core.runtime.crowd import Crowd

    level = read_level_file(args.level)
    if level.crowd is None:
        raise BrushbakeError("was baked without crowd slices, so no crowd can walk on it.", subject=args.level,
                             hint="Bake it again with --slices W,H,STEP[,CELL].")
    t0, c0 = time.perf_counter(), time.process_time()
    crowd = Crowd(level.crowd, args.avatars, seed=args.seed)
    spawn, spawn_cpu = time.perf_counter() - t0, time.process_time() - c0
    times, cpu, moved = [], [], 0
    for _ in range(args.ticks):
        t0, c0 = time.perf_counter(), time.process_time()
        moved += crowd.tick()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    ms = np.array(times) * 1e3
    print(json.dumps({"level": args.level, "avatars": args.avatars, "ticks": args.ticks, "seed": args.seed,
                      "ms_per_tick": round(float(ms.mean()), 3), "ms_min": round(float(ms.min()), 3),
                      "ms_median": round(float(np.median(ms)), 3), "ms_max": round(float(ms.max()), 3),
                      "cpu_ms_median": round(float(np.median(cpu)) * 1e3, 3),
                      "spawn_ms": round(spawn * 1e3, 3), "spawn_cpu_ms": round(spawn_cpu * 1e3, 3),
                      "moved_per_tick": round(moved / args.ticks, 1), "slices_kept": level.crowd.kept,
                      "standing_places": crowd.walk.count, "native": crowd.native}))
    return EXIT_OK


def _count(name: str, high: int):
    """An argparse type: a whole number from 1 to `high`, with the range in its message."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} is {text!r}; it must be a whole number from 1 to {high:,}.")
        if not 1 <= value <= high:
            raise argparse.ArgumentTypeError(f"{name} is {value}; it must be from 1 to {high:,}.")
        return value

    parse.__name__ = name
    return parse


#: the settings --slices W,H,STEP[,CELL] sets, in order (the table's parts of --slices)
SLICE_FIELDS = tuple(s.name for s in sorted((s for s in SPECS if s.flag == "--slices"), key=lambda s: s.part))


def _jobs(text: str) -> int:
    """--jobs N: a whole number of cores, 1 to 256."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 256:
        raise argparse.ArgumentTypeError(f"is {text!r}; it takes a whole number of cores from 1 to 256, e.g. --jobs 2")
    return value


def _slices(text: str) -> tuple[float, ...]:
    """--slices W,H,STEP[,CELL]: three or four numbers, each checked against its setting's range."""
    parts = text.split(",")
    if len(parts) not in (3, 4):
        raise argparse.ArgumentTypeError(f"is {text!r}; it takes W,H,STEP or W,H,STEP,CELL in metres, "
                                         "e.g. --slices 1,1.75,0.5625,0.25")
    values = []
    for name, part in zip(SLICE_FIELDS, parts):
        try:
            value = float(part)
        except ValueError:
            value = part
        problem = setting_error(name, value)
        if problem:
            raise argparse.ArgumentTypeError(f"{name.replace('slice_', '').upper()} {problem}")
        values.append(value)
    return tuple(values)


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors (a bad or missing option) on one line: no usage block."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message} (see --help)\n")


def _setting(name: str):
    """An argparse type for setting `name`: parsed and checked against the table when the
    command line is read, before any work, with the words every reader of a setting uses."""
    spec = SPEC[name]
    words = dict(spec.words)

    def parse(text: str):
        if text.strip().lower() in words:
            return words[text.strip().lower()]
        try:
            value = spec.kind(text) if spec.kind in (int, float) else text
        except ValueError:
            value = text
        problem = setting_error(name, value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    parse.__name__ = name  # argparse names the type in some messages
    return parse


def _range(name: str) -> str:
    return SPEC[name].range.text()


def add_setting_flags(parser, *names: str) -> None:
    """The flags of these settings, made from the table (core/model/setting_specs.py): a value
    flag (type, range check, help with its range and default; a choice's words), a bool's flag and
    off flag."""
    for name in names:
        spec = SPEC[name]
        if spec.flag is not None and spec.part is None:
            if spec.kind is bool:
                parser.add_argument(spec.flag, action="store_true", help=spec.help_text())
            else:
                parser.add_argument(spec.flag, type=_setting(name), choices=spec.values or None, default=None,
                                    metavar=spec.metavar, help=spec.help_text())
        if spec.off_flag is not None:
            parser.add_argument(spec.off_flag, action="store_true", help=spec.off_help)


def _add_bake_flags(b) -> None:
    """The flags that decide a level (BAKE_FLAGS but --png and --exposure): `bake` and `farm` take
    the same; the settings' flags made from the table."""
    add_setting_flags(b, "map_scale", "splitter", "max_candidates", "split_weight", "min_relation", "relation_scale",
                      "max_score_faces", "region_size")
    b.add_argument("--hull", action="append", metavar="NAME=MINX,MINY,MINZ,MAXX,MAXY,MAXZ",
                   help="a box hull for the onion tree (metres), or a preset name such as stand, crouch, "
                        "q1_player; repeatable; replaces the scene's own hulls.  Without it a .json scene "
                        "builds the hulls it declares and a .map builds Quake's, as qbsp does: 'stand' (the "
                        "player, 32 x 32 x 56 units) and 'large' (64 x 64 x 88), at the map's --scale")
    b.add_argument("--no-hulls", action="store_true", help="build only the point tree")
    add_setting_flags(b, "fill", "onion_map_trees", "bevels", "bevel_angle", "vis", "seal", "allow_leak")
    b.add_argument("--point", action="append", metavar="X,Y,Z",
                   help="a point that must be inside (metres, as the level), besides the scene's player starts, "
                        "lights and markers; repeatable")
    b.add_argument("--slices", type=_slices, metavar="W,H,STEP[,CELL]",
                   help="also slice the world for crowds (multi-level height maps) for an avatar W wide and H "
                        f"tall stepping up or down STEP, on a grid of CELL (metres; W {_range('slice_width')}, H "
                        f"{_range('slice_height')}, STEP {_range('slice_step')}, CELL {_range('slice_cell')}, "
                        "default 0.25)")
    add_setting_flags(b, "slice_resolution", "light", "luxel", "patch", "bounces", "reflectance", "light_samples",
                      "light_threshold", "luxel_samples", "shoot_fraction")
    b.add_argument("--backend", choices=("auto", "numpy", "c"), default="auto",
                   help="what scores the trees' splitters, runs the visibility and traces light's rays: auto (the "
                        "default: the native library where it loads, else NumPy), numpy or c; the same level to the "
                        "byte either way")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m brushbake", description="Compile brush-built levels (brushbake).")
    p.add_argument("--version", action="version", version=f"brushbake {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("bake", help="compile a .map or .json scene into a level file")
    b.add_argument("scene", help="scene file (.map or .json)")
    b.add_argument("-o", "--output", help="level file to write (default: SCENE's name with .bbk, here)")
    b.add_argument("--json", help="also write a JSON dump of the level (for debugging)")
    _add_bake_flags(b)
    b.add_argument("--jobs", type=_jobs, default=None, metavar="N",
                   help="cores the full vis (--vis flow) may use (default: all; the output is the same for any N)")
    b.add_argument("--png", action="store_true",
                   help="also write each lightmap page as LEVEL.lmK.png (8-bit sRGB; implies --light)")
    add_setting_flags(b, "png_exposure")
    b.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="run the level's long work (the full vis's sources, light's ray batches) on this Dask "
                        "scheduler's workers (docs/FARM.md; pip install 'brushbake[farm]'): the same bytes")
    b.add_argument("--update", metavar="OLD.bbk",
                   help="re-bake after an edit: take the work an earlier 'bake --update' kept beside OLD.bbk "
                        "(OLD.bbk.cache) and rebuild only the brushes and regions the edit reached; the level is "
                        "the same bytes as a full bake, and its own work is kept beside it for the next update")
    b.add_argument("-q", "--quiet", action="store_true", help="no progress and no table")
    b.set_defaults(func=cmd_bake)

    i = sub.add_parser("info", help="print a level file's table of counts")
    i.add_argument("level")
    i.set_defaults(func=cmd_info)

    q = sub.add_parser("query", help="answer point or segment queries from .npy arrays")
    q.add_argument("level")
    g = q.add_mutually_exclusive_group(required=True)
    g.add_argument("--points", help="(N,3) array: answers (N,) uint8, 1 = solid (the void outside a sealed map "
                                    "is solid unless it was baked with --no-fill)")
    g.add_argument("--segments", help="(N,2,3) array: answers (N,7) [fraction, point xyz, normal xyz]")
    g.add_argument("--see", help="(N,2,3) point pairs: answers (N,) uint8, 1 = the PVS lets the first point's "
                                 "leaf see the second's")
    g.add_argument("--moves", help="(N,2,3) an avatar's feet before and after one step: answers (N,) uint8, "
                                   "1 = the crowd slices call the step legal")
    g.add_argument("--cameras", help="(N,8) cameras: x, y, z, yaw, pitch, hfov, aspect, far (metres, degrees; "
                                     "pitch in [-90, 90], hfov in [1, 179], aspect in [0.05, 20], far in "
                                     "[0.001, 200000]); with --cull and --seen or --stats")
    q.add_argument("--cull", choices=("pvs", "frustum", "portal"),
                   help="with --cameras: what a view draws by the PVS, the PVS and the frustum, or portals")
    q.add_argument("--seen", help="with --cameras: (N,K,3) points, K for each camera: answers (N,K) uint8, 1 = the "
                                  "leaf holding the point is drawn (0 in solid)")
    q.add_argument("--stats", action="store_true",
                   help="with --cameras: write JSON (-o OUT.json): per camera leaves, clusters and faces drawn, "
                        "and the query's time")
    q.add_argument("--hull", help="hull name (default: the point hull)")
    q.add_argument("--shape", help="plane shifting through the beveled tree: sphere:R, cylinder:R,H (reference "
                                   "point at the base centre), box:HX,HY,HZ (centred) or hull:POINTS.npy")
    q.add_argument("--impact", action="store_true", help="with --shape: append the impact point on the shape (N,10)")
    q.add_argument("--backend", choices=("numpy", "c"), default="numpy",
                   help="numpy (default, the reference) or c: the C run-time in runtime_c/, built with the system's "
                        "C compiler on first use (an error where there is none); the same answers")
    q.add_argument("-o", "--output", required=True, help=".npy file to write")
    q.set_defaults(func=cmd_query)

    f = sub.add_parser("farm", help="bake many scenes on a Dask cluster (docs/FARM.md), each as 'bake' would")
    f.add_argument("scenes", nargs="+", metavar="SCENE", help="scene files (.map or .json)")
    f.add_argument("-o", "--output", required=True, metavar="OUTDIR",
                   help="folder the levels are written into (SCENE's name with .bbk; .pts where a map leaks)")
    where = f.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="the Dask scheduler of the farm's machines")
    where.add_argument("--workers", type=_count("workers", 256), metavar="N",
                       help="a local cluster of N worker processes on this machine instead (default: one per core)")
    f.add_argument("--report", metavar="FILE.json",
                   help="where to write the JSON report (default: OUTDIR/farm.json)")
    _add_bake_flags(f)
    f.add_argument("-q", "--quiet", action="store_true", help="no progress and no table")
    f.set_defaults(func=cmd_farm)

    c = sub.add_parser("crowd", help="walk N avatars on a level's crowd slices for T ticks; prints JSON timings")
    c.add_argument("level")
    c.add_argument("--avatars", type=_count("avatars", 100_000_000), required=True,
                   help="how many avatars (1 to 100,000,000; at most the level's standing places)")
    c.add_argument("--ticks", type=_count("ticks", 1_000_000), required=True, help="how many ticks (1 to 1,000,000)")
    c.add_argument("--seed", type=int, default=0, help="random seed for spawning and turning (default 0)")
    c.set_defaults(func=cmd_crowd)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    limit_arenas()  # before any thread starts (core/malloc_arenas.py)
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:
        # The reader went away (`info LEVEL | head -1`): stop quietly, as other command-line tools
        # do, with the status of a process ended by SIGPIPE; nothing more goes to the pipe.
        _silence_stdout()
        return EXIT_CLOSED_PIPE
    except CancelledError as err:
        print(f"\n{err}", file=sys.stderr)
        return EXIT_CANCELLED
    except KeyboardInterrupt:
        print("\nCancelled by the user; nothing was written.", file=sys.stderr)
        return EXIT_CANCELLED
    except BrushbakeError as err:
        print(f"\nerror: {err}", file=sys.stderr)
        return EXIT_USER_ERROR
    except OSError as err:  # a path the user gave: reading and writing give their own messages above
        where = err.filename or "a file"
        print(f"\nerror: {where}: {err.strerror or err}. Check the path and its permissions.", file=sys.stderr)
        return EXIT_USER_ERROR


def _silence_stdout() -> None:
    """Point stdout and stderr at the null device, so that Python's own flush at exit finds no
    closed pipe (either may be the one that was closed: `bake ... 2>&1 | head`)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):
            os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
