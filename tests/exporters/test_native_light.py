"""The lightmap sections of the .bbk file (LMLX, LMPS, LMPG, LMFP, LMFR, LMUV): round trips
(binary and JSON, random and baked levels), all six or none, every damaged value named, fuzzed
payloads with valid checksums give only LevelFormatError."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from level_builders import assert_levels_equal, box_level, build_bbk, random_level, split_bbk, with_random_light

from brushbake.core.errors import LevelFormatError
from brushbake.exporters import level_from_bytes, level_to_bytes
from brushbake.exporters.json_dump import level_from_json, level_to_json

LIGHT_TAGS = [b"LMLX", b"LMPS", b"LMPG", b"LMFP", b"LMFR", b"LMUV"]


@pytest.mark.parametrize("seed", range(6))
def test_light_sections_round_trip_binary_and_json(seed):
    level = with_random_light(random_level(seed), seed)
    data = level_to_bytes(level)
    assert [t for t, *_ in split_bbk(data)][-6:] == LIGHT_TAGS
    back = level_from_bytes(data)
    assert_levels_equal(level, back)
    assert back.lm_pages.dtype == np.float32 and back.has_light
    assert_levels_equal(level, level_from_json(level_to_json(level)))
    assert level_to_bytes(back) == data


def test_a_baked_lightmap_round_trips():
    from brushbake.core.compile.pipeline import bake_scene
    from brushbake.core.model.brushes import box_brush
    from brushbake.core.model.scene import Light, Scene

    scene = Scene("plane", brushes=[box_brush([-2, -2, -1], [2, 2, 0], "floor")],
                  lights=[Light("l", (0, 0, 2), kind="point", power=300.0)])
    scene.settings.light, scene.settings.vis, scene.settings.bounces = True, "none", 1
    level = bake_scene(scene)
    back = level_from_bytes(level_to_bytes(level))
    assert_levels_equal(level, back)
    assert back.lm_pages.max() > 0


def test_a_level_without_light_keeps_its_bytes():
    assert not any(t in LIGHT_TAGS for t, *_ in split_bbk(level_to_bytes(box_level())))


def test_all_six_or_none():
    sections = split_bbk(level_to_bytes(with_random_light(random_level(3), 3)))
    for tag in LIGHT_TAGS:
        with pytest.raises(LevelFormatError, match="lightmap needs all"):
            level_from_bytes(build_bbk([s for s in sections if s[0] != tag]))
    assert not level_from_bytes(build_bbk([s for s in sections if s[0] not in LIGHT_TAGS])).has_light


def _replace(sections, tag, payload):
    out = []
    for t, s, c, p in sections:
        if t == tag:
            c, p = len(payload) // s, payload
        out.append((t, s, c, p))
    return out


def _bad(level, field, mutate):
    value = getattr(level, field).copy()
    mutate(value)
    setattr(level, field, value)


@pytest.mark.parametrize("tag,payload,words", [
    (b"LMLX", np.array([0.0], "<f8").tobytes(), "lm_luxel"),
    (b"LMLX", np.array([np.nan], "<f8").tobytes(), "lm_luxel"),
    (b"LMLX", np.array([1.0, 2.0], "<f8").tobytes(), "lm_luxel has 2 records"),
    (b"LMPS", np.array([0, 1], "<u4").tobytes(), "texels"),
    (b"LMPS", np.array([5, 7], "<u4").tobytes(), "lm_pages holds"),
    (b"LMPS", np.array([2**31, 1], "<u4").tobytes(), "a side is"),
])
def test_bad_headers_are_rejected(tag, payload, words):
    sections = split_bbk(level_to_bytes(with_random_light(random_level(1), 1)))
    with pytest.raises(LevelFormatError, match=words):
        level_from_bytes(build_bbk(_replace(sections, tag, payload)))


def test_bad_values_are_rejected():
    def check(field, mutate, words):
        level = with_random_light(random_level(2), 2)
        level.lm_face_page[:] = 0
        level.lm_face_rect[:] = [0, 0, 1, 1]
        sections = split_bbk(level_to_bytes(level))
        tag = LIGHT_TAGS[["lm_luxel", "lm_page_shape", "lm_pages", "lm_face_page", "lm_face_rect",
                          "lm_vertex_uv"].index(field)]
        payload = {t: p for t, _, _, p in sections}[tag]
        dtype = {"lm_pages": "<f4", "lm_face_page": "<i4", "lm_face_rect": "<i4", "lm_vertex_uv": "<f8"}[field]
        array = np.frombuffer(payload, dtype).copy()
        mutate(array)
        with pytest.raises(LevelFormatError, match=words):
            level_from_bytes(build_bbk(_replace(sections, tag, array.tobytes())))

    check("lm_pages", lambda a: a.__setitem__(0, -1.0), "negative")
    check("lm_pages", lambda a: a.__setitem__(1, np.inf), "infinite")
    check("lm_face_page", lambda a: a.__setitem__(0, 99), "lm_face_page")
    check("lm_face_page", lambda a: a.__setitem__(0, -1), "no lightmap page")
    check("lm_face_rect", lambda a: a.__setitem__(2, 10**6), "leaves its")
    check("lm_face_rect", lambda a: a.__setitem__(0, -1), "leaves its")
    check("lm_face_page", lambda a: None if len(a) < 2 else a.resize(len(a) - 1, refcheck=False), "lm_face_page has")
    check("lm_vertex_uv", lambda a: a.__setitem__(0, np.nan), "lm_vertex_uv")


FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.integers(0, 2**32 - 1), st.data())
def test_fuzz_light_payloads_with_valid_checksums(seed, data):
    sections = split_bbk(level_to_bytes(with_random_light(random_level(seed % 50), seed)))
    for _ in range(data.draw(st.integers(1, 3))):
        i = len(sections) - 1 - data.draw(st.integers(0, 5))
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
    if level.has_light:  # whatever passed the checks is a usable lightmap
        k, s = level.lm_pages.shape[:2]
        for f in np.flatnonzero(level.lm_face_page >= 0):
            x, y, w, h = level.lm_face_rect[f]
            assert level.lm_pages[level.lm_face_page[f], y : y + h, x : x + w].size == w * h * 3
        assert np.isfinite(level.lm_pages).all() and (level.lm_pages >= 0).all()


def test_every_byte_flip_of_the_light_sections_is_detected():
    level = with_random_light(random_level(5), 5)
    level.lm_pages = level.lm_pages[:, :4, :4].copy()
    level.lm_face_rect[:] = np.where(level.lm_face_page[:, None] >= 0, [0, 0, 1, 1], 0)
    data = level_to_bytes(level)
    start = len(level_to_bytes(random_level(5))) - 8
    for position in range(max(0, start), len(data)):
        damaged = bytearray(data)
        damaged[position] ^= 0x81
        with pytest.raises(LevelFormatError):
            level_from_bytes(bytes(damaged))
