"""Bake every sample scene and map through the command line and print the sha256 of each level.

Used before and after a change that must not change answers (a refactor, a faster stage): the two
JSON objects must be equal.  Each scene is baked as `bake` does by default (bevels, the scene's own
hulls) and, with --hulls, again with those hulls.

    python bench/bake_hashes.py [--hulls stand,crouch] [--maps DIR] [--only NAME ...] > hashes.json
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def scene_files(maps_dir: Path) -> list[Path]:
    samples = sorted(Path(p) for p in glob.glob(str(REPO / "sample_scenes" / "*.json")))
    samples += sorted(Path(p) for p in glob.glob(str(REPO / "sample_scenes" / "*.map")))
    maps = sorted(Path(p) for p in glob.glob(str(maps_dir / "**" / "*.map"), recursive=True))
    return samples + maps


def bake_hash(scene: Path, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "level.bbk"
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "brushbake", "bake", str(scene), "-o", str(out), "-q", "--allow-leak", *extra],
                              capture_output=True, text=True, env=os.environ.copy())
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            return {"error": proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"], "seconds": seconds}
        return {"sha256": hashlib.sha256(out.read_bytes()).hexdigest(), "seconds": round(seconds, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hulls", default="", help="comma-separated hull presets for a second bake of each scene")
    ap.add_argument("--maps", default=str(REPO / "maps"), help="folder searched for .map files")
    ap.add_argument("--only", nargs="*", default=[], help="scene file names to keep (default: all)")
    args = ap.parse_args()
    result = {}
    for scene in scene_files(Path(args.maps)):
        if args.only and scene.name not in args.only:
            continue
        row = {"default": bake_hash(scene, [])}
        if args.hulls:
            row["hulls"] = bake_hash(scene, [arg for h in args.hulls.split(",") for arg in ("--hull", h)])
        result[scene.name] = row
        print(f"{scene.name}: {json.dumps(row)}", file=sys.stderr)
    print(json.dumps(result, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
