"""Rays and box traces per second: the C run-time (runtime_c/, through ctypes, single-threaded)
against the NumPy batch and against Embree (embreex, if installed: `pip install embreex`, for this
benchmark only) on the level's own triangles and the same rays, in the same run.  Prints JSON.

Rays start at random points that are empty for the point hull and run to a random point of the
world's box (the segment is the ray: Embree's tfar ends it where the trace's end is).  Box traces
are the stand hull's (retry on, as the queries do), spheres and hulls are plane shifting (a sphere
of radius 0.3 m, a convex hull of 16 random points within about 0.4 m).  The C figure includes the
ctypes call and packing the answers into NumPy arrays (one call per batch).  Embree's figure is
embreex's scene.run (one rtcIntersect1 per ray, single thread); its triangles are the level's faces
(the CSG'd brush faces), fanned.  ray_c_call_only is the C batch call alone (segments packed and
the answer array made beforehand): the C run-time's own rate, without the binding's packing.
Every rate is queries per second of the process's CPU time (all its threads), best of a few runs
after an untimed one: on a machine shared with other work, waiting for a core is not counted
against any of them; the load average is printed beside the figures.

    nice python bench/runtime.py [--rays 200000] [SCENE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ["sample_scenes/two_rooms.json", "maps/librequake/lq_e1m6.map", "maps/id/e1m7.map",
           "maps/librequake/lqdm13.map"]


def bake(path):
    from brushbake.core.compile.pipeline import bake_scene
    from brushbake.core.formats.loaders import load_scene
    from brushbake.core.model.hulls import parse_hull

    scene = load_scene(path)
    scene.hulls = [parse_hull("stand"), parse_hull("crouch")]
    scene.settings.vis = "none"
    scene.settings.allow_leak = True
    return bake_scene(scene)


def triangles(level) -> np.ndarray:
    tris = []
    for f in range(len(level.face_plane)):
        v = level.face_vertices(f)
        for k in range(1, len(v) - 1):
            tris.append((v[0], v[k], v[k + 1]))
    return np.asarray(tris, dtype=np.float64).reshape(-1, 3, 3)


def best_of(fn, repeat=3) -> float:
    """The least CPU time (of the whole process) of `repeat` runs, after one untimed run (the
    first call of a batch pays the memory allocator's page faults for its big arrays)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def embree(tris: np.ndarray):
    try:
        from embreex import rtcore_scene as rtcs
        from embreex.mesh_construction import TriangleMesh
    except ImportError as err:
        return None, f"embreex is not installed ({err})"
    scene = rtcs.EmbreeScene()
    TriangleMesh(scene, tris.astype(np.float32))
    return scene, None


def bench_scene(path: str, n: int) -> dict:
    from brushbake.core.runtime import cruntime
    from brushbake.core.runtime.query import point_solid
    from brushbake.core.runtime.shift import ConvexHull, Sphere, hit_checks
    from brushbake.core.runtime.trace import trace_hulls

    level = bake(ROOT / path)
    c = cruntime.c_level(level)
    rng = np.random.default_rng(0)
    lo, hi = np.asarray(level.world_bounds)
    pts = lo + rng.random((4 * n, 3)) * (hi - lo)
    s = pts[point_solid(level, pts) == 0][:n]
    e = lo + rng.random((len(s), 3)) * (hi - lo)
    n = len(s)
    out: dict = {"scene": path, "rays": n, "nodes": level.num_nodes, "onion_nodes": len(level.onion_node_plane)}
    rates = {}
    t_c = best_of(lambda: c.trace(s, e, 0, retry=False))
    t_np = best_of(lambda: trace_hulls(level, s, e, hull=0, retry=False), repeat=1)
    rates["ray_c"], rates["ray_numpy_batch"] = n / t_c, n / t_np
    seg, raw = np.ascontiguousarray(np.stack([s, e], axis=1)), np.empty(n, dtype=cruntime.HIT_DTYPE)
    rates["ray_c_call_only"] = n / best_of(lambda: c._lib.bbk_trace_many(c._handle, 0, n, seg.ctypes.data, 0,
                                                                        raw.ctypes.data))
    t_c = best_of(lambda: c.trace(s, e, 1, retry=True))
    t_np = best_of(lambda: trace_hulls(level, s, e, hull=1, retry=True), repeat=1)
    rates["box_c"], rates["box_numpy_batch"] = n / t_c, n / t_np
    sphere = Sphere(0.3)
    t_c = best_of(lambda: c.shift(sphere, s, e))
    t_np = best_of(lambda: hit_checks(level.bevel_tree(), sphere, s, e), repeat=1)
    rates["sphere_c"], rates["sphere_numpy_batch"] = n / t_c, n / t_np
    hull = ConvexHull(np.random.default_rng(1).normal(size=(16, 3)) * 0.2 + (0.0, 0.0, 0.1))
    t_c = best_of(lambda: c.shift(hull, s, e))
    t_np = best_of(lambda: hit_checks(level.bevel_tree(), hull, s, e), repeat=1)
    rates["hull_c"], rates["hull_numpy_batch"] = n / t_c, n / t_np
    tris = triangles(level)
    scene, why = embree(tris)
    out["triangles"] = len(tris)
    if scene is None:
        out["embree"] = why
    else:
        o, d = s.astype(np.float32), (e - s).astype(np.float32)
        t_e = best_of(lambda: scene.run(o, d, dists=np.ones(n, np.float32)))
        rates["ray_embree"] = n / t_e
        emb_hit = scene.run(o, d, dists=np.ones(n, np.float32)) >= 0
        c_hit = c.trace(s, e, 0, retry=False).hit
        out["embree_agrees_on_hit"] = float(np.mean(emb_hit == c_hit))
    out["per_second"] = {k: round(v) for k, v in rates.items()}
    out["c_over_numpy"] = {k: round(rates[f"{k}_c"] / rates[f"{k}_numpy_batch"], 1)
                           for k in ("ray", "box", "sphere", "hull")}
    if "ray_embree" in rates:
        out["c_over_embree"] = round(rates["ray_c"] / rates["ray_embree"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenes", nargs="*", default=DEFAULT)
    parser.add_argument("--rays", type=int, default=200_000)
    args = parser.parse_args()
    load = os.getloadavg()
    results = [bench_scene(p, args.rays) for p in args.scenes]
    json.dump({"benchmark": "runtime", "threads": 1, "clock": "process CPU time", "load_before": load,
               "load_after": os.getloadavg(), "results": results}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
