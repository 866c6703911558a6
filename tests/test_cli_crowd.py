"""Issue 13 from the command line, as users and scripts run it (`python -m brushbake` in a
subprocess): `bake ... --slices W,H,STEP[,CELL]` stores the slices (info shows them),
`query LEVEL --moves MOVES.npy -o OUT.npy` answers (N,) uint8 as the library does, and
`crowd LEVEL --avatars N --ticks T` prints one JSON object with the milliseconds per tick; bad
values are refused with their ranges, before any work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from brushbake.core.runtime.crowd import check_moves
from brushbake.exporters import read_level

REPO = Path(__file__).resolve().parents[1]
GARAGE = REPO / "sample_scenes" / "garage.json"


def run(*args, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "brushbake", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def garage(tmp_path_factory):
    out = tmp_path_factory.mktemp("crowd") / "garage.bbk"
    r = run("bake", GARAGE, "-o", out, "--vis", "none", "--slices", "1,1.75,0.5625,0.2")
    assert r.returncode == 0, r.stderr
    assert "slices: taken / kept" in r.stdout
    return out


def test_bake_stores_the_slices_and_info_shows_them(garage):
    level = read_level(garage)
    c = level.crowd
    assert (c.width, c.height, c.step, c.cell) == (1.0, 1.75, 0.5625, 0.2)
    r = run("info", garage)
    assert r.returncode == 0 and f"{c.kept} / {c.taken}" in r.stdout and "0.2 m" in r.stdout


def test_the_cell_is_optional(tmp_path):
    out = tmp_path / "s.bbk"
    r = run("bake", REPO / "sample_scenes" / "staircase.json", "-o", out, "--vis", "none", "-q", "--slices", "1,1.75,0.5")
    assert r.returncode == 0, r.stderr
    assert read_level(out).crowd.cell == 0.25


def test_query_moves_answers_as_the_library(garage, tmp_path):
    level = read_level(garage)
    rng = np.random.default_rng(0)
    lo, hi = level.world_bounds
    moves = lo + rng.random((500, 2, 3)) * (hi - lo)
    moves[:250, 1] = moves[:250, 0] + [0.2, 0, 0]
    moves[:250, :, 2] = 0.0  # on the garage's ground floor: many legal
    np.save(tmp_path / "moves.npy", moves)
    r = run("query", garage, "--moves", tmp_path / "moves.npy", "-o", tmp_path / "out.npy")
    assert r.returncode == 0, r.stderr
    out = np.load(tmp_path / "out.npy")
    assert out.dtype == np.uint8 and out.shape == (500,)
    assert np.array_equal(out, check_moves(level.crowd, moves))
    assert out.sum() > 50


def test_crowd_prints_json(garage):
    r = run("crowd", garage, "--avatars", 5000, "--ticks", 5)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["avatars"] == 5000 and doc["ticks"] == 5 and doc["ms_per_tick"] > 0
    assert 0 < doc["moved_per_tick"] <= 5000


@pytest.mark.parametrize("value, words", [
    ("1,0,0.5", "HEIGHT is 0.0; it must be from 0.0625 to 100"),
    ("1,1.75", "W,H,STEP"),
    ("1,1.75,0.5,0", "CELL is 0.0; it must be from 0.015625 to 100"),
    ("x,1.75,0.5", "WIDTH is 'x'"),
])
def test_bad_slices_are_refused_with_the_range(value, words, tmp_path):
    r = run("bake", GARAGE, "-o", tmp_path / "x.bbk", "--slices", value)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.bbk").exists()


def test_help_shows_the_slice_ranges():
    r = run("bake", "--help")
    assert "--slices W,H,STEP[,CELL]" in r.stdout and "0.0625 to 100" in r.stdout.replace("\n", " ").replace("  ", " ")


def test_moves_and_crowd_need_slices(tmp_path, garage):
    plain = tmp_path / "plain.bbk"
    assert run("bake", GARAGE, "-o", plain, "--vis", "none", "-q").returncode == 0
    np.save(tmp_path / "m.npy", np.zeros((2, 2, 3)))
    r = run("query", plain, "--moves", tmp_path / "m.npy", "-o", tmp_path / "o.npy")
    assert r.returncode == 1 and "--slices" in r.stderr and "Traceback" not in r.stderr
    r = run("crowd", plain, "--avatars", 10, "--ticks", 1)
    assert r.returncode == 1 and "--slices" in r.stderr
    r = run("crowd", garage, "--avatars", 90_000_000, "--ticks", 1)
    assert r.returncode == 1 and "do not fit" in r.stderr and "Traceback" not in r.stderr
    np.save(tmp_path / "bad.npy", np.zeros((2, 3)))
    r = run("query", garage, "--moves", tmp_path / "bad.npy", "-o", tmp_path / "o.npy")
    assert r.returncode == 1 and "(N, 2, 3)" in r.stderr
