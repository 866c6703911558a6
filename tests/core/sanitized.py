"""A test driver built with -fsanitize=address,undefined beside the compiler kernels it calls
(tests/c/*_driver.c): the fixtures of the kernels' tests share it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def build_sanitized(tmp_path_factory, driver: str, kernels: list[str]) -> Path:
    """tests/c/<driver>.c and runtime_c/compiler/<kernel>.c built into one sanitized program;
    the test is skipped where gcc is missing or cannot build with the sanitizers."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is missing: the sanitizer build needs it")
    out = tmp_path_factory.mktemp(f"asan_{driver}") / driver
    run = subprocess.run([gcc, "-std=c99", "-g", "-O1", "-Wall", "-Wextra", "-Werror", "-pedantic", "-ffp-contract=off",
                          "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer",
                          f"tests/c/{driver}.c", *[f"runtime_c/compiler/{k}.c" for k in kernels], "-lm", "-o", str(out)],
                         capture_output=True, text=True, cwd=REPO)
    if run.returncode != 0:
        pytest.skip(f"gcc cannot build with -fsanitize=address,undefined here: {run.stderr.strip()[:200]}")
    return out


def run_sanitized(program: Path, cwd: Path) -> None:
    """The program on cwd/in.bin -> cwd/out.bin; a sanitizer's report fails the test."""
    run = subprocess.run([str(program), "in.bin", "out.bin"], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
