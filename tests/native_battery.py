"""One battery of queries for comparing builds of the native library answer for answer: the same
jobs run through ctypes on a library this process can load (run_ctypes) or through the test
driver tests/c/native_driver.c on one it cannot (the Windows DLL under Wine), and both write the
same bytes: every answer record as brushbake.h lays it out.

The jobs file (pack_jobs) is what the driver reads: 'BBKQ', u32 version 1, u32 job count, then per
job u32 kind, arg, flag, 0; u64 n; 5 doubles of shape (radius, height, half x, y, z); n rows of
WIDTH[kind] doubles.  Kinds: 1 point leaves (rows x y z), 2 traces (start, end; arg hull, flag
retry), 3 first transitions (start, end; arg hull), 4 camera culls (8 numbers; arg mode: the
drawn bytes, then the stats), 5 shape sweeps (start, end; arg shape kind), 6 moves (position,
velocity, dt; arg hull, flag step; the default settings).
"""

from __future__ import annotations

import ctypes
import struct

import numpy as np

LEAF, TRACE, TRANSITION, CULL, SHIFT, MOVE = 1, 2, 3, 4, 5, 6
WIDTH = {LEAF: 3, TRACE: 6, TRANSITION: 6, CULL: 8, SHIFT: 6, MOVE: 7}


def jobs(level, seed: int = 0, n: int = 3000) -> list[dict]:
    """Random queries over the level's bounds (half of the segments short, as a character's), every
    hull, the three cull modes, a sphere and a box, moves with and without steps."""
    rng = np.random.default_rng(seed)
    lo, hi = np.asarray(level.world_bounds, dtype=np.float64)
    pts = rng.uniform(lo, hi, (n, 3))
    far = rng.uniform(lo, hi, (n, 3))
    near = pts + rng.normal(scale=0.5, size=(n, 3))
    segments = np.concatenate([np.hstack([pts, far])[: n // 2], np.hstack([pts, near])[n // 2:]])
    cams = np.empty((n // 10, 8))
    cams[:, :3] = rng.uniform(lo, hi, (len(cams), 3))
    cams[:, 3] = rng.uniform(-720, 720, len(cams))
    cams[:, 4] = rng.uniform(-90, 90, len(cams))
    cams[:, 5] = rng.uniform(30, 120, len(cams))
    cams[:, 6] = rng.uniform(0.5, 2.5, len(cams))
    cams[:, 7] = rng.uniform(1, 200, len(cams))
    moves = np.hstack([pts, rng.normal(scale=4.0, size=(n, 3)), rng.uniform(0.01, 0.2, (n, 1))])
    out = [dict(kind=LEAF, rows=pts)]
    for hull in range(len(level.hull_names)):
        out.append(dict(kind=TRACE, arg=hull, flag=int(hull != 0), rows=segments))
        out.append(dict(kind=TRANSITION, arg=hull, rows=segments))
        if hull:
            out += [dict(kind=MOVE, arg=hull, flag=step, rows=moves[: n // 3]) for step in (0, 1)]
    if level.has_vis:
        out += [dict(kind=CULL, arg=mode, rows=cams) for mode in (0, 1, 2)]
    out.append(dict(kind=SHIFT, arg=1, shape=(0.3, 0.0, 0.0, 0.0, 0.0), rows=segments[: n // 2]))
    out.append(dict(kind=SHIFT, arg=3, shape=(0.0, 0.0, 0.2, 0.3, 0.5), rows=segments[: n // 2]))
    return out


def pack_jobs(job_list) -> bytes:
    parts = [b"BBKQ", struct.pack("<II", 1, len(job_list))]
    for job in job_list:
        rows = np.ascontiguousarray(job["rows"], dtype="<f8")
        assert rows.shape[1] == WIDTH[job["kind"]]
        parts.append(struct.pack("<IIIIQ", job["kind"], job.get("arg", 0), job.get("flag", 0), 0, len(rows)))
        parts.append(struct.pack("<5d", *job.get("shape", (0.0,) * 5)))
        parts.append(rows.tobytes())
    return b"".join(parts)


def run_ctypes(lib, bbk: bytes, job_list) -> bytes:
    """The jobs' answers from `lib` (a ctypes.CDLL of the native library), as the driver writes them."""
    from brushbake.core.runtime import cruntime

    cruntime._declare(lib)
    handle = ctypes.c_void_p()
    message = ctypes.create_string_buffer(512)
    code = lib.bbk_load(bbk, len(bbk), ctypes.byref(handle), message, len(message))
    assert code == 0, message.value
    info = ctypes.create_string_buffer(256)
    lib.bbk_get_info(handle, info)
    leaves = int(np.frombuffer(info.raw, dtype=np.uint32, count=4)[3])
    lib.bbk_move_defaults.argtypes = [ctypes.c_void_p]
    lib.bbk_move_defaults.restype = None
    settings = cruntime._MoveSettings()
    lib.bbk_move_defaults(ctypes.byref(settings))
    out = []
    try:
        for job in job_list:
            rows = np.ascontiguousarray(job["rows"], dtype=np.float64)
            n, kind, arg, flag = len(rows), job["kind"], job.get("arg", 0), job.get("flag", 0)
            p = rows.ctypes.data
            if kind == LEAF:
                res = [np.zeros(n, np.int32)]
                code = lib.bbk_point_leaf_many(handle, n, p, res[0].ctypes.data)
            elif kind == TRACE:
                res = [np.zeros(n, cruntime.HIT_DTYPE)]
                code = lib.bbk_trace_many(handle, arg, n, p, flag, res[0].ctypes.data)
            elif kind == TRANSITION:
                res = [np.zeros(n, cruntime.TRANSITION_DTYPE)]
                code = lib.bbk_find_first_transition_many(handle, arg, n, p, res[0].ctypes.data)
            elif kind == CULL:
                res = [np.zeros(n * leaves, np.uint8), np.zeros(n, cruntime.CULL_STATS_DTYPE)]
                code = lib.bbk_cull_many(handle, n, p, arg, res[0].ctypes.data, res[1].ctypes.data)
            elif kind == SHIFT:
                r, h, *half = job["shape"]
                shape = cruntime._Shape(arg, 0, r, h, (ctypes.c_double * 3)(*half), None, 0)
                res = [np.zeros(n, cruntime.HIT_DTYPE)]
                code = lib.bbk_shift_trace_many(handle, ctypes.byref(shape), n, p, res[0].ctypes.data)
            elif kind == MOVE:
                pos, vel, dt = (np.ascontiguousarray(rows[:, a:b]) for a, b in ((0, 3), (3, 6), (6, 7)))
                res = [np.zeros(n, cruntime.MOVE_DTYPE)]
                code = lib.bbk_move_many(handle, arg, n, pos.ctypes.data, vel.ctypes.data, dt.ctypes.data,
                                         ctypes.byref(settings), None, flag, res[0].ctypes.data)
            else:
                raise ValueError(kind)
            assert code == 0, (kind, arg, code)
            out += [r.tobytes() for r in res]
    finally:
        lib.bbk_free(handle)
    return b"".join(out)


def first_difference(a: bytes, b: bytes, job_list, leaves: int) -> str:
    """Which job's answers differ first (for an assertion's message)."""
    from brushbake.core.runtime import cruntime

    size = {LEAF: 4, TRACE: cruntime.HIT_DTYPE.itemsize, TRANSITION: cruntime.TRANSITION_DTYPE.itemsize,
            SHIFT: cruntime.HIT_DTYPE.itemsize, MOVE: cruntime.MOVE_DTYPE.itemsize}
    at = 0
    for k, job in enumerate(job_list):
        n = len(job["rows"])
        width = n * (leaves + cruntime.CULL_STATS_DTYPE.itemsize) if job["kind"] == CULL else n * size[job["kind"]]
        if a[at:at + width] != b[at:at + width]:
            return f"job {k} (kind {job['kind']}, arg {job.get('arg', 0)}) differs"
        at += width
    return "lengths differ" if len(a) != len(b) else "no difference"
