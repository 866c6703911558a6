"""The C kernel that splits polygons by planes (core/compile/split_c.py, runtime_c/compiler/split.c)
against its NumPy reference (core/geometry.py split_polygons), to the bit, shapes included:

- random convex polygons (hypothesis) against random planes, axial ones among them, with vertices
  exactly on, a hair off and ON_EPSILON off the plane, polygons wholly on one side, on the plane,
  empty and degenerate;
- under ASan/UBSan (tests/c/split_driver.c) on such polygons;
and the pieces against split_polygon, the one-polygon reference they were made to equal."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brushbake.core import kernels
from brushbake.core.compile.split_c import BINDING, split_polygons
from brushbake.core.geometry import split_polygon
from brushbake.core.tolerances import ON_EPSILON, PORTAL_EPSILON

from sanitized import build_sanitized, run_sanitized

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _kernel_or_skip():
    if not BINDING.available():
        pytest.skip("the native library does not load here (no C compiler)")


def _polygons(rng, m: int, axial_share: float):
    """m padded convex polygons (3 to 9 vertices; some empty), a plane each, and the distances."""
    v = 9
    verts = np.zeros((m, v, 3))
    counts = rng.integers(3, v + 1, size=m)
    counts[rng.random(m) < 0.05] = 0
    normals = rng.normal(size=(m, 3))
    normals /= np.sqrt((normals * normals).sum(axis=1))[:, None]
    axial = rng.random(m) < axial_share
    ax = rng.integers(0, 3, size=m)
    normals[axial] = 0.0
    normals[axial, ax[axial]] = rng.choice([-1.0, 1.0], size=int(axial.sum()))
    dists = np.where(rng.random(m) < 0.5, rng.integers(-4, 5, size=m) * 0.25, rng.uniform(-2, 2, size=m))
    for p in range(m):
        k = int(counts[p])
        pn = rng.normal(size=3)
        pn /= np.sqrt((pn * pn).sum())
        if rng.random() < 0.1:
            pn = normals[p]  # a polygon on (or parallel to) its plane
        u = np.cross(pn, [0.0, 0.0, 1.0] if abs(pn[2]) < 0.9 else [1.0, 0.0, 0.0])
        u /= np.sqrt((u * u).sum())
        w = np.cross(pn, u)
        ang = np.sort(rng.uniform(0, 2 * np.pi, k))
        centre = normals[p] * dists[p] + rng.uniform(-1.5, 1.5) * u + rng.uniform(-1.5, 1.5) * w
        verts[p, :k] = centre + rng.uniform(0.01, 2.0) * (np.cos(ang)[:, None] * u + np.sin(ang)[:, None] * w)
    dist = np.zeros((m, v))
    for p in range(m):
        k = int(counts[p])
        d = verts[p, :k, 0] * normals[p, 0] + verts[p, :k, 1] * normals[p, 1] + verts[p, :k, 2] * normals[p, 2] - dists[p]
        snap = rng.random(k) < 0.2  # vertices on, a hair off and eps off the plane
        d[snap] = rng.choice([0.0, 1e-13, -1e-13, ON_EPSILON, -ON_EPSILON, 1.5 * ON_EPSILON], size=int(snap.sum()))
        dist[p, :k] = d
    return verts, counts, dist, normals, dists


def _same(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.view(np.int64), b.view(np.int64))


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(0, 60), axial=st.sampled_from([0.0, 0.5, 1.0]),
       eps=st.sampled_from([ON_EPSILON, PORTAL_EPSILON]))
def test_c_split_equals_numpy_to_the_bit(seed, m, axial, eps):
    verts, counts, dist, normals, dists = _polygons(np.random.default_rng(seed), m, axial)
    with kernels.using("numpy"):
        want = split_polygons(verts, counts, dist, normals, dists, eps)
    with kernels.using("c"):
        got = split_polygons(verts, counts, dist, normals, dists, eps)
    for g, w in zip(got, want):
        assert _same(np.asarray(g), np.asarray(w))


def test_pieces_are_split_polygons_pieces():
    rng = np.random.default_rng(4)
    verts, counts, dist, normals, dists = _polygons(rng, 200, 0.4)
    # split_polygon computes its own distances: give the kernel those
    for p in range(len(counts)):
        k = int(counts[p])
        dist[p, :k] = verts[p, :k] @ normals[p] - dists[p]
    with kernels.using("c"):
        front, nf, back, nb = split_polygons(verts, counts, dist, normals, dists)
    for p in range(len(counts)):
        k = int(counts[p])
        if k < 3:
            continue
        d = dist[p, :k]
        if d.max() > ON_EPSILON and d.min() < -ON_EPSILON:
            f, b = split_polygon(verts[p, :k], normals[p], dists[p])
        else:  # wholly on one side, or on the plane: whole, in front unless some vertex is behind
            f, b = (verts[p, :k], None) if d.min() >= -ON_EPSILON else (None, verts[p, :k])
        for piece, got, n in ((f, front[p], nf[p]), (b, back[p], nb[p])):
            if piece is None:
                assert n == 0
            else:
                assert n == len(piece) and np.allclose(got[:n], piece, rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def sanitized_split(tmp_path_factory):
    return build_sanitized(tmp_path_factory, "split_driver", ["split"])


def test_sanitized_split_equals_numpy(sanitized_split, tmp_path):
    verts, counts, dist, normals, dists = _polygons(np.random.default_rng(9), 300, 0.5)
    head = np.array([len(counts), verts.shape[1]], dtype=np.int64)
    (tmp_path / "in.bin").write_bytes(b"".join([head.tobytes(), np.float64(ON_EPSILON).tobytes(), verts.tobytes(),
                                                counts.astype(np.int64).tobytes(), dist.tobytes(), normals.tobytes(),
                                                dists.tobytes()]))
    run_sanitized(sanitized_split, tmp_path)
    m, v = verts.shape[:2]
    data = (tmp_path / "out.bin").read_bytes()
    front = np.frombuffer(data[: m * 2 * v * 24], dtype=np.float64).reshape(m, 2 * v, 3)
    back = np.frombuffer(data[m * 2 * v * 24: 2 * m * 2 * v * 24], dtype=np.float64).reshape(m, 2 * v, 3)
    nf, nb = np.frombuffer(data[2 * m * 2 * v * 24:], dtype=np.int64).reshape(2, m)
    with kernels.using("numpy"):
        want_f, want_nf, want_b, want_nb = split_polygons(verts, counts, dist, normals, dists)
    assert np.array_equal(np.where(nf < 3, 0, nf), want_nf) and np.array_equal(np.where(nb < 3, 0, nb), want_nb)
    for got, want, n in ((front, want_f, want_nf), (back, want_b, want_nb)):
        for p in np.flatnonzero(n).tolist():
            assert np.array_equal(got[p, : n[p]].view(np.int64), want[p, : n[p]].view(np.int64))


def test_nan_distances_and_bad_counts_split_as_numpy():
    """A NaN distance makes NumPy's extremes NaN (neither whole test holds): the kernel splits
    such a polygon as NumPy does; counts past the row go to NumPy itself, which answers or refuses
    as it always has, instead of the kernel reading past the row."""
    verts, counts, dist, normals, dists = _polygons(np.random.default_rng(12), 40, 0.5)
    dist[::3, 1] = np.nan
    with kernels.using("numpy"):
        want = split_polygons(verts, counts, dist, normals, dists)
    with kernels.using("c"):
        got = split_polygons(verts, counts, dist, normals, dists)
    for g, w in zip(got, want):
        assert g.shape == w.shape and np.array_equal(g, w, equal_nan=True)
    errors = []
    for backend in ("numpy", "c"):  # the same answer or the same refusal: the kernel reads no row past
        with kernels.using(backend):
            try:
                errors.append(split_polygons(verts, counts + 100, dist, normals, dists)[1].tolist())
            except Exception as err:  # noqa: BLE001 -- whatever NumPy says, the kernel's path must say
                errors.append(type(err))
    assert errors[0] == errors[1]
