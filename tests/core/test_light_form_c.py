"""The C kernel of the exact point-to-polygon form factors (core/compile/light/lm_form_c.py,
runtime_c/compiler/light_form.c) against its NumPy reference (lm_radiosity.point_polygon_form_factor),
to the bit:

- random convex polygons (hypothesis) seen from random points: in front, behind, straddling the
  point's plane (clipped), with vertices on it, a hair off it and within CLIP_SNAP of it (the
  second, snapped clip), degenerate and short polygons, widths padded past the longest;
- the kernel under ASan/UBSan (tests/c/form_driver.c);
- the values against their definition: a patch's form factor seen from far away tends to the point
  one, cos_s cos_r A / (pi d^2), and the form factor of a polygon wholly behind is 0."""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brushbake.core.compile.light import lm_form_c
from brushbake.core.compile.light.lm_radiosity import point_polygon_form_factor
from brushbake.core.tolerances import CLIP_SNAP

from sanitized import build_sanitized, run_sanitized


@pytest.fixture(autouse=True)
def _kernel_or_skip():
    if not lm_form_c.BINDING.available():
        pytest.skip("the native library does not load here (no C compiler)")


def _pairs(rng, m: int, width: int):
    """m points (unit normals) and convex polygons of 0..width vertices near them, padded."""
    x = rng.uniform(-2, 2, size=(m, 3))
    n = rng.normal(size=(m, 3))
    n /= np.sqrt((n * n).sum(axis=1))[:, None]
    count = rng.integers(0, width + 1, size=m)  # 0, 1 and 2 included: no polygon, no area
    many = rng.random(m) < 0.8  # most are patches: at least three vertices
    count[many] = np.maximum(count[many], min(3, width))
    verts = np.zeros((m, width, 3))
    for i in range(m):
        k = int(count[i])
        pn = rng.normal(size=3)
        pn /= np.sqrt((pn * pn).sum())
        u = np.cross(pn, [0.0, 0.0, 1.0] if abs(pn[2]) < 0.9 else [1.0, 0.0, 0.0])
        u /= np.sqrt((u * u).sum())
        w = np.cross(pn, u)
        ang = np.sort(rng.uniform(0, 2 * np.pi, k))
        centre = x[i] + rng.normal(size=3) * rng.choice([0.1, 1.0, 5.0])
        verts[i, :k] = centre + rng.uniform(0.01, 1.0) * (np.cos(ang)[:, None] * u + np.sin(ang)[:, None] * w)
        if k and rng.random() < 0.3:  # some vertices on the point's plane, a hair off, within CLIP_SNAP
            j = rng.integers(k, size=max(1, k // 2))
            h = (verts[i, j] - x[i]) @ n[i]
            off = rng.choice([0.0, 1e-13, -1e-13, 0.5 * CLIP_SNAP, -0.5 * CLIP_SNAP], size=len(j))
            verts[i, j] -= (h - off)[:, None] * n[i]
    return x, n, verts, count


def _same(a, b) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 300), width=st.integers(1, 12))
def test_c_form_factors_equal_numpy(seed, m, width):
    x, n, verts, count = _pairs(np.random.default_rng(seed), m, width)
    assert _same(lm_form_c.form_factors(x, n, verts, count), point_polygon_form_factor(x, n, verts, count))


def test_far_patch_tends_to_the_point_form_factor_and_behind_is_zero():
    side = 0.01
    x = np.array([[0.0, 0.0, 0.0]] * 3)
    n = np.array([[0.0, 0.0, 1.0]] * 3)
    sq = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], dtype=float) * side / 2
    verts = np.stack([sq + [0, 0, 2.0], sq + [0.5, 0, 2.0], sq + [0, 0, -1.0]])
    got = lm_form_c.form_factors(x, n, verts, np.array([4, 4, 4]))
    area = side * side
    for i, c in enumerate(verts[:2].mean(axis=1)):
        d = np.sqrt((c * c).sum())
        cos = c[2] / d  # the polygon's normal along -z here: the same cosine both ways
        assert got[i] == pytest.approx(cos * cos * area / (math.pi * d * d), rel=1e-4)
    assert got[2] == 0.0


@pytest.fixture(scope="module")
def sanitized_form(tmp_path_factory):
    return build_sanitized(tmp_path_factory, "form_driver", ["light_form"])


def test_sanitized_kernel_equals_numpy(sanitized_form, tmp_path):
    x, n, verts, count = _pairs(np.random.default_rng(3), 500, 9)
    head = np.array([len(x), verts.shape[1]], dtype=np.int64)
    (tmp_path / "in.bin").write_bytes(b"".join([head.tobytes(), bytes(lm_form_c._CONSTS), x.tobytes(), n.tobytes(),
                                                verts.tobytes(), count.astype(np.int64).tobytes()]))
    run_sanitized(sanitized_form, tmp_path)
    got = np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype=np.float64)
    assert _same(got.copy(), point_polygon_form_factor(x, n, verts, count))
    assert ctypes.sizeof(lm_form_c.FormConsts) == 18 * 8
