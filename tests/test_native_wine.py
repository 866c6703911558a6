"""The Windows and macOS libraries, checked from Linux (issue 32).

- windows-x64: a test driver built for Windows with zig cc (tests/c/native_driver.c) loads the
  shipped DLL under Wine and runs tests/native_battery.py's queries (traces of every hull, first
  transitions, camera culls in the three modes, sweeps, moves) on two levels; its answers are the
  Linux library's byte for byte.  The DLL exports exactly the functions the Linux library does, and
  takes sin, cos and tan from the C run-time DLL (scripts/native/win_crt_math.c).  Skipped, with
  the reason, only where Wine is not installed (scripts/setup_env.sh installs Debian's wine64).
- windows-arm64, linux-arm64, macos-x64, macos-arm64: each library is of its architecture and
  exports the same functions (tests/native_binaries.py reads ELF, PE and Mach-O files itself).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import native_battery
import native_binaries
from test_native_build import build_native, load_build_native  # noqa: F401 -- the session fixture

REPO = Path(__file__).resolve().parents[1]
ARCH = {"linux-x64": ("elf", "x86_64"), "linux-arm64": ("elf", "aarch64"), "windows-x64": ("pe", "x86_64"),
        "windows-arm64": ("pe", "aarch64"), "macos-x64": ("macho", "x86_64"), "macos-arm64": ("macho", "arm64")}
LEVELS = ["maps/id/e1m7.map", "maps/librequake/lq_e1m6.map"]


@pytest.fixture(scope="module")
def libraries(build_native):
    return {p: lib for p, (lib, _) in build_native.build(list(build_native.TARGETS), None, log=lambda *a: None).items()}


def wine() -> str | None:
    for name in ("wine64", "wine"):
        if shutil.which(name):
            return shutil.which(name)
    return "/usr/lib/wine/wine64" if os.access("/usr/lib/wine/wine64", os.X_OK) else None


def test_every_library_is_of_its_platform_and_exports_the_run_time(libraries):
    want = native_binaries.exports(libraries["linux-x64"])
    assert {"bbk_load", "bbk_trace_many", "bbk_cull_many", "bbk_find_first_transition_many"} <= want
    for platform, path in libraries.items():
        kind, machine = native_binaries.identify(path)
        assert (kind, machine) == ARCH[platform], platform
        assert native_binaries.exports(path) == want, platform


def test_windows_takes_its_trigonometry_from_the_c_run_time(libraries):
    for platform in ("windows-x64", "windows-arm64"):
        imports = native_binaries.pe_imports(libraries[platform])
        math = {name for dll, names in imports.items() if "crt-math" in dll.lower() for name in names}
        assert {"sin", "cos", "tan"} <= math, (platform, imports)


@pytest.fixture(scope="module")
def windows_driver(build_native, libraries, tmp_path_factory):
    runner = wine()
    if runner is None:
        pytest.skip("Wine is not installed (Debian: apt-get install wine64; scripts/setup_env.sh installs it as root)")
    folder = tmp_path_factory.mktemp("wine")
    shutil.copy(libraries["windows-x64"], folder / "brushbake.dll")
    run = subprocess.run([*build_native.zig(), "cc", "-target", "x86_64-windows-gnu", "-std=c99", "-O2",
                          "-fno-sanitize=undefined", "-I", str(REPO / "runtime_c"), "-o", str(folder / "driver.exe"),
                          str(REPO / "tests" / "c" / "native_driver.c")], capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    env = dict(os.environ, WINEPREFIX=str(folder / "prefix"), WINEDEBUG="-all", WINEDLLOVERRIDES="mscoree,mshtml=")
    env.pop("DISPLAY", None)

    def drive(level_bytes: bytes, jobs_bytes: bytes) -> bytes:
        (folder / "level.bbk").write_bytes(level_bytes)
        (folder / "jobs.bin").write_bytes(jobs_bytes)
        done = subprocess.run([runner, "driver.exe", "brushbake.dll", "level.bbk", "jobs.bin", "answers.bin"],
                              cwd=folder, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        return (folder / "answers.bin").read_bytes()

    return drive


@pytest.mark.parametrize("name", LEVELS)
def test_the_windows_dll_under_wine_answers_as_the_linux_library(windows_driver, libraries, levels, name):
    from brushbake.exporters.native import level_to_bytes

    level = levels.with_vis(REPO / name)
    bbk = level_to_bytes(level)
    jobs = native_battery.jobs(level, seed=7)
    linux = native_battery.run_ctypes(ctypes.CDLL(str(libraries["linux-x64"])), bbk, jobs)
    windows = windows_driver(bbk, native_battery.pack_jobs(jobs))
    assert len(linux) > 100_000
    assert windows == linux, native_battery.first_difference(windows, linux, jobs, level.num_leaves)
