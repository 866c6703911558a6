"""Benchmark: camera queries (docs/CAMERA.md) on every sample scene and map in maps/.

    python bench/camera.py [--only NAME ...] [--cameras 200] [--width 256] [--height 192]
                           [--batch 1000] [--singles 20]

Prints ONE JSON object on stdout (sorted keys); progress and a table go to stderr.  Per scene
(baked as `bake` does: point tree, visibility 'fast'; no box hulls or bevels, which culling does
not read): from --cameras random cameras in empty space with a cluster (core/compile/
camera_truth.py random_cameras, seeded), a width x height grid of pixel rays each through the point
tree gives what the cameras truly see; then per mode (pvs, frustum, portal):
- misses: truly seen points whose leaf the mode does not draw (must be 0), and nested: whether
  portal <= frustum <= pvs held on every camera;
- faces drawn (mean per camera), faces truly hit (mean), tightness = sum of faces drawn over sum
  of faces hit; clusters drawn over clusters truly seen, likewise;
- time per camera in a batch of --batch cameras (CPU ms, process time: the machine is shared) and
  one camera at a time (--singles calls, CPU ms each);
- the share of cameras whose portal walk hit its budget (fallback);
- the C run-time (runtime_c/brushbake.c, when a compiler is there): c_equal (the same leaves drawn
  as NumPy for every camera), microseconds of CPU per camera in one bbk_cull_many call over --batch
  cameras (c_batch_us_per_camera) and per bbk_cull call one camera at a time through ctypes
  (c_single_us, ~1 us of which is the ctypes call).
'portal_over_pvs_faces' is the mean over cameras of portal faces / pvs faces (the target: <= 0.5).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compile import scene_files  # noqa: E402

from brushbake.core.truth.camera_truth import pixel_truth, random_cameras  # noqa: E402
from brushbake.core.compile.pipeline import compile_scene  # noqa: E402
from brushbake.core.compile.vis.vis import bake_vis  # noqa: E402
from brushbake.core.formats.loaders import load_scene  # noqa: E402
from brushbake.core.runtime import cruntime  # noqa: E402
from brushbake.core.runtime.cull import CULL_MODES, cull  # noqa: E402

MODES = CULL_MODES


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cpu_ms_per_camera(level, cams, mode, batch: int) -> float:
    """CPU milliseconds per camera, cameras in batches of `batch` (the walk's data made first)."""
    cull(level, cams[:1], mode)
    reps = max(1, -(-batch // len(cams)))
    big = np.concatenate([cams] * reps)[:batch]
    t0 = time.process_time()
    cull(level, big, mode)
    return 1000 * (time.process_time() - t0) / len(big)


def single_ms(level, cams, mode, count: int) -> float:
    t0 = time.process_time()
    for cam in cams[:count]:
        cull(level, cam[None, :], mode)
    return 1000 * (time.process_time() - t0) / max(min(count, len(cams)), 1)


def c_us_per_camera(level, cams, mode, batch: int, singles: int) -> tuple[float, float]:
    """CPU microseconds per camera in the C run-time: one bbk_cull_many call over `batch` cameras
    (repeated to at least 0.2 s), and bbk_cull one camera per call (leaves and faces written)."""
    import ctypes

    clevel = cruntime.c_level(level)
    lib, handle, number = clevel._lib, clevel._handle, cruntime.CULL_MODE_NUMBERS[mode]
    big = np.ascontiguousarray(np.concatenate([cams] * max(1, -(-batch // len(cams))))[:batch])
    drawn = np.zeros((len(big), clevel.num_leaves()), dtype=np.uint8)
    stats = np.zeros(len(big), dtype=cruntime.CULL_STATS_DTYPE)
    rounds, t0 = 0, time.process_time()
    while rounds == 0 or time.process_time() - t0 < 0.2:
        lib.bbk_cull_many(handle, len(big), big.ctypes.data, number, drawn.ctypes.data, stats.ctypes.data)
        rounds += 1
    batch_us = 1e6 * (time.process_time() - t0) / (rounds * len(big))
    leaves = np.zeros(clevel.num_leaves(), dtype=np.uint32)
    faces = np.zeros(max(int(len(level.face_plane)), 1), dtype=np.uint32)
    one = np.zeros(1, dtype=cruntime.CULL_STATS_DTYPE)
    rows = [np.ascontiguousarray(c) for c in big[:max(singles, 1)]]
    f, args = lib.bbk_cull, (leaves.ctypes.data, len(leaves), faces.ctypes.data, len(faces), one.ctypes.data)
    rounds, t0 = 0, time.process_time()
    while rounds == 0 or time.process_time() - t0 < 0.2:
        for row in rows:
            f(handle, row.ctypes.data, number, 0, *args)
        rounds += 1
    return batch_us, 1e6 * (time.process_time() - t0) / (rounds * len(rows))


def bench_scene(path: Path, args) -> dict:
    scene = load_scene(path)
    t0 = time.perf_counter()
    level = compile_scene(scene)
    bake_vis(level, "fast")
    bake_s = time.perf_counter() - t0
    cams = random_cameras(level, args.cameras, seed=args.seed)
    t0 = time.perf_counter()
    truth = pixel_truth(level, cams, args.width, args.height)
    truth_s = time.perf_counter() - t0
    hit_faces = np.array([len(f) for f in truth.seen_faces])
    seen_clusters = np.array([len(c) for c in truth.seen_clusters])
    rec = {"leaves": int(level.num_leaves), "faces": int(len(level.face_plane)),
           "clusters": int(len(level.vis_row_offset)), "portals": int(len(level.cull_portal_plane)),
           "cameras": int(len(cams)), "rays": truth.rays, "seen_in_solid": truth.in_solid,
           "bake_s": round(bake_s, 3), "truth_s": round(truth_s, 3),
           "faces_hit_mean": float(hit_faces.mean()), "clusters_seen_mean": float(seen_clusters.mean())}
    results = {}
    for mode in MODES:
        r = cull(level, cams, mode)
        results[mode] = r
        misses = sum(int((~r.drawn[i, truth.seen_leaves[i]]).sum()) for i in range(len(cams)))
        faces, clusters = r.face_counts(), r.cluster_counts()
        rec[mode] = {
            "misses": misses,
            "faces_mean": float(faces.mean()),
            "leaves_mean": float(r.leaf_counts().mean()),
            "clusters_mean": float(clusters.mean()),
            "face_tightness": float(faces.sum() / max(hit_faces.sum(), 1)),
            "cluster_tightness": float(clusters.sum() / max(seen_clusters.sum(), 1)),
            "batch_cpu_ms_per_camera": cpu_ms_per_camera(level, cams, mode, args.batch),
            "single_cpu_ms": single_ms(level, cams, mode, args.singles),
            "fallback": float(r.overflow.mean()),
        }
        if args.c:
            c_batch, c_single = c_us_per_camera(level, cams, mode, args.batch, 200)
            rec[mode].update(c_equal=bool(np.array_equal(cull(level, cams, mode, backend="c").drawn, r.drawn)),
                             c_batch_us_per_camera=c_batch, c_single_us=c_single)
    rec["nested"] = bool((results["portal"].drawn <= results["frustum"].drawn).all()
                         and (results["frustum"].drawn <= results["pvs"].drawn).all())
    pf, vf = results["portal"].face_counts(), results["pvs"].face_counts()
    rec["portal_over_pvs_faces"] = float(np.mean(pf / np.maximum(vf, 1)))
    return rec


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="*", help="scene names (stem) to run")
    p.add_argument("--cameras", type=int, default=200)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--height", type=int, default=192)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--singles", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-c", dest="c", action="store_false", help="leave out the C run-time")
    args = p.parse_args()
    if args.c and not cruntime.available():
        log("the C run-time cannot be built here: leaving it out")
        args.c = False
    out = {"cameras": args.cameras, "grid": [args.width, args.height], "batch": args.batch, "scenes": {},
           "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}
    rows = []
    for name, path in scene_files().items():
        if args.only and name not in args.only and path.name not in args.only:
            continue
        log(f"{name} ...")
        rec = bench_scene(path, args)
        out["scenes"][name] = rec
        for mode in MODES:
            m = rec[mode]
            rows.append(f"| {name} | {mode} | {m['misses']} | {m['faces_mean']:.1f} | {rec['faces_hit_mean']:.1f} | "
                        f"{m['face_tightness']:.2f} | {m['cluster_tightness']:.2f} | "
                        f"{m['batch_cpu_ms_per_camera']:.3f} | {m['single_cpu_ms']:.2f} | "
                        + (f"{m['c_batch_us_per_camera']:.1f} | {m['c_single_us']:.1f} | {m['c_equal']} |" if args.c
                           else "- | - | - |"))
        log(rows[-3] + "\n" + rows[-2] + "\n" + rows[-1] + f"  portal/pvs faces {rec['portal_over_pvs_faces']:.3f}")
    log("| map | mode | misses | faces drawn | faces hit | faces drawn / hit | clusters drawn / seen | "
        "batch CPU ms / camera | single CPU ms | C batch us / camera | C single us | C equal |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows))
    print(json.dumps(out, sort_keys=True, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
