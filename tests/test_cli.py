"""The command line, run as users run it: `python -m brushbake` in a subprocess.

bake / info / query on a sample scene and a small map; the query answers are compared with the
in-process queries on the same level file; every bad input exits 1 with one 'error:' paragraph
and no traceback; baking twice gives the same bytes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from brushbake.core.runtime.query import point_solid, segment_hits
from brushbake.exporters.native import read_level

STAGE_ROWS = ("load: brushes", "csg: faces before / after", "tree: splits", "detail: nodes added",
              "arrays: faces / planes", "write", "total")


def run(*args, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "brushbake", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def assert_user_error(result, *must_contain):
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "error:" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    for text in must_contain:
        assert text in result.stderr, (text, result.stderr)


@pytest.fixture(scope="module")
def sample_scene(sample_paths):
    jsons = [p for p in sample_paths if p.suffix == ".json"]
    assert jsons, "no sample_scenes/*.json to bake"
    named = [p for p in jsons if p.name == "two_rooms.json"]
    return named[0] if named else jsons[0]


@pytest.fixture(scope="module")
def baked(tmp_path_factory, sample_scene, map_named):
    """Bake a sample scene and a small map once for the module: {name: (result, level path)}."""
    out = tmp_path_factory.mktemp("baked")
    results = {}
    for key, scene in (("sample", sample_scene), ("map", map_named("q1_rocks.map"))):
        level = out / f"{key}.bbk"
        results[key] = (run("bake", scene, "-o", level, cwd=out), level)
    return results


@pytest.mark.parametrize("key", ["sample", "map"])
def test_bake_prints_the_stage_table(baked, key):
    result, level = baked[key]
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    for row in STAGE_ROWS:
        assert any(line.startswith(row) for line in result.stdout.splitlines()), f"no '{row}' row in:\n{result.stdout}"
    assert f"wrote {level}" in result.stdout
    assert level.is_file() and level.stat().st_size > 0


@pytest.mark.parametrize("key", ["sample", "map"])
def test_info(baked, key):
    _, level = baked[key]
    result = run("info", level)
    assert result.returncode == 0, result.stderr
    loaded = read_level(level)
    for item, value in (("planes", len(loaded.plane_dists)), ("nodes", loaded.num_nodes), ("leaves", loaded.num_leaves)):
        line = next(line for line in result.stdout.splitlines() if line.startswith(item))
        assert line.split()[1] == str(value), line


def random_points(level, count, seed):
    rng = np.random.default_rng(seed)
    lo, hi = level.world_bounds
    return lo + rng.random((count, 3)) * (hi - lo)


@pytest.mark.parametrize("key", ["sample", "map"])
def test_query_points_and_segments_match_the_library(baked, key, tmp_path):
    _, level_path = baked[key]
    level = read_level(level_path)
    pts = random_points(level, 3000, 1)
    np.save(tmp_path / "points.npy", pts)
    result = run("query", level_path, "--points", tmp_path / "points.npy", "-o", tmp_path / "solid.npy")
    assert result.returncode == 0, result.stderr
    solid = np.load(tmp_path / "solid.npy")
    assert solid.dtype == np.uint8 and solid.shape == (3000,)
    assert set(np.unique(solid).tolist()) == {0, 1}
    assert np.array_equal(solid, point_solid(level, pts))

    segs = np.stack([random_points(level, 2000, 2), random_points(level, 2000, 3)], axis=1)
    np.save(tmp_path / "segments.npy", segs.astype(np.float32))  # any real dtype is accepted
    result = run("query", level_path, "--segments", tmp_path / "segments.npy", "-o", tmp_path / "hits.npy")
    assert result.returncode == 0, result.stderr
    hits = np.load(tmp_path / "hits.npy")
    assert hits.dtype == np.float64 and hits.shape == (2000, 7)
    s32 = segs.astype(np.float32).astype(np.float64)
    assert np.array_equal(hits, segment_hits(level, s32[:, 0], s32[:, 1]))
    assert (hits[:, 0] < 1).any() and (hits[:, 0] == 1).any()


def test_baking_twice_gives_identical_bytes(baked, sample_scene, tmp_path):
    _, first = baked["sample"]
    result = run("bake", sample_scene, "-o", tmp_path / "again.bbk", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "again.bbk").read_bytes() == first.read_bytes()


# --------------------------------------------------------------------------------------------
# Bad input: exit 1, 'error:', no traceback


def test_bake_missing_file(tmp_path):
    assert_user_error(run("bake", tmp_path / "nowhere.json", "-o", tmp_path / "x.bbk", cwd=tmp_path), "nowhere.json")
    assert_user_error(run("bake", tmp_path / "nowhere.map", "-o", tmp_path / "x.bbk", cwd=tmp_path), "nowhere.map")
    assert not (tmp_path / "x.bbk").exists()


def test_bake_unknown_extension(tmp_path):
    scene = tmp_path / "level.obj"
    scene.write_text("v 0 0 0\n")
    assert_user_error(run("bake", scene, "-o", tmp_path / "x.bbk", cwd=tmp_path), "level.obj")


@pytest.mark.parametrize("content", [b"\x00\x01\x02garbage\xff\xfe" * 50, b"{\n( 0 0 0 ) ( 1 0 0 ) oops\n", b"}}}}"])
def test_bake_corrupt_map(tmp_path, content):
    scene = tmp_path / "broken.map"
    scene.write_bytes(content)
    assert_user_error(run("bake", scene, "-o", tmp_path / "x.bbk", cwd=tmp_path), "broken.map")
    assert not (tmp_path / "x.bbk").exists()


def test_bake_corrupt_json(tmp_path):
    scene = tmp_path / "broken.json"
    scene.write_text('{"format": "brushbake-scene", "brushes": [')
    assert_user_error(run("bake", scene, "-o", tmp_path / "x.bbk", cwd=tmp_path), "broken.json")


def test_bake_into_a_missing_folder(sample_scene, tmp_path):
    assert_user_error(run("bake", sample_scene, "-o", tmp_path / "no" / "such" / "dir" / "x.bbk", cwd=tmp_path))
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("offset", [0, 5, 40, -9, "middle"])
def test_info_and_query_reject_a_corrupt_level(baked, tmp_path, offset):
    _, level = baked["sample"]
    data = bytearray(level.read_bytes())
    at = len(data) // 2 if offset == "middle" else offset
    data[at] ^= 0x5A
    bad = tmp_path / "bad.bbk"
    bad.write_bytes(bytes(data))
    assert_user_error(run("info", bad), "bad.bbk")
    np.save(tmp_path / "p.npy", np.zeros((3, 3)))
    assert_user_error(run("query", bad, "--points", tmp_path / "p.npy", "-o", tmp_path / "out.npy"), "bad.bbk")
    assert not (tmp_path / "out.npy").exists()


def test_info_missing_and_truncated_level(baked, tmp_path):
    assert_user_error(run("info", tmp_path / "missing.bbk"), "missing.bbk")
    _, level = baked["sample"]
    (tmp_path / "short.bbk").write_bytes(level.read_bytes()[:100])
    assert_user_error(run("info", tmp_path / "short.bbk"), "short.bbk")


@pytest.mark.parametrize(
    "label, array, flag",
    [
        ("points (N, 2)", np.zeros((4, 2)), "--points"),
        ("points (N, 3, 1)", np.zeros((4, 3, 1)), "--points"),
        ("segments (N, 3)", np.zeros((4, 3)), "--segments"),
        ("segments (N, 2, 2)", np.zeros((4, 2, 2)), "--segments"),
        ("NaN point", np.array([[0.0, 0.0, 0.0], [np.nan, 1.0, 1.0]]), "--points"),
        ("inf segment", np.array([[[0.0, 0, 0], [np.inf, 0, 0]]]), "--segments"),
        ("strings", np.array([["a", "b", "c"]]), "--points"),
        ("complex", np.zeros((2, 3), complex), "--points"),
    ],
)
def test_query_rejects_bad_arrays(baked, tmp_path, label, array, flag):
    _, level = baked["sample"]
    np.save(tmp_path / "in.npy", array)
    assert_user_error(run("query", level, flag, tmp_path / "in.npy", "-o", tmp_path / "out.npy"), "in.npy")
    assert not (tmp_path / "out.npy").exists(), label


def test_query_rejects_unreadable_arrays(baked, tmp_path):
    _, level = baked["sample"]
    (tmp_path / "junk.npy").write_bytes(b"not a numpy file at all")
    assert_user_error(run("query", level, "--points", tmp_path / "junk.npy", "-o", tmp_path / "out.npy"), "junk.npy")
    assert_user_error(run("query", level, "--points", tmp_path / "absent.npy", "-o", tmp_path / "out.npy"), "absent.npy")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert_user_error(run("query", level, "--points", tmp_path / "obj.npy", "-o", tmp_path / "out.npy"), "obj.npy")


def test_query_into_a_missing_folder(baked, tmp_path):
    _, level = baked["sample"]
    np.save(tmp_path / "p.npy", np.zeros((3, 3)))
    assert_user_error(run("query", level, "--points", tmp_path / "p.npy", "-o", tmp_path / "nope" / "out.npy"))
