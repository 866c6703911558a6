"""The CSG's cutting of faces in C (runtime_c/compiler/csg_cut.c) from Python.

csg._cut_faces is the reference: it cuts every live piece by its next cutter in rounds, so a
face cut by hundreds of brushes (a floor slab under a world of rooms) costs hundreds of rounds of
NumPy calls (slab_2000's hull unions: 0.8 s).  The kernel walks each face depth first and gives
the same pieces in the same order, to the bit (tests/core/test_csg_cut_c.py).  The CSG uses it
under the C backend (core/kernels.py)."""

from __future__ import annotations

import ctypes

import numpy as np

from ...native_lib import KernelBinding
from ...tolerances import ON_EPSILON

_P = ctypes.c_void_p
_I = ctypes.c_int64

#: faces cut by one call (cancel is checked between calls)
CHUNK = 4096


def _declare(lib) -> None:
    lib.bbkc_cut_faces.restype = _I
    lib.bbkc_cut_faces.argtypes = [_I] + [_P] * 8 + [_I] + [_P] * 5 + [ctypes.c_double, _I, _I] + [_P] * 5


BINDING = KernelBinding(_declare)


class KernelInputs:
    """bbkc_cut_faces' read-only arguments, C-contiguous, in its order after face_ids (the faces,
    their brushes and normals, the cutter lists, the brushes' planes and grown bounds)."""

    def __init__(self, faces: list[np.ndarray], face_brush, face_normal, cut_first, cutters, table):
        c = lambda a, t=np.int64: np.ascontiguousarray(a, dtype=t)  # noqa: E731
        self.sizes = np.array([len(f) for f in faces], dtype=np.int64)
        self.verts = c(np.concatenate(faces), np.float64) if faces else np.zeros((0, 3))
        self.vert_first = c(np.cumsum(self.sizes) - self.sizes)
        self.face_brush, self.face_normal = c(face_brush), c(face_normal, np.float64)
        self.cut_first, self.cutters = c(cut_first), c(cutters)
        self.k_max = int(table.normals.shape[1])
        self.plane_count = c(table.count)
        self.normals, self.dists = c(table.normals, np.float64), c(table.dists, np.float64)
        self.lo, self.hi = c(table.lo, np.float64), c(table.hi, np.float64)

    def arrays(self) -> list[np.ndarray]:
        """The arrays in the kernel's order (k_max, an int, goes after cutters)."""
        return [self.verts, self.vert_first, self.sizes, self.face_brush, self.face_normal, self.cut_first,
                self.cutters, self.plane_count, self.normals, self.dists, self.lo, self.hi]


def cut_faces(faces: list[np.ndarray], todo: np.ndarray, face_brush: np.ndarray, face_normal: np.ndarray,
              cut_first: np.ndarray, cutters: np.ndarray, table, check=None) -> list[list[np.ndarray]]:
    """For each face of `todo`: its pieces, as csg._cut_faces gives them (the face's own array
    where a piece is the whole face).  cut_first (F + 1,), cutters: each face's cutters that reach
    it, in brush order; table: csg._Cutters.  check(): called between chunks (cancel)."""
    lib = BINDING.library()
    inputs = KernelInputs(faces, face_brush, face_normal, cut_first, cutters, table)
    a = [x.ctypes.data for x in inputs.arrays()]
    read_only = [*a[:7], inputs.k_max, *a[7:]]
    todo = np.ascontiguousarray(todo, dtype=np.int64)
    out: list[list[np.ndarray]] = []
    at = 0
    room = 1
    while at < len(todo):
        if check is not None:
            check()
        part = todo[at: at + CHUNK]
        cap_pieces = room * (4 * len(part) + 64)
        cap_verts = room * (4 * int(inputs.sizes[part].sum()) + 256)
        face = np.zeros(cap_pieces, np.int64)
        count = np.zeros(cap_pieces, np.int64)
        whole = np.zeros(cap_pieces, np.uint8)
        pverts = np.zeros((cap_verts, 3))
        totals = np.zeros(2, np.int64)
        done = lib.bbkc_cut_faces(len(part), part.ctypes.data, *read_only, float(ON_EPSILON), cap_pieces, cap_verts,
                                  face.ctypes.data, count.ctypes.data, whole.ctypes.data, pverts.ctypes.data,
                                  totals.ctypes.data)
        if done < 0:
            raise MemoryError("the CSG's C kernel could not allocate its work space")
        if done == 0:  # the first face's pieces did not fit: twice the room, kept for the next calls
            room *= 2
            continue
        pverts = pverts[: int(totals[1])].copy()  # the pieces keep only what was written alive
        out.extend(pieces_of(faces, part[:done], face, count, whole, pverts, int(totals[0])))
        at += int(done)
    return out


def pieces_of(faces, part, face, count, whole, pverts, n: int) -> list[list[np.ndarray]]:
    """The kernel's output as each face of `part`'s list of pieces (face: each piece's face's
    place in part, ascending)."""
    face, count, whole = face[:n], count[:n], whole[:n].astype(bool)
    ends = np.cumsum(np.where(whole, 0, count))
    starts = ends - np.where(whole, 0, count)
    bounds = np.searchsorted(face, np.arange(len(part)), side="left").tolist() + [n]
    return [[faces[f] if whole[i] else pverts[starts[i]: ends[i]] for i in range(bounds[k], bounds[k + 1])]
            for k, f in enumerate(np.asarray(part).tolist())]
