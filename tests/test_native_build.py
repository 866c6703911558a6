"""The native library built ahead of time with zig cc for every platform (scripts/build_native.py)
and its py3-none-<platform> wheels (issue 32).

- The wheels: one per platform, named and tagged for it, a valid RECORD, build.json naming these
  sources; the same bytes when built again.
- linux-x64: the shipped library loads from its wheel (the report says 'shipped'), and its answers
  equal, byte for byte, those of the library the machine's C compiler builds on a battery of
  queries (tests/native_battery.py: traces of every hull, first transitions, camera culls in the
  three modes, sweeps, moves) on two levels, and its traces and culls are NumPy's on e1m7; CI
  runs the whole suite's C tests on it too (scripts/test.sh: BRUSHBAKE_NATIVE=shipped).
The libraries are built once a session (cached by scripts/build_native.py under a hash of the
sources and flags: a second run compiles nothing).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import native_battery

REPO = Path(__file__).resolve().parents[1]
WHEEL_TAGS = {"linux-x64": "manylinux_2_17_x86_64", "linux-arm64": "manylinux_2_17_aarch64",
              "windows-x64": "win_amd64", "windows-arm64": "win_arm64", "macos-x64": "macosx_11_0_x86_64", "macos-arm64": "macosx_11_0_arm64"}


def load_build_native():
    spec = importlib.util.spec_from_file_location("build_native", REPO / "scripts" / "build_native.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def build_native():
    if importlib.util.find_spec("ziglang") is None:
        if os.environ.get("CI"):
            pytest.fail("ziglang is not installed: scripts/setup_env.sh installs it with brushbake[test]")
        pytest.skip("ziglang is not installed (pip install ziglang, or scripts/setup_env.sh)")
    return load_build_native()


@pytest.fixture(scope="session")
def wheels(build_native, tmp_path_factory):
    """{platform: (library, wheel)} for every platform, built (or found cached) once a session."""
    out = tmp_path_factory.mktemp("wheels")
    return build_native.build(list(build_native.TARGETS), out, log=lambda *a: None)


def installed(wheel: Path, where: Path) -> Path:
    """The wheel unpacked as an installer lays it out (a site-packages folder)."""
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(where)
    return where


def test_one_wheel_per_platform_named_and_tagged_for_it(wheels, build_native):
    from brushbake.core.version import __version__

    assert set(wheels) == set(WHEEL_TAGS)
    for platform, (library, wheel) in wheels.items():
        tag = WHEEL_TAGS[platform]
        assert wheel.name == f"brushbake_native-{__version__}-py3-none-{tag}.whl"
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            info = f"brushbake_native-{__version__}.dist-info"
            assert f"Tag: py3-none-{tag}" in archive.read(f"{info}/WHEEL").decode()
            assert "Root-Is-Purelib: false" in archive.read(f"{info}/WHEEL").decode()
            meta = archive.read(f"{info}/METADATA").decode()
            assert "Name: brushbake_native" in meta and f"Version: {__version__}" in meta
            build = json.loads(archive.read("brushbake_native/build.json"))
            assert build["platform"] == platform and build["version"] == __version__
            assert archive.read(f"brushbake_native/{build['library']}") == library.read_bytes()
            rows = list(csv.reader(io.StringIO(archive.read(f"{info}/RECORD").decode())))
            assert sorted(r[0] for r in rows) == sorted(names)
            for path, digest, size in rows:
                if path.endswith("RECORD"):
                    continue
                data = archive.read(path)
                want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                assert digest == f"sha256={want}" and int(size) == len(data), path
            assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in archive.infolist())


def test_the_wheels_record_these_sources_and_flags(wheels):
    from brushbake.core import native_lib

    for platform, (_, wheel) in wheels.items():
        with zipfile.ZipFile(wheel) as archive:
            build = json.loads(archive.read("brushbake_native/build.json"))
        assert build["sources"] == native_lib.sources_digest(), platform
        flags = build["flags"]
        assert "-ffp-contract=off" in flags and "-fno-sanitize=undefined" in flags and "-O3" in flags, flags


def test_a_second_build_writes_the_same_wheels(wheels, build_native, tmp_path):
    again = build_native.build(list(wheels), tmp_path, log=lambda *a: None)
    for platform, (_, wheel) in wheels.items():
        assert again[platform][1].read_bytes() == wheel.read_bytes(), platform


def test_shipped_linux_library_loads_from_its_wheel(wheels, tmp_path):
    """In a fresh process with no compiler and an empty cache, the wheel's library is the one that
    runs, and the report says so."""
    site = installed(wheels["linux-x64"][1], tmp_path / "site")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), *sys.path]), PATH=str(tmp_path / "nothing"),
               CC="", BRUSHBAKE_C_CACHE=str(tmp_path / "cache"))
    env.pop("BRUSHBAKE_NATIVE", None)
    code = ("from brushbake.core import native_lib; from brushbake.core.runtime import cruntime; "
            "assert cruntime.available(); r = native_lib.backend_report(); print(r.backend, r.path)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    backend, path = run.stdout.split()
    assert backend == "shipped" and Path(path) == site / "brushbake_native" / "libbrushbake.so"
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("name", ["sample_scenes/two_rooms.json", "maps/id/e1m7.map"])
def test_zig_and_compiler_built_linux_libraries_answer_alike(wheels, levels, name):
    """The shipped (zig) library and the one built from source by the machine's compiler give the
    same bytes for every answer of the battery."""
    import ctypes

    from brushbake.core import native_lib
    from brushbake.exporters.native import level_to_bytes

    built, why = native_lib.build_library()
    if built is None:
        pytest.skip(f"no C compiler to compare with: {why}")
    level = levels.with_vis(REPO / name)
    bbk = level_to_bytes(level)
    jobs = native_battery.jobs(level, seed=32)
    zig = native_battery.run_ctypes(ctypes.CDLL(str(wheels["linux-x64"][0])), bbk, jobs)
    cc = native_battery.run_ctypes(ctypes.CDLL(str(built)), bbk, jobs)
    assert len(zig) > 100_000
    assert zig == cc, native_battery.first_difference(zig, cc, jobs, level.num_leaves)


def test_the_zig_built_linux_library_answers_as_numpy(wheels, levels):
    """Whatever the suite runs on: the shipped library's traces (every hull) and camera culls (three
    modes) against the NumPy run-time on e1m7, every field to the bit (scripts/test.sh runs the
    whole suite's C tests on it as well)."""
    import ctypes

    import numpy as np

    from brushbake.core.runtime.cruntime import CLevel
    from brushbake.core.runtime.cull import cull
    from brushbake.core.runtime.trace import trace_hulls
    from brushbake.exporters.native import level_to_bytes

    level = levels.with_vis(REPO / "maps/id/e1m7.map")
    c = CLevel(level_to_bytes(level), "e1m7", level.hull_names, lib=ctypes.CDLL(str(wheels["linux-x64"][0])))
    jobs = native_battery.jobs(level, seed=5, n=2000)
    segments = next(j["rows"] for j in jobs if j["kind"] == native_battery.TRACE)
    cameras = next(j["rows"] for j in jobs if j["kind"] == native_battery.CULL)
    for hull in range(len(level.hull_names)):
        want = trace_hulls(level, segments[:, :3], segments[:, 3:], hull=hull, retry=hull != 0)
        got = c.trace(segments[:, :3], segments[:, 3:], hull=hull, retry=hull != 0)
        for field in ("fraction", "point", "normal", "plane", "start_solid", "hit"):
            assert np.array_equal(getattr(want, field), getattr(got, field)), (hull, field)
    for mode in ("pvs", "frustum", "portal"):
        drawn, stats = c.cull(cameras, mode)
        assert np.array_equal(cull(level, cameras, mode).drawn, drawn), mode
