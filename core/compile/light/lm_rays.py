"""Light's rays through the point tree, by the NumPy walk or the C run-time on every core.

ShadowRays(level, backend).transitions(starts, ends) answers as find_first_transitions
(core/runtime/trace.py) does -- the kind (RAY_E: clear all along) and t of each segment -- by:

- "numpy": the lock-step walk, the reference;
- "c": the C run-time (core/runtime/cruntime.py, runtime_c/brushbake.c), whose answers are the
  same to the bit (tests/core/test_lm_rays.py compares them, and the baked pages); a batch is cut
  into one contiguous part per thread, each thread tracing its part through its own loaded copy
  of the level (the C walk's scratch is the level's), the GIL released during the calls.  Each
  answer lands at its own index, so the threads' timing never changes a bit;
- "auto" (what a bake uses unless told): "c" where the C run-time builds (a C compiler is
  present), "numpy" otherwise.

ShadowRays.ordered(fn, items) is the other use of the cores: fn(item) for each item on the
threads (NumPy releases the GIL inside its loops over large arrays), the answers handed back in
the items' order, a few ahead, while the caller traces the rays of the ones before: light's
per-light and per-block arithmetic runs beside the tracing, and every sum is still made by the
caller in the same order.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from ...native_lib import backend_report
from ...runtime.cruntime import available, c_level
from ...runtime.trace import find_first_transitions

LIGHT_BACKENDS = ("auto", "numpy", "c")
#: segments per call of the batch walk (its rate rises up to ~40,000 a batch)
RAY_BATCH = 1 << 16
#: segments below which a C batch is not split between threads (the split costs more)
MIN_THREAD_RAYS = 4096
#: most threads a C batch is split between
MAX_THREADS = 8

#: thread pools by use ('trace': the C calls; 'work': ordered(); 'batch': later()), so none waits
#: behind another (a work thread waits on batches, a batch on its traces: never the other way)
_POOLS: dict = {}
_POOLS_LOCK = threading.Lock()


def default_threads() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, MAX_THREADS))


def resolve_backend(backend: str) -> str:
    """'numpy' or 'c' for a requested light backend ('auto': C when it builds, else NumPy)."""
    if backend not in LIGHT_BACKENDS:
        raise ValueError(f"light backend must be one of {', '.join(LIGHT_BACKENDS)}, not {backend!r}")
    if backend != "auto":
        return backend
    return "c" if available() else "numpy"


def _pool(use: str, threads: int) -> ThreadPoolExecutor:
    with _POOLS_LOCK:  # light's worker threads ask for the trace pool too
        pool = _POOLS.get(use)
        if pool is None or pool._max_workers < threads:
            pool = _POOLS[use] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"brushbake-{use}")
        return pool


class ShadowRays:
    """Segments through a level's point tree (hull 0): see the module docstring."""

    def __init__(self, level, backend: str = "numpy", threads: int | None = None):
        self.backend = resolve_backend(backend)
        self.threads = default_threads() if threads is None else max(1, int(threads))
        self.level = level
        if self.backend == "c":
            first = c_level(level)  # BackendUnavailableError where it cannot be built
            self._first = first
            self._free = queue.SimpleQueue()  # loaded copies not in use; one more made when none is free
            for handle in [first] + [first.copy() for _ in range(self.threads - 1)]:
                self._free.put(handle)
        else:
            self._tree = level.point_tree()
        #: which native library traces, or why NumPy does (native_lib.Report.text: the bake table)
        self.native = backend_report().text if backend != "numpy" else "NumPy: asked for"

    def transitions(self, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(kind (N,) int8, t (N,)) of the segments starts -> ends: find_first_transitions's."""
        if self.backend == "numpy":
            kind, t, _ = find_first_transitions(self._tree, starts, ends)
            return kind, t
        seg = np.empty((len(starts), 2, 3))
        seg[:, 0], seg[:, 1] = starts, ends
        return self.segments(seg)

    def segments(self, seg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """transitions() of (N, 2, 3) float64 C-contiguous segments (start, end), packed already."""
        if self.backend == "numpy":
            kind, t, _ = find_first_transitions(self._tree, seg[:, 0], seg[:, 1])
            return kind, t
        parts = self._on_threads(len(seg), lambda lo, hi: self._walk(seg[lo:hi]))
        out = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return out["kind"].astype(np.int8), out["t"]

    def _on_threads(self, n: int, part) -> list:
        """[part(lo, hi)] over [0, n) cut into one contiguous part per thread (one part below
        MIN_THREAD_RAYS: the split would cost more), run on the trace pool, in order."""
        parts = 1 if n < MIN_THREAD_RAYS else min(self.threads, n // (MIN_THREAD_RAYS // 2))
        if parts <= 1:
            return [part(0, n)]
        cuts = [n * k // parts for k in range(parts + 1)]
        jobs = [_pool("trace", parts).submit(part, cuts[k], cuts[k + 1]) for k in range(parts)]
        return [job.result() for job in jobs]

    def between(self, points: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The kinds of the segments points[a] -> points[b], as segments() gives them, each thread
        making its part's segments RAY_BATCH at a time: a bounce's block of millions of rays never
        holds them all at once (48 bytes a ray; slope: 122 MB of its peak)."""
        kind = np.empty(len(a), np.int8)
        if self.backend == "numpy":
            self._between(points, a, b, kind, 0, len(a))
        else:
            self._on_threads(len(a), lambda lo, hi: self._between(points, a, b, kind, lo, hi))
        return kind

    def _between(self, points, a, b, kind, lo: int, hi: int) -> None:
        """kind[lo:hi] of between(), made and traced RAY_BATCH segments at a time on this thread."""
        seg = np.empty((min(RAY_BATCH, hi - lo), 2, 3))
        for k in range(lo, hi, RAY_BATCH):
            m = min(RAY_BATCH, hi - k)
            np.take(points, a[k : k + m], axis=0, out=seg[:m, 0])
            np.take(points, b[k : k + m], axis=0, out=seg[:m, 1])
            if self.backend == "numpy":
                kind[k : k + m] = find_first_transitions(self._tree, seg[:m, 0], seg[:m, 1])[0]
            else:
                kind[k : k + m] = self._walk(seg[:m])["kind"]

    def _walk(self, seg: np.ndarray) -> np.ndarray:
        """The C walk of seg through a loaded copy of the level no other thread is using (the
        walk's scratch is the copy's), so that any thread may call segments(): ordered()'s work
        traces its own blocks' rays."""
        try:
            handle = self._free.get_nowait()
        except queue.Empty:
            handle = self._first.copy()
        try:
            return handle.transitions(seg)
        finally:
            self._free.put(handle)

    def later(self, fn, *args):
        """fn(*args) on the batch threads: a Future, for settle() (one thread: the answer, now)."""
        if self.threads <= 1:
            return fn(*args)
        return _pool("batch", self.threads).submit(fn, *args)

    @staticmethod
    def settle(items: list, most: int) -> list:
        """items with the oldest of later()'s Futures replaced by their answers until at most `most`
        are left running (0: every one), in place: the caller's bound on what runs ahead."""
        running = [k for k, item in enumerate(items) if isinstance(item, Future)]
        for k in running[: max(0, len(running) - most)]:
            items[k] = items[k].result()
        return items

    def ordered(self, fn, items):
        """fn(item) for each item, computed on the threads up to `threads` ahead, yielded in order.
        A caller that stops early (a cancel) leaves at most that many computed for nothing."""
        if self.threads <= 1:
            for item in items:
                yield fn(item)
            return
        pool = _pool("work", self.threads)
        waiting: deque = deque()
        try:
            for item in items:
                waiting.append(pool.submit(fn, item))
                if len(waiting) > self.threads:
                    yield waiting.popleft().result()
            while waiting:
                yield waiting.popleft().result()
        finally:
            for job in waiting:
                job.cancel()
