"""The live leak check (core/compile/vis/leak_watch.py): after every edit its report is the report a
check from scratch gives, and cells the edit did not reach are not built again.

Truth here is the check from scratch (check_scene on a structural compile, which neither keeps
cells nor pieces of faces), whose verdicts the leak tests (test_leaks.py) hold against
the maps' known holes; the edits are random (move, delete, copy a brush) on two maps.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from brushbake.core.compile.trees.build import compile_scene
from brushbake.core.compile.vis.leak_watch import LeakWatch
from brushbake.core.compile.vis.leaks import check_scene
from brushbake.core.formats.loaders import load_scene
from brushbake.core.model.brushes import Contents, brush_from_planes


def moved(brush, offset, name=None):
    offset = np.asarray(offset, float)
    return brush_from_planes(brush.normals, brush.dists + brush.normals @ offset, name or brush.name,
                             brush.contents, entity=brush.entity)


def same_report(a, b) -> None:
    assert a.leaks == b.leaks and a.entity == b.entity and a.hole_brush == b.hole_brush
    assert np.array_equal(a.outside_clusters, b.outside_clusters)
    assert np.array_equal(np.asarray(a.chain if a.chain is not None else []), np.asarray(b.chain if b.chain is not None else []))
    assert a.hole_position == b.hole_position


def from_scratch(scene):
    structural = dataclasses.replace(
        scene, hulls=[], brushes=[b for b in scene.brushes if b.contents == Contents.SOLID],
        settings=dataclasses.replace(scene.settings, bevels=False))
    return check_scene(structural, compile_scene(structural))[1]


@pytest.fixture(scope="module")
def e1m6(map_named):
    return load_scene(map_named("lq_e1m6.map"))


def test_a_wall_removed_and_put_back(e1m6):
    """lq_e1m6 (16 x 28 m) in 4 m cells, so that a wall spans a few of its many cells."""
    e1m6 = dataclasses.replace(e1m6, settings=dataclasses.replace(e1m6.settings, region_size=4.0))
    watch = LeakWatch(4.0)
    sealed = watch.check(e1m6)
    assert not sealed.leaks and watch.reused == 0 and watch.built > 0
    same_report(sealed, from_scratch(e1m6))
    gone = next(b for b in e1m6.brushes if b.name.endswith(":brush2"))
    holed = dataclasses.replace(e1m6, brushes=[b for b in e1m6.brushes if b is not gone])
    report = watch.check(holed)
    assert report.leaks and watch.reused > watch.built  # most cells untouched
    same_report(report, from_scratch(holed))
    again = watch.check(e1m6)
    assert not again.leaks and watch.built == 0  # every cell of the sealed map is still known
    same_report(again, sealed)


edits = st.lists(st.tuples(st.sampled_from(["move", "delete", "copy"]), st.integers(0, 10_000),
                           st.tuples(*[st.integers(-8, 8).map(lambda k: k * 0.125)] * 3)), min_size=1, max_size=4)


@settings(max_examples=12, deadline=None, derandomize=True, phases=(Phase.explicit, Phase.reuse, Phase.generate),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(steps=edits, cell=st.sampled_from([32.0, 4.0]))
def test_random_edits_give_the_reports_of_a_check_from_scratch(e1m6, steps, cell):
    scene = dataclasses.replace(e1m6, settings=dataclasses.replace(e1m6.settings, region_size=cell))
    watch = LeakWatch(cell)  # the grid of the check from scratch, so that the chains are the same too
    watch.check(scene)
    for kind, pick, offset in steps:
        brushes = list(scene.brushes)
        k = pick % len(brushes)
        if kind == "move":
            brushes[k] = moved(brushes[k], offset)
        elif kind == "delete" and len(brushes) > 1:
            del brushes[k]
        else:
            brushes.append(moved(brushes[k], offset, brushes[k].name + " copy"))
        scene = dataclasses.replace(scene, brushes=brushes)
        same_report(watch.check(scene), from_scratch(scene))


def test_the_verdict_does_not_depend_on_the_grid(e1m6):
    """LeakWatch cuts along its own grid (finer than a bake's); a leak's verdict and the clusters the
    void reaches are a matter of the brushes, whatever the grid."""
    gone = next(b for b in e1m6.brushes if b.name.endswith(":brush9"))
    holed = dataclasses.replace(e1m6, brushes=[b for b in e1m6.brushes if b is not gone])
    for scene in (e1m6, holed):
        verdicts = {LeakWatch(size).check(scene).leaks for size in (0.0, 4.0, 32.0, 64.0)}
        assert verdicts == {from_scratch(scene).leaks}
