"""What a Quake map gets from `bake` by default, run as users run it (`python -m brushbake`): the
README's own example (bake e1m7, then `query --hull stand`) works, because a .map bake builds
qbsp's hulls 1 and 2 ('stand' and 'large'); a hull the level lacks is one line saying how to
build it; the void outside the sealed map answers solid, and `--no-fill` keeps it empty."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from brushbake.exporters import read_level

#: e1m7's info_player_start (units: the player box rests on the floor there) and a point far
#: outside the map, in metres
START = np.array([-448.0, 64.0, 56.0]) / 32
VOID = np.array([-60.0, -60.0, 20.0])


def run(*args, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "brushbake", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_the_readme_example_and_the_fill(map_named, tmp_path):
    out, plain = tmp_path / "e1m7.bbk", tmp_path / "plain.bbk"
    r = run("bake", map_named("e1m7.map"), "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    level = read_level(out)
    assert level.hull_names == ["point", "stand", "large"]
    assert np.allclose(level.hull_boxes[1], [[-0.5, -0.5, -0.75], [0.5, 0.5, 1.0]])
    assert np.allclose(level.hull_boxes[2], [[-1.0, -1.0, -0.75], [1.0, 1.0, 2.0]])
    segs = tmp_path / "segs.npy"
    np.save(segs, np.array([[START + [0, 0, 0.25], START - [0, 0, 10]]]))
    r = run("query", out, "--segments", segs, "--hull", "stand", "-o", tmp_path / "hits.npy")
    assert r.returncode == 0, r.stderr
    hit = np.load(tmp_path / "hits.npy")[0]
    assert 0 < hit[0] < 1 and hit[3] == START[2] and hit[6] == 1.0  # the player box lands where id put it
    r = run("query", out, "--segments", segs, "--hull", "crouch", "-o", tmp_path / "hits.npy")
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1
    assert "has no hull named 'crouch'" in r.stderr and "--hull crouch=" in r.stderr and "Traceback" not in r.stderr
    # the void: solid by default in every hull, empty with --no-fill
    pts = tmp_path / "pts.npy"
    np.save(pts, np.array([START, VOID]))
    r = run("bake", map_named("e1m7.map"), "-o", plain, "-q", "--no-fill")
    assert r.returncode == 0, r.stderr
    for level_file, void in ((out, 1), (plain, 0)):
        for hull in ("point", "stand", "large"):
            args = [] if hull == "point" else ["--hull", hull]
            r = run("query", level_file, "--points", pts, *args, "-o", tmp_path / "solid.npy")
            assert r.returncode == 0, r.stderr
            assert np.load(tmp_path / "solid.npy").tolist() == [0, void], (level_file.name, hull)
