"""Leaks (core/compile/vis/leaks.py): the flood from the void against independent truth.

- a closed room with one wall brush missing leaks, and its chain passes through the hole, whose
  nearest brush is one of the hole's neighbours; the same room closed is sealed and marks only
  the outside;
- hypothesis rooms with one gap through a wall, floor or ceiling (lights anywhere inside, a far
  pillar making the world box bigger): the hole the message names lies in the gap, and its brush
  is one beside the gap;
- hypothesis scenes of boxes on a 0.25 m grid: each point's verdict (reachable from the void)
  equals a voxel flood (scipy.ndimage.label over voxels classified by brute force against the
  boxes, face-connected, the world box's border layer outside), which never touches the tree;
- every map in maps/ is classified (the verdicts recorded in docs/VISIBILITY.md), and
  every leak's chain is a real path: entity in the first portal's cluster, consecutive portals
  sharing a cluster, the last one a void portal;
- q1_mountain (sealed by this exact rule; ericw's qbsp and the default 'qbsp' rule,
  tests/core/test_sliver_seal.py: leaks): its terrain is watertight from the file's own points,
  and the seal hangs on slivers under 0.1 unit that qbsp's brush split drops: dropping them where
  a plane passes 0.005 unit from a vertex (tests/core/qbsp_sites.py) makes it leak.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from brushbake.core.compile.vis.leaks import find_leaks, inside_points
from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.compile.vis.portals import build_portals
from brushbake.core.model.brushes import Contents, box_brush
from brushbake.core.model.scene import Light, Marker, Scene
from brushbake.core.runtime.query import point_leaves

#: the exact rule's verdict for every map in maps/ (docs/VISIBILITY.md has the table and the
#: reasons; the default qbsp rule's verdicts, ericw-tools', are tested in test_sliver_seal.py)
MAP_LEAKS = {
    "q1_cube.map": True,  # one brush, the player start beside it
    "q1_hulls.map": True,  # two brushes, no room around the entities
    # terrain of tetrahedra meeting edge to edge: sealed in exact geometry; ericw's qbsp (and the
    # default qbsp rule) leaks through slivers its 0.1-unit split rule drops (test below)
    "q1_mountain.map": False,
}


def room(hole: bool):
    """A 4 x 4 x 3 m room with 0.5 m walls; its +x wall is made of four 1 m wide columns, and
    with `hole` the column at y 1..2 is left out (a 1 x 3 m hole through x 4..4.5)."""
    lo, hi, t = np.array([0.0, 0.0, 0.0]), np.array([4.0, 4.0, 3.0]), 0.5
    b = [box_brush((-t, -t, -t), (4 + t, 4 + t, 0), "floor"), box_brush((-t, -t, 3), (4 + t, 4 + t, 3 + t), "ceiling"),
         box_brush((-t, -t, 0), (0, 4 + t, 3), "west"), box_brush((0, -t, 0), (4, 0, 3), "south"),
         box_brush((0, 4, 0), (4, 4 + t, 3), "north")]
    b += [box_brush((4, -t, 0), (4 + t, 1, 3), "east0")]
    b += [] if hole else [box_brush((4, 1, 0), (4 + t, 2, 3), "east1")]
    b += [box_brush((4, 2, 0), (4 + t, 3, 3), "east2"), box_brush((4, 3, 0), (4 + t, 4 + t, 3), "east3")]
    assert np.all(lo < hi)
    return Scene("room", brushes=b, markers=[Marker("start", "player_start", (1.0, 3.0, 1.0))])


def check_chain(level, portals, report):
    """The chain is a path: problems as strings."""
    problems = []
    chain, ids = report.chain, report.chain_portals
    if not len(ids):
        return ["a leak without portals"]
    if not np.allclose(chain[0], report.entity_position):
        problems.append("the chain does not start at the entity")
    c0 = portals.cluster_of_leaf[point_leaves(level, chain[:1])[0]]
    if c0 not in portals.clusters[ids[0]]:
        problems.append("the first portal does not touch the entity's cluster")
    for a, b in zip(ids[:-1], ids[1:]):
        if not set(portals.clusters[a].tolist()) & set(portals.clusters[b].tolist()):
            problems.append(f"portals {a} and {b} share no cluster")
    if portals.clusters[ids[-1], 1] != portals.outside:
        problems.append("the chain does not end at a void portal")
    if not np.allclose(chain[1:], portals.centres()[ids]):
        problems.append("chain points are not the portals' centres")
    if report.hole_portal not in ids.tolist():
        problems.append("the hole is not on the chain")
    return problems


def segment_hits_box(a, b, lo, hi, eps=1e-9):
    d = b - a
    t0, t1 = 0.0, 1.0
    for k in range(3):
        if abs(d[k]) < 1e-15:
            if a[k] < lo[k] - eps or a[k] > hi[k] + eps:
                return False
            continue
        u, v = (lo[k] - eps - a[k]) / d[k], (hi[k] + eps - a[k]) / d[k]
        t0, t1 = max(t0, min(u, v)), min(t1, max(u, v))
    return t0 <= t1


def test_a_room_with_a_hole_leaks_through_the_hole_and_sealed_it_does_not():
    scene = room(hole=True)
    level = compile_scene(scene)
    portals = build_portals(level)
    report = find_leaks(level, portals, *inside_points(scene))
    assert report.leaks and report.entity == "start (player_start)" and report.leaking == ["start (player_start)"]
    assert not check_chain(level, portals, report), check_chain(level, portals, report)
    hole_lo, hole_hi = np.array([4.0, 1.0, 0.0]), np.array([4.5, 2.0, 3.0])
    chain = report.chain
    assert any(segment_hits_box(chain[i], chain[i + 1], hole_lo, hole_hi) for i in range(len(chain) - 1))
    assert np.all(np.array(report.hole_position) >= hole_lo - 1e-9) and np.all(np.array(report.hole_position) <= hole_hi + 1e-9)
    assert report.hole_brush in {"east0", "east2"}  # the gap's sides, not the floor its corner rests on
    assert report.hole_brush_distance < 1e-9
    assert "start (player_start)" in report.message() and report.hole_brush in report.message()
    assert not report.outside_mask.any()  # a leaking map is unsealed: nothing is ignored

    sealed = room(hole=False)
    level = compile_scene(sealed)
    portals = build_portals(level)
    report = find_leaks(level, portals, *inside_points(sealed))
    assert not report.leaks and report.judged == 1 and not len(report.chain_portals)
    inside = portals.cluster_of_leaf[point_leaves(level, np.array([[2.0, 2.0, 1.5]]))[0]]
    assert not report.outside_clusters[inside] and report.outside_mask.sum() == report.outside_clusters.sum() > 0
    corner = portals.cluster_of_leaf[point_leaves(level, level.world_bounds[:1] + 0.01)[0]]
    assert report.outside_mask[corner]


def test_points_outside_the_world_and_in_solid():
    scene = room(hole=False)
    level = compile_scene(scene)
    portals = build_portals(level)
    report = find_leaks(level, portals, [(2.0, 2.0, 1.0), (2.0, 2.0, -0.25), (100.0, 0.0, 0.0)],
                        ["in", "in the floor", "far away"])
    assert report.leaks and report.leaking == ["far away"] and report.in_solid == ["in the floor"]
    assert len(report.chain) == 1 and np.allclose(report.chain[0], (100.0, 0.0, 0.0))
    none = find_leaks(level, portals, np.zeros((0, 3)), [])
    assert not none.leaks and none.judged == 0 and not none.outside_mask.any()


def test_inside_points_come_from_markers_lights_and_the_user():
    from brushbake.core.model.scene import Light

    scene = room(hole=False)
    scene.lights = [Light("lamp", (2.0, 2.0, 2.5))]
    pts, names = inside_points(scene, [(1.0, 1.0, 1.0)])
    assert names == ["start (player_start)", "lamp (light)", "point 1"]
    assert np.allclose(pts, [(1.0, 3.0, 1.0), (2.0, 2.0, 2.5), (1.0, 1.0, 1.0)])


# --------------------------------------------------------------------------------------------
# Random box scenes against a voxel flood

STEP = 0.25


@st.composite
def box_scenes(draw):
    boxes = []
    for _ in range(draw(st.integers(1, 12))):
        lo = np.array([draw(st.integers(-4, 8)) for _ in range(3)]) * STEP
        size = np.array([draw(st.integers(1, 8)) for _ in range(3)]) * STEP
        boxes.append((lo, lo + size))
    return boxes


def voxel_outside(boxes, world):
    """(mask of voxels reachable from the world box's border, voxel centre grid origin): voxels of
    STEP / 2 on the grid, solid when their centre is inside a box, face-connected."""
    from scipy import ndimage

    lo, hi = world
    h = STEP / 2
    n = np.round((hi - lo) / h).astype(int)
    centres = [lo[k] + h * (np.arange(n[k]) + 0.5) for k in range(3)]
    x, y, z = np.meshgrid(*centres, indexing="ij")
    solid = np.zeros(n, bool)
    for a, b in boxes:
        solid |= (x > a[0]) & (x < b[0]) & (y > a[1]) & (y < b[1]) & (z > a[2]) & (z < b[2])
    labels, _ = ndimage.label(~solid)
    border = np.unique(np.concatenate([labels[[0, -1]].ravel(), labels[:, [0, -1]].ravel(), labels[:, :, [0, -1]].ravel()]))
    border = border[border > 0]
    return np.isin(labels, border), lo, h, solid


@settings(max_examples=40, deadline=None, derandomize=True, report_multiple_bugs=False,
          phases=[Phase.explicit, Phase.generate, Phase.shrink], suppress_health_check=[HealthCheck.too_slow])
@given(boxes=box_scenes(), seed=st.integers(0, 2**32 - 1))
def test_random_box_scenes_flood_like_voxels(boxes, seed):
    scene = Scene("boxes", brushes=[box_brush(a, b, f"b{i}") for i, (a, b) in enumerate(boxes)])
    level = compile_scene(scene)
    portals = build_portals(level)
    outside, lo, h, solid = voxel_outside(boxes, level.world_bounds)
    rng = np.random.default_rng(seed)
    n = np.array(outside.shape)
    idx = np.stack([rng.integers(0, n[k], 200) for k in range(3)], axis=1)
    idx = idx[~solid[tuple(idx.T)]]
    pts = lo + h * (idx + 0.5)
    report = find_leaks(level, portals, pts, [f"p{i}" for i in range(len(pts))])
    got = np.zeros(len(pts), bool)
    got[[int(name[1:]) for name in report.leaking]] = True
    want = outside[tuple(idx.T)]
    assert np.array_equal(got, want), f"{np.count_nonzero(got != want)} points disagree, e.g. {pts[np.argmax(got != want)]}"
    if report.leaks:
        assert not check_chain(level, portals, report)


# --------------------------------------------------------------------------------------------
# Real maps


def test_every_map_is_classified(map_path, levels):
    compiled = levels.get(map_path)
    level, scene = compiled.level, compiled.scene
    portals = build_portals(level)
    report = find_leaks(level, portals, *inside_points(scene))
    assert report.leaks == MAP_LEAKS.get(map_path.name, False), report.message()
    assert report.judged > 0
    if report.leaks:
        assert not check_chain(level, portals, report), check_chain(level, portals, report)
        assert report.hole_brush is not None
    else:
        assert report.outside_mask.any() and not report.outside_mask.all()


def test_q1_mountain_is_sealed_by_a_watertight_terrain(map_named, levels):
    """Why q1_mountain is sealed here (ericw-tools' qbsp calls it leaking, docs/VISIBILITY.md): its
    terrain brushes hang under the triangles (and a few flat quads) of a height field, and every
    edge of that surface inside the sky box is shared by exactly two of them; the edges used once
    all lie on the sky walls, inside the walls' height (-1568..4192 units).  Every terrain vertex
    is an integer point of the file and every brush is at least 15 units thick, so qbsp has no
    brush to drop as degenerate, and the player start is 1,600 units above the terrain under it.
    The cells above and below meet only along those edges (no portal)."""
    compiled = levels.get(map_named("q1_mountain.map"))
    scene = compiled.scene
    terrain = [b for b in scene.brushes if ":entity2:" in b.name]
    assert len(terrain) == 388
    count: dict = {}
    for b in terrain:
        v = np.asarray(b.vertices) * 32
        assert np.abs(v - np.round(v)).max() < 1e-9  # the file's integer points, nothing else
        tops = [f for f, n in zip(b.faces, b.normals) if n[2] > 0.05]
        assert len(tops) == 1  # one top face per brush
        top = np.round(np.asarray(tops[0]) * 32, 3)  # Quake units, integers in the file
        n = np.cross(top[1] - top[0], top[2] - top[0])
        assert np.max(np.abs((v - top[0]) @ n)) / np.linalg.norm(n) > 15.0  # thickness under the top
        for i in range(len(top)):
            edge = tuple(sorted([tuple(top[i]), tuple(top[(i + 1) % len(top)])]))
            count[edge] = count.get(edge, 0) + 1
    once = [e for e, c in count.items() if c == 1]
    assert all(c <= 2 for c in count.values())
    assert once and all(all(abs(abs(p[0]) - 4096) < 1e-6 for p in e) or all(abs(abs(p[1]) - 4096) < 1e-6 for p in e)
                        for e in once)
    assert all(-1568 < p[2] < 4192 for e in once for p in e)
    start = np.array(scene.markers[0].position)  # metres
    assert scene.markers[0].kind == "player_start" and np.allclose(start * 32, (2576, -2416, 1144))
    column = np.array([[start[0], start[1], z / 32] for z in range(-1560, 1100, 4)])
    below = [b for b in terrain if b.contains(column).any()]
    assert below and all(np.asarray(b.vertices)[:, 2].max() * 32 < 1144 - 1000 for b in below)
    level = compiled.level
    portals = build_portals(level)
    report = find_leaks(level, portals, *inside_points(scene))
    assert not report.leaks and report.outside_clusters.sum() > 0


def test_q1_mountain_seal_hangs_on_a_tenth_of_a_unit_where_qbsp_splits(map_named, levels):
    """What ericw-tools' qbsp does with this map (docs/VISIBILITY.md, tests/core/qbsp_sites.py):
    its brush BSP does not split a brush that reaches less than 0.1 unit across a node's plane, it
    keeps it whole on the far side, so on the near side that sliver is empty.  Here 80 times a face
    plane passes within 0.1 unit of a terrain vertex without containing it (the nearest 0.0047
    unit), 16 of them with brushes that reach across only at that vertex; lqdm13, built of slabs
    meeting edge to edge on the integer grid and sealed for ericw too, has none.  Dropping those
    tips as qbsp would at the nearest site opens the terrain: the leak's chain passes through V."""
    import qbsp_sites

    scene = map_named("q1_mountain.map")
    mountain = levels.get(scene).scene
    found = qbsp_sites.sites(mountain)
    tips = [s for s in found if s.tips]
    assert len(found) == 80 and len(tips) == 16
    nearest = tips[0]
    assert nearest.vertex == (-585.0, 3511.0, -1112.0) and abs(abs(nearest.distance) - 0.004665) < 1e-6
    assert sorted(mountain.brushes[t].name.rsplit(":", 1)[-1] for t in nearest.tips) == [
        "brush292", "brush305", "brush82", "brush83"]
    assert not qbsp_sites.sites(levels.get(map_named("lqdm13.map")).scene)
    report, level, portals = qbsp_sites.opens(mountain, nearest)
    assert report.leaks and report.entity.endswith("(player_start)")
    assert not check_chain(level, portals, report), check_chain(level, portals, report)
    assert np.min(np.linalg.norm(report.chain * 32 - np.array(nearest.vertex), axis=1)) < 0.1


# --------------------------------------------------------------------------------------------
# Where the message says the hole is: rooms with one gap of known place


def box_minus(lo, hi, glo, ghi):
    """Boxes tiling the box lo..hi less the box glo..ghi (which lies within it on two axes and
    crosses it on the third): cut along each axis in turn, the gap's slab kept for the next."""
    out, lo, hi = [], np.array(lo, float), np.array(hi, float)
    for k in range(3):
        if glo[k] > lo[k]:
            a, b = lo.copy(), hi.copy()
            b[k] = glo[k]
            out.append((a, b))
            lo[k] = glo[k]
        if ghi[k] < hi[k]:
            a, b = lo.copy(), hi.copy()
            a[k] = ghi[k]
            out.append((a, b))
            hi[k] = ghi[k]
    return out


@st.composite
def gap_rooms(draw):
    """A closed room (walls, floor and ceiling of one thickness) with one rectangular gap through
    one of its six sides, a player start and lights inside, sometimes a far pillar that makes
    the world box bigger; (scene, gap box, names of the brushes beside the gap)."""
    q = lambda lo, hi: draw(st.integers(lo, hi)) * STEP  # noqa: E731
    size = np.array([q(8, 24), q(8, 24), q(8, 16)])
    t = q(1, 3)
    side = draw(st.integers(0, 5))
    axis, high = side % 3, side >= 3
    slabs = []
    for k in range(3):
        for up in (False, True):
            lo, hi = np.full(3, -t), size + t
            if up:
                lo[k] = size[k]
            else:
                hi[k] = 0.0
            slabs.append((k, up, lo, hi))
    glo, ghi = np.zeros(3), np.zeros(3)
    for k in range(3):
        if k == axis:
            glo[k], ghi[k] = (size[k], size[k] + t) if high else (-t, 0.0)
        else:
            a = draw(st.integers(1, int(size[k] / STEP) - 2))
            b = draw(st.integers(a + 1, int(size[k] / STEP) - 1))
            glo[k], ghi[k] = a * STEP, b * STEP
    boxes = []
    for k, up, lo, hi in slabs:
        boxes += box_minus(lo, hi, glo, ghi) if (k, up) == (axis, high) else [(lo, hi)]
    if draw(st.booleans()):
        far = np.array([q(60, 120), q(-40, 40), 0.0])
        boxes.append((far, far + 1.0))
    inside = lambda: tuple(float(draw(st.integers(1, int(s / STEP) - 1)) * STEP) for s in size)  # noqa: E731
    brushes = [box_brush(a, b, f"b{i}") for i, (a, b) in enumerate(boxes)]
    beside = {f"b{i}" for i, (a, b) in enumerate(boxes) if np.all(a <= ghi + 1e-9) and np.all(b >= glo - 1e-9)}
    scene = Scene("gap", brushes=brushes, markers=[Marker("start", "player_start", inside())],
                  lights=[Light(f"lamp{i}", inside()) for i in range(draw(st.integers(0, 3)))])
    return scene, (glo, ghi), beside


@settings(max_examples=40, deadline=None, derandomize=True, report_multiple_bugs=False,
          phases=[Phase.explicit, Phase.generate, Phase.shrink], suppress_health_check=[HealthCheck.too_slow])
@given(case=gap_rooms())
def test_the_hole_named_is_in_the_gap_beside_its_brushes(case):
    """The message's hole lies in the gap (on its closed box) and the brush it names is one of the
    brushes beside the gap, wherever the gap, the start, the lights (a light by the gap made the
    earlier rule name the chain's end on the world box) and the world box's size."""
    scene, (glo, ghi), beside = case
    level = compile_scene(scene)
    portals = build_portals(level)
    report = find_leaks(level, portals, *inside_points(scene))
    assert report.leaks and not check_chain(level, portals, report)
    hole = np.array(report.hole_position)
    assert np.all(hole >= glo - 1e-9) and np.all(hole <= ghi + 1e-9), (hole, glo, ghi, report.chain)
    assert report.hole_brush in beside and report.hole_brush_distance < 1e-9, (report.hole_brush, beside)


@pytest.mark.parametrize("start", [(1.0, 3.0, 1.0), (3.9, 0.2, 2.9)])
def test_a_room_without_a_wall_names_the_missing_wall(start):
    """With the whole +x wall missing, the hole lies in the wall's place (x 4..4.5), beside the
    floor, ceiling or side walls it met."""
    scene = room(hole=True)
    scene.brushes = [b for b in scene.brushes if not b.name.startswith("east")]
    scene.markers = [Marker("start", "player_start", start)]
    level = compile_scene(scene)
    portals = build_portals(level)
    report = find_leaks(level, portals, *inside_points(scene))
    assert report.leaks and not check_chain(level, portals, report)
    assert 4.0 - 1e-9 <= report.hole_position[0] <= 4.5 + 1e-9, report.hole_position
    assert report.hole_brush in {"floor", "ceiling", "south", "north"} and report.hole_brush_distance < 1e-9


def e1m6_without(map_named, brush: str):
    """lq_e1m6 without one structural brush, point tree only: (scene, the brush, level, portals)."""
    import dataclasses

    from brushbake.core.formats.loaders import load_scene

    scene = load_scene(map_named("lq_e1m6.map"))
    scene = dataclasses.replace(scene, hulls=[], settings=dataclasses.replace(scene.settings, bevels=False))
    gone = next(b for b in scene.brushes if b.name.endswith(":" + brush))
    scene = dataclasses.replace(scene, brushes=[b for b in scene.brushes if b is not gone])
    level = compile_scene(scene)
    return scene, gone, level, build_portals(level)


@pytest.mark.parametrize("brush", ["brush2", "brush9", "brush15", "brush18"])
def test_lq_e1m6_without_one_wall_brush_names_its_place(map_named, brush):
    """lq_e1m6 with one structural brush of its walls removed (18 of its 23 solid structural
    brushes open it; the hole lies in the removed brush's box for 15, 12 by the earlier rule):
    four of them, two where the entity's own cell reaches the world box (brush2, brush15: the hole
    is where the chain leaves the brushes' bounds)."""
    scene, gone, level, portals = e1m6_without(map_named, brush)
    report = find_leaks(level, portals, *inside_points(scene))
    assert report.leaks and not check_chain(level, portals, report)
    v = np.asarray(gone.vertices)
    hole = np.array(report.hole_position)
    assert np.all(hole >= v.min(axis=0) - 1e-9) and np.all(hole <= v.max(axis=0) + 1e-9), (hole, v.min(0), v.max(0))


@pytest.mark.parametrize("brush", ["brush2", "brush9", "brush15"])
def test_the_chain_search_stopping_early_gives_the_full_searchs_chain(map_named, monkeypatch, brush):
    """_dijkstra stops once every open link is farther than the best way out found: the entity,
    the chain and the hole are the ones the search over every link gives."""
    from brushbake.core.compile.vis import leaks

    scene, _, level, portals = e1m6_without(map_named, brush)
    early = find_leaks(level, portals, *inside_points(scene))
    full_search = leaks._dijkstra
    monkeypatch.setattr(leaks, "_dijkstra", lambda *args, goals=None: full_search(*args))
    full = find_leaks(level, portals, *inside_points(scene))
    assert early.leaks and full.leaks and early.entity == full.entity
    assert np.array_equal(early.chain, full.chain) and early.hole_position == full.hole_position
    assert early.hole_brush == full.hole_brush


def test_the_nearest_brush_from_the_faces_that_can_be_nearest_is_the_nearest_of_all(map_named, monkeypatch):
    """nearest_brush measures only the faces whose boxes can be nearest (_near_faces): on every
    portal of e1m7 it names the brush, at the distance, that measuring every face names."""
    from brushbake.core.compile.vis import leaks
    from brushbake.core.formats.loaders import load_scene

    level = compile_scene(load_scene(map_named("e1m7.map")))
    portals = build_portals(level)
    windings = [portals.winding(p) for p in range(0, portals.num_portals, 7)]
    pruned = [leaks.nearest_brush(level, w) for w in windings]
    monkeypatch.setattr(leaks, "_near_faces", lambda level, faces, polygon, first=32: faces)
    assert pruned == [leaks.nearest_brush(level, w) for w in windings]
