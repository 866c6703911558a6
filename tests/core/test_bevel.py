"""Bevels (Melax section 5): the beveled tree answers points exactly as the plain tree, its extra
nodes hang under solid leaves, and bevels remove the 'invisible wall' above a sharp ridge."""

from __future__ import annotations

import numpy as np
import pytest

from brushbake.core.bevel import BevelSettings, bevel_tree, corner_reach
from brushbake.core.brushes import box_brush, brush_from_planes
from brushbake.core.compile import compile_scene
from brushbake.core.query import point_solid
from brushbake.core.scene import Scene
from brushbake.core.shift import ShiftTree, Sphere


def ridge_scene() -> Scene:
    """A floor and on it a sharp ridge along x: apex at z = 2, faces 10 degrees off vertical."""
    s = np.sin(np.radians(80.0))
    c = np.cos(np.radians(80.0))
    planes = [((0, s, c), 2 * c), ((0, -s, c), 2 * c), ((0, 0, -1), 0.0), ((1, 0, 0), 4.0), ((-1, 0, 0), 0.0)]
    ridge = brush_from_planes([np.array(n, float) for n, _ in planes], [d for _, d in planes], "ridge")
    floor = box_brush((-2, -4, -1), (6, 4, 0), "floor")
    return Scene("ridge", brushes=[floor, ridge])


@pytest.fixture(scope="module")
def ridge_level():
    return compile_scene(ridge_scene())


def test_points_answer_as_before(levels, sample_paths, map_named):
    rng = np.random.default_rng(3)
    for path in [p for p in sample_paths if p.name in ("staircase.json", "low_tunnel.json")] + [map_named("q1_rocks.map")]:
        level = levels.get(path).level
        for settings in (BevelSettings(), BevelSettings(angle=120.0), BevelSettings(axial=False)):
            beveled = bevel_tree(level, level.world_bounds, settings)
            lo, hi = level.world_bounds
            pts = lo + rng.random((50000, 3)) * (hi - lo)
            assert np.array_equal(point_solid(level, pts), point_solid(beveled.tree(), pts)), path.name
            st = beveled.stats
            assert st["plain_nodes"] == level.num_nodes and st["beveled_nodes"] == len(beveled.node_plane)
            # the plain tree is kept as is, bevel nodes come after it and children are later nodes
            assert np.array_equal(beveled.node_plane[: level.num_nodes], level.node_plane)
            ch = beveled.node_children.astype(np.int64)
            assert np.all((ch < 0) | (ch > np.arange(len(ch))[:, None]))
            assert np.array_equal(beveled.leaf_solid[: level.num_leaves], level.leaf_solid)
            assert not beveled.leaf_solid[level.num_leaves:].any()
            p = len(beveled.plane_dists)
            assert np.array_equal(beveled.plane_normals[1::2], -beveled.plane_normals[0::2])
            assert np.allclose(np.linalg.norm(beveled.plane_normals, axis=1), 1.0)
            assert p >= len(level.plane_dists)


def test_square_cells_get_no_edge_bevels():
    level = compile_scene(Scene("box", brushes=[box_brush((0, 0, 0), (2, 2, 2), "b")]))
    st = bevel_tree(level, level.world_bounds).stats
    assert st["edge_bevels"] == 0 and st["vertex_bevels"] == 0


def test_corner_reach():
    assert corner_reach(np.eye(3)) == pytest.approx(np.sqrt(3))
    assert corner_reach(np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [-1, 0, 0]], float)) < 1.01 + np.sqrt(2)


def test_invisible_wall_above_a_ridge_and_bevels_remove_it(ridge_level):
    plain = ridge_level.point_tree()
    beveled = bevel_tree(ridge_level, ridge_level.world_bounds)
    assert beveled.stats["edge_bevels"] + beveled.stats["axial_bevels"] + beveled.stats["flat_top_bevels"] > 0
    sphere = Sphere(0.25)
    # a sphere gliding along y, its lowest point 0.25 m above the ridge's apex (z = 2): nothing touches
    start, end = (2.0, -3.0, 2.5), (2.0, 3.0, 2.5)
    wall = ShiftTree(plain).hit_check(sphere, start, end)
    assert wall.hit and 0.3 < wall.t < 0.7  # shifted planes meet 0.25 / cos(80) = 1.44 m above the apex
    assert not ShiftTree(beveled.tree()).hit_check(sphere, start, end).hit
    # a sphere that does touch the ridge is still stopped, at the apex's height
    low = ShiftTree(beveled.tree()).hit_check(sphere, (2.0, -3.0, 2.2), (2.0, 3.0, 2.2))
    assert low.hit
