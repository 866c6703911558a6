"""The command line's messages and files, run as users run it (`python -m brushbake` in a subprocess).

Outputs are checked before the work (a folder given to -o, a missing or unwritable folder, the
input itself, one file named twice); `bake` writes the .bbk and the --json dump together or not at
all; read errors get a reading hint and write errors a writing one; no message names a temporary
file; a closed pipe ends quietly.  Unknown tool textures are warned once per name; the bake table
counts brushes by role; `info` shows bounds, hulls, bevels, markers and clusters.
"""

from __future__ import annotations

import os
import re
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


READ_ONLY = textwrap.dedent("""
    # The folder named in argv[1] may not be written in (root may write anywhere, so the
    # permission is simulated where the CLI asks for it).
    import os, sys
    folder, access = os.path.realpath(sys.argv[1]), os.access
    os.access = lambda path, mode, **kw: False if os.path.realpath(path) == folder and mode & os.W_OK else access(path, mode, **kw)
    from brushbake.cli import main
    sys.exit(main(sys.argv[2:]))
""")


def test_output_into_a_read_only_folder_fails_before_the_work(scene, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    script = tmp_path / "read_only.py"
    script.write_text(READ_ONLY)
    result = subprocess.run([sys.executable, script, ro, "bake", scene, "-o", ro / "x.bbk"], capture_output=True,
                            text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert_user_error(result, "x.bbk", f"you may not write in the folder {ro.resolve()}", "change the folder's permissions")
    assert "%" not in result.stderr and list(ro.iterdir()) == []
    if hasattr(os, "geteuid") and os.geteuid() != 0:  # and for real where permissions apply
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


def test_query_input_errors_get_a_read_hint(level, tmp_path):
    result = run("query", level, "--points", tmp_path / "absent.npy", "-o", tmp_path / "o.npy")
    assert_user_error(result, "absent.npy: does not exist", "Check the path", must_not_contain=(WRITE_HINT, "Errno"))
    result = run("query", level, "--segments", tmp_path, "-o", tmp_path / "o.npy")
    assert_user_error(result, "is a folder; name the .npy file of segments")
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


# --------------------------------------------------------------------------------------------
# 8. unknown tool textures: solid, counted, warned once per name


def _box(x0: int, textures: list[str]) -> str:
    """A 64-unit cube brush at x0 in the standard .map format, one texture per face."""
    planes = [((x0, 0, 0), (x0, 1, 0), (x0, 0, 1)), ((x0 + 64, 0, 0), (x0 + 64, 0, 1), (x0 + 64, 1, 0)),
              ((0, 0, 0), (0, 0, 1), (1, 0, 0)), ((0, 64, 0), (1, 64, 0), (0, 64, 1)),
              ((0, 0, 0), (1, 0, 0), (0, 1, 0)), ((0, 0, 64), (0, 1, 64), (1, 0, 64))]
    lines = [" ".join(f"( {a} {b} {c} )" for a, b, c in pts) + f" {tex} 0 0 0 1 1" for pts, tex in zip(planes, textures)]
    return "{\n" + "\n".join(lines) + "\n}\n"


def test_unknown_tool_textures_are_solid_and_warned_once_per_name(tmp_path):
    text = ('{\n"classname" "worldspawn"\n'
            + _box(0, ["common/caulk"] * 4 + ["rock", "PLAYERCLIP"])
            + _box(100, ["playerclip"] * 6)
            + _box(200, ["rock"] * 6)
            + '}\n')
    (tmp_path / "tools.map").write_text(text)
    result = run("bake", "tools.map", "-o", "tools.bbk", "--no-bevels", "--vis", "none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2, warnings
    assert "texture 'common/caulk' (4 faces on 1 brush, first on line 4)" in warnings[0]
    assert "texture 'PLAYERCLIP' (7 faces on 2 brushes, first on line 9)" in warnings[1]  # case folded
    assert all("is not one brushbake knows" in w and "'clip'" in w for w in warnings)
    assert table_rows(result.stdout)["structural / detail / clip / nonsolid"][0] == "3 / 0 / 0 / 0"
    from brushbake.core.runtime.query import point_solid

    level = read_level(tmp_path / "tools.bbk")
    centres = np.array([[32.0, 32, 32], [132, 32, 32], [232, 32, 32]]) / 32
    assert point_solid(level, centres).tolist() == [1, 1, 1]  # the rule is kept: solid


def test_known_textures_give_no_texture_warning(map_named, tmp_path):
    result = run("bake", map_named("qbspfeatures.map"), "-o", tmp_path / "q.bbk", "--no-bevels", "-q")
    assert result.returncode == 0, result.stderr
    assert "brushbake knows" not in result.stderr


# --------------------------------------------------------------------------------------------
# 9. the bake table's brushes by role agree with the progress line; info's items


def table_rows(stdout: str) -> dict[str, list[str]]:
    """{label: cells} of a printed table (cells are separated by three or more spaces)."""
    import re

    rows = {}
    for line in stdout.splitlines():
        cells = [c for c in re.split(r"\s{3,}", line.strip()) if c]
        if len(cells) >= 2 and not set(line) <= {"-"}:
            rows[cells[0]] = cells[1:]
    return rows


@pytest.mark.parametrize("flags", [(), ("--no-bevels",), ("--light", "--light-threshold", "0.3", "--backend", "numpy")])
def test_progress_on_a_pipe_reaches_100_percent(scene, tmp_path, flags):
    """Progress on a pipe (a line per 10%) ends each stage at 100%, also when the stage's last
    step reports less: no bevels (the stage left out), radiosity converged before its last
    bounce (the bake stopped at 73% and 70% there)."""
    result = run("bake", scene, "-o", tmp_path / "x.bbk", *flags)
    assert result.returncode == 0, result.stderr
    lines = [line.split() for line in result.stderr.splitlines() if "%" in line]
    for stage in ("load", "bake"):
        mine = [w for w in lines if w[0] == stage]
        assert mine and mine[-1][1] == "100%", result.stderr


def test_progress_of_a_leaking_bake_does_not_claim_100_percent(tmp_path):
    from test_cli_leaks import room_scene

    result = run("bake", room_scene(tmp_path / "room.json", hole=True), "-o", tmp_path / "x.bbk")
    assert result.returncode == 3, result.stderr
    assert not [line for line in result.stderr.splitlines() if line.startswith("bake") and "100%" in line]


def test_bake_table_counts_brushes_by_role_as_the_progress_line(map_named, tmp_path):
    """lq_e1m6 has structural, detail and non-solid brushes and one mover (a door)."""
    result = run("bake", map_named("lq_e1m6.map"), "-o", tmp_path / "x.bbk", "--no-bevels", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = table_rows(result.stdout)
    brushes = int(rows["load: brushes"][0])
    roles = [int(x) for x in rows["structural / detail / clip / nonsolid"][0].split(" / ")]
    movers = int(rows["movers: skipped, not compiled yet"][0])
    built = next(line for line in result.stderr.splitlines() if "Built " in line)
    assert f"Built {brushes} brushes and {movers} mover brush" in built, (built, rows)
    assert sum(roles) == brushes and movers >= 1 and roles[0] > 0 and roles[1] > 0 and roles[3] > 0
    from brushbake.core.formats.loaders import load_scene
    from brushbake.core.model.brushes import Contents

    scene = load_scene(map_named("lq_e1m6.map"))
    assert roles == [len(scene.brushes_with(c)) for c in (Contents.SOLID, Contents.DETAIL, Contents.CLIP, Contents.NONSOLID)]
    assert movers == len(scene.movers)


def test_bake_table_counts_clip_brushes(map_named, tmp_path):
    result = run("bake", map_named("q1_hulls.map"), "-o", tmp_path / "x.bbk", "--no-bevels", "--no-hulls",
                 "--vis", "none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    from brushbake.core.formats.loaders import load_scene
    from brushbake.core.model.brushes import Contents

    clip = len(load_scene(map_named("q1_hulls.map")).brushes_with(Contents.CLIP))
    assert table_rows(result.stdout)["structural / detail / clip / nonsolid"][0].split(" / ")[2] == str(clip)


def test_info_shows_bounds_hulls_bevels_markers_and_clusters(scene, tmp_path):
    for flags, bevels in (((), True), (("--no-bevels",), False)):
        out = tmp_path / f"level{len(flags)}.bbk"
        assert run("bake", scene, "-o", out, "-q", *flags).returncode == 0
        result = run("info", out)
        assert result.returncode == 0, result.stderr
        rows = table_rows(result.stdout)
        level = read_level(out)
        lo, hi = level.world_bounds
        assert rows["bounds: size (m)"][0] == " x ".join(f"{x:.2f}" for x in hi - lo)
        assert rows["mins / maxs"] == ["(" + ", ".join(f"{x:.2f}" for x in v) + ")" for v in (lo, hi)]
        assert rows["hulls: box size / mins (m)"][0] == str(len(level.hull_names))
        for h, name in enumerate(level.hull_names[1:], start=1):
            size = level.hull_boxes[h][1] - level.hull_boxes[h][0]
            assert rows[name][0] == " x ".join(f"{x:.2f}" for x in size)
        empty = (level.leaf_solid & 1) == 0
        assert rows["clusters of empty leaves"][0] == str(len(set(level.leaf_cluster[empty].tolist())))
        assert rows["markers"][0] == "not stored"
        assert level.has_vis  # bake's default --vis fast stores a PVS
        assert rows["visibility (PVS): clusters"][0] == str(len(level.vis_row_offset))
        if bevels:
            assert rows["bevels (plane shifting)"][0] == f"yes: {len(level.bevel_node_plane)} nodes"
        else:
            assert rows["bevels (plane shifting)"] == ["none", "baked with --no-bevels"]


@pytest.mark.parametrize("vis", ["none", "fast", "flow"])
@pytest.mark.parametrize("light", [True, False])
def test_info_rows_for_each_vis_and_light(scene, tmp_path, vis, light):
    """Each of vis none/fast/flow with and without light: the table's rows after the bevels say
    exactly what the file holds, one row each for visibility and light, and none contradicts
    another (a row that says 'none' beside one that counts)."""
    out = tmp_path / "l.bbk"
    flags = ("--vis", vis, "--light" if light else "--no-light", "--backend", "numpy")
    assert run("bake", scene, "-o", out, "-q", *flags).returncode == 0
    result = run("info", out)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    tail = lines[next(i for i, s in enumerate(lines) if s.startswith("bevels")) + 1:]
    rows = [[c for c in re.split(r"\s{3,}", s.strip()) if c] for s in tail if not set(s) <= {"-"}]
    level = read_level(out)
    assert level.has_vis == (vis != "none") and level.has_light == light
    want = []
    if vis != "none":
        assert level.has_cull_portals
        want += [["visibility (PVS): clusters", str(len(level.vis_row_offset))],
                 ["portals for camera queries", str(len(level.cull_portal_plane))]]
    else:
        want += [["visibility (PVS)", "none", "baked with --vis none"]]
    if light:
        pages = level.lm_pages
        want += [["lightmap: pages x texels a side, luxel (m)", f"{pages.shape[0]} x {pages.shape[1]}, 0.5"]]
    else:
        want += [["lightmap", "none", "bake with --light"]]
    want += [["crowd slices", "none", "bake with --slices"], ["markers", "not stored", "(.bbk keeps none)"]]
    assert rows[:-1] == want, result.stdout
    # the last row is of this machine, not the file: which native library the queries run on, and why
    assert rows[-1][0] == "queries here run on", result.stdout
    assert rows[-1][1] in ("native (shipped)", "native (built from source)", "NumPy") and rows[-1][2], result.stdout


def test_info_clusters_count_detail_leaves_once(map_named, tmp_path):
    """On a map with detail brushes, several empty leaves share a cluster: fewer clusters than
    empty leaves, and more than none."""
    out = tmp_path / "x.bbk"
    assert run("bake", map_named("lq_e1m6.map"), "-o", out, "-q", "--no-bevels").returncode == 0
    rows = table_rows(run("info", out).stdout)
    empty = int(rows["solid / empty (point hull)"][0].split(" / ")[1])
    assert 0 < int(rows["clusters of empty leaves"][0]) < empty


def test_shape_query_without_bevels_warns(scene, tmp_path):
    np.save(tmp_path / "s.npy", np.array([[[2.0, 2.0, 1.0], [3.0, 2.0, 1.0]]]))
    for flags, warned in ((("--no-bevels",), True), ((), False)):
        level = tmp_path / f"l{len(flags)}.bbk"
        assert run("bake", scene, "-o", level, "-q", *flags).returncode == 0
        result = run("query", level, "--segments", tmp_path / "s.npy", "--shape", "sphere:0.25", "-o", tmp_path / "o.npy")
        assert result.returncode == 0, result.stderr
        assert ("has no beveled tree" in result.stderr) == warned, result.stderr
        assert np.load(tmp_path / "o.npy").shape == (1, 7)


def test_info_counts_the_visibility_clusters(level, tmp_path):
    """A level with a PVS (added here through the library: every empty structural cluster one
    visibility cluster, all seeing all) shows its visibility clusters."""
    from brushbake.core.runtime.pvs_rows import compress_rows, pack_bits
    from brushbake.exporters.native import write_level

    lv = read_level(level)
    empty = (lv.leaf_solid & 1) == 0
    ids = {c: i for i, c in enumerate(sorted(set(lv.leaf_cluster[empty].tolist())))}
    lv.vis_leaf_cluster = np.array([ids[c] if e else -1 for c, e in zip(lv.leaf_cluster.tolist(), empty)], np.int32)
    lv.vis_row_offset, lv.vis_rows = compress_rows(pack_bits(np.ones((len(ids), len(ids)), bool)))
    from brushbake.core.compile.vis.vis import clear_cull_portals

    clear_cull_portals(lv)  # the baked file's culling portals number its own PVS's clusters
    write_level(lv, tmp_path / "vis.bbk")
    result = run("info", tmp_path / "vis.bbk")
    assert result.returncode == 0, result.stderr
    assert table_rows(result.stdout)["visibility (PVS): clusters"] == [str(len(ids))]


def test_building_the_native_library_says_so_once(tmp_path):
    """The first --backend c use that builds the library from source (seconds) says so in one line
    on stderr; the next use finds it in the cache and says nothing."""
    from brushbake.core import native_lib

    if native_lib.compiler() is None:
        pytest.skip("no C compiler here")
    env = dict(os.environ, BRUSHBAKE_C_CACHE=str(tmp_path / "cache"), BRUSHBAKE_NATIVE="source")
    scene = Path(__file__).resolve().parents[1] / "sample_scenes" / "cornell_box.json"
    said = []
    for k in range(2):
        result = run("bake", scene, "-o", tmp_path / f"{k}.bbk", "--light", "--bounces", "1", "--no-hulls", "-q",
                     "--backend", "c", env=env)
        assert result.returncode == 0, result.stderr
        said.append([line for line in result.stderr.splitlines() if "building the native library" in line])
    assert len(said[0]) == 1 and str(tmp_path / "cache") in said[0][0] and said[1] == []
