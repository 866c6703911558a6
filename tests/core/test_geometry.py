"""core/geometry.py: normals, the plane table, convex polygons (classify, split, clip, area).

Ground truths: exact areas of hand-made polygons, a brute-force search over every stored plane for
the plane table, and signed distances recomputed from scratch for split halves.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from brushbake.core.geometry import (
    PlaneTable,
    Side,
    base_polygon,
    classify_points,
    classify_polygon,
    clip_polygon,
    order_polygon_vertices,
    plane_from_points,
    polygon_area,
    polygon_normal_area,
    snap_normal,
    snap_normals,
    split_polygon,
    split_polygons,
)
from brushbake.core.tolerances import (
    AXIAL_SNAP_EPSILON,
    DIST_EPSILON,
    MIN_EDGE_LENGTH,
    NORMAL_EPSILON,
    ON_EPSILON,
    WORLD_HALF_EXTENT,
)

#: fixed examples for a stable CI; no 'explain' phase (it can take minutes on a failure)
HYPO = settings(max_examples=60, deadline=None, derandomize=True,
                phases=[Phase.explicit, Phase.generate, Phase.shrink])


def unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


# --------------------------------------------------------------------------------------------
# Normals


def test_snap_normal_makes_near_axial_normals_exactly_axial():
    """Rounding-level tilts snap; a real tilt (1e-6 rad moves a plane 100 m out by 0.1 mm, ten
    times ON_EPSILON) does not."""
    for axis in range(3):
        for sign in (1.0, -1.0):
            n = np.full(3, 1e-10)
            n[axis] = sign
            expect = np.zeros(3)
            expect[axis] = sign
            assert snap_normal(n).tolist() == expect.tolist()
            tilted = np.full(3, 1e-6)
            tilted[axis] = sign
            assert snap_normal(tilted).tolist() != expect.tolist()


def test_snap_normal_keeps_tilted_normals_and_normalises():
    n = snap_normal([3.0, 4.0, 0.0])
    assert n.tolist() == [0.6, 0.8, 0.0]
    tilted = snap_normal([1.0, 1e-3, 0.0])  # 1 - n.x = 5e-7 > AXIAL_SNAP_EPSILON: stays tilted
    assert tilted[1] > 0 and abs(np.linalg.norm(tilted) - 1) < 1e-15
    assert 1 - tilted[0] > AXIAL_SNAP_EPSILON


@HYPO
@given(st.lists(st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 3).filter(lambda v: sum(x * x for x in v) > 1e-3),
                min_size=1, max_size=20))
def test_snap_normals_is_snap_normal_row_by_row(rows):
    normals = np.array([unit(r) for r in rows])
    one_by_one = np.array([snap_normal(n) for n in normals])
    batch = snap_normals(normals)
    assert np.abs(batch - one_by_one).max() <= 4e-16  # snap_normal renormalises: an ulp or two
    axial = np.count_nonzero(one_by_one, axis=1) == 1
    assert np.array_equal(batch[axial], one_by_one[axial])


def test_plane_from_points_orientation_and_collinear_error():
    n, d = plane_from_points([0, 0, 1], [1, 0, 1], [0, 1, 1])  # (b - a) x (c - a) = +z
    assert n.tolist() == [0.0, 0.0, 1.0] and d == 1.0
    with pytest.raises(ValueError, match="collinear"):
        plane_from_points([0, 0, 0], [1, 1, 1], [2, 2, 2])


# --------------------------------------------------------------------------------------------
# Plane table


def test_plane_table_stores_each_plane_beside_its_flip():
    t = PlaneTable()
    a = t.add(np.array([0.0, 0.0, 1.0]), 2.0)
    b = t.add(np.array([0.0, 0.0, -1.0]), -2.0)  # the same plane facing down
    c = t.add(unit([1, 2, 3]), 0.5)
    assert a == 0 and b == 1 and b == a ^ 1
    assert len(t) == 4
    for i in range(len(t)):
        assert np.array_equal(t.normals[i ^ 1], -t.normals[i])
        assert t.dists[i ^ 1] == -t.dists[i]
    assert a >> 1 == b >> 1 and a >> 1 != c >> 1
    # canonical (even) member: dominant component positive
    for i in range(0, len(t), 2):
        assert t.normals[i][np.argmax(np.abs(t.normals[i]))] > 0


def test_plane_table_dedups_within_tolerance_only():
    t = PlaneTable()
    n = unit([1, 2, 3])
    i = t.add(n, 1.0)
    assert t.add(n, 1.0 + 0.5 * DIST_EPSILON) == i
    assert t.add(n + 0.5 * NORMAL_EPSILON * unit([1, -1, 0]), 1.0) == i
    assert t.add(-n, -1.0 - 0.5 * DIST_EPSILON) == i ^ 1
    assert t.add(n, 1.0 + 2 * DIST_EPSILON) >> 1 != i >> 1
    assert t.add(unit(n + 5 * NORMAL_EPSILON * unit([1, -1, 0])), 1.0) >> 1 != i >> 1
    assert t.find(n, 1.0) == i and t.find(-n, -1.0) == i ^ 1 and t.find(n, 7.0) == -1


def test_plane_table_dedups_across_hash_bucket_boundaries():
    t = PlaneTable()
    n = np.array([0.0, 0.0, 1.0])
    for d in (0.01, 0.02, -0.01, 0.0):  # exact multiples of the 0.01 m bucket
        i = t.add(n, d - 0.4 * DIST_EPSILON)
        assert t.add(n, d + 0.4 * DIST_EPSILON) == i
        assert t.add(-n, -(d + 0.4 * DIST_EPSILON)) == i ^ 1


def test_plane_table_snaps_near_axial_normals():
    t = PlaneTable()
    i = t.add(unit([1e-10, -1.0, 2e-10]), 3.0)
    assert t.normal(i).tolist() == [0.0, -1.0, 0.0] and t.dist(i) == 3.0
    assert t.add(np.array([0.0, -1.0, 0.0]), 3.0) == i


def test_plane_table_dedups_diagonal_planes_whatever_the_rounding():
    """A 45-degree plane has two components of equal size; rounding decides which one is
    'dominant'.  The same plane must get one index however the last bit falls (e3m4.map has 80
    such duplicated planes, and the duplicates break the coplanar tests of CSG and the tree)."""
    a = np.array([0.7071067811865476, -0.7071067811865475, 0.0])
    b = np.array([0.7071067811865475, -0.7071067811865476, 0.0])
    assert np.abs(a - b).max() < NORMAL_EPSILON
    t = PlaneTable()
    i = t.add(a, 1.0)
    assert t.add(b, 1.0) == i
    assert t.add(-b, -1.0) == i ^ 1
    assert t.find(b, 1.0) == i


plane_pool = st.sampled_from([
    (1.0, 0.0, 0.0), (0.0, 0.0, -1.0), (1.0, 1.0, 0.0), (1.0, -1.0, 0.0), (0.0, 1.0, 1.0), (1.0, 1.0, 1.0),
    (-1.0, 1.0, 1.0), (1.0, 2.0, 0.0), (0.3, -0.4, 0.866), (2.0, -1.0, 2.0),
])


@st.composite
def near_planes(draw):
    """A plane from a small pool (axial, diagonal, tilted), flipped or not, nudged by amounts
    around the tolerances so both 'same' and 'different' cases happen."""
    n = unit(draw(plane_pool))
    d = draw(st.sampled_from([0.0, 0.01, 1.0, -2.5, 100.0]))
    scale_n = draw(st.sampled_from([0.0, 1e-17, 2e-16, 1e-15, 1e-12, 0.3 * NORMAL_EPSILON, 3 * NORMAL_EPSILON]))
    scale_d = draw(st.sampled_from([0.0, 1e-12, 0.3 * DIST_EPSILON, 0.99 * DIST_EPSILON, 3 * DIST_EPSILON]))
    jitter = np.array(draw(st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 3)))
    n = unit(n + scale_n * jitter)
    # rounding noise: move each component by an ulp up, down or not (ties of |n_i| break either way)
    ulps = draw(st.tuples(*[st.sampled_from([-1, 0, 1])] * 3))
    n = np.array([np.nextafter(x, x + u) if u else x for x, u in zip(n, ulps)])
    d = d + scale_d * draw(st.floats(-1, 1, allow_nan=False))
    if draw(st.booleans()):
        n, d = -n, -d
    return n, d


def _within(n1, d1, n2, d2):
    return bool(np.all(np.abs(n1 - n2) < NORMAL_EPSILON) and abs(d1 - d2) < DIST_EPSILON)


@HYPO
@given(st.lists(near_planes(), min_size=1, max_size=40))
@example([(np.array([0.7071067811865476, -0.7071067811865475, 0.0]), 1.0),
          (np.array([0.7071067811865475, -0.7071067811865476, 0.0]), 1.0)])
def test_plane_table_against_brute_force(planes):
    """Every answer is within tolerance of what was added; a plane within tolerance of a stored
    one (either facing) is never added again; stored pairs are flips of each other."""
    t = PlaneTable()
    for n, d in planes:
        sn = snap_normal(n)
        before = len(t)
        stored = [(i, t.normals[i].copy(), float(t.dists[i])) for i in range(before)]
        i = t.add(n, d)
        assert _within(t.normals[i], t.dists[i], sn, d), "the index returned is not the plane added"
        if any(_within(sn_, d_, sn, d) for _, sn_, d_ in stored):
            assert len(t) == before, f"plane {sn}, {d} was within tolerance of a stored plane but was added again"
    assert len(t) % 2 == 0
    assert np.array_equal(t.normals[1::2], -t.normals[0::2]) and np.array_equal(t.dists[1::2], -t.dists[0::2])


# --------------------------------------------------------------------------------------------
# Polygons


def regular_polygon(k, centre, n, radius=1.0, phase=0.0):
    """A regular k-gon on the plane through centre with normal n, counter-clockwise seen from n."""
    n = unit(n)
    u = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(n, u)
    a = phase + 2 * np.pi * np.arange(k) / k
    return np.asarray(centre, float) + radius * (np.cos(a)[:, None] * u + np.sin(a)[:, None] * v)


def test_polygon_normal_area_of_a_unit_square():
    sq = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], float)
    n, area = polygon_normal_area(sq)
    assert n.tolist() == [0.0, 0.0, 1.0] and area == 1.0
    n, area = polygon_normal_area(sq[::-1])
    assert n.tolist() == [0.0, 0.0, -1.0] and area == 1.0
    assert polygon_area(2 * sq) == 4.0
    assert polygon_normal_area(np.zeros((3, 3)))[1] == 0.0


def test_classify():
    assert classify_points(np.array([1.0, 2.0])) == Side.FRONT
    assert classify_points(np.array([-1.0, 0.5 * ON_EPSILON])) == Side.BACK
    assert classify_points(np.array([0.5 * ON_EPSILON, -0.5 * ON_EPSILON])) == Side.ON
    assert classify_points(np.array([-1.0, 1.0])) == Side.SPANNING
    sq = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], float)
    z = np.array([0.0, 0.0, 1.0])
    assert classify_polygon(sq, z, 0.0) == Side.ON
    assert classify_polygon(sq, z, -1.0) == Side.FRONT
    assert classify_polygon(sq, np.array([1.0, 0, 0]), 0.5) == Side.SPANNING


def test_split_square_in_half_exactly():
    sq = np.array([[0, 0, 0], [2, 0, 0], [2, 2, 0], [0, 2, 0]], float)
    front, back = split_polygon(sq, np.array([1.0, 0, 0]), 1.0)
    assert polygon_area(front) == 2.0 and polygon_area(back) == 2.0
    assert front[:, 0].min() == 1.0 and back[:, 0].max() == 1.0  # axial cut: new vertices exactly on it
    assert sorted(map(tuple, front[front[:, 0] == 1.0])) == sorted(map(tuple, back[back[:, 0] == 1.0]))


def test_split_polygon_on_one_side_or_on_the_plane():
    sq = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], float)
    x = np.array([1.0, 0, 0])
    f, b = split_polygon(sq, x, -1.0)
    assert f is sq and b is None
    f, b = split_polygon(sq, x, 2.0)
    assert f is None and b is sq
    f, b = split_polygon(sq, np.array([0, 0, 1.0]), 0.0)  # on the plane: (verts, None), caller decides
    assert f is sq and b is None
    f, b = split_polygon(sq, x, 1.0 - 0.5 * ON_EPSILON)  # an edge within eps of the plane: not split
    assert f is None and b is sq
    assert clip_polygon(sq, x, 0.25, keep=Side.BACK)[:, 0].max() == 0.25
    assert clip_polygon(sq, x, 0.25, keep=Side.FRONT)[:, 0].min() == 0.25
    assert clip_polygon(sq, x, -3.0, keep=Side.BACK) is None


@HYPO
@given(
    k=st.integers(3, 9),
    poly_normal=st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 3).filter(lambda v: sum(x * x for x in v) > 0.05),
    cut_normal=st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 3).filter(lambda v: sum(x * x for x in v) > 0.05),
    offset=st.floats(-0.95, 0.95),
    radius=st.floats(0.01, 50.0),
    phase=st.floats(0, 6.3),
    centre=st.tuples(*[st.floats(-100, 100, allow_nan=False)] * 3),
)
def test_split_polygon_halves_add_up(k, poly_normal, cut_normal, offset, radius, phase, centre):
    poly = regular_polygon(k, centre, poly_normal, radius, phase)
    n = snap_normal(cut_normal)
    d = float(n @ np.asarray(centre)) + offset * radius
    dist = poly @ n - d
    front, back = split_polygon(poly, n, d)
    area = polygon_area(poly)
    pieces = [p for p in (front, back) if p is not None]
    assert pieces, "a split lost the whole polygon"
    total = sum(polygon_area(p) for p in pieces)
    # dropped sliver vertices (< MIN_EDGE_LENGTH) may cost at most a sliver of area
    assert abs(total - area) <= 1e-9 * area + 4 * MIN_EDGE_LENGTH * radius
    n_poly = polygon_normal_area(poly)[0]
    for piece in pieces:
        assert len(piece) >= 3
        assert polygon_normal_area(piece)[0] @ n_poly > 0.999999  # same facing, still convex-ordered
        assert np.abs((piece - poly[0]) @ n_poly).max() < 1e-9 * max(1.0, np.abs(centre).max())  # on the polygon's plane
    if front is not None:
        assert ((front @ n - d) >= -ON_EPSILON).all()
    if back is not None:
        assert ((back @ n - d) <= ON_EPSILON).all()
    if front is not None and back is not None:
        assert dist.max() > ON_EPSILON and dist.min() < -ON_EPSILON
        shared_f = front[np.abs(front @ n - d) <= ON_EPSILON]
        shared_b = back[np.abs(back @ n - d) <= ON_EPSILON]
        # the cut edge: the same vertices in both halves, on the plane
        assert sorted(map(tuple, shared_f.round(12))) == sorted(map(tuple, shared_b.round(12)))
        assert len(shared_f) >= 2
        # made by the split: on the plane to rounding (an original vertex within ON_EPSILON of the
        # plane is shared too, as it is)
        made = shared_f[~np.isin(shared_f.round(12), poly.round(12)).all(axis=1)]
        assert not len(made) or np.abs(made @ n - d).max() < 1e-9 * max(1.0, np.abs(centre).max())
        if np.count_nonzero(n) == 1:  # axial cut: the new vertices lie exactly on the plane
            axis = int(np.flatnonzero(n)[0])
            new = front[~np.isin(front.round(12), poly.round(12)).all(axis=1)]
            assert np.all(new[:, axis] * n[axis] == d)
    else:
        piece = front if front is not None else back
        assert piece is poly


def test_base_polygon_lies_on_its_plane_and_faces_its_normal():
    for n, d in ((np.array([0, 0, 1.0]), 3.0), (unit([1, 2, -2]), -7.0), (np.array([-1.0, 0, 0]), 0.5)):
        poly = base_polygon(n, d)
        assert np.abs(poly @ n - d).max() < 1e-9
        normal, area = polygon_normal_area(poly)
        assert normal @ n > 1 - 1e-12
        assert area == pytest.approx((2 * WORLD_HALF_EXTENT) ** 2, rel=1e-12)


def test_order_polygon_vertices_sorts_counter_clockwise():
    rng = np.random.default_rng(3)
    for n in (np.array([0, 0, 1.0]), unit([1, -2, 0.5]), np.array([0, -1.0, 0])):
        poly = regular_polygon(7, [1, 2, 3], n)
        shuffled = poly[rng.permutation(len(poly))]
        ordered = order_polygon_vertices(shuffled, n)
        normal, area = polygon_normal_area(ordered)
        assert normal @ n > 1 - 1e-12 and area == pytest.approx(polygon_area(poly), rel=1e-12)
        assert math.isclose(polygon_area(ordered), 7 / 2 * math.sin(2 * math.pi / 7), rel_tol=1e-12)


def test_a_plane_tilted_by_rounding_is_not_treated_as_axial():
    """n = (1e-9, 1, 0) has a component that rounds to exactly 1 but is not axial (snap_normal
    keeps tilts of 1e-9): split vertices must lie on the tilted plane, not at y = d (found by
    hypothesis: they were put at y = d, 1e-9 * x off the plane)."""
    n = np.array([1e-9, 1.0, 0.0])
    d = 1e-9
    tri = np.array([[0.0, -1.0, 0.0], [2000.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    for front, back in (split_polygon(tri, n, d),):
        for piece in (front, back):
            new = piece[~np.isin(piece.round(12), tri.round(12)).all(axis=1)]
            assert len(new) and np.abs(new @ n - d).max() < 1e-12
    counts = np.array([3])
    dist = (tri @ n - d)[None, :]
    f, nf, b, nb = split_polygons(tri[None], counts, dist, n[None], np.array([d]))
    for piece, k in ((f[0], nf[0]), (b[0], nb[0])):
        new = piece[:k][~np.isin(piece[:k].round(12), tri.round(12)).all(axis=1)]
        assert len(new) and np.abs(new @ n - d).max() < 1e-12
