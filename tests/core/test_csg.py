"""core/csg.py: the union of brush faces.

Ground truths: the face-by-face reference (tests/core/csg_reference.py: the same faces to the bit,
in the same order), the exact surface area of unions of boxes worked out by hand, and for random grid
boxes a brute force on sample points: every output face lies on the union's surface (just in
front of it is outside every brush, just behind it inside one), and every point of the union's
surface found on an input face is covered by exactly one output face (no hole, no double).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from brushbake.core.model.brushes import Contents, box_brush, brush_from_planes
from brushbake.core.compile.trees.csg import brush_plane_ids, union_faces
from brushbake.core.geometry import PlaneTable, polygon_area

from csg_reference import reference_union

HYPO = settings(max_examples=50, deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate, Phase.shrink])
NUDGE = 1e-4


def union(brushes, subtract_from=0):
    planes = PlaneTable()
    ids = brush_plane_ids(brushes, planes)
    return union_faces(brushes, ids, planes, subtract_from=subtract_from), planes


def total_area(faces):
    return sum(polygon_area(v) for v in faces.verts)


def box(lo, hi, name="b", contents=Contents.SOLID):
    return box_brush(lo, hi, name, contents)


@pytest.mark.parametrize(
    "label, boxes, area",
    [
        ("one box", [([0, 0, 0], [1, 2, 3])], 22.0),
        ("two overlapping cubes", [([0, 0, 0], [2, 2, 2]), ([1, 1, 1], [3, 3, 3])], 48.0 - 6.0),
        ("face to face, the touching faces vanish", [([0, 0, 0], [1, 1, 1]), ([1, 0, 0], [2, 1, 1])], 10.0),
        ("face to face, partly", [([0, 0, 0], [1, 1, 1]), ([1, 0.5, 0], [2, 1.5, 1])], 12.0 - 1.0),
        ("flush tops, overlapping: shared faces once", [([0, 0, 0], [2, 1, 1]), ([1, 0, 0], [3, 1, 1])], 14.0),
        ("flush top, side by side apart", [([0, 0, 0], [1, 1, 1]), ([2, 0, 0], [3, 1, 2])], 6.0 + 10.0),
        ("one inside the other", [([0, 0, 0], [3, 3, 3]), ([1, 1, 1], [2, 2, 2])], 54.0),
        ("identical boxes", [([0, 0, 0], [1, 1, 1]), ([0, 0, 0], [1, 1, 1])], 6.0),
        ("inner box flush with a corner", [([0, 0, 0], [2, 2, 2]), ([0, 0, 0], [1, 1, 1])], 24.0),
        ("cross of three bars", [([-2, -0.5, -0.5], [2, 0.5, 0.5]), ([-0.5, -2, -0.5], [0.5, 2, 0.5]),
                                 ([-0.5, -0.5, -2], [0.5, 0.5, 2])], 6 * (4 * 1.5 + 1.0)),  # six arms
        ("touching along an edge only", [([0, 0, 0], [1, 1, 1]), ([1, 1, 0], [2, 2, 1])], 12.0),
    ],
)
def test_union_area_of_hand_made_boxes(label, boxes, area):
    brushes = [box(lo, hi, f"b{i}") for i, (lo, hi) in enumerate(boxes)]
    faces, _ = union(brushes)
    assert total_area(faces) == pytest.approx(area, abs=1e-9), label
    check_union_faces(brushes, faces, np.random.default_rng(0))


def test_flush_rule_keeps_the_first_brushs_face():
    a, b = box([0, 0, 0], [2, 1, 1], "first"), box([1, 0, 0], [3, 1, 1], "second")
    faces, planes = union([a, b])
    top = planes.find(np.array([0.0, 0, 1]), 1.0)
    on_top = [(v, br) for v, p, br in zip(faces.verts, faces.plane, faces.brush) if p == top]
    assert sum(polygon_area(v) for v, _ in on_top) == pytest.approx(3.0)
    owners = {br: polygon_area(v) for v, br in on_top}
    assert owners[0] == pytest.approx(2.0) and owners.get(1, 0.0) == pytest.approx(1.0)


def test_structural_brushes_cut_detail_faces_but_emit_none():
    wall = box([0, 0, 0], [1, 4, 4], "wall")
    crate = box([0.5, 1, 0], [2, 2, 1], "crate", Contents.DETAIL)
    faces, _ = union([wall, crate], subtract_from=1)
    assert set(faces.brush) == {1}
    # crate: 1.5 x 1 x 1, the half inside the wall is gone: faces outside the wall only
    assert total_area(faces) == pytest.approx(2 * (1 * 1 + 1 * 1) + 1 * 1 + 0.0, abs=1e-9)  # top, bottom, two sides of 1x1, end cap


# --------------------------------------------------------------------------------------------
# Brute force on random grid boxes


def outside_all(brushes, pts):
    return ~np.any([b.contains(pts) for b in brushes], axis=0)


def inside_some(brushes, pts):
    return np.any([b.contains(pts) for b in brushes], axis=0)


def sample_polygon(poly, count, rng, shrink=0.98):
    """Random points inside a convex polygon (fan triangles by area), pulled slightly toward
    the centroid so no sample sits on an edge."""
    tris = np.array([(poly[0], poly[j], poly[j + 1]) for j in range(1, len(poly) - 1)])
    area = 0.5 * np.linalg.norm(np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]), axis=1)
    pick = rng.choice(len(tris), size=count, p=area / area.sum())
    u, v = rng.random(count), rng.random(count)
    flip = u + v > 1
    u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
    t = tris[pick]
    pts = t[:, 0] + u[:, None] * (t[:, 1] - t[:, 0]) + v[:, None] * (t[:, 2] - t[:, 0])
    centre = poly.mean(axis=0)
    return centre + shrink * (pts - centre)


def point_in_polygon(poly, normal, pts, tol):
    """(N,) bool: inside the convex polygon (counter-clockwise seen from normal) by more than tol,
    and (N,) bool: within tol of its boundary (in the polygon's plane)."""
    edges = np.roll(poly, -1, axis=0) - poly
    inward = np.cross(normal, edges)
    inward /= np.linalg.norm(inward, axis=1)[:, None]
    dist = np.einsum("nj,kj->nk", pts, inward) - np.einsum("kj,kj->k", poly, inward)
    return (dist > tol).all(axis=1), (dist >= -tol).all(axis=1) & (np.abs(dist) <= tol).any(axis=1)


def check_union_faces(brushes, faces, rng, per_face=20):
    """The two brute-force properties of the module docstring."""
    out_n = []
    for f, verts in enumerate(faces.verts):
        brush = brushes[faces.brush[f]]
        n = brush.normals[np.argmin(np.abs(verts @ brush.normals.T - brush.dists).max(axis=0))]
        out_n.append(n)
        pts = sample_polygon(verts, per_face, rng)
        front, back = pts + NUDGE * n, pts - NUDGE * n
        assert outside_all(brushes, front).all(), f"output face {f} of brush {brush.name} is covered in front"
        assert inside_some(brushes, back).all(), f"output face {f} of brush {brush.name} has nothing behind it"
    # coverage: points of the union's surface on input faces
    covered_checked = 0
    for brush in brushes:
        for poly, n, d in zip(brush.faces, brush.normals, brush.dists):
            pts = sample_polygon(poly, per_face, rng)
            surface = outside_all(brushes, pts + NUDGE * n) & inside_some(brushes, pts - NUDGE * n)
            pts = pts[surface]
            if not len(pts):
                continue
            count = np.zeros(len(pts), int)
            near_edge = np.zeros(len(pts), bool)
            for f, verts in enumerate(faces.verts):
                if out_n[f] @ n < 1 - 1e-9 or abs(float(verts[0] @ n) - d) > 1e-9:
                    continue  # another plane, or the same plane facing the other way
                inside, edge = point_in_polygon(verts, n, pts, 1e-7)
                count += inside
                near_edge |= edge
            ok = ~near_edge
            covered_checked += int(ok.sum())
            bad = ok & (count != 1)
            assert not bad.any(), (f"{int(bad.sum())} surface points of {brush.name}'s face n={n.tolist()} d={d} "
                                   f"are covered by {count[bad][:5].tolist()} output faces")
    return covered_checked


grid = st.integers(-6, 6).map(lambda k: k * 0.25)
extent = st.integers(1, 8).map(lambda k: k * 0.25)
box_spec = st.tuples(st.tuples(grid, grid, grid), st.tuples(extent, extent, extent))


@HYPO
@given(specs=st.lists(box_spec, min_size=1, max_size=7), seed=st.integers(0, 2**31))
def test_random_grid_boxes_union_against_brute_force(specs, seed):
    brushes = [box(lo, np.add(lo, size), f"b{i}") for i, (lo, size) in enumerate(specs)]
    faces, _ = union(brushes)
    checked = check_union_faces(brushes, faces, np.random.default_rng(seed))
    assert checked > 0


@HYPO
@given(specs=st.lists(box_spec, min_size=1, max_size=5),
       cut=st.tuples(st.integers(-2, 2), st.integers(-2, 2), st.integers(-2, 2)).filter(any),
       seed=st.integers(0, 2**31))
def test_random_boxes_with_a_slanted_brush(specs, cut, seed):
    brushes = [box(lo, np.add(lo, size), f"b{i}") for i, (lo, size) in enumerate(specs)]
    n = np.array(cut, float) / np.linalg.norm(cut)
    normals = np.vstack([np.eye(3), -np.eye(3), n])
    wedge = brush_from_planes(normals, [1, 1, 1, 1, 1, 1, 0.25], "wedge")
    brushes.append(wedge)
    faces, _ = union(brushes)
    check_union_faces(brushes, faces, np.random.default_rng(seed))


def same_as_reference(brushes, subtract_from=0):
    faces, planes = union(brushes, subtract_from)
    ref, ref_planes = reference_union(brushes, subtract_from)
    assert len(faces) == len(ref)
    for f, (verts, pid, brush) in enumerate(ref):
        assert faces.brush[f] == brush and faces.plane[f] == pid
        assert faces.verts[f].shape == verts.shape and np.array_equal(faces.verts[f], verts), f
    return faces


@HYPO
@given(specs=st.lists(box_spec, min_size=1, max_size=8),
       cut=st.tuples(st.integers(-2, 2), st.integers(-2, 2), st.integers(-2, 2)).filter(any),
       detail=st.integers(0, 8))
def test_the_rounds_give_the_face_by_face_reference_to_the_bit(specs, cut, detail):
    brushes = [box(lo, np.add(lo, size), f"b{i}") for i, (lo, size) in enumerate(specs)]
    n = np.array(cut, float) / np.linalg.norm(cut)
    brushes.insert(len(brushes) // 2, brush_from_planes(np.vstack([np.eye(3), -np.eye(3), n]),
                                                        [1, 1, 1, 1, 1, 1, 0.25], "wedge"))
    same_as_reference(brushes, subtract_from=min(detail, len(brushes)))


wide_grid = st.integers(-12, 12).map(lambda k: k * 8.0 + 0.5)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(specs=st.lists(st.tuples(st.tuples(wide_grid, wide_grid), st.integers(1, 80).map(lambda k: k * 0.5),
                                 st.integers(1, 80).map(lambda k: k * 0.5)), min_size=1, max_size=6),
       slant=st.booleans(), seed=st.integers(0, 2**31))
def test_faces_wider_than_a_cell_are_cut_at_its_lines_and_the_union_stays_exact(specs, slant, seed):
    """A floor 200 m wide (past the 64 m world lines at -64, 0 and 64) with walls and blocks on it,
    some over a line: the floor's top is cut at the lines it crosses before the walls cut it, as
    the face-by-face reference does (the same faces to the bit), and the union's surface is the
    brute-force one."""
    brushes = [box([-100, -100, -1], [100, 100, 0], "floor")]
    for k, ((x, y), w, d) in enumerate(specs):
        brushes.append(box([x, y, 0], [min(x + w, 99.0), min(y + d, 99.0), 2.0 + k], f"b{k}"))
    if slant:
        brushes.append(brush_from_planes(np.vstack([np.eye(3), -np.eye(3), [[0.6, 0.0, 0.8]]]),
                                         [90, 90, 3, 90, 90, 1, 10.0], "ramp"))
    faces = same_as_reference(brushes)
    top = [v for b, v in zip(faces.brush, faces.verts) if b == 0 and np.all(v[:, 2] == 0)]
    assert all(np.ptp(v[:, 0]) <= 64.0 + 1e-9 and np.ptp(v[:, 1]) <= 64.0 + 1e-9 for v in top)  # within a cell
    check_union_faces(brushes, faces, np.random.default_rng(seed), per_face=4)


def test_a_floor_is_cut_only_where_something_stands_on_it():
    """Posts at scattered places on one floor slab: each post's cut stays where the post is (its
    planes do not slice the rest of the floor), so the floor's top ends in a few pieces a post,
    not in the grid of every post's every side (thousands here)."""
    rng = np.random.default_rng(5)
    posts = [box([x, y, 0], [x + 0.3, y + 0.2, 1], f"post{k}") for k, (x, y) in enumerate(rng.random((60, 2)) * 40)]
    brushes = [box([-1, -1, -1], [41, 41, 0], "floor")] + posts
    faces = same_as_reference(brushes)
    top = sum(1 for b, v in zip(faces.brush, faces.verts) if b == 0 and np.all(v[:, 2] == 0))
    assert top <= 4 * len(posts) + 1
    check_union_faces(brushes, faces, np.random.default_rng(0), per_face=4)
