"""The C run-time (runtime_c/brushbake.c) from Python, through ctypes: the `backend="c"` of the
batch queries.

The library is core/native_lib.py's: the shipped one (the brushbake_native wheel, built ahead of
time), else one built from runtime_c/ with the machine's C compiler into a cache folder (ahead of
time: `python -m brushbake.core.runtime.cruntime`).  Where neither can be had (Blender on a
platform with no wheel and no compiler) BackendUnavailableError says why, and the NumPy run-time
answers as always: it stays the reference and the default.

The C answers are the NumPy answers (tests/core/test_cruntime.py compares them on every sample
scene and map): same hit and kind, the same t to the bit where the Python computes in the same
order (it does for traces, points and plane shifting; -ffp-contract=off keeps the compiler from
fusing multiply-adds).  The C loader checks the file as exporters/native.py does.

Only the standard library (ctypes) and NumPy; nothing of compile/ or formats/.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ...exporters.native import (
    level_to_bytes,  # the one writer of the .bbk bytes the C loader reads
)
from .. import native_lib
from ..errors import BackendUnavailableError, LevelFormatError, UnknownHullError
from .results import Hits, MoveBatch

BACKENDS = ("numpy", "c")

#: brushbake.h's bbk_hit, one record per answer
HIT_DTYPE = np.dtype([("fraction", "<f8"), ("point", "<f8", (3,)), ("normal", "<f8", (3,)), ("impact", "<f8", (3,)),
                      ("plane", "<i4"), ("start_solid", "<i4"), ("hit", "<i4"), ("nodes_visited", "<i4")])
SHAPE_KINDS = {"Point": 0, "Sphere": 1, "Cylinder": 2, "Box": 3, "ConvexHull": 4}

ERR_NO_HULL, ERR_NO_VIS = 23, 24  # brushbake.h's BBK_ERR_NO_HULL, BBK_ERR_NO_VIS
#: batches up to this many segments reuse one packing buffer per level (48 bytes a segment)
KEEP_SEGMENTS = 1 << 18

#: brushbake.h's bbk_cull_stats, one record per camera; the modes' numbers (BBK_CULL_PVS ...)
CULL_STATS_DTYPE = np.dtype([("leaves", "<u4"), ("faces", "<u4"), ("clusters", "<u4"), ("camera_leaf", "<i4"),
                             ("camera_cluster", "<i4"), ("overflow", "<i4")])
CULL_MODE_NUMBERS = {"pvs": 0, "frustum": 1, "portal": 2}
CULL_BACK_TO_FRONT = 1


#: brushbake.h's bbk_transition
TRANSITION_DTYPE = np.dtype([("kind", "<i4"), ("plane", "<i4"), ("t", "<f8")])

MOVE_DTYPE = np.dtype([("position", "<f8", (3,)), ("velocity", "<f8", (3,)), ("ground_normal", "<f8", (3,)),
                       ("on_ground", "<i4"), ("clip_planes", "<i4"), ("stepped", "<i4"), ("blocked", "<i4"),
                       ("start_solid", "<i4"), ("reverted", "<i4")])


class _MoveSettings(ctypes.Structure):
    _fields_ = [("max_clip_planes", ctypes.c_int32), ("max_bumps", ctypes.c_int32)] + [
        (name, ctypes.c_double) for name in ("step_height", "ground_normal_z", "overclip", "surface_gap",
                                             "ground_probe", "nudge_speed", "into_epsilon")]


class _Shape(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("reserved", ctypes.c_int32), ("radius", ctypes.c_double),
                ("height", ctypes.c_double), ("half", ctypes.c_double * 3), ("points", ctypes.c_void_p),
                ("point_count", ctypes.c_size_t)]


_LIBRARY = None


def library() -> ctypes.CDLL:
    """The loaded C run-time (native_lib's library, its functions declared); BackendUnavailableError
    where there is none."""
    global _LIBRARY
    lib = native_lib.load_library()
    if _LIBRARY is not lib:
        _declare(lib)
        _LIBRARY = lib
    return lib


def library_path():
    """The path of the library that runs (shipped or built; built now when neither is there)."""
    library()
    return native_lib.backend_report().path


def available() -> bool:
    try:
        library()
    except BackendUnavailableError:
        return False
    return True


def _declare(lib) -> None:
    p, size, u32, i32 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32, ctypes.c_int
    lib.bbk_load.argtypes = [ctypes.c_char_p, size, ctypes.POINTER(p), ctypes.c_char_p, size]
    lib.bbk_free.argtypes = [p]
    lib.bbk_free.restype = None
    lib.bbk_error_name.argtypes = [i32]
    lib.bbk_error_name.restype = ctypes.c_char_p
    lib.bbk_get_info.argtypes = [p, p]
    lib.bbk_get_info.restype = None
    lib.bbk_point_leaf_many.argtypes = [p, size, p, p]
    lib.bbk_point_solid_many.argtypes = [p, u32, size, p, p]
    lib.bbk_trace_many.argtypes = [p, u32, size, p, i32, p]
    lib.bbk_trace_many_split.argtypes = [p, u32, size, p, p, i32, p]
    lib.bbk_trace_many_arrays.argtypes = [p, u32, size, p, p, i32, p, p, p, p, p, p]
    lib.bbk_find_first_transition_many.argtypes = [p, u32, size, p, p]
    lib.bbk_shift_trace_many.argtypes = [p, ctypes.POINTER(_Shape), size, p, p]
    lib.bbk_can_see_points_many.argtypes = [p, size, p, p]
    lib.bbk_visible_leaves.argtypes = [p, p, p, u32, p]
    lib.bbk_move_many.argtypes = [p, u32, size, p, p, p, ctypes.POINTER(_MoveSettings), p, i32, p]
    lib.bbk_cull.argtypes = [p, p, i32, i32, p, u32, p, u32, p]
    lib.bbk_cull_many.argtypes = [p, size, p, i32, p, p]


class CLevel:
    """A level loaded into the C run-time (from its .bbk bytes).  Queries take NumPy arrays and
    answer as the NumPy run-time's batch queries do."""

    def __init__(self, data: bytes, name: str = "<bytes>", hull_names=(), lib=None):
        if lib is not None:  # another library than native_lib's (tests compare two builds)
            _declare(lib)
        self._lib = library() if lib is None else lib
        self._handle = ctypes.c_void_p()
        message = ctypes.create_string_buffer(512)
        self._data = bytes(data)
        code = self._lib.bbk_load(self._data, len(self._data), ctypes.byref(self._handle), message, len(message))
        if code != 0:
            reason = message.value.decode("utf-8", "replace") or self._lib.bbk_error_name(code).decode()
            raise LevelFormatError(f"the C loader rejects it: {reason} (code {code}).", subject=name,
                                   hint="Rebake the level.")
        self.hull_names = list(hull_names)

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle:
            self._lib.bbk_free(handle)
            self._handle = None

    def _check(self, code: int, hull: int | None = None) -> None:
        if code == 0:
            return
        if code == ERR_NO_HULL:
            names = ", ".join(f"{i} {n}" for i, n in enumerate(self.hull_names))
            raise UnknownHullError(f"has no hull {hull!r}; its hulls are: {names}.", subject="level",
                                   hint="Query one of those, or rebake the level with the hull you need.")
        name = self._lib.bbk_error_name(code).decode()
        raise ValueError(f"the C run-time refused the query: {name} (code {code})")

    @staticmethod
    def _rows(a, tail: tuple) -> np.ndarray:
        return np.ascontiguousarray(np.asarray(a, dtype=np.float64).reshape((-1, *tail)))

    def point_leaves(self, points) -> np.ndarray:
        pts = self._rows(points, (3,))
        out = np.zeros(len(pts), dtype=np.int32)
        self._check(self._lib.bbk_point_leaf_many(self._handle, len(pts), pts.ctypes.data, out.ctypes.data))
        return out.astype(np.int64)

    def point_solid(self, points, hull: int = 0) -> np.ndarray:
        pts = self._rows(points, (3,))
        out = np.zeros(len(pts), dtype=np.uint8)
        self._check(self._lib.bbk_point_solid_many(self._handle, _hull(hull), len(pts), pts.ctypes.data,
                                                   out.ctypes.data), hull)
        return out

    @staticmethod
    def _hits(raw: np.ndarray, impact: bool) -> Hits:
        """The answers as Hits: fraction, point, normal and impact are views of the C's records
        (copying them, and faulting in the pages of the copies, cost more than the C's walk)."""
        plane = raw["plane"].astype(np.int64)
        return Hits(raw["fraction"], raw["point"], raw["normal"], plane, raw["start_solid"] != 0, raw["hit"] != 0,
                    raw["impact"] if impact else None, raw["nodes_visited"].astype(np.int64) if impact else None)

    def trace(self, starts, ends, hull: int = 0, retry: bool = True) -> Hits:
        s, e = self._rows(starts, (3,)), self._rows(ends, (3,))  # read where they are: no packing
        if s.shape != e.shape:
            raise ValueError(f"starts {s.shape} and ends {e.shape} differ in shape")
        # the C writes each answer's fields straight into the Hits arrays (no records to take apart),
        # views of one block (one allocation: the memory allocator hands the same pages back next call)
        n = len(s)
        block = np.empty(66 * n, dtype=np.uint8)
        fraction, point, normal = (block[:8 * n].view(np.float64), block[8 * n:32 * n].view(np.float64).reshape(n, 3),
                                   block[32 * n:56 * n].view(np.float64).reshape(n, 3))
        plane, start_solid, hit = (block[56 * n:64 * n].view(np.int64), block[64 * n:65 * n].view(np.bool_),
                                   block[65 * n:].view(np.bool_))
        self._check(self._lib.bbk_trace_many_arrays(self._handle, _hull(hull), n, s.ctypes.data, e.ctypes.data,
                                                    int(bool(retry)), fraction.ctypes.data, point.ctypes.data,
                                                    normal.ctypes.data, plane.ctypes.data, start_solid.ctypes.data,
                                                    hit.ctypes.data), hull)
        return Hits(fraction, point, normal, plane, start_solid, hit)

    def transitions(self, segments, hull: int = 0) -> np.ndarray:
        """find_first_transitions (core/runtime/trace.py) for (N, 2, 3) float64 C-contiguous
        segments: a TRANSITION_DTYPE record array (kind, plane, t), the same answers.  The call
        releases the GIL; one CLevel serves one thread at a time (the walk's scratch is the
        level's), so threads each take their own (copy())."""
        seg = self._rows(segments, (2, 3))
        out = np.zeros(len(seg), dtype=TRANSITION_DTYPE)
        self._check(self._lib.bbk_find_first_transition_many(self._handle, _hull(hull), len(seg), seg.ctypes.data,
                                                             out.ctypes.data), hull)
        return out

    def copy(self) -> "CLevel":
        """The same level loaded again (its own scratch: for a second thread)."""
        return CLevel(self._data, "level", self.hull_names, self._lib)

    def shift(self, shape, starts, ends) -> Hits:
        kind = SHAPE_KINDS.get(type(shape).__name__)
        if kind is None:
            raise ValueError(f"the C run-time sweeps points, spheres, cylinders, boxes and convex hulls, not a "
                             f"{type(shape).__name__}")
        points = np.ascontiguousarray(getattr(shape, "points", np.zeros((0, 3))), dtype=np.float64)  # kept alive
        c_shape = _Shape(kind, 0, float(getattr(shape, "radius", 0.0)), float(getattr(shape, "height", 0.0)),
                         (ctypes.c_double * 3)(*[float(v) for v in getattr(shape, "half", (0.0, 0.0, 0.0))]),
                         points.ctypes.data if len(points) else None, len(points))
        seg = self._segments(starts, ends)
        raw = np.empty(len(seg), dtype=HIT_DTYPE)  # the C writes every field
        self._check(self._lib.bbk_shift_trace_many(self._handle, ctypes.byref(c_shape), len(seg), seg.ctypes.data,
                                                   raw.ctypes.data))
        return self._hits(raw, impact=True)

    def can_see_points(self, pairs) -> np.ndarray:
        p = self._rows(pairs, (2, 3))
        out = np.zeros(len(p), dtype=np.uint8)
        self._check(self._lib.bbk_can_see_points_many(self._handle, len(p), p.ctypes.data, out.ctypes.data))
        return out

    def move(self, hull: int, positions, velocities, dt, settings, ground_normals=None, step: bool = False):
        """slide_move_batch / step_slide_move_batch (core/runtime/move.py) in C: a MoveBatch."""
        pos = self._rows(positions, (3,))
        vel = np.ascontiguousarray(np.broadcast_to(self._rows(velocities, (3,)), pos.shape))
        dts = np.ascontiguousarray(np.broadcast_to(np.asarray(dt, dtype=np.float64).ravel(), (len(pos),)))
        ground = None if ground_normals is None else np.ascontiguousarray(
            np.broadcast_to(self._rows(ground_normals, (3,)), pos.shape))
        c_settings = _MoveSettings(*(getattr(settings, f) for f, _ in _MoveSettings._fields_))
        raw = np.zeros(len(pos), dtype=MOVE_DTYPE)
        self._check(self._lib.bbk_move_many(self._handle, _hull(hull), len(pos), pos.ctypes.data, vel.ctypes.data,
                                            dts.ctypes.data, ctypes.byref(c_settings),
                                            None if ground is None else ground.ctypes.data, int(bool(step)),
                                            raw.ctypes.data), hull)
        return MoveBatch(raw["position"].copy(), raw["velocity"].copy(), raw["on_ground"] != 0,
                         raw["ground_normal"].copy(), raw["clip_planes"].astype(np.int64), raw["stepped"] != 0,
                         raw["blocked"] != 0, raw["start_solid"] != 0, raw["reverted"] != 0)

    def visible_leaves(self, point) -> np.ndarray:
        """The leaves one point's PVS holds (pvs.Visibility.visible_leaves), in increasing order."""
        p = self._rows(point, (3,))[0].copy()
        count = ctypes.c_uint32()
        self._check(self._lib.bbk_visible_leaves(self._handle, p.ctypes.data, None, 0, ctypes.byref(count)))
        out = np.zeros(max(count.value, 1), dtype=np.uint32)
        self._check(self._lib.bbk_visible_leaves(self._handle, p.ctypes.data, out.ctypes.data, len(out),
                                                 ctypes.byref(count)))
        return out[: count.value].astype(np.int64)

    def cull(self, cameras, mode: str):
        """What each of (N, 8) checked cameras (camera.as_cameras) draws in `mode`: (N, L) bool
        leaves drawn and the (N,) bbk_cull_stats records (cull.cull's answers)."""
        cams = self._rows(cameras, (8,))
        leaves = self.num_leaves()
        drawn = np.zeros((len(cams), leaves), dtype=np.uint8)
        stats = np.zeros(len(cams), dtype=CULL_STATS_DTYPE)
        self._check(self._lib.bbk_cull_many(self._handle, len(cams), cams.ctypes.data, CULL_MODE_NUMBERS[mode],
                                            drawn.ctypes.data, stats.ctypes.data))
        return drawn.view(bool), stats

    def cull_camera(self, camera, mode: str, back_to_front: bool = False):
        """One camera: (leaves, faces) it draws (cull.cull_camera's answer), from bbk_cull."""
        cam = self._rows(camera, (8,))[0].copy()
        stats = np.zeros(1, dtype=CULL_STATS_DTYPE)
        flags = CULL_BACK_TO_FRONT if back_to_front else 0
        self._check(self._lib.bbk_cull(self._handle, cam.ctypes.data, CULL_MODE_NUMBERS[mode], flags, None, 0, None, 0,
                                       stats.ctypes.data))
        leaves = np.zeros(max(int(stats["leaves"][0]), 1), dtype=np.uint32)
        faces = np.zeros(max(int(stats["faces"][0]), 1), dtype=np.uint32)
        self._check(self._lib.bbk_cull(self._handle, cam.ctypes.data, CULL_MODE_NUMBERS[mode], flags, leaves.ctypes.data,
                                       len(leaves), faces.ctypes.data, len(faces), stats.ctypes.data))
        return leaves[: stats["leaves"][0]].astype(np.int64), faces[: stats["faces"][0]].astype(np.int64)

    def num_leaves(self) -> int:
        if not hasattr(self, "_leaves"):
            info = ctypes.create_string_buffer(256)  # bbk_info: 2 x u16, 13 x u32, 6 doubles (< 128 bytes)
            self._lib.bbk_get_info(self._handle, info)
            self._leaves = int(np.frombuffer(info.raw, dtype=np.uint32, count=4)[3])  # (versions), planes, nodes, leaves
        return self._leaves

    def _segments(self, starts, ends) -> np.ndarray:
        """(N, 2, 3) start, end rows for the C, in a buffer kept between calls (a level answers one
        thread at a time, as its C scratch does)."""
        s, e = self._rows(starts, (3,)), self._rows(ends, (3,))
        if s.shape != e.shape:
            raise ValueError(f"starts {s.shape} and ends {e.shape} differ in shape")
        buf = getattr(self, "_segment_buffer", None)
        if buf is None or len(buf) < len(s):
            buf = np.empty((len(s), 2, 3))
            if len(s) <= KEEP_SEGMENTS:
                self._segment_buffer = buf
        seg = buf[: len(s)]
        seg[:, 0], seg[:, 1] = s, e
        return seg


def _hull(hull) -> int:
    hull = int(hull)
    return hull if 0 <= hull < 2**32 else 2**32 - 1  # the C answers 'no such hull' for out of range


def c_level(level) -> CLevel:
    """The level in the C run-time, loaded once and kept with the level (while its arrays are the
    same objects).  The bytes are the level's .bbk bytes (exporters.native.level_to_bytes: the
    one place that writes the format; imported here, lazily, only for the C backend)."""
    if isinstance(level, CLevel):
        return level
    fields = [v for k, v in vars(level).items() if isinstance(v, np.ndarray)]
    return level.cached("c_level", lambda: CLevel(level_to_bytes(level), "level", level.hull_names), *fields)


def check_backend(backend: str) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    return backend


if __name__ == "__main__":  # build ahead of time: python -m brushbake.core.runtime.cruntime
    print(library_path())
