"""core/native_lib.py: the order a library is found in (shipped, built from source, none), what
backend_report() says of each, and that a report never compiles.

The shipped package is faked here from the library the machine's compiler builds (a folder
brushbake_native/ with build.json put on sys.path); the zig-built wheels themselves are tested in
tests/test_native_build.py.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from brushbake.core import native_lib
from brushbake.core.errors import BackendUnavailableError
from brushbake.core.runtime import cruntime


#: the PATH with the machine's C compiler, before the tests hide it
PATH = os.environ.get("PATH", "")


@pytest.fixture(scope="module")
def built():
    """The library built from source by the machine's compiler (skip where there is none)."""
    path, why = native_lib.build_library()
    if path is None:
        pytest.skip(f"no library can be built here: {why}")
    return path


@pytest.fixture
def clean(monkeypatch, tmp_path):
    """No shipped package on the path, no compiler, an empty cache, nothing loaded yet."""
    monkeypatch.setattr(native_lib, "_LOADED", None)
    monkeypatch.setattr(native_lib, "_CACHE_DIR", None)
    monkeypatch.setattr(cruntime, "_LIBRARY", None)
    monkeypatch.delenv("BRUSHBAKE_NATIVE", raising=False)
    monkeypatch.setenv("BRUSHBAKE_C_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    monkeypatch.setenv("CC", "")
    # no installed brushbake_native either (scripts/test.sh puts the shipped one on the path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not (Path(p or ".") / native_lib.SHIPPED_PACKAGE).exists()])
    for name in [m for m in sys.modules if m.startswith(native_lib.SHIPPED_PACKAGE)]:
        monkeypatch.delitem(sys.modules, name)
    yield tmp_path
    native_lib.reset()


def fake_shipped(root, library, **build):
    """A brushbake_native package in root holding `library`, as a wheel installs it."""
    folder = root / native_lib.SHIPPED_PACKAGE
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    shutil.copy(library, folder / library.name)
    record = {"library": library.name, "platform": native_lib.this_platform(), "version": "0.1.0", "zig": "0.17.1",
              "sources": native_lib.sources_digest()}
    record.update(build)
    (folder / "build.json").write_text(json.dumps(record))
    sys.path.insert(0, str(root))
    return folder / library.name


def test_shipped_library_comes_first(built, clean):
    shipped = fake_shipped(clean / "site", built)
    lib = native_lib.load_library()
    report = native_lib.backend_report()
    assert report.backend == "shipped" and report.path == shipped, report
    assert report.text.startswith("native (shipped): brushbake_native 0.1.0 for ")
    assert cruntime.library() is lib and cruntime.available()


def test_a_shipped_library_of_other_sources_is_not_used(built, clean, monkeypatch):
    fake_shipped(clean / "site", built, sources="0" * 64)
    report = native_lib.backend_report(build=True)
    assert report.backend == "numpy"
    assert "of other sources" in report.why and "no C compiler" in report.why
    with pytest.raises(BackendUnavailableError, match="of other sources"):
        native_lib.load_library()
    monkeypatch.setenv("BRUSHBAKE_C_CACHE", str(built.parent))  # the compiler's build is there
    report = native_lib.backend_report(build=True)
    assert report.backend == "built" and report.path == built
    assert "of other sources" in report.why


def test_a_shipped_library_of_another_platform_is_not_used(built, clean):
    fake_shipped(clean / "site", built, platform="plan9-mips")
    report = native_lib.backend_report(build=True)
    assert report.backend == "numpy" and "plan9-mips, not " + native_lib.this_platform() in report.why


def test_without_shipped_library_or_compiler_numpy_answers(clean):
    report = native_lib.backend_report(build=True)
    assert report.backend == "numpy" and report.path is None and not report.native
    assert "no wheel for" in report.why and "no C compiler" in report.why
    assert report.text.startswith("NumPy: ")
    assert not cruntime.available()
    assert not (clean / "cache").exists()


def test_built_from_source_into_the_cache_folder_set(built, clean, monkeypatch):
    """The add-on's folder (set_cache_dir) wins over $BRUSHBAKE_C_CACHE."""
    monkeypatch.setenv("PATH", PATH)
    native_lib.set_cache_dir(clean / "blender_user")
    before = native_lib.backend_report()  # a report never compiles
    assert before.backend == "numpy" and "builds it at the first use" in before.why, before
    assert not (clean / "blender_user").exists()
    lib = native_lib.load_library()
    report = native_lib.backend_report()
    assert report.backend == "built" and report.path.parent == clean / "blender_user", report
    assert report.path.name == native_lib.built_library_path().name and lib is not None
    assert not (clean / "cache").exists()


def test_switched_off_and_source_only(built, clean, monkeypatch):
    fake_shipped(clean / "site", built)
    monkeypatch.setenv("BRUSHBAKE_NATIVE", "off")
    assert native_lib.backend_report().why == "switched off: $BRUSHBAKE_NATIVE=off"
    with pytest.raises(BackendUnavailableError):
        native_lib.load_library()
    monkeypatch.setenv("BRUSHBAKE_NATIVE", "source")
    native_lib.reset()
    report = native_lib.backend_report(build=True)
    assert report.backend == "numpy" and "shipped" not in report.why, report
    monkeypatch.setenv("BRUSHBAKE_C_CACHE", str(built.parent))
    assert native_lib.backend_report(build=True).backend == "built"


def test_the_sources_digest_covers_kernels_and_ignores_line_ends(tmp_path):
    root = tmp_path / "runtime_c"
    (root / "compiler").mkdir(parents=True)
    (root / "brushbake.c").write_bytes(b"int a;\n")
    (root / "brushbake.h").write_bytes(b"/* h */\n")
    first = native_lib.sources_digest(root)
    (root / "brushbake.c").write_bytes(b"int a;\r\n")
    assert native_lib.sources_digest(root) == first
    (root / "compiler" / "kernel.c").write_bytes(b"int k;\n")
    second = native_lib.sources_digest(root)
    assert second != first
    (root / "compiler" / "bbk_compiler.h").write_bytes(b"/* k */\n")
    assert native_lib.sources_digest(root) not in (first, second)
    assert [p.name for p in native_lib.source_files(root)] == ["brushbake.c", "kernel.c"]
