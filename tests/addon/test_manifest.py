"""blender_manifest.toml agrees with the rest of the project.

Needs no Blender: these are the facts a release would otherwise get wrong silently (a version bumped
in one place only, a licence drifting from the project's).  Blender's own validator is exercised in
test_extension.py.
"""

from pathlib import Path

import pytest

import brushbake
from brushbake.core.version import __version__

tomllib = pytest.importorskip("tomllib")  # standard library from Python 3.11

REPO = Path(__file__).resolve().parents[2]


def load_toml(name: str) -> dict:
    with open(REPO / name, "rb") as fh:
        return tomllib.load(fh)


def test_versions_agree() -> None:
    manifest = load_toml("blender_manifest.toml")
    pyproject = load_toml("pyproject.toml")
    assert manifest["version"] == pyproject["project"]["version"] == __version__
    assert brushbake.__version__ is __version__  # the root package re-exports the one home


def test_the_addon_takes_the_version_from_core() -> None:
    """addon/ imports nothing from the root package (no arrow runs back up): the panel's
    version comes from core/version.py."""
    text = (REPO / "addon" / "panels.py").read_text()
    assert "from ..core.version import __version__" in text
    for path in sorted((REPO / "addon").glob("*.py")):
        src = path.read_text()
        assert "from .. import" not in src and "import brushbake\n" not in src, path.name


def test_identity_and_licence() -> None:
    manifest = load_toml("blender_manifest.toml")
    assert manifest["schema_version"] == "1.0.0"
    assert manifest["id"] == "brushbake"
    assert manifest["type"] == "add-on"
    assert manifest["blender_version_min"] == "4.2.0"
    assert manifest["license"] == ["SPDX:GPL-3.0-or-later"]
    assert load_toml("pyproject.toml")["project"]["license"] == "GPL-3.0-or-later"


def test_only_file_access_is_declared() -> None:
    """brushbake reads and writes only files the user picks; it never uses the network."""
    assert set(load_toml("blender_manifest.toml").get("permissions", {})) <= {"files"}


def test_the_native_wheels_are_build_natives_for_every_platform() -> None:
    """`platforms` and `wheels` name what scripts/build_native.py builds: one wheel a platform, of
    this version (issue 32)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_native", REPO / "scripts" / "build_native.py")
    build_native = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_native)
    manifest = load_toml("blender_manifest.toml")
    assert manifest["platforms"] == list(build_native.TARGETS)
    assert manifest["wheels"] == [f"./wheels/{build_native.wheel_name(p, __version__)}" for p in build_native.TARGETS]
    assert "/wheels/" in manifest["build"]["paths_exclude_pattern"]
    pyproject = load_toml("pyproject.toml")
    assert pyproject["project"]["optional-dependencies"]["native"] == [f"brushbake_native=={__version__}"]
