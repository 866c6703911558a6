"""Brushes from their planes in C (runtime_c/compiler/brush_faces.c) from Python.

brushes._batch_polytope_vertices and _batch_assemble_faces are the reference: every triple of a
brush's planes intersected, the corners merged, each face's ring sorted by angle.  A map's brushes
and every hull's expanded brushes go through them (e3m4: about 4 s of its compile, most of it
NumPy's per-call cost on arrays of a few dozen rows).  The kernels do the same brush by brush with
the same operations in the same order, so the brushes are the reference's to the bit
(tests/core/test_brush_faces_c.py).  brushes_from_planes uses them under the C backend
(core/kernels.py).
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..errors import BackendUnavailableError
from ..native_lib import KernelBinding
from ..tolerances import MIN_EDGE_LENGTH, PARALLEL_DETERMINANT, VERTEX_EPSILON

_P = ctypes.c_void_p
_I = ctypes.c_int64
_D = ctypes.c_double


def _declare(lib) -> None:
    lib.bbkc_brush_vertices.restype = ctypes.c_int
    lib.bbkc_brush_vertices.argtypes = [_I, _I, _P, _P, _P, _I, _P, _D, _D, _D, _P, _P, _P]
    lib.bbkc_brush_faces.restype = ctypes.c_int
    lib.bbkc_brush_faces.argtypes = [_I, _I, _I, _P, _P, _P, _P, _P, _P, _D, _P, _P, _P]


BINDING = KernelBinding(_declare)


def brush_polytopes(normals: np.ndarray, dists: np.ndarray, good: np.ndarray, triples: np.ndarray):
    """For g brushes of k planes: (verts (g, t, 3), member (g, t, k) bool, vcount (g,), faces), faces
    a list per brush of (polygons, plane numbers, areas) for the good ones with at least 4 corners,
    as _batch_polytope_vertices and _batch_assemble_faces give them."""
    lib = BINDING.library()
    g, k = dists.shape
    t = len(triples)
    normals = np.ascontiguousarray(normals, dtype=np.float64)
    dists = np.ascontiguousarray(dists, dtype=np.float64)
    good_bytes = np.ascontiguousarray(good, dtype=np.uint8)
    tri = np.ascontiguousarray(triples, dtype=np.int64)
    verts = np.zeros((g, t, 3))
    member = np.zeros((g, t, k), dtype=np.uint8)
    vcount = np.zeros(g, dtype=np.int64)
    if lib.bbkc_brush_vertices(g, k, normals.ctypes.data, dists.ctypes.data, good_bytes.ctypes.data, t, tri.ctypes.data,
                               PARALLEL_DETERMINANT, VERTEX_EPSILON, MIN_EDGE_LENGTH, verts.ctypes.data,
                               member.ctypes.data, vcount.ctypes.data) != 0:
        raise BackendUnavailableError("the brush kernel ran out of memory.", hint="Use --backend numpy.")
    counts = member.sum(axis=1, dtype=np.int64)  # (g, k) corners on each plane
    face_ok = (counts >= 3) & (good & (vcount >= 4))[:, None]
    room = np.where(face_ok, counts, 0).reshape(-1)
    ring_first = np.cumsum(room) - room
    ring = np.zeros((int(room.sum()), 3))
    ring_count = np.zeros(g * k, dtype=np.int64)
    area = np.zeros(g * k)
    face_bytes = np.ascontiguousarray(face_ok, dtype=np.uint8)
    if lib.bbkc_brush_faces(g, k, t, normals.ctypes.data, verts.ctypes.data, member.ctypes.data, vcount.ctypes.data,
                            face_bytes.ctypes.data, ring_first.ctypes.data, MIN_EDGE_LENGTH, ring.ctypes.data,
                            ring_count.ctypes.data, area.ctypes.data) != 0:
        raise BackendUnavailableError("the brush kernel ran out of memory.", hint="Use --backend numpy.")
    faces = []
    ring_count = ring_count.reshape(g, k)
    area = area.reshape(g, k)
    ring_first = ring_first.reshape(g, k)
    for b in range(g):
        planes = np.flatnonzero(ring_count[b]).tolist()
        faces.append(([ring[ring_first[b, p]: ring_first[b, p] + ring_count[b, p]] for p in planes], planes,
                      [float(area[b, p]) for p in planes]))
    return verts, member.view(bool), vcount, faces
