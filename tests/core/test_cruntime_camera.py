"""The camera queries in the C run-time (runtime_c/brushbake.c bbk_cull, bbk_cull_many) against the
NumPy reference (core/runtime/cull.py, portal_walk.py), issue 19.

- Equal answers: on every sample scene and every map in maps/, random cameras in empty space
  (camera_truth.random_cameras: 300 per scene, 200 per map; 2,000 more with -m slow) plus cameras whose
  eye has no cluster (in solid, outside), looking straight up and down, turned by many full turns,
  with tiny and huge far planes: for all three modes the same leaves drawn, eye leaf and cluster,
  fallback flag, and so the same faces and clusters drawn.
- One camera at a time (bbk_cull): the same leaves and faces as cull_camera, in increasing order
  and back to front (DRAW-BSP-TREE).
- Zero misses for the C backend itself: pixel rays through the point tree (camera_truth.
  pixel_truth, independent of portals, PVS and frustum tests) from random cameras on every sample
  scene; every truly seen point's leaf is drawn in every mode, and portal <= frustum <= pvs.
- Under AddressSanitizer and UBSan (tests/c/bbk_driver.c `cull`): the same drawn leaves, counts and
  back-to-front lists and faces as NumPy on a sample scene and e1m7.
- Errors: a level without a PVS or without portals gives the same typed error with backend 'c'.
The loader's CQ* checks are fuzzed with the others (tests/cruntime_fuzz.py kind 'cull',
test_cruntime.py test_fuzz_loader_under_sanitizers, bench/fuzz_cruntime.py)."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from brushbake.core.truth.camera_truth import pixel_truth, random_cameras
from brushbake.core.errors import BrushbakeError
from brushbake.core.runtime import cruntime
from brushbake.core.runtime.cull import cull, cull_camera
from test_cruntime import DriverOutput, sanitized  # noqa: F401 -- the same ASan/UBSan build of the driver

REPO = Path(__file__).resolve().parents[2]
MODES = ("pvs", "frustum", "portal")
GCC = shutil.which("gcc")


@pytest.fixture(scope="module")
def lib():
    try:
        return cruntime.library()
    except Exception as err:  # noqa: BLE001 -- the reason is the skip message
        pytest.skip(f"the C run-time cannot be built here: {err}")


def baked(levels, path):
    """The scene compiled with its PVS and culling portals, as `bake` makes it (session cache)."""
    return levels.with_vis(path)


def edge_cameras(level, seed: int) -> np.ndarray:
    """Cameras the random ones rarely are: eye in solid or outside the world (no cluster), pitch
    +-90, yaw many turns away, far planes at their limits, narrow and wide views."""
    rng = np.random.default_rng(seed)
    lo, hi = np.asarray(level.world_bounds, dtype=np.float64)
    n = 40
    cams = np.empty((n, 8))
    cams[:, :3] = rng.uniform(lo - 1.0, hi + 1.0, (n, 3))
    cams[:, 3] = rng.choice([-720.0, 0.0, 90.0, 1e4 + 45.0, 359.999999]) + rng.uniform(-1, 1, n)
    cams[:, 4] = rng.choice([-90.0, 90.0, 0.0, 45.0], n)
    cams[:, 5] = rng.choice([1.0, 60.0, 179.0], n)
    cams[:, 6] = rng.choice([0.05, 1.0, 20.0], n)
    cams[:, 7] = rng.choice([1e-3, 5.0, 2e5], n)
    return cams


def assert_same(level, cams, where: str) -> None:
    for mode in MODES:
        want, got = cull(level, cams, mode), cull(level, cams, mode, backend="c")
        bad = np.flatnonzero((want.drawn != got.drawn).any(axis=1))
        assert not len(bad), (where, mode, len(bad), cams[bad[0]].tolist())
        assert np.array_equal(want.camera_leaf, got.camera_leaf), (where, mode)
        assert np.array_equal(want.camera_cluster, got.camera_cluster), (where, mode)
        assert np.array_equal(want.overflow, got.overflow), (where, mode)
        assert np.array_equal(want.face_counts(), got.face_counts()), (where, mode)


def test_same_leaves_on_sample_scenes(lib, levels, sample_paths):
    assert sample_paths
    for path in sample_paths:
        level = baked(levels, path)
        cams = np.concatenate([random_cameras(level, 300, seed=21), edge_cameras(level, 21)])
        assert_same(level, cams, path.name)


def test_same_leaves_on_maps(lib, levels, map_paths):
    assert len(map_paths) >= 10
    for path in map_paths:
        level = baked(levels, path)
        cams = np.concatenate([random_cameras(level, 200, seed=22), edge_cameras(level, 22)])
        assert_same(level, cams, path.name)


@pytest.mark.slow
def test_same_leaves_on_maps_2000_cameras(lib, levels, map_paths, sample_paths):
    """-m slow: 2,000 more random cameras per scene and map (another seed), 400 edge cameras."""
    for path in list(sample_paths) + list(map_paths):
        level = baked(levels, path)
        cams = np.concatenate([random_cameras(level, 2000, seed=28)] + [edge_cameras(level, s) for s in range(10)])
        assert_same(level, cams, path.name)


def test_single_camera_leaves_and_faces_in_both_orders(lib, levels, sample_paths, map_named):
    for path in (sample_paths[0], map_named("e1m7.map")):
        level = baked(levels, path)
        for cam in random_cameras(level, 25, seed=23):
            for mode in MODES:
                for order in (False, True):
                    want = cull_camera(level, cam, mode, back_to_front=order)
                    got = cull_camera(level, cam, mode, back_to_front=order, backend="c")
                    assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1]), (path.name, mode, order)


def test_c_backend_has_no_misses_against_pixel_rays(lib, levels, sample_paths):
    for path in sample_paths:
        level = baked(levels, path)
        cams = random_cameras(level, 30, seed=24)
        truth = pixel_truth(level, cams, 64, 48)
        results = {m: cull(level, cams, m, backend="c") for m in MODES}
        for mode, r in results.items():
            for i in range(len(cams)):
                missed = truth.seen_leaves[i][~r.drawn[i, truth.seen_leaves[i]]]
                assert not len(missed), (path.name, mode, i, missed[:5].tolist())
        assert (results["portal"].drawn <= results["frustum"].drawn).all()
        assert (results["frustum"].drawn <= results["pvs"].drawn).all()


def test_levels_without_pvs_or_portals_say_so(lib, levels, sample_paths):
    plain = levels.get(sample_paths[0]).level  # compiled without visibility
    cams = random_cameras(plain, 5, seed=25)
    for mode in ("pvs", "portal"):
        with pytest.raises(BrushbakeError, match="no PVS"):
            cull(plain, cams, mode, backend="c")
    assert np.array_equal(cull(plain, cams, "frustum", backend="c").drawn, cull(plain, cams, "frustum").drawn)
    level = baked(levels, sample_paths[0])
    no_portals = dataclasses.replace(level, stats={}, cull_num_clusters=np.zeros(0, np.int32))
    with pytest.raises(BrushbakeError, match="no portals"):
        cull(no_portals, cams, "portal", backend="c")
    with pytest.raises(ValueError, match="backend"):
        cull(level, cams, "pvs", backend="fortran")




def test_sanitized_cull_matches(sanitized, tmp_path, levels, sample_paths, map_named):
    """The ASan/UBSan build: drawn leaves, stats, back-to-front leaves and faces as NumPy's."""
    from brushbake.exporters.native import level_to_bytes

    for path in (sample_paths[-1], map_named("e1m7.map")):
        level = baked(levels, path)
        cams = np.concatenate([random_cameras(level, 60, seed=26), edge_cameras(level, 26)[:10]])
        (tmp_path / "level.bbk").write_bytes(level_to_bytes(level))
        np.ascontiguousarray(cams).tofile(tmp_path / "cams.bin")
        out, n = DriverOutput(sanitized, tmp_path, "cull", "cams.bin", 600), len(cams)
        take = out.take

        for mode in MODES:
            want = cull(level, cams, mode)
            assert np.array_equal(take(np.uint8, n * level.num_leaves).reshape(n, -1).astype(bool), want.drawn), mode
            stats = take(cruntime.CULL_STATS_DTYPE, n)
            assert np.array_equal(stats["leaves"], want.leaf_counts()) and np.array_equal(stats["faces"], want.face_counts())
            assert np.array_equal(stats["clusters"], want.cluster_counts()), mode
        for mode in MODES:
            want = cull(level, cams, mode)
            for i in range(n):
                leaves = take(np.uint32, int(take(np.uint32, 1)[0]))
                faces = take(np.uint32, int(take(np.uint32, 1)[0]))
                assert np.array_equal(leaves, want.leaves(i, back_to_front=True)), (path.name, mode, i)
                assert np.array_equal(faces, want.faces(i, back_to_front=True)), (path.name, mode, i)
        assert out.done


def test_cli_cameras_backend_c_equals_numpy(lib, tmp_path, levels, sample_paths):
    """`query --cameras ... --backend c`: --seen OUT byte-equal to the NumPy backend's; --stats the
    same counts."""
    import json

    from brushbake.exporters.native import write_level

    level = baked(levels, sample_paths[0])
    path = tmp_path / "level.bbk"
    write_level(level, path)
    cams = random_cameras(level, 40, seed=27)
    np.save(tmp_path / "cams.npy", cams)
    lo, hi = np.asarray(level.world_bounds)
    np.save(tmp_path / "pts.npy", np.random.default_rng(27).uniform(lo, hi, (len(cams), 50, 3)))

    def run(*args):
        r = subprocess.run([sys.executable, "-m", "brushbake", "query", str(path), *map(str, args)], capture_output=True,
                           text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stderr
        return r

    for mode in MODES:
        outs = {}
        for backend in ("numpy", "c"):
            out = tmp_path / f"{mode}_{backend}.npy"
            run("--cameras", tmp_path / "cams.npy", "--cull", mode, "--seen", tmp_path / "pts.npy", "-o", out,
                "--backend", backend)
            outs[backend] = out.read_bytes()
            js = tmp_path / f"{mode}_{backend}.json"
            run("--cameras", tmp_path / "cams.npy", "--cull", mode, "--stats", "-o", js, "--backend", backend)
            outs[backend + "json"] = [{k: v for k, v in row.items() if k != "seconds"}
                                      for row in json.loads(js.read_text())["per_camera"]]
        assert outs["numpy"] == outs["c"], mode
        assert outs["numpyjson"] == outs["cjson"], mode
