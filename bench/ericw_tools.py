"""Running ericw-tools (qbsp, vis, light) from the benches: the folder of binaries made runnable,
one timed child process, and the anchor's run.sh (all three tools on one map).

The anchors' libembree4.so.4 may be stored as a text file naming its target rather than as a
link: tool_dir() copies the binaries into a temporary folder with the link made there.  Every
child is timed by os.wait4: wall seconds, CPU seconds (user + system, every thread of the child)
and the child's peak resident memory (ru_maxrss).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

TOOLS = ("qbsp", "vis", "light")
COMMON = ["-nopercent", "-noprogress"]


def default_dir() -> str:
    """$ERICW_DIR (the folder of qbsp, vis, light and run.sh), or ''."""
    return os.environ.get("ERICW_DIR", "")


@contextlib.contextmanager
def tool_dir(src, tools=TOOLS):
    """A temporary folder holding the tools (and run.sh when `src` has it) with libembree4.so.4
    linked to libembree4.so.4.4.0 as the dynamic loader needs; yields its Path."""
    src = Path(src)
    with tempfile.TemporaryDirectory(prefix="ericw-bin-") as tmp:
        tmp = Path(tmp)
        for name in [*tools, "run.sh", "libembree4.so.4.4.0"]:
            if (src / name).is_file():
                shutil.copy(src / name, tmp / name)
        if (tmp / "libembree4.so.4.4.0").is_file():
            (tmp / "libembree4.so.4").symlink_to("libembree4.so.4.4.0")
        yield tmp


def timed(cmd: list[str], cwd, log=None, env=None) -> dict:
    """Run `cmd` in `cwd` (stdout and stderr to the file `log`, or dropped): rc, wall_s, cpu_s
    (the child's user + system seconds) and maxrss_mb (its peak resident memory)."""
    out = open(log, "wb") if log else subprocess.DEVNULL
    try:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
    finally:
        if log:
            out.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    return {"rc": p.returncode, "wall_s": round(wall, 3), "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
            "maxrss_mb": round(ru.ru_maxrss / 1024, 1)}


def run_tool(bin_dir, tool: str, args: list[str], target: str, cwd, log=None) -> dict:
    """One ericw tool on `target` (a file name in `cwd`), timed (see timed)."""
    return timed([str(Path(bin_dir) / tool), *COMMON, *args, target], cwd, log)


def run_all(map_path, outdir, bin_dir, threads: int | None = None) -> dict:
    """The anchor's run.sh (qbsp, vis, light -bounce 1) on a copy of `map_path` in `outdir`, with
    the tools of `bin_dir` (a tool_dir()): {tool: its JSON line} (wall_s, cpu_s, maxrss_mb, rc and
    the counts the tool printed; vis {'skipped': ...} when qbsp left no .prt)."""
    env = dict(os.environ, ERICW_BIN=str(bin_dir))
    if threads:
        env["ERICW_THREADS"] = str(threads)
    proc = subprocess.run([str(Path(bin_dir) / "run.sh"), str(map_path), str(outdir)], capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL)
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            out[rec["tool"]] = rec
    if not out:
        out["error"] = (proc.stderr.strip().splitlines() or [f"run.sh exited {proc.returncode}"])[-1]
    return out
