"""The repository builds into a Blender extension that installs, enables and disables cleanly.

Everything runs against real Blender from the bpy wheel, but always in subprocesses: Blender cannot
be unloaded from a process, keeps global state between tests and would otherwise write into the
user's own configuration.  Each Blender subprocess gets BLENDER_USER_RESOURCES pointing at a
temporary directory instead.

The module is skipped only when the bpy wheel is not installed at all.  That check deliberately
uses ``find_spec`` rather than ``pytest.importorskip("bpy")``: importorskip would load Blender into
the pytest process, and it would also *skip* when bpy is installed but cannot load (a missing
system library), hiding exactly the breakage CI is there to catch.  Here such a machine fails, with
Blender's own error message.
"""

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

if importlib.util.find_spec("bpy") is None:
    pytest.skip(
        "bpy wheel not installed (scripts/setup_env.sh installs bpy==5.0.1)", allow_module_level=True
    )

pytestmark = pytest.mark.blender

REPO = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("blender_probe.py")
MODULE = "bl_ext.user_default.brushbake"

TIMEOUT_S = 120
"""Upper bound for any one subprocess; each normally takes 0.2 s (build) to 2 s (Blender)."""

SHIPPED = ("__init__.py", "blender_manifest.toml", "addon/__init__.py", "core/__init__.py",
           "exporters/__init__.py")
"""Files the zip must contain for the extension to import at all."""

NOT_SHIPPED_PREFIXES = ("tests/", "bench/", "docs/", "scripts/", "maps/", "farm/", ".ci/", ".git", ".venv/",
                        "build/", "dist/", "pyproject.toml")
"""Development material that must stay out of the zip (see [build] in blender_manifest.toml)."""


def find_blender_ext() -> Path:
    """Locate Blender's extension command-line tool inside the installed bpy package.

    It ships in the wheel under ``<version>/scripts/addons_core/bl_pkg/cli/`` (Blender 4.2+); the
    known place is tried first and the whole package searched only if a release moves it.
    """
    spec = importlib.util.find_spec("bpy")
    assert spec is not None and spec.submodule_search_locations, "bpy is not a package"
    bpy_dir = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(bpy_dir.glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
    if not found:
        found = sorted(bpy_dir.rglob("blender_ext.py"))
    assert found, f"blender_ext.py not found anywhere under {bpy_dir}"
    return found[-1]


def run_python(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``sys.executable`` with ``args``, capturing text output, never longer than TIMEOUT_S."""
    return subprocess.run(
        [sys.executable, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def blender_ext_messages(proc: subprocess.CompletedProcess) -> list[tuple[str, str]]:
    """Parse ``--output-type JSON`` output of blender_ext.py into (kind, text) pairs."""
    return [tuple(json.loads(line)) for line in proc.stdout.splitlines() if line.strip()]


def isolated_blender_env(user_resources: Path) -> dict[str, str]:
    """The current environment with Blender's user directories redirected to ``user_resources``.

    Any BLENDER_USER_* override from the caller's shell is dropped: each would take precedence over
    BLENDER_USER_RESOURCES for its own directory and leak the test into a real configuration.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith("BLENDER_USER_")}
    env["BLENDER_USER_RESOURCES"] = str(user_resources)
    return env


def ensure_wheels() -> None:
    """The native wheels blender_manifest.toml lists, in wheels/ (scripts/build_native.py: zig cc,
    cached; a second call compiles nothing)."""
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "build_native.py"), "--out", str(REPO / "wheels")],
                          capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"build_native failed:\n{proc.stdout}\n{proc.stderr}"


@pytest.fixture(scope="module")
def blender_ext() -> Path:
    return find_blender_ext()


@pytest.fixture(scope="module")
def built_zip(blender_ext: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the extension zip (every platform's wheel in one) from the repository once for the whole module."""
    ensure_wheels()
    out_dir = tmp_path_factory.mktemp("extension_zip")
    proc = run_python(blender_ext, "build", "--output-type", "JSON",
                      "--source-dir", REPO, "--output-dir", out_dir)
    assert proc.returncode == 0, f"build failed:\n{proc.stdout}\n{proc.stderr}"
    zips = sorted(out_dir.glob("*.zip"))
    assert len(zips) == 1, f"expected one zip in {out_dir}, found {zips}\n{proc.stdout}"
    return zips[0]


def test_build_names_the_zip_after_id_and_version(built_zip: Path) -> None:
    assert built_zip.name == "brushbake-0.1.0.zip"


def test_zip_validates_without_warnings(blender_ext: Path, built_zip: Path) -> None:
    proc = run_python(blender_ext, "validate", "--output-type", "JSON", built_zip)
    messages = blender_ext_messages(proc)
    assert proc.returncode == 0, f"validate failed:\n{proc.stdout}\n{proc.stderr}"
    complaints = [m for m in messages if m[0] != "STATUS"]
    assert not complaints, f"validate complained: {complaints}"
    assert any(text.startswith("Success") for _, text in messages), messages


def test_zip_ships_the_extension_and_nothing_for_development(built_zip: Path) -> None:
    with zipfile.ZipFile(built_zip) as archive:
        names = archive.namelist()
    missing = [name for name in SHIPPED if name not in names]
    assert not missing, f"zip lacks {missing}: {names}"
    leaked = [name for name in names
              if name.startswith(NOT_SHIPPED_PREFIXES)
              or "__pycache__/" in name or name.endswith(".pyc") or ".egg-info/" in name]
    assert not leaked, f"development files in the zip: {leaked}"


def test_zip_carries_the_licence_text(built_zip: Path) -> None:
    """GPL-3.0-or-later asks that the licence travel with the program: the full text, not a name."""
    with zipfile.ZipFile(built_zip) as archive:
        text = archive.read("LICENSE").decode("utf-8")
    assert text == (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "GNU GENERAL PUBLIC LICENSE" in text and "Version 3, 29 June 2007" in text
    assert "END OF TERMS AND CONDITIONS" in text and len(text) > 30_000


def test_install_enable_disable_in_blender(built_zip: Path, tmp_path: Path) -> None:
    """Install through Blender's own operator, as a user would with 'Install from Disk'."""
    user_resources = tmp_path / "blender_user"
    user_resources.mkdir()
    proc = run_python(PROBE, built_zip, env=isolated_blender_env(user_resources))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("PROBE_RESULT ")]
    assert proc.returncode == 0 and lines, f"probe failed:\n{proc.stdout}\n{proc.stderr}"
    result = json.loads(lines[-1].removeprefix("PROBE_RESULT "))
    context = f"{json.dumps(result, indent=1)}\nstderr:\n{proc.stderr}"
    assert "error" not in result, context

    # Installed into the throw-away directory, not the user's own.
    assert Path(result["user_resources"]) == user_resources, context
    assert (user_resources / "extensions" / "user_default" / "brushbake" / "__init__.py").is_file()

    # Enabled: module, classes, panel placement and the scene settings.
    assert result["install"] == ["FINISHED"], context
    assert result["enabled"] is True, context
    assert {"BRUSHBAKE_PG_settings", "BRUSHBAKE_PT_main"} <= set(result["classes_enabled"]), context
    assert result["panel_in_bpy_types"] is True, context
    assert result["panel_location"] == ["VIEW_3D", "UI", "brushbake"], context
    assert result["scene_property"] is True, context
    assert result["output_path_default"] == "//level.bbk", context
    assert result["output_path_roundtrip"] is True, context

    # Disabled: every class and the scene pointer gone again.
    assert result["disable"] == ["FINISHED"], context
    assert result["enabled_after_disable"] is False, context
    assert result["classes_after_disable"] == [], context
    assert result["scene_property_after_disable"] is False, context
