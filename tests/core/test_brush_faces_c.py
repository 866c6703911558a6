"""The C kernels that build brushes from their planes (core/model/brushes_c.py,
runtime_c/compiler/brush_faces.c) against their NumPy reference (model/brushes.py: the batch's
_batch_polytope_vertices and _batch_assemble_faces, and brush_from_planes itself), to the bit:

- every brush of every sample scene and of four maps, and every brush expanded by Quake's hulls,
  loaded or expanded with either backend: the same planes, faces, textures, names;
- random brushes (hypothesis): boxes and rotated boxes, prisms and pyramids (several planes through
  one corner), random convex cuts, thin slabs near the volume and edge thresholds, duplicate and
  unbounded plane sets (which the batch hands back to brush_from_planes, which refuses them with
  the same error);
- the kernels under ASan/UBSan (tests/c/brush_driver.c) on such brushes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brushbake.core import kernels
from brushbake.core.compile.trees.expand import expand_brushes
from brushbake.core.errors import BrushbakeError
from brushbake.core.formats.loaders import load_scene
from brushbake.core.model import brushes_c
from brushbake.core.model.brushes import _triples, brush_from_planes, brushes_from_planes
from brushbake.core.model.hulls import quake_map_hulls
from brushbake.core.tolerances import MIN_EDGE_LENGTH, PARALLEL_DETERMINANT, VERTEX_EPSILON

from sanitized import build_sanitized, run_sanitized

REPO = Path(__file__).resolve().parents[2]
SCENES = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "sample_scenes").glob("*.json")) + [
    "maps/ericw-tools/qbspfeatures.map", "maps/ericw-tools/q1_mountain.map", "maps/librequake/lq_e1m6.map",
    "maps/id/e1m7.map"]


@pytest.fixture(autouse=True)
def _kernel_or_skip():
    if not brushes_c.BINDING.available():
        pytest.skip("the native library does not load here (no C compiler)")


def _same_brush(a, b) -> bool:
    return (a.name == b.name and a.contents == b.contents and a.entity == b.entity and a.textures == b.textures
            and a.normals.tobytes() == b.normals.tobytes() and a.dists.tobytes() == b.dists.tobytes()
            and len(a.faces) == len(b.faces)
            and all(np.ascontiguousarray(f).tobytes() == np.ascontiguousarray(g).tobytes()
                    for f, g in zip(a.faces, b.faces)))


@pytest.mark.parametrize("name", SCENES)
def test_loaded_and_expanded_brushes_equal_numpy(name):
    got = {}
    for backend in ("numpy", "c"):
        with kernels.using(backend):
            scene = load_scene(REPO / name)
            hulls = scene.hulls or quake_map_hulls(scene.settings.map_scale)
            got[backend] = (scene.brushes, expand_brushes(scene.brushes, hulls))
    (ref, ref_x), (fast, fast_x) = got["numpy"], got["c"]
    assert len(ref) == len(fast) and all(_same_brush(a, b) for a, b in zip(ref, fast))
    for a_hull, b_hull in zip(ref_x, fast_x):
        assert len(a_hull) == len(b_hull) and all(_same_brush(a, b) for a, b in zip(a_hull, b_hull))


def _random_planes(rng, kind: str):
    """The planes of one random brush: (normals (k, 3), dists (k,)); not all make a brush."""
    centre = rng.uniform(-50, 50, 3)
    if kind in ("box", "rotated", "slab"):
        half = rng.uniform(0.01, 5.0, 3)
        if kind == "slab":
            half[rng.integers(3)] = rng.choice([1e-6, 5e-6, 1e-5, 1e-3])
        rot = np.eye(3) if kind != "rotated" else np.linalg.qr(rng.normal(size=(3, 3)))[0]
        normals = np.concatenate([rot.T, -rot.T])
        dists = normals @ centre + np.concatenate([half, half])
    elif kind == "pyramid":  # k side planes through one apex, and a base
        k = int(rng.integers(3, 9))
        ang = np.sort(rng.uniform(0, 2 * np.pi, k))
        slope = rng.uniform(0.2, 3.0)
        normals = np.stack([np.cos(ang), np.sin(ang), np.full(k, slope)], axis=1)
        normals = np.concatenate([normals, [[0.0, 0.0, -1.0]]])
        apex = centre
        dists = normals @ apex
        dists[-1] = -(apex[2] - rng.uniform(0.5, 5.0))
    else:  # random cuts of a box
        k = int(rng.integers(4, 14))
        normals = rng.normal(size=(k, 3))
        normals /= np.sqrt((normals * normals).sum(axis=1))[:, None]
        normals = np.concatenate([normals, np.eye(3), -np.eye(3)])
        dists = normals @ centre + rng.uniform(0.2, 4.0, len(normals))
        if kind == "duplicate":
            normals = np.concatenate([normals, normals[:1]])
            dists = np.concatenate([dists, dists[:1]])
        if kind == "open":
            keep = normals[:, 2] > -0.3  # no floor: unbounded below
            normals, dists = normals[keep], dists[keep]
    scale = rng.choice([1.0, 1.0, 3.7])  # planes need not be unit length
    return normals * scale, dists * scale


def _build(specs, backend: str):
    with kernels.using(backend):
        out = []
        for s in specs:
            try:
                out.append(brushes_from_planes([s])[0])
            except BrushbakeError as err:
                out.append(type(err).__name__ + str(err))
        batch = []
        try:
            batch = brushes_from_planes(specs)
        except BrushbakeError as err:
            batch = type(err).__name__ + str(err)
    return out, batch


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1),
       kinds=st.lists(st.sampled_from(["box", "rotated", "slab", "pyramid", "cuts", "duplicate", "open"]),
                      min_size=1, max_size=12))
def test_random_brushes_equal_numpy(seed, kinds):
    rng = np.random.default_rng(seed)
    specs = []
    for i, kind in enumerate(kinds):
        n, d = _random_planes(rng, kind)
        specs.append((n, d, f"b{i}", 1, "worldspawn", [f"t{j}" for j in range(len(d))]))
    ref, ref_batch = _build(specs, "numpy")
    fast, fast_batch = _build(specs, "c")
    for a, b, s in zip(ref, fast, specs):
        assert (a == b) if isinstance(a, str) else _same_brush(a, b)
        if not isinstance(a, str):  # and the one-brush path agrees with the batch
            one = brush_from_planes(s[0], s[1], s[2], s[3], entity=s[4], textures=s[5])
            assert _same_brush(one, a)
    if isinstance(ref_batch, str):
        assert ref_batch == fast_batch
    else:
        assert len(ref_batch) == len(fast_batch) and all(_same_brush(a, b) for a, b in zip(ref_batch, fast_batch))


@pytest.fixture(scope="module")
def sanitized_brush(tmp_path_factory):
    return build_sanitized(tmp_path_factory, "brush_driver", ["brush_faces"])


def test_sanitized_kernels_build_as_the_library(sanitized_brush, tmp_path):
    rng = np.random.default_rng(2)
    k = 6
    normals, dists = [], []
    while len(dists) < 40:
        n, d = _random_planes(rng, rng.choice(["box", "rotated", "slab"]))
        length = np.sqrt((n * n).sum(axis=1))
        normals.append(n / length[:, None])
        dists.append(d / length)
    normals, dists = np.array(normals), np.array(dists)
    good = np.ones(len(dists), dtype=bool)
    triples = _triples(k)
    verts, member, vcount, faces = brushes_c.brush_polytopes(normals, dists, good, triples)
    head = np.array([len(dists), k, len(triples)], dtype=np.int64)
    (tmp_path / "in.bin").write_bytes(b"".join([
        head.tobytes(), np.array([PARALLEL_DETERMINANT, VERTEX_EPSILON, MIN_EDGE_LENGTH]).tobytes(), normals.tobytes(),
        dists.tobytes(), good.astype(np.uint8).tobytes(), triples.astype(np.int64).tobytes()]))
    run_sanitized(sanitized_brush, tmp_path)
    data = np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype=np.float64)
    g, t = len(dists), len(triples)
    assert np.array_equal(data[: g * t * 3].reshape(g, t, 3).view(np.int64), verts.view(np.int64))
    assert np.array_equal(data[g * t * 3: g * t * 3 + g].astype(np.int64), vcount)
    rings = data[g * t * 3 + g:]
    want = np.concatenate([np.concatenate(f[0]).reshape(-1) for f in faces if f[0]])
    assert np.array_equal(rings.view(np.int64), want.view(np.int64))
