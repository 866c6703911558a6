"""The libraries built for other machines, checked from this Linux x86-64 one (issue 32).

- windows-x64 under Wine, linux-arm64 under qemu-user: a test driver built for the platform with
  zig cc (tests/c/native_driver.c) loads the shipped library and runs tests/native_battery.py's
  queries (traces of every hull, first transitions, camera culls in the three modes, sweeps,
  moves) on two levels; its answers are the Linux x86-64 library's byte for byte.  Each is skipped,
  with the reason, only where its emulator is not installed (scripts/setup_env.sh installs
  Debian's wine64, qemu-user and libc6-arm64-cross).
- The Windows DLLs take sin, cos and tan from the C run-time DLL (scripts/native/win_crt_math.c).
- Every library (windows-x64/arm64, linux-x64/arm64, macos-x64/arm64) is of its format and
  architecture and exports the same bbk_* functions (tests/native_binaries.py reads ELF, PE and
  Mach-O files itself).
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


def runner(platform: str):
    """(the command that runs a program built for `platform` on this machine, the zig target for
    the driver, extra link flags) or None where its emulator is missing."""
    if platform == "windows-x64":
        for name in ("wine64", "wine"):
            if shutil.which(name):
                return [shutil.which(name)], "x86_64-windows-gnu", []
        if os.access("/usr/lib/wine/wine64", os.X_OK):
            return ["/usr/lib/wine/wine64"], "x86_64-windows-gnu", []
        return None
    if platform == "linux-arm64" and shutil.which("qemu-aarch64") and os.path.isdir("/usr/aarch64-linux-gnu/lib"):
        return [shutil.which("qemu-aarch64"), "-L", "/usr/aarch64-linux-gnu"], "aarch64-linux-gnu.2.17", ["-ldl"]
    return None


EMULATORS = {"windows-x64": "Wine (Debian: apt-get install wine64)",
             "linux-arm64": "qemu-user with an arm64 C library (Debian: apt-get install qemu-user libc6-arm64-cross)"}


@pytest.fixture(scope="module", params=["windows-x64", "linux-arm64"])
def foreign(request, build_native, libraries, tmp_path_factory):
    """drive(level bytes, jobs bytes) -> answers, on the platform's library through its emulator."""
    platform = request.param
    how = runner(platform)
    if how is None:
        pytest.skip(f"{EMULATORS[platform]} is not installed: scripts/setup_env.sh installs it as root")
    command, target, link = how
    folder = tmp_path_factory.mktemp(platform)
    library = libraries[platform]
    shutil.copy(library, folder / library.name)
    driver = "driver.exe" if "windows" in target else "driver"
    run = subprocess.run([*build_native.zig(), "cc", "-target", target, "-std=c99", "-O2", "-fno-sanitize=undefined",
                          "-I", str(REPO / "runtime_c"), "-o", str(folder / driver),
                          str(REPO / "tests" / "c" / "native_driver.c"), *link],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    env = dict(os.environ, WINEPREFIX=str(folder / "prefix"), WINEDEBUG="-all", WINEDLLOVERRIDES="mscoree,mshtml=")
    env.pop("DISPLAY", None)

    def drive(level_bytes: bytes, jobs_bytes: bytes) -> bytes:
        (folder / "level.bbk").write_bytes(level_bytes)
        (folder / "jobs.bin").write_bytes(jobs_bytes)
        # relative paths: Wine maps the working folder, not absolute Unix paths
        done = subprocess.run([*command, f"./{driver}", f"./{library.name}", "level.bbk", "jobs.bin", "answers.bin"],
                              cwd=folder, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        return (folder / "answers.bin").read_bytes()

    return drive


@pytest.mark.parametrize("name", LEVELS)
def test_the_foreign_library_answers_as_the_linux_x64_one(foreign, libraries, levels, name):
    from brushbake.exporters.native import level_to_bytes

    level = levels.with_vis(REPO / name)
    bbk = level_to_bytes(level)
    jobs = native_battery.jobs(level, seed=7)
    linux = native_battery.run_ctypes(ctypes.CDLL(str(libraries["linux-x64"])), bbk, jobs)
    answers = foreign(bbk, native_battery.pack_jobs(jobs))
    assert len(linux) > 100_000
    assert answers == linux, native_battery.first_difference(answers, linux, jobs, level.num_leaves)
