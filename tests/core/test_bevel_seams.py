"""Seam bevels (core/compile/trees/bevel_seams.py): a solid split through a sharp edge or a vertex,
by a region line or by another face's plane, is beveled as the unsplit solid, so plane shifting
stops a sphere no earlier than it does on the same solid unsplit.  Truth: exact point-to-brush
distances (tests/core/test_shift.py) along segments, bisected to the first contact."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_shift import _dist_to_brushes, sphere_report

from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.compile.trees.bevel import bevel_tree
from brushbake.core.model.brushes import box_brush, brush_from_planes
from brushbake.core.model.scene import Scene, Settings
from brushbake.core.runtime.query import point_solid
from brushbake.core.runtime.shift import ShiftTree, Sphere

RADIUS = 0.25


def ridge(apex_y: float, half_angle: float, name: str = "ridge", x=(0.0, 4.0), height: float = 2.0):
    """A prism along x on z = 0 whose two slopes meet at (apex_y, 2) at 2 * half_angle degrees."""
    s, c = np.sin(np.radians(90 - half_angle)), np.cos(np.radians(90 - half_angle))
    planes = [((0, s, c), s * apex_y + c * height), ((0, -s, c), -s * apex_y + c * height), ((0, 0, -1), 0.0),
              ((1, 0, 0), x[1]), ((-1, 0, 0), -x[0])]
    return brush_from_planes([np.array(n, float) for n, _ in planes], [d for _, d in planes], name)


def pyramid(apex, half_angle: float, name: str = "pyramid"):
    """A four-sided pyramid standing on z = 0, its tip at `apex`, faces half_angle off vertical."""
    s, c = np.sin(np.radians(90 - half_angle)), np.cos(np.radians(90 - half_angle))
    apex = np.asarray(apex, float)
    normals = [np.array(n, float) for n in ((s, 0, c), (-s, 0, c), (0, s, c), (0, -s, c), (0, 0, -1))]
    return brush_from_planes(normals, [float(n @ apex) for n in normals[:4]] + [0.0], name)


FLOOR = box_brush((-3, -4, -1), (7, 4, 0), "floor")


def worst_early(scene: Scene, starts, ends) -> tuple[float, int]:
    """The largest distance (m) by which the beveled tree stops a sphere before its exact first
    contact (sampled every 0.05 % and bisected), over the segments; and the seam bevels made."""
    level = compile_scene(scene)
    beveled = bevel_tree(level, level.world_bounds)
    tree = ShiftTree(beveled.tree())
    brushes = list(scene.brushes)
    worst = 0.0
    ts = np.linspace(0.0, 1.0, 2001)
    for s0, e0 in zip(starts, ends):
        s0, e0 = np.asarray(s0, float), np.asarray(e0, float)
        hit = tree.hit_check(Sphere(RADIUS), s0, e0)
        dist = _dist_to_brushes(s0 + ts[:, None] * (e0 - s0), brushes, RADIUS)
        touch = dist <= RADIUS
        assert hit.hit or not (dist < RADIUS - 1e-6).any(), (s0, e0)  # never through (grazing is free)
        if hit.hit and touch.any():
            k = int(np.argmax(touch))
            lo, hi = ts[max(k - 1, 0)], ts[k]
            for _ in range(40):
                mid = 0.5 * (lo + hi)
                inside = _dist_to_brushes((s0 + mid * (e0 - s0))[None], brushes, RADIUS)[0] <= RADIUS
                lo, hi = (lo, mid) if inside else (mid, hi)
            assert hit.fraction <= hi + 1e-9, (s0, e0)  # never late
            worst = max(worst, (hi - hit.fraction) * float(np.linalg.norm(e0 - s0)))
    return worst, beveled.stats["seam_bevels"]


def glides(x: float, y0: float, y1: float):
    """Segments across a ridge along x: level and falling, from below the apex to above its reach
    (never exactly at its reach, 2.25 m, where a sphere grazes the apex: touching or not is a tie)."""
    starts, ends = [], []
    for z in np.linspace(1.5, 2.35, 37):
        for dz in (0.0, -0.3, -0.6):
            starts.append((x, y0, z))
            ends.append((x, y1, z + dz))
    return starts, ends


@pytest.mark.parametrize("half_angle", [15.0, 30.0, 45.0, 60.0])
def test_a_region_line_through_a_ridge_stops_a_sphere_where_the_unsplit_ridge_does(half_angle):
    """The region line y = 0 runs through the ridge's apex.  Without seams each half's corner grew
    to a ghost edge: along these glides spheres stopped 0.232 m early (r = 0.25) at 30, 45 and 60
    degrees, where the unsplit ridge's own bevels stop them 0.051, 0.086 and 0.127 m early."""
    brushes = [FLOOR, ridge(0.0, half_angle)]
    starts, ends = glides(2.0, -3.0, 3.0)
    unsplit, none = worst_early(Scene("ridge", brushes=brushes, settings=Settings(region_size=0.0)), starts, ends)
    split, seams = worst_early(Scene("ridge", brushes=brushes, settings=Settings(region_size=64.0)), starts, ends)
    assert none == 0 and seams > 0
    assert split <= unsplit + 1e-6, (split, unsplit)


def test_a_region_corner_through_a_pyramid_tip_stops_a_sphere_where_the_unsplit_pyramid_does():
    """Two region lines (x = 0, y = 0) meet under the tip: four cells share the tip vertex."""
    brushes = [FLOOR, pyramid((0.0, 0.0, 2.0), 35.0)]
    starts, ends = [], []
    for a in np.linspace(0.0, np.pi, 9):
        d = np.array([np.cos(a), np.sin(a), 0.0])
        for z in np.linspace(1.6, 2.3, 12):
            starts.append(tuple(-2.5 * d + (0, 0, z)))
            ends.append(tuple(2.5 * d + (0, 0, z - 0.4)))
    unsplit, _ = worst_early(Scene("tip", brushes=brushes, settings=Settings(region_size=0.0)), starts, ends)
    split, seams = worst_early(Scene("tip", brushes=brushes, settings=Settings(region_size=64.0)), starts, ends)
    assert seams > 0  # before seams: 0.120 m early here, against 0.074 m unsplit
    assert split <= unsplit + 1e-6, (split, unsplit)


def test_a_floor_cut_by_a_line_lends_nothing():
    """A flat slab crossing region lines: each piece's faces at the line are its own planes."""
    slab = Scene("slab", brushes=[box_brush((-3, -3, -1), (3, 3, 0), "slab")], settings=Settings(region_size=1.0))
    level = compile_scene(slab)
    assert bevel_tree(level, level.world_bounds).stats["seam_bevels"] == 0


@st.composite
def pointed_scenes(draw):
    """Floors, ridges and pyramids on a 0.5 m grid, so apexes often sit on 1 m region lines."""
    brushes = [box_brush((-3, -3, -1), (3, 3, 0), "floor")]
    for i in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["ridge", "pyramid"]))
        at = [0.5 * draw(st.integers(-4, 4)) for _ in range(2)]
        angle = draw(st.sampled_from([20.0, 35.0, 45.0, 60.0]))
        height = draw(st.sampled_from([1.0, 1.5, 2.0]))
        if kind == "ridge":
            brushes.append(ridge(at[1], angle, f"ridge{i}", x=(at[0] - 1.0, at[0] + 1.0), height=height))
        else:
            brushes.append(pyramid((at[0], at[1], height), angle, f"pyramid{i}"))
    return brushes


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(brushes=pointed_scenes(), seed=st.integers(0, 2**31))
def test_random_pointed_scenes_cut_by_regions_answer_as_truth(brushes, seed):
    """Random scenes cut by 1 m region lines: the beveled tree answers points as the plain tree, and
    spheres never pass through a brush nor stop after their exact first contact."""
    scene = Scene("pointed", brushes=brushes, settings=Settings(region_size=1.0))
    level = compile_scene(scene)
    beveled = bevel_tree(level, level.world_bounds)
    lo, hi = level.world_bounds
    pts = lo + np.random.default_rng(seed).random((20000, 3)) * (hi - lo)
    assert np.array_equal(point_solid(level, pts), point_solid(beveled.tree(), pts))
    rep = sphere_report(scene, RADIUS, 300, seed % 1000)
    assert rep["no_hit_with_contact"] == 0 and rep["late"] == 0, rep
    assert not (rep["truth_hit"] & ~rep["r"].hit).any()
