"""Shooter groups (core/compile/light/lm_groups.py) against their truths:

- the groups of a round partition its shooters (each shooter under exactly one root, once) and
  shoot exactly their power; a group's radius reaches every member polygon's vertex;
- the walk's links and patch pairs are those of a brute-force walk (every (root, receiver) pair
  followed down one at a time by the stated rule);
- the C walk (lm_groups_c) gives the NumPy walk's arrays to the bit, on the blocks of two sample
  scenes and on random groups (hypothesis);
- the bounce with groups against the bounce with every (shooter, receiver) pair traced (no cutoff,
  no groups: the reference), on a real map: the light within 1% on average per patch, in total
  closer than the per-patch cutoff alone (which drops the small shots of far patches: 27% of
  slope.map's bounce before groups)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_lm_pairs import _world

from brushbake.core.compile.light import lightmap, lm_radiosity
from brushbake.core.compile.light.lm_groups import GroupStep, build_groups, links, patch_radius
from brushbake.core.compile.light.lm_radiosity import _cluster_groups
from brushbake.core.compile.pipeline import bake_scene
from brushbake.core.formats.loaders import load_scene
from brushbake.core.tolerances import BOUNCE_CUTOFF, BOUNCE_GROUP_FAR

REPO = Path(__file__).resolve().parents[2]
SCENES = [("sample_scenes/two_rooms.json", "fast"), ("sample_scenes/garage.json", "none")]


def _round(world, seed: int):
    """A round's shooters (a random subset of the live patches) and unshot radiance."""
    rng = np.random.default_rng(seed)
    live = np.flatnonzero((world.count > 0) & (world.area > 0))  # a shooter has power: area x unshot > 0
    unshot = np.zeros((len(world.area), 3))
    unshot[live] = rng.random((len(live), 3)) ** 3
    shooters = np.sort(rng.choice(live, max(1, (2 * len(live)) // 3), replace=False))
    return shooters, unshot


def _leaves(groups, node: int) -> list[int]:
    if node < groups.n_patches:
        return [node]
    g = node - groups.n_patches
    out = []
    for child in groups.children[groups.child_first[g]: groups.child_first[g + 1]].tolist():
        out += _leaves(groups, child)
    return out


@pytest.mark.parametrize("name, vis", SCENES)
def test_groups_partition_the_shooters_and_shoot_their_power(name, vis):
    world, _ = _world(name, vis)
    shooters, unshot = _round(world, 3)
    groups = build_groups(world, shooters, unshot, patch_radius(world))
    P = groups.n_patches
    under = [p for root in groups.root_node.tolist() for p in _leaves(groups, root)]
    assert sorted(under) == shooters.tolist()  # each shooter once
    assert len(groups.area) > 10 and np.all(np.diff(groups.child_first) >= 2)  # real groups, none of one member
    power = (world.area[shooters, None] * unshot[shooters]).sum(axis=0)
    roots = groups.root_node
    root_area = np.where(roots < P, world.area[np.minimum(roots, P - 1)], groups.area[np.maximum(roots - P, 0)])
    root_unshot = np.where((roots < P)[:, None], unshot[np.minimum(roots, P - 1)], groups.unshot[np.maximum(roots - P, 0)])
    assert np.allclose((root_area[:, None] * root_unshot).sum(axis=0), power, rtol=1e-12)
    for g in range(len(groups.area)):
        members = _leaves(groups, P + g)
        assert len({int(world.face[m]) for m in members}) == 1 and len({int(world.cluster[m]) for m in members}) == 1
        verts = np.concatenate([world.verts[m, : world.count[m]] for m in members])
        assert np.sqrt(((verts - groups.centroid[g]) ** 2).sum(axis=1)).max() <= groups.radius[g] * (1 + 1e-12)
        assert np.allclose(groups.area[g], world.area[members].sum(), rtol=1e-12)


def _brute_links(world, groups, roots, receivers, cutoff, far, patch_strength):
    """Every (root, receiver) pair followed down alone, by the rules in GroupStep's docstring."""
    P = groups.n_patches
    strength = groups.unshot.max(axis=1)
    links_, leaves = set(), set()
    for root in roots.tolist():
        for r in receivers.tolist():
            todo = [root]
            while todo:
                v = todo.pop()
                if v < P:
                    rel = world.point[r] - world.centroid[v]
                    front, above = float(world.normal[v] @ rel), -float(world.normal[r] @ rel)
                    d2, a = max(float(rel @ rel), 1e-12), float(world.area[v])
                    near = d2 < 16.0 * a and front > 0 and above > -math.sqrt(a)
                    f = max(front, 0.0) * max(above, 0.0) * a / math.pi / d2 / d2
                    if (f * patch_strength[v] >= cutoff or near) and v != r:
                        leaves.add((v, r))
                    continue
                g = v - P
                rel = world.point[r] - groups.centroid[g]
                front, above = float(groups.normal[g] @ rel), -float(world.normal[r] @ rel)
                d2, rad = float(rel @ rel), float(groups.radius[g])
                if not (front > 0 and above > -rad):
                    continue
                if d2 >= (far * rad) ** 2:
                    f = front * max(above, 0.0) * groups.area[g] / math.pi / d2 / d2
                    if f * strength[g] >= cutoff:
                        links_.add((v, r))
                    continue
                todo += groups.children[groups.child_first[g]: groups.child_first[g + 1]].tolist()
    return links_, leaves


@pytest.mark.parametrize("name, vis", SCENES)
def test_the_walk_links_what_a_pair_by_pair_walk_links(name, vis):
    world, see = _world(name, vis)
    shooters, unshot = _round(world, 5)
    groups = build_groups(world, shooters, unshot, patch_radius(world))
    rng = np.random.default_rng(1)
    checked = 0
    for mine, receivers in itertools.islice(_cluster_groups(world, shooters, see), 3):
        roots = groups.roots_of(int(world.cluster[mine[0]])) if see is not None else groups.root_node
        receivers = np.sort(rng.choice(receivers, min(60, len(receivers)), replace=False))
        strength = unshot.max(axis=1)
        for cutoff in (BOUNCE_CUTOFF, 1e-3):
            (gn, gr, gf), (ls, lr, _, _) = links(world, groups, roots, receivers, cutoff, BOUNCE_GROUP_FAR, strength,
                                                 chunk=500)
            want_links, want_leaves = _brute_links(world, groups, roots, receivers, cutoff, BOUNCE_GROUP_FAR, strength)
            assert set(zip(gn.tolist(), gr.tolist())) == want_links and len(gn) == len(want_links)
            assert set(zip(ls.tolist(), lr.tolist())) == want_leaves and len(ls) == len(want_leaves)
            checked += len(gn)
    assert checked > 50


def _kernel_or_skip():
    from brushbake.core.compile.light import lm_groups_c

    if not lm_groups_c.available():
        pytest.skip("the native library does not load here (no C compiler)")
    return lm_groups_c.GroupKernel


def _same(got, want):
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.tobytes() == w.tobytes()


@pytest.mark.parametrize("name, vis", SCENES)
def test_c_walk_equals_numpy_to_the_bit(name, vis):
    kernel_of = _kernel_or_skip()
    world, see = _world(name, vis)
    shooters, unshot = _round(world, 7)
    groups = build_groups(world, shooters, unshot, patch_radius(world))
    total = near = 0
    strength = unshot.max(axis=1)
    for far, cutoff in ((BOUNCE_GROUP_FAR, BOUNCE_CUTOFF), (2.0, 1e-3), (12.0, 1e-9)):
        kernel = kernel_of(world, groups, cutoff, far, strength)
        for mine, receivers in _cluster_groups(world, shooters, see):
            roots = groups.roots_of(int(world.cluster[mine[0]])) if see is not None else groups.root_node
            got = links(world, groups, roots, receivers, cutoff, far, strength, kernel, chunk=4000)
            want = links(world, groups, roots, receivers, cutoff, far, strength, None, chunk=4000)
            _same(got[0] + got[1], want[0] + want[1])
            total += len(got[0][0])
            near += int(got[1][3].sum())
    assert total > 1000 and near > 10


def _by_receiver(found) -> dict:
    """Each receiver's group links, then its patch pairs, in the order links() gives them."""
    (gn, gr, gf), (ls, lr, lf, near) = found
    out: dict = {}
    for node, r, f in zip(gn.tolist(), gr.tolist(), gf.tolist()):
        out.setdefault(r, []).append(("link", node, f))
    for node, r, f, n in zip(ls.tolist(), lr.tolist(), lf.tolist(), near.tolist()):
        out.setdefault(r, []).append(("pair", node, f, n))
    return out


@pytest.mark.parametrize("name, vis", SCENES)
def test_cut_frontiers_keep_each_receivers_order(name, vis):
    """A level cut in two by receiver (frontier) walks each receiver's pairs in the same order:
    what each receiver gets, and the order it sums it in, are those of the uncut walk, though
    the receivers come interleaved otherwise."""
    world, see = _world(name, vis)
    shooters, unshot = _round(world, 3)
    groups = build_groups(world, shooters, unshot, patch_radius(world))
    strength = unshot.max(axis=1)
    reordered = 0
    for mine, receivers in _cluster_groups(world, shooters, see):
        roots = groups.roots_of(int(world.cluster[mine[0]])) if see is not None else groups.root_node
        whole = links(world, groups, roots, receivers, BOUNCE_CUTOFF, BOUNCE_GROUP_FAR, strength, frontier=1 << 30)
        cut = links(world, groups, roots, receivers, BOUNCE_CUTOFF, BOUNCE_GROUP_FAR, strength, frontier=7)
        assert _by_receiver(cut) == _by_receiver(whole)
        reordered += any(not np.array_equal(c, w) for c, w in zip(cut[0] + cut[1], whole[0] + whole[1]))
    assert reordered  # the cuts did reorder the receivers


def test_small_blocks_and_frontiers_bounce_the_same_bits(monkeypatch):
    """The bounce cut into blocks of a few pairs and frontiers of a few pairs (GROUP_BLOCK,
    GROUP_FRONTIER) receives the same light to the bit as with its defaults."""
    from brushbake.core.compile.light import lm_groups

    def received():
        got = {}
        radiosity = lm_radiosity.radiosity

        def keep(*args, **kwargs):
            result = radiosity(*args, **kwargs)
            got["received"] = result.received
            return result

        monkeypatch.setattr(lightmap, "radiosity", keep)
        scene = load_scene(REPO / "sample_scenes/two_rooms.json")
        scene.settings.light, scene.settings.bounces, scene.settings.vis = True, 2, "fast"
        bake_scene(scene)
        return got["received"]

    want = received()
    monkeypatch.setattr(lm_radiosity, "GROUP_BLOCK", 40)
    monkeypatch.setattr(lm_groups, "GROUP_FRONTIER", 25)
    got = received()
    assert want.any() and got.tobytes() == want.tobytes()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), far=st.sampled_from([1.0, BOUNCE_GROUP_FAR, 20.0]),
       cutoff=st.sampled_from([BOUNCE_CUTOFF, 1e-6, 1e-2]))
def test_c_step_equals_numpy_on_random_frontiers(seed, far, cutoff):
    """Random rounds on a sample scene, and random frontiers (any node against any receiver, in
    any order, repeats included): one level of the walk, the same arrays and bits."""
    kernel_of = _kernel_or_skip()
    world, _ = _world(*SCENES[1])
    rng = np.random.default_rng(seed)
    shooters, unshot = _round(world, seed % 1000)
    groups = build_groups(world, shooters, unshot, patch_radius(world))
    nodes = np.concatenate([shooters, groups.n_patches + np.arange(len(groups.area))])
    node = rng.choice(nodes, 3000)
    recv = rng.choice(np.concatenate([shooters, np.flatnonzero(world.count > 0)]), 3000)  # self pairs too
    strength = unshot.max(axis=1)
    got = kernel_of(world, groups, cutoff, far, strength).step(node, recv)
    want = GroupStep(world, groups, cutoff, far, strength).step(node, recv)
    _same(got[0] + got[1] + got[2], want[0] + want[1] + want[2])


def _bounce(monkeypatch, name: str, group_far: float, cutoff: bool) -> np.ndarray:
    """The light the patches receive in a one-bounce bake of a map (C rays when they load)."""
    got = {}
    radiosity = lm_radiosity.radiosity

    def keep(*args, **kwargs):
        kwargs["group_far"] = group_far
        result = radiosity(*args, **kwargs)
        got["received"] = result.received
        return result

    monkeypatch.setattr(lightmap, "radiosity", keep)
    if not cutoff:
        monkeypatch.setattr(lm_radiosity, "bounce_cutoff", lambda lit: 0.0)
    scene = load_scene(REPO / name)
    scene.settings.light, scene.settings.bounces, scene.settings.vis = True, 1, "flow"
    bake_scene(scene)
    monkeypatch.undo()
    return got["received"].mean(axis=1)


def test_groups_light_a_map_as_every_pair_traced_does(monkeypatch):
    """qbspfeatures.map, one bounce: every (shooter, receiver) pair traced is the reference (0.33
    million rays); groups trace half as many (0.16 million, the cutoff alone 0.20 million)."""
    name = "maps/ericw-tools/qbspfeatures.map"
    reference = _bounce(monkeypatch, name, 0.0, cutoff=False)
    grouped = _bounce(monkeypatch, name, BOUNCE_GROUP_FAR, cutoff=True)
    cut = _bounce(monkeypatch, name, 0.0, cutoff=True)
    mean = reference.mean()
    assert abs(grouped.sum() / reference.sum() - 1) <= abs(cut.sum() / reference.sum() - 1) + 1e-4
    assert abs(grouped.sum() / reference.sum() - 1) < 0.005
    assert np.abs(grouped - reference).mean() < 0.01 * mean
    assert np.percentile(np.abs(grouped - reference), 99) < 0.05 * mean
