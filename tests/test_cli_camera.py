"""`query --cameras` run as users run it (`python -m brushbake` in a subprocess): two rooms joined by
a door, a camera in the first looking at the wall.  --seen answers (N, K) uint8 as the library does
(a point behind the wall: drawn by the PVS, not by portals; a point in solid: 0 in every mode);
--stats writes per-camera counts and times as JSON; every misuse is one message with exit 1 (or
argparse's 2 for an unknown mode), with the ranges in it."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from brushbake.core.runtime.cull import cull
from brushbake.exporters import read_level


def run(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "brushbake", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def box(lo, hi, name):
    return {"name": name, "box": [list(lo), list(hi)]}


@pytest.fixture(scope="module")
def baked(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cams")
    t = 0.5
    brushes = [box((-t, -t, -t), (13 + t, 6 + t, 0), "floor"), box((-t, -t, 3), (13 + t, 6 + t, 3 + t), "roof"),
               box((-t, -t, 0), (0, 6 + t, 3), "w"), box((13, -t, 0), (13 + t, 6 + t, 3), "e"),
               box((0, -t, 0), (13, 0, 3), "s"), box((0, 6, 0), (13, 6 + t, 3), "n"),
               box((6, 0, 0), (7, 5, 3), "wall"), box((6, 5, 2.5), (7, 6, 3), "lintel")]
    doc = {"format": "brushbake-scene", "version": 1, "name": "rooms", "brushes": brushes, "hulls": [],
           "markers": [{"name": "start", "kind": "player_start", "position": [1.0, 1.0, 1.0]}]}
    src = tmp / "rooms.json"
    src.write_text(json.dumps(doc))
    out = tmp / "rooms.bbk"
    r = run("bake", src, "-o", out, "--no-hulls", "--no-bevels", "-q")
    assert r.returncode == 0, r.stderr
    plain = tmp / "novis.bbk"
    r = run("bake", src, "-o", plain, "--no-hulls", "--no-bevels", "--vis", "none", "-q")
    assert r.returncode == 0, r.stderr
    cams = np.array([[2.0, 1.5, 1.5, 0.0, 0.0, 40.0, 1.5, 30.0], [10.0, 3.0, 1.5, 180.0, 0.0, 90.0, 1.0, 30.0]])
    np.save(tmp / "cams.npy", cams)
    pts = np.array([[[4.0, 2.0, 1.5], [10.0, 2.0, 1.5], [6.5, 2.0, 1.5]]] * 2)  # room A, room B, in the wall
    np.save(tmp / "pts.npy", pts)
    return tmp, out, plain, cams, pts


@pytest.mark.parametrize("mode", ["pvs", "frustum", "portal"])
def test_seen_answers_as_the_library(baked, mode):
    tmp, level_path, _, cams, pts = baked
    out = tmp / f"seen_{mode}.npy"
    r = run("query", level_path, "--cameras", tmp / "cams.npy", "--cull", mode, "--seen", tmp / "pts.npy", "-o", out)
    assert r.returncode == 0, r.stderr
    got = np.load(out)
    assert got.shape == (2, 3) and got.dtype == np.uint8
    assert (got == cull(read_level(level_path), cams, mode).points_drawn(pts)).all()
    assert got[0, 0] == 1 and (got[:, 2] == 0).all()  # room A seen from room A; the wall's inside never
    assert got[0, 1] == (0 if mode == "portal" else 1)  # behind the wall: only the PVS and frustum draw it


def test_stats_json(baked):
    tmp, level_path, _, cams, _ = baked
    level = read_level(level_path)
    faces = {}
    for mode in ("pvs", "frustum", "portal"):
        out = tmp / f"stats_{mode}.json"
        r = run("query", level_path, "--cameras", tmp / "cams.npy", "--cull", mode, "--stats", "-o", out)
        assert r.returncode == 0, r.stderr
        doc = json.loads(out.read_text())
        assert doc["mode"] == mode and doc["cameras"] == 2 and len(doc["per_camera"]) == 2
        lib = cull(level, cams, mode)
        for i, row in enumerate(doc["per_camera"]):
            assert row["faces"] == lib.face_counts()[i] and row["leaves"] == lib.leaf_counts()[i]
            assert row["clusters"] == lib.cluster_counts()[i] and row["seconds"] >= 0
        faces[mode] = [row["faces"] for row in doc["per_camera"]]
    assert all(p <= f <= v for p, f, v in zip(faces["portal"], faces["frustum"], faces["pvs"]))


def test_misuse_gives_one_message(baked, tmp_path):
    tmp, level_path, plain, cams, pts = baked
    out = tmp_path / "o.npy"
    bad = tmp_path / "bad.npy"

    def fails(*args, words, code=1):
        r = run("query", *args, "-o", out)
        assert r.returncode == code, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        for w in words:
            assert w in r.stderr, (w, r.stderr)
        assert not out.exists()

    np.save(bad, np.zeros((2, 7)))
    fails(level_path, "--cameras", bad, "--cull", "pvs", "--seen", tmp / "pts.npy", words=["(N, 8)"])
    wide = cams.copy()
    wide[1, 5] = 200
    np.save(bad, wide)
    fails(level_path, "--cameras", bad, "--cull", "pvs", "--stats", words=["camera 1", "hfov", "[1, 179]"])
    low = cams.copy()
    low[0, 7] = 0
    np.save(bad, low)
    fails(level_path, "--cameras", bad, "--cull", "frustum", "--stats", words=["far", "[0.001"])
    np.save(bad, pts[:1])
    fails(level_path, "--cameras", tmp / "cams.npy", "--cull", "pvs", "--seen", bad, words=["1 cameras", "has 2"])
    np.save(bad, pts[..., :2])
    fails(level_path, "--cameras", tmp / "cams.npy", "--cull", "pvs", "--seen", bad, words=["(N, K, 3)"])
    fails(level_path, "--cameras", tmp / "cams.npy", "--seen", tmp / "pts.npy", words=["--cull"])
    fails(level_path, "--cameras", tmp / "cams.npy", "--cull", "pvs", words=["--seen", "--stats"])
    fails(level_path, "--cameras", tmp / "cams.npy", "--cull", "pvs", "--seen", tmp / "pts.npy", "--stats",
          words=["exactly one"])
    fails(level_path, "--points", tmp / "cams.npy", "--cull", "pvs", words=["--cull goes with --cameras"])
    fails(plain, "--cameras", tmp / "cams.npy", "--cull", "portal", "--stats", words=["no PVS", "bake"])
    fails(level_path, "--cameras", tmp / "cams.npy", "--cull", "sideways", "--stats", words=["invalid choice"], code=2)
