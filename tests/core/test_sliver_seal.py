"""The qbsp seal rule (core/compile/vis/sliver_seal.py): a seal that rests on a brush tip under 0.1
unit, which qbsp's tree can cut, leaks as it does for ericw-tools.

- a hand-built funnel (four tetrahedra plugging a hole in a room's floor, meeting along edges): sealed
  in exact geometry; a face plane passing 0.002 m (0.064 unit) from the funnel's centre vertex
  makes it leak by the qbsp rule, the chain through that vertex; 0.004 m (0.128 unit) away it
  does not; with the plane's brush detail the tip is cut only if no axial face stands between the
  vertex and that face (the mid split), and a shelf in between keeps it sealed: four exact
  verdicts, one per condition of the rule;
- every map in maps/ gets ericw-tools' verdict by default (q1_mountain leaks, with a chain
  through a cut tip, and the hole the message names lies in a cut tip's box; e3m4 -- marked slow -- and lq_e0m3 stay sealed with their tips cut), with
  and without the bake's shortcut (no second compile when no cut tip touches both the void's
  clusters and the others: e3m4 and lq_e0m3 skip it);
- hypothesis scenes (a room, maybe with a hole, random boxes, slanted half-cubes whose face passes
  within 0.004 m of another brush's corner): the tip sites equal a brute force (every vertex
  against every plane), the sites cut are among them; with none the qbsp rule is the exact one
  (nothing compiled again); with some, the verdict is the exact one too (a tip under 0.1 unit
  cut off a box opens no wall 0.5 m thick and closes no hole), though the map is compiled again.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushbake.core.compile.vis.leaks import find_leaks, inside_points
from brushbake.core.compile.pipeline import bake_scene, compile_scene
from brushbake.core.compile.vis.portals import build_portals
from brushbake.core.compile.vis.sliver_seal import qbsp_leak_report, qbsp_sites, tip_boxes, tip_sites
from brushbake.core.errors import BrushbakeError, LeakError
from brushbake.core.model.brushes import Contents, box_brush, brush_from_planes
from brushbake.core.model.scene import Marker, Scene
from brushbake.core.tolerances import SLIVER_ON_PLANE
from brushbake.core.units import QUAKE_UNIT

#: ericw-tools' qbsp verdict for every map in maps/ (docs/VISIBILITY.md): True = leaks
ERICW_LEAKS = {"q1_cube.map": True, "q1_hulls.map": True, "q1_mountain.map": True}
REACH = 0.1 * QUAKE_UNIT  # m, qbsp's 0.1 unit at the default scale


def tetra(points, name, contents=Contents.SOLID):
    """The brush spanned by four points (outward planes through each face)."""
    p = np.asarray(points, dtype=np.float64)
    normals, dists = [], []
    for skip in range(4):
        a, b, c = p[[i for i in range(4) if i != skip]]
        n = np.cross(b - a, c - a)
        if n @ (p[skip] - a) > 0:
            n = -n
        normals.append(n)
        dists.append(n @ a)
    return brush_from_planes(np.array(normals), np.array(dists), name, contents)


def funnel(gap: float = 0.002, detail: bool = False, shelf: bool = False) -> Scene:
    """A closed 8 x 8 x 4 m room whose floor has a 2 x 2 m hole at the origin, plugged by four
    tetrahedra hanging under the four triangles of the hole (top faces at z = 0, meeting along the
    edges from the centre V = origin): sealed with zero thickness along those edges.  Brush 'block'
    has a face on the plane -x + 0.2 z = -gap |(-1, 0, 0.2)| (gap m from V, every other vertex of
    the +x tetrahedron behind it), two metres up.  `detail`: the block is detail; `shelf`: a
    structural slab at z 1..1.1 stands between V and the block's face.  Player start at
    (-3, -3, 0.5)."""
    t, h = 0.5, 4.0
    b = [box_brush((-4 - t, -4 - t, -1), (-1, 4 + t, 0), "floor_w"), box_brush((1, -4 - t, -1), (4 + t, 4 + t, 0), "floor_e"),
         box_brush((-1, -4 - t, -1), (1, -1, 0), "floor_s"), box_brush((-1, 1, -1), (1, 4 + t, 0), "floor_n"),
         box_brush((-4 - t, -4 - t, h), (4 + t, 4 + t, h + t), "ceiling"),
         box_brush((-4 - t, -4 - t, 0), (-4, 4 + t, h), "west"), box_brush((4, -4 - t, 0), (4 + t, 4 + t, h), "east"),
         box_brush((-4, -4 - t, 0), (4, -4, h), "south"), box_brush((-4, 4, 0), (4, 4 + t, h), "north")]
    o = (0.0, 0.0, 0.0)
    b += [tetra([o, (1, -1, 0), (1, 1, 0), (0.5, 0, -1)], "tip"), tetra([o, (-1, 1, 0), (-1, -1, 0), (-0.5, 0, -1)], "west_q"),
          tetra([o, (1, 1, 0), (-1, 1, 0), (0, 0.5, -1)], "north_q"), tetra([o, (-1, -1, 0), (1, -1, 0), (0, -0.5, -1)], "south_q")]
    n = np.array([-1.0, 0.0, 0.2])
    planes = np.array([n / np.linalg.norm(n), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1), (0, 0, 1)])
    dists = np.array([-gap, 1.5, -2.0, 3.0, -2.0, 3.0])
    b.append(brush_from_planes(planes, dists, "block", Contents.DETAIL if detail else Contents.SOLID))
    if shelf:
        b.append(box_brush((-0.5, -0.5, 1.0), (1.0, 3.5, 1.1), "shelf"))
    return Scene("funnel", brushes=b, markers=[Marker("start", "player_start", (-3.0, -3.0, 0.5))])


def verdicts(scene):
    """(exact report, qbsp report or None, sites): the qbsp rule's second compile always made,
    and checked against the shortcut the bake takes (no second compile when no cut tip touches
    both the void's clusters and the others): the shortcut never hides a leak."""
    level = compile_scene(dataclasses.replace(scene, hulls=[]))
    portals = build_portals(level)
    exact = find_leaks(level, portals, *inside_points(scene))
    report, sites = qbsp_leak_report(scene)
    if not exact.leaks and exact.judged:
        quick, quick_sites = qbsp_leak_report(scene, exact=(level, portals, exact))
        assert quick_sites == sites
        if quick is None:
            assert report is None or not report.leaks  # skipped: the full check is sealed too
        else:
            assert quick.leaks == report.leaks
    return exact, report, sites


def test_a_tip_a_plane_passes_within_a_tenth_of_a_unit_opens_the_funnel():
    exact, report, sites = verdicts(funnel())
    assert not exact.leaks and exact.judged == 1
    assert [(s.brush, s.plane_brush, s.plane_index, s.way) for s in sites] == [(9, 13, 0, "small")]
    assert sites[0].vertex == (0.0, 0.0, 0.0) and abs(sites[0].distance - 0.002) < 1e-12
    assert report.leaks and report.rule == "qbsp" and report.entity == "start (player_start)"
    # the chain goes through the cut tip at V (its portals there lie within the cut, under 0.1 unit)
    assert np.min(np.linalg.norm(report.chain, axis=1)) < REACH
    assert "as qbsp judges it: 1 brush tips" in report.message()


def test_a_tip_beyond_a_tenth_of_a_unit_is_kept():
    exact, report, sites = verdicts(funnel(gap=0.004))
    assert not exact.leaks and report is None and sites == []
    assert len(tip_sites(funnel(gap=0.004).brushes, 2 * REACH)) == 1  # it is a site for a wider reach


def test_a_detail_plane_cuts_only_where_the_mid_split_can_take_it():
    """Detail: the small nodes' qbsp3 heuristic takes the tip brush's own sides first, so only the
    mid split (big nodes) can cut, and only where no axial face crosses the box of V and the face."""
    exact, report, sites = verdicts(funnel(detail=True))
    assert not exact.leaks and [s.way for s in sites] == ["big"] and report.leaks
    exact, report, sites = verdicts(funnel(detail=True, shelf=True))
    assert not exact.leaks and sites == [] and report is None
    exact, report, sites = verdicts(funnel(shelf=True))  # structural: the small nodes still can
    assert not exact.leaks and [s.way for s in sites] == ["small"] and report.leaks


def test_bake_follows_the_seal_setting():
    scene = funnel()
    scene.settings.vis, scene.settings.bevels = "fast", False
    assert scene.settings.seal == "qbsp"  # the default: the verdict Quake's compilers give
    with pytest.raises(LeakError) as err:
        bake_scene(scene)
    assert err.value.report.rule == "qbsp" and "--seal exact" in str(err.value)
    scene.settings.seal = "exact"
    level = bake_scene(scene)
    assert not level.stats["leak_report"].leaks and "sliver_sites" not in level.stats["leaks"]
    scene.settings.seal, scene.settings.allow_leak = "qbsp", True
    level = bake_scene(scene)
    assert level.stats["leak_report"].leaks and level.stats["leaks"]["sliver_sites"] == 1
    assert level.stats["times"]["seal"] > 0


# --------------------------------------------------------------------------------------------
# Real maps


def map_params():
    """Every map in maps/ (e3m4, whose second compile takes seconds, marked slow)."""
    paths = sorted(Path(__file__).resolve().parents[2].glob("maps/**/*.map"))
    assert paths, "no maps found under maps/"
    return [pytest.param(p, id=p.name, marks=[pytest.mark.slow] if p.name == "e3m4.map" else []) for p in paths]


@pytest.mark.parametrize("path", map_params())
def test_every_map_gets_ericw_tools_verdict(path, levels):
    """The default rule's verdict is ericw-tools' qbsp's on every map; q1_mountain (sealed in exact
    geometry) leaks through cut tips, its chain through one of them."""
    compiled = levels.get(path)
    scene, level = compiled.scene, compiled.level
    portals = build_portals(level)
    exact = find_leaks(level, portals, *inside_points(scene))
    report, sites = qbsp_leak_report(scene) if not exact.leaks else (exact, [])
    verdict = report.leaks if report is not None else exact.leaks
    if not exact.leaks:  # the bake's shortcut: compiled again only where a tip may open the seal
        quick, _ = qbsp_leak_report(scene, exact=(level, portals, exact))
        assert (quick is not None and quick.leaks) == verdict
        assert (quick is None) == (path.name != "q1_mountain.map")  # e3m4, lq_e0m3: no second compile
    assert verdict == ERICW_LEAKS.get(path.name, False), report.message() if report is not None else exact.message()
    if path.name == "q1_mountain.map":
        assert not exact.leaks and report.rule == "qbsp" and report.entity.endswith("(player_start)")
        assert len(sites) == 39 and sum(s.way == "small" for s in sites) == 6
        near = min(float(np.min(np.linalg.norm(report.chain - np.array(s.vertex), axis=1))) for s in sites)
        # the chain passes by a cut tip: it runs through portal centres, and how near one lies to the
        # tip depends on the cells there (64 m regions: 2 cm, 32 m: 2.7 mm); the hole below is in
        # the tip's box either way
        assert near < 0.05
        # the hole named is the opening: in a cut tip's box (not where the chain reaches the
        # world box, nor where it leaves the space under the terrain), beside the brush named
        boxes = tip_boxes(scene.brushes, sites)
        hole = np.array(report.hole_position)
        assert np.any(np.all((hole >= boxes[:, 0]) & (hole <= boxes[:, 1]), axis=1)), hole
        assert report.hole_brush_distance < 1e-6 and report.hole_brush in report.message()
        assert "({:.3f}, {:.3f}, {:.3f})".format(*hole) in report.message()
    counts = {"lq_e0m3.map": 1, "e3m4.map": 7}  # the sites cut there (none opens the map)
    assert len(sites) == counts.get(path.name, 39 if path.name == "q1_mountain.map" else 0)


# --------------------------------------------------------------------------------------------
# Random scenes


def brute_sites(brushes, reach):
    """Every (B, A, plane, V) with V a vertex of B within (on, reach) of A's plane and every other
    vertex of B behind it: all vertices against all planes."""
    out = set()
    for bi, b in enumerate(brushes):
        vb = np.asarray(b.vertices)
        for ai, a in enumerate(brushes):
            if ai == bi:
                continue
            for k, (n, d) in enumerate(zip(a.normals, a.dists)):
                # x + y + z in that order, as the compiler sums every distance (core/detmath.py):
                # BLAS's `vb @ n` may fuse or reorder, and flip a vertex exactly on_plane away
                dist = (vb[:, 0] * n[0] + vb[:, 1] * n[1]) + vb[:, 2] * n[2] - d
                for j, s in enumerate(dist):
                    if SLIVER_ON_PLANE < abs(s) < reach:
                        rest = np.delete(dist, j)
                        if np.all(rest < -SLIVER_ON_PLANE if s > 0 else rest > SLIVER_ON_PLANE):
                            out.add((bi, ai, k, tuple(vb[j])))
    return out


def random_scene(data) -> Scene:
    """A room (walls on a 0.25 m grid, maybe with a hole in its east wall) with random boxes and
    up to two half-cubes whose slanted face passes within +-0.004 m of a random corner of another
    brush, tilted so that the corner's brush lies behind it (a tip site when the corner is in
    front by less than qbsp's 0.1 unit)."""
    hole = data.draw(st.booleans())
    walls = [box_brush((-3.5, -3.5, -0.5), (3.5, 3.5, 0), "floor"), box_brush((-3.5, -3.5, 3), (3.5, 3.5, 3.5), "ceiling"),
             box_brush((-3.5, -3.5, 0), (-3, 3.5, 3), "west"), box_brush((3, -3.5, 0), (3.5, 1, 3), "east"),
             box_brush((-3, -3.5, 0), (3, -3, 3), "south"), box_brush((-3, 3, 0), (3, 3.5, 3), "north")]
    if not hole:
        walls.append(box_brush((3, 1, 0), (3.5, 3.5, 3), "east_plug"))
    grid = st.integers(-12, 11)
    boxes = []
    for i in range(data.draw(st.integers(0, 4))):
        x, y, z = data.draw(grid), data.draw(grid), data.draw(st.integers(0, 10))
        w, d, h = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4)), data.draw(st.integers(1, 2))
        boxes.append(box_brush((x / 4, y / 4, z / 4), ((x + w) / 4, (y + d) / 4, (z + h) / 4), f"box{i}"))
    brushes = walls + boxes
    for i in range(data.draw(st.integers(0, 2))):
        target = brushes[data.draw(st.integers(0, len(brushes) - 1))]
        corners = np.asarray(target.vertices)
        c = corners[data.draw(st.integers(0, len(corners) - 1))]
        out = np.sign(c - corners.mean(axis=0))
        n = out + np.array([data.draw(st.floats(0.1, 0.9)) for _ in range(3)]) * out
        n /= np.linalg.norm(n)
        off = data.draw(st.floats(-0.004, 0.004))
        u = np.cross(n, (0.0, 0.0, 1.0) if abs(n[2]) < 0.9 else (1.0, 0.0, 0.0))
        centre = c + data.draw(st.floats(0.6, 2.0)) * u / np.linalg.norm(u)
        planes = np.vstack([np.eye(3), -np.eye(3), n[None]])
        dists = np.concatenate([centre + 0.25, -(centre - 0.25), [n @ c - off]])
        try:
            brushes.append(brush_from_planes(planes, dists, f"slant{i}"))
        except BrushbakeError:  # the slanted face cut the cube away
            pass
    return Scene("random", brushes=brushes, markers=[Marker("start", "player_start", (-2.9, -2.9, 0.01))])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_scenes_the_rules_agree_without_sites(data):
    scene = random_scene(data)
    exact, report, sites = verdicts(scene)
    want = {(s.brush, s.plane_brush, s.plane_index, s.vertex) for s in tip_sites(scene.brushes, REACH)}
    assert want == brute_sites(scene.brushes, REACH)
    assert {(s.brush, s.plane_brush, s.plane_index, s.vertex) for s in sites} <= want
    if not sites:
        assert report is None  # the qbsp rule is the exact one: same verdict, nothing compiled again
    else:
        # a tip under 0.1 unit cut off a box here never opens a wall 0.5 m thick, nor closes a hole
        assert report.leaks == exact.leaks and report.judged == exact.judged


def _near_brute(centre, half, normals, dists, reach):
    """Every (box, plane) pair's test, one by one: the oracle for _planes_near_boxes."""
    out = []
    for b in range(len(centre)):
        for p in range(len(normals)):
            n = normals[p]
            at = (centre[b, 0] * n[0] + centre[b, 1] * n[1]) + centre[b, 2] * n[2]
            limit = ((half[b, 0] * abs(n[0]) + half[b, 1] * abs(n[1])) + half[b, 2] * abs(n[2])) + reach
            if abs(at - dists[p]) <= limit:
                out.append((b, p))
    return out


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), boxes=st.integers(0, 60), normals=st.integers(1, 6),
       planes=st.integers(0, 80), sweep_min=st.sampled_from([1, 3, 8, 1000]), chunk=st.sampled_from([3, 1 << 22]))
def test_planes_near_boxes_are_every_pair_that_passes(seed, boxes, normals, planes, sweep_min, chunk):
    """_planes_near_boxes, swept by normal or tested against every box, gives every (box, plane)
    pair that passes the test, as the test one pair at a time: planes in a few shared normals
    (some on whole numbers, some exactly a box's reach from a box), a few boxes far wider than the
    rest (tested apart from the sweep), and runs of planes cut at 3 candidates or not at all."""
    from brushbake.core.compile.vis import sliver_seal

    rng = np.random.default_rng(seed)
    centre = np.round(rng.normal(size=(boxes, 3)) * 8, 1)
    half = np.abs(np.round(rng.normal(size=(boxes, 3)), 2))
    half[rng.random(boxes) < 0.05] *= 400.0  # a sky or a slab among the posts
    dirs = rng.normal(size=(normals, 3))
    dirs /= np.linalg.norm(dirs, axis=1)[:, None]
    n = dirs[rng.integers(0, normals, planes)]
    d = np.where(rng.random(planes) < 0.5, np.round(rng.normal(size=planes) * 8), rng.normal(size=planes) * 8)
    reach = 0.25
    if boxes and planes:  # some planes exactly at a box's limit
        k = rng.integers(0, boxes, planes)
        at = sliver_seal.matmul(centre[k][:, None, :], n[:, :, None])[:, 0, 0]
        limit = sliver_seal.matmul(half[k][:, None, :], np.abs(n)[:, :, None])[:, 0, 0] + reach
        edge = rng.random(planes) < 0.3
        d[edge] = (at + limit * rng.choice([-1.0, 1.0], planes))[edge]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sliver_seal, "SWEEP_MIN", sweep_min)
        mp.setattr(sliver_seal, "TABLE_CHUNK", chunk)
        b, p = sliver_seal._planes_near_boxes(centre, half, n, d, reach)
    assert list(zip(b.tolist(), p.tolist())) == _near_brute(centre, half, n, d, reach)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_box_without_a_finite_reach_spoils_no_sweep(bad, monkeypatch):
    """One box whose reach along the normal is NaN (or whose centre is infinite) among good ones: the
    swept planes still find every pair the test finds one pair at a time."""
    from brushbake.core.compile.vis import sliver_seal

    rng = np.random.default_rng(2)
    centre, half = rng.normal(size=(50, 3)) * 4, np.abs(rng.normal(size=(50, 3)))
    if np.isnan(bad):
        half[7] = bad
    else:
        centre[7] = bad
    n = np.tile([0.6, 0.8, 0.0], (30, 1))
    d = rng.normal(size=30) * 4
    monkeypatch.setattr(sliver_seal, "SWEEP_MIN", 2)
    with np.errstate(invalid="ignore"):  # inf x 0 in the products, in both
        b, p = sliver_seal._planes_near_boxes(centre, half, n, d, 2.0)
        want = _near_brute(centre, half, n, d, 2.0)
    assert list(zip(b.tolist(), p.tolist())) == want and len(want) > 30


@pytest.mark.parametrize("path", ["maps/id/e1m7.map", "maps/librequake/lq_e0m3.map", "maps/librequake/e3m4.map"])
def test_swept_planes_find_the_tip_sites_every_plane_finds(path, monkeypatch):
    """tip_sites on real maps the same with the planes swept by normal as with each plane tested
    against every brush's box (at a reach of 8 units, so that there are sites to find)."""
    from brushbake.core.compile.vis import sliver_seal
    from brushbake.core.formats.loaders import load_scene

    brushes = load_scene(Path(__file__).resolve().parents[2] / path).brushes
    monkeypatch.setattr(sliver_seal, "SWEEP_MIN", 10**9)
    want = tip_sites(brushes, 80 * REACH)
    monkeypatch.setattr(sliver_seal, "SWEEP_MIN", 2)
    got = tip_sites(brushes, 80 * REACH)
    assert got == want and len(want) > 40
