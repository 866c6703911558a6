"""One level's long work on a Dask cluster (`bake SCENE --scheduler ADDRESS`, brushbake/farm/level.py):
the full vis's waves of sources, light's ray batches and the trees' region subtrees run on local
clusters of 1, 2 and 3 worker processes (loopback only) and the level is byte-identical to `bake` on this machine; a worker killed
during the flow leaves the same bytes; an unreachable scheduler is an error before any work.

The waves are made small (pvs_merged.WAVE_SOURCES) and every ray batch goes to the workers
(level.MIN_FARM_RAYS), so that small scenes cross many waves and batches.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from brushbake import cli
from brushbake.core.compile.vis import pvs_merged
from brushbake.farm import level as farm_level
from brushbake.farm.cluster import local_farm

REPO = Path(__file__).resolve().parents[1]
FLOW_MAP = REPO / "maps" / "librequake" / "lq_e1m6.map"
LIGHT_SCENE = REPO / "sample_scenes" / "two_rooms.json"


@pytest.fixture()
def small_parts(monkeypatch):
    monkeypatch.setattr(pvs_merged, "WAVE_SOURCES", 8)
    monkeypatch.setattr(farm_level, "MIN_FARM_RAYS", 64)


def bake(scene: Path, out: Path, *flags) -> bytes:
    assert cli.main(["bake", str(scene), "-o", str(out), "-q", *flags]) == cli.EXIT_OK
    return out.read_bytes()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    base = tmp_path_factory.mktemp("level_reference")
    return {"flow": bake(FLOW_MAP, base / "flow.bbk", "--vis", "flow", "--jobs", "1"),
            "light": bake(LIGHT_SCENE, base / "light.bbk", "--light", "--bounces", "2"),
            "regions": bake(FLOW_MAP, base / "regions.bbk", "--region-size", "4")}


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_bake_with_a_scheduler_writes_the_bytes_bake_writes(workers, reference, small_parts, tmp_path):
    farm = local_farm(workers)
    try:
        address = farm.cluster.scheduler_address
        assert bake(FLOW_MAP, tmp_path / "flow.bbk", "--vis", "flow", "--scheduler", address) == reference["flow"]
        assert bake(LIGHT_SCENE, tmp_path / "light.bbk", "--light", "--bounces", "2", "--scheduler", address) \
            == reference["light"]
        # the regions' subtrees (4 m cells: dozens of them, in the point tree and the onion tree)
        assert bake(FLOW_MAP, tmp_path / "regions.bbk", "--region-size", "4", "--scheduler", address) \
            == reference["regions"]
        # the work did run there: flow parts, ray batches and regions reached the workers
        calls = farm.client.run(_calls)
        assert sum(c["flow_part"] for c in calls.values()) >= 8 and sum(c["trace_part"] for c in calls.values()) >= 3
        assert sum(c["region_part"] for c in calls.values()) >= 2
    finally:
        farm.close()


def _calls() -> dict:
    from brushbake.farm import level

    return dict(level.CALLS)


def test_a_worker_killed_during_the_flow_leaves_the_same_bytes(reference, small_parts, tmp_path):
    farm = local_farm(2)
    try:
        pids = farm.client.run(os.getpid)
        killed = []

        def kill_a_busy_worker():
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not killed:
                for addr, keys in farm.client.processing().items():
                    if any("flow-part" in str(k) for k in keys):
                        os.kill(pids[addr], signal.SIGKILL)
                        killed.append(addr)
                        return
                time.sleep(0.005)

        killer = threading.Thread(target=kill_a_busy_worker)
        killer.start()
        got = bake(FLOW_MAP, tmp_path / "flow.bbk", "--vis", "flow", "--scheduler", farm.cluster.scheduler_address)
        killer.join()
        assert killed, "no flow part was seen running"
        assert got == reference["flow"]
    finally:
        farm.close()


def test_an_unreachable_scheduler_stops_bake_before_any_work(tmp_path, monkeypatch, capsys):
    from brushbake.farm import cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1.0)
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "x.bbk"
    code = cli.main(["bake", str(LIGHT_SCENE), "-o", str(out), "--scheduler", f"tcp://127.0.0.1:{port}"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USER_ERROR and f"tcp://127.0.0.1:{port}" in err and "no Dask scheduler answered" in err
    assert "load" not in err  # nothing was loaded: the check comes first
    assert not out.exists()
