"""Benchmark: brushbake's lightmaps against Cycles (issue 12's check), per-luxel relative RMSE.

    python bench/light_cycles.py [--samples N] [--bounces 0,1,2,8] [--only cornell_box two_rooms area emissive]

For the Cornell box and the two-rooms sample: bakes with light (patch 1 luxel, threshold 0, the
scene's lights in watts by the .map rule) and Cycles' DIFFUSE bake of the same pages (CPU, the bpy
wheel, N samples, the same reflectance and bounces), in a fresh Python per scene
(tests/addon/scenarios.py 'cycles_compare').  Prints ONE JSON object: per scene, luxels, per
bounce count the relative RMSE (luminance; luxels whose centre lies on their face) and the
seconds of each bake.  'area' and 'emissive' are the small rooms lit only by a Blender area light
or only by an emissive material, read by the add-on (scenario 'cycles_lit').
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = REPO / "tests" / "addon" / "scenarios.py"
PREFIX = "SCENARIO_RESULT "


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--samples", type=int, default=4096)
    p.add_argument("--bounces", default="0,1,2,8")
    p.add_argument("--only", nargs="*", default=["cornell_box", "two_rooms", "area", "emissive"])
    args = p.parse_args()
    out = {"samples": args.samples, "scenes": {}}
    for name in args.only:
        if name in ("area", "emissive"):
            cmd = [sys.executable, str(SCENARIOS), "cycles_lit", name, str(args.samples), *args.bounces.split(",")]
        else:
            cmd = [sys.executable, str(SCENARIOS), "cycles_compare", str(REPO / "sample_scenes" / f"{name}.json"),
                   str(args.samples), *args.bounces.split(",")]
        print(name, file=sys.stderr, flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        lines = [line for line in proc.stdout.splitlines() if line.startswith(PREFIX)]
        out["scenes"][name] = json.loads(lines[-1][len(PREFIX):]) if lines else {"error": proc.stderr[-2000:]}
    print(json.dumps(out, sort_keys=True, indent=1))


if __name__ == "__main__":
    main()
