"""Benchmark: swept traces through the point and onion trees (issue 'Onion BSP', acceptance).

    .venv/bin/python bench/trace.py [--big] [--only NAME ...] [--segments N] [--long N] [--single N]
                                    [--length M] [--seed S] [--repeat R] [--sweep NAME,...] [--no-sweep]
                                    [--profile] > trace.json

Run it with the venv's Python: Blender's BVHTree comes from the bpy wheel, which lives only there.
Without bpy the rest is measured and the 'bvh' part of each scene says why it was skipped.

Scenes: two_rooms, garage, lq_e1m6, lqdm13; --big adds lq_e0m3 (its onion compile takes tens of
seconds).  Each scene is compiled once with the hulls point + stand + crouch (core.hulls presets,
replacing whatever hulls the scene file lists), and for each hull (0 = point: a ray through the
point tree; 1, 2 = boxes through the onion tree):

- samples: --segments short segments (length --length m, direction uniform on the sphere) and
  --long long rays (both ends such points: lines of sight across the level), starting at points
  uniform in the brush bounds that are empty *for that hull* (point_solid) and inside the level
  (InsideOracle: the void around a map is empty too, but nobody traces there); coordinates are
  rounded to float32 (see the BVH comparison);
- batch: core.trace.trace_hulls on the whole sample, best of --repeat, in traces per second of
  wall time and of process CPU time (the steadier figure when other work shares the machine);
  for the point and stand hulls also against batch size (100 .. 100k, the sample tiled);
- single: core.runtime.trace.trace_hull in a Python loop (the tree's list form built once, outside the timing) over
  the first --single segments of the sample, best of --repeat, and its answers against the
  batch's ('single_vs_batch': kind mismatches, fraction differences: both must be 0, the two
  walks compute the same floats in the same order);
- nodes visited: find_first_transitions' own counters (counts=...): mean and max interior nodes
  per trace, all nodes and leaves taken ('mean_pops'), and the loop's iteration count (about the
  longest trace's nodes, which is what a lock-step batch pays for);
- hit_fraction and start_solid (should be 0: starts are empty).

BVH comparison (point hull only): the point tree's faces (level.vertices, fan-triangulated from
face_first_vertex / face_num_vertices) go into mathutils.bvhtree.BVHTree.FromPolygons; the same
rays (origin, end - origin, distance = segment length) are cast by BVHTree.ray_cast in a plain
Python loop (inputs converted to tuples before the clock starts), best of --repeat, against
trace_hulls(hull=0) on the same rays.  Rays are rounded to float32 first (BVHTree stores and
computes in float32), so both sides see exactly the same ray.  Agreement: a hit is ours when
find_first_transitions says RAY_E2S, BVHTree's when ray_cast returns a location; both-hit rays are
compared by first-hit distance (|ours - bvh| > 1e-6 m counts as a disagreement; the distribution
is reported too), and hit/miss mismatches are counted.  'bvh_triangle_f64' intersects the
triangle BVHTree reported again in float64 and compares with ours (distance, whether it lies in
another plane than ours, whether BVHTree hit it from behind): that separates BVHTree's float32
rounding from a real difference; 'examples' lists the worst few rays.  Because starts are empty,
the first surface met is an entry into solid for us, and BVHTree (which hits back faces too) must
meet the same face first: bvh_back_faces counts where it did not.

Compile against hull count (--sweep, default garage, lq_e1m6, lqdm13; --sweep lq_e0m3 takes minutes):
hulls stand; stand, crouch; + q1_player; + q1_large.  Each is compiled twice: as users get it
(compile_s, cpu_s, onion nodes) and with settings.onion_map_trees = True for the tree sizes
(separate_tree_nodes: the sum of one map tree per space, point space included, as Listing 3
builds them; onion_vs_separate = onion nodes / that sum).

--profile adds a line_profiler breakdown of find_first_transitions (if line_profiler is
installed) on the largest scene's stand-hull batch and long point rays.

Targets (from the issue) are gathered under 'targets': batch rays >= 3x BVHTree's ray rate, batch
swept-box traces >= BVHTree's ray rate, lq_e0m3 with stand and crouch compiled in about 10 s.

OpenBLAS is held to one thread (as in bench/splitters.py).  Prints ONE JSON object on stdout
(sorted keys); progress on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import linecache
import math
import os
import platform
import sys
import time
import zlib
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy loads OpenBLAS

import numpy as np  # noqa: E402

from brushbake.core.runtime import trace as core_trace  # noqa: E402
from brushbake.core.compile.pipeline import compile_scene  # noqa: E402
from brushbake.core.model.hulls import preset  # noqa: E402
from brushbake.core.formats.loaders import load_scene  # noqa: E402
from brushbake.core.runtime.query import point_solid  # noqa: E402
from brushbake.core.runtime.trace import (RAY_E2S, RAY_S, RAY_S2E,  # noqa: E402
                                          find_first_transitions, trace_hull, trace_hulls)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compile import git_state  # noqa: E402  (bench/compile.py)
from samples import InsideOracle  # noqa: E402  (bench/samples.py)

REPO = Path(__file__).resolve().parents[1]
MAPS = REPO / "maps"
SAMPLES = REPO / "sample_scenes"
SCENES = ("two_rooms", "garage", "lq_e1m6", "lqdm13")
BIG = ("lq_e0m3",)
SWEEP = ("garage", "lq_e1m6", "lqdm13")
TRACE_HULLS = ("stand", "crouch")
SWEEP_HULLS = ("stand", "crouch", "q1_player", "q1_large")
AGREE_TOL = 1e-6  # m
BATCH_SIZES = (100, 1_000, 5_000, 20_000, 100_000)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def scene_path(name: str) -> Path | None:
    for p in (SAMPLES / f"{name}.json", SAMPLES / f"{name}.map"):
        if p.is_file():
            return p
    found = sorted(MAPS.rglob(f"{name}.map")) if MAPS.is_dir() else []
    return found[0] if found else None


def best_times(fn, repeat: int) -> tuple[float, float]:
    """(best wall seconds, best process CPU seconds) over `repeat` calls; CPU time is the steadier
    figure when other work shares the machine (NumPy runs single-threaded here)."""
    wall = cpu = math.inf
    for _ in range(max(1, repeat)):
        c, t = time.process_time(), time.perf_counter()
        fn()
        wall, cpu = min(wall, time.perf_counter() - t), min(cpu, time.process_time() - c)
    return wall, cpu


def rate(n: int, seconds: float) -> float:
    return round(n / seconds, 0) if seconds > 0 else None


# -- compile -----------------------------------------------------------------------------------
def compile_with(scene, hull_names, map_trees: bool = False):
    sc = dataclasses.replace(scene, hulls=[preset(h) for h in hull_names],
                             settings=dataclasses.replace(scene.settings, onion_map_trees=map_trees))
    c0, t0 = time.process_time(), time.perf_counter()
    level = compile_scene(sc)
    return level, time.perf_counter() - t0, time.process_time() - c0


def hull_sweep(scene, name: str) -> list[dict]:
    rows = []
    for k in range(1, len(SWEEP_HULLS) + 1):
        hulls = list(SWEEP_HULLS[:k])
        level, wall, cpu = compile_with(scene, hulls)
        st = level.stats
        row = {"hulls": ["point"] + hulls, "n_box_hulls": k, "compile_s": round(wall, 3), "cpu_s": round(cpu, 3),
               "stages_s": {s: round(float(v), 3) for s, v in st["times"].items()},
               "point_tree_nodes": level.num_nodes, "onion_nodes": int(st.get("onion_nodes", 0)),
               "onion_leaves": int(st.get("onion_leaves", 0)),
               "space_faces": [int(st.get(f"space{h}_faces", 0)) for h in range(k + 1)]}
        del level
        level, wall2, _ = compile_with(scene, hulls, map_trees=True)
        st = level.stats
        sep = int(st.get("separate_tree_nodes", 0))
        row.update(map_tree_nodes=[int(v) for v in st.get("map_tree_nodes", [])], separate_tree_nodes=sep,
                   onion_nodes_map_trees_run=int(st.get("onion_nodes", 0)),
                   map_trees_s=round(float(st["times"].get("map_trees", 0.0)), 3),
                   onion_vs_separate=round(int(st.get("onion_nodes", 0)) / sep, 3) if sep else None)
        rows.append(row)
        log(f"  sweep {name:<10} {k} box hull(s): compile {wall:6.2f} s (cpu {cpu:6.2f})  onion nodes "
            f"{row['onion_nodes']:6d}  separate map trees {sep:6d}  ratio {row['onion_vs_separate']}")
    return rows


# -- samples -----------------------------------------------------------------------------------
def f32(a: np.ndarray) -> np.ndarray:
    """Coordinates rounded to float32 (kept as float64): BVHTree sees exactly the rays we trace."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def empty_starts(level, hull: int, lo, hi, n: int, rng, inside: InsideOracle, tally: dict) -> np.ndarray:
    """n float32-representable points uniform in the box [lo, hi], empty for the hull and inside
    the level; tally counts candidates, empty ones and inside ones."""
    got, need, tries = [], n, 0
    while need > 0 and tries < 200:
        pts = f32(rng.uniform(lo, hi, size=(max(4 * need, 4096), 3)))
        tally["candidates"] = tally.get("candidates", 0) + len(pts)
        pts = pts[point_solid(level, pts, hull) == 0]
        tally["empty"] = tally.get("empty", 0) + len(pts)
        pts = pts[inside(pts)]
        tally["inside"] = tally.get("inside", 0) + len(pts)
        got.append(pts[:need])
        need -= len(got[-1])
        tries += 1
    return np.concatenate(got) if got else np.zeros((0, 3))


def make_segments(level, hull: int, bounds, n_short: int, n_long: int, length: float, rng,
                  inside: InsideOracle) -> tuple[dict, dict]:
    """Short segments (random direction, `length` m) and long rays (both ends inside the level and
    empty for the hull: a line of sight across the level), all starting empty for the hull."""
    lo, hi = bounds
    tally: dict = {}
    s = empty_starts(level, hull, lo, hi, n_short, rng, inside, tally)
    d = rng.normal(size=s.shape)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    ls = empty_starts(level, hull, lo, hi, n_long, rng, inside, tally)
    le = empty_starts(level, hull, lo, hi, len(ls), rng, inside, tally)
    info = {"empty_fraction": round(tally["empty"] / tally["candidates"], 4),
            "inside_fraction_of_empty": round(tally["inside"] / max(tally["empty"], 1), 4)}
    return {"short": (s, f32(s + length * d)), "long": (ls, le)}, info


# -- traces ------------------------------------------------------------------------------------
def measure_hull(level, hull: int, segs: dict, n_single: int, repeat: int, scan: bool = True) -> dict:
    tree = level.collision_tree(hull)
    tree.lists  # the list form is built once, outside the timing
    rec = {"tree": "point" if hull == 0 else "onion", "tree_nodes": tree.num_nodes, "tree_depth": tree.depth()}
    for key, (s, e) in segs.items():
        n = len(s)
        if not n:
            rec[key] = None
            continue
        counts: dict = {}
        kind, t, plane = find_first_transitions(tree, s, e, hull, counts=counts)
        node_pops, all_pops, iters = counts["nodes"], counts["nodes"] + counts["leaves"], counts["iterations"]
        _hits = trace_hulls(level, s, e, hull)
        out, start_solid = _hits.packed(), _hits.start_solid
        batch_s, batch_cpu = best_times(lambda: trace_hulls(level, s, e, hull), repeat)
        m = min(n_single, n)
        ss, ee = s[:m].tolist(), e[:m].tolist()

        def singles():
            for a, b in zip(ss, ee):
                trace_hull(tree, a, b, hull)

        single_s, single_cpu = best_times(singles, repeat)
        # the single walk answers like the batch one to the bit (same operations in the same order)
        single = [trace_hull(tree, a, b, hull) for a, b in zip(ss, ee)]
        sf = np.array([r.fraction for r in single])
        same_kind = np.array([r.hit for r in single]) == ((out[:m, 0] < 1.0) | start_solid[:m])
        same_kind &= np.array([r.start_solid for r in single]) == start_solid[:m]
        fdiff = np.abs(sf - out[:m, 0])
        rec[key] = {
            "n": n, "mean_length_m": round(float(np.linalg.norm(e - s, axis=1).mean()), 3),
            "batch_per_s": rate(n, batch_s), "batch_per_cpu_s": rate(n, batch_cpu), "batch_s": round(batch_s, 4),
            "single_n": m, "single_per_s": rate(m, single_s), "single_per_cpu_s": rate(m, single_cpu),
            "batch_over_single": round(single_s / m * n / batch_s, 2),
            "single_vs_batch": {"kind_mismatches": int(np.count_nonzero(~same_kind)),
                                "fraction_max_diff": float(fdiff.max()),
                                "fraction_over_1e-12": int(np.count_nonzero(fdiff > 1e-12)),
                                "fraction_inexact": int(np.count_nonzero(fdiff > 0))},
            "mean_nodes": round(float(node_pops.mean()), 2), "max_nodes": int(node_pops.max()),
            "mean_pops": round(float(all_pops.mean()), 2), "loop_iterations": int(iters),
            "hit_fraction": round(float(np.mean(kind == RAY_E2S)), 4),
            "start_solid": int(np.count_nonzero(start_solid)),
        }
        if key == "short" and hull <= 1 and scan:
            # lock-step batches pay a fixed NumPy cost per loop iteration: throughput against batch
            # size (the sample tiled or cut to size)
            sizes = [k for k in BATCH_SIZES if k <= 8 * n]
            scan_wall, scan_cpu = {}, {}
            for k in sizes:
                idx = np.arange(k) % n
                sk, ek = s[idx], e[idx]
                w, c = best_times(lambda: trace_hulls(level, sk, ek, hull), repeat)
                scan_wall[str(k)], scan_cpu[str(k)] = rate(k, w), rate(k, c)
            rec[key]["batch_size_scan_per_s"] = scan_wall
            rec[key]["batch_size_scan_per_cpu_s"] = scan_cpu
    return rec


# -- Blender's BVHTree -------------------------------------------------------------------------
def bvh_available() -> tuple[bool, str]:
    try:
        import bpy  # noqa: F401
        from mathutils.bvhtree import BVHTree  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure means 'skipped', with its reason
        return False, f"bpy/mathutils not importable under {sys.executable} ({type(exc).__name__}: {exc}); " \
                      f"run with .venv/bin/python (bpy==5.0.1 wheel)"
    return True, ""


def level_triangles(level) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(V, 3) vertices, (T, 3) fan triangles of the point tree's faces, (T,) face index."""
    first = level.face_first_vertex.astype(np.int64)
    count = level.face_num_vertices.astype(np.int64)
    n_tri = np.maximum(count - 2, 0)
    face = np.repeat(np.arange(len(first)), n_tri)
    k = np.arange(len(face)) - np.repeat(np.cumsum(n_tri) - n_tri, n_tri)  # 0.. within each face
    tris = np.stack([first[face], first[face] + k + 1, first[face] + k + 2], axis=1)
    return level.vertices, tris, face


def bvh_compare(level, segs: dict, repeat: int) -> dict:
    from mathutils.bvhtree import BVHTree

    verts, tris, tri_face = level_triangles(level)
    t0 = time.perf_counter()
    bvh = BVHTree.FromPolygons(verts.tolist(), tris.tolist(), all_triangles=True)
    out = {"triangles": int(len(tris)), "faces": int(len(level.face_plane)),
           "build_s": round(time.perf_counter() - t0, 4), "epsilon": 0.0, "agree_tol_m": AGREE_TOL}
    tree = level.collision_tree(0)
    for key, (s, e) in segs.items():
        n = len(s)
        if not n:
            out[key] = None
            continue
        delta = e - s
        length = np.linalg.norm(delta, axis=1)
        origins, dirs, dists = s.tolist(), delta.tolist(), length.tolist()
        res: list = [None] * n

        def cast():
            rc = bvh.ray_cast
            for i, (o, d, L) in enumerate(zip(origins, dirs, dists)):
                res[i] = rc(o, d, L)

        bvh_s, bvh_cpu = best_times(cast, repeat)
        ours_s, ours_cpu = best_times(lambda: trace_hulls(level, s, e, 0), repeat)
        kind, t, plane = find_first_transitions(tree, s, e, 0)
        ours_hit = kind == RAY_E2S
        ours_d = np.where(ours_hit, t * length, np.nan)
        bvh_hit = np.array([r[0] is not None for r in res])
        bvh_d = np.array([r[3] if r[0] is not None else np.nan for r in res])
        bvh_tri = np.array([r[2] if r[0] is not None else -1 for r in res])
        both = ours_hit & bvh_hit
        diff = np.abs(ours_d - bvh_d)[both]
        # the triangle BVHTree hit, intersected again in float64: separates BVHTree's float32
        # arithmetic from a real difference (another surface, another distance)
        bi = np.flatnonzero(both)
        tri = verts[tris[bvh_tri[bi]]]
        tn = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        tn /= np.linalg.norm(tn, axis=1, keepdims=True)
        u = delta[bi] / length[bi, None]
        d64 = np.einsum("ij,ij->i", tn, tri[:, 0] - s[bi]) / np.einsum("ij,ij->i", tn, u)
        diff64 = np.abs(ours_d[bi] - d64)
        same_plane = np.abs(np.einsum("ij,ij->i", tn, level.plane_normals[plane[bi]])) > 1 - 1e-9
        rec = {
            "n": n, "bvh_per_s": rate(n, bvh_s), "ours_batch_per_s": rate(n, ours_s),
            "ours_over_bvh": round(bvh_s / ours_s, 2),
            "bvh_per_cpu_s": rate(n, bvh_cpu), "ours_batch_per_cpu_s": rate(n, ours_cpu),
            "ours_over_bvh_cpu": round(bvh_cpu / ours_cpu, 2) if ours_cpu > 0 else None,
            "hits_ours": int(ours_hit.sum()), "hits_bvh": int(bvh_hit.sum()), "both_hit": int(both.sum()),
            "ours_start_solid": int(np.count_nonzero((kind == RAY_S) | (kind == RAY_S2E))),
            "disagree_distance": int(np.count_nonzero(diff > AGREE_TOL)),
            "disagree_hit_ours_only": int(np.count_nonzero(ours_hit & ~bvh_hit)),
            "disagree_hit_bvh_only": int(np.count_nonzero(~ours_hit & bvh_hit)),
            "distance_diff_m": {"max": float(diff.max()) if len(diff) else None,
                                "p99": float(np.quantile(diff, 0.99)) if len(diff) else None,
                                "median": float(np.median(diff)) if len(diff) else None,
                                "over_1e-5": int(np.count_nonzero(diff > 1e-5)),
                                "over_1e-4": int(np.count_nonzero(diff > 1e-4))},
            "bvh_triangle_f64": {"disagree_distance": int(np.count_nonzero(diff64 > AGREE_TOL)),
                                 "max_diff_m": float(diff64.max()) if len(diff64) else None,
                                 "other_plane": int(np.count_nonzero(~same_plane)),
                                 "bvh_back_faces": int(np.count_nonzero(np.einsum("ij,ij->i", tn, u) > 0))},
        }
        rec["disagreements"] = rec["disagree_distance"] + rec["disagree_hit_ours_only"] + rec["disagree_hit_bvh_only"]
        rec["examples"] = disagreement_examples(level, s, e, length, kind, t, plane, ours_hit, ours_d, bvh_hit, bvh_d,
                                                bvh_tri, tri_face, verts, tris)
        out[key] = rec
    return out


def disagreement_examples(level, s, e, length, kind, t, plane, ours_hit, ours_d, bvh_hit, bvh_d, bvh_tri, tri_face,
                          verts, tris, limit: int = 5) -> list[dict]:
    """A few disagreeing rays with what tells them apart: where each side hit, the BVH triangle's
    facing (back face?) and how close the hit lies to that triangle's edges."""
    bad = np.flatnonzero((ours_hit & bvh_hit & (np.abs(np.nan_to_num(ours_d - bvh_d)) > AGREE_TOL))
                         | (ours_hit != bvh_hit))
    # the worst first: hit/miss mismatches, then the largest distance differences
    order = sorted(bad.tolist(), key=lambda i: (ours_hit[i] == bvh_hit[i], -abs(np.nan_to_num(ours_d[i] - bvh_d[i]))))
    out = []
    for i in order[:limit]:
        d = (e[i] - s[i]) / length[i]
        ex = {"ray": int(i), "start": s[i].tolist(), "end": e[i].tolist(), "length_m": float(length[i]),
              "ours_kind": int(kind[i]), "ours_d": None if np.isnan(ours_d[i]) else float(ours_d[i]),
              "bvh_d": None if np.isnan(bvh_d[i]) else float(bvh_d[i])}
        if ours_hit[i]:
            ex["ours_plane_normal"] = level.plane_normals[plane[i]].tolist()
        if bvh_hit[i]:
            tri = verts[tris[bvh_tri[i]]]
            nrm = np.cross(tri[1] - tri[0], tri[2] - tri[0])
            nrm /= np.linalg.norm(nrm)
            p = s[i] + bvh_d[i] * d
            ex["bvh_face"] = int(tri_face[bvh_tri[i]])
            ex["bvh_back_face"] = bool(np.dot(nrm, d) > 0)
            ex["bvh_edge_distance_m"] = float(min(_segment_distance(p, tri[a], tri[(a + 1) % 3]) for a in range(3)))
        out.append(ex)
    return out


def _segment_distance(p, a, b) -> float:
    ab = b - a
    u = np.clip(np.dot(p - a, ab) / max(np.dot(ab, ab), 1e-300), 0.0, 1.0)
    return float(np.linalg.norm(p - (a + u * ab)))


# -- line profile ------------------------------------------------------------------------------
def profile_batch(level, runs: list[tuple[str, int, np.ndarray, np.ndarray]], top: int = 10) -> dict:
    try:
        from line_profiler import LineProfiler
    except ImportError:
        return {"skipped": "line_profiler is not installed (pip install line_profiler)"}
    out = {}
    for label, hull, s, e in runs:
        lp = LineProfiler()
        fn = lp(core_trace.find_first_transitions)
        tree = level.collision_tree(hull)
        t0 = time.perf_counter()
        fn(tree, s, e, hull)
        wall = time.perf_counter() - t0
        stats = lp.get_stats()
        lines = []
        for (filename, _, _), rows in stats.timings.items():
            total = sum(r[2] for r in rows)
            for lineno, hits, tt in rows:
                lines.append({"line": lineno, "hits": hits, "ms": round(tt * stats.unit * 1e3, 2),
                              "pct": round(100.0 * tt / total, 1) if total else 0.0,
                              "code": linecache.getline(filename, lineno).strip()})
        lines.sort(key=lambda r: -r["ms"])
        out[label] = {"n": len(s), "wall_s_profiled": round(wall, 3), "top_lines": lines[:top]}
    return out


# -- main --------------------------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true", help="add lq_e0m3 (onion compile ~20-40 s)")
    ap.add_argument("--only", action="append", default=[], help="scene name(s), comma-separated or repeated")
    ap.add_argument("--segments", type=int, default=20_000, help="short segments per hull")
    ap.add_argument("--long", type=int, default=20_000, help="long rays across the level per hull")
    ap.add_argument("--single", type=int, default=2_000, help="segments traced one by one per sample")
    ap.add_argument("--length", type=float, default=2.0, help="short segment length in metres")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="best of R timings")
    ap.add_argument("--sweep", default=None, help="comma-separated scenes for the hull-count sweep "
                                                    f"(default {','.join(SWEEP)})")
    ap.add_argument("--no-sweep", action="store_true", help="skip the hull-count sweep")
    ap.add_argument("--profile", action="store_true", help="line_profiler breakdown of find_first_transitions")
    args = ap.parse_args(argv)

    names = list(SCENES) + (list(BIG) if args.big else [])
    only = {n for o in args.only for n in o.split(",") if n}
    if only:
        names = [n for n in names if n in only] + sorted(only - set(names))
    sweep = [] if args.no_sweep else (args.sweep.split(",") if args.sweep else list(SWEEP))
    if only and not args.sweep:
        sweep = [n for n in sweep if n in only]
    has_bvh, why = bvh_available()

    start = time.perf_counter()
    out = {
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
                    "executable": sys.executable, "processor": platform.processor() or platform.machine(),
                    "loadavg_at_start": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
                    "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"), **git_state()},
        "params": {"segments": args.segments, "long": args.long, "single": args.single, "length_m": args.length,
                   "seed": args.seed, "repeat": args.repeat, "trace_hulls": ["point", *TRACE_HULLS],
                   "sweep_hulls": list(SWEEP_HULLS)},
        "scenes": {}, "hull_sweep": {},
    }
    if has_bvh:
        import bpy

        out["machine"]["blender"] = bpy.app.version_string
    levels = {}
    for name in names:
        path = scene_path(name)
        if path is None:
            log(f"missing scene {name}: skipped")
            out["scenes"][name] = {"skipped": "file not found"}
            continue
        scene = load_scene(path)
        hull_names = list(TRACE_HULLS)
        level, wall, cpu = compile_with(scene, hull_names)
        levels[name] = level
        rec = {"path": os.path.relpath(path, REPO), "brushes": len(scene.brushes),
               "bounds_m": np.round(scene.bounds, 3).tolist(),
               "compile": {"hulls": list(level.hull_names), "compile_s": round(wall, 3), "cpu_s": round(cpu, 3),
                           "stages_s": {k: round(float(v), 3) for k, v in level.stats["times"].items()},
                           "point_tree_nodes": level.num_nodes, "onion_nodes": int(len(level.onion_node_plane))},
               "hulls": {}}
        log(f"{name:<10} compiled with {level.hull_names} in {wall:.2f} s (cpu {cpu:.2f}); point tree "
            f"{level.num_nodes} nodes, onion {len(level.onion_node_plane)}")
        rng = np.random.default_rng(args.seed + zlib.crc32(name.encode()))
        inside = InsideOracle(level, scene.bounds)
        samples = {}
        for hull, hname in enumerate(level.hull_names):
            segs, info = make_segments(level, hull, scene.bounds, args.segments, args.long, args.length, rng, inside)
            samples[hull] = segs
            r = {**info, **measure_hull(level, hull, segs, args.single, args.repeat)}
            rec["hulls"][hname] = r
            for key in ("short", "long"):
                q = r[key]
                if q:
                    ok = not q["single_vs_batch"]["kind_mismatches"] and not q["single_vs_batch"]["fraction_inexact"]
                    log(f"  {hname:<7} {key:<5} batch {q['batch_per_s']:10.0f}/s (cpu {q['batch_per_cpu_s']:10.0f}/s)  "
                        f"single {q['single_per_s']:8.0f}/s  nodes {q['mean_nodes']:6.1f} (max {q['max_nodes']:4d})  "
                        f"iters {q['loop_iterations']:4d}  hits {q['hit_fraction']:.2f}  ok {ok}")
        if has_bvh:
            rec["bvh"] = bvh_compare(level, samples[0], args.repeat)
            for key in ("short", "long"):
                b = rec["bvh"][key]
                if b:
                    log(f"  bvh     {key:<5} BVHTree {b['bvh_per_s']:10.0f}/s  ours {b['ours_batch_per_s']:10.0f}/s  "
                        f"x{b['ours_over_bvh']} (cpu x{b['ours_over_bvh_cpu']})  disagreements {b['disagreements']} "
                        f"(distance {b['disagree_distance']}, "
                        f"ours only {b['disagree_hit_ours_only']}, bvh only {b['disagree_hit_bvh_only']})  "
                        f"max diff {b['distance_diff_m']['max']}")
        else:
            rec["bvh"] = {"skipped": why}
        rec["samples"] = samples  # dropped before printing; kept for --profile
        out["scenes"][name] = rec

    for name in sweep:
        path = scene_path(name)
        if path is None:
            out["hull_sweep"][name] = {"skipped": "file not found"}
            continue
        out["hull_sweep"][name] = hull_sweep(load_scene(path), name)

    if args.profile:
        ran = [n for n in names if n in levels]
        if ran:
            big = max(ran, key=lambda n: len(levels[n].onion_node_plane))
            smp = out["scenes"][big]["samples"]
            out["profile"] = {"scene": big, **profile_batch(levels[big], [
                ("stand_short", 1, *smp[1]["short"]), ("point_short", 0, *smp[0]["short"]),
                ("point_long", 0, *smp[0]["long"])])}
    for rec in out["scenes"].values():
        rec.pop("samples", None)

    out["targets"] = targets(out)
    out["wall_s"] = round(time.perf_counter() - start, 1)
    print(json.dumps(out, sort_keys=True, indent=1))
    return 0


def targets(out: dict) -> dict:
    """The issue's acceptance figures, scene by scene: ratios of wall-time rates and of CPU-time
    rates (both sides timed in the same process, one after the other)."""
    t: dict = {"batch_rays_vs_bvh_min_3x": {}, "batch_box_vs_bvh_rays_min_1x": {}}
    for name, rec in out["scenes"].items():
        bvh = rec.get("bvh") or {}
        for key in ("short", "long"):
            b = bvh.get(key)
            if not b:
                continue
            t["batch_rays_vs_bvh_min_3x"][f"{name}/{key}"] = {
                "ratio": b["ours_over_bvh"], "ratio_cpu": b["ours_over_bvh_cpu"],
                "met": b["ours_over_bvh"] >= 3.0 and (b["ours_over_bvh_cpu"] or 0) >= 3.0}
            for hname, h in rec["hulls"].items():
                if hname == "point" or not h.get(key):
                    continue
                ratio = round(h[key]["batch_per_s"] / b["bvh_per_s"], 2)
                ratio_cpu = round(h[key]["batch_per_cpu_s"] / b["bvh_per_cpu_s"], 2)
                t["batch_box_vs_bvh_rays_min_1x"][f"{name}/{hname}/{key}"] = {
                    "ratio": ratio, "ratio_cpu": ratio_cpu, "met": ratio >= 1.0 and ratio_cpu >= 1.0}
    e0 = out["scenes"].get("lq_e0m3")
    if e0 and "compile" in e0:
        c = e0["compile"]
        t["lq_e0m3_stand_crouch_compile_s"] = {"seconds": c["compile_s"], "cpu_s": c["cpu_s"], "target_s": 10.0,
                                               "met": c["compile_s"] <= 10.0, "met_cpu": c["cpu_s"] <= 10.0}
    else:
        t["lq_e0m3_stand_crouch_compile_s"] = "not run (pass --big)"
    return t


if __name__ == "__main__":
    sys.exit(main())
