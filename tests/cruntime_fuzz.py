"""Mutated .bbk files for the C loader (issue 16): the C loader must reject exactly what the Python
reader (exporters/native.py) rejects, with an error code and no crash, hang or read outside the
buffer.

Each case is made from its seed alone (make_case), by one of these mutators:
- 'tree':    tests/hostile_fuzz.forge_tree -- valid-CRC forgeries of the node graphs (shared
             children, doubling chains, cycles, a leaf used as a node, wrong counts, NaN planes,
             chains around the depth limit, orphans, hull tables that disagree, stray solid bits);
- 'section': a known section's payload edited (a byte set to 0, 1, 0x7F, 0x80, 0xFF, or a random
             8-byte value, NaN among them), its record count or size changed, a section dropped,
             duplicated or an unknown one added -- all behind valid checksums;
- 'vis':     the PVS sections of a level baked with visibility edited the same way;
- 'cull':    the culling portals (CQNC, CQPC, CQPL, CQPF, CQPN, CQPV) of that level edited the same way,
             or in ways that keep most of the file meaningful: a vertex moved just within or beyond
             CULL_PORTAL_ON_PLANE, a portal's plane swapped for its flip (still valid) or another, a
             portal joined to itself, a vertex count 2 or 65, the header's cluster count off by one;
- 'header':  header and table fields rewritten behind a valid header checksum;
- 'bytes':   random byte changes (checksums then fail), truncations and random bytes.

tests/core/test_cruntime.py runs a seeded subset under AddressSanitizer and UBSan;
bench/fuzz_cruntime.py runs the long campaign (>= 100,000 cases).
"""

from __future__ import annotations

import struct
import zlib
from functools import lru_cache

import numpy as np

import hostile_fuzz as hf
from brushbake.core.errors import LevelFormatError
from brushbake.exporters import native

KINDS = ("tree", "section", "vis", "cull", "header", "bytes")

#: the sections the C loader reads (runtime_c/brushbake.c KNOWN).  Others (crowd slices CS.., 1.0: CR..,
#: lightmaps LM..) it skips as FORMAT.md's version rules let a reader skip any section it does not
#: know, after its checksum: the base levels here are stripped of them, so that both readers judge
#: the same content (their own checks are fuzzed by their owners' tests).
CULL_TAGS = {t.encode() for t in "CQNC CQPC CQPL CQPF CQPN CQPV".split()}
C_TAGS = {t.encode() for t in ("PLNN PLND NODP NODC LFSD LFCL LFBB LFFF LFFC LFFI FCPL FCFV FCNV FCBR FCFL VERT "
                                "ONNP ONNC ONLS HULB WBND BRSN BRST HULN HULT BVNP BVNC BVLS VSLC VSRO VSRD").split()} | CULL_TAGS


@lru_cache(maxsize=1)
def vis_level_bytes() -> bytes:
    """The small room of hostile_fuzz baked with box hulls, bevels and a PVS."""
    from brushbake.core.compile.pipeline import bake_scene
    from brushbake.core.formats.mapfile import load_map_text
    from brushbake.core.model.hulls import parse_hull

    scene = load_map_text(hf.BASE_MAP_TEXT, "room.map", strict=True)
    scene.hulls = [parse_hull("stand"), parse_hull("crouch")]
    scene.settings.vis = "fast"
    scene.settings.allow_leak = True
    return c_sections_only(native.level_to_bytes(bake_scene(scene)))


def c_sections_only(data: bytes) -> bytes:
    return pack([s for s in split(data) if s[0] in C_TAGS])


def split(data: bytes) -> list:
    header_size, entry_size, count = struct.unpack_from("<III", data, 12)
    out = []
    for i in range(count):
        tag, rsize, rcount, offset, size = struct.unpack_from("<4sIQQQ", data, header_size + i * entry_size)
        out.append([tag, rsize, rcount, data[offset: offset + size]])
    return out


def pack(sections, flags: int = 0) -> bytes:
    """A .bbk container of the sections with valid checksums (FORMAT.md's layout)."""
    table_end = 40 + 40 * len(sections)
    offset, entries, body = -(-table_end // 8) * 8, [], []
    for tag, rsize, rcount, payload in sections:
        entries.append(struct.pack("<4sIQQQII", tag, rsize, rcount, offset, len(payload), zlib.crc32(payload), 0))
        body.append((offset, payload))
        offset = -(-(offset + len(payload)) // 8) * 8
    out = bytearray(offset)
    out[:table_end] = struct.pack("<4sHHIIIIQII", b"BRBK", 1, 0, flags, 40, 40, len(sections), offset, 0, 0) + \
        b"".join(entries)
    struct.pack_into("<I", out, 32, zlib.crc32(bytes(out[:table_end])))
    for start, payload in body:
        out[start: start + len(payload)] = payload
    return bytes(out)


VALUES = [0, 1, 2, 0x7F, 0x80, 0xFF]
SPECIAL_8 = [np.float64(np.nan).tobytes(), np.float64(np.inf).tobytes(), np.float64(1e308).tobytes(),
             np.int64(-1).tobytes(), np.int64(2**31 - 1).tobytes(), bytes(8)]


def _edit_sections(sections: list, rng: np.random.Generator, only=None) -> None:
    choices = [i for i, s in enumerate(sections) if only is None or s[0] in only]
    for _ in range(int(rng.integers(1, 4))):
        i = int(rng.choice(choices))
        tag, rsize, rcount, payload = sections[i]
        what = int(rng.integers(0, 10))
        array = bytearray(payload)
        if what <= 4 and array:
            array[int(rng.integers(0, len(array)))] = int(rng.choice(VALUES))
        elif what <= 6 and len(array) >= 8:
            at = int(rng.integers(0, len(array) - 7)) & ~3
            array[at: at + 8] = SPECIAL_8[int(rng.integers(0, len(SPECIAL_8)))]
        elif what == 7:  # a record more or fewer
            array = array[: max(0, len(array) - rsize)] if rng.random() < 0.5 else array + array[:rsize]
            rcount = len(array) // rsize if rsize else rcount
        elif what == 8:  # a wrong record size (or a count that does not fill the bytes)
            rsize = int(rng.choice([1, 4, 8, 24, rsize + 8]))
            rcount = len(array) // rsize if rng.random() < 0.7 else int(rng.integers(0, 2**40))
        else:  # a random value anywhere in an index array
            if len(array) >= 4:
                at = int(rng.integers(0, len(array) // 4)) * 4
                array[at: at + 4] = struct.pack("<i", int(rng.choice([-2**31, -2, -1, 0, 1, 7, 2**31 - 1])))
        sections[i] = [tag, rsize, rcount, bytes(array)]
    roll = rng.random()
    if roll < 0.1:
        sections.pop(int(rng.integers(0, len(sections))))
    elif roll < 0.15:
        sections.append(list(sections[int(rng.integers(0, len(sections)))]))  # a repeated tag
    elif roll < 0.25:
        sections.insert(int(rng.integers(0, len(sections) + 1)), [b"ZZ%02d" % int(rng.integers(0, 99)), 1, 5,
                                                                   b"extra"])  # unknown: skipped


def _edit_cull(sections: list, rng: np.random.Generator) -> None:
    """One meaningful edit of the culling portals (most stay loadable or fail one rule)."""
    at = {s[0]: i for i, s in enumerate(sections)}
    arrays = {t: np.frombuffer(sections[at[t]][3], dtype="<f8" if t in (b"CQPV", b"PLNN", b"PLND") else "<i4").copy()
              for t in (b"CQNC", b"CQPC", b"CQPL", b"CQPF", b"CQPN", b"CQPV")}
    q = len(arrays[b"CQPL"])
    k = int(rng.integers(0, max(q, 1)))
    what = int(rng.integers(0, 7))
    if what == 0 and len(arrays[b"CQPV"]):  # a vertex coordinate moved within or beyond 1e-4 m
        arrays[b"CQPV"][int(rng.integers(0, len(arrays[b"CQPV"])))] += float(rng.choice([3e-5, -3e-5, 3e-4, 0.5]))
    elif what == 1 and q:  # its flip (the same plane: valid) or another plane
        plane = int(arrays[b"CQPL"][k])
        arrays[b"CQPL"][k] = plane ^ 1 if rng.random() < 0.5 else int(rng.integers(0, 2 * 40))
    elif what == 2 and q:  # joined to itself
        arrays[b"CQPC"][2 * k + 1] = arrays[b"CQPC"][2 * k]
    elif what == 3 and q:  # too few or too many vertices
        arrays[b"CQPN"][k] = int(rng.choice([2, 65, arrays[b"CQPN"][k] + 1]))
    elif what == 4:
        arrays[b"CQNC"][0] += int(rng.choice([-1, 1]))
    elif what == 5 and q:  # the two clusters swapped (valid) or one out of range
        pair = arrays[b"CQPC"][2 * k: 2 * k + 2].copy()
        arrays[b"CQPC"][2 * k: 2 * k + 2] = pair[::-1] if rng.random() < 0.5 else (pair[0], int(arrays[b"CQNC"][0]))
    else:  # a section dropped
        sections.pop(at[sorted(arrays)[int(rng.integers(0, 6))]])
        return
    for tag, array in arrays.items():
        sections[at[tag]][3] = array.tobytes()


def make_case(seed: int) -> tuple[str, bytes]:
    """(kind, bytes) of case `seed`."""
    rng = np.random.default_rng([16, seed])
    kind = KINDS[seed % len(KINDS)]
    if kind == "tree":
        _, fields = hf.forge_tree(rng)
        try:
            return kind, c_sections_only(hf.pack_unchecked(fields))
        except Exception:  # a forgery the packer cannot even encode (names): a plain room
            return kind, c_sections_only(hf.pack_unchecked(hf.base_fields()))
    base = vis_level_bytes() if kind == "vis" or rng.random() < 0.5 else \
        c_sections_only(hf.pack_unchecked(hf.base_fields()))
    if kind == "cull":
        sections = split(vis_level_bytes())
        if rng.random() < 0.5:
            _edit_cull(sections, rng)
        else:
            _edit_sections(sections, rng, only=CULL_TAGS)
        return kind, pack(sections)
    if kind in ("section", "vis"):
        sections = split(base)
        _edit_sections(sections, rng, only={b"VSLC", b"VSRO", b"VSRD"} if kind == "vis" else None)
        return kind, pack(sections, flags=int(rng.choice([0, 0, 0, 0x10000, 1])) if rng.random() < 0.1 else 0)
    if kind == "header":
        out = bytearray(base)
        table_end = 40 + 40 * struct.unpack_from("<I", out, 20)[0]
        for _ in range(int(rng.integers(1, 4))):
            at = int(rng.integers(4, table_end - 8))
            if 32 <= at < 36:
                continue
            fmt = str(rng.choice(["<B", "<H", "<I", "<Q"]))
            struct.pack_into(fmt, out, at, int(rng.integers(0, 2 ** min(63, 8 * struct.calcsize(fmt)))))
        struct.pack_into("<I", out, 32, 0)
        new_end = 40 + 40 * struct.unpack_from("<I", out, 20)[0]
        struct.pack_into("<I", out, 32, zlib.crc32(bytes(out[: min(new_end, len(out))])))
        return kind, bytes(out)
    roll = rng.random()
    if roll < 0.4:
        out = bytearray(base)
        for _ in range(int(rng.integers(1, 6))):
            out[int(rng.integers(0, len(out)))] ^= int(rng.integers(1, 256))
        return kind, bytes(out)
    if roll < 0.8:
        return kind, base[: int(rng.integers(0, len(base)))]
    return kind, (b"BRBK\x01\x00" if rng.random() < 0.5 else b"") + rng.bytes(int(rng.integers(0, 600)))


def python_accepts(data: bytes) -> bool:
    try:
        native.level_from_bytes(data, "case")
    except LevelFormatError:
        return False
    return True


def write_cases(path, cases) -> None:
    with open(path, "wb") as f:
        for data in cases:
            f.write(struct.pack("<Q", len(data)))
            f.write(data)
