"""PNG export of lightmap pages (8-bit sRGB), for inspection: the standard library only.

A page is linear float RGB (core/compile/light/lightmap.py; 1 = the texture as painted).  Each value is
clamped to [0, 1], encoded with the sRGB transfer function and rounded to 8 bits; rows are written
top first, so the page's row y = 0 (V = 0, Blender's bottom) is the image's last row.  The file is
a plain PNG: signature, IHDR (8-bit RGB, no interlace), one IDAT (zlib level 9, filter 0 on every
row), IEND, each chunk with its CRC-32.  Same page, same bytes.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def srgb8(linear: np.ndarray) -> np.ndarray:
    """Linear values -> 8-bit sRGB (IEC 61966-2-1)."""
    x = np.clip(np.asarray(linear, dtype=np.float64), 0.0, 1.0)
    s = np.where(x <= 0.0031308, 12.92 * x, 1.055 * np.power(x, 1.0 / 2.4) - 0.055)
    return np.round(s * 255.0).astype(np.uint8)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_bytes(rgb8: np.ndarray) -> bytes:
    """(H, W, 3) uint8, row 0 at the top -> PNG file bytes."""
    rgb8 = np.ascontiguousarray(rgb8, dtype=np.uint8)
    h, w = rgb8.shape[:2]
    raw = np.zeros((h, 1 + 3 * w), dtype=np.uint8)  # filter byte 0 (None) on each row
    raw[:, 1:] = rgb8.reshape(h, 3 * w)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return PNG_SIGNATURE + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(raw.tobytes(), 9)) + _chunk(b"IEND", b"")


def page_png(pages: np.ndarray, k: int) -> bytes:
    """Page k of (K, S, S, 3) linear pages as PNG bytes (row y = 0 at the bottom)."""
    return png_bytes(srgb8(pages[k])[::-1])


def read_png_rgb8(data: bytes) -> np.ndarray:
    """The inverse of png_bytes for the files it writes (tests; filter 0 only)."""
    if data[:8] != PNG_SIGNATURE:
        raise ValueError("not a PNG file")
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack_from(">I", data, pos)
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack_from(">I", data, pos + 8 + length)
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            raise ValueError(f"bad CRC in chunk {kind!r}")
        if kind == b"IHDR":
            w, h = struct.unpack_from(">II", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, 1 + 3 * w)
    if raw[:, 0].any():
        raise ValueError("only filter 0 rows are read here")
    return raw[:, 1:].reshape(h, w, 3)


def lightmap_png_files(level, base: str | Path) -> list[tuple[Path, bytes]]:
    """(path, bytes) of every page: BASE.lm0.png, BASE.lm1.png, ..."""
    base = Path(base)
    return [(base.with_suffix(f".lm{k}.png"), page_png(level.lm_pages, k)) for k in range(len(level.lm_pages))]
