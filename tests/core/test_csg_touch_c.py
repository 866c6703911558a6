"""The C kernel that finds which near brushes may cut each face (core/compile/trees/csg_touch_c.py,
runtime_c/compiler/csg_touch.c) against its NumPy reference (csg._touching_brushes), to the bit:

- random scenes of boxes, rotated boxes and wedges (hypothesis), touching, overlapping, apart
  and flush (faces exactly on another brush's plane, and a hair off it);
- whole unions of the sample scenes and of three maps, for the point hull and each Quake hull's
  expanded brushes, with either backend: the same faces;
- the kernel under ASan/UBSan (tests/c/touch_driver.c)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brushbake.core import kernels
from brushbake.core.compile.trees import csg, csg_touch_c
from brushbake.core.compile.trees.expand import expand_brushes
from brushbake.core.formats.loaders import load_scene
from brushbake.core.geometry import PlaneTable
from brushbake.core.model.brushes import brush_from_planes
from brushbake.core.model.hulls import quake_map_hulls
from brushbake.core.tolerances import ON_EPSILON

from sanitized import build_sanitized, run_sanitized

REPO = Path(__file__).resolve().parents[2]
SCENES = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "sample_scenes").glob("*.json")) + [
    "maps/ericw-tools/qbspfeatures.map", "maps/librequake/lq_e1m6.map", "maps/id/e1m7.map"]


@pytest.fixture(autouse=True)
def _kernel_or_skip():
    if not csg_touch_c.BINDING.available():
        pytest.skip("the native library does not load here (no C compiler)")


def _scene(rng, n: int):
    """n brushes on a 0.5 m grid: boxes (flush faces), rotated boxes and wedges, some a hair off."""
    out = []
    for i in range(n):
        lo = rng.integers(-6, 6, 3) * 0.5
        size = rng.integers(1, 5, 3) * 0.5
        normals = np.concatenate([np.eye(3), -np.eye(3)])
        dists = np.concatenate([lo + size, -lo])
        kind = rng.random()
        if kind < 0.3:  # a wedge: one slanted plane
            s = rng.normal(size=3)
            s /= np.sqrt((s * s).sum())
            normals = np.concatenate([normals, [s]])
            dists = np.concatenate([dists, [s @ (lo + size / 2) + rng.uniform(0, 0.5)]])
        elif kind < 0.5:  # rotated about z
            a = rng.uniform(0, np.pi)
            rot = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
            normals = normals @ rot.T
            dists = dists + normals @ (rng.normal(size=3) * 0.1)
        if rng.random() < 0.2:
            dists = dists + rng.choice([1e-12, -1e-12, ON_EPSILON, -ON_EPSILON])
        try:
            out.append(brush_from_planes(normals, dists, f"b{i}"))
        except Exception:
            pass
    return out


def _tables(brushes, backend):
    planes = PlaneTable()
    csg.brush_plane_ids(brushes, planes)
    table = csg._Cutters(brushes)
    near_of = csg._near_brushes(table.lo, table.hi)
    counts = np.array([len(b.dists) for b in brushes])
    offsets = np.concatenate([[0], np.cumsum(counts)])
    all_n = np.concatenate([b.normals for b in brushes])
    all_d = np.concatenate([b.dists for b in brushes])
    ids = list(range(len(brushes)))
    if backend == "c":
        return csg_touch_c.touching(brushes, ids, near_of, offsets, counts, all_n, all_d)
    return [csg._touching_brushes(brushes[i], near_of[i], counts, offsets, all_n, all_d) if len(near_of[i]) else None
            for i in ids]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40))
def test_c_tables_equal_numpy(seed, n):
    brushes = _scene(np.random.default_rng(seed), n)
    if not brushes:
        return
    for a, b in zip(_tables(brushes, "c"), _tables(brushes, "numpy")):
        assert (a is None and b is None) or (a.shape == b.shape and np.array_equal(a, b))


@pytest.mark.parametrize("name", SCENES)
def test_unions_equal_numpy(name):
    scene = load_scene(REPO / name)
    sets = [scene.brushes] + expand_brushes(scene.brushes, scene.hulls or quake_map_hulls(scene.settings.map_scale))
    for brushes in sets:
        got = {}
        for backend in ("numpy", "c"):
            planes = PlaneTable()
            ids = csg.brush_plane_ids(brushes, planes)
            with kernels.using(backend):
                out = csg.union_faces(brushes, ids, planes)
            got[backend] = (out.plane, out.brush, [np.ascontiguousarray(v).tobytes() for v in out.verts])
        assert got["numpy"] == got["c"]


@pytest.fixture(scope="module")
def sanitized_touch(tmp_path_factory):
    return build_sanitized(tmp_path_factory, "touch_driver", ["csg_touch"])


def test_sanitized_kernel_equals_numpy(sanitized_touch, tmp_path):
    brushes = _scene(np.random.default_rng(8), 40)
    table = csg._Cutters(brushes)
    near_of = csg._near_brushes(table.lo, table.hi)
    counts = np.array([len(b.dists) for b in brushes], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    faces = [f for b in brushes for f in b.faces]
    n_faces = [len(b.faces) for b in brushes]
    n_near = [len(x) for x in near_of]
    parts = [np.array([len(brushes), sum(len(f) for f in faces), len(faces), sum(n_near), len(brushes),
                       int(counts.sum())], dtype=np.int64), np.array([ON_EPSILON]), np.concatenate(faces),
             np.array([len(f) for f in faces], dtype=np.int64), np.concatenate([[0], np.cumsum(n_faces)]).astype(np.int64),
             np.concatenate([[0], np.cumsum(n_near)]).astype(np.int64),
             np.concatenate(near_of).astype(np.int64), offsets[:-1], counts,
             np.concatenate([b.normals for b in brushes]), np.concatenate([b.dists for b in brushes])]
    (tmp_path / "in.bin").write_bytes(b"".join(np.ascontiguousarray(p).tobytes() for p in parts))
    run_sanitized(sanitized_touch, tmp_path)
    got = np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype=np.uint8).astype(bool)
    want = [t for t in _tables(brushes, "numpy") if t is not None]
    assert np.array_equal(got, np.concatenate([t.reshape(-1) for t in want]))


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")  # the NaN box's grid cell
def test_a_nan_vertex_touches_as_in_numpy():
    """NumPy's extremes over a face with a NaN vertex are NaN, so no plane separates it: the kernel
    answers the same (such faces come from no loader, but the answer must not differ)."""
    brushes = _scene(np.random.default_rng(21), 30)
    brushes[0].faces[0] = brushes[0].faces[0].copy()
    brushes[0].faces[0][1, 2] = np.nan
    for a, b in zip(_tables(brushes, "c"), _tables(brushes, "numpy")):
        assert (a is None and b is None) or np.array_equal(a, b)
