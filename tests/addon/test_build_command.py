"""docs/BLENDER.md's build commands work as written, in a checkout without dist/.

The documented lines are read from BLENDER.md itself and run with bash in a copy of the
repository (so that dist/ is created there, not in the working tree).  Only the venv's paths are
mapped onto this test's interpreter and its bpy wheel, which is where scripts/setup_env.sh puts them.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if importlib.util.find_spec("bpy") is None:
    pytest.skip("bpy wheel not installed (scripts/setup_env.sh installs bpy==5.0.1)", allow_module_level=True)

pytestmark = pytest.mark.blender

REPO = Path(__file__).resolve().parents[2]
#: the split-platform zips the documented commands make, one per platform in blender_manifest.toml
PLATFORMS = ("linux_x64", "linux_arm64", "windows_x64", "windows_arm64", "macos_x64", "macos_arm64")
ZIPS = [f"dist/brushbake-0.1.0-{p}.zip" for p in PLATFORMS]


@pytest.fixture()
def checkout(tmp_path: Path) -> Path:
    """The repository's files without .git, .venv, dist/ or caches."""
    dest = tmp_path / "brushbake"
    shutil.copytree(REPO, dest, ignore=shutil.ignore_patterns(".git", ".venv", "dist", "__pycache__", ".pytest_cache",
                                                              ".hypothesis", "*.egg-info", "out"))
    assert not (dest / "dist").exists()
    return dest


def documented_lines(needle: str) -> list[str]:
    lines = [line.strip() for line in (REPO / "docs" / "BLENDER.md").read_text(encoding="utf-8").splitlines()
             if needle in line and line.startswith("    ")]
    assert lines, f"no indented command with {needle!r} in docs/BLENDER.md"
    return lines


def test_documented_wheel_build_command(checkout: Path) -> None:
    spec = importlib.util.find_spec("bpy")
    bpy_dir = Path(next(iter(spec.submodule_search_locations)))
    (line,) = documented_lines("blender_ext.py build")
    command = line.replace(".venv/bin/python", sys.executable).replace(
        ".venv/lib/python3.11/site-packages/bpy", str(bpy_dir))
    proc = subprocess.run(["bash", "-c", command], cwd=checkout, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, (command, proc.stdout, proc.stderr)
    assert sorted(p.name for p in (checkout / "dist").glob("*.zip")) == sorted(Path(z).name for z in ZIPS)


def test_documented_build_script(checkout: Path) -> None:
    (line,) = documented_lines("scripts/build_extension.sh")
    env = dict(os.environ, PYTHON=sys.executable)  # the venv's interpreter in a set-up checkout
    proc = subprocess.run(["bash", "-c", line], cwd=checkout, capture_output=True, text=True, timeout=120,
                          env=env, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    for zip_path in ZIPS:
        assert (checkout / zip_path).is_file()
        assert f"built {checkout / zip_path}" in proc.stdout
