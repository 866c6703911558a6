"""Running the parts of a wave side by side on the machine's cores.

The full portal flow goes in waves of sources that read only the results of earlier waves, so a
wave's sources split into parts that run at once and give the same rows however they are split.
Where the platform forks (Linux, macOS: the command line, the tests) the parts run in worker
processes forked from this one, which see the level and the flow's read-only arrays without
copying them; the rows they read that change between waves live in shared memory.  Inside Blender
(or without fork) the parts run in threads: forking the host application is not safe, and NumPy
lets threads run its loops side by side, though less well.  The flow's C kernel (flow_c.py) runs
in threads everywhere: a ctypes call lets go of the GIL, so threads share nothing but the rows.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...errors import CancelledError

#: seconds between looks at the cancel callback while the workers run
CANCEL_POLL_S = 0.1

_TASK = None  # the function the forked workers run (set before the fork, inherited)


def default_jobs() -> int:
    """One job per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def can_fork() -> bool:
    return hasattr(os, "fork") and "bpy" not in sys.modules


def shared_array(shape, dtype) -> np.ndarray:
    """A zeroed array in anonymous shared memory: forked workers see the parent's writes."""
    nbytes = max(1, int(np.prod(shape)) * np.dtype(dtype).itemsize)
    buf = mmap.mmap(-1, nbytes)
    return np.frombuffer(buf, dtype=dtype, count=int(np.prod(shape))).reshape(shape)


def _call(part):
    return _TASK(part)


def _worker_start():
    """Ctrl-C reaches the whole process group: the parent cancels and stops the workers, so they
    ignore it rather than each printing a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class WaveRunner:
    """Runs task(part) for the parts of each wave; `task` must not change once made (forked
    workers hold the copy from when the runner started).  Use as a context manager."""

    def __init__(self, task, jobs: int, cancel=None, fork: bool = True):
        """`fork` False: threads even where the platform forks (for tasks that let go of the GIL)."""
        self.task, self.jobs, self.cancel = task, max(1, jobs), cancel
        self.pool = self.threads = None
        self.forked = self.jobs > 1 and fork and can_fork()

    def __enter__(self):
        global _TASK
        if self.forked:
            _TASK = self.task
            self.pool = multiprocessing.get_context("fork").Pool(self.jobs, initializer=_worker_start)
        elif self.jobs > 1:
            self.threads = ThreadPoolExecutor(max_workers=self.jobs)
        return self

    def __exit__(self, *exc):
        global _TASK
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            _TASK = None
        if self.threads is not None:
            self.threads.shutdown(cancel_futures=True)
        return False

    def map(self, parts: list) -> list:
        """task(part) for every part, in order; CancelledError as soon as cancel() says so."""
        if self.cancel is not None and self.cancel():
            raise CancelledError()
        if self.pool is not None:
            pending = self.pool.map_async(_call, parts, chunksize=1)
            while not pending.ready():
                pending.wait(CANCEL_POLL_S)
                if self.cancel is not None and self.cancel():
                    raise CancelledError()
            return pending.get()
        if self.threads is not None:
            return [f.result() for f in [self.threads.submit(self.task, p) for p in parts]]
        return [self.task(p) for p in parts]
