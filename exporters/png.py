"""PNG export of lightmap pages (8-bit sRGB), for inspection: the standard library only.

A page is linear float RGB (core/compile/light/lightmap.py; 1 = the texture as painted).  Each value is
multiplied by the exposure, clamped to [0, 1], encoded with the sRGB transfer function and rounded
to 8 bits; rows are written
top first, so the page's row y = 0 (V = 0, Blender's bottom) is the image's last row.  The file is
a plain PNG: signature, IHDR (8-bit RGB, no interlace), one IDAT (zlib level 9, filter 0 on every
row), IEND, each chunk with its CRC-32.  Same page, same bytes.

Exposure: by default (settings.png_exposure 0, `bake --exposure auto`) the one that leaves at most
CLIPPED_SHARE of the lit texels (those with any light) saturated, and never brightens: min(1,
SRGB8_TOP / q), q the brightest channel of the texel that many from the top, SRGB8_TOP the
largest linear value that rounds below 255.  Quake lights, which reach several times white near
the lamp, are thus seen rather than clipped (e1m7: 34% of its lit texels are over 1).  A number
sets it (1: the values as they are).
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


#: the share of lit texels the automatic exposure may saturate
CLIPPED_SHARE = 0.01
#: the largest linear value whose sRGB code rounds below 255 (a hair under it)
SRGB8_TOP = ((254.5 / 255.0 + 0.055) / 1.055) ** 2.4 * (1.0 - 1e-9)


def auto_exposure(pages: np.ndarray, share: float = CLIPPED_SHARE) -> float:
    """The exposure that saturates at most `share` of the lit texels of all pages, at most 1."""
    bright = np.asarray(pages, dtype=np.float64).max(axis=-1).ravel()
    bright = np.sort(bright[bright > 0])
    if not len(bright):
        return 1.0
    q = float(bright[len(bright) - 1 - int(np.floor(share * len(bright)))])
    return min(1.0, SRGB8_TOP / q)


def page_png(pages: np.ndarray, k: int, exposure: float = 1.0) -> bytes:
    """Page k of (K, S, S, 3) linear pages as PNG bytes (row y = 0 at the bottom), times the exposure."""
    return png_bytes(srgb8(np.asarray(pages[k], dtype=np.float64) * exposure)[::-1])


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


def lightmap_png_files(level, base: str | Path, exposure: float = 0.0) -> list[tuple[Path, bytes]]:
    """(path, bytes) of every page: BASE.lm0.png, BASE.lm1.png, ...; `exposure` 0 picks it
    (auto_exposure).  The exposure used and the share of lit texels it saturates go to
    level.stats['png'] for the bake's table."""
    base = Path(base)
    e = auto_exposure(level.lm_pages) if exposure <= 0 else float(exposure)
    bright = np.asarray(level.lm_pages, dtype=np.float64).max(axis=-1)
    lit = bright[bright > 0]
    level.stats["png"] = {"exposure": e, "auto": exposure <= 0,
                          # a texel scaled exactly to the top (within rounding of TOP / q) is not clipped
                          "clipped": float(np.mean(lit * e > SRGB8_TOP * (1 + 1e-9))) if len(lit) else 0.0}
    return [(base.with_suffix(f".lm{k}.png"), page_png(level.lm_pages, k, e)) for k in range(len(level.lm_pages))]
