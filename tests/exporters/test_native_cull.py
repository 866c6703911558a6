"""The culling portal sections of the .bbk file (CQNC, CQPC, CQPL, CQPF, CQPN, CQPV: the camera
queries' portal walk): round trips in binary and JSON, all six or none and only with the PVS, every
index and range checked, and damaged or fuzzed payloads (with valid checksums) give only
LevelFormatError; whatever passes must answer camera queries."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from level_builders import (assert_levels_equal, box_level, build_bbk, random_level, replace_section, split_bbk,
                            with_random_cull, with_random_vis)

from brushbake.core.errors import LevelFormatError
from brushbake.exporters import level_from_bytes, level_to_bytes
from brushbake.exporters.json_dump import level_from_json, level_to_json

CULL_TAGS = [b"CQNC", b"CQPC", b"CQPL", b"CQPF", b"CQPN", b"CQPV"]


def culled(seed, portals=None):
    return with_random_cull(with_random_vis(random_level(seed), seed), seed, portals)


@pytest.mark.parametrize("seed", range(6))
def test_round_trip_binary_and_json(seed):
    level = culled(seed)
    data = level_to_bytes(level)
    assert [t for t, *_ in split_bbk(data)][-6:] == CULL_TAGS
    back = level_from_bytes(data)
    assert back.has_cull_portals
    assert_levels_equal(level, back)
    assert_levels_equal(level, level_from_json(level_to_json(level)))
    assert level_to_bytes(back) == data


def test_absent_without_vis_and_older_files_read():
    assert not any(t in CULL_TAGS for t, *_ in split_bbk(level_to_bytes(box_level())))
    sections = split_bbk(level_to_bytes(culled(3, 4)))
    old = level_from_bytes(build_bbk([s for s in sections if s[0] not in CULL_TAGS]))  # a PVS, no portals
    assert old.has_vis and not old.has_cull_portals


def test_all_six_or_none_and_only_with_vis():
    sections = split_bbk(level_to_bytes(culled(5, 4)))
    for tag in CULL_TAGS:
        with pytest.raises(LevelFormatError, match="culling portals need all"):
            level_from_bytes(build_bbk([s for s in sections if s[0] != tag]))
    with pytest.raises(LevelFormatError, match="no visibility"):
        level_from_bytes(build_bbk([s for s in sections if s[0] not in (b"VSLC", b"VSRO", b"VSRD")]))


def _level_with(seed=7):
    for s in range(seed, seed + 50):
        level = culled(s, 3)
        if len(level.vis_row_offset) >= 2:
            return level
    raise AssertionError("no level with two clusters")


@pytest.mark.parametrize("tag,change,words", [
    (b"CQNC", lambda lv: np.array([len(lv.vis_row_offset) + 1], "<i4"), "cull_num_clusters"),
    (b"CQPC", lambda lv: np.full((3, 2), len(lv.vis_row_offset), "<i4"), "cull_portal_clusters"),
    (b"CQPC", lambda lv: np.zeros((3, 2), "<i4"), "to itself"),
    (b"CQPC", lambda lv: np.array([[0, 1]], "<i4"), "count the culling portals"),
    (b"CQPL", lambda lv: np.full(3, len(lv.plane_dists), "<i4"), "cull_portal_plane"),
    (b"CQPL", lambda lv: np.full(3, -1, "<i4"), "cull_portal_plane"),
    (b"CQPF", lambda lv: np.full(3, 10**6, "<i4"), "outside"),
    (b"CQPN", lambda lv: np.full(3, 2, "<i4"), "fewer than 3"),
    (b"CQPN", lambda lv: np.full(3, 65, "<i4"), "outside|at most"),
    (b"CQPV", lambda lv: np.full_like(lv.cull_portal_vertices, np.nan).astype("<f8"), "NaN"),
    (b"CQPV", lambda lv: (lv.cull_portal_vertices + 0.5).astype("<f8"), "off its plane"),
])
def test_bad_payloads_are_rejected(tag, change, words):
    level = _level_with()
    sections = split_bbk(level_to_bytes(level))
    payload = np.ascontiguousarray(change(level)).tobytes()
    with pytest.raises(LevelFormatError, match=words):
        level_from_bytes(build_bbk(replace_section(sections, tag, payload)))


def test_too_many_vertices_is_rejected():
    level = _level_with()
    level.cull_portal_count = level.cull_portal_count.copy()
    n = 70
    ang = np.arange(n) * 2 * np.pi / n
    nrm, d = level.plane_normals[level.cull_portal_plane[0]], level.plane_dists[level.cull_portal_plane[0]]
    t = np.cross(nrm, [1.0, 0, 0] if abs(nrm[0]) < 0.9 else [0, 1.0, 0])
    t /= np.linalg.norm(t)
    b = np.cross(nrm, t)
    extra = nrm * d + np.cos(ang)[:, None] * t + np.sin(ang)[:, None] * b
    level.cull_portal_first = level.cull_portal_first.copy()
    level.cull_portal_first[0] = len(level.cull_portal_vertices)
    level.cull_portal_count[0] = n
    level.cull_portal_vertices = np.concatenate([level.cull_portal_vertices, extra])
    with pytest.raises(LevelFormatError, match="at most 64"):
        level_to_bytes(level)


FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.integers(0, 2**32 - 1), st.data())
def test_fuzz_cull_payloads_with_valid_checksums(seed, data):
    sections = split_bbk(level_to_bytes(culled(seed % 50, int(seed % 5) + 1)))
    for _ in range(data.draw(st.integers(1, 3))):
        i = len(sections) - 1 - data.draw(st.integers(0, 5))
        tag, rsize, rcount, payload = sections[i]
        if data.draw(st.booleans()):
            payload = data.draw(st.binary(max_size=200))
            rsize = data.draw(st.sampled_from([rsize, 1, 4, 8]))
            rcount = len(payload) // rsize if len(payload) % rsize == 0 else data.draw(st.integers(0, 2**40))
        else:
            array = bytearray(payload)
            for _ in range(data.draw(st.integers(1, 3))):
                if array:
                    at = data.draw(st.integers(0, len(array) - 1))
                    array[at] = data.draw(st.sampled_from([0, 1, 2, 0x3F, 0x7F, 0x80, 0xFF]))
            payload = bytes(array)
        sections[i] = (tag, rsize, rcount, payload)
    try:
        level = level_from_bytes(build_bbk(sections))
    except LevelFormatError:
        return
    if level.has_cull_portals:  # whatever passed the checks must answer camera queries
        from brushbake.core.runtime.cull import cull

        lo, hi = level.world_bounds
        cams = np.array([[*(lo + hi) / 2, 30.0, 10.0, 90.0, 1.5, 50.0], [*lo, 200.0, -80.0, 170.0, 0.1, 1e3]])
        for mode in ("pvs", "frustum", "portal"):
            r = cull(level, cams, mode)
            assert r.drawn.shape == (2, level.num_leaves)
