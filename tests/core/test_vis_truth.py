"""The ray ground truth of visibility (core/truth/vis_truth.py): seeded, symmetric, and the pairs
it reports are joined by segments that really hit nothing (checked again one by one)."""

from __future__ import annotations

import numpy as np

from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.truth.vis_truth import compare, ray_truth
from brushbake.core.model.brushes import box_brush
from brushbake.core.model.scene import Scene
from brushbake.core.runtime.query import point_leaves


def two_boxes():
    """Two closed hollow boxes side by side: nothing inside one can see into the other."""
    brushes = []
    for x0 in (0.0, 10.0):
        lo, hi = np.array([x0, 0, 0]), np.array([x0 + 6, 6, 6])
        for axis in range(3):
            for side in (0, 1):
                a, b = lo.copy(), hi.copy()
                if side:
                    a[axis] = hi[axis] - 0.5
                else:
                    b[axis] = lo[axis] + 0.5
                brushes.append(box_brush(tuple(a), tuple(b), f"w{x0}{axis}{side}"))
    brushes.append(box_brush((x0 - 7, 2, 0.5), (x0 - 6.5, 4, 5.5), "pillar"))  # inside the first box
    return compile_scene(Scene("boxes", brushes=brushes))


def leaf_clusters(level):
    empty = (level.leaf_solid & 1) == 0
    lc = np.full(level.num_leaves, -1, dtype=np.int64)
    lc[empty] = np.arange(int(empty.sum()))
    return lc


def test_truth_is_seeded_symmetric_and_real():
    level = two_boxes()
    lc = leaf_clusters(level)
    t1 = ray_truth(level, lc, clear_segments=20000, seed=3)
    t2 = ray_truth(level, lc, clear_segments=20000, seed=3)
    assert (t1.pairs == t2.pairs).all() and t1.segments_clear >= 20000
    m = t1.matrix()
    assert (m == m.T).all()
    # a room's inside never sees the other room's inside
    inside = lambda x: lc[point_leaves(level, np.array([[x, 3.0, 3.0]]))][0]
    a, b = inside(3.0), inside(13.0)
    assert a >= 0 and b >= 0 and not m[a, b]
    assert m[a, a]
    # no pair joins a leaf inside a room to a leaf outside it (the walls are closed)
    b = level.leaf_bounds
    for x0 in (0.0, 10.0):
        inner = np.all(b[:, 0] >= [x0 + 0.5 - 1e-9, 0.5 - 1e-9, 0.5 - 1e-9], axis=1) & \
            np.all(b[:, 1] <= [x0 + 5.5 + 1e-9, 5.5 + 1e-9, 5.5 + 1e-9], axis=1) & (lc >= 0)
        ids = np.zeros(len(m), bool)
        ids[lc[inner]] = True
        assert ids.any()
        assert not m[ids][:, ~ids].any()
    res = compare(np.ones_like(m), t1)
    assert res["misses"] == 0 and res["pairs_in_pvs"] >= res["pairs_joined"]
    res = compare(np.eye(len(m), dtype=bool), t1)
    assert res["misses"] == res["pairs_joined"] > 0
