"""Benchmark: load and compile every sample scene and every map in maps/.

    python bench/compile.py [--only NAME ...] [--repeat N] [--splitter onion|thesis] [--max-candidates K]
                            [--hulls stand,crouch] [--cpu-stages] [--no-bevels]

Prints ONE JSON object on stdout (sorted keys); progress and a table go to stderr.  Per scene:
load_s (parse), stages_s (csg, tree, detail, arrays, bevel and any further stage in
level.stats['times']), compile_s (wall time of the whole default bake, bake_scene: box-hull trees
included when the scene lists hulls, see 'hulls', and the bevel stage unless --no-bevels),
total_s = load_s + compile_s (comparable to ericw qbsp's whole-process time), cpu_s (process CPU
time of load + compile, steadier on a busy machine), bevel_share (the bevel stage's part of
all stages' time), counts (beveled_nodes and bevel_ratio, the beveled tree over the plain tree, among
them), and the ericw-tools row of bench/ericw_reference.md where the map is listed (its qbsp
seconds also in the table's last column).  --hulls replaces each scene's box hulls by
the named presets (core/hulls.py; 'none' for none), so the onion stages (expand_csg, onion_tree,
leaf_solidity) are timed too.  --cpu-stages times every stage in process CPU time instead of wall
time (other work on the machine then barely moves the figures).  With --repeat N each scene's figures
come from the best of N runs (lowest total_s; lowest cpu_s with --cpu-stages).  'machine' names the commit and whether core/
differed from it.  Leaking maps are baked as with --allow-leak (the default bake stops at a leak).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]  # the repo root is the package 'brushbake' (pip install -e .)

import numpy as np  # noqa: E402

from brushbake.core.compile.pipeline import bake_scene  # noqa: E402
from brushbake.core.formats.loaders import SCENE_SUFFIXES, load_scene  # noqa: E402

SAMPLES = REPO / "sample_scenes"
MAPS = REPO / "maps"
REFERENCE = Path(__file__).with_name("ericw_reference.md")

COUNT_KEYS = ("brushes", "structural_brushes", "detail_brushes", "faces_before_csg", "faces_after_csg", "splits",
              "nodes", "leaves", "solid_leaves", "depth", "planes", "faces")
STAGES = ("csg", "tree", "detail", "arrays", "bevel")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def scene_files() -> dict[str, Path]:
    """{name: path}: sample scenes first, then maps, named by file stem (file name on a clash)."""
    paths = sorted(p for p in SAMPLES.glob("*") if p.suffix.lower() in SCENE_SUFFIXES) if SAMPLES.is_dir() else []
    paths += sorted(MAPS.rglob("*.map")) if MAPS.is_dir() else []
    stems: dict[str, int] = {}
    for p in paths:
        stems[p.stem] = stems.get(p.stem, 0) + 1
    return {(p.stem if stems[p.stem] == 1 else p.name): p for p in paths}


def _number(text: str):
    t = text.strip().replace(",", "")
    try:
        return int(t)
    except ValueError:
        try:
            return float(t)
        except ValueError:
            return t


def reference_rows(path: Path = REFERENCE) -> dict[str, dict]:
    """The last markdown table of ericw_reference.md (ericw-tools timings), keyed by map name."""
    if not path.is_file():
        return {}
    tables, current = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("|"):
            current.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    if not tables:
        return {}
    header, *rows = tables[-1]
    keys = [re.sub(r"[^a-z0-9]+", "_", h.lower()).strip("_") for h in header]
    out = {}
    for row in rows:
        if all(set(c) <= set("-: ") for c in row):
            continue  # the |---| separator
        rec = {k: _number(v) for k, v in zip(keys, row)}
        name = rec.pop(keys[0])
        # keep what a compile benchmark compares against: qbsp time, brushes, nodes, leafs
        out[str(name)] = {("ericw_" + k): v for k, v in rec.items()
                          if k in ("qbsp_s", "world_brushes", "nodes", "leafs")}
    return out


def machine_info() -> dict:
    info = {
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
    }
    try:
        info["loadavg_at_start"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    info.update(git_state())
    return info


def git_state() -> dict:
    """The commit benchmarked and whether core/ differs from it (numbers then describe the work tree)."""
    def git(*args):
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=10).stdout.strip()
    try:
        return {"commit": git("rev-parse", "--short", "HEAD") or None,
                "core_dirty": bool(git("status", "--porcelain", "--", "core"))}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "core_dirty": None}


class _CpuClock:
    """Stands in for the `time` module inside the compiler: perf_counter reads process CPU time."""

    perf_counter = staticmethod(time.process_time)

    def __getattr__(self, name):
        return getattr(time, name)


def use_cpu_clock() -> None:
    """Make compile_scene's per-stage times (level.stats['times']) process CPU seconds."""
    import brushbake.core.compile.pipeline as compile_module
    import brushbake.core.compile.trees.onion as onion_module

    compile_module.time = onion_module.time = _CpuClock()


def run_once(path: Path, splitter: str | None, max_candidates: int | None, hulls: list | None = None,
             bevels: bool = True) -> dict:
    c0 = time.process_time()
    t0 = time.perf_counter()
    scene = load_scene(path)
    t1 = time.perf_counter()
    if hulls is not None:
        scene.hulls = list(hulls)
    if splitter is not None:
        scene.settings.splitter = splitter
    if max_candidates is not None:
        scene.settings.max_candidates = max_candidates
    scene.settings.bevels = bevels
    scene.settings.allow_leak = True  # a leaking map is timed too (bake --allow-leak), as bake_hashes.py does
    level = bake_scene(scene)
    t2 = time.perf_counter()
    cpu = time.process_time() - c0
    stats = level.stats
    bevel = stats.get("bevel", {})
    counts = {k: int(stats.get(k, 0)) for k in COUNT_KEYS}
    counts["beveled_nodes"] = int(bevel.get("beveled_nodes", 0))
    counts["bevel_ratio"] = round(float(bevel.get("size_ratio", 0.0)), 3)
    return {
        "load_s": round(t1 - t0, 4),
        "compile_s": round(t2 - t1, 4),
        "total_s": round(t2 - t0, 4),
        "cpu_s": round(cpu, 4),
        # the point-tree stages always, plus any further stage compile_scene times (box hulls)
        "stages_s": {k: round(float(v), 4) for k, v in {**dict.fromkeys(STAGES, 0.0), **stats["times"]}.items()},
        "counts": counts,
        # the bevel stage over all stages, both read on the same clock (CPU with --cpu-stages)
        "bevel_share": round(float(stats["times"].get("bevel", 0.0)) / max(sum(stats["times"].values()), 1e-9), 3),
        "hulls": len(scene.hulls),
        "warnings": len(scene.warnings),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[],
                    help="scene name (file stem) to run; repeat or comma-separate for several")
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs (default 1)")
    ap.add_argument("--splitter", choices=("onion", "thesis"), default=None, help="override Settings.splitter")
    ap.add_argument("--max-candidates", type=int, default=None, help="override Settings.max_candidates (0 = all)")
    ap.add_argument("--hulls", default=None,
                    help="comma-separated hull presets replacing each scene's hulls (e.g. stand,crouch; 'none')")
    ap.add_argument("--cpu-stages", action="store_true", help="per-stage times in process CPU seconds")
    ap.add_argument("--no-bevels", action="store_true", help="bake without the bevel stage (bake --no-bevels)")
    args = ap.parse_args(argv)
    hulls = None
    if args.hulls is not None:
        from brushbake.core.model.hulls import preset

        hulls = [preset(h) for h in args.hulls.split(",") if h and h != "none"]
    if args.cpu_stages:
        use_cpu_clock()

    files = scene_files()
    only = {n for o in args.only for n in o.split(",") if n}
    if only:
        unknown = only - set(files) - {p.stem for p in files.values()}
        if unknown:
            log(f"unknown scene(s): {', '.join(sorted(unknown))}; known: {', '.join(files)}")
            return 2
        files = {k: p for k, p in files.items() if k in only or p.stem in only}
    refs = reference_rows()

    start = time.perf_counter()
    out = {"machine": machine_info(), "settings": {"splitter": args.splitter or "default",
                                                   "max_candidates": args.max_candidates, "repeat": args.repeat,
                                                   "hulls": args.hulls, "cpu_stages": args.cpu_stages,
                                                   "bevels": not args.no_bevels},
           "scenes": {}}
    for name, path in files.items():
        best = None
        for r in range(max(1, args.repeat)):
            rec = run_once(path, args.splitter, args.max_candidates, hulls, bevels=not args.no_bevels)
            key = "cpu_s" if args.cpu_stages else "total_s"
            if best is None or rec[key] < best[key]:
                best = rec
        best["path"] = os.path.relpath(path, REPO)
        if path.stem in refs:
            best["reference"] = refs[path.stem]
        out["scenes"][name] = best
        c = best["counts"]
        qbsp = best.get("reference", {}).get("ericw_qbsp_s")
        log(f"{name:<16} load {best['load_s']:6.2f}  compile {best['compile_s']:6.2f}  "
            f"bevel {best['stages_s']['bevel']:6.2f} ({100 * best['bevel_share']:3.0f}%)  "
            f"nodes {c['nodes']:6d}  beveled {c['bevel_ratio']:4.2f}x  leaves {c['leaves']:6d}  "
            f"total {best['total_s']:6.2f} s  ericw qbsp {qbsp if qbsp is not None else '-'}")
    out["wall_s"] = round(time.perf_counter() - start, 2)
    print(json.dumps(out, sort_keys=True, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
