"""Benchmark: crowds (issue 13) -- slicing every sample scene and map, the kept slices' memory,
the exact-collision check of 1,000,000 random moves per scene, and the time per tick for 1,000,
100,000 and 1,000,000 avatars.

    python bench/crowd.py [--only NAME ...] [--moves N] [--truth-maps] [--tick-scene NAME]
                          [--tick-cell METRES] [--ticks T] [--seed S]
    python bench/crowd.py --map NAME [--map-cell METRES] [--avatars N] [--ticks T] [--keep DIR | --level FILE]

Prints ONE JSON object on stdout (sorted keys); progress goes to stderr.
- slicing: per scene and map, seconds to slice (wall and CPU; the slicing stage alone, after the
  trees), slices taken and kept, the grid, the kept slices' bytes as stored (16-bit depths) and the
  height unit; the paper's Table 2 beside it (cube 42/2, garage 86/5, church 159/7, powerplant
  835/85; the cube is our cornell_box, the garage our garage, the church has no counterpart and our
  staircase stands for a stairs case);
- truth: for the sample scenes (and the maps with --truth-maps) baked with a box hull of the
  avatar's size, core/compile/crowd_truth.check_crowd on --moves moves per set (default
  1,000,000): slice-legal moves the exact collision refuses (within one resolution of a surface,
  or beyond: must be 0) and exact-legal moves the slices refuse (how conservative);
- ticks: the garage (--tick-scene) sliced at --tick-cell (default 0.03 m, so a million avatars
  fill under half its standing places), ms per tick (median of --ticks after two warm-up ticks,
  wall and CPU) for 1,000, 100,000 and 1,000,000 avatars; the paper's Table 1 beside it (3,990 ms
  for a million in 2007); the target is under 50 ms for a million.
- --map NAME (a map in maps/, e.g. lq_e0m3): crowds on a real map at a fine grid (--map-cell,
  default 1/32 m), each part in its own process so each peak is its own: `bake MAP --vis none
  --no-bevels --slices 1,1.75,0.5625,CELL` (wall, CPU, peak memory, the level file's bytes and
  its crowd sections' bytes), then `crowd LEVEL --avatars N --ticks T` (spawn seconds: reading
  the level is not in it; ms per tick; the process's peak memory, reading included).  Prints
  only that part's JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from brushbake.core.truth.crowd_truth import check_crowd  # noqa: E402
from brushbake.core.compile.pipeline import bake_scene, slices_stage  # noqa: E402
from brushbake.core.formats.loaders import load_scene  # noqa: E402
from brushbake.core.model.scene import Hull  # noqa: E402
from brushbake.core.runtime.crowd import Crowd  # noqa: E402
from brushbake.core.runtime.level import CompiledLevel  # noqa: E402

PAPER_TABLE2 = {"cube": [42, 2], "garage": [86, 5], "church": [159, 7], "powerplant": [835, 85]}
PAPER_TABLE1_MS = {"1000": 4, "100000": 395, "1000000": 3990}
SAMPLES = ("cornell_box.json", "garage.json", "staircase.json", "two_rooms.json", "low_tunnel.json")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def scenes(only):
    out = [REPO / "sample_scenes" / n for n in SAMPLES]
    out += sorted(p for p in (REPO / "maps").rglob("*.map"))
    return [p for p in out if not only or p.stem in only]


def slice_scene(path: Path, cell: float | None = None) -> dict:
    scene = load_scene(path)
    if cell is not None:
        scene.settings.slice_cell = cell
    level = CompiledLevel(**_empty_level())
    w0, c0 = time.perf_counter(), time.process_time()
    slices_stage(scene, level)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    c = level.crowd
    ny, nx = c.shape
    return {"slice_s": round(wall, 3), "slice_cpu_s": round(cpu, 3), "taken": c.taken, "kept": c.kept,
            "grid": [nx, ny], "cell": c.cell, "bytes_kept": c.nbytes(), "unit_m": c.unit,
            "standing_places": c.walk(c.length_units(c.height), c.step_units(c.step)).count}, c


def _empty_level() -> dict:
    z = np.zeros
    return dict(plane_normals=z((0, 3)), plane_dists=z(0), node_plane=z(0, np.int32), node_children=z((0, 2), np.int32),
                leaf_solid=z(1, np.uint32), leaf_cluster=z(1, np.int32), leaf_bounds=z((1, 2, 3)),
                leaf_face_first=z(1, np.int32), leaf_face_count=z(1, np.int32), leaf_faces=z(0, np.int32),
                face_plane=z(0, np.int32), face_first_vertex=z(0, np.int32), face_num_vertices=z(0, np.int32),
                face_brush=z(0, np.int32), face_flags=z(0, np.uint32), vertices=z((0, 3)))


def truth(path: Path, moves: int, seed: int) -> dict:
    scene = load_scene(path)
    s = scene.settings
    s.slices, s.vis, s.bevels = True, "none", False
    w = s.slice_width / 2
    scene.hulls = [Hull("avatar", (-w, -w, 0.0), (w, w, s.slice_height))]
    level = bake_scene(scene)
    t0 = time.perf_counter()
    r = check_crowd(level, 1, moves, seed=seed).as_dict()
    r["seconds"] = round(time.perf_counter() - t0, 2)
    return r


def tick_times(c, counts, ticks: int, seed: int) -> dict:
    out = {}
    for n in counts:
        crowd = Crowd(c, n, seed=seed)
        crowd.tick()
        crowd.tick()
        wall, cpu, moved = [], [], 0
        for _ in range(ticks):
            w0, c0 = time.perf_counter(), time.process_time()
            moved += crowd.tick()
            wall.append(time.perf_counter() - w0)
            cpu.append(time.process_time() - c0)
        out[str(n)] = {"ms_per_tick": round(float(np.median(wall)) * 1e3, 2),
                       "cpu_ms_per_tick": round(float(np.median(cpu)) * 1e3, 2),
                       "ms_min": round(float(np.min(wall)) * 1e3, 2), "moved_per_tick": round(moved / ticks, 1)}
        log(f"  {n:>9,} avatars: {out[str(n)]}")
    return out


def map_crowd(name: str, cell: float, avatars: int, ticks: int, seed: int, keep: str | None = None,
              level_file: str | None = None) -> dict:
    path = next((p for p in scenes([]) if p.stem == name), None)
    if path is None:
        raise SystemExit(f"no map {name!r} in maps/")
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        level = Path(level_file) if level_file else Path(keep or tmp) / f"{name}.bbk"
        if level_file:
            bake = {"level": str(level)}
        else:
            log(f"baking {name} with slices at {cell} m")
            bake = _measured([py, "-m", "brushbake", "bake", str(path), "--vis", "none", "--no-bevels",
                              "--slices", f"1,1.75,0.5625,{cell!r}", "-o", str(level)])
            bake.pop("stdout")
        sizes = _section_sizes(level)
        old = "CRSZ" in sizes  # format 1.0's crowd group (CRGD ... CRSD), else 1.1's (CSGD ... CSCV)
        nx, ny, taken = np.frombuffer(_section_bytes(level, sizes["CRSZ" if old else "CSSZ"]), "<u4")[:3].tolist()
        group = "CR" if old else "CS"
        bake.update({"file_bytes": level.stat().st_size,
                     "crowd_section_bytes": sum(v[1] for k, v in sizes.items() if k.startswith(group)),
                     "grid": [nx, ny], "cells": nx * ny, "kept": sizes["CRSH" if old else "CSSH"][1] // 2,
                     "taken": taken})
        log(f"  {bake}")
        log(f"crowd of {avatars:,} on {name}")
        run = _measured([py, "-m", "brushbake", "crowd", str(level), "--avatars", str(avatars), "--ticks",
                         str(ticks), "--seed", str(seed)])
        got = json.loads(run.pop("stdout"))
        run.update({"spawn_s": round(got["spawn_ms"] / 1e3, 2), "spawn_cpu_s": round(got.get("spawn_cpu_ms", 0) / 1e3, 2),
                    "ms_per_tick_mean": got["ms_per_tick"],
                    "ms_median": got["ms_median"], "cpu_ms_median": got.get("cpu_ms_median"), "ms_min": got["ms_min"],
                    "ms_max": got["ms_max"],
                    "moved_per_tick": got["moved_per_tick"], "standing_places": got.get("standing_places"),
                    "native": got.get("native", False)})
        log(f"  {run}")
    return {"map": name, "cell": cell, "avatars": avatars, "ticks": ticks, "seed": seed, "bake": bake, "crowd": run}


def _measured(cmd: list[str]) -> dict:
    """Run a command in its own process: its stdout, wall and CPU seconds and peak resident MB."""
    w0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", str(REPO.parent))))
    chunks = {}

    def drain(name, f):
        chunks[name] = f.read()

    threads = [threading.Thread(target=drain, args=(k, f)) for k, f in (("out", proc.stdout), ("err", proc.stderr))]
    for t in threads:
        t.start()
    _, status, ru = os.wait4(proc.pid, 0)
    for t in threads:
        t.join()
    proc.returncode = status
    if status:
        raise SystemExit(f"{' '.join(cmd)} failed ({status}):\n{chunks['err'][-3000:].decode()}")
    return {"stdout": chunks["out"].decode(), "wall_s": round(time.perf_counter() - w0, 2),
            "cpu_s": round(ru.ru_utime + ru.ru_stime, 2), "peak_rss_mb": round(ru.ru_maxrss / 1024, 1)}


def _section_sizes(path: Path) -> dict:
    """(offset, byte_size) of each section of a .bbk by tag, from its table of contents (docs/FORMAT.md:
    an entry is tag, record_size, record_count, offset, byte_size, crc, reserved)."""
    from brushbake.exporters.native import ENTRY
    with open(path, "rb") as f:
        head = f.read(40)
        header_size, entry_size, count = struct.unpack_from("<III", head, 12)
        f.seek(header_size)
        table = f.read(count * entry_size)
    out = {}
    for i in range(count):
        e = ENTRY.unpack_from(table, i * entry_size)
        out[e[0].decode()] = (int(e[3]), int(e[4]))
    return out


def _section_bytes(path: Path, where: tuple[int, int]) -> bytes:
    with open(path, "rb") as f:
        f.seek(where[0])
        return f.read(where[1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--moves", type=int, default=1_000_000)
    ap.add_argument("--truth-maps", action="store_true")
    ap.add_argument("--tick-scene", default="garage")
    ap.add_argument("--tick-cell", type=float, default=0.03)
    ap.add_argument("--ticks", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--map", help="crowds on this map of maps/ at --map-cell (only that part runs)")
    ap.add_argument("--map-cell", type=float, default=1 / 32)
    ap.add_argument("--avatars", type=int, default=1_000_000)
    ap.add_argument("--keep", help="with --map: bake the level into this folder and keep it")
    ap.add_argument("--level", help="with --map: time the crowd on this level file (baked before), no bake")
    args = ap.parse_args()
    if args.map:
        print(json.dumps(map_crowd(args.map, args.map_cell, args.avatars, args.ticks, args.seed, args.keep, args.level),
                         sort_keys=True, indent=1))
        return 0
    result = {"paper_table2": PAPER_TABLE2, "paper_table1_move_ms": PAPER_TABLE1_MS, "slicing": {}, "truth": {}}
    for path in scenes(args.only):
        log(f"slicing {path.stem}")
        result["slicing"][path.stem], _ = slice_scene(path)
        log(f"  {result['slicing'][path.stem]}")
        if args.moves and (path.suffix == ".json" or args.truth_maps):
            result["truth"][path.stem] = truth(path, args.moves, args.seed)
            log(f"  truth {result['truth'][path.stem]}")
    tick_path = next(p for p in scenes([]) if p.stem == args.tick_scene)
    info, c = slice_scene(tick_path, cell=args.tick_cell)
    log(f"ticks on {tick_path.stem} at {args.tick_cell} m: {info}")
    counts = [n for n in (1_000, 100_000, 1_000_000) if n <= info["standing_places"]]
    result["ticks"] = {"scene": tick_path.stem, "cell": args.tick_cell, "slicing": info,
                       "avatars": tick_times(c, counts, args.ticks, args.seed)}
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(result, sort_keys=True, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
