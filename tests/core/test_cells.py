"""Leaf cells (core/compile/trees/cells.py), the one walk the bevel stage and the add-on's overlays share:
the cells tile the box (volumes add up to it), each lies in its own leaf (its centroid is located
there by the tree's own point query, an independent walk), faces are outward and convex, and only
the wanted cells are built.  Against a brute-force check: points sampled in the box land in the
leaf whose cell contains them (every face's plane has them behind it)."""

from __future__ import annotations

import numpy as np
import pytest

from brushbake.core.compile.trees.cells import box_polytope, tree_cells, unique_points
from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.formats.loaders import load_scene
from brushbake.core.runtime.query import point_leaves


def volume(faces) -> float:
    """Divergence theorem over outward faces (fan triangles from the first vertex)."""
    total = 0.0
    for _, poly in faces:
        a = poly[0]
        for b, c in zip(poly[1:-1], poly[2:]):
            total += float(np.dot(a, np.cross(b, c))) / 6.0
    return total


def inside(faces, p, eps=1e-9) -> np.ndarray:
    """(M,) bool: points behind every face's plane (Newell normal, through the face's centroid)."""
    ok = np.ones(len(p), bool)
    for _, poly in faces:
        n = np.cross(poly[1:] - poly[0], np.roll(poly, -1, axis=0)[1:] - poly[0]).sum(axis=0)
        n /= np.linalg.norm(n)
        ok &= p @ n - n @ poly.mean(axis=0) <= eps
    return ok


def test_unique_points_keeps_the_first_of_each_grid_cell_in_order():
    p = np.array([[0.0, 0, 0], [1, 0, 0], [1e-8, 0, 0], [0, 1, 0], [1, 2e-8, 0]])
    assert np.array_equal(unique_points(p), p[[0, 1, 3]])


def test_box_polytope_is_outward():
    faces = box_polytope([0, 0, 0], [1, 2, 3])
    assert volume(faces) == pytest.approx(6.0)
    assert [t for t, _ in faces] == [-1, -2, -3, -4, -5, -6]


@pytest.mark.parametrize("name", ["q1_rocks.map", "slope.map"])
def test_cells_tile_the_box_and_lie_in_their_leaves(map_named, name):
    level = compile_scene(load_scene(map_named(name)))
    lo, hi = level.world_bounds[0] - 1.0, level.world_bounds[1] + 1.0
    cells = {-1 - code: faces for code, faces, _ in tree_cells(level, lo, hi)}
    vols = {leaf: volume(f) for leaf, f in cells.items()}
    assert min(vols.values()) > 0
    assert sum(vols.values()) == pytest.approx(float(np.prod(hi - lo)), rel=1e-9)
    leaves = list(cells)
    centroids = np.array([np.concatenate([p for _, p in cells[k]]).mean(axis=0) for k in leaves])
    assert np.array_equal(point_leaves(level, centroids), np.array(leaves))
    # random points: the leaf the tree puts them in is the cell that contains them
    rng = np.random.default_rng(5)
    pts = lo + rng.random((3000, 3)) * (hi - lo)
    found = point_leaves(level, pts)
    for leaf in np.unique(found).tolist():
        mine = pts[found == leaf]
        assert inside(cells[leaf], mine, eps=1e-6).all(), leaf


def test_only_wanted_cells_are_built_and_chains_orient_outward(map_named):
    level = compile_scene(load_scene(map_named("q1_rocks.map")))
    lo, hi = level.world_bounds[0] - 1.0, level.world_bounds[1] + 1.0
    solid = (level.leaf_solid & 1).astype(bool)
    every = {code: (faces, chain) for code, faces, chain in tree_cells(level, lo, hi)}
    some = {code: (faces, chain) for code, faces, chain in tree_cells(level, lo, hi, leaves=solid)}
    assert sorted(-1 - c for c in some) == sorted(np.flatnonzero(solid).tolist())
    for code, (faces, chain) in some.items():
        assert len(faces) == len(every[code][0]) and chain == every[code][1]
        assert all(np.array_equal(a[1], b[1]) for a, b in zip(faces, every[code][0]))
        verts = np.concatenate([p for _, p in faces])
        n, d = level.plane_normals[chain], level.plane_dists[chain]
        assert (verts @ n.T - d <= 1e-6).all()  # every ancestor's plane, oriented outward, has the cell behind it
    nodes = {code for code, _, _ in tree_cells(level, lo, hi, nodes=True) if code >= 0}
    assert nodes == set(range(level.num_nodes))


@pytest.mark.parametrize("name", ["q1_rocks.map", "slope.map", "e1m7.map"])
def test_cells_are_the_one_polytope_at_a_time_walk_bit_for_bit(map_named, name):
    """tree_cells splits a whole depth of the tree at once; tests/core/cells_reference.py splits
    one polytope at a time, face by face.  Same cells, same order, same faces, same floats (and
    signs of zero): the bevel stage's answers depend on them."""
    from cells_reference import tree_cells_reference

    level = compile_scene(load_scene(map_named(name)))
    lo, hi = level.world_bounds[0] - 1.0, level.world_bounds[1] + 1.0
    solid = (level.leaf_solid & 1).astype(bool)
    for kwargs in ({}, {"leaves": solid}, {"nodes": True}, {"leaves": ~solid, "nodes": True}):
        new = list(tree_cells(level, lo, hi, **kwargs))
        old = list(tree_cells_reference(level, lo, hi, **kwargs))
        assert [c for c, _, _ in new] == [c for c, _, _ in old]
        for (_, fa, ca), (_, fb, cb) in zip(new, old):
            assert ca == cb and [t for t, _ in fa] == [t for t, _ in fb]
            for (_, va), (_, vb) in zip(fa, fb):
                assert va.shape == vb.shape and np.array_equal(va, vb)
                assert np.array_equal(np.signbit(va), np.signbit(vb))
