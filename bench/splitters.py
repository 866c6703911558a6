"""Benchmark: splitter heuristics compared by tree size, depth, query cost and compile time.

    python bench/splitters.py [--e3m4] [--only NAME ...] [--points N] [--segments N] [--seed S]

Scenes: every sample scene plus qbspfeatures, lqdm13, lq_e0m3 and e1m7 (--e3m4 adds e3m4 with
the smaller E3M4_CONFIGS set).  Each scene is loaded once, its box hulls dropped (this study is
about the point tree; a scene's hull trees would only add their own compile time), and compiled
once per configuration:

- onion (split_weight 4) and thesis, each with max_candidates in 8, 16, 32, 48, 96, 0 (= all);
- onion split_weight 1 and 8 with max_candidates 48.

Per configuration: compile wall and CPU seconds (CPU is the steadier figure on a shared machine),
tree counts, leaf depth (mean over leaves), and query cost on the same random sample for every
configuration of a scene:

- points: N uniform points in the scene's brush bounds; nodes visited by point_leaves counted
  exactly with a NumPy walk (mean and max; also the mean over points in empty space);
  point_leaves throughput (best of 3);
- segments: N segments of length --length m (default 2), start uniform in the bounds, direction
  uniform on the sphere; segment_hits throughput (best of 3); nodes popped per segment counted by
  a copy of segment_hits' loop (checked to give the same hits); the same again for segments
  starting in empty space (what a moving character asks).

OpenBLAS is held to one thread (OPENBLAS_NUM_THREADS=1 unless already set in the environment):
the tree's matrix products are small, and a single thread keeps the CPU seconds reported here a
single-core figure on a shared machine.

Prints ONE JSON object on stdout (sorted keys); progress on stderr.  'summary' gives, per
configuration, the geometric mean over scenes of each figure relative to onion/w4/mc48;
'summary_large' the same over the real maps only (baseline tree of 1000 nodes or more).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import sys
import time
import zlib
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy loads OpenBLAS (see the docstring)

import numpy as np  # noqa: E402

from brushbake.core.compile.pipeline import compile_scene  # noqa: E402
from brushbake.core.formats.loaders import load_scene  # noqa: E402
from brushbake.core.runtime.query import point_leaves, segment_hits  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compile import git_state  # noqa: E402  (bench/compile.py)

REPO = Path(__file__).resolve().parents[1]
MAPS = REPO / "maps"
SAMPLES = REPO / "sample_scenes"
STUDY_MAPS = ("qbspfeatures", "lqdm13", "e1m7", "lq_e0m3")

MCS = (8, 16, 32, 48, 96, 0)
CONFIGS = ([("onion", 4.0, mc) for mc in MCS] + [("thesis", None, mc) for mc in MCS]
           + [("onion", 1.0, 48), ("onion", 8.0, 48)])
E3M4_CONFIGS = [("onion", 4.0, 16), ("onion", 4.0, 48), ("onion", 4.0, 0), ("thesis", None, 48),
                ("onion", 1.0, 48), ("onion", 8.0, 48)]
BASELINE = "onion/w4/mc48"
LARGE_NODES = 1000  # 'summary_large': only scenes whose baseline tree has at least this many nodes


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def config_name(splitter: str, weight, mc: int) -> str:
    return f"thesis/mc{mc}" if splitter == "thesis" else f"onion/w{weight:g}/mc{mc}"


def parse_config(name: str):
    """'onion/w8/mc48' or 'thesis/mc0' -> (splitter, weight, max_candidates)."""
    parts = name.strip().split("/")
    mc = int(parts[-1].removeprefix("mc"))
    if parts[0] == "thesis" and len(parts) == 2:
        return ("thesis", None, mc)
    if parts[0] == "onion" and len(parts) == 3 and parts[1].startswith("w"):
        return ("onion", float(parts[1][1:]), mc)
    raise ValueError(f"bad configuration name {name!r} (onion/wW/mcK or thesis/mcK)")


def study_files(with_e3m4: bool) -> dict[str, Path]:
    out: dict[str, Path] = {}
    if SAMPLES.is_dir():
        for p in sorted(SAMPLES.glob("*")):
            if p.suffix.lower() in (".json", ".map"):
                out[p.stem if p.stem not in out else p.name] = p
    found = {p.stem: p for p in MAPS.rglob("*.map")} if MAPS.is_dir() else {}
    for name in STUDY_MAPS + (("e3m4",) if with_e3m4 else ()):
        if name in found:
            out[name] = found[name]
        else:
            log(f"missing map {name}: skipped")
    return out


# -- counting walks ----------------------------------------------------------------------------
def point_steps(level, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(leaf, nodes visited) per point: point_leaves' walk with a step counter."""
    codes = np.full(len(pts), level.root, dtype=np.int64)
    steps = np.zeros(len(pts), dtype=np.int64)
    normals, dists = level.plane_normals, level.plane_dists
    planes, children = level.node_plane, level.node_children
    active = np.flatnonzero(codes >= 0)
    while len(active):
        steps[active] += 1
        nodes = codes[active]
        pl = planes[nodes]
        back = np.einsum("ij,ij->i", pts[active], normals[pl]) - dists[pl] < 0
        codes[active] = children[nodes, back.astype(np.int64)]
        active = active[codes[active] >= 0]
    return -1 - codes, steps


def segment_pops(level, s: np.ndarray, e: np.ndarray, hull: int = 0):
    """core.query.segment_hits' loop with counters: (hit fraction, node pops, all pops) per segment."""
    n = len(s)
    bit = 1 << hull
    normals, dists = level.plane_normals, level.plane_dists
    planes, children, solid = level.node_plane, level.node_children.astype(np.int64), level.leaf_solid
    depth = level.depth() + 2
    st_code = np.empty((n, depth), dtype=np.int64)
    st_t0 = np.empty((n, depth))
    st_t1 = np.empty((n, depth))
    st_code[:, 0] = level.root
    st_t0[:, 0] = 0.0
    st_t1[:, 0] = 1.0
    sp = np.ones(n, dtype=np.int64)
    hit_t = np.full(n, 2.0)
    node_pops = np.zeros(n, dtype=np.int64)
    all_pops = np.zeros(n, dtype=np.int64)
    live = np.arange(n)
    delta = e - s
    while len(live):
        all_pops[live] += 1
        top = sp[live] - 1
        code = st_code[live, top]
        t0, t1 = st_t0[live, top], st_t1[live, top]
        sp[live] = top
        is_leaf = code < 0
        if is_leaf.any():
            rays = live[is_leaf]
            hit = (solid[-1 - code[is_leaf]] & bit) != 0
            hit_t[rays[hit]] = t0[is_leaf][hit]
            sp[rays[hit]] = 0
        node_sel = ~is_leaf
        if node_sel.any():
            rays = live[node_sel]
            node_pops[rays] += 1
            nodes = code[node_sel]
            t0n, t1n = t0[node_sel], t1[node_sel]
            pl = planes[nodes]
            nrm = normals[pl]
            ds = np.einsum("ij,ij->i", s[rays], nrm) - dists[pl]
            dd = np.einsum("ij,ij->i", delta[rays], nrm)
            d0, d1 = ds + t0n * dd, ds + t1n * dd
            front0, front1 = d0 >= 0, d1 >= 0
            near = np.where(front0, 0, 1)
            cross = front0 != front1
            with np.errstate(divide="ignore", invalid="ignore"):
                tm = np.clip(np.where(cross, -ds / np.where(dd == 0, 1.0, dd), t1n), t0n, t1n)
            c = np.flatnonzero(cross)
            if len(c):
                r = rays[c]
                k = sp[r]
                st_code[r, k] = children[nodes[c], 1 - near[c]]
                st_t0[r, k] = tm[c]
                st_t1[r, k] = t1n[c]
                sp[r] = k + 1
            k = sp[rays]
            st_code[rays, k] = children[nodes, near]
            st_t0[rays, k] = t0n
            st_t1[rays, k] = np.where(cross, tm, t1n)
            sp[rays] = k + 1
        live = live[sp[live] > 0]
    return np.minimum(hit_t, 1.0), node_pops, all_pops


def leaf_depths(level) -> np.ndarray:
    depth = np.zeros(level.num_nodes, dtype=np.int64)
    out = np.zeros(level.num_leaves, dtype=np.int64)
    if not level.num_nodes:
        return out
    depth[0] = 1
    children = level.node_children
    for node in range(level.num_nodes):  # children have larger indices than parents
        for c in children[node]:
            if c >= 0:
                depth[c] = depth[node] + 1
            else:
                out[-1 - c] = depth[node]
    return out


def best_time(fn, repeat: int = 3) -> float:
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


# -- one configuration -------------------------------------------------------------------------
def measure(scene, cfg, sample) -> tuple[dict, object]:
    splitter, weight, mc = cfg
    base = scene.settings
    scene.settings = dataclasses.replace(base, splitter=splitter, max_candidates=mc,
                                         split_weight=base.split_weight if weight is None else weight)
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        level = compile_scene(scene)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        scene.settings = base
    st = level.stats
    rec = {
        "compile_s": round(wall, 3), "compile_cpu_s": round(cpu, 3),
        "stages_s": {k: round(float(v), 3) for k, v in st["times"].items()},
        "nodes": st["nodes"], "leaves": st["leaves"], "solid_leaves": st["solid_leaves"], "depth": st["depth"],
        "splits": st["splits"], "faces": st["faces"], "candidates_scored": st.get("candidates_scored", 0),
    }
    ld = leaf_depths(level)
    rec["leaf_depth_mean"] = round(float(ld.mean()), 3) if len(ld) else 0.0

    pts = sample["points"]
    leaves, steps = point_steps(level, pts)
    assert np.array_equal(leaves, point_leaves(level, pts))
    solid = (level.leaf_solid[leaves] & 1) != 0
    empty = sample["empty"]
    rec["points"] = {
        "mean_nodes": round(float(steps.mean()), 3), "max_nodes": int(steps.max()),
        "mean_nodes_empty": round(float(steps[empty].mean()), 3) if empty.any() else None,
        "per_s": round(len(pts) / best_time(lambda: point_leaves(level, pts), 5), 0),
        # same geometry, so every configuration must classify the sample alike
        "solid_disagree": int(np.count_nonzero(solid != sample["solid"])),
    }
    for key, (s, e) in (("segments", sample["segments"]), ("segments_empty", sample["segments_empty"])):
        if not len(s):
            rec[key] = None
            continue
        frac, node_pops, all_pops = segment_pops(level, s, e)
        hits = segment_hits(level, s, e)
        assert np.array_equal(frac, hits[:, 0]), "segment_pops drifted from core.query.segment_hits"
        rec[key] = {
            "per_s": round(len(s) / best_time(lambda: segment_hits(level, s, e)), 0),
            "mean_nodes": round(float(node_pops.mean()), 3), "max_nodes": int(node_pops.max()),
            "mean_pops": round(float(all_pops.mean()), 3), "loop_iterations": int(all_pops.max()),
            "hit_fraction": round(float(np.mean(frac < 1.0)), 4),
        }
    return rec, level


def make_sample(scene, name: str, level, n_points: int, n_segments: int, length: float, seed: int) -> dict:
    rng = np.random.default_rng(seed + zlib.crc32(name.encode()))
    lo, hi = scene.bounds
    pts = rng.uniform(lo, hi, size=(n_points, 3))
    solid = (level.leaf_solid[point_leaves(level, pts)] & 1) != 0

    def segs(starts):
        d = rng.normal(size=starts.shape)
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        return starts, starts + length * d

    starts = rng.uniform(lo, hi, size=(n_segments, 3))
    empty_pts = pts[~solid]
    es = empty_pts[rng.choice(len(empty_pts), size=min(n_segments, len(empty_pts)), replace=False)] \
        if len(empty_pts) else np.zeros((0, 3))
    return {"points": pts, "solid": solid, "empty": ~solid, "segments": segs(starts), "segments_empty": segs(es)}


def summarise(scenes: dict, min_nodes: int = 0) -> dict:
    """Per configuration, geometric mean over scenes of figure / baseline figure (only scenes
    whose baseline tree has at least min_nodes nodes)."""
    figures = {
        "nodes": lambda r: r["nodes"], "depth": lambda r: r["depth"], "splits": lambda r: r["splits"] + 1,
        "faces": lambda r: r["faces"], "leaf_depth_mean": lambda r: r["leaf_depth_mean"],
        "point_mean_nodes": lambda r: r["points"]["mean_nodes"],
        "point_mean_nodes_empty": lambda r: r["points"]["mean_nodes_empty"],
        "segment_mean_nodes": lambda r: r["segments"]["mean_nodes"],
        "segment_empty_mean_nodes": lambda r: (r["segments_empty"] or {}).get("mean_nodes"),
        "point_per_s": lambda r: r["points"]["per_s"], "segment_per_s": lambda r: r["segments"]["per_s"],
        "compile_cpu_s": lambda r: r["compile_cpu_s"],
    }
    out: dict = {}
    names = sorted({c for sc in scenes.values() for c in sc["configs"]})
    for cfg in names:
        row = {}
        for fig, get in figures.items():
            logs = []
            for sc in scenes.values():
                base, rec = sc["configs"].get(BASELINE), sc["configs"].get(cfg)
                if base is None or rec is None or base["nodes"] < min_nodes:
                    continue
                if fig == "compile_cpu_s" and base["compile_cpu_s"] < 0.2:
                    continue  # too short to time on a shared machine
                a, b = get(rec), get(base)
                if a and b:
                    logs.append(math.log(a / b))
            row[fig] = round(math.exp(sum(logs) / len(logs)), 3) if logs else None
        row["scenes"] = sum(1 for sc in scenes.values() if cfg in sc["configs"]
                            and sc["configs"].get(BASELINE, {}).get("nodes", 0) >= min_nodes)
        out[cfg] = row
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--e3m4", action="store_true", help="add e3m4 (the largest map) with the smaller config set")
    ap.add_argument("--only", action="append", default=[], help="scene name(s), comma-separated or repeated")
    ap.add_argument("--points", type=int, default=100_000)
    ap.add_argument("--segments", type=int, default=20_000)
    ap.add_argument("--length", type=float, default=2.0, help="segment length in metres")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--configs", default=None,
                    help="comma-separated configurations instead of the study's set, e.g. onion/w8/mc96,thesis/mc0 "
                         f"({BASELINE} is always added: it is the yardstick)")
    args = ap.parse_args(argv)

    files = study_files(args.e3m4)
    only = {n for o in args.only for n in o.split(",") if n}
    if only:
        files = {k: p for k, p in files.items() if k in only}
    start = time.perf_counter()
    out = {
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
                    "loadavg_at_start": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
                    "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"), **git_state()},
        "params": {"points": args.points, "segments": args.segments, "segment_length_m": args.length,
                   "seed": args.seed, "baseline": BASELINE},
        "scenes": {},
    }
    for name, path in files.items():
        scene = load_scene(path)
        scene.hulls = []  # the point tree only (see the docstring)
        configs = E3M4_CONFIGS if name == "e3m4" else CONFIGS
        if args.configs:
            configs = [parse_config(BASELINE)] + [parse_config(c) for c in args.configs.split(",")
                                                  if c.strip() and c.strip() != BASELINE]
        # the sample (and the reference solidity) comes from the baseline tree
        base_level = compile_scene(dataclasses.replace(scene, settings=dataclasses.replace(
            scene.settings, splitter="onion", split_weight=4.0, max_candidates=48)))
        sample = make_sample(scene, name, base_level, args.points, args.segments, args.length, args.seed)
        del base_level
        rec = {"path": os.path.relpath(path, REPO), "brushes": len(scene.brushes),
               "bounds_m": np.round(scene.bounds, 3).tolist(), "empty_point_fraction":
               round(float(sample["empty"].mean()), 4), "configs": {}}
        for cfg in configs:
            cname = config_name(*cfg)
            r, _ = measure(scene, cfg, sample)
            rec["configs"][cname] = r
            log(f"{name:<14} {cname:<16} cpu {r['compile_cpu_s']:7.2f} s  nodes {r['nodes']:6d}  depth {r['depth']:3d}"
                f"  pt {r['points']['mean_nodes']:6.2f}  seg {r['segments']['mean_nodes']:6.2f}"
                f"  pt/s {r['points']['per_s']:9.0f}  seg/s {r['segments']['per_s']:8.0f}")
        out["scenes"][name] = rec
    out["summary"] = summarise(out["scenes"])
    out["summary_large"] = summarise(out["scenes"], min_nodes=LARGE_NODES)
    out["wall_s"] = round(time.perf_counter() - start, 1)
    print(json.dumps(out, sort_keys=True, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
