"""What the farm's workers run.  No Dask here beyond asking which worker this is: the functions are
sent by reference (module and name), so every worker needs this brushbake, at this version.

bake_remote bakes one scene exactly as `bake` does (bakejob.bake_scene_file, the same flags) from the
scene file's bytes (a worker need not see the client's files) and answers with the files' bytes:
the client writes them, each level's files at once or not at all (exporters/native.write_all_atomic).
"""

from __future__ import annotations

import socket
import tempfile
import time
from pathlib import Path


#: glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
_TUNED = []


def tune_malloc() -> None:
    """Undo, in this worker process, what Dask's nanny asks of glibc's allocator.

    The nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536 (to hand memory back to the system
    soon), which also freezes glibc's mmap threshold at 128 kB: every NumPy temporary above that
    is then a fresh mmap, faulted in page by page and unmapped again.  Measured on a part of
    lq_e0m3's flow (500 sources): 3.3 s user + 1.9 s system in a worker against 3.3 + 0.02 in a
    plain process.  Larger thresholds (those glibc reaches by itself) bring it back; the answers
    never depend on it.  Once per process; nothing where the C library is not glibc."""
    if _TUNED:
        return
    _TUNED.append(True)
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)
        libc.mallopt(M_TRIM_THRESHOLD, 64 << 20)
    except (OSError, AttributeError):
        pass


def local_version() -> str:
    """This process's brushbake version (read when called, so a test can change it on one worker)."""
    from ..core import version

    return version.__version__


def worker_version() -> str:
    """Run on each worker by cluster.check_versions."""
    return local_version()


def worker_name() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return "local"


def bake_remote(name: str, data: bytes, opts: dict, version: str, shown: str, pointfile: str) -> dict:
    """Bake the scene `name` whose file holds `data` as `bake` would with the flags `opts`
    (bakejob.bake_options).  Answers a dict: status 'ok' (bbk: the level's bytes; pts: the leak chain
    when baked anyway with --allow-leak), 'leak' (pts only: no level for a leaking map), 'error'
    (a user error: message) or 'version' (this worker runs another brushbake than `version`:
    nothing baked); with the warnings, the stages' seconds, the worker and the seconds it took.
    `shown` is the scene's path as the user gave it and `pointfile` the path the client writes the
    chain to: the messages name those, never the worker's temporary copy."""
    from .. import bakejob
    from ..core.errors import BrushbakeError
    from ..exporters.native import level_to_bytes

    tune_malloc()
    t0 = time.perf_counter()
    answer = {"status": "ok", "bbk": None, "pts": None, "message": "", "warnings": [], "stages": {},
              "stats": {}, "worker": worker_name(), "host": socket.gethostname(), "version": local_version()}
    if answer["version"] != version:
        answer.update(status="version")
        return answer
    with tempfile.TemporaryDirectory(prefix="brushbake-farm-") as tmp:
        path = Path(tmp) / name  # the scene's own file name: the level's bytes do not depend on the folder
        path.write_bytes(data)
        try:
            # one level per worker thread: the full vis on this worker's one core (a Dask worker's
            # processes may not fork workers of their own)
            baked = bakejob.bake_scene_file(path, opts, jobs=1)
        except BrushbakeError as err:
            answer.update(status="error", message=str(err).replace(str(path), shown))
            answer["seconds"] = time.perf_counter() - t0
            return answer
    answer["warnings"] = [text.replace(str(path), shown) for text in baked.warnings]
    if baked.leak is not None:
        answer.update(status="leak", pts=bakejob.pointfile_text(baked.leak.report.chain),
                      message=bakejob.leak_error_text(baked.leak, Path(pointfile)))
    else:
        level = baked.level
        report = level.stats.get("leak_report")
        if report is not None and report.leaks:
            answer["pts"] = bakejob.pointfile_text(report.chain)
            answer["warnings"].append(bakejob.leak_warning_text(report, Path(pointfile)))
        elif report is not None and report.judged == 0:
            answer["warnings"].append(bakejob.NOTHING_INSIDE)
        t1 = time.perf_counter()
        answer["bbk"] = level_to_bytes(level)
        baked.times["bytes"] = time.perf_counter() - t1
        answer["stats"] = summary(level.stats)
    answer["stages"] = {k: round(float(v), 4) for k, v in baked.times.items()}
    answer["seconds"] = time.perf_counter() - t0
    return answer


def summary(stats: dict) -> dict:
    """A few of the level's counts for the farm's report (plain numbers only)."""
    out = {k: stats[k] for k in ("brushes", "nodes", "leaves", "faces", "planes", "hulls") if k in stats}
    vis = stats.get("vis")
    if vis:
        out["vis"] = {k: vis[k] for k in ("mode", "clusters", "portals", "avg_leaves_visible", "compressed_bytes")
                      if k in vis}
    light = stats.get("light")
    if light:
        out["light"] = {k: light[k] for k in ("faces", "luxels", "patches", "pages") if k in light}
    return out
