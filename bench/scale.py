"""How each bake stage grows with the world: seconds and peak memory per stage at several sizes of
bench/worlds.py's layouts, and the fitted growth exponents.

    python bench/scale.py [--layouts slab,tiled,terrain] [--sizes 1000,2000,5000] [--seed 0]
                          [--hulls stand,crouch] [--vis fast] [--light]
                          [--ericw qbsp|all --ericw-dir DIR]

Prints ONE JSON object on stdout; a table goes to stderr.  Every (layout, size) is baked in a fresh
subprocess (this file with --child), so one size's memory never counts against the next.

Stages (the issue's names) and the pipeline's timings they sum (level.stats['times']):
load (parse and brushes), csg, trees (tree, detail, arrays), hulls (expand_csg, onion_tree,
leaf_solidity), bevels, portals, leaks (leaks, seal, and the outside fill after the PVS), vis, light.

Peak memory per stage: the process's peak resident set (VmHWM) while the stage runs, reset at each
stage's start through /proc/self/clear_refs ('5' resets the high-water mark, Linux 4.0+), read at
its end; stage boundaries come from the bake's progress messages.  It is the honest high-water of
the whole process during the stage (what the stage holds plus what earlier stages left alive),
costs nothing (tracemalloc would slow the bake several-fold and sees only Python's allocations),
and 'peak_mb' is the largest of them (the reset clears ru_maxrss too).  Where clear_refs is missing every
stage reads as the peak so far.

'cpu_s': process CPU seconds per stage between the same boundaries (all threads; the light
stage's threads included), steadier than the wall seconds when the machine is shared.

Exponents: for each stage and each two consecutive sizes, log(y2/y1) / log(n2/n1) on wall seconds,
CPU seconds and peak MB (stages under 0.05 s are left out: timer noise), and a least-squares slope
over all sizes ('fit').  --ericw runs ericw-tools' qbsp (or qbsp, vis and light through the folder's run.sh) from
--ericw-dir (default $ERICW_DIR) on the same file in the same run, wall seconds and peak MB beside
ours.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

STAGES = ("load", "csg", "trees", "hulls", "bevels", "portals", "leaks", "vis", "light")
#: the pipeline's timings (level.stats['times']) each stage sums
TIMES = {"csg": ("csg",), "trees": ("tree", "detail", "arrays"), "hulls": ("expand_csg", "onion_tree", "leaf_solidity"),
         "bevels": ("bevel",), "portals": ("portals",), "leaks": ("leaks", "seal", "fill"), "vis": ("vis",),
         "light": ("light",)}
#: progress-message prefixes (bake_scene's nested stage names) -> stage
PROGRESS = (("compile: csg", "csg"), ("compile: tree", "trees"), ("compile: detail", "trees"),
            ("compile: onion", "hulls"), ("compile: arrays", "trees"), ("bevel", "bevels"),
            ("vis: portals", "portals"), ("vis: seal", "leaks"), ("vis: pvs", "vis"), ("light", "light"))
NOISE_S = 0.05


class StageMemory:
    """Peak resident memory per stage, by resetting the kernel's high-water mark at each stage,
    and process CPU seconds per stage (every thread's; steadier than wall time on a busy machine)."""

    def __init__(self):
        self.peak_mb: dict[str, float] = {}
        self.cpu_s: dict[str, float] = {}
        self.stage: str | None = None
        self.cpu0 = time.process_time()
        try:
            self._reset()
            self.resettable = True
        except OSError:
            self.resettable = False

    @staticmethod
    def _reset() -> None:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")

    @staticmethod
    def _hwm_mb() -> float:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def enter(self, stage: str | None) -> None:
        if stage == self.stage:
            return
        now = time.process_time()
        if self.stage is not None:
            self.peak_mb[self.stage] = max(self.peak_mb.get(self.stage, 0.0), self._hwm_mb())
            self.cpu_s[self.stage] = self.cpu_s.get(self.stage, 0.0) + now - self.cpu0
        if self.resettable:
            self._reset()
        self.stage, self.cpu0 = stage, now

    def progress(self, fraction: float, message: str) -> None:
        for prefix, stage in PROGRESS:
            if message.startswith(prefix):
                self.enter(stage)
                return


def child(layout: str, brushes: int, seed: int, hulls: list[str], vis: str, light: bool, keep: str | None) -> dict:
    """Generate, load and bake one world in this process; its figures as a dict."""
    from brushbake.core.malloc_arenas import limit_arenas

    limit_arenas()  # as the command line's bake does, before any thread starts
    from brushbake.core.compile.pipeline import bake_scene
    from brushbake.core.formats.loaders import load_scene
    from brushbake.core.model.hulls import preset

    sys.path.insert(0, str(HERE))
    from worlds import make_world

    text = make_world(layout, brushes, seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(keep) if keep else Path(tmp) / f"{layout}_{brushes}.map"
        path.write_text(text, encoding="ascii")
        mem = StageMemory()
        mem.enter("load")
        t0 = time.perf_counter()
        scene = load_scene(path)
        load_s = time.perf_counter() - t0
    mem.enter(None)
    scene.hulls = [preset(h) for h in hulls]
    scene.settings.vis = vis
    scene.settings.light = light
    scene.settings.bounces = 1
    t0 = time.perf_counter()
    level = bake_scene(scene, progress=mem.progress)
    bake_s = time.perf_counter() - t0
    mem.enter(None)
    times = level.stats.get("times", {})
    seconds = {"load": load_s}
    for stage, keys in TIMES.items():
        if any(k in times for k in keys):
            seconds[stage] = sum(times.get(k, 0.0) for k in keys)
    s = level.stats
    peak = max([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, *mem.peak_mb.values()])
    return {"layout": layout, "brushes": brushes, "seed": seed, "seconds": seconds, "bake_s": bake_s,
            "peak_stage_mb": {k: round(v, 1) for k, v in mem.peak_mb.items()},
            "cpu_s": {k: round(v, 3) for k, v in mem.cpu_s.items()},
            "peak_mb": round(peak, 1),
            "per_stage_memory": "VmHWM reset per stage" if mem.resettable else "peak so far",
            "counts": {k: s.get(k) for k in ("faces_before_csg", "faces_after_csg", "nodes", "leaves",
                                               "space1_faces", "space2_faces", "planes") if k in s}}


def run_child(args, layout: str, brushes: int) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", layout, str(brushes), "--seed", str(args.seed),
           "--hulls", args.hulls, "--vis", args.vis] + (["--light"] if args.light else [])
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"layout": layout, "brushes": brushes, "error": proc.stderr.strip().splitlines()[-3:],
                "wall_s": round(time.perf_counter() - t0, 2)}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_ericw(args, layout: str, brushes: int) -> dict:
    """ericw-tools on the same world: qbsp alone (wall s, peak MB from wait4), or run.sh's three."""
    sys.path.insert(0, str(HERE))
    from ericw_tools import run_all, run_tool, tool_dir
    from worlds import make_world

    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp, tool_dir(args.ericw_dir) as bin_dir:
        path = Path(tmp) / f"{layout}_{brushes}.map"
        path.write_text(make_world(layout, brushes, args.seed), encoding="ascii")
        if args.ericw == "all":
            for tool, rec in run_all(path, tmp, bin_dir).items():
                if isinstance(rec, dict):
                    out[tool] = {"wall_s": rec.get("wall_s"), "peak_mb": rec.get("maxrss_mb"), "rc": rec.get("rc")}
            return out
        rec = run_tool(bin_dir, "qbsp", [], path.name, tmp)
        out["qbsp"] = {"wall_s": rec["wall_s"], "peak_mb": rec["maxrss_mb"], "rc": rec["rc"]}
    return out


def exponents(rows: list[dict], key: str, sub: str | None) -> dict:
    """Per stage: growth exponents between consecutive sizes and the least-squares slope."""
    out = {}
    rows = sorted((r for r in rows if "error" not in r), key=lambda r: r["brushes"])
    stages = list(STAGES) + ["total"]
    for stage in stages:
        pts = []
        for r in rows:
            table = r[key] if sub is None else r[key].get(sub, {})
            y = table.get(stage)
            if y is not None and (key == "peak_stage_mb" or y >= NOISE_S):
                pts.append((r["brushes"], y))
        if len(pts) < 2:
            continue
        pairs = [round(math.log(b[1] / a[1]) / math.log(b[0] / a[0]), 2) for a, b in zip(pts, pts[1:]) if a[1] > 0 < b[1]]
        xs, ys = [math.log(p[0]) for p in pts], [math.log(p[1]) for p in pts if p[1] > 0]
        fit = None
        if len(ys) == len(xs):
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            den = sum((x - mx) ** 2 for x in xs)
            fit = round(sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den, 2) if den else None
        out[stage] = {"pairs": pairs, "fit": fit}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layouts", default="slab,tiled,terrain")
    ap.add_argument("--sizes", default="1000,2000,5000", help="brush counts, comma-separated")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hulls", default="stand,crouch", help="hull presets ('' for none)")
    ap.add_argument("--vis", default="fast", choices=("fast", "flow", "none"))
    ap.add_argument("--light", action="store_true", help="bake light too (one bounce)")
    ap.add_argument("--ericw", choices=("qbsp", "all"), help="also run ericw-tools on each world")
    ap.add_argument("--ericw-dir", default=os.environ.get("ERICW_DIR", ""),
                    help="folder of ericw-tools' qbsp, vis, light (and run.sh for --ericw all)")
    ap.add_argument("--child", nargs=2, metavar=("LAYOUT", "BRUSHES"), help=argparse.SUPPRESS)
    ap.add_argument("--keep", help=argparse.SUPPRESS)
    args = ap.parse_args()
    hulls = [h for h in args.hulls.split(",") if h]
    if args.ericw and not (Path(args.ericw_dir) / "qbsp").is_file():
        ap.error("--ericw needs --ericw-dir (or $ERICW_DIR): the folder holding ericw-tools' qbsp")
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), args.seed, hulls, args.vis, args.light, args.keep)))
        return
    result = {"settings": {"hulls": hulls, "vis": args.vis, "light": args.light, "seed": args.seed}, "layouts": {}}
    for layout in args.layouts.split(","):
        rows = []
        for n in [int(s) for s in args.sizes.split(",")]:
            row = run_child(args, layout, n)
            if "error" not in row:
                row["seconds"]["total"] = sum(row["seconds"].values())
                row["cpu_s"]["total"] = sum(row["cpu_s"].values())
                row["peak_stage_mb"]["total"] = row["peak_mb"]
            if args.ericw:
                row["ericw"] = run_ericw(args, layout, n)
            rows.append(row)
            _log_row(row)
        result["layouts"][layout] = {"rows": rows, "exponent_seconds": exponents(rows, "seconds", None),
                                     "exponent_cpu_s": exponents(rows, "cpu_s", None),
                                     "exponent_peak_mb": exponents(rows, "peak_stage_mb", None)}
        _log_exponents(layout, result["layouts"][layout])
    print(json.dumps(result, indent=1, sort_keys=True))


def _log_row(row: dict) -> None:
    if "error" in row:
        print(f"{row['layout']:8} {row['brushes']:>6}  error: {row['error']}", file=sys.stderr)
        return
    cells = "  ".join(f"{s} {row['seconds'].get(s, 0):.2f}s/{row['peak_stage_mb'].get(s, 0):.0f}MB"
                      for s in STAGES if s in row["seconds"])
    ericw = "  ".join(f"{t} {v['wall_s']}s/{v['peak_mb']}MB" for t, v in row.get("ericw", {}).items())
    print(f"{row['layout']:8} {row['brushes']:>6}  {cells}  | total {row['seconds']['total']:.1f}s "
          f"peak {row['peak_mb']:.0f}MB  faces {row['counts'].get('faces_after_csg')}  {ericw}", file=sys.stderr, flush=True)


def _log_exponents(layout: str, block: dict) -> None:
    for key in ("exponent_seconds", "exponent_cpu_s", "exponent_peak_mb"):
        line = "  ".join(f"{s} {v['fit']}" for s, v in block[key].items())
        print(f"{layout:8} {key}: {line}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
