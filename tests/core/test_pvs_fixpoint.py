"""The full flow ends at a fixpoint (core/compile/vis/pvs_merged.py): every state was last expanded with
its final pass polygon and might set, so expanding every state once more, with the final rows as
the 'more' test's seen sets, finds no cluster its source's row lacks and grows no state.  A flow
that forgets to expand a state again after it grows (its children then miss the lines through the
part it grew by) fails this, on any scene where states grow more than once; the ray ground truth
(test_pvs_maps.py) catches such a flow only where a random segment happens to pass there."""

from pathlib import Path

import numpy as np
import pytest

from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.compile.vis.portals import build_portals
from brushbake.core.compile.vis.pvs_flow import fast_vis
from brushbake.core.compile.vis.pvs_merged import STATE_BATCH, _Flow, _Wave
from brushbake.core.compile.vis.vis import inner_directed_portals, void_reachable
from brushbake.core.formats.loaders import load_scene

MAPS = Path(__file__).resolve().parents[2] / "maps"


def flow_of(path: Path):
    level = compile_scene(load_scene(path))
    portals = build_portals(level)
    outside = void_reachable(portals)
    dp, _, _ = inner_directed_portals(portals, None if outside.all() else outside)
    return dp, fast_vis(dp)[0]


@pytest.mark.parametrize("name", ["ericw-tools/light_general.map", "librequake/lq_e0m3.map"])
def test_every_state_is_at_its_fixpoint_when_the_flow_ends(name):
    path = MAPS / name
    dp, flood = flow_of(path)
    flow = _Flow(dp, flood, None)
    order = np.argsort(flood.sum(axis=1), kind="stable")
    wave = _Wave(flow, order[:: max(1, len(order) // 64)])  # 64 sources, small floods to large
    wave.run()
    grown = wave.grown[: wave.used]
    assert (grown >= 2).sum() > 0.05 * len(grown)  # states that grew more than once: the point
    seen = wave.viscl.copy()
    h, might = wave.h[: wave.used].copy(), wave.might[: wave.used].copy()
    wave.have = np.packbits(seen, axis=1, bitorder="little")
    w, q = np.nonzero(wave.slot >= 0)
    wave._pending = []
    for i in range(0, len(w), STATE_BATCH):
        wave._expand(w[i: i + STATE_BATCH], q[i: i + STATE_BATCH])
    nw, nq = wave._grow()
    assert len(nw) == 0, f"{len(nw)} states grow when expanded again"
    assert np.array_equal(wave.viscl, seen)
    assert np.array_equal(wave.h[: len(h)], h) and np.array_equal(wave.might[: len(might)], might)
