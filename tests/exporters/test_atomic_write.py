"""Writing is atomic: a failure at any point leaves no temporary file and the old file untouched."""

from __future__ import annotations

import os
import stat
import sys

import pytest
from level_builders import assert_levels_equal, box_level, empty_level

from brushbake.core.errors import LevelFormatError
from brushbake.exporters import native, read_level, write_level, write_level_json

OLD = b"the previous file, which must survive"


@pytest.fixture
def target(tmp_path):
    path = tmp_path / "level.bbk"
    path.write_bytes(OLD)
    return path


def assert_untouched(path):
    assert path.read_bytes() == OLD
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_write_fails_midway(target, monkeypatch):
    real_write, calls = os.write, []

    def half_then_fail(fd, data):
        calls.append(len(data))
        if len(calls) > 1:
            raise OSError(28, "No space left on device")
        return real_write(fd, bytes(data[: len(data) // 2]))

    monkeypatch.setattr(native.os, "write", half_then_fail)
    with pytest.raises(OSError, match="No space"):
        write_level(box_level(), target)
    assert len(calls) == 2  # half the file was on disk when it failed
    assert_untouched(target)


@pytest.mark.parametrize("step", ["fsync", "close", "replace"])
def test_failure_after_writing(target, monkeypatch, step):
    real = getattr(os, step)

    def fail(*args):
        if step == "close":
            real(*args)
        raise OSError(5, f"{step} failed")

    monkeypatch.setattr(native.os, step, fail)
    with pytest.raises(OSError, match=f"{step} failed"):
        write_level(box_level(), target)
    monkeypatch.undo()
    assert_untouched(target)


def test_interrupt_leaves_nothing(target, monkeypatch):
    def interrupt(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(native.os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_level_json(box_level(), target)
    monkeypatch.undo()
    assert_untouched(target)


def test_invalid_level_writes_nothing(target):
    level = box_level()
    level.face_brush = level.face_brush + 5
    with pytest.raises(LevelFormatError):
        write_level(level, target)
    assert_untouched(target)


def test_new_file_and_replacement(tmp_path, target):
    fresh = tmp_path / "sub" / "new.bbk"
    with pytest.raises(FileNotFoundError):  # no such directory: nothing is created
        write_level(empty_level(), fresh)
    write_level(box_level(), target)
    assert_levels_equal(box_level(), read_level(target))
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_new_file_gets_ordinary_permissions(tmp_path):
    mask = os.umask(0o022)
    try:
        write_level(empty_level(), tmp_path / "a.bbk")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "a.bbk").stat().st_mode) == 0o644


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_level(tmp_path / "nope.bbk")
