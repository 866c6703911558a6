"""The command line's messages and files, run as users run it (`python -m brushbake` in a subprocess).

Outputs are checked before the work (a folder given to -o, a missing or unwritable folder, the
input itself, one file named twice); `bake` writes the .bbk and the --json dump together or not at
all; read errors get a reading hint and write errors a writing one; no message names a temporary
file; a closed pipe ends quietly.  Unknown tool textures are warned once per name; the bake table
counts brushes by role; `info` shows bounds, hulls, bevels, markers and clusters.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from brushbake.exporters.native import read_level

WRITE_HINT = "you may write there"


def run(*args, cwd=None, timeout=300, **kw):
    return subprocess.run([sys.executable, "-m", "brushbake", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL, **kw)


def assert_user_error(result, *must_contain, must_not_contain=()):
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "error:" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    assert ".tmp" not in result.stderr, result.stderr  # never a temporary file's name
    for text in must_contain:
        assert text in result.stderr, (text, result.stderr)
    for text in must_not_contain:
        assert text not in result.stderr, (text, result.stderr)


@pytest.fixture(scope="module")
def scene(sample_paths):
    named = [p for p in sample_paths if p.name == "two_rooms.json"]
    assert named, "sample_scenes/two_rooms.json is missing"
    return named[0]


@pytest.fixture(scope="module")
def level(scene, tmp_path_factory):
    out = tmp_path_factory.mktemp("level") / "two_rooms.bbk"
    result = run("bake", scene, "-o", out, "-q")
    assert result.returncode == 0, result.stderr
    return out


# --------------------------------------------------------------------------------------------
# 7. outputs checked first, both files or neither, read and write hints, closed pipes


def test_output_naming_a_folder_fails_before_the_work(scene, tmp_path):
    (tmp_path / "outdir").mkdir()
    result = run("bake", scene, "-o", tmp_path / "outdir", cwd=tmp_path)
    assert_user_error(result, "outdir", "is a folder", f"e.g. -o {tmp_path / 'outdir' / 'two_rooms.bbk'}",
                      must_not_contain=(WRITE_HINT,))
    assert "%" not in result.stderr  # no progress line: nothing was loaded or compiled
    assert list((tmp_path / "outdir").iterdir()) == []
    result = run("bake", scene, "-o", tmp_path / "x.bbk", "--json", tmp_path / "outdir", cwd=tmp_path)
    assert_user_error(result, "is a folder; --json names the file to write")
    assert not (tmp_path / "x.bbk").exists()


def test_json_into_a_missing_folder_leaves_no_bbk(scene, tmp_path):
    result = run("bake", scene, "-o", tmp_path / "x.bbk", "--json", tmp_path / "no" / "x.json", cwd=tmp_path)
    assert_user_error(result, "x.json", "does not exist")
    assert sorted(os.listdir(tmp_path)) == []


def test_output_over_the_input_or_twice_fails_before_the_work(scene, tmp_path):
    copy = tmp_path / "scene.json"
    copy.write_bytes(scene.read_bytes())
    assert_user_error(run("bake", copy, "-o", copy, cwd=tmp_path), "is the input file")
    assert copy.read_bytes() == scene.read_bytes()
    assert_user_error(run("bake", copy, "-o", tmp_path / "a.bbk", "--json", tmp_path / "a.bbk", cwd=tmp_path),
                      "named by both -o and --json")
    assert sorted(os.listdir(tmp_path)) == ["scene.json"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root may write anywhere")
def test_output_into_a_read_only_folder_fails_before_the_work(scene, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert_user_error(run("bake", scene, "-o", ro / "x.bbk", cwd=tmp_path), "you may not write in the folder")
    finally:
        ro.chmod(0o755)


FULL_DISK = textwrap.dedent("""
    # The disk fills up while the --json dump is written: os.write fails with ENOSPC on it.
    import errno, os, sys
    import brushbake.exporters.native as native
    new_temp, write, json_fds = native._new_temp, os.write, set()
    def _new_temp(path):
        temp, fd = new_temp(path)
        if path.suffix == ".json":
            json_fds.add(fd)
        return temp, fd
    def full_write(fd, data):
        if fd in json_fds:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write(fd, data)
    native._new_temp, os.write = _new_temp, full_write
    from brushbake.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def test_a_failed_json_leaves_no_bbk_and_the_old_files_untouched(scene, tmp_path):
    script = tmp_path / "full_disk.py"
    script.write_text(FULL_DISK)
    out = tmp_path / "out"
    out.mkdir()
    result = subprocess.run([sys.executable, script, "bake", scene, "-o", out / "x.bbk", "--json", out / "x.json", "-q"],
                            capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert_user_error(result, "x.json", "No space left on device", WRITE_HINT, "nothing was written")
    assert sorted(os.listdir(out)) == []  # neither the .bbk nor a temporary file
    (out / "x.bbk").write_bytes(b"old level")
    (out / "x.json").write_text("old dump")
    result = subprocess.run([sys.executable, script, "bake", scene, "-o", out / "x.bbk", "--json", out / "x.json", "-q"],
                            capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert_user_error(result, "x.json")
    assert sorted(os.listdir(out)) == ["x.bbk", "x.json"]
    assert (out / "x.bbk").read_bytes() == b"old level" and (out / "x.json").read_text() == "old dump"


def test_bake_writes_both_files(scene, tmp_path):
    result = run("bake", scene, "-o", tmp_path / "x.bbk", "--json", tmp_path / "x.json", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(tmp_path)) == ["x.bbk", "x.json"]
    read_level(tmp_path / "x.bbk")


def test_read_errors_get_a_read_hint(tmp_path):
    result = run("info", tmp_path / "missing.bbk")
    assert_user_error(result, "missing.bbk", "does not exist", "Check the path", must_not_contain=(WRITE_HINT, "write there"))
    result = run("info", tmp_path)
    assert_user_error(result, "is a folder, not a level file", must_not_contain=(WRITE_HINT,))
    np.save(tmp_path / "p.npy", np.zeros((2, 3)))
    result = run("query", tmp_path / "missing.bbk", "--points", tmp_path / "p.npy", "-o", tmp_path / "o.npy")
    assert_user_error(result, "missing.bbk", "does not exist", must_not_contain=(WRITE_HINT,))
    assert not (tmp_path / "o.npy").exists()


def test_query_output_checked_before_the_work(level, tmp_path):
    np.save(tmp_path / "p.npy", np.zeros((2, 3)))
    (tmp_path / "d").mkdir()
    result = run("query", level, "--points", tmp_path / "p.npy", "-o", tmp_path / "d")
    assert_user_error(result, "is a folder; -o names the file to write")
    result = run("query", level, "--points", tmp_path / "p.npy", "-o", tmp_path / "nope" / "o.npy")
    assert_user_error(result, "does not exist", "Create the folder")


def test_a_closed_pipe_exits_quietly(level):
    """`info LEVEL | head -1` where head has gone before info writes: no traceback, no
    'BrokenPipeError', no 'Exception ignored'; the status of a process ended by SIGPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command starts writing
    try:
        proc = subprocess.run([sys.executable, "-m", "brushbake", "info", level], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120, stdin=subprocess.DEVNULL)
    finally:
        os.close(write_end)
    assert proc.stderr == ""
    assert proc.returncode == 141


def test_head_reads_the_first_line(level):
    """The same through a shell pipe, as users type it."""
    proc = subprocess.run(f'"{sys.executable}" -m brushbake info "{level}" | head -1', shell=True,
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout == f"{level}\n"
    assert proc.stderr == ""
