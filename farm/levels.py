"""`brushbake farm`: many levels baked on a Dask cluster, each as `bake` would bake it.

Each scene is one task (tasks.bake_remote) holding the scene file's bytes; the biggest files go
first, so the longest bakes do not start last.  The client writes each level's files as its task
finishes, all of them or none (exporters/native.write_all_atomic): a Ctrl-C cancels every task
still pending or running, and what is on disk then is only levels finished whole.  A worker that
dies mid-bake loses its task to the scheduler, which runs it again on another worker (up to
Dask's allowed-failures); the level's bytes do not depend on where or how often it ran.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import BrushbakeError, CancelledError
from .tasks import bake_remote, local_version

#: what an error answer from a task that raised says (a bug in brushbake, not a user error)
BUG = "brushbake failed on this scene ({}: {}); please report it with the scene file."


@dataclass
class Level:
    """One scene of the farm, and what became of it."""

    scene: Path
    bbk: Path
    pts: Path
    status: str = "pending"  # ok | leak | error | cancelled
    message: str = ""
    warnings: list = field(default_factory=list)
    worker: str = ""
    host: str = ""
    seconds: float = 0.0
    stages: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)
    wrote: list = field(default_factory=list)

    def record(self) -> dict:
        return {"scene": str(self.scene), "status": self.status, "message": self.message, "warnings": self.warnings,
                "wrote": [str(p) for p in self.wrote], "worker": self.worker, "host": self.host,
                "seconds": round(self.seconds, 3), "stages": self.stages, "stats": self.stats}


def plan_levels(scenes: list[str], outdir: Path) -> list[Level]:
    """The levels to bake, checked before any work: every scene a readable .map or .json file,
    no two writing the same level, the output folder there (made if missing) and writable."""
    from ..core.formats.loaders import SCENE_SUFFIXES

    levels, seen = [], {}
    for text in scenes:
        path = Path(text)
        if path.suffix.lower() not in SCENE_SUFFIXES:
            raise BrushbakeError(f"has the extension '{path.suffix}', which brushbake does not read.", subject=text,
                                 hint="Give Quake .map files or brushbake .json scenes.")
        if not path.is_file():
            raise BrushbakeError("does not exist or is not a file.", subject=text, hint="Check the path; nothing was baked.")
        if not os.access(path, os.R_OK):
            raise BrushbakeError("cannot be read.", subject=text, hint="Check its permissions; nothing was baked.")
        out = outdir / (path.stem + ".bbk")
        if out.name in seen:
            raise BrushbakeError(f"would be written as {out}, and so would {seen[out.name]}.", subject=text,
                                 hint="Bake scenes with the same name into different folders.")
        seen[out.name] = text
        levels.append(Level(path, out, out.with_suffix(".pts")))
    if not levels:
        raise BrushbakeError("farm needs at least one scene file.", hint="brushbake farm SCENES... -o OUTDIR")
    if outdir.exists() and not outdir.is_dir():
        raise BrushbakeError("is a file; -o names the folder the levels are written into.", subject=str(outdir),
                             hint="Choose a folder.")
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BrushbakeError(f"cannot be made ({err.strerror or err}).", subject=str(outdir),
                             hint="Create the folder or choose another; nothing was baked.") from None
    if not os.access(outdir, os.W_OK | os.X_OK):
        raise BrushbakeError("cannot be written: you may not write in this folder.", subject=str(outdir),
                             hint="Choose another folder or change its permissions; nothing was baked.")
    return levels


def run_levels(farm, levels: list[Level], opts: dict, say=None) -> float:
    """Bake every level on the farm, writing each one's files as it finishes; say(text) reports
    each finished level.  Returns the wall seconds.  A worker of another version stops the farm
    (BrushbakeError); Ctrl-C cancels every task and raises CancelledError."""
    from distributed import as_completed

    from ..bakejob import write_outputs

    client, version = farm.client, local_version()
    t0 = time.perf_counter()
    order = sorted(range(len(levels)), key=lambda i: (-levels[i].scene.stat().st_size, i))
    futures = {}
    try:
        for i in order:
            lv = levels[i]
            fut = client.submit(bake_remote, lv.scene.name, lv.scene.read_bytes(), opts, version, str(lv.scene),
                                str(lv.pts), key=f"bake-{lv.scene.stem}-{i}-{os.getpid()}-{time.time_ns()}",
                                pure=False)
            futures[fut] = i
        done = 0
        for fut in as_completed(list(futures), loop=client.loop):
            lv = levels[futures[fut]]
            _settle(lv, fut, write_outputs)
            done += 1
            if say is not None:
                say(f"farm {done}/{len(levels)}  {lv.scene.name}: {lv.status}"
                    + (f" on {lv.worker} in {lv.seconds:.1f} s" if lv.worker else ""))
    except KeyboardInterrupt:
        _cancel(client, futures, levels)
        written = sum(bool(lv.wrote) for lv in levels)
        raise CancelledError(f"Cancelled by the user: {written} of {len(levels)} levels had been written, each whole; "
                             "every other task was cancelled and nothing of theirs was written.") from None
    except BaseException:
        _cancel(client, futures, levels)
        raise
    return time.perf_counter() - t0


def _cancel(client, futures, levels) -> None:
    try:
        client.cancel(list(futures), force=True)
    except Exception:  # the cluster may be going down too: the tasks die with it
        pass
    for lv in levels:
        if lv.status == "pending":
            lv.status = "cancelled"


def _settle(lv: Level, fut, write_outputs) -> None:
    """The task's answer into the level, and its files written (all or none)."""
    try:
        answer = fut.result()
    except Exception as err:  # a bug on the worker, or a task that killed every worker it ran on
        lv.status, lv.message = "error", BUG.format(type(err).__name__, err)
        return
    if answer["status"] == "version":
        from .cluster import version_mismatch

        raise BrushbakeError(version_mismatch(answer["worker"], answer["version"], local_version()),
                             hint=f"Install brushbake {local_version()} on that worker, or stop it.")
    lv.status, lv.message, lv.warnings = answer["status"], answer["message"], answer["warnings"]
    lv.worker, lv.host, lv.seconds = answer["worker"], answer["host"], answer["seconds"]
    lv.stages, lv.stats = answer["stages"], answer["stats"]
    files = []
    if answer["bbk"] is not None:
        files.append((lv.bbk, answer["bbk"]))
    if answer["pts"] is not None:
        files.append((lv.pts, answer["pts"]))
    if not files:
        return
    t0 = time.perf_counter()
    try:
        write_outputs(files)
    except BrushbakeError as err:
        lv.status, lv.message = "error", str(err)
        return
    lv.wrote = [path for path, _ in files]
    if answer["bbk"] is not None and answer["pts"] is None and lv.pts.is_file():
        lv.pts.unlink()  # a chain left by an earlier, leaking bake would point at a hole now closed
    lv.stages["write"] = round(time.perf_counter() - t0, 4)
