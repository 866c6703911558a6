"""Re-baking after an edit (bake --update, the add-on's re-bake): seconds of a full bake against a
re-bake after one brush moved, on maps and procedural worlds.

    nice python bench/update.py [--map maps/librequake/e3m4.map] [--world tiled:10000] [--edits 3]
                                [--vis fast|flow|none] [--light] [--jobs N] > update.json

Per scene: the full bake (no cache; its stage seconds), then for each edit a structural brush
picked at random is moved 16 map units along an axis, and the edited scene is baked twice: through
the first bake's cache, read back from its file as `bake --update` reads it, and from scratch.
Reported per edit: wall seconds of both, the cache file's load seconds, the stage seconds of the
re-bake, what it rebuilt and reused, 'collision_and_leaks' (the re-bake's seconds up to the leak
verdict and the bevels: load excluded, vis and light excluded) and whether the two levels are the
same bytes.  The scene is loaded once (the time of loading is the same either way and is listed).
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from brushbake.core.compile.bake_cache import BakeCache  # noqa: E402
from brushbake.core.compile.pipeline import bake_scene  # noqa: E402
from brushbake.core.formats.loaders import load_scene  # noqa: E402
from brushbake.core.model.brushes import Contents, brush_from_planes  # noqa: E402
from brushbake.core.model.hulls import quake_map_hulls  # noqa: E402
from brushbake.exporters.native import level_to_bytes  # noqa: E402

#: stages after which collision and the leak verdict are known (vis and light come later)
COLLISION_AND_LEAKS = ("csg", "tree", "detail", "arrays", "expand_csg", "onion_tree", "leaf_solidity", "portals",
                       "leaks", "seal", "fill", "bevel")


def scene_of(spec: str, vis: str, light: bool):
    t0 = time.perf_counter()
    if spec.startswith(("tiled:", "slab:", "terrain:")):
        sys.path.insert(0, str(HERE))
        from worlds import make_world

        layout, n = spec.split(":")
        with tempfile.NamedTemporaryFile("w", suffix=".map", delete=False) as f:
            f.write(make_world(layout, int(n)))
        scene = load_scene(f.name)
        Path(f.name).unlink()
    else:
        scene = load_scene(spec)
    scene.hulls = quake_map_hulls(scene.settings.map_scale)
    settings = dataclasses.replace(scene.settings, vis=vis, light=light, allow_leak=True)
    return dataclasses.replace(scene, settings=settings), time.perf_counter() - t0


def timed_bake(scene, cache, jobs):
    t0 = time.perf_counter()
    level = bake_scene(scene, cache=cache, jobs=jobs)
    return level, time.perf_counter() - t0


def run(spec: str, edits: int, vis: str, light: bool, jobs, seed: int) -> dict:
    scene, load_s = scene_of(spec, vis, light)
    cache = BakeCache()
    level, full_s = timed_bake(scene, cache, jobs)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "level.bbk.cache"
        path.write_bytes(cache.to_bytes())
        cache_bytes = path.stat().st_size
        rng = random.Random(seed)
        structural = [i for i, b in enumerate(scene.brushes) if b.contents == Contents.SOLID]
        rows = []
        for _ in range(edits):
            i = rng.choice(structural)
            b = scene.brushes[i]
            step = np.zeros(3)
            step[rng.randrange(3)] = rng.choice([-16.0, 16.0]) * scene.settings.map_scale
            brushes = list(scene.brushes)
            brushes[i] = brush_from_planes(b.normals, b.dists + b.normals @ step, b.name, b.contents, entity=b.entity)
            edited = dataclasses.replace(scene, brushes=brushes)
            t0 = time.perf_counter()
            kept = BakeCache.from_file(path)
            read_s = time.perf_counter() - t0
            got, update_s = timed_bake(edited, kept, jobs)
            fresh, fresh_s = timed_bake(edited, None, jobs)
            times = got.stats["times"]
            rows.append({
                "brush": b.name, "step": step.tolist(), "cache_read_s": round(read_s, 3),
                "update_s": round(read_s + update_s, 3), "full_s": round(fresh_s, 3),
                "ratio": round((read_s + update_s) / fresh_s, 3),
                "collision_and_leaks_s": round(read_s + sum(times.get(k, 0.0) for k in COLLISION_AND_LEAKS), 3),
                "full_collision_and_leaks_s": round(sum(fresh.stats["times"].get(k, 0.0) for k in COLLISION_AND_LEAKS), 3),
                "stages_s": {k: round(v, 3) for k, v in times.items()},
                "rebuilt_reused": {k: list(v) for k, v in got.stats["cache"].items()},
                "same_bytes": level_to_bytes(got) == level_to_bytes(fresh)})
    return {"scene": spec, "brushes": len(scene.brushes), "load_s": round(load_s, 3), "full_bake_s": round(full_s, 3),
            "full_stages_s": {k: round(v, 3) for k, v in level.stats["times"].items()},
            "cache_file_bytes": cache_bytes, "edits": rows}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--map", action="append", help="a map (default: maps/librequake/e3m4.map)")
    ap.add_argument("--world", action="append", metavar="LAYOUT:BRUSHES", help="a procedural world (bench/worlds.py)")
    ap.add_argument("--edits", type=int, default=3)
    ap.add_argument("--vis", default="fast", choices=("fast", "flow", "none"))
    ap.add_argument("--light", action="store_true")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    specs = (args.map or []) + (args.world or [])
    if not specs:
        specs = [str(HERE.parent / "maps" / "librequake" / "e3m4.map")]
    out = {"vis": args.vis, "light": args.light, "jobs": args.jobs,
           "results": [run(s, args.edits, args.vis, args.light, args.jobs, args.seed) for s in specs]}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
