"""The C kernel that cuts faces by the brushes reaching them (core/compile/trees/csg_cut_c.py,
runtime_c/compiler/csg_cut.c) against its NumPy reference (csg._cut_faces), to the bit:

- random scenes of boxes, rotated boxes and wedges (hypothesis), with their Quake hulls'
  expanded brushes: the same faces, pieces and order from union_faces under either backend;
- a floor cut by a grid of boxes standing on it (hundreds of pieces from one face: the kernel's
  output grows past its first room), and subtracting brushes (detail faces cut by structure);
- a NaN vertex, as the reference treats it;
- the kernel under ASan/UBSan (tests/c/cut_driver.c).
The unions of every sample scene and of three maps, for the point hull and each Quake hull, are
compared under both backends in tests/core/test_csg_touch_c.py (test_unions_equal_numpy), which
runs both C kernels of the CSG."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brushbake.core import kernels
from brushbake.core.compile.trees import csg, csg_cut_c
from brushbake.core.compile.trees.expand import expand_brushes
from brushbake.core.geometry import PlaneTable
from brushbake.core.model.brushes import brush_from_planes
from brushbake.core.model.hulls import quake_map_hulls
from brushbake.core.tolerances import ON_EPSILON

from sanitized import build_sanitized, run_sanitized
from test_csg_touch_c import _scene


@pytest.fixture(autouse=True)
def _kernel_or_skip():
    if not csg_cut_c.BINDING.available():
        pytest.skip("the native library does not load here (no C compiler)")


def _union(brushes, backend, subtract_from=0):
    planes = PlaneTable()
    ids = csg.brush_plane_ids(brushes, planes)
    with kernels.using(backend):
        out = csg.union_faces(brushes, ids, planes, subtract_from=subtract_from)
    return out.plane, out.brush, [np.ascontiguousarray(v).tobytes() for v in out.verts]


def _box(lo, hi, name):
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    return brush_from_planes(np.concatenate([np.eye(3), -np.eye(3)]), np.concatenate([hi, -lo]), name)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40))
def test_c_unions_equal_numpy(seed, n):
    brushes = _scene(np.random.default_rng(seed), n)
    if not brushes:
        return
    for group in [brushes] + expand_brushes(brushes, quake_map_hulls(1.0 / 32.0)):
        assert _union(group, "c") == _union(group, "numpy")


def test_a_floor_cut_by_a_grid_of_boxes(monkeypatch):
    """One floor face under 144 boxes (some flush with each other, some a hair off the floor):
    its pieces outgrow the kernel's first room, which is doubled until they fit (one face a call:
    that face is the first of its call)."""
    rng = np.random.default_rng(3)
    brushes = [_box([-1.0, -1.0, -0.5], [25.0, 25.0, 0.0], "floor")]
    for i in range(12):
        for j in range(12):
            lo = np.array([2.0 * i, 2.0 * j, 0.0]) + rng.uniform(0.0, 0.5, 3) * [1, 1, 0]
            lift = rng.choice([0.0, 0.0, 1e-12, -1e-12, ON_EPSILON])
            brushes.append(_box(lo + [0, 0, lift], lo + [1.0 + rng.uniform(0, 1.5), 1.0, 2.0], f"b{i}_{j}"))
    calls = []
    real = csg_cut_c.BINDING.library().bbkc_cut_faces

    class Spy:
        def __getattr__(self, name):
            return getattr(csg_cut_c.BINDING.library(), name)

        def bbkc_cut_faces(self, *args):
            done = real(*args)
            calls.append(done)
            return done

    monkeypatch.setattr(csg_cut_c.BINDING, "library", lambda: Spy())
    monkeypatch.setattr(csg_cut_c, "CHUNK", 1)  # a face a call: room for 68 pieces at first
    assert _union(brushes, "c") == _union(brushes, "numpy")
    assert 0 in calls  # the floor did not fit at first


def test_subtracting_brushes_cut_only():
    brushes = _scene(np.random.default_rng(11), 30)
    for k in (1, 10, 25):
        assert _union(brushes, "c", subtract_from=k) == _union(brushes, "numpy", subtract_from=k)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_a_nan_vertex_cuts_as_in_numpy():
    """A face with a NaN vertex (no loader makes one) gets the reference's pieces: NaN extremes
    decide nothing, NaN bounds reach no brush."""
    brushes = _scene(np.random.default_rng(21), 30)
    brushes[0].faces[0] = brushes[0].faces[0].copy()
    brushes[0].faces[0][1, 2] = np.nan
    a, b = _union(brushes, "c"), _union(brushes, "numpy")
    assert a[:2] == b[:2] and len(a[2]) == len(b[2])
    same = [x == y or np.array_equal(np.frombuffer(x), np.frombuffer(y), equal_nan=True) for x, y in zip(a[2], b[2])]
    assert all(same)


@pytest.fixture(scope="module")
def sanitized_cut(tmp_path_factory):
    return build_sanitized(tmp_path_factory, "cut_driver", ["csg_cut", "split"])


def test_sanitized_kernel_equals_numpy(sanitized_cut, tmp_path, monkeypatch):
    """The kernel's inputs from a real union (boxes on a floor and a random scene), run by the
    sanitized driver: the same pieces as the reference's, with a room too small for the first
    face (nothing done, nothing written past the room) and with room enough."""
    brushes = _scene(np.random.default_rng(8), 40) + [_box([-4.0, -4.0, -4.0], [4.0, 4.0, -3.0], "floor")]
    seen = {}

    def spy(faces, todo, face_brush, face_normal, cut_first, cutters, table, check=None):
        seen.update(faces=faces, todo=todo, table=table,
                    inputs=csg_cut_c.KernelInputs(faces, face_brush, face_normal, cut_first, cutters, table))
        return real(faces, todo, face_brush, face_normal, cut_first, cutters, table, check)

    real = csg_cut_c.cut_faces
    monkeypatch.setattr(csg_cut_c, "cut_faces", spy)
    _union(brushes, "c")
    monkeypatch.undo()
    faces, todo, inputs, table = seen["faces"], np.asarray(seen["todo"], np.int64), seen["inputs"], seen["table"]
    for cap_pieces, cap_verts in ((1, 1), (10 * len(todo) + 64, 10 * len(inputs.verts) + 64)):
        head = np.array([len(todo), len(inputs.sizes), len(inputs.verts), len(inputs.cutters), len(inputs.plane_count),
                         inputs.k_max, cap_pieces, cap_verts], dtype=np.int64)
        parts = [head, np.array([ON_EPSILON]), todo, *inputs.arrays()]
        (tmp_path / "in.bin").write_bytes(b"".join(np.ascontiguousarray(p).tobytes() for p in parts))
        run_sanitized(sanitized_cut, tmp_path)
        raw = (tmp_path / "out.bin").read_bytes()
        done, n, nv = np.frombuffer(raw[:24], dtype=np.int64)
        if cap_pieces == 1:
            assert done == 0 and n == 0 and nv == 0
            continue
        assert done == len(todo)
        at = 24
        face = np.frombuffer(raw[at: at + 8 * n], np.int64)
        count = np.frombuffer(raw[at + 8 * n: at + 16 * n], np.int64)
        whole = np.frombuffer(raw[at + 16 * n: at + 17 * n], np.uint8)
        verts = np.frombuffer(raw[at + 17 * n:], np.float64).reshape(-1, 3)
        got = csg_cut_c.pieces_of(faces, todo, face, count, whole, verts, int(n))
        with kernels.using("numpy"):  # the cutter lists already reach-filtered: filtering again keeps them
            ref = csg._cut_faces(faces, inputs.face_brush, inputs.face_normal,
                                 [inputs.cutters[inputs.cut_first[f]: inputs.cut_first[f + 1]] for f in range(len(faces))],
                                 table, None)
        assert [[p.tobytes() for p in ref[f]] for f in todo.tolist()] == [[p.tobytes() for p in f] for f in got]



def test_faces_in_any_order_and_pieces_that_hold_only_themselves(monkeypatch):
    """cut_faces answers each face of `todo` whatever their order (the kernel names a piece's face
    by its place in the call), and its pieces keep alive only the vertices written, not the room."""
    brushes = _scene(np.random.default_rng(5), 40) + [_box([-4.0, -4.0, -4.0], [4.0, 4.0, -3.0], "floor")]
    seen = {}
    real = csg_cut_c.cut_faces

    def spy(faces, todo, *args, **kwargs):
        seen.update(faces=faces, todo=todo, args=args)
        return real(faces, todo, *args, **kwargs)

    monkeypatch.setattr(csg_cut_c, "cut_faces", spy)
    _union(brushes, "c")
    monkeypatch.undo()
    todo = np.asarray(seen["todo"])
    forward = real(seen["faces"], todo, *seen["args"])
    backward = real(seen["faces"], todo[::-1].copy(), *seen["args"])
    assert [[p.tobytes() for p in f] for f in backward[::-1]] == [[p.tobytes() for p in f] for f in forward]
    written = sum(len(p) for f in forward for p in f if p.base is not None)
    assert all(p.base is None or len(p.base) <= written for f in forward for p in f)
