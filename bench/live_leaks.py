"""The live leak check (core/compile/vis/leak_watch.py) on a map being edited: seconds of the first
check and of each check after one edit, against a check from scratch.

    nice python bench/live_leaks.py [--map maps/librequake/e3m4.map] [--edits 20] [--seed 0] [--blender] > live.json

Each edit moves one random structural brush by a random step of 8 to 64 map units along an axis
(the edit a designer makes), checks, and moves it back (checked again: undo).  Per check: wall
seconds, the cells built and reused, and whether the report equals a fresh LeakWatch's (the first
three edits are compared; a check from scratch costs what the first check costs).  The scene is
loaded once (the add-on keeps its brushes between edits the same way, converting only the edited
object).  With --blender the same edits run in Blender through the add-on (the bpy wheel; the
map imported as objects, the live check switched on, each edit's check timed as the timer runs it).
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from brushbake.core.compile.vis.leak_watch import LeakWatch  # noqa: E402
from brushbake.core.formats.loaders import load_scene  # noqa: E402
from brushbake.core.model.brushes import Contents, brush_from_planes  # noqa: E402


def moved(brush, offset):
    return brush_from_planes(brush.normals, brush.dists + brush.normals @ np.asarray(offset, float), brush.name,
                             brush.contents, entity=brush.entity)


def same(a, b) -> bool:
    return (a.leaks == b.leaks and np.array_equal(a.outside_clusters, b.outside_clusters)
            and a.hole_position == b.hole_position and a.entity == b.entity)


def in_blender(args) -> dict:
    """The same edits in Blender (the bpy wheel): the map imported as objects, the live check
    switched on, then per edit one structural object moved, the depsgraph updated (the handler
    marks the scene) and the check the timer would run (addon/live_leaks.run_check) timed: the
    objects' keys, the conversion of the moved brush, LeakWatch, the chain drawn or cleared."""
    import bpy

    import brushbake
    from brushbake.addon import live_leaks

    bpy.ops.wm.read_factory_settings(use_empty=True)
    brushbake.register()
    scene = bpy.context.scene
    t0 = time.perf_counter()
    bpy.ops.brushbake.import_map(filepath=args.map)
    import_s = time.perf_counter() - t0
    objects = [o for o in scene.objects if o.type == "MESH" and o.brushbake.role == "STRUCTURAL"]
    t0 = time.perf_counter()
    scene.brushbake.live_leak_check = True  # the first check, every brush converted
    first_s = time.perf_counter() - t0
    first_status = scene.brushbake.status
    rng = np.random.default_rng(args.seed)
    rows = []
    for _ in range(args.edits):
        obj = objects[int(rng.integers(len(objects)))]
        axis = int(rng.integers(3))
        step = float(rng.choice([-1, 1]) * rng.integers(1, 9) * 8 * scene.brushbake.map_scale)
        obj.location[axis] += step
        bpy.context.view_layer.update()
        marked = live_leaks.pending(scene)
        t0 = time.perf_counter()
        live_leaks.run_check(scene)
        edit_s = time.perf_counter() - t0
        status = scene.brushbake.status
        obj.location[axis] -= step
        bpy.context.view_layer.update()
        t0 = time.perf_counter()
        live_leaks.run_check(scene)
        rows.append({"object": obj.name, "marked": marked, "edit_s": round(edit_s, 4),
                     "undo_s": round(time.perf_counter() - t0, 4), "status": status})
    times = [r["edit_s"] for r in rows]
    return {"blender": bpy.app.version_string, "objects": len(scene.objects), "structural": len(objects),
            "import_s": round(import_s, 2), "first_check_s": round(first_s, 3), "first_status": first_status,
            "edit_s_median": round(statistics.median(times), 4), "edit_s_max": round(max(times), 4),
            "undo_s_median": round(statistics.median(r["undo_s"] for r in rows), 4), "edits": rows}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--map", default=str(HERE.parent / "maps" / "librequake" / "e3m4.map"))
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--blender", action="store_true", help="the same in Blender (the bpy wheel), end to end")
    ap.add_argument("--region-size", type=float, default=None, help="LeakWatch's grid (default its own)")
    args = ap.parse_args()
    if args.blender:
        print(json.dumps(in_blender(args), indent=1))
        return 0
    t0 = time.perf_counter()
    scene = load_scene(args.map)
    load_s = time.perf_counter() - t0
    watch = LeakWatch(args.region_size)
    t0 = time.perf_counter()
    first = watch.check(scene)
    first_s = time.perf_counter() - t0
    cells = watch.built
    rng = np.random.default_rng(args.seed)
    solid = [i for i, b in enumerate(scene.brushes) if b.contents == Contents.SOLID]
    scale = scene.settings.map_scale
    edits = []
    for k in range(args.edits):
        i = int(rng.choice(solid))
        step = np.zeros(3)
        step[int(rng.integers(3))] = float(rng.choice([-1, 1]) * rng.integers(1, 9) * 8 * scale)
        brushes = list(scene.brushes)
        brushes[i] = moved(brushes[i], step)
        edited = dataclasses.replace(scene, brushes=brushes)
        t0 = time.perf_counter()
        report = watch.check(edited)
        edit_s = time.perf_counter() - t0
        built, reused = watch.built, watch.reused
        t0 = time.perf_counter()
        back = watch.check(scene)
        undo_s = time.perf_counter() - t0
        row = {"brush": scene.brushes[i].name, "step_m": step.tolist(), "edit_s": round(edit_s, 4),
               "cells_built": built, "cells_reused": reused, "undo_s": round(undo_s, 4), "leaks": report.leaks,
               "undo_leaks": back.leaks}
        if k < 3:
            row["same_as_scratch"] = same(report, LeakWatch(args.region_size).check(edited))
        edits.append(row)
    times = [e["edit_s"] for e in edits]
    print(json.dumps({"map": Path(args.map).name, "region_size": watch.region_size, "brushes": len(scene.brushes), "structural": len(solid),
                      "load_s": round(load_s, 3), "first_check_s": round(first_s, 3), "cells": cells,
                      "first_leaks": first.leaks, "edit_s_median": round(statistics.median(times), 4),
                      "edit_s_max": round(max(times), 4),
                      "undo_s_median": round(statistics.median(e["undo_s"] for e in edits), 4),
                      "edits": edits}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
