"""Render the README picture: horizontal slices through a compiled level, one colour per leaf.

Empty leaves get a pastel colour each, solid leaves are dark, so the picture shows the BSP's
partition of space directly.  Needs only NumPy (the PNG is written with zlib).

    python docs/make_picture.py SCENE [--heights 0.5,3.5] [--hulls point,stand] [-o docs/images/slices.png]
"""

from __future__ import annotations

import argparse
import struct
import sys
import zlib
from pathlib import Path

import numpy as np


def write_png(path: Path, rgb: np.ndarray) -> None:
    """Write an (H, W, 3) uint8 image as a PNG (filter 0 on every row)."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png)


def leaf_colours(n: int, solid: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(7)
    colours = (150 + 105 * rng.random((n, 3))).astype(np.uint8)
    colours[solid] = (40, 44, 52)
    return colours


def render_slice(level, z: float, lo: np.ndarray, hi: np.ndarray, width: int, hull: int = 0) -> np.ndarray:
    from brushbake.core.runtime.query import point_leaves

    tree = level.collision_tree(hull)
    span = hi - lo
    height = max(1, int(round(width * span[1] / span[0])))
    xs = lo[0] + (np.arange(width) + 0.5) * span[0] / width
    ys = hi[1] - (np.arange(height) + 0.5) * span[1] / height  # north up
    gx, gy = np.meshgrid(xs, ys)
    pts = np.stack([gx.ravel(), gy.ravel(), np.full(gx.size, z)], axis=1)
    leaves = point_leaves(tree, pts).reshape(height, width)
    solid = (tree.leaf_solid & (1 << hull)) != 0
    img = leaf_colours(tree.num_leaves, solid)[leaves]
    edge = np.zeros(leaves.shape, bool)  # leaf boundaries drawn as thin dark lines
    edge[:, 1:] |= leaves[:, 1:] != leaves[:, :-1]
    edge[1:, :] |= leaves[1:, :] != leaves[:-1, :]
    img[edge & ~solid[leaves]] = (90, 90, 100)
    return img


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scene")
    ap.add_argument("--heights", default="", help="comma-separated slice heights in metres")
    ap.add_argument("--width", type=int, default=640, help="pixels per slice")
    ap.add_argument("--hulls", default="point", help="comma-separated hull names, one slice row each")
    ap.add_argument("-o", "--output", default=str(Path(__file__).parent / "images" / "slices.png"))
    args = ap.parse_args(argv)

    from brushbake.core.compile.pipeline import compile_scene
    from brushbake.core.formats.loaders import load_scene

    level = compile_scene(load_scene(args.scene))
    lo, hi = level.world_bounds[0].copy(), level.world_bounds[1].copy()
    heights = [float(h) for h in args.heights.split(",") if h] or [lo[2] + 0.3 * (hi[2] - lo[2]), lo[2] + 0.6 * (hi[2] - lo[2])]
    hulls = [level.hull_names.index(h) for h in args.hulls.split(",")]
    slices = [render_slice(level, z, lo, hi, args.width, h) for z in heights for h in hulls]
    gap = np.full((slices[0].shape[0], 12, 3), 255, np.uint8)
    row = slices[0]
    for s in slices[1:]:
        row = np.concatenate([row, gap, s], axis=1)
    write_png(Path(args.output), row)
    print(f"wrote {args.output}: {len(slices)} slices at z = {', '.join(f'{h:.2f}' for h in heights)} m", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
