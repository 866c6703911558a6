"""Benchmark: visibility stages for every sample scene and every map in maps/.

    python bench/vis.py [--only NAME ...] [--repeat N]

Prints ONE JSON object on stdout (sorted keys); progress goes to stderr.  Per scene: compile_s
(point tree only: compile_scene without box hulls or bevels, which visibility does not read),
portals_s (build_portals, best of --repeat runs), clusters (empty structural cells, the outside
included until a leak check has run), portals (between two clusters), void_portals (to the
outside of the world box), leaks_s and the leak verdict (find_leaks from the scene's player
starts, lights and markers), outside_clusters (cells the void reaches), and the ericw-tools row
of bench/ericw_reference.md where the map is listed (its clusters and portals count the inside
only, after its own outside fill).  On a map sealed in exact geometry, also the default seal
rule's second check (core/compile/vis/sliver_seal.py): sites_s and sliver_sites (qbsp_sites: the tips
qbsp's tree can cut), seal_s (qbsp_leak_report as the bake calls it: those sites, and if a cut
tip may open the seal, seal_compiled_again, the point tree compiled again with them cut, its
portals and leak flood) and leaks_qbsp (its verdict).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import re  # noqa: E402

from compile import REFERENCE, _number, scene_files  # noqa: E402

from brushbake.core.compile.pipeline import compile_scene  # noqa: E402
from brushbake.core.compile.vis.portals import build_portals  # noqa: E402
from brushbake.core.formats.loaders import load_scene  # noqa: E402


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ericw_rows() -> dict[str, dict]:
    """The last table of REFERENCE.md (ericw-tools), keyed by map name, visibility columns only."""
    if not REFERENCE.is_file():
        return {}
    rows = [line.strip().strip("|").split("|") for line in REFERENCE.read_text(encoding="utf-8").splitlines()
            if line.strip().startswith("|")]
    heads = [r for r in rows if r and r[0].strip() == "map"]
    header = [re.sub(r"[^a-z0-9]+", "_", h.strip().lower()).strip("_") for h in heads[-1]] if heads else []
    out = {}
    for row in rows:
        cells = [c.strip() for c in row]
        if len(cells) != len(header) or cells[0] == header[0] or set(cells[0]) <= set("-: "):
            continue
        rec = dict(zip(header, map(_number, cells)))
        out[str(cells[0])] = {k: rec[k] for k in ("vis_s", "leafs_portal_leafs", "clusters", "portals",
                                                  "avg_leafs_visible") if k in rec}
    return out


def best_of(repeat: int, fn):
    best, out = float("inf"), None
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def measure(path: Path, repeat: int) -> dict:
    scene = load_scene(path)
    scene.hulls = []
    t0 = time.perf_counter()
    level = compile_scene(scene)
    row: dict = {"compile_s": round(time.perf_counter() - t0, 4), "leaves": level.num_leaves}
    seconds, portals = best_of(repeat, lambda: build_portals(level))
    row.update(portals_s=round(seconds, 4), clusters=portals.num_clusters, portals=portals.num_inner,
               void_portals=portals.num_portals - portals.num_inner)
    try:
        from brushbake.core.compile.vis.leaks import find_leaks, inside_points
    except ImportError:
        return row
    points, names = inside_points(scene)
    seconds, report = best_of(repeat, lambda: find_leaks(level, portals, points, names))
    row.update(leaks_s=round(seconds, 4), leaks=report.leaks, inside_points=len(points),
               outside_clusters=int(report.outside_clusters.sum()),
               leak_entity=report.entity if report.leaks else None,
               leak_chain_points=len(report.chain) if report.leaks else 0)
    try:
        from brushbake.core.compile.vis.sliver_seal import qbsp_leak_report, qbsp_sites
    except ImportError:
        return row
    if report.leaks or not report.judged:
        return row  # the qbsp rule checks sealed maps only
    seconds, sites = best_of(repeat, lambda: qbsp_sites(scene.brushes, scene.settings.map_scale))
    row.update(sites_s=round(seconds, 4), sliver_sites=len(sites))
    seconds, (qbsp, _) = best_of(repeat, lambda: qbsp_leak_report(scene, exact=(level, portals, report)))
    row.update(seal_s=round(seconds, 4), leaks_qbsp=bool(qbsp is not None and qbsp.leaks),
               seal_compiled_again=qbsp is not None)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="scene names (file stems) to run")
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs per timed stage")
    args = ap.parse_args()
    ref = ericw_rows()
    out: dict = {"scenes": {}}
    for name, path in scene_files().items():
        if args.only and name not in args.only:
            continue
        log(f"{name} ...")
        row = measure(path, args.repeat)
        if name in ref:
            row["ericw"] = ref[name]
        out["scenes"][name] = row
        log(f"  {row}")
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
