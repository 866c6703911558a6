"""`bake --vis` and `query --see`, run as users run them (`python -m brushbake` in a subprocess): two
rooms joined by an L-shaped corridor, so the rooms' far corners cannot see each other.  Every mode
stores a PVS; --see answers (N,) uint8 from it, 1 for points in one room, 1 across the corridor's
bend for the conservative modes only where a line of sight is possible; --vis none stores none and
--see then says how to get one; a bad pairs array is a user error."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from brushbake.core.runtime.pvs import Visibility
from brushbake.exporters import read_level


def run(*args, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "brushbake", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def box(lo, hi, name):
    return {"name": name, "box": [list(lo), list(hi)]}


def scene(path):
    """Room A [0,4]^2, room B [8,12] x [8,12]; a corridor from A's east side (x 4..10, y 1..2) then
    north (x 9..10, y 2..8) into B.  Everything 3 m high inside a solid shell."""
    t = 0.5
    solid = []
    # a shell of slabs around the whole footprint, then carve with walls (boxes fill the rest)
    solid.append(box((-t, -t, -t), (12 + t, 12 + t, 0), "floor"))
    solid.append(box((-t, -t, 3), (12 + t, 12 + t, 3 + t), "ceiling"))
    solid.append(box((-t, -t, 0), (0, 12 + t, 3), "west"))
    solid.append(box((12, -t, 0), (12 + t, 12 + t, 3), "east"))
    solid.append(box((0, -t, 0), (12, 0, 3), "south"))
    solid.append(box((0, 12, 0), (12, 12 + t, 3), "north"))
    solid.append(box((4, 0, 0), (12, 1, 3), "fill_s"))  # below the corridor
    solid.append(box((10, 1, 0), (12, 8, 3), "fill_e"))  # east of the corridor's north leg
    solid.append(box((4, 2, 0), (9, 8, 3), "fill_mid"))  # between the legs
    solid.append(box((0, 4, 0), (8, 12, 3), "fill_nw"))  # north of room A, west of room B
    solid.append(box((4, 8, 0), (8, 12, 3), "fill_nw2"))
    solid.append(box((0, 4, 0), (4, 12, 3), "fill_w"))
    doc = {"format": "brushbake-scene", "version": 1, "name": "rooms", "brushes": solid, "hulls": [],
           "markers": [{"name": "start", "kind": "player_start", "position": [1.0, 1.0, 1.0]}]}
    path.write_text(json.dumps(doc))
    return path


A, A2, B = (0.5, 0.5, 1.5), (3.5, 3.5, 1.5), (11.5, 11.5, 1.5)


@pytest.mark.parametrize("mode", ["fast", "flow", "sample"])
def test_bake_vis_and_query_see(tmp_path, mode):
    src = scene(tmp_path / "rooms.json")
    out = tmp_path / "rooms.bbk"
    r = run("bake", src, "-o", out, "--vis", mode, "--no-hulls", "--no-bevels")
    assert r.returncode == 0, r.stderr
    assert f"vis ({mode})" in r.stdout
    level = read_level(out)
    vis = Visibility(level)
    m = vis.matrix()
    assert (m == m.T).all() and m.diagonal().all()
    pairs = np.array([[A, A2], [A, B], [B, B], [A2, (9.5, 1.5, 1.5)]], dtype=np.float64)
    np.save(tmp_path / "pairs.npy", pairs)
    r = run("query", out, "--see", tmp_path / "pairs.npy", "-o", tmp_path / "see.npy")
    assert r.returncode == 0, r.stderr
    see = np.load(tmp_path / "see.npy")
    assert see.dtype == np.uint8 and see.shape == (4,)
    assert see[0] == 1 and see[2] == 1 and see[3] == 1  # one room; the room and the corridor's start
    if mode == "flow":
        assert see[1] == 0  # around the bend: no line of sight, and the full flow knows it


def test_vis_none_and_bad_pairs(tmp_path):
    src = scene(tmp_path / "rooms.json")
    out = tmp_path / "rooms.bbk"
    assert run("bake", src, "-o", out, "--vis", "none", "--no-hulls", "--no-bevels").returncode == 0
    assert not read_level(out).has_vis
    np.save(tmp_path / "pairs.npy", np.zeros((2, 2, 3)))
    r = run("query", out, "--see", tmp_path / "pairs.npy", "-o", tmp_path / "see.npy")
    assert r.returncode == 1 and "--vis" in r.stderr and not (tmp_path / "see.npy").exists()
    r = run("bake", src, "-o", out, "--no-hulls", "--no-bevels")  # the default mode stores a PVS
    assert r.returncode == 0 and read_level(out).has_vis
    np.save(tmp_path / "bad.npy", np.zeros((2, 3)))
    r = run("query", out, "--see", tmp_path / "bad.npy", "-o", tmp_path / "see.npy")
    assert r.returncode == 1 and "(N, 2, 3)" in r.stderr


def test_jobs_give_the_same_bytes_and_a_bad_count_is_refused(tmp_path):
    """`--jobs N` only sets how many cores the full vis uses: the file is byte for byte the same."""
    src = scene(tmp_path / "rooms.json")
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"rooms{jobs}.bbk"
        r = run("bake", src, "-o", out, "--vis", "flow", "--jobs", jobs, "-q")
        assert r.returncode == 0, r.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    r = run("bake", src, "-o", tmp_path / "bad.bbk", "--vis", "flow", "--jobs", "0")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "--jobs" in r.stderr and "whole number of cores" in r.stderr
    assert not (tmp_path / "bad.bbk").exists()
