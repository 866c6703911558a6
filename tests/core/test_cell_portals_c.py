"""The C kernel that makes the cell portals of a structural tree (core/compile/vis/cell_portals_c.py,
runtime_c/compiler/cell_portals.c) against its NumPy reference (portals.cell_portals), to the bit:

- random scenes of boxes and cut polytopes, structural and detail (hypothesis, test_portals'
  scenes), both splitters: the same cell portals, the same Portals, and over the onion tree (the
  outside fill's portals) the same links;
- every sample scene and map, with the Quake hulls where it has none: the point tree's Portals and
  the onion tree's cell portals and links (e3m4: its point tree only);
- cancel between levels, and progress;
- the kernel under ASan/UBSan (tests/c/cells_driver.c).
The portals' own truth (areas, dense samples, windings: tests/core/test_portals.py) runs on the
default backend, which is this kernel where the library loads."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from brushbake.core import kernels
from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.compile.vis import cell_portals_c, portals as pt
from brushbake.core.compile.vis.outside_fill import onion_proxy
from brushbake.core.errors import CancelledError
from brushbake.core.formats.loaders import load_scene
from brushbake.core.model.hulls import quake_map_hulls
from brushbake.core.model.scene import Scene, Settings
from brushbake.core.tolerances import PORTAL_EPSILON

from sanitized import build_sanitized, run_sanitized
from test_portals import brush_specs, build

PORTAL_FIELDS = ("clusters", "plane", "normals", "dists", "first_vertex", "num_vertices", "vertices",
                 "cluster_of_leaf", "cluster_of_level_cluster")


@pytest.fixture(autouse=True)
def _kernel_or_skip():
    if not cell_portals_c.BINDING.available():
        pytest.skip("the native library does not load here (no C compiler)")


def _cells(level, backend):
    with kernels.using(backend):
        raw = pt.cell_portals(level)
    width = raw.verts.shape[1]
    slot = np.arange(width)
    verts = np.where((slot < raw.counts[:, None])[:, :, None], raw.verts, 0.0)
    return [verts[:, : int(raw.counts.max(initial=3))].tobytes(), raw.counts.tobytes(), raw.normals.tobytes(),
            raw.dists.tobytes(), raw.plane_id.tobytes(), raw.sides.tobytes()]


def _portals(level, backend):
    with kernels.using(backend):
        p = pt.build_portals(level)
    return [np.ascontiguousarray(getattr(p, f)).tobytes() for f in PORTAL_FIELDS] + [p.num_clusters, p.num_inner]


def _links(level, backend):
    with kernels.using(backend):
        p = pt.portal_links(level)
    return p.clusters.tobytes(), p.cluster_of_leaf.tobytes(), p.num_clusters


def _same_everywhere(level):
    assert _cells(level, "c") == _cells(level, "numpy")
    assert _portals(level, "c") == _portals(level, "numpy")
    if level.has_onion:
        proxy = onion_proxy(level)
        assert _cells(proxy, "c") == _cells(proxy, "numpy")
        assert _links(proxy, "c") == _links(proxy, "numpy")


@settings(max_examples=40, deadline=None, derandomize=True, report_multiple_bugs=False,
          phases=[Phase.explicit, Phase.generate, Phase.shrink], suppress_health_check=[HealthCheck.too_slow])
@given(specs=st.lists(brush_specs(), min_size=1, max_size=10), splitter=st.sampled_from(["onion", "thesis"]),
       hulls=st.booleans())
def test_random_scenes_make_the_same_portals(specs, splitter, hulls):
    brushes = [b for b in (build(s, f"b{i}") for i, s in enumerate(specs)) if b is not None]
    if not brushes:
        return
    scene = Scene("random", brushes=brushes, settings=Settings(splitter=splitter),
                  hulls=quake_map_hulls(1.0 / 32.0) if hulls else [])
    _same_everywhere(compile_scene(scene))


#: compiled with the Quake hulls here (e3m4, 20 s so, was compared by bench/bake_hashes.py)
WITH_HULLS_SKIPPED = {"e3m4.map"}


def _with_hulls(path):
    scene = load_scene(path)
    if not scene.hulls:
        scene = dataclasses.replace(scene, hulls=quake_map_hulls(scene.settings.map_scale))
    level = compile_scene(scene)
    assert level.has_onion
    return level


def test_sample_scenes_make_the_same_portals(sample_path):
    _same_everywhere(_with_hulls(sample_path))


def test_maps_make_the_same_portals(map_path, levels):
    if map_path.name in WITH_HULLS_SKIPPED:
        _same_everywhere(levels.get(map_path).level)  # the point tree's portals only
        return
    _same_everywhere(_with_hulls(map_path))


def test_cancel_between_levels_and_progress(map_named, levels):
    level = levels.get(map_named("qbspfeatures.map")).level
    calls, seen = [], []

    def cancel():
        calls.append(1)
        return len(calls) > 3

    with kernels.using("c"):
        with pytest.raises(CancelledError):
            pt.cell_portals(level, cancel=cancel)
        pt.cell_portals(level, progress=lambda f, msg: seen.append(f))
    assert len(calls) == 4
    assert seen and seen == sorted(seen) and seen[-1] == 1.0


@pytest.fixture(scope="module")
def sanitized_cells(tmp_path_factory):
    return build_sanitized(tmp_path_factory, "cells_driver", ["cell_portals", "split"])


@pytest.mark.parametrize("name", ["qbspfeatures.map", "lq_e1m6.map"])
def test_sanitized_kernel_equals_numpy(sanitized_cells, tmp_path, map_named, name):
    """The onion tree's cell portals (the outside fill's) by the sanitized driver: the reference's."""
    level = onion_proxy(_with_hulls(map_named(name)))
    cells = pt.structural_cells(level)
    box = np.asarray(level.world_bounds, dtype=np.float64)
    box_portals = pt._box_portals(box, level.root, pt._outside_code(level))
    arrays = cell_portals_c.kernel_inputs(level, cells.structural, pt.node_squares(level, box, cells), box_portals)
    head = np.array([len(arrays[0]), len(arrays[4]), level.root, len(arrays[7])], dtype=np.int64)
    (tmp_path / "in.bin").write_bytes(b"".join(np.ascontiguousarray(a).tobytes()
                                               for a in [head, np.array([PORTAL_EPSILON]), *arrays]))
    run_sanitized(sanitized_cells, tmp_path)
    raw = (tmp_path / "out.bin").read_bytes()
    m, width = (int(x) for x in np.frombuffer(raw[:16], np.int64))
    at = 16
    out = []
    for shape, dtype in (((m, width, 3), np.float64), ((m,), np.int64), ((m, 3), np.float64), ((m,), np.float64),
                         ((m,), np.int64), ((m, 2), np.int64)):
        size = int(np.prod(shape)) * 8
        out.append(np.frombuffer(raw[at: at + size], dtype).reshape(shape))
        at += size
    assert at == len(raw)
    got = [out[0][:, : int(out[1].max(initial=3))].tobytes()] + [a.tobytes() for a in out[1:]]
    assert got == _cells(level, "numpy")


def test_cancel_is_asked_only_while_levels_are_left():
    """A tree whose root is no structural node has no level: neither backend asks cancel, and
    both give the world box's portals (the kernel's last step only sets them aside)."""
    from brushbake.core.model.brushes import Contents, box_brush

    level = compile_scene(Scene("one", brushes=[box_brush([0, 0, 0], [1, 1, 1], "b", Contents.DETAIL)]))
    assert not pt.structural_cells(level).structural.any()
    asked = {}
    for backend in ("numpy", "c"):
        calls = []
        with kernels.using(backend):
            raw = pt.cell_portals(level, cancel=lambda: calls.append(1) or True)
        asked[backend] = (len(calls), raw.counts.tobytes(), raw.sides.tobytes())
    assert asked["c"] == asked["numpy"]


def test_a_tree_the_kernel_cannot_walk_goes_to_the_reference(map_named, levels):
    """A node reached twice, a plane outside the table, a child past the last node: not a tree
    the kernel may walk (it trusts its input), so the reference answers, as it does for any."""
    level = levels.get(map_named("qbspfeatures.map")).level
    assert cell_portals_c.is_tree(level)
    bad = []
    kids = level.node_children.copy()
    kids[3, 0] = kids[1, 0] if kids[1, 0] >= 0 else kids[1, 1]
    bad.append(dataclasses.replace(level, node_children=kids))
    plane = level.node_plane.copy()
    plane[0] = len(level.plane_dists)
    bad.append(dataclasses.replace(level, node_plane=plane))
    kids = level.node_children.copy()
    kids[2, 1] = level.num_nodes
    bad.append(dataclasses.replace(level, node_children=kids))
    for b in bad:
        assert not cell_portals_c.is_tree(b)
