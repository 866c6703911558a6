"""A source's flow (states expanded, row) must not depend on its index in its wave, so not on
--jobs nor on the wave size (core/compile/vis/pvs_merged.py orders each source's waiting states by
integer keys, wait_keys).  On a real map, whose portal distances are not on any grid: the float
key w * 1e7 + dist of 2878458 rounded dist to the ulp of w * 1e7 and failed this."""
from pathlib import Path

import numpy as np

from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.compile.vis.portals import build_portals
from brushbake.core.compile.vis.pvs_flow import fast_vis
from brushbake.core.compile.vis.pvs_merged import _Flow, _Wave
from brushbake.core.compile.vis.vis import inner_directed_portals, void_reachable
from brushbake.core.formats.loaders import load_scene

MAP = Path(__file__).resolve().parents[2] / "maps/librequake/lq_e0m3.map"


def run(flow, sources, w):
    wave = _Wave(flow, np.asarray(sources))
    n = [0]
    orig = wave._expand

    def spy(wi, r):
        n[0] += int((wi == w).sum())
        return orig(wi, r)

    wave._expand = spy
    wave.run()
    return wave.viscl[w].copy(), n[0]


def test_a_sources_flow_does_not_depend_on_its_index_in_the_wave():
    level = compile_scene(load_scene(MAP))
    portals = build_portals(level)
    outside = void_reachable(portals)
    dp, _, _ = inner_directed_portals(portals, None if outside.all() else outside)
    flood = fast_vis(dp)[0]
    flow = _Flow(dp, flood, None)
    filler = int(np.argsort(flood.sum(axis=1), kind="stable")[0])
    for s in (1605, 1832, 354, 4166):  # sources whose work differed at w = 511 with the float key
        row0, e0 = run(flow, [s], 0)
        row1, e1 = run(flow, [filler] * 511 + [s], 511)
        assert e0 == e1 and np.array_equal(row0, row1), (s, e0, e1)
