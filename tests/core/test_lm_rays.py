"""Light's rays by the C run-time (core/compile/light/lm_rays.py) against the NumPy walk, the reference.

- ShadowRays.transitions: the same kind and t, to the bit, as find_first_transitions on random
  segments and on segments from surfaces to lights, with one thread and split between several;
- the baked pages, byte for byte, with either backend, on the sample scenes that have lights and
  a map, with direct light, soft shadows, a sun, an area light and bounces;
- a light's batches handed to the batch threads: the pages of one thread;
- the light views (core/compile/light/lm_views.py) skip only rays that would be blocked: the same
  pages with and without on two samples and three maps, and fewer direct rays;
- 'auto' is C where it builds and NumPy where it cannot (no compiler), and asking for 'c' there
  is a clear BackendUnavailableError; `bake --backend` on the command line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from brushbake.core.compile.light.lm_rays import ShadowRays, resolve_backend
from brushbake.core.compile.pipeline import bake_scene, compile_scene
from brushbake.core.errors import BackendUnavailableError
from brushbake.core.formats.loaders import load_scene
from brushbake.core import native_lib
from brushbake.core.runtime import cruntime
from brushbake.core.runtime.trace import find_first_transitions

REPO = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(31)


@pytest.fixture(scope="module")
def lib():
    if not cruntime.available():
        pytest.skip("the C run-time cannot be built here (no C compiler)")
    return cruntime.library()


def _segments(level, n):
    lo, hi = np.asarray(level.world_bounds, dtype=np.float64)
    a = lo + RNG.random((n, 3)) * (hi - lo)
    b = lo + RNG.random((n, 3)) * (hi - lo)
    # some that start on a face's plane (luxels lie a hair off their faces; these lie on them)
    f = RNG.integers(0, len(level.face_plane), n // 4)
    normals = np.asarray(level.plane_normals)[np.asarray(level.face_plane)[f]]
    dists = np.asarray(level.plane_dists)[np.asarray(level.face_plane)[f]]
    a[: len(f)] -= (np.sum(a[: len(f)] * normals, axis=1) - dists)[:, None] * normals
    return a, b


@pytest.mark.parametrize("name", ["sample_scenes/two_rooms.json", "sample_scenes/cornell_box.json",
                                  "maps/ericw-tools/qbspfeatures.map"])
def test_transitions_equal_the_numpy_walk_to_the_bit(lib, name):
    scene = load_scene(REPO / name)
    scene.hulls = []
    level = compile_scene(scene)
    s, e = _segments(level, 20000)
    kind, t, _ = find_first_transitions(level.point_tree(), s, e)
    assert len(np.unique(kind)) >= 2  # both clear and blocked segments
    for threads in (1, 2, 3):
        rays = ShadowRays(level, "c", threads=threads)
        ck, ct = rays.transitions(s, e)
        assert ck.dtype == kind.dtype and np.array_equal(ck, kind), threads
        assert np.array_equal(ct.view(np.int64), t.view(np.int64)), threads
    nk, nt = ShadowRays(level, "numpy").transitions(s, e)
    assert np.array_equal(nk, kind) and np.array_equal(nt, t)


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_between_traces_the_segments_of_index_pairs(lib, backend, monkeypatch):
    """between(points, a, b) makes the segments points[a] -> points[b] a batch at a time: the kinds
    segments() gives the whole (N, 2, 3) array, with batches cut short to meet a ragged end."""
    from brushbake.core.compile.light import lm_rays

    scene = load_scene(REPO / "sample_scenes/two_rooms.json")
    scene.hulls = []
    level = compile_scene(scene)
    s, e = _segments(level, 5000)
    points = np.concatenate([s, e])
    a, b = RNG.integers(0, len(points), 7001), RNG.integers(0, len(points), 7001)
    rays = ShadowRays(level, backend)
    want, _ = rays.segments(np.ascontiguousarray(np.stack([points[a], points[b]], axis=1)))
    assert len(np.unique(want)) >= 2
    monkeypatch.setattr(lm_rays, "RAY_BATCH", 1000)  # seven full batches and a short one
    got = rays.between(points, a, b)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert len(rays.between(points, a[:0], b[:0])) == 0


def _bake(path, backend, **settings):
    scene = load_scene(path)
    scene.hulls = []
    s = scene.settings
    s.light, s.bevels, s.allow_leak = True, False, True
    if s.vis == "none":
        s.vis = "fast"
    for k, v in settings.items():
        setattr(s, k, v)
    return bake_scene(scene, light_backend=backend)


@pytest.mark.parametrize("name, settings", [
    ("sample_scenes/cornell_box.json", {"bounces": 3}),
    ("sample_scenes/two_rooms.json", {"bounces": 2, "luxel_samples": 2}),
    ("sample_scenes/garage.json", {"bounces": 1}),
    ("maps/ericw-tools/qbspfeatures.map", {"bounces": 2}),
])
def test_pages_are_byte_identical_with_either_backend(lib, name, settings):
    a = _bake(REPO / name, "numpy", **settings)
    b = _bake(REPO / name, "c", **settings)
    assert a.stats["light"]["backend"] == "numpy" and b.stats["light"]["backend"] == "c"
    assert a.stats["light"]["rays"] == b.stats["light"]["rays"] > 0
    assert a.lm_pages.max() > 0
    assert a.lm_pages.tobytes() == b.lm_pages.tobytes()
    assert a.lm_vertex_uv.tobytes() == b.lm_vertex_uv.tobytes()


def test_soft_shadows_and_sun_are_byte_identical(lib):
    """Lights with a radius (several rays per luxel), a sun with an angle through sky brushes and an
    area light."""
    from brushbake.core.model.scene import Light

    out = []
    for backend in ("numpy", "c"):
        scene = load_scene(REPO / "maps/ericw-tools/qbspfeatures.map")
        scene.hulls = []
        for light in scene.lights:
            light.radius = 0.3
        scene.lights.append(Light("sun", (0.0, 0.0, 10.0), kind="sun", direction=(0.3, 0.2, -1.0), power=2.0,
                                  radius=5.0))
        scene.lights.append(Light("panel", scene.lights[0].position, kind="area", power=200.0, size=1.0,
                                  direction=(0.0, 0.0, -1.0)))
        s = scene.settings
        s.light, s.bevels, s.allow_leak, s.bounces, s.light_samples = True, False, True, 1, 4
        s.vis = "fast"
        out.append(bake_scene(scene, light_backend=backend))
    assert out[0].lm_pages.tobytes() == out[1].lm_pages.tobytes()


def test_auto_is_c_where_it_builds_and_numpy_without_a_compiler(lib, tmp_path, monkeypatch):
    assert resolve_backend("auto") == "c"
    assert resolve_backend("numpy") == "numpy"
    with pytest.raises(ValueError):
        resolve_backend("gpu")
    monkeypatch.setattr(cruntime, "_LIBRARY", None)
    monkeypatch.setattr(native_lib, "_LOADED", None)
    monkeypatch.setenv("BRUSHBAKE_NATIVE", "source")  # no shipped library either
    monkeypatch.setenv("BRUSHBAKE_C_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    monkeypatch.setenv("CC", "")
    assert resolve_backend("auto") == "numpy"
    level = compile_scene(load_scene(REPO / "sample_scenes/two_rooms.json"))
    assert ShadowRays(level, "auto").backend == "numpy"
    with pytest.raises(BackendUnavailableError):
        ShadowRays(level, "c")


def test_cli_bake_backend(lib, tmp_path):
    scene = REPO / "sample_scenes/cornell_box.json"
    outs = {}
    for backend in ("numpy", "c", "auto"):
        out = tmp_path / f"{backend}.bbk"
        run = subprocess.run([sys.executable, "-m", "brushbake", "bake", str(scene), "-o", str(out), "--light",
                              "--bounces", "2", "--no-hulls", "-q", "--backend", backend],
                             capture_output=True, text=True, env=dict(os.environ))
        assert run.returncode == 0, run.stderr
        outs[backend] = out.read_bytes()
    assert outs["numpy"] == outs["c"] == outs["auto"]
    env = dict(os.environ, PATH=str(tmp_path / "nothing"), CC="", BRUSHBAKE_C_CACHE=str(tmp_path / "cache"),
               BRUSHBAKE_NATIVE="source")
    run = subprocess.run([sys.executable, "-m", "brushbake", "bake", str(scene), "-o", str(tmp_path / "x.bbk"),
                          "--light", "--no-hulls", "-q", "--backend", "c"], capture_output=True, text=True, env=env)
    assert run.returncode != 0 and "C run-time is not available" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "x.bbk").exists()


@pytest.mark.parametrize("name", ["sample_scenes/two_rooms.json", "sample_scenes/garage.json",
                                  "maps/ericw-tools/qbspfeatures.map", "maps/librequake/lq_e1m6.map",
                                  "maps/id/e1m7.map"])
def test_light_views_skip_only_blocked_rays(name, monkeypatch):
    """core/compile/light/lm_views.py: the sample points outside the leaves the portal walk reaches from
    a light get no shadow ray -- the same pages to the byte as without, with fewer direct rays."""
    from brushbake.core.compile.light import lightmap

    with_views = _bake(REPO / name, "numpy", bounces=1)
    monkeypatch.setattr(lightmap, "light_views", lambda level, lights, far, backend: [None] * len(lights))
    without = _bake(REPO / name, "numpy", bounces=1)
    assert with_views.lm_pages.max() > 0
    assert with_views.lm_pages.tobytes() == without.lm_pages.tobytes()
    assert with_views.stats["light"]["direct_rays"] <= without.stats["light"]["direct_rays"]
    if "e1m7" in name:  # its lights are Quake's linear ones: beyond their reach no ray is cast either way
        assert with_views.stats["light"]["direct_rays"] < 0.97 * without.stats["light"]["direct_rays"]


def _sun_scene():
    from brushbake.core.model.scene import Light

    scene = load_scene(REPO / "maps/ericw-tools/qbspfeatures.map")
    scene.hulls = []
    scene.lights.append(Light("sun", (0.0, 0.0, 10.0), kind="sun", direction=(0.3, 0.2, -1.0), power=2.0,
                              radius=5.0))
    # an area light's samples bring each point different values: their order shows in the sums
    scene.lights.append(Light("panel", scene.lights[0].position, kind="area", power=200.0, size=1.0,
                              direction=(0.0, 0.0, -1.0)))
    s = scene.settings
    s.light, s.bevels, s.allow_leak, s.bounces, s.light_samples, s.vis = True, False, True, 0, 4, "fast"
    return scene


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_direct_batches_on_the_batch_threads_give_the_pages_of_one_thread(lib, backend, monkeypatch):
    """A light's batches traced on the batch threads (ShadowRays.later) while its thread makes the
    next, some finishing before older ones: the pages of one thread, byte for byte (no batch lost,
    doubled or given another's rays; the order they are summed in is settle()'s, tested below)."""
    import time

    from brushbake.core.compile.light import lm_direct, lm_rays

    from concurrent.futures import Future

    monkeypatch.setattr(lm_direct, "RAY_BATCH", 700)  # the sun's rays in many batches
    monkeypatch.setattr(lm_direct, "LATER_RAYS", 300)
    handed, real_later, real_traced, real_settle = [], ShadowRays.later, lm_direct.RayBatcher._traced, ShadowRays.settle
    in_flight = []

    def later(self, fn, *args):
        if args and isinstance(args[0], list):  # a light's batch (not the charts' work)
            handed.append(sum(len(part[0]) for part in args[0]))  # its rays
        return real_later(self, fn, *args)

    def settle(items, most):
        out = real_settle(items, most)
        in_flight.append(sum(isinstance(item, Future) for item in out))
        return out

    def traced(self, parts):  # the older batches finish last
        time.sleep(0.002 * (len(handed) % 3 == 1))
        return real_traced(self, parts)

    monkeypatch.setattr(ShadowRays, "later", later)
    monkeypatch.setattr(ShadowRays, "settle", staticmethod(settle))
    monkeypatch.setattr(lm_direct.RayBatcher, "_traced", traced)
    pages = []
    for threads in (1, 3):
        monkeypatch.setattr(lm_rays, "default_threads", lambda t=threads: t)
        handed.clear()
        level = bake_scene(_sun_scene(), light_backend=backend)
        assert level.stats["light"]["threads"] == threads
        pages.append(level.lm_pages.tobytes())
        assert len(handed) >= 4  # the sun disk's batches went through later()
        # the memory held is bounded: a batch at most RAY_BATCH rays (a disk sample of every lit
        # point is cut), at most a batch a thread in flight
        assert max(handed) <= 700 and max(in_flight) <= threads
    assert pages[0] == pages[1]


def test_settle_keeps_order_and_bounds_what_runs():
    """settle(items, most): the oldest Futures answered first until at most `most` run; answers and
    plain values keep their places."""
    from concurrent.futures import Future

    futures = [Future() for _ in range(4)]
    for k, f in enumerate(futures):
        f.set_result(k * 10)
    items = ["a", futures[0], futures[1], "b", futures[2], futures[3]]
    assert ShadowRays.settle(items, 2) == ["a", 0, 10, "b", futures[2], futures[3]]
    assert ShadowRays.settle(items, 0) == ["a", 0, 10, "b", 20, 30]
