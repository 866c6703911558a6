"""Issue 15 point 3: which solid cells' bevels could a query miss, and do answers change without them?

Not a speed benchmark.  For each map, every solid cell of the point tree is classed by what lies
just outside its faces (points 1 mm outside each face's centre and its corners pulled 20 % in,
located in the point tree): 'inside' (some empty leaf the void does not reach: where players are),
'void_only' (empty space only in the void outside a sealed map, or the world box), 'interior' (no
empty leaf at all: solid all round).  It prints the bevels per class, the beveled tree's size over
the plain one with every bevel, without the interior cells' and with the inside cells' only, and
how many of N segments (start in inside empty space, end 2 m away at random, and as many aimed
past the other cells' vertices) answer differently (fraction, normal or start-solid) without
them, per shape, with the largest change in metres along the segment.  A sampled class can be
wrong for a face that is mostly solid outside, so the counts of changed answers are what decide.

    python bench/bevel_reach.py [--segments N] [--only NAME ...] > bevel_reach.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from brushbake.core.compile.trees.bevel import BevelSettings, all_cell_bevels, beveled_tree_from, solid_cell_arrays
from brushbake.core.compile.pipeline import bake_scene
from brushbake.core.formats.loaders import load_scene
from brushbake.core.runtime.query import point_leaves
from brushbake.core.runtime.shift import Box, Sphere, hit_checks

REPO = Path(__file__).resolve().parents[1]
MAPS = ["librequake/lq_e0m3.map", "librequake/e3m4.map", "librequake/lqdm13.map", "id/e1m7.map",
        "librequake/slope.map", "ericw-tools/q1_mountain.map"]
SHAPES = {"sphere 0.1": Sphere(0.1), "sphere 0.5": Sphere(0.5), "sphere 1": Sphere(1.0), "sphere 2": Sphere(2.0),
          "sphere 4": Sphere(4.0), "box 0.5,0.5,1": Box((0.5, 0.5, 1.0))}


def classify(level, outside_leaf: np.ndarray) -> tuple[np.ndarray, list]:
    """(C,) class of each solid cell and the cells (CellArrays) in bevel order."""
    normals = np.asarray(level.plane_normals)
    solid_leaf = (np.asarray(level.leaf_solid) & 1).astype(bool)
    cells = solid_cell_arrays(level, level.world_bounds)
    pts, owner, boxed = [], [], set()
    for k in range(len(cells.codes)):
        for tag, poly in cells.faces(k):
            if tag < 0:
                boxed.add(k)
                continue
            c = poly.mean(axis=0)
            s = np.vstack([c, poly + 0.2 * (c - poly)]) + 1e-3 * normals[tag]
            pts.append(s)
            owner += [k] * len(s)
    n = len(cells.codes)
    leaf = point_leaves(level, np.vstack(pts)) if pts else np.zeros(0, np.int64)
    owner = np.array(owner, np.int64)
    empty = ~solid_leaf[leaf]
    touch_in = np.bincount(owner[empty & ~outside_leaf[leaf]], minlength=n) > 0
    touch_void = np.bincount(owner[empty & outside_leaf[leaf]], minlength=n) > 0
    touch_void[sorted(boxed)] = True
    return np.where(touch_in, "inside", np.where(touch_void, "void_only", "interior")), cells


def run(path: Path, n_segments: int) -> dict:
    scene = load_scene(path)
    scene.settings.bevels, scene.settings.allow_leak = False, True
    level = bake_scene(scene)
    report = level.stats["leak_report"]
    solid_leaf = (np.asarray(level.leaf_solid) & 1).astype(bool)
    outside_leaf = np.zeros(len(solid_leaf), bool)
    sealed = bool(report.judged and not report.leaks)
    if sealed:
        cl = np.asarray(level.leaf_cluster)
        ok = (cl >= 0) & (cl < len(report.outside_clusters))
        outside_leaf[ok] = np.asarray(report.outside_clusters)[cl[ok]]
    klass, cells = classify(level, outside_leaf)
    bevels = all_cell_bevels(level, level.world_bounds, BevelSettings())
    per_cell = np.array([sum(len(v) for v in out.values()) for _, out in bevels], np.int64)
    plain = len(level.node_plane)
    trees = {"all": beveled_tree_from(level, bevels).tree(),
             "without interior": beveled_tree_from(level, [b for b, k in zip(bevels, klass) if k != "interior"]).tree(),
             "inside only": beveled_tree_from(level, [b for b, k in zip(bevels, klass) if k == "inside"]).tree()}
    rng = np.random.default_rng(3)
    lo, hi = np.asarray(level.world_bounds)
    cand = lo + rng.random((n_segments * 40, 3)) * (hi - lo)
    leaf = point_leaves(level, cand)
    starts = cand[~solid_leaf[leaf] & ~outside_leaf[leaf]][:n_segments]
    ends = starts + rng.normal(size=starts.shape) * 2.0
    others = np.flatnonzero(klass != "inside")
    if len(others) and len(starts):
        corners = np.vstack([cells.verts[cells.first[k]:cells.first[k + 1]].reshape(-1, 3) for k in others])
        corners = corners[np.any(corners != 0, axis=1)]
        target = corners[rng.integers(0, len(corners), len(starts))]
        starts, ends = np.vstack([starts, starts]), np.vstack([ends, starts + (target - starts) * 1.3])
    length = np.linalg.norm(ends - starts, axis=1)
    changes = {}
    for shape_name, shape in SHAPES.items():
        base = hit_checks(trees["all"], shape, starts, ends)
        for name in ("without interior", "inside only"):
            other = hit_checks(trees[name], shape, starts, ends)
            d = ((base.fraction != other.fraction) | np.any(base.normal != other.normal, axis=1)
                 | (base.start_solid != other.start_solid))
            changes[f"{name} / {shape_name}"] = {
                "changed": int(d.sum()), "of": int(len(d)),
                "max_m": round(float((np.abs(base.fraction - other.fraction) * length)[d].max()) if d.any() else 0.0, 3)}
    out = {"sealed": sealed, "plain_nodes": plain, "solid_cells": int(len(klass)), "bevels": int(per_cell.sum())}
    for name in ("inside", "void_only", "interior"):
        m = klass == name
        out[name] = {"cells": int(m.sum()), "bevels": int(per_cell[m].sum())}
    out["ratio"] = {name: round(len(t.node_plane) / max(plain, 1), 3) for name, t in trees.items()}
    out["answers_changed"] = changes
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--segments", type=int, default=5000)
    ap.add_argument("--only", nargs="*", default=[])
    args = ap.parse_args()
    result = {}
    for rel in MAPS:
        path = REPO / "maps" / rel
        if args.only and path.stem not in args.only:
            continue
        result[path.stem] = run(path, args.segments)
        r = result[path.stem]
        print(f"{path.stem}: bevels {r['bevels']} (interior {r['interior']['bevels']}, void only "
              f"{r['void_only']['bevels']}), ratio {r['ratio']}", file=sys.stderr, flush=True)
    print(json.dumps(result, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
