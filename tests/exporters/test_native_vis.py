"""The visibility sections of the .bbk file (VSLC, VSRO, VSRD): round trips, all three or none, and
damaged or fuzzed rows give only LevelFormatError."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from level_builders import assert_levels_equal, box_level, build_bbk, random_level, split_bbk, with_random_vis

from brushbake.core.errors import LevelFormatError
from brushbake.core.runtime.pvs_rows import compress_row, compress_rows, decompress_rows, pack_bits, unpack_bits
from brushbake.exporters import level_from_bytes, level_to_bytes
from brushbake.exporters.json_dump import level_from_json, level_to_json

VIS_TAGS = [b"VSLC", b"VSRO", b"VSRD"]


def test_rle_is_quakes():
    assert compress_row(np.array([0, 0, 0, 5, 0, 7, 7], np.uint8)) == bytes([0, 3, 5, 0, 1, 7, 7])
    assert compress_row(np.zeros(600, np.uint8)) == bytes([0, 255, 0, 255, 0, 90])
    offsets, data = compress_rows(np.array([[1, 0], [1, 0], [0, 2]], np.uint8))
    assert offsets.tolist() == [0, 0, 3] and bytes(data) == bytes([1, 0, 1, 0, 1, 2])  # shared rows


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.integers(0, 700), st.sampled_from([0.0, 0.01, 0.1, 0.5, 1.0]), st.integers(0, 2**32 - 1))
def test_rows_coded_at_once_as_row_by_row(rows, width, density, seed):
    """compress_rows codes its distinct rows all at once; each is what compress_row's byte loop
    makes of it (zero runs longer than 255 included), identical rows sharing their bytes."""
    rng = np.random.default_rng(seed)
    matrix = ((rng.random((rows, width)) < density) * rng.integers(1, 256, (rows, width))).astype(np.uint8)
    if rows > 2:
        matrix[rows - 1] = matrix[0]
    offsets, data = compress_rows(matrix)
    first, chunks, size = {}, [], 0
    for r in matrix:
        if r.tobytes() not in first:
            first[r.tobytes()] = size
            chunks.append(compress_row(r))
            size += len(chunks[-1])
    assert offsets.tolist() == [first[r.tobytes()] for r in matrix]
    assert bytes(data) == b"".join(chunks)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.floats(0, 1), st.integers(0, 2**32 - 1))
def test_rows_round_trip(clusters, density, seed):
    see = np.random.default_rng(seed).random((clusters, clusters)) < density
    offsets, data = compress_rows(pack_bits(see))
    assert (unpack_bits(decompress_rows(offsets, data, clusters), clusters) == see).all()


@pytest.mark.parametrize("seed", range(6))
def test_vis_sections_round_trip_binary_and_json(seed):
    level = with_random_vis(random_level(seed), seed)
    data = level_to_bytes(level)
    tags = [t for t, *_ in split_bbk(data)]
    assert tags[-3:] == VIS_TAGS
    assert_levels_equal(level, level_from_bytes(data))
    assert_levels_equal(level, level_from_json(level_to_json(level)))
    assert level_to_bytes(level_from_bytes(data)) == data


def test_a_level_without_vis_keeps_its_bytes():
    assert not any(t in VIS_TAGS for t, *_ in split_bbk(level_to_bytes(box_level())))


def test_all_three_or_none():
    sections = split_bbk(level_to_bytes(with_random_vis(random_level(3), 3)))
    for tag in VIS_TAGS:
        with pytest.raises(LevelFormatError, match="visibility needs all"):
            level_from_bytes(build_bbk([s for s in sections if s[0] != tag]))
    plain = [s for s in sections if s[0] not in VIS_TAGS]
    assert not level_from_bytes(build_bbk(plain)).has_vis


def _replace(sections, tag, payload, rsize=None):
    out = []
    for t, s, c, p in sections:
        if t == tag:
            s = s if rsize is None else rsize
            c, p = len(payload) // s, payload
        out.append((t, s, c, p))
    return out


@pytest.mark.parametrize("rows,words", [
    (bytes([0]), "decode"),  # a zero without its count
    (bytes([0, 0]), "count 0"),
    (bytes([255] * 40), "visibility row"),  # bits beyond C, or too long
])
def test_bad_rows_are_rejected(rows, words):
    level = with_random_vis(random_level(1), 1)
    level.vis_row_offset[:] = 0
    sections = split_bbk(level_to_bytes(level))
    with pytest.raises(LevelFormatError, match=words):
        level_from_bytes(build_bbk(_replace(sections, b"VSRD", rows)))


def test_bad_clusters_are_rejected():
    level = with_random_vis(random_level(2), 2)
    sections = split_bbk(level_to_bytes(level))
    bad = level.vis_leaf_cluster.copy()
    bad[0] = len(level.vis_row_offset)
    with pytest.raises(LevelFormatError, match="vis_leaf_cluster"):
        level_from_bytes(build_bbk(_replace(sections, b"VSLC", bad.astype("<i4").tobytes())))
    with pytest.raises(LevelFormatError, match="vis_leaf_cluster"):
        level_from_bytes(build_bbk(_replace(sections, b"VSLC", bad[:-1].astype("<i4").tobytes())))
    offsets = level.vis_row_offset.copy()
    offsets[-1] = 10**6
    with pytest.raises(LevelFormatError, match="visibility row"):
        level_from_bytes(build_bbk(_replace(sections, b"VSRO", offsets.astype("<u4").tobytes())))


def test_bits_beyond_the_last_cluster_are_rejected():
    level = with_random_vis(random_level(4), 4)
    clusters = len(level.vis_row_offset)
    rows = pack_bits(np.ones((clusters, clusters), bool))
    rows[:, -1] = 0xFF
    if clusters % 8 == 0:
        pytest.skip("no spare bits")
    level.vis_row_offset, level.vis_rows = compress_rows(rows)
    with pytest.raises(LevelFormatError, match="beyond"):
        level_to_bytes(level)


FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.integers(0, 2**32 - 1), st.data())
def test_fuzz_vis_payloads_with_valid_checksums(seed, data):
    sections = split_bbk(level_to_bytes(with_random_vis(random_level(seed % 50), seed)))
    for _ in range(data.draw(st.integers(1, 3))):
        i = len(sections) - 1 - data.draw(st.integers(0, 2))
        tag, rsize, rcount, payload = sections[i]
        if data.draw(st.booleans()):
            payload = data.draw(st.binary(max_size=200))
            rsize = data.draw(st.sampled_from([rsize, 1, 4]))
            rcount = len(payload) // rsize if len(payload) % rsize == 0 else data.draw(st.integers(0, 2**40))
        else:
            array = bytearray(payload)
            for _ in range(data.draw(st.integers(1, 3))):
                if array:
                    at = data.draw(st.integers(0, len(array) - 1))
                    array[at] = data.draw(st.sampled_from([0, 1, 2, 0x7F, 0x80, 0xFF]))
            payload = bytes(array)
        sections[i] = (tag, rsize, rcount, payload)
    try:
        level = level_from_bytes(build_bbk(sections))
    except LevelFormatError:
        return
    if level.has_vis:  # whatever passed the checks must answer queries
        from brushbake.core.runtime.pvs import Visibility

        Visibility(level).matrix()


def test_every_byte_flip_of_the_vis_sections_is_detected():
    data = level_to_bytes(with_random_vis(random_level(5), 5))
    start = len(level_to_bytes(random_level(5))) - 8  # the vis payloads lie near the end
    for position in range(max(0, start), len(data)):
        damaged = bytearray(data)
        damaged[position] ^= 0x81
        with pytest.raises(LevelFormatError):
            level_from_bytes(bytes(damaged))
