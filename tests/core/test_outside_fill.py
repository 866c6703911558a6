"""The outside fill (core/compile/vis/outside_fill.py) and qbsp's entity-on-a-face rule, against
independent truth.

- Hypothesis scenes: a shell of six slabs (sometimes with a hole) around random boxes on a
  0.25 m grid, with entities at random empty places inside, baked with Quake's two hulls.  Truth
  per space (the point, each hull): voxels of 0.125 m classified by brute force against the boxes
  grown by the hull (exact: every grown box stays on the grid), flooded face-connected from the
  border (scipy.ndimage.label).  A sealed scene (no entity's voxel reached) must answer solid
  exactly where a grown box is or the flood reaches, in every tree; a hull whose flood reaches an
  entity, and every space of a leaking scene (baked with allow_leak), keeps its void empty.
  Compared strictly, inside and outside, at random voxel centres.
- Every filled point leaf is unreachable from every entity: points sampled in each filled leaf
  lie in voxels no entity's region holds, and no entity's leaf floods (over the unfilled level's
  portals) into a filled leaf.
- --no-fill (settings.fill False) leaves every tree as it was, and the fill changes nothing but
  solid bits in the point tree; the onion tree it prunes (equal sibling leaves merged) answers
  every point and segment query as the unpruned one does, to the bit, NumPy and C.
- qbsp's rule: an entity whose origin lies exactly on a brush face is in the brush, not a flood
  start (a light on the top face of a room's ceiling, open to the void above it: sealed; one unit
  above it: leaks), for faces, edges and corners, and inside the room too.
"""

from __future__ import annotations

import dataclasses
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from brushbake.core.compile.pipeline import bake_scene
from brushbake.core.compile.vis import outside_fill
from brushbake.core.compile.vis.leaks import flood_from_void
from brushbake.core.compile.vis.portals import build_portals
from brushbake.core.errors import LeakError
from brushbake.core.model.brushes import box_brush
from brushbake.core.model.hulls import QUAKE_MAP_HULLS, quake_map_hulls
from brushbake.core.model.scene import Light, Marker, Scene
from brushbake.core.runtime.level import POINT_HULL_BIT
from brushbake.core.runtime.query import point_leaves, point_solid
from brushbake.core.units import QUAKE_UNIT

STEP = 0.25
H = STEP / 2
HULLS = quake_map_hulls(QUAKE_UNIT)
#: voxel world: the shell's outside grown by the largest hull and a margin (all on the grid)
LO, HI = np.full(3, -6.0), np.full(3, 8.0)


def shell(hole: bool) -> list:
    """Six 0.5 m slabs around [-2, 4]^3; with `hole` a 1 x 1 m gap in the +x slab."""
    a, b, t = -2.0, 4.0, 0.5
    boxes = [((a - t, a - t, a - t), (b + t, b + t, a)), ((a - t, a - t, b), (b + t, b + t, b + t)),
             ((a - t, a - t, a), (a, b + t, b)), ((a, a - t, a), (b, a, b)), ((a, b, a), (b, b + t, b))]
    if hole:
        boxes += [((b, a - t, a), (b + t, 0.0, b)), ((b, 1.0, a), (b + t, b + t, b)),
                  ((b, 0.0, a), (b + t, 1.0, 0.0)), ((b, 0.0, 1.0), (b + t, 1.0, b))]
    else:
        boxes += [((b, a - t, a), (b + t, b + t, b))]
    return [(np.array(lo, float), np.array(hi, float)) for lo, hi in boxes]


def voxels(boxes, mins=(0, 0, 0), maxs=(0, 0, 0)):
    """(solid, reached from the border) over the voxel world for boxes grown by a hull box."""
    from scipy import ndimage

    n = np.round((HI - LO) / H).astype(int)
    x, y, z = np.meshgrid(*[LO[k] + H * (np.arange(n[k]) + 0.5) for k in range(3)], indexing="ij")
    solid = np.zeros(n, bool)
    for a, b in boxes:
        a, b = a - np.asarray(maxs), b - np.asarray(mins)
        solid |= (x > a[0]) & (x < b[0]) & (y > a[1]) & (y < b[1]) & (z > a[2]) & (z < b[2])
    labels, _ = ndimage.label(~solid)
    border = np.unique(np.concatenate([labels[[0, -1]].ravel(), labels[:, [0, -1]].ravel(),
                                       labels[:, :, [0, -1]].ravel()]))
    return solid, np.isin(labels, border[border > 0]), labels


def voxel_of(points):
    return tuple(np.floor((np.asarray(points) - LO) / H).astype(int).T)


@st.composite
def sealed_scenes(draw):
    boxes = shell(draw(st.booleans()))
    for _ in range(draw(st.integers(0, 6))):
        lo = np.array([draw(st.integers(-8, 14)) for _ in range(3)]) * STEP
        size = np.array([draw(st.integers(1, 8)) for _ in range(3)]) * STEP
        boxes.append((lo, lo + size))
    return boxes, draw(st.integers(0, 2**32 - 1))


def scene_of(boxes, entities, fill=True, allow_leak=False) -> Scene:
    scene = Scene("fill", brushes=[box_brush(a, b, f"b{i}") for i, (a, b) in enumerate(boxes)],
                  markers=[Marker(f"e{i}", "player_start", tuple(p)) for i, p in enumerate(entities)],
                  hulls=list(HULLS))
    scene.settings = dataclasses.replace(scene.settings, fill=fill, allow_leak=allow_leak, bevels=False)
    return scene


@settings(max_examples=25, deadline=None, derandomize=True, report_multiple_bugs=False,
          phases=[Phase.explicit, Phase.generate, Phase.shrink], suppress_health_check=[HealthCheck.too_slow])
@given(case=sealed_scenes())
def test_the_fill_is_the_voxel_flood_in_every_tree(case):
    boxes, seed = case
    rng = np.random.default_rng(seed)
    spaces = [voxels(boxes)] + [voxels(boxes, h.mins, h.maxs) for h in HULLS]
    solid0, out0, _ = spaces[0]
    # entities: random empty voxel centres inside the shell
    inner = LO + H * (np.stack([rng.integers(0, 48, 60) for _ in range(3)], axis=1) + 0.5) + 2 * STEP + 8 * STEP
    inner = inner[(np.abs(inner - 1.0) < 3.0).all(axis=1) & ~solid0[voxel_of(inner)]][:3]
    if not len(inner):
        return
    sealed = not out0[voxel_of(inner)].any()
    scene = scene_of(boxes, inner, allow_leak=not sealed)
    level = bake_scene(scene)
    n = np.array(solid0.shape)
    idx = np.stack([rng.integers(0, n[k], 600) for k in range(3)], axis=1)
    pts = LO + H * (idx + 0.5)
    for h, (solid, reached, _) in enumerate(spaces):
        hull_sealed = sealed and not (reached[voxel_of(inner)] & ~solid[voxel_of(inner)]).any()
        want = solid | reached if hull_sealed else solid
        got = point_solid(level, pts, hull=h).astype(bool)
        bad = got != want[tuple(idx.T)]
        assert not bad.any(), (f"hull {h} (sealed {sealed}, hull sealed {hull_sealed}): {bad.sum()} points "
                               f"disagree, e.g. {pts[np.argmax(bad)]}")


@settings(max_examples=15, deadline=None, derandomize=True, report_multiple_bugs=False,
          phases=[Phase.explicit, Phase.generate, Phase.shrink], suppress_health_check=[HealthCheck.too_slow])
@given(case=sealed_scenes())
def test_every_filled_leaf_is_unreachable_from_every_entity(case):
    boxes, seed = case
    rng = np.random.default_rng(seed)
    solid0, out0, labels = voxels(boxes)
    inner = rng.uniform(-1.9, 3.9, (40, 3))
    inner = inner[~solid0[voxel_of(inner)]][:3]
    if not len(inner) or out0[voxel_of(inner)].any():
        return  # this test wants sealed scenes
    plain = bake_scene(scene_of(boxes, inner, fill=False))
    with mock.patch.object(outside_fill, "prune_point_tree", lambda level: 0), \
            mock.patch.object(outside_fill, "prune_equal_leaves", lambda p, c, s: (p, c, s)):
        filled = bake_scene(scene_of(boxes, inner))  # the fill alone, before the trees are pruned
    # the fill changes solid bits only, and only from empty to solid
    for name in ("node_plane", "node_children", "leaf_cluster", "vis_rows", "vis_row_offset", "face_plane",
                 "onion_node_plane", "onion_node_children"):
        assert np.array_equal(getattr(plain, name), getattr(filled, name)), name
    assert np.all((plain.leaf_solid & ~filled.leaf_solid) == 0)
    assert np.all((plain.onion_leaf_solid & ~filled.onion_leaf_solid) == 0)
    new = np.flatnonzero((filled.leaf_solid & ~plain.leaf_solid) & POINT_HULL_BIT)
    assert len(new) == filled.stats["fill"]["point_filled"] > 0
    # exact: no entity's leaf floods into a filled leaf over the unfilled level's portals
    portals = build_portals(plain)
    ent = portals.cluster_of_leaf[point_leaves(plain, inner)]
    assert (ent >= 0).all()
    links = portals.clusters[portals.clusters[:, 1] < portals.num_clusters].astype(np.int64)
    # flood from the entities: the entities' clusters play the void's part
    start = np.full(portals.num_clusters, False)
    start[ent] = True
    remap = np.where(start, portals.num_clusters, np.arange(portals.num_clusters))
    reached = flood_from_void(remap[links], portals.num_clusters) | start
    assert not reached[portals.cluster_of_leaf[new]].any()
    # independent: points sampled in every filled leaf lie in no entity's voxel region
    entity_labels = set(labels[voxel_of(inner)].tolist())
    for leaf in new.tolist():
        lo, hi = plain.leaf_bounds[leaf]
        lo, hi = np.maximum(lo, LO), np.minimum(hi, HI)
        p = rng.uniform(lo, hi, (50, 3))
        p = p[point_leaves(plain, p) == leaf]
        assert not set(labels[voxel_of(p)].tolist()) & entity_labels, leaf


def test_no_fill_keeps_the_void_empty_and_leaks_are_not_filled():
    inside = [(1.0, 1.0, 1.0)]
    outside_pt = np.array([[6.0, 1.0, 1.0], [-5.0, -5.0, -5.0]])
    for fill, want in ((True, 1), (False, 0)):
        level = bake_scene(scene_of(shell(False), inside, fill=fill))
        for h in range(len(HULLS) + 1):
            assert point_solid(level, outside_pt, hull=h).tolist() == [want, want], (fill, h)
            assert point_solid(level, np.array(inside), hull=h).tolist() == [0]
        assert ("fill" in level.stats) == fill
    level = bake_scene(scene_of(shell(True), inside, allow_leak=True))
    assert "fill" not in level.stats
    assert point_solid(level, outside_pt).tolist() == [0, 0]


def test_quake_map_hulls_are_qbsps_hulls_1_and_2():
    assert [(name, tuple(np.subtract(hi, lo))) for name, lo, hi in QUAKE_MAP_HULLS] == [
        ("stand", (32, 32, 56)), ("large", (64, 64, 88))]
    assert [h.name for h in HULLS] == ["stand", "large"] and HULLS[0].mins == (-0.5, -0.5, -0.75)


# --------------------------------------------------------------------------------------------
# qbsp's rule for an entity on a face

def room_with(entities, lights=()) -> Scene:
    """shell(False) (sealed), a player start inside, and lights at the given places."""
    scene = Scene("room", brushes=[box_brush(a, b, f"b{i}") for i, (a, b) in enumerate(shell(False))],
                  markers=[Marker("start", "player_start", (1.0, 1.0, 1.0))] + [
                      Marker(f"m{i}", "info_null", tuple(p)) for i, p in enumerate(entities)],
                  lights=[Light(f"light{i}", tuple(p)) for i, p in enumerate(lights)])
    scene.settings = dataclasses.replace(scene.settings, bevels=False)
    return scene


def test_a_light_exactly_on_the_ceilings_top_face_does_not_leak():
    top = 4.5  # the ceiling slab's top face, the void above it
    for where in [(1.0, 1.0, top), (-2.5, 1.0, top), (-2.5, -2.5, top), (4.5, 4.5, 1.0), (1.0, 1.0, 0.0 - 2.0)]:
        level = bake_scene(room_with([], lights=[where]))  # faces, an edge, a corner, the side, the floor
        report = level.stats["leak_report"]
        assert not report.leaks and "light0 (light)" in report.in_solid, where
        assert level.stats["fill"]["point_filled"] > 0
    for where in [(1.0, 1.0, top + QUAKE_UNIT), (1.0, 1.0, top + 1e-5), (4.5 + 1e-5, 1.0, 1.0)]:
        try:
            bake_scene(room_with([], lights=[where]))
        except LeakError as err:
            assert err.report.entity == "light0 (light)"
        else:
            raise AssertionError(f"a light at {where}, off the face, must leak")


def test_the_rule_in_a_map_file():
    """The id case as a .map: a light whose origin lies on the top face of a floor brush that
    the void lies above (here the roof of a sealed room), sealed as qbsp compiles it."""
    from brushbake.core.formats.mapfile import load_map_text

    def block(x0, y0, z0, x1, y1, z1):
        return ("{\n" + f"( {x0} {y0} {z0} ) ( {x0} {y1} {z0} ) ( {x0} {y0} {z1} ) T 0 0 0 1 1\n"
                f"( {x1} {y0} {z0} ) ( {x1} {y0} {z1} ) ( {x1} {y1} {z0} ) T 0 0 0 1 1\n"
                f"( {x0} {y0} {z0} ) ( {x0} {y0} {z1} ) ( {x1} {y0} {z0} ) T 0 0 0 1 1\n"
                f"( {x0} {y1} {z0} ) ( {x1} {y1} {z0} ) ( {x0} {y1} {z1} ) T 0 0 0 1 1\n"
                f"( {x0} {y0} {z0} ) ( {x1} {y0} {z0} ) ( {x0} {y1} {z0} ) T 0 0 0 1 1\n"
                f"( {x0} {y0} {z1} ) ( {x0} {y1} {z1} ) ( {x1} {y0} {z1} ) T 0 0 0 1 1\n}}\n")

    walls = [(-16, -16, -16, 272, 272, 0), (-16, -16, 256, 272, 272, 272), (-16, -16, 0, 0, 272, 256),
             (256, -16, 0, 272, 272, 256), (0, -16, 0, 256, 0, 256), (0, 256, 0, 256, 272, 256)]
    for light_z, leaks in ((272, False), (273, True)):
        text = ('{\n"classname" "worldspawn"\n' + "".join(block(*w) for w in walls) + "}\n"
                '{\n"classname" "info_player_start"\n"origin" "128 128 24"\n}\n'
                f'{{\n"classname" "light"\n"origin" "64 64 {light_z}"\n"light" "300"\n}}\n')
        scene = load_map_text(text)
        try:
            level = bake_scene(scene)
        except LeakError as err:
            assert leaks and "light" in err.report.entity
        else:
            assert not leaks and not level.stats["leak_report"].leaks


def test_the_pruned_onion_tree_answers_as_the_unpruned(monkeypatch):
    """The same fill with and without the prune: every hull's point and segment answers equal, by
    NumPy and by the C run-time, at random points and along random segments (many through the
    merged cells' old planes)."""
    from brushbake.core.runtime.query import segment_hits

    boxes = shell(False) + [(np.array([0.0, 0.0, -2.0]), np.array([1.0, 1.0, 0.5])),
                            (np.array([2.25, -1.0, 1.0]), np.array([3.0, 3.5, 1.5]))]
    pruned = bake_scene(scene_of(boxes, [(1.5, 1.5, 2.0)]))
    monkeypatch.setattr(outside_fill, "prune_equal_leaves", lambda p, c, s: (p, c, s))
    whole = bake_scene(scene_of(boxes, [(1.5, 1.5, 2.0)]))
    assert len(pruned.onion_node_plane) < len(whole.onion_node_plane)
    rng = np.random.default_rng(7)
    pts = rng.uniform(LO, HI, (4000, 3))
    starts, ends = rng.uniform(LO, HI, (2000, 3)), rng.uniform(LO, HI, (2000, 3))
    inside = rng.uniform(-1.9, 3.9, (2000, 3))  # short moves inside the room, where traces stop at walls
    starts, ends = np.concatenate([starts, inside]), np.concatenate([ends, inside + rng.normal(0, 1.5, (2000, 3))])
    for backend in ("numpy", "c"):
        for h in range(1, len(HULLS) + 1):
            assert np.array_equal(point_solid(pruned, pts, hull=h, backend=backend),
                                  point_solid(whole, pts, hull=h, backend=backend))
            a = segment_hits(pruned, starts, ends, hull=h, backend=backend)
            b = segment_hits(whole, starts, ends, hull=h, backend=backend)
            assert np.array_equal(a[:, 0] < 1, b[:, 0] < 1)
            assert np.array_equal(a, b), np.abs(a - b).max()


def test_a_hull_whose_void_reaches_an_inside_point_is_not_filled():
    """fill_onion's guard (no map reaches it through bake_scene: a hull's void lies in the point's,
    which is sealed): given a point in the void, every hull is named and left as it was."""
    from brushbake.core.compile.vis.outside_fill import fill_onion

    level = bake_scene(scene_of(shell(False), [(1.0, 1.0, 1.0)], fill=False))
    before = level.onion_leaf_solid.copy()
    stats = fill_onion(level, np.array([[6.0, 1.0, 1.0]]))
    assert stats["onion_leaking"] == level.hull_names and stats["onion_filled"] == [0] * len(level.hull_names)
    assert point_solid(level, np.array([[6.0, 1.0, 1.0]]), hull=1).tolist() == [0]
    assert len(level.onion_leaf_solid) <= len(before)
    stats = fill_onion(level, np.array([[1.0, 1.0, 1.0]]))  # the room's own point: every hull filled
    assert stats["onion_leaking"] == [] and min(stats["onion_filled"]) > 0
    assert point_solid(level, np.array([[6.0, 1.0, 1.0]]), hull=1).tolist() == [1]


def test_the_pruned_point_tree_answers_as_the_unpruned(monkeypatch):
    """The point tree pruned after the fill (solid siblings merged): the same answers to the bit
    for points, segments and the PVS, by NumPy and C, the same shape sweeps and the same
    lightmap pages; it is smaller and its file reads back (every check the readers make)."""
    from brushbake.core.runtime.pvs import Visibility
    from brushbake.core.runtime.query import segment_hits
    from brushbake.core.runtime.shift import hit_checks, parse_shape
    from brushbake.exporters.native import level_from_bytes, level_to_bytes

    boxes = shell(False) + [(np.array([0.0, 0.0, -2.0]), np.array([1.0, 1.0, 0.5])),
                            (np.array([2.25, -1.0, 1.0]), np.array([3.0, 3.5, 1.5]))]

    def baked():
        scene = scene_of(boxes, [(1.5, 1.5, 2.0)])
        scene.lights = [Light("lamp", (1.5, -1.0, 3.0), power=300.0)]
        scene.settings = dataclasses.replace(scene.settings, bevels=True, light=True, bounces=1)
        return bake_scene(scene)

    pruned = baked()
    monkeypatch.setattr(outside_fill, "prune_point_tree", lambda level: 0)
    whole = baked()
    assert pruned.num_nodes < whole.num_nodes and pruned.num_leaves < whole.num_leaves
    assert pruned.stats["fill"]["point_nodes"] == [whole.num_nodes, pruned.num_nodes]
    back = level_from_bytes(level_to_bytes(pruned))
    assert back.num_nodes == pruned.num_nodes
    rng = np.random.default_rng(11)
    pts = rng.uniform(LO, HI, (4000, 3))
    starts = np.concatenate([rng.uniform(LO, HI, (1500, 3)), rng.uniform(-1.9, 3.9, (1500, 3))])
    ends = starts + rng.normal(0, 2.0, starts.shape) * np.repeat([[4.0], [1.0]], 1500, axis=0)
    for backend in ("numpy", "c"):
        assert np.array_equal(point_solid(pruned, pts, backend=backend), point_solid(whole, pts, backend=backend))
        assert np.array_equal(segment_hits(pruned, starts, ends, backend=backend),
                              segment_hits(whole, starts, ends, backend=backend))
        pairs = np.stack([starts, ends], axis=1)
        assert np.array_equal(Visibility(pruned).can_see_points(pairs, backend=backend),
                              Visibility(whole).can_see_points(pairs, backend=backend))
    shape = parse_shape("sphere:0.4")
    a = hit_checks(pruned.bevel_tree(), shape, starts[1500:], ends[1500:]).packed()
    b = hit_checks(whole.bevel_tree(), shape, starts[1500:], ends[1500:]).packed()
    assert np.array_equal(a[:, 0] < 1, b[:, 0] < 1) and np.allclose(a, b, rtol=0, atol=1e-9)
    assert pruned.lm_pages.tobytes() == whole.lm_pages.tobytes()
