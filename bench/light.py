"""Benchmark: lightmaps on every sample scene and map -- charts, direct light, bounces.

    python bench/light.py [--only NAME ...] [--bounces N] [--luxel M] [--patch N] [--vis fast|none]
                          [--backend auto|numpy|c]

Prints ONE JSON object on stdout (sorted keys); progress goes to stderr.  Per scene, baked with
visibility (--vis, default fast; a leaking map with allow_leak) and no box hulls or bevels (their
time is not light's):
- faces (with a chart), luxels, patches, pages and page size;
- charts_s (charts, patches, sample points), direct_s and direct_rays, direct_rays_per_s;
- bounces: per bounce, shooters, pairs (receivers after the PVS and the cut), rays, seconds;
- rays (all), rays_per_s over direct light and bounces; light_s (the stage's wall time) and
  direct_plus_one_bounce_s (charts + direct + bounce 1: what ericw's light_bounce column times);
  light_cpu_s (the process's CPU time over the stage, every thread), backend and threads (what
  traced the rays: core/compile/light/lm_rays.py), native (which library, and why: the shipped
  one, one built from source, or NumPy; core/native_lib.py) and pages_sha256 (the same for any
  backend);
- ericw: the map's light_bounce seconds (bench/ericw_reference.md, the newest table) and the ratio.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compile import scene_files  # noqa: E402
from vis import ericw_rows  # noqa: E402

from brushbake.core.compile.light.lightmap import bake_light  # noqa: E402
from brushbake.core.compile.pipeline import compile_scene, visibility_stage  # noqa: E402
from brushbake.core.formats.loaders import load_scene  # noqa: E402


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ericw_light() -> dict:
    """{map: light_bounce seconds} from the newest table of bench/ericw_reference.md."""
    from compile import REFERENCE, _number  # the same reader, other columns

    import re

    rows = [line.strip().strip("|").split("|") for line in REFERENCE.read_text(encoding="utf-8").splitlines()
            if line.strip().startswith("|")]
    heads = [r for r in rows if r and r[0].strip() == "map"]
    header = [re.sub(r"[^a-z0-9]+", "_", h.strip().lower()).strip("_") for h in heads[-1]]
    out = {}
    for row in rows:
        cells = [c.strip() for c in row]
        if len(cells) == len(header) and cells[0] != "map" and not set(cells[0]) <= set("-: "):
            rec = dict(zip(header, map(_number, cells)))
            if "light_bounce_s" in rec:
                out[cells[0]] = rec["light_bounce_s"]
    return out


def run_scene(path: Path, args) -> dict:
    scene = load_scene(path)
    scene.hulls = []
    s = scene.settings
    s.bevels, s.vis, s.allow_leak, s.light = False, args.vis, True, True
    s.bounces, s.luxel, s.patch = args.bounces, args.luxel, args.patch
    level = compile_scene(scene)
    if args.vis != "none":
        visibility_stage(scene, level)
    t0, c0 = time.perf_counter(), time.process_time()
    st = bake_light(level, scene, backend=args.backend)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    bounces = [r for r in st["bounce_rounds"] if r["round"] > 0]
    surface = [r for r in st["bounce_rounds"] if r["round"] == 0]
    shot_s = sum(r["seconds"] for r in st["bounce_rounds"])
    out = {k: st[k] for k in ("faces", "luxels", "patches", "pages", "page_size", "luxels_moved_out_of_solid",
                              "direct_rays", "rays")}
    out.update(charts_s=round(st["charts_seconds"], 3), direct_s=round(st["direct_seconds"], 3),
               direct_rays_per_s=round(st["direct_rays"] / max(st["direct_seconds"], 1e-9)),
               surface_lights=[{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()} for r in surface],
               bounces=[{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()} for r in bounces],
               rays_per_s=round(st["rays"] / max(st["direct_seconds"] + shot_s, 1e-9)),
               light_s=round(wall, 3), light_cpu_s=round(cpu, 3), backend=st["backend"], threads=st["threads"],
               native=st.get("native"), pages_sha256=hashlib.sha256(level.lm_pages.tobytes()).hexdigest()[:16],
               direct_plus_one_bounce_s=round(wall - sum(r["seconds"] for r in bounces[1:]), 3),
               sealed=bool(level.stats.get("leak_report") is not None and not level.stats["leak_report"].leaks))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", nargs="*", help="scene names (file stems)")
    p.add_argument("--bounces", type=int, default=1, help="bounces (default 1: ericw's light_bounce)")
    p.add_argument("--luxel", type=float, default=0.5)
    p.add_argument("--patch", type=int, default=4)
    p.add_argument("--vis", default="fast", choices=("fast", "flow", "none"))
    p.add_argument("--backend", default="auto", choices=("auto", "numpy", "c"), help="what traces the rays")
    args = p.parse_args()
    ericw = ericw_light()
    result = {"settings": {"bounces": args.bounces, "luxel": args.luxel, "patch": args.patch, "vis": args.vis,
                           "backend": args.backend},
              "scenes": {}}
    for name, path in scene_files().items():
        if args.only and name not in args.only:
            continue
        log(f"{name}")
        row = run_scene(path, args)
        if name in ericw:
            row["ericw_light_bounce_s"] = ericw[name]
            row["ratio_to_ericw"] = round(row["direct_plus_one_bounce_s"] / ericw[name], 2)
        result["scenes"][name] = row
    print(json.dumps(result, sort_keys=True, indent=1))


if __name__ == "__main__":
    main()
