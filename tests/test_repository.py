"""The repository stands on its own: the maps the tests and benchmarks read are in maps/ with
their licences and sources, the ericw-tools reference figures are in bench/, the licence text is
there, and nothing of this reaches outside the repository (no ../shared)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAPS = REPO / "maps"


def test_every_map_folder_has_its_licence_and_is_listed_in_the_readme():
    readme = (MAPS / "README.md").read_text(encoding="utf-8")
    folders = sorted(p for p in MAPS.iterdir() if p.is_dir())
    assert [p.name for p in folders] == ["ericw-tools", "id", "librequake"]
    for folder in folders:
        assert (folder / "COPYING").stat().st_size > 1000, folder
        assert f"| {folder.name}/ |" in readme
        row = next(line for line in readme.splitlines() if line.startswith(f"| {folder.name}/ |"))
        for path in folder.glob("*.map"):
            assert path.stem in row, (path.name, row)


def test_maps_stay_out_of_the_extension_zip():
    manifest = (REPO / "blender_manifest.toml").read_text(encoding="utf-8")
    assert re.search(r'^\s*"/maps/",', manifest, re.M)


def test_nothing_reads_outside_the_repository():
    """Tests, benchmarks and scripts name no ../shared folder (a clone has none beside it)."""
    offenders = []
    for folder in ("tests", "bench", "scripts", ".ci"):
        for path in (REPO / folder).rglob("*"):
            if path.suffix in (".py", ".sh", "") and path.is_file() and path != Path(__file__):
                text = path.read_text(encoding="utf-8", errors="replace")
                if re.search(r'"shared"|\.\./shared|parent / "shared"', text):
                    offenders.append(str(path.relative_to(REPO)))
    assert not offenders


def test_the_compile_benchmark_finds_the_ericw_reference_figures():
    spec = importlib.util.spec_from_file_location("bench_compile", REPO / "bench" / "compile.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.reference_rows()
    assert rows["lq_e0m3"]["ericw_qbsp_s"] == 1.64 and rows["e3m4"]["ericw_nodes"] == 14930
    assert all(name in bench.scene_files() for name in rows)


def test_the_licence_is_the_full_gpl3_text():
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.lstrip().startswith("GNU GENERAL PUBLIC LICENSE")
    assert "Version 3, 29 June 2007" in text and "END OF TERMS AND CONDITIONS" in text
    assert "How to Apply These Terms to Your New Programs" in text and len(text) > 30_000


def test_the_suite_runs_in_a_clone_whose_folder_is_no_identifier(tmp_path):
    """pytest sets up the repository's folder (it has __init__.py) as a package; a clone in
    'fresh-clone/' must still collect and run (one quick test here, not the whole suite)."""
    clone = tmp_path / "fresh-clone"
    shutil.copytree(REPO, clone, ignore=shutil.ignore_patterns(".git", ".venv", "dist", "maps", "__pycache__",
                                                               ".pytest_cache", ".hypothesis", "*.egg-info", "out"))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_repository.py",
                           "-k", "full_gpl3_text"], cwd=clone, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "1 passed" in proc.stdout
