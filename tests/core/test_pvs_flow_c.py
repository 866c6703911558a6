"""The full flow's C kernel (runtime_c/compiler/vis_flow.c through core/compile/vis/flow_c.py)
against the NumPy reference (core/compile/vis/pvs_merged.py), bit for bit, and the fast mode's
BasePortalVis, flood and cluster rows (vis_flood.c) against pvs_flow.py's: the same one-way rows,
the same states expanded, targets clipped and growths, on every sample scene and map (the big
maps under -m slow) and on hypothesis scenes of random brushes; the same .bbk from `bake --backend
numpy` and `--backend c`; the kernel under AddressSanitizer and UBSan (tests/c/flow_driver.c)
gives the library's rows.  The rows against ray truth: the vis tests, which run the C path
('auto') wherever the library builds."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.compile.vis import flow_c, pvs_flow, pvs_merged
from brushbake.core.compile.vis.portals import build_portals
from brushbake.core.compile.vis.pvs_flow import base_portal_vis, fast_vis
from brushbake.core.compile.vis.pvs_merged import merged_flow
from brushbake.core.compile.vis.vis import (
    compute_vis,
    inner_directed_portals,
    void_reachable,
)
from brushbake.core.model.brushes import box_brush
from brushbake.core.model.scene import Scene
from brushbake.core.tolerances import FLOW_PLANE_EPSILON
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_portals import brush_specs, build

pytestmark = pytest.mark.skipif(not flow_c.available(), reason="the C kernels do not build here (no C compiler)")

SMALL = {"two_rooms.json", "garage.json", "cornell_box.json", "staircase.json", "low_tunnel.json", "two_rooms.map",
         "qbspfeatures.map", "q1_rocks.map", "lq_e1m6.map", "light_general.map", "q1_cube.map", "q1_hulls.map"}
WORK = ("states_expanded", "targets_clipped", "most_growths")


def directed(level):
    """The directed portals and the fast mode's flood, after checking that the C flood and cluster
    rows are NumPy's."""
    portals = build_portals(level)
    outside = void_reachable(portals)
    dp, _, _ = inner_directed_portals(portals, None if outside.all() else outside)
    assert np.array_equal(base_portal_vis(dp), base_portal_vis(dp, backend="c"))
    flood, rows = fast_vis(dp)
    for jobs in (1, 2):  # the C flood as bit rows, never a (D, D) table: NumPy's, packed
        c_flood, c_rows = fast_vis(dp, backend="c", jobs=jobs)
        ref = pvs_flow.PortalFlood.from_table(dp, flood)
        assert isinstance(c_flood, pvs_flow.PortalFlood) and np.array_equal(flood, np.asarray(c_flood))
        assert np.array_equal(ref.bits, c_flood.bits) and np.array_equal(ref.clusters, c_flood.clusters)
        assert np.array_equal(ref.sizes, c_flood.sizes) and np.array_equal(rows, c_rows)
    return dp, flood


def same_flow(dp, flood, jobs=(1,)):
    """Both backends' one-way rows and work, equal; returns the NumPy stats."""
    ref_stats: dict = {}
    ref = merged_flow(dp, flood, stats=ref_stats, jobs=1, one_way=True, backend="numpy")
    for j in jobs:
        stats: dict = {}
        got = merged_flow(dp, flood, stats=stats, jobs=j, one_way=True, backend="c")
        assert np.array_equal(got, ref), f"{int((got != ref).sum())} row bits differ (jobs {j})"
        assert [stats.get(k) for k in WORK] == [ref_stats.get(k) for k in WORK]
    return ref_stats


def scene_params(paths, big: bool):
    return [pytest.param(p, id=p.name) for p in paths if (p.name not in SMALL) == big]


def _all_paths():
    """The sample scenes and maps (as tests/conftest.py lists them; read here, since another folder's
    conftest module may answer to that name)."""
    root = Path(__file__).resolve().parents[2]
    samples = sorted((root / "sample_scenes").glob("*.json")) + sorted((root / "sample_scenes").glob("*.map"))
    return samples + sorted((root / "maps").glob("**/*.map"))


@pytest.mark.parametrize("path", scene_params(_all_paths(), big=False))
def test_c_rows_and_work_equal_numpy(levels, path):
    dp, flood = directed(levels.get(path).level)
    same_flow(dp, flood, jobs=(1, 2))


@pytest.mark.slow
@pytest.mark.parametrize("path", scene_params(_all_paths(), big=True))
def test_c_rows_and_work_equal_numpy_big_maps(levels, path, request):
    if "slow" not in (request.config.getoption("-m") or ""):
        pytest.skip("the big maps' NumPy flow takes minutes: run with -m slow")
    dp, flood = directed(levels.get(path).level)
    stats = same_flow(dp, flood, jobs=(2,))
    assert stats.get("states_expanded", 0) > 0


@settings(max_examples=25, deadline=None, derandomize=True, report_multiple_bugs=False,
          phases=[Phase.explicit, Phase.generate, Phase.shrink], suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(brush_specs(), min_size=2, max_size=14))
def test_random_scenes_c_equals_numpy(specs):
    brushes = [b for b in (build(s, f"b{i}") for i, s in enumerate(specs)) if b is not None]
    brushes.append(box_brush((-4.0, -4.0, -4.0), (4.0, 4.0, -3.5), "floor"))
    dp, flood = directed(compile_scene(Scene("random", brushes=brushes)))
    same_flow(dp, flood)


def test_small_waves_and_threads_give_the_same_rows(monkeypatch):
    """Waves of 8 sources (later waves read earlier ones' final rows) and 1-3 threads: the C rows
    and work are the NumPy ones."""
    from test_pvs_merged import pillar_hall_portals

    monkeypatch.setattr(pvs_merged, "WAVE_BYTES", 1)
    dp, flood = pillar_hall_portals()
    assert dp.num > 40
    same_flow(dp, flood, jobs=(1, 2, 3))


def test_compute_vis_backends_agree_and_say_which_ran(levels, sample_paths):
    level = levels.get(next(p for p in sample_paths if p.name == "garage.json")).level
    portals = build_portals(level)
    got = {b: compute_vis(level, portals, "flow", backend=b) for b in ("numpy", "c", "auto")}
    assert got["c"].stats["vis_backend"] == got["auto"].stats["vis_backend"] == "c"
    assert got["numpy"].stats["vis_backend"] == "numpy"
    assert np.array_equal(got["c"].visible, got["numpy"].visible)
    with pytest.raises(ValueError):
        compute_vis(level, portals, "flow", backend="fortran")


def test_cancel_stops_the_c_flow():
    from brushbake.core.errors import CancelledError
    from test_pvs_merged import pillar_hall_portals

    dp, flood = pillar_hall_portals()
    with pytest.raises(CancelledError):
        merged_flow(dp, flood, jobs=2, backend="c", cancel=lambda: True)


def test_bake_backends_write_the_same_bytes(tmp_path, sample_paths):
    """`bake --vis flow --backend numpy` and `--backend c`: the same file, byte for byte."""
    src = next(p for p in sample_paths if p.name == "garage.json")
    outs = []
    for backend in ("numpy", "c"):
        out = tmp_path / f"garage_{backend}.bbk"
        r = subprocess.run([sys.executable, "-m", "brushbake", "bake", str(src), "-o", str(out), "--vis", "flow",
                            "--no-light", "--backend", backend, "-q"], capture_output=True, text=True, timeout=300,
                           stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


# ---- the kernel under AddressSanitizer and UBSan --------------------------------------------------

GCC = shutil.which("gcc")


def dump_inputs(kernel: flow_c.FlowKernel, path, radius) -> None:
    """The kernel's tables as tests/c/flow_driver.c reads them."""
    f = kernel.inputs
    head = np.array([f.num_portals, f.num_clusters, f.width, f.kdop, f.flood_stride, f.cl_stride, f.max_growth,
                     f.order_k, f.max_winding], dtype=np.int64)
    consts = np.array([f.clip_margin, f.plane_epsilon, f.min_normal, f.growth_epsilon, f.wait_key_step])
    with open(path, "wb") as out:
        for a in (head, consts, *kernel.keep, kernel.test_cl, np.asarray(radius, dtype=np.float64)):
            out.write(np.ascontiguousarray(a).tobytes())


@pytest.fixture(scope="module")
def sanitized_flow(tmp_path_factory):
    if GCC is None:
        pytest.skip("gcc is missing: the sanitizer build needs it")
    out = tmp_path_factory.mktemp("asan_flow") / "flow_driver"
    run = subprocess.run([GCC, "-std=c99", "-g", "-O1", "-Wall", "-Wextra", "-Werror", "-pedantic", "-ffp-contract=off",
                          "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer",
                          "tests/c/flow_driver.c", "runtime_c/compiler/vis_flow.c", "runtime_c/compiler/vis_flood.c",
                          "-lm", "-o", str(out)],
                         capture_output=True, text=True, cwd=flow_c.KERNEL_DIR.parents[1])
    if run.returncode != 0:
        pytest.skip(f"gcc cannot build with -fsanitize=address,undefined here: {run.stderr.strip()[:200]}")
    return out


@pytest.mark.parametrize("name", ["garage.json", "light_general.map", "two_rooms.map"])
def test_sanitized_kernel_gives_the_library_rows(sanitized_flow, tmp_path, levels, name):
    path = next(p for p in _all_paths() if p.name == name)
    dp, flood = directed(levels.get(path).level)
    flow = pvs_merged._Flow(dp, flood, None, backend="c")
    centre, radius = pvs_flow._spheres(dp.windings, dp.count)
    dump_inputs(flow.kernel, tmp_path / "inputs.bin", radius)
    run = subprocess.run([str(sanitized_flow), "inputs.bin", "out.bin"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    # the reach by each plane's first twin (bbkc_reach_bits_rep) was checked on portals with twins
    twins = flow_c.same_planes(dp.normal, dp.dist)
    assert f"reach twins {int((twins != np.arange(d := dp.num)).sum())}" in run.stdout
    assert (twins != np.arange(d)).any()
    cs, d, c = flow.kernel.cl_stride, dp.num, dp.num_clusters
    data = np.frombuffer((tmp_path / "out.bin").read_bytes(), dtype=np.uint8)
    assert len(data) == d * (cs + 24) + 7 * d * d + c * c
    raw = data[: d * (cs + 24)].reshape(d, cs + 24)
    tables = data[d * (cs + 24):].astype(bool)
    above, below = tables[: d * d].reshape(d, d), tables[d * d: 2 * d * d].reshape(d, d)
    allowed = tables[2 * d * d: 6 * d * d].reshape(2 * d, 2 * d)
    c_flood = tables[6 * d * d: 7 * d * d].reshape(d, d)
    rows_one_way = tables[7 * d * d:].reshape(c, c)
    # the fast mode's kernels, on the directed portals taken as undirected ones
    ref_above, ref_below = pvs_flow._plane_portal_reach(dp.windings, dp.count, dp.normal, dp.dist,
                                                        FLOW_PLANE_EPSILON, 128)
    assert np.array_equal(above, ref_above) and np.array_equal(below, ref_below)
    assert np.array_equal(allowed, flow_c.base_portal_vis(dp.windings, dp.count, dp.normal, dp.dist, centre, radius,
                                                          FLOW_PLANE_EPSILON))
    table = np.unpackbits(flow.flood_bits, axis=1, bitorder="little", count=d).astype(bool)
    ref_flood = pvs_flow.simple_flood(dp, table)
    assert np.array_equal(c_flood, ref_flood)
    assert np.array_equal(rows_one_way & rows_one_way.T, pvs_flow.cluster_rows(dp, ref_flood))
    rows, counts = raw[:, :cs], raw[:, cs:].copy().view(np.int64)
    sources = np.arange(dp.num)
    lib_rows, expanded, clipped, most = flow.kernel.run(sources)
    assert np.array_equal(rows, lib_rows)
    assert (int(counts[:, 0].sum()), int(counts[:, 1].sum()), int(counts[:, 2].max())) == (expanded, clipped, most)
    # and each source's row is the NumPy wave's for the same tables
    wave = pvs_merged._Wave(flow, sources)
    wave.run()
    assert np.array_equal(np.packbits(wave.viscl, axis=1, bitorder="little"), rows)
    assert wave.expanded == expanded


def test_without_the_library_auto_is_numpy_and_c_says_why(monkeypatch):
    from brushbake.core.errors import BackendUnavailableError

    def missing():
        raise BackendUnavailableError("the compiler's C kernels are not available: no C compiler was found.")

    monkeypatch.setattr(flow_c, "_LIB", None)
    monkeypatch.setattr(flow_c, "_load", missing)
    assert flow_c.resolve_backend("auto") == "numpy"
    with pytest.raises(BackendUnavailableError, match="no C compiler"):
        flow_c.resolve_backend("c")
