"""The C splitter scoring of the BSP builder (core/compile/trees/tree_score_c.py,
runtime_c/compiler/tree_score.c) against its NumPy reference (TreeBuilder._score_items):

- whole compiles (the point tree, the onion's hull trees, regions and detail) of every sample scene
  and of four maps give the same level bytes with either backend;
- random levels of items (hypothesis): faces on random and axial planes, vertices on, a hair off and
  ON_EPSILON off the candidate planes, candidates drawn from the faces' planes and from others:
  the same chosen column per item, the same class of every face against every candidate, the same
  facing where a face lies on one (all the builder reads of it);
- the kernel built with -fsanitize=address,undefined (tests/c/score_driver.c) on a level of a map
  gives the same answers;
- kernels.using('c') where the library does not load says so; the thesis splitter keeps NumPy."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brushbake.core.compile.pipeline import compile_scene
from brushbake.core import kernels
from brushbake.core.compile.trees import tree_score_c
from brushbake.core.compile.trees.bsp import SplitterSettings, TreeBuilder
from brushbake.core.compile.trees.csg import FaceList
from brushbake.core.formats.loaders import load_scene
from brushbake.core.geometry import PlaneTable
from brushbake.core.model.hulls import quake_map_hulls
from brushbake.core.tolerances import ON_EPSILON
from brushbake.exporters.native import level_to_bytes

from sanitized import build_sanitized, run_sanitized

REPO = Path(__file__).resolve().parents[2]
SCENES = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "sample_scenes").glob("*.json")) + [
    "maps/ericw-tools/qbspfeatures.map", "maps/ericw-tools/q1_rocks.map", "maps/librequake/lq_e1m6.map",
    "maps/id/e1m7.map"]


@pytest.fixture(autouse=True)
def _kernel_or_skip():
    if not tree_score_c.available():
        pytest.skip("the native library does not load here (no C compiler)")


def _digest(name: str, backend: str) -> str:
    scene = load_scene(REPO / name)
    scene.settings.vis = "none"
    if not scene.hulls and name.endswith(".map"):  # qbsp's hulls 1 and 2, as a bake of a .map gets them
        scene.hulls = quake_map_hulls(scene.settings.map_scale)
    with kernels.using(backend):
        level = compile_scene(scene)
    return hashlib.sha256(level_to_bytes(level)).hexdigest()


@pytest.mark.parametrize("name", SCENES)
def test_c_scoring_compiles_the_same_level(name):
    assert _digest(name, "c") == _digest(name, "numpy")


def _builder(rng, n_faces: int, axial_share: float):
    """A TreeBuilder over random convex faces (triangles to hexagons) on random planes, a share of
    them axial, with a plane table that also holds planes no face lies on."""
    planes = PlaneTable()
    faces = FaceList()
    for _ in range(n_faces):
        if rng.random() < axial_share:
            n = np.zeros(3)
            n[rng.integers(3)] = rng.choice([-1.0, 1.0])
        else:
            n = rng.normal(size=3)
            n /= np.sqrt((n * n).sum())
        d = float(rng.integers(-4, 5)) * 0.5 if rng.random() < 0.5 else float(rng.uniform(-3, 3))
        u = np.cross(n, [0.0, 0.0, 1.0] if abs(n[2]) < 0.9 else [1.0, 0.0, 0.0])
        u /= np.sqrt((u * u).sum())
        v = np.cross(n, u)
        k = int(rng.integers(3, 7))
        ang = np.sort(rng.uniform(0, 2 * np.pi, k))
        r = rng.uniform(0.1, 3.0)
        centre = n * d + rng.uniform(-3, 3) * u + rng.uniform(-3, 3) * v
        verts = centre + r * (np.cos(ang)[:, None] * u + np.sin(ang)[:, None] * v)
        faces.add(verts, planes.add(n, d), 0)
    for _ in range(8):  # planes no face lies on
        n = rng.normal(size=3)
        planes.add(n / np.sqrt((n * n).sum()), float(rng.uniform(-3, 3)))
    return planes, faces


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_faces=st.integers(1, 120), axial=st.sampled_from([0.0, 0.5, 1.0]),
       weight=st.sampled_from([0.0, 1.0, 8.0, 0.37]))
def test_c_scores_as_numpy_on_random_items(seed, n_faces, axial, weight):
    rng = np.random.default_rng(seed)
    planes, faces = _builder(rng, n_faces, axial)
    # vertices exactly on, a hair off and ON_EPSILON off a plane of the table
    for k in rng.choice(len(faces), size=min(len(faces), 10), replace=False).tolist():
        p = int(rng.integers(len(planes)))
        n, d = planes.normal(p), planes.dist(p)
        v = faces.verts[k]
        off = rng.choice([0.0, 1e-13, -1e-13, ON_EPSILON, -ON_EPSILON, 2 * ON_EPSILON])
        v[0] = v[0] - ((v[0] * n).sum() - d - off) * n
    sets = SplitterSettings(split_weight=weight)
    with kernels.using("numpy"):
        ref = TreeBuilder(planes, faces, sets)
    with kernels.using("c"):
        fast = TreeBuilder(planes, faces, sets)
    # a level: items of random face runs, candidates from their faces' planes and others
    n_items = int(rng.integers(1, 8))
    ids, item = [], []
    for i in range(n_items):
        pick = rng.choice(len(faces), size=int(rng.integers(1, len(faces) + 1)), replace=False)
        ids.append(np.sort(pick))
        item.append(np.full(len(pick), i))
    s_ids, s_item = np.concatenate(ids), np.concatenate(item)
    s_planes = np.array(faces.plane, dtype=np.int64)[s_ids]
    c_count = rng.integers(1, 12, size=n_items)
    width = int(c_count.max())
    table = rng.integers(0, len(planes), size=(n_items, width))
    table[:, 0] = s_planes[np.searchsorted(s_item, np.arange(n_items))]  # a face's own plane first
    want = ref._score_items(s_ids, s_planes, s_item, table, c_count)
    got = fast._score_items(s_ids, s_planes, s_item, table, c_count)
    valid = np.arange(width)[None, :] < c_count[s_item][:, None]
    assert np.array_equal(got[0], want[0])
    assert np.array_equal(got[1][valid], want[1][valid])
    on = valid & (want[1] == 0)
    assert np.array_equal(got[2][on], want[2][on])


def test_thesis_splitter_keeps_numpy_and_unloadable_c_says_so():
    sets = SplitterSettings(splitter="thesis")
    with kernels.using("c"):
        assert TreeBuilder(PlaneTable(), FaceList(), sets)._score_backend == "numpy"
    from brushbake.core.errors import BackendUnavailableError

    class Unloadable:
        def library(self):
            raise BackendUnavailableError("no library here.")

        def available(self):
            return False

    with kernels.using("auto"):
        assert kernels.resolve(Unloadable()) == "numpy"
    with kernels.using("c"), pytest.raises(BackendUnavailableError):
        kernels.resolve(Unloadable())
    with kernels.using("numpy"):
        assert kernels.resolve(tree_score_c.BINDING) == "numpy"
    with pytest.raises(ValueError):
        with kernels.using("fortran"):
            pass


@pytest.fixture(scope="module")
def sanitized_score(tmp_path_factory):
    return build_sanitized(tmp_path_factory, "score_driver", ["tree_score"])


def test_sanitized_kernel_scores_as_numpy(sanitized_score, tmp_path):
    rng = np.random.default_rng(5)
    planes, faces = _builder(rng, 200, 0.5)
    sets = SplitterSettings()
    with kernels.using("numpy"):
        ref = TreeBuilder(planes, faces, sets)
    s_ids = np.arange(len(faces))
    s_item = (s_ids * 4) // len(faces)
    s_planes = np.array(faces.plane, dtype=np.int64)
    c_count = np.array([1, 5, 48, 17])
    table = rng.integers(0, len(planes), size=(4, 48))
    best, cls, same = ref._score_items(s_ids, s_planes, s_item, table, c_count)
    nf, nv = ref._nfaces, int(ref._first[ref._nfaces - 1] + ref._count[ref._nfaces - 1])
    s_count = np.bincount(s_item, minlength=4)
    head = np.array([4, 48, len(s_ids), nv, nf, len(planes)], dtype=np.int64)
    parts = [head, np.array([ON_EPSILON, sets.split_weight]), table, c_count, np.cumsum(s_count) - s_count, s_count,
             s_ids, s_planes, ref._pool[:nv], ref._first[:nf], ref._count[:nf], planes.normals, planes.dists]
    (tmp_path / "in.bin").write_bytes(b"".join(np.ascontiguousarray(p, dtype=np.float64 if p.dtype.kind == "f"
                                                                    else np.int64).tobytes() for p in parts))
    run_sanitized(sanitized_score, tmp_path)
    data = (tmp_path / "out.bin").read_bytes()
    n = len(s_ids) * 48
    got_cls = np.frombuffer(data[:n], dtype=np.int8).reshape(-1, 48)
    got_same = np.frombuffer(data[n: 2 * n], dtype=np.uint8).reshape(-1, 48).astype(bool)
    got_best = np.frombuffer(data[2 * n:], dtype=np.int64)
    valid = np.arange(48)[None, :] < c_count[s_item][:, None]
    assert np.array_equal(got_best, best)
    assert np.array_equal(got_cls[valid], cls[valid])
    on = valid & (cls == 0)
    assert np.array_equal(got_same[on], same[on])
