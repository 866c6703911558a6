"""The onion BSP (core/onion.py through compile_scene) against independent answers.

For every sample scene and the onion maps (tests/core/onion_truth.py ONION_MAPS), and every hull:
- the onion tree's bit h at random points equals the separate map tree of space h (the
  article's Listing 3 classifiers, rebuilt per hull) and the brute-force box-overlap truth
  (separating axes against every colliding brush: solid, detail, and clip for box hulls), with
  zero disagreements outside BAND; 100,000 points per hull, 60% uniform in the scene's reach
  and 40% near the configuration-space surfaces (pushed off by 1e-4 .. 0.3 m);
- bit 0 of the onion tree equals the point tree (the point hull: clip brushes let points by);
- the level's bookkeeping: hull names, collision_tree, the stats the command line prints.
Hypothesis: random brush sets (grid boxes with shared planes, wedges, random polytopes; solid,
detail, clip and non-solid) with 1 to 3 random hulls.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

import onion_truth as ot
from brushbake.core.model.brushes import Contents, box_brush, brush_from_planes
from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.errors import BrushbakeError, UnknownHullError
from brushbake.core.runtime.query import point_solid
from brushbake.core.model.scene import Hull, Scene

POINTS_PER_HULL = 100_000
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)


@pytest.fixture(scope="session")
def compiled():
    return lambda path: ot.load_compiled(str(path))


def sample_points(reach_lo, reach_hi, mink: ot.MinkowskiScene, n: int, rng) -> np.ndarray:
    """60% uniform in the reach of the hull (scene bounds grown by the box), 40% on the
    configuration-space surfaces pushed along the facet normal by +-1e-4 .. 0.3 m."""
    n_uniform = int(0.6 * n)
    lo, hi = reach_lo - 0.5, reach_hi + 0.5
    uniform = lo + rng.random((n_uniform, 3)) * (hi - lo)
    on, nrm, _, _ = mink.face_points(n - n_uniform, rng)
    off = np.where(rng.random(len(on)) < 0.5, -1.0, 1.0) * np.exp(rng.uniform(np.log(1e-4), np.log(0.3), len(on)))
    return np.concatenate([uniform, on + off[:, None] * nrm])


def check_hull(level, tree_answer_sources: dict, sat: ot.SatScene, pts: np.ndarray, label: str) -> list[str]:
    """Every source's answer vs the separating-axis truth outside the band; returns problems."""
    truth, judged = sat.classify(pts)
    problems = []
    if judged.mean() < 0.97:
        problems.append(f"{label}: only {judged.mean():.2%} of the points are outside the band")
    if not (truth[judged].mean() > 0.05 and (~truth[judged]).mean() > 0.05):
        problems.append(f"{label}: the judged points are {truth[judged].mean():.1%} solid; both answers must be common")
    for name, answer in tree_answer_sources.items():
        bad = np.flatnonzero(judged & (answer.astype(bool) != truth))
        if len(bad):
            problems.append(f"{label}: {name} disagrees with the box-overlap truth at {len(bad)} of "
                            f"{int(judged.sum())} points, e.g.")
            problems += [f"  {pts[i].tolist()} truth {'solid' if truth[i] else 'empty'}, {name} "
                         f"{'solid' if answer[i] else 'empty'}" for i in bad[:5]]
    return problems


def scene_reach(scene, h_box):
    mins, maxs = h_box
    b = scene.bounds
    return b[0] - maxs, b[1] - mins


@pytest.mark.parametrize("path", ot.scene_paths(), ids=lambda p: p.name)
def test_onion_leaves_match_map_trees_and_brute_force(path, compiled):
    os_ = compiled(path)
    level = os_.level
    trees = ot.map_trees_of(os_)
    n_hulls = len(os_.hulls) + 1
    assert level.has_onion and len(trees) == n_hulls and level.hull_names == ["point"] + [h.name for h in os_.hulls]
    problems = []
    for h in range(n_hulls):
        rng = np.random.default_rng(ot.seed_of("onion", path.name, h))
        box = ot.hull_box(os_, h)
        pts = sample_points(*scene_reach(os_.scene, box), ot.mink_scene(os_, h), POINTS_PER_HULL, rng)
        onion = point_solid(level.onion_tree(), pts, h)
        answers = {"onion tree": onion, f"map tree {h}": point_solid(trees[h], pts, 0)}
        if h == 0:
            answers["point tree"] = point_solid(level, pts, 0)
        else:
            answers["point_solid(level, hull)"] = point_solid(level, pts, h)
        problems += check_hull(level, answers, ot.sat_scene(os_, h), pts, f"{path.name} hull {h}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", ot.scene_paths(), ids=lambda p: p.name)
def test_level_bookkeeping_and_tree_sizes(path, compiled):
    """The numbers the command line prints, against the trees themselves; the onion vs separate
    map trees figures are printed (pytest -s) and reported in the onion issue."""
    os_ = compiled(path)
    level, stats = os_.level, os_.level.stats
    trees = ot.map_trees_of(os_)
    onion = level.onion_tree()
    assert stats["onion_nodes"] == onion.num_nodes
    assert stats["onion_leaves"] == onion.num_leaves == len(level.onion_leaf_solid)
    assert stats["hulls"] == len(os_.hulls)
    assert level.collision_tree(0).num_nodes == level.num_nodes
    for h in range(1, len(os_.hulls) + 1):
        assert level.collision_tree(h).num_nodes == onion.num_nodes
    with pytest.raises(UnknownHullError, match="its hulls are: 0 point"):  # typed, listing the hulls (issue 20)
        level.collision_tree(len(os_.hulls) + 1)
    # leaf bits only use the hulls there are
    assert int(np.max(level.onion_leaf_solid)) < (1 << (len(os_.hulls) + 1))
    for h in range(len(os_.hulls) + 1):  # every hull has solid and empty leaves
        bits = (level.onion_leaf_solid >> h) & 1
        assert bits.any() and not bits.all(), (path.name, h)
    separate = sum(t.num_nodes for t in trees)
    print(f"\n{path.name}: onion {onion.num_nodes} nodes / {onion.num_leaves} leaves; separate map trees "
          f"{[t.num_nodes for t in trees]} = {separate} nodes; ratio {onion.num_nodes / separate:.2f}")


@pytest.mark.parametrize("name", ["two_rooms.json", "cornell_box.json", "staircase.json"])
def test_listing_3_verbatim_gives_the_same_onion(name):
    """compile_onion's two ways to a leaf's bits (default: the point tested against the space's
    expanded brushes; Settings.onion_map_trees: Listing 3 verbatim, classified in a map tree
    per space) give the same tree and the same bits, and the map trees it builds are the ones
    rebuilt here."""
    import copy

    os_ = ot.load_compiled(str(ot.SAMPLES_DIR / name))
    scene = copy.deepcopy(os_.scene)
    scene.settings.onion_map_trees = True
    verbatim = compile_scene(scene)
    a, b = os_.level, verbatim
    assert np.array_equal(a.onion_node_plane, b.onion_node_plane)
    assert np.array_equal(a.onion_node_children, b.onion_node_children)
    assert np.array_equal(a.onion_leaf_solid, b.onion_leaf_solid)
    assert b.stats["map_tree_nodes"] == [t.num_nodes for t in ot.map_trees_of(os_)]
    assert b.stats["separate_tree_nodes"] == sum(t.num_nodes for t in ot.map_trees_of(os_))


def test_listing_4_fallback_finds_points_in_every_leaf(monkeypatch):
    """Regression: leaf_points fell back to arbitrary_leaf_point (Listing 4) without the plane
    table, so any leaf whose fast probe failed crashed the compile with AttributeError
    ('NoneType' object has no attribute 'normals'); q1_mountain.map with the stand and crouch
    hulls hit it.  Here every probe is made to fail (step 0: on the face itself, no margin), so
    every leaf takes Listing 4; the onion must still match the brute force."""
    import brushbake.core.compile.trees.onion as onion

    monkeypatch.setattr(onion, "PROBE_STEPS", (0.0,))
    brushes = [box_brush((0, 0, 0), (4, 4, 1), "floor"), box_brush((1, 1, 1), (2, 2, 3), "pillar"),
               brush_from_planes([[-1, 0, 1], [1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, -1]], [-2, 4, 4, 0, -1], "ramp"),
               box_brush((0, 3, 1), (4, 3.25, 2), "rail", Contents.CLIP)]
    hulls = [Hull("a", (-0.25, -0.25, -0.5), (0.25, 0.25, 0.5)), Hull("b", (-0.5, -0.25, 0.0), (0.25, 0.5, 1.0))]
    level = compile_scene(Scene("fallback", brushes=brushes, hulls=hulls))
    assert level.stats["leaf_point_fallbacks"] == level.onion_tree().num_leaves
    problems = []
    fake = ot.OnionScene(None, Scene("fallback", brushes=brushes, hulls=hulls), level, None, hulls)
    rng = np.random.default_rng(4)
    for h in range(len(hulls) + 1):
        lo, hi = scene_reach(fake.scene, ot.hull_box(fake, h))
        pts = sample_points(lo, hi, ot.mink_scene(fake, h), 20000, rng)
        problems += check_hull(level, {"onion": point_solid(level.onion_tree(), pts, h)}, ot.sat_scene(fake, h),
                               pts, f"hull {h}")
    assert not problems, "\n".join(problems)


def test_clip_brushes_block_box_hulls_only_and_nonsolid_blocks_nothing():
    lo_box = Hull("small", (-0.25, -0.25, -0.25), (0.25, 0.25, 0.25))
    scene = Scene("clip", brushes=[box_brush((0, 0, 0), (1, 1, 1), "clip", Contents.CLIP),
                                   box_brush((3, 0, 0), (4, 1, 1), "water", Contents.NONSOLID),
                                   box_brush((6, 0, 0), (7, 1, 1), "wall", Contents.SOLID)], hulls=[lo_box])
    level = compile_scene(scene)
    pts = np.array([[0.5, 0.5, 0.5], [3.5, 0.5, 0.5], [6.5, 0.5, 0.5], [1.2, 0.5, 0.5], [1.3, 0.5, 0.5]])
    assert point_solid(level, pts, 0).tolist() == [0, 0, 1, 0, 0]
    assert point_solid(level, pts, 1).tolist() == [1, 0, 1, 1, 0]
    assert point_solid(level.onion_tree(), pts, 0).tolist() == [0, 0, 1, 0, 0]


def test_a_leaf_can_be_empty_for_crouch_and_solid_for_stand():
    """The article's low tunnel: one onion leaf, two answers."""
    os_ = ot.load_compiled(str(ot.SAMPLES_DIR / "low_tunnel.json"))
    level = os_.level
    names = level.hull_names
    stand, crouch = names.index("stand"), names.index("crouch")
    p = np.array([[8.25, 3.0, 0.875]])  # tunnel middle, crouch height
    assert point_solid(level, p, crouch)[0] == 0 and point_solid(level, p, stand)[0] == 1
    assert point_solid(level, p, 0)[0] == 0


# --------------------------------------------------------------------------------------------
# Hypothesis: random brush sets and 1-3 hulls

grid = st.integers(-6, 6).map(lambda k: k * 0.25)
extent = st.integers(1, 6).map(lambda k: k * 0.25)
CONTENTS = [Contents.SOLID] * 4 + [Contents.DETAIL] * 2 + [Contents.CLIP] * 2 + [Contents.NONSOLID]


@st.composite
def scene_brushes(draw):
    out = []
    for i in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["box", "box", "wedge", "polytope"]))
        contents = draw(st.sampled_from(CONTENTS))
        lo = np.array([draw(grid) for _ in range(3)])
        size = np.array([draw(extent) for _ in range(3)])
        if kind == "box":
            out.append(box_brush(lo, lo + size, f"b{i}", contents))
            continue
        if kind == "wedge":
            n = np.vstack([np.eye(3), -np.eye(3), [-1.0, 0.0, 1.0]])
            d = np.concatenate([lo + size, -lo, [-lo[0] + lo[2]]])
        else:
            seed = draw(st.integers(0, 2**31))
            r = np.random.default_rng(seed)
            dirs = r.normal(size=(draw(st.integers(6, 12)), 3))
            dirs /= np.linalg.norm(dirs, axis=1)[:, None]
            n = np.vstack([np.eye(3), -np.eye(3), dirs])
            c = lo + size / 2
            d = n @ c + np.concatenate([size / 2, size / 2, r.uniform(0.3, 1.0, len(dirs)) * size.min()])
        try:
            out.append(brush_from_planes(n, d, f"b{i}", contents))
        except BrushbakeError:
            assume(False)
    return out


q = st.integers(1, 24).map(lambda k: k / 32)


@st.composite
def hull_sets(draw):
    hulls = []
    for i in range(draw(st.integers(1, 3))):
        mins = tuple(-draw(q) for _ in range(3))
        maxs = tuple(draw(q) for _ in range(3))
        hulls.append(Hull(f"h{i}", mins, maxs))
    return hulls


def random_scene_problems(brushes, hulls, seed, n_points=3000, settings=None) -> list[str]:
    scene = Scene("random", brushes=list(brushes), hulls=list(hulls))
    if settings is not None:
        scene.settings = settings
    level = compile_scene(scene)
    trees = ot.build_map_trees(scene)
    fake = ot.OnionScene(None, scene, level, trees, list(hulls))
    problems = []
    rng = np.random.default_rng(seed)
    for h in range(len(hulls) + 1):
        box = ot.hull_box(fake, h)
        sat = ot.sat_scene(fake, h)
        lo, hi = scene_reach(scene, box)
        pts = lo - 0.5 + rng.random((n_points, 3)) * (hi - lo + 1.0)
        if len(sat):
            pts = np.concatenate([pts, sample_points(lo, hi, ot.mink_scene(fake, h), n_points, rng)])
        truth, judged = sat.classify(pts)
        answers = {"onion": point_solid(level.onion_tree(), pts, h), "map tree": point_solid(trees[h], pts, 0),
                   "level": point_solid(level, pts, h)}
        if judged.mean() < 0.9:
            problems.append(f"hull {h}: only {judged.mean():.1%} judged")
        for name, a in answers.items():
            bad = np.flatnonzero(judged & (a.astype(bool) != truth))
            if len(bad):
                problems.append(f"hull {h} {box}: {name} disagrees at {len(bad)} points, e.g. "
                                f"{pts[bad[0]].tolist()} truth {bool(truth[bad[0]])}")
    return problems


@settings(max_examples=20, deadline=None, derandomize=True, phases=NO_SHRINK,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(brushes=scene_brushes(), hulls=hull_sets(), seed=st.integers(0, 2**31))
def test_random_scenes_onion_matches_map_trees_and_truth(brushes, hulls, seed):
    problems = random_scene_problems(brushes, hulls, seed)
    assert not problems, "\n".join(problems)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31), bounding=st.integers(4, 60), redundant=st.integers(0, 120))
def test_listing_4_finds_a_point_inside_a_deep_leaf(seed, bounding, redundant):
    """arbitrary_leaf_point clips one ancestor at a time: a cell cut by many planes (some bounding
    it, most passing it by, in any order) still gets a point strictly inside every plane."""
    from brushbake.core.compile.trees.onion import arbitrary_leaf_point

    rng = np.random.default_rng(seed)
    centre = rng.uniform(-5, 5, 3)
    n = rng.normal(size=(bounding + redundant, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    reach = np.concatenate([rng.uniform(0.5, 2.0, bounding), rng.uniform(3.0, 9.0, redundant)])
    order = rng.permutation(len(n))
    normals, dists = -n[order], -(n[order] @ centre + reach[order])  # the leaf on each plane's front
    point = arbitrary_leaf_point((), np.array([[-20.0] * 3, [20.0] * 3]), normals=normals, dists=dists)
    assert np.all(normals @ point - dists > 1e-3)
