"""Benchmark: visibility on every sample scene and map -- portals, clusters, each PVS method's time,
average visible clusters and leaves, and each method against the ray ground truth.

    python bench/pvs.py [--only NAME ...] [--modes fast,sample,flow] [--segments N] [--seed S]
                        [--flow-limit SECONDS] [--no-truth]

Prints ONE JSON object on stdout (sorted keys); progress goes to stderr.  Per scene:
- portals, clusters (inside: on a sealed map the clusters the void reaches are left out), the
  portal build's seconds;
- per method (fast, sample, flow): seconds (wall) and cpu_s, avg_clusters_visible,
  avg_leaves_visible (Quake vis's 'average leafs visible': per empty leaf with a cluster, the
  leaves its PVS holds), and against the truth: misses (must be 0 for fast and flow), looseness
  (pairs in the PVS that no clear segment joined / pairs in the PVS, off the diagonal);
- truth: segments tried and clear (hit nothing), --segments clear segments (default 1,000,000);
- a mode written flow-numpy or flow-c runs the full flow by that backend (plain 'flow': the C
  kernel where it builds, as a bake does); with both, same_flow_rows says whether their PVS match;
- ericw: the row of bench/ericw_reference.md for the map (vis seconds, avg leafs visible);
- ericw_run (with --ericw DIR, the folder of ericw-tools' binaries): qbsp then vis run on the map in
  this same run, vis timed: wall and CPU seconds, peak resident memory (vis_peak_mb), average leafs
  visible, and flow_wall_over_ericw (each flow's wall seconds over ericw vis's);
- per method, rows_sha256 (the first 16 hex digits of its packed PVS rows' sha256: the same rows
  before and after a change that must not change them) and peak_mb: the process's peak resident memory while it ran (VmHWM, reset before it
  through /proc/self/clear_refs; on Linux) and added_mb, that peak less the memory held before.
The full flow is cancelled after --flow-limit seconds and then reported as
{"cancelled_after_s": N}, never silently left out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from compile import scene_files  # noqa: E402
from vis import ericw_rows  # noqa: E402  (bench/vis.py: the ericw-tools visibility columns)

from brushbake.core.compile.pipeline import compile_scene  # noqa: E402
from brushbake.core.compile.vis.portals import build_portals  # noqa: E402
from brushbake.core.compile.vis.vis import compute_vis, store_vis, void_reachable  # noqa: E402
from brushbake.core.truth.vis_truth import empty_points  # noqa: E402
from brushbake.core.runtime.interest import bandwidth, relevant_entities  # noqa: E402
from brushbake.core.truth.vis_truth import compare, ray_truth  # noqa: E402
from brushbake.core.errors import CancelledError  # noqa: E402
from brushbake.core.formats.loaders import load_scene  # noqa: E402


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cpu_seconds() -> float:
    """This process's CPU time and that of its finished children (the full vis's forked workers)."""
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def _memory(reset: bool = False) -> tuple[float, float]:
    """(resident MB, peak resident MB) of this process (Linux /proc; zeros elsewhere); `reset`
    first resets the peak to the current size."""
    try:
        if reset:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        fields = {}
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    fields[line.split(":")[0]] = int(line.split()[1]) / 1024
        return fields.get("VmRSS", 0.0), fields.get("VmHWM", 0.0)
    except OSError:
        return 0.0, 0.0


def run_scene(path: Path, modes: list[str], segments: int, seed: int, flow_limit: float, truth: bool,
              jobs: int | None = None) -> dict:
    level = compile_scene(load_scene(path))
    t0 = time.perf_counter()
    portals = build_portals(level)
    out = {"portals_seconds": round(time.perf_counter() - t0, 3)}
    outside = void_reachable(portals)
    sealed = not outside.all()
    out.update(sealed=bool(sealed), clusters_all=int(portals.num_clusters))
    results = {}
    for mode in modes:
        log(f"  {mode}")
        method, _, backend = mode.partition("-")
        deadline = time.perf_counter() + flow_limit
        cancel = (lambda: time.perf_counter() > deadline) if method == "flow" else None
        held, _ = _memory(reset=True)
        w, c = time.perf_counter(), cpu_seconds()
        try:
            r = compute_vis(level, portals, method, outside=outside if sealed else None, cancel=cancel, jobs=jobs,
                            backend=backend or "auto")
        except CancelledError:
            out[mode] = {"cancelled_after_s": flow_limit}
            continue
        results[mode] = r
        s = r.stats
        peak = _memory()[1]
        out[mode] = {"seconds": round(time.perf_counter() - w, 3), "cpu_s": round(cpu_seconds() - c, 3),
                     "peak_mb": round(peak, 1), "added_mb": round(peak - held, 1),
                     "rows_sha256": hashlib.sha256(np.packbits(r.visible).tobytes()).hexdigest()[:16],
                     "avg_clusters_visible": round(s["avg_clusters_visible"], 2),
                     "avg_leaves_visible": round(s["avg_leaves_visible"], 2)}
        for key in ("states_expanded", "targets_clipped", "flow_jobs", "most_growths", "vis_backend", "fast_seconds"):
            if key in s:
                out[mode][key] = round(s[key], 3) if isinstance(s[key], float) else s[key]
        out.update(portals=s["portals"], clusters=s["clusters"])
    if "flow-numpy" in results and "flow-c" in results:
        out["same_flow_rows"] = bool(np.array_equal(results["flow-numpy"].visible, results["flow-c"].visible))
    if truth and results:
        any_result = next(iter(results.values()))
        w = time.perf_counter()
        t = ray_truth(level, any_result.leaf_cluster, clear_segments=segments, seed=seed)
        out["truth"] = {"segments_tried": t.segments_tried, "segments_clear": t.segments_clear,
                        "seconds": round(time.perf_counter() - w, 2)}
        for mode, r in results.items():
            cmp = compare(r.visible, t)
            out[mode].update(misses=cmp["misses"], looseness=round(cmp["looseness"], 4),
                             pairs_in_pvs=cmp["pairs_in_pvs"], pairs_joined=cmp["pairs_joined"])
        for mode, r in results.items():  # interest management with this PVS: 15 clients, 15 more entities
            out[mode]["interest"] = interest(level, r, seed)
        for name in ("flow", "flow-c", "flow-numpy"):
            if "fast" in results and name in results:
                out["fast_contains_flow"] = bool(np.all(results[name].visible <= results["fast"].visible))
    return out


def ericw_vis(path: Path, bin_dir: Path) -> dict:
    """qbsp (untimed) then vis on a copy of the map in a temporary folder; vis's wall and CPU
    seconds (its threads' too) and its average leafs visible."""
    import re
    import shutil
    import tempfile

    from ericw_tools import COMMON, run_tool, timed

    with tempfile.TemporaryDirectory(prefix="pvs-ericw-") as tmp:
        shutil.copyfile(path, Path(tmp) / path.name)
        q = run_tool(bin_dir, "qbsp", ["-wadpath", str(path.parent)], path.name, tmp)
        if q["rc"] != 0 or not (Path(tmp) / path.with_suffix(".prt").name).exists():
            return {"error": f"qbsp failed or left no .prt (rc {q['rc']})"}
        log_path = Path(tmp) / "vis.out"
        # the peak by GNU time where it is: a child exec'd straight from this process inherits its
        # peak resident size in ru_maxrss (Linux keeps the high-water mark across exec)
        gnu_time, mem_path = shutil.which("time") or "", Path(tmp) / "vis.mem"
        if gnu_time.startswith("/usr/bin"):
            v = timed([gnu_time, "-f", "%M", "-o", str(mem_path), str(Path(bin_dir) / "vis"), *COMMON,
                       path.with_suffix(".bsp").name], tmp, log_path)
            peak = round(int(mem_path.read_text().split()[-1]) / 1024, 1) if mem_path.exists() else None
        else:
            v = run_tool(bin_dir, "vis", [], path.with_suffix(".bsp").name, tmp, log=log_path)
            peak = None
        m = re.search(r"^average leafs visible: ([\d.]+)$", log_path.read_text(errors="replace"), re.M)
        return {"vis_wall_s": v["wall_s"], "vis_cpu_s": v["cpu_s"], "vis_peak_mb": peak, "rc": v["rc"],
                "avg_leafs_visible": float(m.group(1)) if m else None}


def interest(level, result, seed: int) -> dict:
    """The thesis's chapter 7 example: 15 clients (each also an entity) and 15 other entities at
    random inside points, 20 ticks of 42-byte updates; bytes a second with the PVS against all."""
    store_vis(level, result)
    level.__dict__.pop("_visibility", None)
    rng = np.random.default_rng(seed)
    box = np.asarray(level.world_bounds, dtype=np.float64)
    pts, _ = empty_points(level, result.leaf_cluster.astype(np.int64), 30 * 20, rng, box)
    totals, everything, t = 0.0, 0.0, 0.0
    for k in range(20):  # 20 random placements
        p = pts[30 * k: 30 * k + 30]
        w = time.perf_counter()
        mask = relevant_entities(level, p[:15], p, client_entity=np.arange(15))
        t += time.perf_counter() - w
        bw = bandwidth(mask, np.arange(15))
        totals += bw.bytes_per_second
        everything += bw.all_bytes_per_second
    return {"bytes_per_s_all": everything / 20, "bytes_per_s_pvs": round(totals / 20, 1),
            "saved_fraction": round(1 - totals / everything, 4), "ms_per_tick_call": round(1000 * t / 20, 3)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--modes", default="fast,sample,flow")
    ap.add_argument("--segments", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--flow-limit", type=float, default=600.0)
    ap.add_argument("--no-truth", action="store_true")
    ap.add_argument("--jobs", type=int, default=None, help="cores for the full vis (default: all)")
    ap.add_argument("--maps", type=Path, nargs="*", default=[],
                    help="more .map files to run (e.g. procedural worlds from bench/worlds.py), named by their stem")
    ap.add_argument("--ericw", type=Path, default=None,
                    help="folder of ericw-tools' qbsp and vis: run them on each map in this run (ericw_run)")
    args = ap.parse_args(argv)
    refs = ericw_rows()
    report = {}
    files = scene_files()
    files.update({p.stem: p for p in args.maps})
    for name, path in files.items():
        if args.only and name not in args.only and path not in args.maps:
            continue
        log(name)
        row = run_scene(path, args.modes.split(","), args.segments, args.seed, args.flow_limit, not args.no_truth,
                        jobs=args.jobs)
        if name in refs:
            row["ericw"] = refs[name]
        if args.ericw is not None and path.suffix == ".map":
            log("  ericw qbsp + vis")
            run = row["ericw_run"] = ericw_vis(path, args.ericw)
            for mode in [m for m in row if m.startswith("flow") and isinstance(row[m], dict)]:
                if run.get("vis_wall_s") and "seconds" in row[mode]:
                    row[mode]["flow_wall_over_ericw"] = round(row[mode]["seconds"] / run["vis_wall_s"], 3)
        report[name] = row
        log(json.dumps(row, sort_keys=True))
    print(json.dumps(report, sort_keys=True, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
