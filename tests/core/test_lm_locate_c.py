"""Light's points down the point tree in C (core/compile/light/lm_locate_c.py,
runtime_c/compiler/point_locate.c) against Tree.locate, to the bit: the leaf and the touched flag of
random points, of points on the tree's planes and a hair off them, and of NaN, in the point trees
of sample scenes and maps and of hypothesis-made random trees; a tree of one leaf; a cycle, a child
past the last node and a plane outside the table refused; the kernel under ASan/UBSan (tests/c/locate_driver.c); and light's bake the same bytes through
either (tests/core/test_lm_rays.py bakes every page both ways)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brushbake.core.compile.light import lm_locate_c
from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.formats.loaders import load_scene
from brushbake.core.runtime.tree import Tree
from brushbake.core.tolerances import TOUCH_EPSILON

from sanitized import build_sanitized, run_sanitized

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _kernel_or_skip():
    if not lm_locate_c.BINDING.available():
        pytest.skip("the native library does not load here (no C compiler)")


def _points(tree: Tree, rng, n: int, lo, hi) -> np.ndarray:
    """Random points in the box; a third moved onto one of the tree's planes, and some of those a
    hair (around TOUCH_EPSILON) off it; one NaN."""
    pts = lo + rng.random((n, 3)) * (hi - lo)
    if len(tree.node_plane):
        k = n // 3
        pl = np.asarray(tree.node_plane)[rng.integers(0, len(tree.node_plane), k)]
        nn, d = np.asarray(tree.plane_normals)[pl], np.asarray(tree.plane_dists)[pl]
        pts[:k] -= (np.sum(pts[:k] * nn, axis=1) - d)[:, None] * nn
        off = rng.choice([0.0, 0.5, 0.999, 1.0, 1.001, 2.0], k) * TOUCH_EPSILON * rng.choice([-1.0, 1.0], k)
        pts[:k] += off[:, None] * nn
    pts[-1] = np.nan
    return pts


def _same(tree: Tree, pts: np.ndarray):
    want_leaf, want_touched = tree.locate(pts)
    leaf, touched = lm_locate_c.locate(tree, pts, "c")
    assert leaf.dtype == want_leaf.dtype and np.array_equal(leaf, want_leaf)
    assert touched.dtype == bool and np.array_equal(touched, want_touched)
    return want_touched


@pytest.mark.parametrize("name", ["sample_scenes/two_rooms.json", "sample_scenes/garage.json",
                                  "maps/ericw-tools/qbspfeatures.map", "maps/id/e1m7.map"])
def test_the_point_trees_of_scenes_and_maps(name):
    scene = load_scene(REPO / name)
    scene.hulls = []
    level = compile_scene(scene)
    tree = level.point_tree()
    lo, hi = np.asarray(level.world_bounds, dtype=np.float64)
    touched = _same(tree, _points(tree, np.random.default_rng(3), 30000, lo - 1.0, hi + 1.0))
    assert touched.sum() > 200  # the planes' points were met as touching


def _random_tree(rng, nodes: int, planes: int) -> Tree:
    """A random tree: node i's children are later nodes or leaves (so no cycle), planes random
    axial or slanted, some dists on whole numbers."""
    normals = rng.normal(size=(planes, 3))
    axial = rng.random(planes) < 0.5
    normals[axial] = np.eye(3)[rng.integers(0, 3, int(axial.sum()))]
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    dists = np.where(rng.random(planes) < 0.5, np.round(rng.normal(size=planes) * 4), rng.normal(size=planes) * 4)
    children = np.empty((nodes, 2), np.int64)
    for i in range(nodes):
        for s in range(2):
            children[i, s] = rng.integers(i + 1, nodes) if i + 1 < nodes and rng.random() < 0.6 \
                else -1 - rng.integers(0, nodes + 1)
    return Tree(normals, dists, rng.integers(0, planes, nodes).astype(np.int64), children,
                np.zeros(nodes + 1, bool))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), nodes=st.integers(0, 40), planes=st.integers(1, 12))
def test_random_trees(seed, nodes, planes):
    rng = np.random.default_rng(seed)
    tree = _random_tree(rng, nodes, planes)
    _same(tree, _points(tree, rng, 500, np.full(3, -8.0), np.full(3, 8.0)))


@pytest.mark.parametrize("plane, children", [
    ([0, 1], [[1, -1], [0, -2]]),  # 0 -> 1 -> 0 -> ...: a cycle
    ([0, 1], [[1, -1], [5, -2]]),  # a child past the last node
    ([0, 7], [[1, -1], [-2, -3]]),  # a plane outside the table
])
def test_what_is_not_a_tree_is_refused(plane, children):
    """A walk that meets a node or a plane outside its table, or goes round, is refused (Tree.locate
    would raise IndexError or never end), nothing read past the arrays (the sanitized test below)."""
    tree = Tree(np.eye(3), np.zeros(3), np.array(plane, np.int64), np.array(children, np.int64), np.zeros(3, bool))
    with pytest.raises(ValueError, match="do not form a tree"):
        lm_locate_c.locate(tree, np.array([[1.0, 1.0, 1.0], [-1.0, -1.0, -1.0]]), "c")


def test_numpy_backend_is_tree_locate(monkeypatch):
    tree = _random_tree(np.random.default_rng(5), 10, 4)
    called = []
    monkeypatch.setattr(lm_locate_c.BINDING, "library", lambda: called.append(1))
    leaf, _ = lm_locate_c.locate(tree, np.zeros((3, 3)), "numpy")
    assert not called and np.array_equal(leaf, tree.locate(np.zeros((3, 3)))[0])


@pytest.fixture(scope="module")
def sanitized_locate(tmp_path_factory):
    return build_sanitized(tmp_path_factory, "locate_driver", ["point_locate"])


@pytest.mark.parametrize("bad", ["", "cycle", "child", "plane"])
def test_sanitized_kernel_locates_as_tree_locate(sanitized_locate, tmp_path, bad):
    rng = np.random.default_rng(11)
    tree = _random_tree(rng, 30, 8)
    children = np.asarray(tree.node_children).copy()
    node_plane = np.asarray(tree.node_plane, np.int64).copy()
    if bad == "cycle":
        children[0] = [0, 0]  # the root its own child: every walk loops
    elif bad == "child":
        children[0] = [30, 31]  # past the last node
    elif bad == "plane":
        node_plane[0] = 8  # past the last plane
    pts = _points(tree, rng, 400, np.full(3, -8.0), np.full(3, 8.0))
    head = np.array([len(pts), tree.root, 30, 8], dtype=np.int64).tobytes() + np.float64(TOUCH_EPSILON).tobytes()
    (tmp_path / "in.bin").write_bytes(head + pts.tobytes() + node_plane.tobytes()
                                      + children.astype(np.int64).tobytes() + np.asarray(tree.plane_normals).tobytes()
                                      + np.asarray(tree.plane_dists).tobytes())
    run_sanitized(sanitized_locate, tmp_path)
    data = (tmp_path / "out.bin").read_bytes()
    code = int(np.frombuffer(data[:8], np.int64)[0])
    if bad:
        assert code == -2
        return
    leaf = np.frombuffer(data[8 : 8 + 8 * len(pts)], np.int64)
    touched = np.frombuffer(data[8 + 8 * len(pts):], np.uint8).astype(bool)
    want_leaf, want_touched = tree.locate(pts)
    assert code == 0 and np.array_equal(leaf, want_leaf) and np.array_equal(touched, want_touched)
