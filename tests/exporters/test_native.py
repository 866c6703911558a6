"""The .bbk file: round trips, determinism, layout as documented, and a reader that rejects every
damaged file with LevelFormatError."""

from __future__ import annotations

import re
import struct
import zlib
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pytest
from level_builders import (
    assert_levels_equal,
    beveled_level,
    box_level,
    build_bbk,
    empty_level,
    random_level,
    replace_section,
    split_bbk,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushbake.core.errors import LevelFormatError
from brushbake.exporters import level_from_bytes, level_to_bytes, read_level, write_level

TAGS = [
    b"PLNN", b"PLND", b"NODP", b"NODC", b"LFSD", b"LFCL", b"LFBB", b"LFFF", b"LFFC", b"LFFI",
    b"FCPL", b"FCFV", b"FCNV", b"FCBR", b"FCFL", b"VERT", b"ONNP", b"ONNC", b"ONLS", b"HULB", b"WBND",
    b"BRSN", b"BRST", b"HULN", b"HULT",
]  # fmt: skip


def reject(data: bytes, *words: str) -> LevelFormatError:
    with pytest.raises(LevelFormatError) as info:
        level_from_bytes(data, "test.bbk")
    message = str(info.value)
    assert message.startswith("test.bbk: ")
    for word in words:
        assert word in message, message
    return info.value


# --------------------------------------------------------------------------------------------
# Round trips and determinism


@pytest.mark.parametrize("make", [empty_level, box_level])
def test_round_trip_every_array(make, tmp_path):
    level = make()
    path = tmp_path / "level.bbk"
    write_level(level, path)
    back = read_level(path)
    assert_levels_equal(level, back)
    assert back.stats == {}
    assert back.root == level.root and back.depth() == level.depth()
    assert back.plane_normals.flags.writeable and back.plane_normals.dtype == np.float64


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_round_trip_random_levels(seed):
    level = random_level(seed)
    data = level_to_bytes(level)
    assert_levels_equal(level, level_from_bytes(data))
    assert level_to_bytes(level_from_bytes(data)) == data


def test_same_level_same_bytes(tmp_path, box):
    write_level(box, tmp_path / "a.bbk")
    write_level(box_level(), tmp_path / "b.bbk")
    assert (tmp_path / "a.bbk").read_bytes() == (tmp_path / "b.bbk").read_bytes()


def test_bytes_do_not_depend_on_input_dtypes_or_stats(box):
    data = level_to_bytes(box)
    box.node_plane = box.node_plane.astype(np.int64)
    box.node_children = box.node_children.astype(">i8")
    box.vertices = box.vertices.astype(">f8")
    box.leaf_solid = box.leaf_solid.astype(np.int64)
    box.stats = {"nodes": 6, "seconds": 0.25}
    assert level_to_bytes(box) == data


def test_empty_arrays_of_any_shape_are_accepted(empty):
    data = level_to_bytes(empty)
    empty.node_children = np.zeros(0)  # float, 1-D: what np.zeros(0) gives
    empty.vertices = []
    assert level_to_bytes(empty) == data


# --------------------------------------------------------------------------------------------
# The layout FORMAT.md describes


def test_layout_matches_format_md(box):
    data = level_to_bytes(box)
    magic, major, minor, flags, header_size, entry_size, count, size, crc, reserved = struct.unpack_from(
        "<4sHHIIIIQII", data
    )
    assert (magic, major, minor, flags, header_size, entry_size, reserved) == (b"BRBK", 1, 1, 0, 40, 40, 0)
    assert size == len(data) and size % 8 == 0
    assert count == len(TAGS)
    table_end = 40 + 40 * count
    assert crc == zlib.crc32(data[:32] + bytes(4) + data[36:table_end])
    sections = split_bbk(data)
    assert [s[0] for s in sections] == TAGS
    for i, (tag, rsize, rcount, payload) in enumerate(sections):
        offset = struct.unpack_from("<Q", data, 40 + 40 * i + 16)[0]
        assert offset % 8 == 0 and rsize * rcount == len(payload)
        assert struct.unpack_from("<I", data, 40 + 40 * i + 32)[0] == zlib.crc32(payload)
    # an independent writer following FORMAT.md makes the very same bytes
    assert build_bbk(sections) == data


def test_section_contents(box):
    s = {tag: (rsize, rcount, payload) for tag, rsize, rcount, payload in split_bbk(level_to_bytes(box))}
    assert s[b"PLNN"][:2] == (24, 12)
    np.testing.assert_array_equal(np.frombuffer(s[b"PLNN"][2], "<f8").reshape(-1, 3), box.plane_normals)
    assert s[b"NODC"][:2] == (8, 6)
    assert np.frombuffer(s[b"NODC"][2], "<i4").tolist() == box.node_children.ravel().tolist()
    assert s[b"LFBB"][:2] == (48, 7) and s[b"WBND"][:2] == (48, 1) and s[b"HULB"][:2] == (48, 2)
    assert np.frombuffer(s[b"LFSD"][2], "<u4").tolist() == [0, 0, 0, 0, 0, 0, 3]
    index = np.frombuffer(s[b"HULN"][2], "<u4").reshape(-1, 2).tolist()
    assert index == [[0, 5], [5, 6]] and s[b"HULT"][2] == b"pointplayer"
    assert s[b"BRST"] == (1, len(box.brush_names[0].encode()), box.brush_names[0].encode())


# --------------------------------------------------------------------------------------------
# Forward compatibility


def test_unknown_sections_are_skipped(box):
    sections = split_bbk(level_to_bytes(box))
    extra = [(b"ZZZ9", 16, 2, bytes(range(32))), (b"PVS0", 1, 3, b"abc")]
    data = build_bbk(extra[:1] + sections + extra[1:], header_extra=bytes(8), entry_extra=bytes(16), gap=64)
    assert_levels_equal(box, level_from_bytes(data))


def test_newer_minor_version_and_optional_flags_are_read(box):
    data = build_bbk(split_bbk(level_to_bytes(box)), minor=7, flags=1 << 16)
    assert_levels_equal(box, level_from_bytes(data))


def test_beveled_tree_sections_round_trip_and_come_all_three_or_none():
    level = beveled_level()
    data = level_to_bytes(level)
    sections = split_bbk(data)
    assert [t for t, *_ in sections][-3:] == [b"BVNP", b"BVNC", b"BVLS"] and len(sections) == len(TAGS) + 3
    assert_levels_equal(level, level_from_bytes(data))
    for tag in (b"BVNP", b"BVNC", b"BVLS"):
        reject(build_bbk([s for s in sections if s[0] != tag]), f"no {tag.decode()}", "beveled tree")
    plain = [s for s in sections if s[0] not in (b"BVNP", b"BVNC", b"BVLS")]
    assert not level_from_bytes(build_bbk(plain)).has_bevel


def test_beveled_tree_keeps_only_the_point_bit(box):
    """box_level's solid leaf carries the box hull's bit too; BVLS may hold bit 0 only."""
    from brushbake.core.compile.trees.bevel import add_bevels

    add_bevels(box)
    assert box.leaf_solid.max() == 3 and box.bevel_leaf_solid.max() == 1
    assert_levels_equal(box, level_from_bytes(level_to_bytes(box)))


def test_unknown_required_flag_is_rejected(box):
    reject(build_bbk(split_bbk(level_to_bytes(box)), flags=1), "flags")


def test_newer_major_version_is_rejected(box):
    reject(build_bbk(split_bbk(level_to_bytes(box)), major=2, minor=0), "version 2.0", "rebake")


# --------------------------------------------------------------------------------------------
# The container checks


def test_wrong_magic():
    reject(b"PK\x03\x04" + bytes(100), "not a brushbake level")
    reject(b"", "truncated")


def test_truncated_and_extended(box):
    data = level_to_bytes(box)
    reject(data[:-8], "truncated", "Rebake")
    reject(data + bytes(8), "extra bytes")
    reject(data[:20], "truncated")


def test_header_and_section_crc(box):
    data = bytearray(level_to_bytes(box))
    data[45] ^= 1  # record size of the first table entry
    reject(bytes(data), "header checksum")
    data = bytearray(level_to_bytes(box))
    data[-60] ^= 0x10
    reject(bytes(data), "checksum of section")


def test_sections_out_of_range_or_overlapping(box):
    sections = split_bbk(level_to_bytes(box))
    data = bytearray(build_bbk(sections))
    size = len(data)

    def with_entry(i, field_offset, fmt, value, fix_crc=False):
        out = bytearray(data)
        struct.pack_into(fmt, out, 40 + 40 * i + field_offset, value)
        if fix_crc:  # the section checksum over the bytes the entry now points at
            offset, size = struct.unpack_from("<QQ", out, 40 + 40 * i + 16)
            struct.pack_into("<I", out, 40 + 40 * i + 32, zlib.crc32(bytes(out[offset : offset + size])))
        crc = zlib.crc32(bytes(out[:32]) + bytes(4) + bytes(out[36 : 40 + 40 * len(sections)]))
        struct.pack_into("<I", out, 32, crc)
        return bytes(out)

    reject(with_entry(0, 16, "<Q", size), "outside the data area")
    reject(with_entry(0, 16, "<Q", 8), "outside the data area")  # inside the table
    reject(with_entry(0, 16, "<Q", 2**64 - 8), "outside the data area")
    reject(with_entry(0, 16, "<Q", 40 + 40 * len(sections) + 4), "outside the data area")  # misaligned
    first = struct.unpack_from("<Q", data, 40 + 16)[0]
    reject(with_entry(1, 16, "<Q", first, fix_crc=True), "overlaps")
    reject(with_entry(1, 16, "<Q", first + 8, fix_crc=True), "overlaps")
    reject(with_entry(0, 8, "<Q", 11), "records of")
    reject(with_entry(0, 4, "<I", 23), "records of")
    reject(with_entry(0, 0, "<4s", b"PLND"), "repeated tag")
    reject(with_entry(0, 0, "<4s", b"pl\x00n"), "bad or repeated tag")


def test_nonzero_padding(box):
    data = build_bbk(split_bbk(level_to_bytes(box)), gap=16)
    first = struct.unpack_from("<Q", data, 40 + 16)[0]
    bad = bytearray(data)
    bad[first - 3] = 7
    reject(bytes(bad), "padding")


def test_missing_and_resized_known_sections(box):
    sections = split_bbk(level_to_bytes(box))
    reject(build_bbk([s for s in sections if s[0] != b"LFFI"]), "required section LFFI")
    reject(build_bbk([s for s in sections if s[0] != b"HULT"]), "required section HULT")
    reject(build_bbk(replace_section(sections, b"PLNN", bytes(12 * 16), rsize=16)), "PLNN", "expected 24")
    reject(build_bbk(replace_section(sections, b"WBND", bytes(96))), "WBND", "expected 1")


# --------------------------------------------------------------------------------------------
# Semantic checks (files a buggy or hostile writer could make, with valid checksums)


def patched(level, tag: bytes, array, dtype) -> bytes:
    payload = np.ascontiguousarray(array, dtype=dtype).tobytes()
    return build_bbk(replace_section(split_bbk(level_to_bytes(level)), tag, payload))


SEMANTIC_CASES = [
    ("NODP", lambda b: [0, 3, 4, 7, 8, 12], "<i4", "node_plane[5] is 12"),
    ("NODP", lambda b: [0, 3, 4, -1, 8, 11], "<i4", "node_plane[3] is -1"),
    ("NODC", lambda b: b.node_children.ravel().tolist()[:-2] + [5, -7], "<i4", "node 5's front child is 5"),
    ("NODC", lambda b: b.node_children.ravel().tolist()[:-2] + [-6, 1], "<i4", "node 5's back child is 1"),
    ("NODC", lambda b: b.node_children.ravel().tolist()[:-2] + [-6, -8], "<i4", "node 5's back child is -8"),
    ("NODC", lambda b: [6] + b.node_children.ravel().tolist()[1:], "<i4", "node 0's front child is 6"),
    ("ONNP", lambda b: [0, 12], "<i4", "onion_node_plane[1] is 12"),
    ("ONNC", lambda b: [-1, 0, -2, -3], "<i4", "onion node 0's back child is 0"),
    ("ONNC", lambda b: [-1, 1, -2, -4], "<i4", "onion node 1's back child is -4"),
    ("ONNC", lambda b: [-1, 1], "<i4", "onion_node_children has 1 entries but onion_node_plane has 2"),
    ("ONLS", lambda b: [0, 4, 3], "<u4", "onion leaf 1's solid bits 0x4"),
    ("LFFF", lambda b: [0, 1, 2, 3, 4, 5, 7], "<i4", "leaf 6 uses leaf_faces [7, +0)"),
    ("LFFC", lambda b: [1, 1, 1, 1, 1, 2, 0], "<i4", "leaf 5 uses leaf_faces [5, +2)"),
    ("LFFC", lambda b: [1, 1, 1, -1, 1, 1, 0], "<i4", "leaf 3"),
    ("LFFI", lambda b: [0, 1, 2, 3, 4, 6], "<i4", "leaf_faces[5] is 6"),
    ("LFCL", lambda b: [0, 1, 2, 3, 4, 5, 7], "<i4", "leaf_cluster[6] is 7"),
    ("LFSD", lambda b: [0, 0, 0, 0, 0, 0, 7], "<u4", "solid bits 0x7"),
    ("FCFV", lambda b: [0, 4, 8, 12, 16, 21], "<i4", "face 5 uses vertices [21, +4)"),
    ("FCNV", lambda b: [4, 4, 2, 4, 4, 4], "<i4", "face 2"),
    ("FCPL", lambda b: [0, 3, 4, 7, 8, 99], "<i4", "face_plane[5] is 99"),
    ("FCBR", lambda b: [0, 0, 1, 0, 0, 0], "<i4", "face_brush[2] is 1"),
    ("PLNN", lambda b: b.plane_normals * 1.00001, "<f8", "normal has length"),
    ("PLNN", lambda b: np.where(b.plane_normals == 1, np.nan, b.plane_normals), "<f8", "NaN"),
    ("PLND", lambda b: b.plane_dists + 1.0, "<f8", "not exact flips"),
    ("PLND", lambda b: b.plane_dists[:-1], "<f8", "plane_dists has 11 entries but plane_normals has 12"),
    ("VERT", lambda b: np.full((24, 3), np.inf), "<f8", "vertices holds NaN or infinite"),
    ("LFBB", lambda b: b.leaf_bounds[:6], "<f8", "leaf_bounds has 6 entries"),
    ("HULB", lambda b: b.hull_boxes[::-1, ::-1], "<f8", "mins exceed its maxs"),
    ("WBND", lambda b: b.world_bounds[::-1], "<f8", "mins exceed its maxs"),
    ("FCFL", lambda b: [0] * 7, "<u4", "face_flags has 7 entries but face_plane has 6"),
    ("HULN", lambda b: [[0, 5], [5, 7]], "<u4", "hull_names[1] lies outside"),
    ("HULN", lambda b: [[0, len("".join(b.hull_names).encode())], [0, 1]], "<u4", "hull_names[1] brings the names to"),
    ("HULT", lambda b: np.frombuffer(b"point\xffplaye", np.uint8), "u1", "hull_names[1] is not valid UTF-8"),
]


@pytest.mark.parametrize("tag, make, dtype, words", SEMANTIC_CASES, ids=[c[3] for c in SEMANTIC_CASES])
def test_semantic_checks(box, tag, make, dtype, words):
    reject(patched(box, tag.encode(), make(box), dtype), words, "Rebake")


def test_odd_plane_count_and_no_leaves(empty):
    data = patched(empty, b"PLNN", [[1.0, 0, 0]], "<f8")
    data = build_bbk(replace_section(split_bbk(data), b"PLND", np.zeros(1).tobytes()))
    reject(data, "planes come in pairs")
    sections = split_bbk(level_to_bytes(empty))
    for tag in (b"LFSD", b"LFCL", b"LFFF", b"LFFC", b"LFBB"):
        sections = replace_section(sections, tag, b"", rcount=0)
    reject(build_bbk(sections), "no leaves")


def test_too_many_hulls(box):
    sections = split_bbk(level_to_bytes(box))
    sections = replace_section(sections, b"HULB", np.zeros((33, 2, 3)).tobytes())
    sections = replace_section(sections, b"HULN", np.zeros((33, 2), "<u4").tobytes())
    reject(build_bbk(sections), "33 hulls")


# --------------------------------------------------------------------------------------------
# The writer refuses inconsistent levels


def test_writer_rejects_inconsistent_levels(box, tmp_path):
    box.node_children = box.node_children.copy()
    box.node_children[2, 0] = 1  # a child before its parent: a cycle
    with pytest.raises(LevelFormatError, match="bug in the compiler"):
        write_level(box, tmp_path / "x.bbk")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("node_plane", np.array([0, 3, 4, 7, 8, 2**40]), "outside the range"),
        ("node_plane", np.array([0, 3, 4, 7, 8, 1.5]), "non-integer"),
        ("leaf_solid", -np.ones(7, int), "outside the range"),
        ("vertices", np.zeros((24, 2)), "shape"),
        ("world_bounds", np.zeros(6), "shape"),
        ("node_plane", np.array(["a"] * 6), "element type"),
        ("hull_names", "point", "list of strings"),
        ("brush_names", ["\ud800"], "not valid Unicode"),
    ],
)
def test_writer_rejects_bad_arrays(box, field, value, words):
    setattr(box, field, value)
    with pytest.raises(LevelFormatError, match=words):
        level_to_bytes(box)


# --------------------------------------------------------------------------------------------
# Damage anywhere gives LevelFormatError, never another exception


@pytest.mark.parametrize("make", [empty_level, box_level])
def test_every_single_byte_flip_is_detected(make):
    data = level_to_bytes(make())
    for position in range(len(data)):
        for mask in (0x01, 0x80, 0xFF):
            damaged = bytearray(data)
            damaged[position] ^= mask
            with pytest.raises(LevelFormatError):
                level_from_bytes(bytes(damaged))


@pytest.mark.parametrize("make", [empty_level, box_level])
def test_every_truncation_is_detected(make):
    data = level_to_bytes(make())
    for length in range(len(data)):
        with pytest.raises(LevelFormatError):
            level_from_bytes(data[:length])


def read_or_reject(data: bytes) -> None:
    try:
        level_from_bytes(data)
    except LevelFormatError:
        pass


FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.binary(max_size=3000))
def test_fuzz_random_bytes(data):
    read_or_reject(data)
    read_or_reject(b"BRBK\x01\x00" + data)


@FUZZ
@given(st.integers(0, 2**32 - 1), st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), max_size=8))
def test_fuzz_byte_changes(seed, changes):
    original = level_to_bytes(random_level(seed))
    data = bytearray(original)
    for position, mask in changes:
        data[position % len(data)] ^= mask
    with pytest.raises(LevelFormatError) if data != original else nullcontext():
        level_from_bytes(bytes(data))


@FUZZ
@given(st.integers(0, 2**32 - 1), st.data())
def test_fuzz_section_payloads_with_valid_checksums(seed, data):
    """Past the checksums: random payloads, record sizes and counts in known sections must still
    only ever give LevelFormatError (or a level that passes every check)."""
    sections = split_bbk(level_to_bytes(random_level(seed)))
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(sections) - 1))
        tag, rsize, rcount, payload = sections[i]
        if data.draw(st.booleans()):
            payload = data.draw(st.binary(max_size=400))
            rsize = data.draw(st.sampled_from([rsize, 1, 8]))
            rcount = len(payload) // rsize if len(payload) % rsize == 0 else data.draw(st.integers(0, 2**40))
        else:  # small integer edits keep the file plausible and reach the semantic checks
            array = bytearray(payload)
            if array:
                at = data.draw(st.integers(0, len(array) - 1))
                array[at] = data.draw(st.sampled_from([0, 1, 2, 0x7F, 0x80, 0xFF]))
            payload = bytes(array)
        sections[i] = (tag, rsize, rcount, payload)
    if data.draw(st.booleans()):
        sections.pop(data.draw(st.integers(0, len(sections) - 1)))
    read_or_reject(build_bbk(sections))


@FUZZ
@given(st.integers(0, 2**32 - 1), st.data())
def test_fuzz_header_and_table_with_valid_header_checksum(seed, data):
    """Random header and table fields (sizes, counts, offsets) behind a correct header checksum."""
    out = bytearray(level_to_bytes(random_level(seed)))
    table_end = 40 + 40 * struct.unpack_from("<I", out, 20)[0]
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(4, table_end - 8))
        if 32 <= at < 36:
            continue
        fmt = data.draw(st.sampled_from(["<B", "<H", "<I", "<Q"]))
        value = data.draw(st.integers(0, 2 ** (8 * struct.calcsize(fmt)) - 1))
        struct.pack_into(fmt, out, at, value)
    struct.pack_into("<I", out, 32, 0)
    new_end = 40 + 40 * struct.unpack_from("<I", out, 20)[0]
    struct.pack_into("<I", out, 32, zlib.crc32(bytes(out[: min(new_end, len(out))])))
    read_or_reject(bytes(out))


def test_format_md_lists_every_section_with_its_record_size(box):
    """docs/FORMAT.md's section table and the writer agree on tags and record sizes."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "FORMAT.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([A-Z0-9]{4})` \| (\d+) +\|", doc, re.M))
    assert {tag.decode(): str(rsize) for tag, rsize, _, _ in split_bbk(level_to_bytes(box))} == rows
