"""The C kernel that moves light's sample points into their faces (core/compile/light/lm_charts_c.py,
runtime_c/compiler/light_charts.c) against its NumPy reference (lm_charts.nearest_in_faces and
move_into_faces), to the bit:

- on every sample scene and on three maps, at the luxel centres and their sub-samples as light
  takes them, and at points scattered up to two luxels around them (many outside their faces);
- the shrunk moves light makes for points in solid (shrink in [0, 1], and 0: the face's centre);
- on random scatters (hypothesis): seed, spread and luxel drawn;
the kernel built with -fsanitize=address,undefined (tests/c/charts_driver.c) on a map's points,
giving the same bits; and the moved points themselves against their definition: inside every edge of their face by
LUXEL_INSET (less only where the face is narrower than that), and a point that was inside its face
by more than the inset stays where it was."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brushbake.core.compile.light import lm_charts_c
from brushbake.core.compile.light.lm_charts import (edge_lines, face_centres_2d, lit_faces, make_charts,
                                                    move_into_faces, nearest_in_faces, outside_faces)
from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.formats.loaders import load_scene
from brushbake.core.tolerances import LUXEL_INSET

from sanitized import build_sanitized, run_sanitized

REPO = Path(__file__).resolve().parents[2]
SCENES = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "sample_scenes").glob("*.json")) + [
    "maps/ericw-tools/qbspfeatures.map", "maps/id/e1m7.map", "maps/librequake/slope.map"]


@pytest.fixture(autouse=True)
def _kernel_or_skip():
    if not lm_charts_c.available():
        pytest.skip("the native library does not load here (no C compiler)")


@lru_cache(maxsize=None)
def _level(name: str):
    scene = load_scene(REPO / name)
    scene.hulls = []
    scene.settings.bevels, scene.settings.vis = False, "none"
    return compile_scene(scene)


def _charts(name: str, luxel: float):
    level = _level(name)
    charts = make_charts(level, luxel, lit=lit_faces(level))
    return level, charts, edge_lines(level, charts)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


def _points(charts, luxel: float, rng, spread: float):
    """Light's sub-samples of every luxel (2 x 2 per luxel), scattered by up to `spread` luxels."""
    sub = np.array([[0.25, 0.25], [0.25, 0.75], [0.75, 0.25], [0.75, 0.75]])
    faces = np.repeat(charts.luxel_face, len(sub))
    ij = ((charts.grid_lo[charts.luxel_face] + charts.luxel_ij)[:, None, :] + sub[None]).reshape(-1, 2)
    return faces, (ij + rng.uniform(-spread, spread, ij.shape)) * luxel


def _check(level, charts, lines, faces, st_, rng) -> None:
    a = nearest_in_faces(level, charts, faces, st_, lines=lines)
    b = nearest_in_faces(level, charts, faces, st_, lines=lines, backend="c")
    assert _same(a, b)
    for shrink in (rng.uniform(0.0, 1.0, len(faces)), np.zeros(len(faces)), None):
        a = move_into_faces(level, charts, faces, st_, shrink=shrink, lines=lines)
        b = move_into_faces(level, charts, faces, st_, shrink=shrink, lines=lines, backend="c")
        assert _same(a, b)


@pytest.mark.parametrize("name", SCENES)
def test_c_moves_equal_numpy_to_the_bit(name):
    level, charts, lines = _charts(name, 0.5)
    rng = np.random.default_rng(7)
    for spread in (0.0, 2.0):
        faces, st_ = _points(charts, 0.5, rng, spread)
        step = max(1, len(faces) // 100_000)  # a big map's every k-th point: the test stays quick
        _check(level, charts, lines, faces[::step], st_[::step], rng)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spread=st.floats(0.0, 4.0), luxel=st.sampled_from([0.25, 0.5, 1.0]),
       name=st.sampled_from(["sample_scenes/garage.json", "sample_scenes/staircase.json", "maps/id/e1m7.map"]))
def test_c_moves_equal_numpy_on_random_scatters(seed, spread, luxel, name):
    level, charts, lines = _charts(name, luxel)
    rng = np.random.default_rng(seed)
    faces, st_ = _points(charts, luxel, rng, spread)
    keep = rng.random(len(faces)) < 0.2  # a random fifth: the hypothesis rounds stay quick
    _check(level, charts, lines, faces[keep], st_[keep], rng)


@pytest.mark.parametrize("name", ["sample_scenes/garage.json", "maps/id/e1m7.map"])
def test_moved_points_lie_the_inset_inside_their_faces(name):
    level, charts, lines = _charts(name, 0.5)
    faces, st_ = _points(charts, 0.5, np.random.default_rng(3), 2.0)
    moved = nearest_in_faces(level, charts, faces, st_, lines=lines, backend="c")
    ef, en, eo = lines
    # every edge of the point's face, as a (point, edge) table: the distance inside each
    first = np.searchsorted(ef, np.arange(len(charts.face_page)))
    count = np.bincount(ef, minlength=len(charts.face_page))
    reps = count[faces]
    pt = np.repeat(np.arange(len(faces)), reps)
    edge = np.repeat(first[faces], reps) + np.arange(len(pt)) - np.repeat(np.cumsum(reps) - reps, reps)
    inside = (en[edge] * moved[pt]).sum(axis=1) - eo[edge]
    least = np.full(len(faces), np.inf)
    np.minimum.at(least, pt, inside)
    # faces whose centre lies more than twice the inset inside every edge: the inset fits
    centre = face_centres_2d(level, charts)
    centre_in = np.full(len(charts.face_page), np.inf)
    np.minimum.at(centre_in, ef, (en * centre[ef]).sum(axis=1) - eo)
    wide = centre_in[faces] > 2 * LUXEL_INSET
    has = reps > 0
    assert (least[has & wide] >= LUXEL_INSET * (1 - 1e-6) - 1e-12).all()
    # a point already the inset inside its face stays put
    deep = ~outside_faces(charts, faces, st_, lines, slack=-2 * LUXEL_INSET) & has
    assert np.allclose(moved[deep], st_[deep], rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def sanitized_charts(tmp_path_factory):
    return build_sanitized(tmp_path_factory, "charts_driver", ["light_charts"])


@pytest.mark.parametrize("nearest, shrunk", [(True, False), (False, True)])
def test_sanitized_kernel_moves_as_numpy(sanitized_charts, tmp_path, nearest, shrunk):
    from brushbake.core.compile.light.lm_charts import lines_segments

    level, charts, lines = _charts("maps/id/e1m7.map", 0.5)
    rng = np.random.default_rng(11)
    faces, st_ = _points(charts, 0.5, rng, 2.0)
    faces, st_ = faces[::7], st_[::7]
    shrink = rng.uniform(0.0, 1.0, len(faces)) if shrunk else None
    nf = len(charts.face_page)
    ef, en, eo = lines
    seg_a, seg_b = lines_segments(level, charts)
    head = np.array([len(faces), nf, len(ef), int(nearest), int(shrunk)], dtype=np.int64)
    parts = [head.tobytes(), np.float64(LUXEL_INSET).tobytes(), faces.astype(np.int64).tobytes(), st_.tobytes()]
    parts += [shrink.tobytes()] if shrunk else []
    parts += [np.searchsorted(ef, np.arange(nf)).astype(np.int64).tobytes(),
              np.bincount(ef, minlength=nf).astype(np.int64).tobytes()]
    parts += [np.ascontiguousarray(a, dtype=np.float64).tobytes()
              for a in (en, eo, seg_a, seg_b, face_centres_2d(level, charts))]
    (tmp_path / "in.bin").write_bytes(b"".join(parts))
    run_sanitized(sanitized_charts, tmp_path)
    got = np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype=np.float64).reshape(-1, 2)
    want = (nearest_in_faces(level, charts, faces, st_, lines=lines) if nearest
            else move_into_faces(level, charts, faces, st_, shrink=shrink, lines=lines))
    assert _same(got.copy(), want)
