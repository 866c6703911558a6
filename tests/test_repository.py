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


# --------------------------------------------------------------------------------------------
# The docs a user reads: README.md, docs/*.md and every folder's README.md

TOP_FOLDERS = ("core", "addon", "exporters", "tests", "bench", "scripts", "runtime_c", "docs", "sample_scenes", "maps")
#: paths the docs name that a checkout does not hold until a command writes them
WRITTEN_LATER = {"sample_scenes/blend/*.blend": "sample_scenes/make_blend.py writes them",
                 "runtime_c/compiler/*.c": "the compiler's kernels: the native library takes each as it lands"}


def user_docs() -> list[Path]:
    readmes = [p for p in REPO.rglob("README.md") if p.parent != REPO
               and not {".venv", ".git", "dist", "out", "node_modules", ".pytest_cache"} & set(p.relative_to(REPO).parts)]
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted(readmes)]


def named_paths(text: str) -> list[tuple[int, str]]:
    """(line, path) of every path under a top folder the text names: `core/runtime/query.py`,
    `addon/bridge` (a module: bridge.py), `core/compile/light/lm_*.py` (a glob), `core/x.py.fn`
    (a function in x.py).  Markdown's bold stars are not part of a path."""
    pattern = re.compile(r"(?<![\w./-])((?:%s)/[\w.*/-]*[\w*])" % "|".join(TOP_FOLDERS))
    out = []
    for m in pattern.finditer(text):
        path = m.group(1)
        while path.endswith("**") or path.endswith("."):
            path = path[:-2] if path.endswith("**") else path[:-1]
        out.append((text.count("\n", 0, m.start()) + 1, path))
    return out


def path_exists(doc: Path, path: str) -> bool:
    for base in (REPO, doc.parent):
        if "*" in path:
            if path.rstrip("/") and list(base.glob(path.rstrip("/"))):
                return True
            continue
        stem = path.rstrip("/")
        while True:
            if (base / stem).exists() or (base / (stem + ".py")).exists():
                return True
            if "." not in stem.rsplit("/", 1)[-1]:
                break
            stem = stem.rsplit(".", 1)[0]  # core/x/y.name -> core/x/y(.py)
    return False


def test_every_code_path_the_docs_name_exists():
    missing = [f"{doc.relative_to(REPO)}:{line}: {path}" for doc in user_docs()
               for line, path in named_paths(doc.read_text(encoding="utf-8"))
               if path not in WRITTEN_LATER and not path_exists(doc, path)]
    assert not missing, "the docs name files that do not exist:\n" + "\n".join(missing)


def test_the_path_check_finds_a_stale_path(tmp_path):
    doc = REPO / "docs" / "X.md"
    found = [p for _, p in named_paths("see core/bevel.py, **core/runtime/shift.py** and addon/bridge.")]
    assert found == ["core/bevel.py", "core/runtime/shift.py", "addon/bridge"]
    assert [path_exists(doc, p) for p in found] == [False, True, True]


def test_the_docs_cite_what_a_user_can_look_up():
    """No '../shared' folder (a clone has none), no 'issue N' (the tracker is not public) and no
    bare 'the thesis': works are cited by author, with titles in README.md's References."""
    bad = []
    for doc in user_docs():
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
            for pattern in (r"shared/seeds|\.\./shared", r"\b[Ii]ssues? \d+", r"\b[Tt]he thesis\b"):
                if re.search(pattern, line):
                    bad.append(f"{doc.relative_to(REPO)}:{n}: {line.strip()[:100]}")
    assert not bad, "\n".join(bad)
    references = (REPO / "README.md").read_text(encoding="utf-8").split("## References", 1)[1]
    for author in ("Ranta-Eskola", "Golodetz", "Melax", "Ramires Fernandes"):
        assert author in references


def test_every_markdown_table_has_its_header():
    """A run of table rows starts with a header and its |---| line (rows cut off from their table
    by a section in between render as text)."""
    bad = []
    for doc in user_docs():
        lines, fence = doc.read_text(encoding="utf-8").splitlines(), False
        for n, line in enumerate(lines):
            if line.lstrip().startswith("```"):
                fence = not fence
            starts = line.startswith("|") and (n == 0 or not lines[n - 1].startswith("|"))
            if not fence and starts and not (n + 1 < len(lines) and re.match(r"^\|\s*:?-{3,}", lines[n + 1])):
                bad.append(f"{doc.relative_to(REPO)}:{n + 1}: {line[:80]}")
    assert not bad, "table rows without a header:\n" + "\n".join(bad)


def test_the_settings_table_lists_every_setting():
    import dataclasses

    from brushbake.core.model.scene import Settings

    guide = (REPO / "docs" / "USER_GUIDE.md").read_text(encoding="utf-8")
    section = guide.split("### Settings and their ranges", 1)[1].split("\n### ", 1)[0]
    named = {name for line in section.splitlines() if line.startswith("| `")
             for name in re.findall(r"`(\w+)`", line.split("|")[1])}
    assert [f.name for f in dataclasses.fields(Settings) if f.name not in named] == []
def test_build_extension_without_the_bpy_wheel_says_what_to_run_first(tmp_path):
    """After scripts/bake_sample.sh alone (.venv holds the headless core, no bpy) and with no
    blender on the PATH, build_extension.sh fails with one line naming the command to run first."""
    python = tmp_path / "python"  # an interpreter without bpy: the probe for Blender's tool fails
    python.write_text("#!/bin/sh\nexit 1\n")
    python.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "PYTHON": str(python), "HOME": str(tmp_path)}
    proc = subprocess.run(["bash", str(REPO / "scripts" / "build_extension.sh"), str(tmp_path / "dist")],
                          capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and "run scripts/setup_env.sh" in proc.stderr, proc.stderr
