"""`bake SCENE --scheduler ADDRESS`: one level's long work spread over a Dask cluster.

The level is compiled on this machine (the client); the work that splits into independent parts
runs on the workers:

- the trees' regions: under the region grid (core/compile/trees/regions.py) every grid cell's
  subtree is built from its own faces (core/compile/trees/region_jobs.py); the plane table goes
  to each worker once, the cells' faces with their tasks, the subtrees come back and are grafted
  where their cells are (the point tree's and the onion tree's);
- the full vis (`--vis flow`): each wave's sources, dealt into parts (core/compile/vis/pvs_merged.py
  merged_flow: the rows are the same however a wave is split).  What every part reads and never
  changes (the directed portals, their flood rows, k-DOP directions, ...) goes to each worker
  once (Client.scatter(..., broadcast=True)); the rows that change between waves go once a wave,
  broadcast the same way, and each task carries only its sources;
- light's rays (`--light`): direct light's and every bounce's batches of shadow rays, cut into
  parts that workers trace (core/compile/light/lm_rays.py ShadowRays: each answer lands at its index,
  so the pages are the same bytes).  The level goes to each worker once, as its .bbk bytes; the
  per-light and per-block arithmetic stays on the client, in the order it always runs.

A part lost with a worker that dies is run again elsewhere by the scheduler; its answer is the
same wherever it runs.  Nothing here changes what a stage computes: only where.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import OrderedDict

import numpy as np

from ..core.errors import CancelledError
from .cluster import open_farm
from .tasks import tune_malloc

#: seconds between looks at the cancel callback while the workers run
CANCEL_POLL_S = 0.1
#: parts a wave's sources or a ray batch is cut into, per worker thread (more parts even out the
#: workers' shares; each part costs a task's overhead, a few milliseconds)
PARTS_PER_THREAD = 1
#: ray batches smaller than this are traced here: sending them costs more than tracing them
MIN_FARM_RAYS = 20_000
#: on a worker: the parts it ran (for the tests and the benchmark)
CALLS = {"flow_part": 0, "trace_part": 0, "region_part": 0}


class LevelFarm:
    """The workers of a cluster, for one level's stages (bake_scene(farm=...))."""

    def __init__(self, farm):
        self.farm = farm
        self.client = farm.client

    def close(self) -> None:
        self.farm.close()

    def threads(self) -> int:
        return max(1, sum(w["threads"] for w in self.farm.workers().values()))

    def parts(self) -> int:
        """How many parts to cut a wave or a batch into."""
        return PARTS_PER_THREAD * self.threads()

    def wave_runner(self, flow, cancel=None) -> "FarmWaveRunner":
        """For merged_flow: runs flow.run_part(sources) on the workers (see FarmWaveRunner)."""
        return FarmWaveRunner(self, flow, cancel)

    def region_runner(self, cancel=None):
        """For the tree builders under a region grid: a runner (core/compile/trees/region_jobs.py)
        that builds the region roots on the workers (see run_regions)."""
        return lambda planes, settings, jobs: run_regions(self, planes, settings, jobs, cancel)

    def shadow_rays(self, level, backend: str):
        """For bake_light: a ShadowRays whose large batches the workers trace."""
        return FarmRays(self, level, backend)

    def gather(self, futures: list, cancel=None) -> list:
        """The answers of `futures` in their order; CancelledError (every task cancelled) as
        soon as cancel() says so, or on Ctrl-C."""
        try:
            if cancel is None:
                return self.client.gather(futures)
            out = []
            for fut in futures:
                while True:
                    try:
                        out.append(fut.result(timeout=CANCEL_POLL_S))
                        break
                    except TimeoutError:
                        if cancel():
                            raise CancelledError() from None
            return out
        except BaseException:
            self.client.cancel(futures, force=True)
            raise


def open_level_farm(address: str) -> LevelFarm:
    """A LevelFarm on the scheduler at `address` (its workers checked: cluster.open_farm)."""
    return LevelFarm(open_farm(address, None))


# --------------------------------------------------------------------------------------------
# The full vis


class FarmWaveRunner:
    """merged_flow's runner (core/compile/vis/wave_jobs.WaveRunner's map) on a Dask cluster.  On
    entering, the flow's read-only part is scattered to every worker once; map(parts) broadcasts
    the rows that changed since the last wave, then runs one task per part."""

    def __init__(self, level_farm: LevelFarm, flow, cancel=None):
        self.lf, self.flow, self.cancel = level_farm, flow, cancel
        self.static = None

    def __enter__(self):
        static = copy.copy(self.flow)
        static.cancel, static.test_cl = None, None  # the rows go with each wave
        self.static = self.lf.client.scatter(static, broadcast=True, hash=False)
        return self

    def __exit__(self, *exc):
        if self.static is not None:
            self.static.release()
            self.static = None
        return False

    def map(self, parts: list) -> list:
        if self.cancel is not None and self.cancel():
            raise CancelledError()
        client = self.lf.client
        rows = client.scatter(np.array(self.flow.test_cl), broadcast=True, hash=False)
        try:
            futures = [client.submit(flow_part, self.static, rows, part, pure=False,
                                     key=f"flow-part-{k}-{time.time_ns()}") for k, part in enumerate(parts)]
            return self.lf.gather(futures, self.cancel)
        finally:
            rows.release()


def flow_part(static, rows: np.ndarray, sources: np.ndarray):
    """On a worker: flow from some sources of a wave (pvs_merged._Flow.run_part) with the rows of
    the waves before."""
    import os

    CALLS["flow_part"] += 1
    tune_malloc()
    flow = copy.copy(static)
    flow.test_cl, flow.pid = rows, os.getpid()
    return flow.run_part(sources)


# --------------------------------------------------------------------------------------------
# Regions' subtrees


def run_regions(lf: LevelFarm, planes, settings, jobs: list, cancel=None) -> list:
    """The RegionTrees of `jobs`, built on the workers: the plane table and the splitter settings
    go to each worker once; the jobs are cut into runs of about equal face counts, in order, a
    task each; the trees come back in the jobs' order."""
    from ..core.compile.trees.region_jobs import split_runs

    parts = min(lf.parts(), len(jobs))
    if not parts:
        return []
    client = lf.client
    [shared] = client.scatter([RegionShared(planes, settings)], broadcast=True, hash=False)
    try:
        futures = [client.submit(region_part, shared, run, pure=False, key=f"region-part-{k}-{time.time_ns()}")
                   for k, run in enumerate(split_runs(jobs, parts))]
        return [tree for part in lf.gather(futures, cancel) for tree in part]
    finally:
        shared.release()


class RegionShared:
    """What every region part reads: the plane table and the splitter settings."""

    def __init__(self, planes, settings):
        self.planes, self.settings = planes, settings


def region_part(shared: RegionShared, jobs: list) -> list:
    """On a worker: the subtrees of some region roots (region_jobs.build_regions)."""
    from ..core.compile.trees.region_jobs import build_regions

    CALLS["region_part"] += 1
    tune_malloc()
    return build_regions(shared.planes, shared.settings, jobs)


# --------------------------------------------------------------------------------------------
# Light's rays


class FarmRays:
    """ShadowRays (core/compile/light/lm_rays.py) whose large batches the workers trace: the same
    interface (backend, threads, transitions, segments, ordered), the same answers."""

    def __init__(self, level_farm: LevelFarm, level, backend: str):
        from ..core.compile.light.lm_rays import ShadowRays
        from ..exporters.native import level_to_bytes

        self.lf = level_farm
        self.local = ShadowRays(level, backend)  # small batches, and ordered()'s arithmetic
        self.backend, self.threads, self.native = self.local.backend, self.local.threads, self.local.native
        self.data = level_farm.client.scatter(level_to_bytes(level), broadcast=True, hash=False)
        self.token = f"level-{id(self)}-{time.time_ns()}"
        self.farmed = 0
        self._lock = threading.Lock()  # light traces from several threads: task numbers and the count
        self._batches = 0

    def __getattr__(self, name):
        """Whatever else ShadowRays holds (the native library's report, ...), from the local one."""
        if name == "local":
            raise AttributeError(name)
        return getattr(self.local, name)

    def close(self) -> None:
        if self.data is not None:
            self.data.release()
            self.data = None

    def transitions(self, starts: np.ndarray, ends: np.ndarray):
        seg = np.empty((len(starts), 2, 3))
        seg[:, 0], seg[:, 1] = starts, ends
        return self.segments(seg)

    def segments(self, seg: np.ndarray):
        n = len(seg)
        if n < MIN_FARM_RAYS:
            return self.local.segments(seg)
        parts = min(self.lf.parts(), max(1, n // (MIN_FARM_RAYS // 4)))
        cuts = [n * k // parts for k in range(parts + 1)]
        client = self.lf.client
        with self._lock:  # a key per batch and part, unique whatever the threads and the clock
            batch = self._batches
            self._batches += 1
        futures = [client.submit(trace_part, self.data, self.token, self.backend,
                                 np.ascontiguousarray(seg[cuts[k]: cuts[k + 1]]), pure=False,
                                 key=f"rays-{self.token}-{batch}-{k}") for k in range(parts)]
        answers = self.lf.gather(futures)
        with self._lock:
            self.farmed += n
        return (np.concatenate([a[0] for a in answers]).astype(np.int8, copy=False),
                np.concatenate([a[1] for a in answers]))

    def ordered(self, fn, items):
        return self.local.ordered(fn, items)


#: on a worker: the ShadowRays of the levels it was sent, per (level token, thread); a few kept
_RAYS: OrderedDict = OrderedDict()
_RAYS_LOCK = threading.Lock()
_RAYS_KEPT = 8


def trace_part(data: bytes, token: str, backend: str, seg: np.ndarray):
    """On a worker: (kind, t) of the segments through the level whose .bbk bytes are `data`
    (loaded once per worker thread, kept under `token`)."""
    from ..core.compile.light.lm_rays import ShadowRays
    from ..exporters.native import level_from_bytes

    CALLS["trace_part"] += 1
    tune_malloc()
    key = (token, threading.get_ident())
    with _RAYS_LOCK:
        rays = _RAYS.get(key)
        if rays is not None:
            _RAYS.move_to_end(key)
    if rays is None:
        rays = ShadowRays(level_from_bytes(data, token), backend, threads=1)
        with _RAYS_LOCK:
            _RAYS[key] = rays
            while len(_RAYS) > _RAYS_KEPT:
                _RAYS.popitem(last=False)
    return rays.segments(seg)
