"""brushbake against ericw-tools in the same run: every map in maps/ and procedural worlds, per stage
and end to end, wall and CPU seconds, peak memory, and how tight each PVS is.

    nice python bench/vs_ericw.py [--ericw-dir DIR] [--only NAME ...] [--no-maps]
                                  [--worlds tiled:1500,slab:2000] [--seed 0]
                                  [--points 10000] [--pairs 100000] [--jobs N] [--keep DIR] [--table]

For each map (maps/**/*.map, and each world of bench/worlds.py: LAYOUT:BRUSHES, comma-separated;
'--worlds ""' for none), in this order:
- ericw-tools through the anchor's run.sh (bench/ericw_tools.py): qbsp, vis, light -bounce 1, each
  its own child process: wall seconds, CPU seconds (user + system, all threads) and peak resident
  memory (ru_maxrss) from os.wait4;
- brushbake as one child process (this file with --child) running what
  `bake MAP --vis flow --backend c --light --bounces 1` runs (the two Quake hulls a .map gets,
  bevels, portals, the leak check, the outside fill), and writing the .bbk.  Its stages:
  'vis' is the PVS (core/compile/vis/vis.py bake_vis), 'light' the lightmaps (bake_light), and
  'compile' everything else from reading the .map on (qbsp's share: trees, hulls, bevels,
  portals, leak check).  Per stage the wall seconds around those calls, process CPU seconds (all
  threads) and the peak resident memory (VmHWM reset at each stage start, bench/scale.py's
  StageMemory); end to end the child's wall and CPU seconds from os.wait4 (the interpreter's
  start, the imports and the .bbk's writing included) and the largest stage peak.  Not the
  child's ru_maxrss: Linux gives a child, at its exec, the high-water mark of the memory it was
  forked from, so ru_maxrss reported this process's own size (239 MB for lq_e1m6, whose bake
  peaks at 53 MB); ericw's tools are started by run.sh's small Python, whose size (about 14 MB)
  is their floor;
- the PVS pair share: random points in the world model's box (ericw's .bsp, in .map units;
  brushbake's points are the same times the map's scale, 1/32 m by default), drawn until --points
  of them are open in either tool (2,000,000 drawn at most), then --pairs random pairs of those.
  A pair is used when both points are open in both tools: in ericw's tree a leaf of empty (or
  water, slime, lava) contents with a PVS row; in brushbake's a leaf with a visibility cluster
  (solid leaves and the void outside a sealed map have none).  The others are skipped and counted.  pair_share: of the pairs used, the share
  whose PVS lets the first point's leaf see the second's; ericw's rows are read from its .bsp
  (bench/quake_bsp.py), brushbake's through its level reader and run-time (exporters/native.py,
  core/runtime/pvs.py).  Both are conservative, so the smaller share is the tighter PVS.  Against
  the truth: pairs_clear counts the used pairs whose segment hits nothing in brushbake's point tree
  (the exact CSG of the brushes, core/runtime/query.py segment_hits), and misses_ericw and
  misses_brushbake the clear pairs each PVS hides (0 for a conservative PVS on the same geometry).

Prints ONE JSON object on stdout: 'records', one a map a tool ('tool': ericw or brushbake; the
brushbake record's 'ratio' holds brushbake / ericw per stage for wall, CPU and peak memory, and for
the pair share; end to end only where both ran the same stages), and 'settings'.  --table also
prints, on stderr, the markdown tables (the full one and the summary of ratios).  A map ericw or
brushbake finds leaking has no vis stage and no pair share.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

from ericw_tools import default_dir, run_all, timed, tool_dir  # noqa: E402

STAGES = ("compile", "vis", "light")
ERICW_STAGE = {"compile": "qbsp", "vis": "vis", "light": "light"}
BAKE_FLAGS = ["--vis", "flow", "--backend", "c", "--light", "--bounces", "1"]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------- inputs


def map_files() -> dict[str, Path]:
    """maps/**/*.map by stem (sorted by path)."""
    return {p.stem: p for p in sorted((REPO / "maps").rglob("*.map"))}


def world_specs(text: str) -> list[tuple[str, int]]:
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        layout, _, n = item.partition(":")
        out.append((layout, int(n)))
    return out


# ---------------------------------------------------------------------------------------------- brushbake child


def child(map_path: Path, out: Path, jobs: int | None) -> dict:
    """In the child process: the bake of `map_path` as `bake ... BAKE_FLAGS` runs it, stages
    measured (see the module docstring), the level written to `out`."""
    from brushbake.core.malloc_arenas import limit_arenas

    limit_arenas()  # as the command line's bake does, before any thread starts
    from scale import StageMemory

    import brushbake.core.compile.pipeline as pipeline
    from brushbake.bakejob import bake_options, bake_scene_file
    from brushbake.cli import build_parser
    from brushbake.exporters.native import level_to_bytes

    mem = StageMemory()
    walls = {"vis": 0.0, "light": 0.0}

    def measured(fn, stage):
        def call(*a, **k):
            mem.enter(stage)
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                walls[stage] += time.perf_counter() - t0
                mem.enter("compile")
        return call

    pipeline.bake_vis = measured(pipeline.bake_vis, "vis")  # the names visibility_stage and bake_scene call
    pipeline.bake_light = measured(pipeline.bake_light, "light")
    argv = ["bake", str(map_path), "-o", str(out), *BAKE_FLAGS, "-q"] + (["--jobs", str(jobs)] if jobs else [])
    args = build_parser().parse_args(argv)
    mem.enter("compile")
    t0 = time.perf_counter()
    baked = bake_scene_file(map_path, bake_options(args), progress=None, jobs=args.jobs)
    bake_s = time.perf_counter() - t0
    mem.enter("write")
    t1 = time.perf_counter()
    if baked.level is not None:
        out.write_bytes(level_to_bytes(baked.level))
    write_s = time.perf_counter() - t1
    mem.enter(None)
    wall = {"compile": bake_s - walls["vis"] - walls["light"], **walls, "write": write_s}
    stages = {s: {"wall_s": round(wall[s], 3), "cpu_s": round(mem.cpu_s.get(s, 0.0), 3),
                  "peak_mb": round(mem.peak_mb.get(s, 0.0), 1)} for s in (*STAGES, "write") if s in mem.cpu_s}
    rec = {"leaked": baked.leak is not None, "stages": stages,
           "peak_mb": round(max(mem.peak_mb.values()), 1),
           "per_stage_memory": "VmHWM reset per stage" if mem.resettable else "peak so far",
           "times": {k: round(v, 3) for k, v in baked.times.items()}}
    if baked.level is not None:
        s = baked.level.stats
        v = s.get("vis", {})
        rec["counts"] = {"leaves": s.get("leaves"), "clusters": v.get("clusters"), "portals": v.get("portals"),
                         "avg_leaves_visible": v.get("avg_leaves_visible"),
                         "avg_clusters_visible": v.get("avg_clusters_visible"), "vis_backend": v.get("vis_backend"),
                         "bbk_bytes": out.stat().st_size}
    return rec


def run_brushbake(map_path: Path, tmp: Path, jobs: int | None) -> dict:
    """The child, timed from here: its record with 'total' (wall and CPU from os.wait4)."""
    out, log_path = tmp / (map_path.stem + ".bbk"), tmp / (map_path.stem + ".brushbake.out")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(map_path), str(out)]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    run = timed(cmd, tmp, log_path)
    text = log_path.read_text(errors="replace").strip().splitlines()
    if run["rc"] != 0 or not text or not text[-1].startswith("{"):
        return {"error": text[-3:], "rc": run["rc"], "total": run}
    rec = json.loads(text[-1])
    rec["total"] = {"wall_s": run["wall_s"], "cpu_s": run["cpu_s"],
                    "peak_mb": round(rec["peak_mb"] if rec.get("per_stage_memory") == "VmHWM reset per stage"
                                     else max(rec["peak_mb"], run["maxrss_mb"]), 1)}  # the module docstring
    rec["bbk"] = out if out.is_file() else None
    return rec


# ---------------------------------------------------------------------------------------------- ericw


def ericw_record(runs: dict) -> dict:
    """run.sh's lines as stages: compile = qbsp, vis, light; total = their sums (peak: the largest)."""
    stages = {}
    for stage, tool in ERICW_STAGE.items():
        r = runs.get(tool)
        if r and r.get("rc") == 0:
            stages[stage] = {"wall_s": r["wall_s"], "cpu_s": r["cpu_s"], "peak_mb": r["maxrss_mb"]}
    rec = {"stages": stages, "leaked": bool(runs.get("qbsp", {}).get("leaked"))}
    if stages:
        rec["total"] = {"wall_s": round(sum(s["wall_s"] for s in stages.values()), 3),
                        "cpu_s": round(sum(s["cpu_s"] for s in stages.values()), 3),
                        "peak_mb": max(s["peak_mb"] for s in stages.values())}
    q, v = runs.get("qbsp", {}), runs.get("vis", {})
    rec["counts"] = {"map_brushes": q.get("map_brushes"), "leafs": q.get("leafs"), "clusters": v.get("clusters"),
                     "portals": v.get("portals"), "avg_leafs_visible": v.get("avg_leafs_visible"),
                     "bsp_format": q.get("bsp_format")}
    failed = {t: r.get("rc") for t, r in runs.items() if isinstance(r, dict) and r.get("rc") not in (0, None)}
    if failed or "error" in runs:
        rec["error"] = runs.get("error") or f"exit codes {failed}"
    return rec


# ---------------------------------------------------------------------------------------------- PVS pairs


def pair_share(bsp, level, scale: float, points: int, pairs: int, seed: int, most: int = 2_000_000) -> dict:
    """The same random pairs of open points asked of both PVS (see the module docstring), and
    each PVS's misses against the segments between the points that hit nothing."""
    from brushbake.core.runtime import cruntime
    from brushbake.core.runtime.pvs import visibility
    from brushbake.core.runtime.query import segment_hits

    vis = visibility(level)
    open_leaf = bsp.open_leaves()
    lo, hi = bsp.bounds
    rng = np.random.default_rng(seed)
    pts, e_leaf, b_cluster, drawn, found = [], [], [], 0, 0
    while drawn < most and (drawn == 0 or found < points):  # until `points` are open in either tool
        batch = rng.uniform(lo, hi, size=(min(max(points, 10_000), most - drawn), 3))
        pts.append(batch)
        e_leaf.append(bsp.point_leaves(batch))
        b_cluster.append(vis.clusters_of_points(batch * scale))
        drawn += len(batch)
        found += int((open_leaf[e_leaf[-1]] | (b_cluster[-1] >= 0)).sum())
    pts, e_leaf, b_cluster = np.concatenate(pts), np.concatenate(e_leaf), np.concatenate(b_cluster)
    e_open, b_open = open_leaf[e_leaf], b_cluster >= 0
    pool = np.flatnonzero(e_open | b_open)
    out = {"points_drawn": drawn, "points_open_ericw": int(e_open.sum()), "points_open_brushbake": int(b_open.sum()),
           "points_open_both": int((e_open & b_open).sum())}
    if len(pool) < 2:
        return {**out, "pairs": 0, "error": "fewer than 2 open points"}
    i, j = rng.choice(pool, pairs), rng.choice(pool, pairs)
    use = e_open[i] & e_open[j] & b_open[i] & b_open[j]
    i, j = i[use], j[use]
    e_see = bsp.can_see(e_leaf[i], e_leaf[j])
    b_see = vis.can_see(b_cluster[i], b_cluster[j])
    backend = "c" if cruntime.available() else "numpy"
    clear = segment_hits(level, pts[i] * scale, pts[j] * scale, backend=backend)[:, 0] >= 1.0
    return {**out, "pairs": pairs, "pairs_used": int(use.sum()), "pairs_skipped": int(pairs - use.sum()),
            "ericw": float(e_see.mean()) if len(i) else None, "brushbake": float(b_see.mean()) if len(i) else None,
            "only_ericw_sees": int((e_see & ~b_see).sum()), "only_brushbake_sees": int((b_see & ~e_see).sum()),
            "pairs_clear": int(clear.sum()), "clear_share": float(clear.mean()) if len(i) else None,
            "misses_ericw": int((clear & ~e_see).sum()), "misses_brushbake": int((clear & ~b_see).sum())}


# ---------------------------------------------------------------------------------------------- one map


def ratio(a, b):
    return round(a / b, 3) if a is not None and b else None


def run_map(name: str, path: Path, source: str, args, bin_dir: Path) -> list[dict]:
    from quake_bsp import read_bsp

    from brushbake.core.formats.mapfile import DEFAULT_SCALE
    from brushbake.exporters.native import read_level

    with tempfile.TemporaryDirectory(prefix=f"vs-ericw-{name}-") as tmp:
        tmp = Path(tmp)
        log(f"{name}: ericw-tools")
        (tmp / "ericw").mkdir()
        ew = ericw_record(run_all(path, tmp / "ericw", bin_dir))
        log(f"{name}: brushbake")
        (tmp / "bb").mkdir()
        bb = run_brushbake(path, tmp / "bb", args.jobs)
        bsp_path = tmp / "ericw" / (path.stem + ".bsp")
        pvs = None
        if "error" in bb or "error" in ew:
            pvs = {"skipped": "a tool failed"}
        elif bb["leaked"] or ew["leaked"] or "vis" not in ew["stages"] or not bsp_path.is_file():
            pvs = {"skipped": f"leak (ericw {ew['leaked']}, brushbake {bb['leaked']})"}
        else:
            log(f"{name}: PVS pairs")
            pvs = pair_share(read_bsp(bsp_path), read_level(bb["bbk"]), DEFAULT_SCALE, args.points, args.pairs,
                             args.seed)
        if args.keep:
            shutil.copytree(tmp, Path(args.keep) / name, dirs_exist_ok=True)
    bb.pop("bbk", None)
    common = {"map": name, "source": source}
    ew_rec = {**common, "tool": "ericw", **ew}
    bb_rec = {**common, "tool": "brushbake", **bb}
    if "skipped" in pvs or "error" in pvs:
        ew_rec["pvs"] = bb_rec["pvs"] = pvs
    else:
        shared = {k: v for k, v in pvs.items() if k not in ("ericw", "brushbake")}
        ew_rec["pvs"] = {"pair_share": pvs["ericw"], **shared}
        bb_rec["pvs"] = {"pair_share": pvs["brushbake"], **shared}
    r = {}
    ran = [set(rec.get("stages", {})) & set(STAGES) for rec in (bb, ew)]
    for stage in (*STAGES, "total"):
        a = bb.get("total") if stage == "total" else bb.get("stages", {}).get(stage)
        b = ew.get("total") if stage == "total" else ew.get("stages", {}).get(stage)
        if stage == "total" and ran[0] != ran[1]:
            continue  # end to end only where both ran the same stages (a leak stops brushbake before light)
        if a and b:
            r[stage] = {"wall": ratio(a["wall_s"], b["wall_s"]), "cpu": ratio(a["cpu_s"], b["cpu_s"]),
                        "peak": ratio(a["peak_mb"], b["peak_mb"])}
    if "pair_share" in bb_rec["pvs"]:
        r["pair_share"] = ratio(bb_rec["pvs"]["pair_share"], ew_rec["pvs"]["pair_share"])
    bb_rec["ratio"] = r
    return [ew_rec, bb_rec]


# ---------------------------------------------------------------------------------------------- tables


def _cell(rec, stage, key="wall_s", fmt="{:.2f}"):
    s = rec.get("total") if stage == "total" else rec.get("stages", {}).get(stage)
    return fmt.format(s[key]) if s and s.get(key) is not None else "-"


def tables(records: list[dict]) -> tuple[str, str]:
    """(the full table, the summary of ratios) as markdown."""
    by_map: dict[str, dict] = {}
    for rec in records:
        by_map.setdefault(rec["map"], {})[rec["tool"]] = rec
    full = ["| map | brushes | compile s: brushbake / qbsp | vis s: brushbake / vis | light s: brushbake / light "
            "| end to end s (CPU s) | peak MB | pair share: brushbake / ericw (pairs used, skipped) "
            "| clear segments, misses brushbake / ericw |",
            "|---|---|---|---|---|---|---|---|---|"]
    summary = ["| map | compile | full vis | light | end to end (CPU) | peak memory | PVS pair share |",
               "|---|---|---|---|---|---|---|"]
    for name, t in by_map.items():
        bb, ew = t.get("brushbake", {}), t.get("ericw", {})
        r = bb.get("ratio", {})

        def x(stage, key="wall"):
            v = r.get(stage, {}).get(key) if stage != "pair_share" else r.get("pair_share")
            return f"{v:.2f}x" if v is not None else "-"

        cols = []
        for stage in STAGES:
            cols.append(f"{_cell(bb, stage)} / {_cell(ew, stage)} ({x(stage)})")
        total = (f"{_cell(bb, 'total')} ({_cell(bb, 'total', 'cpu_s')}) / {_cell(ew, 'total')} "
                 f"({_cell(ew, 'total', 'cpu_s')})")
        peak = f"{_cell(bb, 'total', 'peak_mb', '{:.0f}')} / {_cell(ew, 'total', 'peak_mb', '{:.0f}')}"
        p_bb, p_ew = bb.get("pvs", {}), ew.get("pvs", {})
        if "pair_share" in p_bb and p_bb["pair_share"] is not None:
            share = (f"{p_bb['pair_share']:.3f} / {p_ew['pair_share']:.3f} ({x('pair_share')}; "
                     f"{p_bb['pairs_used']:,}, {p_bb['pairs_skipped']:,})")
            truth = f"{p_bb['clear_share']:.3f}, {p_bb['misses_brushbake']} / {p_bb['misses_ericw']}"
        else:
            share = p_bb.get("skipped") or p_bb.get("error") or bb.get("error") and "brushbake failed" or "-"
            truth = "-"
        brushes = ew.get("counts", {}).get("map_brushes")
        full.append(f"| {name} | {brushes if brushes is not None else '-'} | " + " | ".join(cols)
                    + f" | {total} | {peak} | {share} | {truth} |")
        summary.append(f"| {name} | {x('compile')} | {x('vis')} | {x('light')} | {x('total')} "
                       f"({x('total', 'cpu')}) | {x('total', 'peak')} | {x('pair_share')} |")
    return "\n".join(full), "\n".join(summary)


# ---------------------------------------------------------------------------------------------- main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ericw-dir", default=default_dir(),
                    help="folder of ericw-tools' qbsp, vis, light and run.sh (default $ERICW_DIR)")
    ap.add_argument("--only", nargs="*", help="map or world names (a world is LAYOUT_BRUSHES)")
    ap.add_argument("--no-maps", action="store_true", help="only the worlds")
    ap.add_argument("--worlds", default="tiled:1500,slab:2000",
                    help="procedural worlds LAYOUT:BRUSHES, comma-separated (layouts slab, tiled, terrain; '' for none)")
    ap.add_argument("--seed", type=int, default=0, help="the worlds' seed and the pairs' seed")
    ap.add_argument("--points", type=int, default=10_000, help="open points wanted in each map's box")
    ap.add_argument("--pairs", type=int, default=100_000, help="random pairs of open points")
    ap.add_argument("--jobs", type=int, default=None, help="brushbake's cores for the full vis (default: all)")
    ap.add_argument("--keep", help="copy each map's outputs (.bsp, .bbk, the tools' logs) into DIR/NAME")
    ap.add_argument("--table", action="store_true", help="also print the markdown tables on stderr")
    ap.add_argument("--child", nargs=2, metavar=("MAP", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(Path(args.child[0]), Path(args.child[1]), args.jobs)))
        return 0
    if not (Path(args.ericw_dir) / "run.sh").is_file():
        ap.error("--ericw-dir (or $ERICW_DIR): the folder holding ericw-tools' qbsp, vis, light and run.sh")
    from worlds import make_world

    records = []
    with tool_dir(args.ericw_dir) as bin_dir, tempfile.TemporaryDirectory(prefix="vs-ericw-worlds-") as wtmp:
        todo = [] if args.no_maps else [(n, p, str(p.relative_to(REPO))) for n, p in map_files().items()]
        for layout, n in world_specs(args.worlds):
            name = f"{layout}_{n}"
            if args.only and name not in args.only:
                continue
            p = Path(wtmp) / f"{name}.map"
            p.write_text(make_world(layout, n, args.seed), encoding="ascii")
            todo.append((name, p, f"bench/worlds.py {layout} {n} --seed {args.seed}"))
        for name, path, source in todo:
            if args.only and name not in args.only:
                continue
            recs = run_map(name, path, source, args, bin_dir)
            for rec in recs:
                log(json.dumps(rec, sort_keys=True))
            records += recs
    result = {"settings": {"brushbake": "bake MAP " + " ".join(BAKE_FLAGS), "ericw": "run.sh: qbsp, vis, light -bounce 1",
                           "points": args.points, "pairs": args.pairs, "seed": args.seed, "jobs": args.jobs,
                           "cores": os.cpu_count()},
              "records": records}
    print(json.dumps(result, sort_keys=True, indent=1))
    if args.table:
        full, summary = tables(records)
        log("\n" + full + "\n\n" + summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
