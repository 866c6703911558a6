"""`bake`'s leak check, run as users run it (`python -m brushbake` in a subprocess):

- a leaking scene: non-zero exit (3), one line of message, the chain written as OUT.pts beside
  the output (metres, one 'x y z' a line, starting at the entity), and nothing else written;
- --allow-leak: the level is written too, with a warning;
- a sealed scene: exit 0, no .pts (a stale one from an earlier leaking bake is removed);
- --point X,Y,Z names a point that must be inside (outside the room: a leak); a bad point is a
  user error; --vis none skips the check;
- --seal: qbsp (the default) stops a bake whose seal rests on a tip under 0.1 unit qbsp can cut,
  exact bakes it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np


def run(*args, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "brushbake", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def box(lo, hi, name):
    return {"name": name, "box": [list(lo), list(hi)]}


def room_scene(path, hole: bool):
    """A closed 4 x 4 x 3 m room (0.5 m walls, the +x wall in four columns; with `hole` one
    column is missing) with a player start inside."""
    t = 0.5
    brushes = [box((-t, -t, -t), (4 + t, 4 + t, 0), "floor"), box((-t, -t, 3), (4 + t, 4 + t, 3 + t), "ceiling"),
               box((-t, -t, 0), (0, 4 + t, 3), "west"), box((0, -t, 0), (4, 0, 3), "south"),
               box((0, 4, 0), (4, 4 + t, 3), "north"), box((4, -t, 0), (4 + t, 1, 3), "east0"),
               box((4, 2, 0), (4 + t, 3, 3), "east2"), box((4, 3, 0), (4 + t, 4 + t, 3), "east3")]
    if not hole:
        brushes.append(box((4, 1, 0), (4 + t, 2, 3), "east1"))
    scene = {"format": "brushbake-scene", "version": 1, "name": "room", "brushes": brushes, "hulls": [],
             "markers": [{"name": "start", "kind": "player_start", "position": [1.0, 3.0, 1.0]}]}
    path.write_text(json.dumps(scene))
    return path


def read_pts(path):
    rows = [line.split() for line in path.read_text().splitlines()]
    assert rows and all(len(r) == 3 for r in rows)
    return np.array(rows, dtype=float)


def test_a_leaking_scene_fails_with_one_line_and_writes_only_the_pointfile(tmp_path):
    scene = room_scene(tmp_path / "room.json", hole=True)
    out = tmp_path / "out"
    out.mkdir()
    r = run("bake", scene, "-o", out / "x.bbk", "--json", out / "x.json", "-q")
    assert r.returncode == 3, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: leak: start (player_start)") and "x.pts" in lines[0], r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["x.pts"]
    pts = read_pts(out / "x.pts")
    assert np.allclose(pts[0], [1.0, 3.0, 1.0]) and len(pts) >= 2
    assert np.any(np.all((pts >= [4.0, 1.0, 0.0]) & (pts <= [4.5, 2.0, 3.0]), axis=1)) or len(pts) > 2


def test_allow_leak_bakes_anyway(tmp_path):
    scene = room_scene(tmp_path / "room.json", hole=True)
    r = run("bake", scene, "-o", tmp_path / "x.bbk", "--allow-leak", "-q")
    assert r.returncode == 0, r.stderr
    assert "warning: leak:" in r.stderr and "--allow-leak" in r.stderr
    assert (tmp_path / "x.bbk").is_file() and (tmp_path / "x.pts").is_file()


def test_a_sealed_scene_bakes_and_removes_a_stale_pointfile(tmp_path):
    scene = room_scene(tmp_path / "room.json", hole=False)
    (tmp_path / "x.pts").write_text("0 0 0\n1 1 1\n")
    r = run("bake", scene, "-o", tmp_path / "x.bbk")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "x.bbk").is_file() and not (tmp_path / "x.pts").exists()
    assert "sealed" in r.stdout and "portals" in r.stdout  # the stage table


def test_a_named_point_must_be_inside(tmp_path):
    scene = room_scene(tmp_path / "room.json", hole=False)
    r = run("bake", scene, "-o", tmp_path / "x.bbk", "--point", "2,2,1.5", "--point", "6,2,1.5", "-q")
    assert r.returncode == 3 and "point 2" in r.stderr, r.stderr
    assert not (tmp_path / "x.bbk").exists() and read_pts(tmp_path / "x.pts")[0].tolist() == [6.0, 2.0, 1.5]
    r = run("bake", scene, "-o", tmp_path / "x.bbk", "--point", "2,2", "-q")
    assert r.returncode == 1 and "--point takes X,Y,Z" in r.stderr and "Traceback" not in r.stderr


def test_vis_none_skips_the_leak_check(tmp_path):
    scene = room_scene(tmp_path / "room.json", hole=True)
    r = run("bake", scene, "-o", tmp_path / "x.bbk", "--vis", "none", "-q")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "x.bbk").is_file() and not (tmp_path / "x.pts").exists()


def test_seal_rule_qbsp_by_default_and_exact_on_request(tmp_path):
    """tests/core/test_sliver_seal.py's funnel (sealed only through a tip that a face plane passes
    0.002 m from): the default bake (--seal qbsp) stops with the leak, its chain through the tip at
    the origin in OUT.pts and a hint to --seal exact; --seal exact bakes it, sealed."""
    sys.path.insert(0, str(Path(__file__).resolve().parent / "core"))
    from test_sliver_seal import funnel

    from brushbake.core.formats.scene_json import save_scene_json

    scene = tmp_path / "funnel.json"
    save_scene_json(funnel(), scene)
    r = run("bake", scene, "-o", tmp_path / "x.bbk", "--no-bevels", "-q")
    assert r.returncode == 3, r.stderr
    assert "as qbsp judges it: 1 brush tips" in r.stderr and "--seal exact" in r.stderr, r.stderr
    pts = read_pts(tmp_path / "x.pts")
    assert np.allclose(pts[0], [-3.0, -3.0, 0.5]) and np.min(np.linalg.norm(pts, axis=1)) < 0.1 / 32
    assert not (tmp_path / "x.bbk").exists()
    r = run("bake", scene, "-o", tmp_path / "x.bbk", "--no-bevels", "--seal", "exact")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "x.bbk").is_file() and not (tmp_path / "x.pts").exists()
    assert "seal as qbsp" not in r.stdout
    r = run("bake", scene, "-o", tmp_path / "y.bbk", "--no-bevels", "--seal", "sideways")
    assert r.returncode != 0 and "--seal" in r.stderr
