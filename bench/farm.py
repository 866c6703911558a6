"""Benchmark: the bake farm (docs/FARM.md) against baking one map after another.

    nice python bench/farm.py [--maps DIR] [--workers 2] [--only NAME ...] [--level MAP] [FLAG ...] > farm.json

Every map in maps/ (or --only these) is baked twice, as a user would: serially, one
`python -m brushbake bake MAP -q --allow-leak` after another (each process's start included), then
with one `python -m brushbake farm MAPS... --workers N --allow-leak` (a local cluster of N
processes; its start, the bakes and the writes included).  Prints ONE JSON object: wall seconds
of each, the speedup (serial / farm), each map's serial seconds and the farm's seconds and worker
for it, whether every level's bytes are the same both ways (they must be), and the load average
before and after (a shared machine: say what it was).  Extra arguments go to both commands
(e.g. --vis flow).

--level MAP also bakes that one map with `bake --vis flow --light --bounces 1` here and with
`--scheduler` on a local cluster of N workers (started once, outside the timing): wall seconds of
each and the same bytes (on one machine the local bake already forks the flow over its cores, so
this measures what the cluster costs, not a gain).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def brushbake(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "brushbake", *map(str, args)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--maps", default=str(REPO / "maps"), help="folder searched for .map files")
    ap.add_argument("--workers", type=int, default=2, help="worker processes of the local cluster (default 2)")
    ap.add_argument("--only", nargs="*", default=[], help="map file names to keep (default: all)")
    ap.add_argument("--level", help="also bake this map alone, here and with --scheduler on a local cluster")
    args, flags = ap.parse_known_args()
    maps = sorted(Path(p) for p in glob.glob(str(Path(args.maps) / "**" / "*.map"), recursive=True))
    maps = [m for m in maps if not args.only or m.name in args.only]
    load_before = os.getloadavg()
    result = {"maps": len(maps), "workers": args.workers, "flags": flags, "cpus": os.cpu_count(),
              "load_before": [round(x, 2) for x in load_before], "per_map": {}}
    with tempfile.TemporaryDirectory() as tmp:
        serial_dir, farm_dir = Path(tmp) / "serial", Path(tmp) / "farm"
        serial_dir.mkdir()
        t0 = time.perf_counter()
        for m in maps:
            t1 = time.perf_counter()
            proc = brushbake("bake", m, "-o", serial_dir / (m.stem + ".bbk"), "-q", "--allow-leak", *flags)
            seconds = time.perf_counter() - t1
            result["per_map"][m.name] = {"serial_s": round(seconds, 2), "serial_exit": proc.returncode}
            print(f"serial {m.name}: {seconds:.2f} s (exit {proc.returncode})", file=sys.stderr)
        serial = time.perf_counter() - t0
        t0 = time.perf_counter()
        proc = brushbake("farm", *maps, "-o", farm_dir, "--workers", args.workers, "-q", "--allow-leak", *flags)
        farm = time.perf_counter() - t0
        print(proc.stderr, file=sys.stderr)
        report = json.loads((farm_dir / "farm.json").read_text()) if (farm_dir / "farm.json").is_file() else {}
        for row in report.get("levels", []):
            name = Path(row["scene"]).name
            result["per_map"][name].update(farm_s=round(row["seconds"], 2), worker=row["worker"], status=row["status"])
        same = {}
        for m in maps:
            a, b = serial_dir / (m.stem + ".bbk"), farm_dir / (m.stem + ".bbk")
            same[m.name] = a.is_file() and b.is_file() and a.read_bytes() == b.read_bytes()
    if args.level:
        result["one_level"] = one_level(Path(args.level), args.workers)
    result.update(serial_s=round(serial, 2), farm_s=round(farm, 2), speedup=round(serial / farm, 3),
                  farm_exit=proc.returncode, farm_busy_s=report.get("busy_seconds"),
                  same_bytes=all(same.values()), differing=[k for k, v in same.items() if not v],
                  load_after=[round(x, 2) for x in os.getloadavg()])
    print(f"serial {serial:.2f} s, farm of {args.workers} {farm:.2f} s: {serial / farm:.2f}x; same bytes: "
          f"{result['same_bytes']}; load {load_before[0]:.2f} -> {result['load_after'][0]:.2f}", file=sys.stderr)
    print(json.dumps(result, indent=1, sort_keys=True))


def one_level(scene: Path, workers: int) -> dict:
    """`bake SCENE --vis flow --light --bounces 1` here and with --scheduler (see the docstring)."""
    from brushbake.farm.cluster import local_farm

    flags = ["--vis", "flow", "--light", "--bounces", "1", "-q", "--allow-leak"]
    out = {"scene": scene.name, "flags": flags}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        brushbake("bake", scene, "-o", Path(tmp) / "here.bbk", *flags)
        out["here_s"] = round(time.perf_counter() - t0, 2)
        farm = local_farm(workers)
        try:
            t0 = time.perf_counter()
            proc = brushbake("bake", scene, "-o", Path(tmp) / "farm.bbk", *flags, "--scheduler",
                             farm.cluster.scheduler_address)
            out["scheduler_s"] = round(time.perf_counter() - t0, 2)
        finally:
            farm.close()
        out["scheduler_exit"] = proc.returncode
        out["same_bytes"] = (Path(tmp) / "farm.bbk").is_file() and \
            (Path(tmp) / "here.bbk").read_bytes() == (Path(tmp) / "farm.bbk").read_bytes()
    print(f"one level {scene.name}: here {out['here_s']} s, --scheduler {out['scheduler_s']} s, same bytes "
          f"{out['same_bytes']}", file=sys.stderr)
    return out


if __name__ == "__main__":
    main()
