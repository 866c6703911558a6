"""The bake farm on Dask distributed (brushbake/farm, docs/FARM.md), on local clusters of worker
processes on the loopback only.

- `farm` writes, for every scene, the bytes `bake` writes (the .bbk, and the .pts of a leak), with
  1, 2 and 3 workers;
- a worker killed mid-bake: its task runs again elsewhere, every level complete and identical;
- Ctrl-C cancels every task and leaves only whole files;
- a scheduler that does not answer, an address that is none, a worker of another brushbake
  version: clear errors before any work, naming the address or both versions;
- the command's messages, table and JSON report.

Kept small (scenes of a second or less): the farm's own cost, not the bakes', is what is tested.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from brushbake import cli
from brushbake.core.errors import BrushbakeError
from brushbake.farm import cluster as farm_cluster
from brushbake.farm.cluster import check_versions, open_farm
from brushbake.farm.levels import plan_levels, run_levels

REPO = Path(__file__).resolve().parents[1]
#: sample scenes and a few small maps: q1_cube leaks (a .pts and no level), e1m7 is the slowest (~1-2 s)
SCENES = sorted((REPO / "sample_scenes").glob("*.json")) + [
    REPO / "maps" / "ericw-tools" / "q1_cube.map",
    REPO / "maps" / "ericw-tools" / "q1_rocks.map",
    REPO / "maps" / "librequake" / "lq_e1m6.map",
]
SLOW = REPO / "maps" / "id" / "e1m7.map"


def default_opts(*flags) -> dict:
    return cli.bake_options(cli.build_parser().parse_args(["farm", "x.map", "-o", "out", *flags]))


def bake_reference(scene: Path, folder: Path, *flags) -> dict:
    """{file name: bytes} that `bake` writes for the scene (in this process)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / (scene.stem + ".bbk")
    code = cli.main(["bake", str(scene), "-o", str(out), "-q", *flags])
    assert code in (cli.EXIT_OK, cli.EXIT_LEAK), (scene, code)
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.stem == scene.stem}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    base = tmp_path_factory.mktemp("reference")
    found = {}
    for scene in SCENES + [SLOW]:
        found.update(bake_reference(scene, base / scene.stem))
    return found


def written(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix in (".bbk", ".pts")}


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_the_farm_writes_the_bytes_bake_writes(workers, reference, tmp_path):
    levels = plan_levels([str(p) for p in SCENES], tmp_path)
    with open_farm(None, workers) as farm:
        assert len(farm.workers()) == workers
        run_levels(farm, levels, default_opts())
    assert {lv.scene.name: lv.status for lv in levels}["q1_cube.map"] == "leak"
    assert all(lv.status == "ok" for lv in levels if lv.scene.name != "q1_cube.map")
    got = written(tmp_path)
    assert got == {name: data for name, data in reference.items() if name in got}
    assert set(got) == {name for name in reference if Path(name).stem in {p.stem for p in SCENES}}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_a_worker_killed_mid_bake_leaves_every_level_complete_and_identical(reference, tmp_path):
    """The slowest scene goes first; once it runs on a worker, that worker's process is killed
    (SIGKILL): the scheduler runs the task again on the other worker (or on the restarted one)."""
    levels = plan_levels([str(p) for p in [SLOW] + SCENES], tmp_path)
    killed = []
    with open_farm(None, 2) as farm:
        pids = farm.client.run(os.getpid)

        def kill_the_busy_worker():
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                for addr, keys in farm.client.processing().items():
                    if any("e1m7" in str(k) for k in keys):
                        time.sleep(0.3)  # well inside the bake (1-2 s)
                        os.kill(pids[addr], signal.SIGKILL)
                        killed.append(addr)
                        return
                time.sleep(0.02)

        killer = threading.Thread(target=kill_the_busy_worker)
        killer.start()
        run_levels(farm, levels, default_opts())
        killer.join()
    assert killed, "the slow scene was never seen running"
    e1m7 = next(lv for lv in levels if lv.scene == SLOW)
    assert e1m7.status == "ok" and e1m7.worker != killed[0]
    assert written(tmp_path) == {name: data for name, data in reference.items() if name in written(tmp_path)}
    assert len(written(tmp_path)) == len(SCENES) + 1


def test_a_worker_of_another_version_is_refused_naming_both(tmp_path):
    with open_farm(None, 2) as farm:
        addr = sorted(farm.workers())[1]
        farm.client.run(_pretend_version, "0.0.9", workers=[addr])
        with pytest.raises(BrushbakeError) as err:
            check_versions(farm)
        text = str(err.value)
        assert addr in text and "0.0.9" in text and cli.__version__ in text and "refused" in text
        # a worker that turned different after the check (or joined later) is refused by its task
        farm.client.run(_pretend_version, "0.0.9")
        levels = plan_levels([str(SCENES[0])], tmp_path)
        with pytest.raises(BrushbakeError) as err:
            run_levels(farm, levels, default_opts())
        assert "0.0.9" in str(err.value) and cli.__version__ in str(err.value)
    assert not list(tmp_path.iterdir())


def _pretend_version(version: str) -> None:
    from brushbake.core import version as module

    module.__version__ = version


def test_an_unreachable_scheduler_is_named_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setattr(farm_cluster, "CONNECT_TIMEOUT_S", 1.0)
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    t0 = time.monotonic()
    code = cli.main(["farm", str(SCENES[0]), "-o", str(tmp_path / "out"), "--scheduler", address])
    assert code == cli.EXIT_USER_ERROR and time.monotonic() - t0 < 15
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def run(*args, timeout=120, **kw):
    return subprocess.run([sys.executable, "-m", "brushbake", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, **kw)


def assert_user_error(result, *must_contain):
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "error:" in result.stderr and "Traceback" not in result.stderr + result.stdout, result.stderr
    for text in must_contain:
        assert text in result.stderr, (text, result.stderr)


def test_the_command_prints_progress_a_table_and_writes_the_report(reference, tmp_path):
    scenes = [SCENES[0], REPO / "maps" / "ericw-tools" / "q1_cube.map", REPO / "maps" / "ericw-tools" / "q1_rocks.map"]
    result = run("farm", *scenes, "-o", tmp_path / "levels", "--workers", 2)
    assert result.returncode == cli.EXIT_LEAK, result.stderr  # q1_cube leaks
    assert "farm: 3 levels on 2 workers" in result.stderr and "farm 3/3" in result.stderr
    assert "q1_cube.pts" in result.stderr and "--allow-leak" in result.stderr and "Traceback" not in result.stderr
    for name in ("level", "status", "worker", "seconds", "q1_rocks.map", "q1_rocks.bbk", "total"):
        assert name in result.stdout, result.stdout
    assert "wrote 3 of 3 levels" in result.stdout
    doc = json.loads((tmp_path / "levels" / "farm.json").read_text())
    assert doc["brushbake"] == cli.__version__ and len(doc["workers"]) == 2
    assert doc["counts"] == {"ok": 2, "leak": 1, "error": 0, "cancelled": 0}
    rows = {Path(r["scene"]).name: r for r in doc["levels"]}
    assert list(rows) == [p.name for p in scenes]
    assert rows["q1_rocks.map"]["worker"] in doc["workers"] and rows["q1_rocks.map"]["seconds"] > 0
    assert {"load", "csg", "tree", "vis", "write"} <= set(rows["q1_rocks.map"]["stages"])
    assert written(tmp_path / "levels") == {k: v for k, v in reference.items() if k in written(tmp_path / "levels")}


def test_ctrl_c_cancels_every_task_and_leaves_only_whole_files(reference, tmp_path):
    out = tmp_path / "levels"
    proc = subprocess.Popen([sys.executable, "-m", "brushbake", "farm", str(SLOW), *map(str, SCENES), "-o", str(out),
                             "--workers", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    for line in proc.stderr:  # the farm is up and working
        lines.append(line)
        if line.startswith("farm:"):
            break
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the command and its workers
    stdout, stderr = proc.communicate(timeout=60)
    stderr = "".join(lines) + stderr
    assert proc.returncode == cli.EXIT_CANCELLED, stderr
    assert "Cancelled by the user" in stderr and "Traceback" not in stderr, stderr
    files = sorted(out.iterdir())
    assert not [p for p in files if p.name.startswith(".")]  # no temporary file
    assert len(files) < len(SCENES) + 1  # e1m7 (first, on the one worker) was still baking
    assert written(out) == {k: v for k, v in reference.items() if k in written(out)}


@pytest.mark.parametrize("args, must", [
    (["--scheduler", "nonsense://x"], ["nonsense://x", "is not a scheduler address", "tcp://HOST:PORT"]),
    (["--scheduler", "tcp://127.0.0.1"], ["is not a scheduler address"]),
])
def test_bad_scheduler_addresses(args, must, tmp_path):
    assert_user_error(run("farm", SCENES[0], "-o", tmp_path, *args), *must)


def test_bad_scenes_and_outputs_are_named_before_any_work(tmp_path):
    assert_user_error(run("farm", tmp_path / "missing.map", "-o", tmp_path), "missing.map", "does not exist")
    assert_user_error(run("farm", REPO / "README.md", "-o", tmp_path), "README.md", "extension")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for d in "ab":
        (tmp_path / d / "same.json").write_bytes(SCENES[0].read_bytes())
    assert_user_error(run("farm", tmp_path / "a" / "same.json", tmp_path / "b" / "same.json", "-o", tmp_path / "o"),
                      "same.bbk", "and so would")
    (tmp_path / "file").write_text("x")
    assert_user_error(run("farm", SCENES[0], "-o", tmp_path / "file"), "is a file")
    assert_user_error(run("farm", SCENES[0], "-o", tmp_path / "o2", "--hull", "stand", "--hull", "stand"),
                      "hull names must be different")
    assert not (tmp_path / "o2").exists() or not list((tmp_path / "o2").iterdir())


def test_a_scene_that_fails_is_reported_and_the_others_are_baked(tmp_path):
    bad = tmp_path / "broken.map"
    bad.write_text("{ this is not a map")
    levels = plan_levels([str(bad), str(SCENES[0])], tmp_path / "out")
    with open_farm(None, 1) as farm:
        run_levels(farm, levels, default_opts())
    assert levels[0].status == "error" and "broken.map, line 1" in levels[0].message  # as `bake` says it
    assert "brushbake-farm-" not in levels[0].message  # never the worker's copy
    assert levels[1].status == "ok" and levels[1].wrote


def test_the_core_and_the_addon_never_import_dask():
    code = ("import sys, brushbake.cli, brushbake.core.compile.pipeline, brushbake.exporters.native;"
            "brushbake.cli.build_parser();"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed') or m == 'brushbake.farm'];"
            "print(bad); sys.exit(bool(bad))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    imports = re.compile(r"^\s*(import|from)\s+(dask|distributed|\S*\.?farm)\b", re.M)
    for folder in ("core", "exporters", "addon"):
        for path in (REPO / folder).rglob("*.py"):
            assert not imports.search(path.read_text(encoding="utf-8")), path
