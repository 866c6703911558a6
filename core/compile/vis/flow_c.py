"""The full flow's C kernel (runtime_c/compiler/vis_flow.c) from Python, through ctypes: one call
flows one source portal to the end, the whole of pvs_merged._Wave for that source, so Python pays
nothing per state or per batch.  The C gives the NumPy path's rows, states and growths bit for bit
(tests/core/test_pvs_flow_c.py); the NumPy path stays the reference and the fallback where no
library loads.  ctypes lets go of the GIL during a call, so threads run sources side by side.

Only the standard library and NumPy.  The library is the project's one native library
(core/native_lib.py: shipped, or built from runtime_c/brushbake.c and runtime_c/compiler/*.c);
where it cannot be had, 'auto' answers with NumPy and 'c' says why.
"""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path

import numpy as np

from ...errors import BackendUnavailableError, CancelledError
from ...native_lib import compiler_kernels, load_library

KERNEL_DIR = Path(__file__).resolve().parents[3] / "runtime_c" / "compiler"

_P = ctypes.c_void_p
_I = ctypes.c_int64
_D = ctypes.c_double


class FlowInputs(ctypes.Structure):
    """bbk_compiler.h's bbkc_flow."""

    _fields_ = [("num_portals", _I), ("num_clusters", _I), ("width", _I), ("kdop", _I),
                ("windings", _P), ("count", _P), ("normal", _P), ("dist", _P), ("plane", _P), ("src", _P),
                ("dst", _P), ("dirs", _P), ("full", _P), ("centre", _P), ("first", _P), ("leaving", _P),
                ("flood_bits", _P), ("might_cl", _P), ("test_cl", _P), ("flood_stride", _I), ("cl_stride", _I),
                ("clip_margin", _D), ("plane_epsilon", _D), ("min_normal", _D), ("growth_epsilon", _D),
                ("wait_key_step", _D), ("max_growth", _I), ("order_k", _I), ("max_winding", _I)]


class FlowCounts(ctypes.Structure):
    _fields_ = [("expanded", _I), ("clipped", _I), ("most_growths", _I)]


_LOCK = threading.Lock()
_LIB = None


def _load() -> ctypes.CDLL:
    return load_library()


def library() -> ctypes.CDLL:
    """The library holding the kernels; BackendUnavailableError where it cannot be had."""
    global _LIB
    with _LOCK:
        if _LIB is None:
            lib = compiler_kernels(_load)
            lib.bbkc_plane_portal_reach.restype = ctypes.c_int
            lib.bbkc_plane_portal_reach.argtypes = [_I, _I, _P, _P, _P, _P, _P, _P, _D, _I, _I, _P, _P]
            lib.bbkc_allowed.restype = ctypes.c_int
            lib.bbkc_allowed.argtypes = [_I, _P, _P, _I, _I, _P]
            for name in ("bbkc_flood", "bbkc_cluster_rows"):
                fn = getattr(lib, name)
                fn.restype = ctypes.c_int
                fn.argtypes = [_I, _I, _P, _P, _P, _P, _I, _I, _P]
            lib.bbkc_reach_bits.restype = ctypes.c_int
            lib.bbkc_reach_bits.argtypes = [_I, _I, _P, _P, _P, _P, _P, _P, _D, _I, _I, _I, _P, _P, _P, _P]
            lib.bbkc_reach_bits_rep.restype = ctypes.c_int
            lib.bbkc_reach_bits_rep.argtypes = [_I, _I, _P, _P, _P, _P, _P, _P, _D, _P, _I, _I, _I, _P, _P, _P, _P]
            lib.bbkc_bits_transpose.restype = ctypes.c_int
            lib.bbkc_bits_transpose.argtypes = [_I, _I, _P, _I, _I, _P]
            lib.bbkc_flood_bits.restype = ctypes.c_int
            lib.bbkc_flood_bits.argtypes = [_I, _I, _P, _P, _P, _I, _P, _P, _P, _P, _I, _I, _I, _P, _I, _P, _P]
            lib.bbkc_cluster_rows_bits.restype = ctypes.c_int
            lib.bbkc_cluster_rows_bits.argtypes = [_I, _P, _P, _P, _I, _P, _I, _I, _P]
            lib.bbkc_flow_source.restype = ctypes.c_int
            lib.bbkc_flow_source.argtypes = [ctypes.POINTER(FlowInputs), _I, _P, ctypes.POINTER(FlowCounts)]
            lib.bbkc_flow_sources.restype = ctypes.c_int
            lib.bbkc_flow_sources.argtypes = [ctypes.POINTER(FlowInputs), _P, _I, _P, _P]
            _LIB = lib
        return _LIB


def available() -> bool:
    try:
        library()
        return True
    except BackendUnavailableError:
        return False


def _ptr(a: np.ndarray):
    return a.ctypes.data


class FlowKernel:
    """The flow's read-only tables, packed once, and a call per source.  The arrays are kept here
    (the C holds their addresses); test_cl is the flow's own array, written between waves."""

    def __init__(self, dp, flood_bits, might_cl, test_cl, dirs, full, centre, first, leaving, constants: dict):
        self.lib = library()
        c = np.ascontiguousarray
        self.keep = [c(dp.windings, dtype=np.float64), c(dp.count, dtype=np.int64), c(dp.normal, dtype=np.float64),
                     c(dp.dist, dtype=np.float64), c(dp.plane, dtype=np.int64), c(dp.src, dtype=np.int64),
                     c(dp.dst, dtype=np.int64), c(dirs, dtype=np.float64), c(full, dtype=np.float64),
                     c(centre, dtype=np.float64), c(first, dtype=np.int64), c(leaving, dtype=np.int64),
                     c(flood_bits, dtype=np.uint8), c(might_cl, dtype=np.uint8)]
        if not (test_cl.flags.c_contiguous and test_cl.dtype == np.uint8):
            raise ValueError("test_cl must be a C-contiguous uint8 array (it is written in place between waves)")
        self.test_cl = test_cl
        w, n, nrm, dist, plane, src, dst, dirs_, full_, cen, first_, leav, flood_, might_ = self.keep
        self.cl_stride = might_.shape[1]
        self.inputs = FlowInputs(
            dp.num, dp.num_clusters, w.shape[1], dirs_.shape[1], _ptr(w), _ptr(n), _ptr(nrm), _ptr(dist), _ptr(plane),
            _ptr(src), _ptr(dst), _ptr(dirs_), _ptr(full_), _ptr(cen), _ptr(first_), _ptr(leav), _ptr(flood_),
            _ptr(might_), _ptr(test_cl), flood_.shape[1], might_.shape[1], constants["clip_margin"],
            constants["plane_epsilon"], constants["min_normal"], constants["growth_epsilon"],
            constants["wait_key_step"], constants["max_growth"], constants["order_k"], constants["max_winding"])

    def run(self, sources: np.ndarray, cancel=None):
        """(packed rows (W, cl_stride), expanded, clipped, most growths) for the sources, in order:
        one call for them all (bbkc_flow_sources: the work buffers made once, not per source)."""
        rows = np.zeros((len(sources), self.cl_stride), dtype=np.uint8)
        counts = np.zeros((len(sources), 3), dtype=np.int64)  # bbkc_flow_counts per source
        if cancel is not None and cancel():
            raise CancelledError()
        src = np.ascontiguousarray(sources, dtype=np.int64)
        if len(src):
            rc = self.lib.bbkc_flow_sources(ctypes.byref(self.inputs), src.ctypes.data, len(src), rows.ctypes.data,
                                            counts.ctypes.data)
            if rc != 0:
                raise MemoryError(f"the flow's C kernel failed (code {rc}) on portals {src[:8].tolist()}...")
        return rows, int(counts[:, 0].sum()), int(counts[:, 1].sum()), int(counts[:, 2].max(initial=0))


def _csr_call(name: str, dp, table: np.ndarray, out: np.ndarray, count: int, cancel, chunk: int) -> None:
    lib = library()
    first, leaving = dp.leaving()
    first = np.ascontiguousarray(first, dtype=np.int64)
    leaving = np.ascontiguousarray(leaving, dtype=np.int64)
    dst = np.ascontiguousarray(dp.dst, dtype=np.int64)
    table = np.ascontiguousarray(table)
    assert table.dtype == np.bool_ and out.dtype == np.bool_ and out.flags.c_contiguous
    fn = getattr(lib, name)
    for lo in range(0, count, chunk):
        if cancel is not None and cancel():
            raise CancelledError()
        rc = fn(dp.num, dp.num_clusters, _ptr(first), _ptr(leaving), _ptr(dst), _ptr(table), lo,
                min(count, lo + chunk), _ptr(out))
        if rc != 0:
            raise MemoryError(f"{name} failed (code {rc})")


def base_portal_vis(w, count, normal, dist, centre, radius, eps: float) -> np.ndarray:
    """pvs_flow.base_portal_vis by the C kernels, from the undirected portals' windings, planes and
    bounding spheres (pvs_flow._spheres): the same (D, D) bool table."""
    lib = library()
    c = np.ascontiguousarray
    w, count, normal, dist = c(w, dtype=np.float64), c(count, dtype=np.int64), c(normal, dtype=np.float64), \
        c(dist, dtype=np.float64)
    centre, radius = c(centre, dtype=np.float64), c(radius, dtype=np.float64)
    p = len(count)
    above = np.zeros((p, p), dtype=bool)
    below = np.zeros((p, p), dtype=bool)
    rc = lib.bbkc_plane_portal_reach(p, w.shape[1], _ptr(w), _ptr(count), _ptr(normal), _ptr(dist), _ptr(centre),
                                     _ptr(radius), eps, 0, p, _ptr(above), _ptr(below))
    allowed = np.zeros((2 * p, 2 * p), dtype=bool)
    if rc == 0:
        rc = lib.bbkc_allowed(2 * p, _ptr(above), _ptr(below), 0, 2 * p, _ptr(allowed))
    if rc != 0:
        raise MemoryError(f"base_portal_vis's C kernel failed (code {rc})")
    return allowed


def flood(dp, allowed: np.ndarray, cancel=None) -> np.ndarray:
    """pvs_flow.simple_flood by the C kernel: the same (D, D) bool table."""
    out = np.zeros((dp.num, dp.num), dtype=bool)
    _csr_call("bbkc_flood", dp, allowed, out, dp.num, cancel, 1024)
    return out


def cluster_rows_one_way(dp, portal_vis: np.ndarray, cancel=None) -> np.ndarray:
    """pvs_flow.cluster_rows before its AND with the transpose, by the C kernel."""
    out = np.zeros((dp.num_clusters, dp.num_clusters), dtype=bool)
    _csr_call("bbkc_cluster_rows", dp, portal_vis, out, dp.num_clusters, cancel, 256)
    return out


def _parts(lo: int, hi: int, step: int, jobs: int, fn, cancel) -> None:
    """fn(a, b) over [lo, hi) in pieces of `step`, on `jobs` threads (each call lets go of the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    pieces = [(a, min(hi, a + step)) for a in range(lo, hi, step)]

    def one(piece):
        if cancel is not None and cancel():
            raise CancelledError()
        rc = fn(*piece)
        if rc != 0:
            raise MemoryError(f"the fast mode's C kernel failed (code {rc})")

    if jobs <= 1 or len(pieces) <= 1:
        for piece in pieces:
            one(piece)
        return
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for f in [pool.submit(one, piece) for piece in pieces]:
            f.result()


def fast_start(dp, centre, radius, eps: float, cancel=None, jobs: int = 1):
    """The fast mode on bit rows (vis_flood.c's bbkc_reach_bits, bbkc_flood_bits,
    bbkc_cluster_rows_bits): (the flood's packed rows (D, (D + 7) // 8), the clusters each enters
    packed (D, (C + 7) // 8), each flood's portal count (D,), the one-way cluster rows (C, C) bool),
    bit for bit pvs_flow's base_portal_vis -> simple_flood -> cluster_rows, without their (D, D)
    tables.  centre, radius: pvs_flow._spheres of the undirected portals (the even directed ones)."""
    lib = library()
    c = np.ascontiguousarray
    d, ncl = dp.num, dp.num_clusters
    p = d // 2
    even = np.arange(0, d, 2)
    w, count = c(dp.windings[even], dtype=np.float64), c(dp.count[even], dtype=np.int64)
    normal, dist = c(dp.normal[even], dtype=np.float64), c(dp.dist[even], dtype=np.float64)
    centre, radius = c(centre, dtype=np.float64), c(radius, dtype=np.float64)
    words = max(1, (p + 63) // 64)
    # each table's row r word k at [k, r] (column by column: the flood reads a word of every row)
    tables = [np.zeros((words, max(p, 1)), dtype=np.uint64) for _ in range(4)]
    above, below, above_t, below_t = (_ptr(t) for t in tables)
    rep = same_planes(normal, dist)  # a plane's reach is every portal's sharing it (slab_2000: 1,154 of 6,986)
    dup = np.flatnonzero(rep != np.arange(p))
    dup_rep = c(rep[dup], dtype=np.int64)
    _parts(0, p, 256, jobs, lambda a0, a1: lib.bbkc_reach_bits_rep(
        p, w.shape[1], _ptr(w), _ptr(count), _ptr(normal), _ptr(dist), _ptr(centre), _ptr(radius), eps, _ptr(rep),
        a0, a1, words, above, below, above_t, below_t), cancel)
    if len(dup):  # the skipped planes' rows are their rep's; then the transposes made whole
        for table in tables[:2]:
            table[:, dup] = table[:, dup_rep]
        _parts(0, p, 256, jobs, lambda u0, u1: lib.bbkc_bits_transpose(p, words, above, u0, u1, above_t) or
               lib.bbkc_bits_transpose(p, words, below, u0, u1, below_t), cancel)
    first, leaving = dp.leaving()
    first, leaving = c(first, dtype=np.int64), c(leaving, dtype=np.int64)
    dst = c(dp.dst, dtype=np.int64)
    fs, cs = (d + 7) // 8, (ncl + 7) // 8
    flood = np.zeros((d, max(fs, 1)), dtype=np.uint8)
    might = np.zeros((d, max(cs, 1)), dtype=np.uint8)
    sizes = np.zeros(d, dtype=np.int64)
    _parts(0, d, 512, jobs, lambda s0, s1: lib.bbkc_flood_bits(
        d, ncl, _ptr(first), _ptr(leaving), _ptr(dst), words, above, below, above_t, below_t, s0, s1,
        flood.shape[1], _ptr(flood), might.shape[1], _ptr(might), _ptr(sizes)), cancel)
    del tables
    rows = cluster_rows_from_bits(dp, might, cancel, jobs)
    return flood[:, :fs], might[:, :cs], sizes, rows


def same_planes(normal: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """(P,) int64: for each plane, the first plane with the same normal and dist, bit for bit (its
    reach tests make the same sums)."""
    key = np.ascontiguousarray(np.concatenate([normal, dist[:, None]], axis=1)).view(np.uint64)
    if not len(key):
        return np.zeros(0, np.int64)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    return np.ascontiguousarray(first[inverse.reshape(-1)], dtype=np.int64)


def cluster_rows_from_bits(dp, portal_clusters: np.ndarray, cancel=None, jobs: int = 1) -> np.ndarray:
    """(C, C) bool one-way cluster rows from each directed portal's packed cluster row (D, >= (C +
    7) // 8): row c holds c and, for every portal p leaving c, dst[p] and p's clusters
    (bbkc_cluster_rows_bits)."""
    lib = library()
    c = np.ascontiguousarray
    ncl = dp.num_clusters
    first, leaving = dp.leaving()
    first, leaving, dst = c(first, dtype=np.int64), c(leaving, dtype=np.int64), c(dp.dst, dtype=np.int64)
    bits = c(portal_clusters, dtype=np.uint8)
    if bits.shape[1] == 0:
        bits = np.zeros((len(bits), 1), dtype=np.uint8)
    rows = np.zeros((ncl, ncl), dtype=bool)
    _parts(0, ncl, 512, jobs, lambda c0, c1: lib.bbkc_cluster_rows_bits(
        ncl, _ptr(first), _ptr(leaving), _ptr(dst), bits.shape[1], _ptr(bits), c0, c1, _ptr(rows)), cancel)
    return rows


def resolve_backend(backend: str) -> str:
    """'c' or 'numpy' for a requested flow backend: 'auto' is C where the library loads, else NumPy;
    'c' where it cannot load raises BackendUnavailableError (saying why)."""
    if backend == "auto":
        return "c" if available() else "numpy"
    if backend == "c":
        library()
        return "c"
    if backend == "numpy":
        return "numpy"
    raise ValueError(f"unknown flow backend {backend!r} (auto, c or numpy)")
