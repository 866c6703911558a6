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
- the share of cameras whose portal walk hit its budget (fallback).
'portal_over_pvs_faces' is the mean over cameras of portal faces / pvs faces (the target: <= 0.5).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compile import scene_files  # noqa: E402

from brushbake.core.compile.camera_truth import pixel_truth, random_cameras  # noqa: E402
from brushbake.core.compile.pipeline import compile_scene  # noqa: E402
from brushbake.core.compile.vis import bake_vis  # noqa: E402
from brushbake.core.formats.loaders import load_scene  # noqa: E402
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
    args = p.parse_args()
    out = {"cameras": args.cameras, "grid": [args.width, args.height], "batch": args.batch, "scenes": {}}
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
                        f"{m['batch_cpu_ms_per_camera']:.3f} | {m['single_cpu_ms']:.2f} |")
        log(rows[-3] + "\n" + rows[-2] + "\n" + rows[-1] + f"  portal/pvs faces {rec['portal_over_pvs_faces']:.3f}")
    log("| map | mode | misses | faces drawn | faces hit | faces drawn / hit | clusters drawn / seen | "
        "batch CPU ms / camera | single CPU ms |\n|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows))
    print(json.dumps(out, sort_keys=True, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
