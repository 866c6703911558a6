"""core/brushes.py: brushes from planes and from Blender-like mesh data, and the typed errors a
designer's mistakes raise (each message names the brush or object).

Ground truths: exact volumes of boxes and a tetrahedron, a dense point sample against the planes
for containment, and hand-built meshes (cube, subdivided cube, L-shape, open box).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from brushbake.core.model.brushes import Contents, box_brush, brush_from_mesh, brush_from_planes
from brushbake.core.errors import (
    BrushbakeError,
    BrushError,
    DegenerateBrushError,
    DuplicatePlaneError,
    InvalidCoordinatesError,
    NonConvexBrushError,
    OpenMeshError,
)
from brushbake.core.geometry import polygon_normal_area
from brushbake.core.tolerances import ON_EPSILON

HYPO = settings(max_examples=40, deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate, Phase.shrink])
BOX_NORMALS = np.vstack([np.eye(3), -np.eye(3)])


def box_planes(lo, hi):
    return BOX_NORMALS.copy(), np.concatenate([np.asarray(hi, float), -np.asarray(lo, float)])


def check_faces(brush):
    """Every face lies on its plane, faces outward (Newell normal = plane normal), and the faces
    close (sum of area * normal = 0)."""
    closure = np.zeros(3)
    for face, n, d in zip(brush.faces, brush.normals, brush.dists):
        assert np.abs(face @ n - d).max() < 1e-9
        normal, area = polygon_normal_area(face)
        assert normal @ n > 1 - 1e-9 and area > 0
        closure += area * n
        # every vertex of the brush is behind every plane
        assert (brush.vertices @ n - d).max() < 1e-9
    assert np.abs(closure).max() < 1e-9


# --------------------------------------------------------------------------------------------
# From planes


def test_box_volume_faces_bounds_exact():
    b = box_brush([0, 0, 0], [1, 2, 3], "crate")
    assert b.volume == pytest.approx(6.0, rel=1e-14)
    assert len(b.faces) == 6 and len(b.vertices) == 8
    assert b.bounds.tolist() == [[0, 0, 0], [1, 2, 3]]
    assert b.contents == Contents.SOLID and b.name == "crate"
    check_faces(b)


@HYPO
@given(lo=st.tuples(*[st.integers(-400, 400)] * 3), size=st.tuples(*[st.integers(1, 200)] * 3))
def test_random_box_volumes_are_exact(lo, size):
    lo = np.array(lo) / 8.0
    hi = lo + np.array(size) / 8.0
    b = box_brush(lo, hi, "box")
    assert b.volume == pytest.approx(float(np.prod(hi - lo)), rel=1e-12)
    check_faces(b)


def test_tetrahedron_volume_and_containment():
    # corner tetrahedron x, y, z >= 0, x + y + z <= 1: volume 1/6
    normals = [[-1, 0, 0], [0, -1, 0], [0, 0, -1], [1, 1, 1]]
    dists = [0, 0, 0, 1]
    b = brush_from_planes(normals, dists, "tetra", Contents.DETAIL)
    assert b.volume == pytest.approx(1 / 6, rel=1e-12)
    assert len(b.faces) == 4 and len(b.vertices) == 4
    assert b.dists[3] == pytest.approx(1 / np.sqrt(3))  # normals are normalised, distances scaled
    check_faces(b)
    pts = np.random.default_rng(0).random((20000, 3))
    assert np.array_equal(b.contains(pts), pts.sum(axis=1) < 1)
    assert b.contains([[0.0, 0.2, 0.2]]).tolist() == [False]  # on a face: not strictly inside


@HYPO
@given(
    cuts=st.lists(st.tuples(st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 3).filter(lambda v: sum(x * x for x in v) > 0.05),
                            st.floats(0.1, 0.9)), min_size=1, max_size=5),
)
def test_cut_cube_volume_matches_an_independent_hull(cuts):
    """Volume against scipy's convex hull of vertices found by brute force (every triple of
    planes solved, kept when behind all planes); containment against the planes themselves."""
    from scipy.spatial import ConvexHull

    normals, dists = box_planes([-1, -1, -1], [1, 1, 1])
    normals, dists = list(normals), list(dists)
    for n, frac in cuts:
        n = np.array(n) / np.linalg.norm(n)
        normals.append(n)
        dists.append(frac * np.abs(n).sum())
    N, D = np.array(normals), np.array(dists)
    if any(0 < 1 - np.abs(n).max() < 1e-8 for n in N):
        return  # near-axial tilts are snapped (test_axial_snapping_does_not_move_planes covers that)
    try:
        b = brush_from_planes(N, D, "cut")
    except DegenerateBrushError:
        return
    check_faces(b)
    corners = []
    for tri in itertools.combinations(range(len(N)), 3):
        A = N[list(tri)]
        if abs(np.linalg.det(A)) > 1e-9:
            p = np.linalg.solve(A, D[list(tri)])
            if (N @ p - D).max() <= 1e-9:
                corners.append(p)
    assert ConvexHull(np.array(corners)).volume == pytest.approx(b.volume, rel=1e-9, abs=1e-12)
    pts = np.random.default_rng(1).uniform(-1, 1, (20_000, 3))
    assert np.array_equal(b.contains(pts), np.all(pts @ N.T - D < 0, axis=1))


def test_axial_snapping_does_not_move_planes():
    """Snapping a near-axial normal to the axis must not move the brush's surface by more than
    ON_EPSILON.  A floor tilted by 1e-5 rad (float32 noise on a Blender mesh is of this order)
    100 m from the origin: snapping the normal but keeping the distance lifts the whole top face
    by about 1 mm.  (1 - |n_z| < AXIAL_SNAP_EPSILON = 1e-9 holds for tilts up to 4.5e-5 rad.)"""
    tilt = 1e-5
    top = np.array([tilt, 0.0, 1.0]) / np.hypot(tilt, 1.0)
    on_top = np.array([100.0, 0.5, 0.0])  # the top passes through this point
    normals = [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, -1], top]
    dists = [101, -99, 1, 0, 1, float(top @ on_top)]
    b = brush_from_planes(normals, dists, "tilted floor")
    worst = max(abs(float(top @ v - top @ on_top)) for v in b.faces[int(np.argmax(b.normals[:, 2]))])
    assert worst <= ON_EPSILON, f"the top face's vertices lie {worst:.3g} m off the plane given"


def test_redundant_planes_are_dropped():
    normals, dists = box_planes([0, 0, 0], [1, 1, 1])
    b = brush_from_planes(np.vstack([normals, [[1, 1, 0]]]), np.concatenate([dists, [5.0]]), "extra")
    assert len(b.faces) == 6 and b.volume == pytest.approx(1.0)


def assert_named_error(exc_type, call, name):
    with pytest.raises(exc_type) as info:
        call()
    assert name in str(info.value), f"message does not name {name!r}: {info.value}"
    assert isinstance(info.value, BrushbakeError)
    return info.value


@pytest.mark.parametrize(
    "label, normals, dists",
    [
        ("two planes", [[0, 0, 1], [0, 0, -1]], [1, 0]),
        ("three planes", [[0, 0, 1], [0, 0, -1], [1, 0, 0]], [1, 0, 1]),
        ("an infinite prism", [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0]], [1, 0, 1, 0]),
        ("a box without a top", [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, -1]], [1, 0, 1, 0, 0]),
        ("an open cone", [[1, 0, -1], [-1, 0, -1], [0, 1, -1], [0, -1, -1], [0, 0, -1]], [1, 1, 1, 1, 0]),
        ("zero thickness", [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], [1, 0, 1, 0, 0.5, -0.5]),
        ("inside out", [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], [1, 0, 1, 0, 0.0, -0.5]),
        ("sub-millimetre sliver", [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]],
         [1e-4, 0, 1e-4, 0, 1e-4, 0]),
        ("a zero normal", [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 0], [0, 0, -1]], [1, 0, 1, 0, 1, 0]),
    ],
)
def test_degenerate_plane_sets_raise_degenerate_brush_error(label, normals, dists):
    name = f"brush '{label}' #7"
    assert_named_error(DegenerateBrushError, lambda: brush_from_planes(normals, dists, name), name)


def test_duplicate_planes_raise_duplicate_plane_error():
    normals, dists = box_planes([0, 0, 0], [1, 1, 1])
    normals = np.vstack([normals, [0, 0, 2.0]])  # the top again, not unit length
    dists = np.concatenate([dists, [2.0 + 1e-7]])
    err = assert_named_error(DuplicatePlaneError, lambda: brush_from_planes(normals, dists, "double top"), "double top")
    assert isinstance(err, DegenerateBrushError)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_planes_raise_invalid_coordinates(bad):
    normals, dists = box_planes([0, 0, 0], [1, 1, 1])
    n2 = normals.copy()
    n2[2, 1] = bad
    assert_named_error(InvalidCoordinatesError, lambda: brush_from_planes(n2, dists, "nan normal"), "nan normal")
    d2 = dists.copy()
    d2[4] = bad
    assert_named_error(InvalidCoordinatesError, lambda: brush_from_planes(normals, d2, "nan dist"), "nan dist")


def test_huge_coordinates_raise_invalid_coordinates():
    assert_named_error(InvalidCoordinatesError, lambda: box_brush([2e5, 0, 0], [2e5 + 1, 1, 1], "far away"), "far away")
    # x + y <= 1.27e5: the plane's distance from the origin is 0.9e5 m (legal), its corner
    # (1.27e5, 0, 0) is not
    normals = [[-1, 0, 0], [0, -1, 0], [0, 0, -1], [0, 0, 1], [1, 1, 0]]
    dists = [0, 0, 0, 1, 1.27e5]  # for the normal (1, 1, 0) as given, not unit length
    assert_named_error(InvalidCoordinatesError, lambda: brush_from_planes(normals, dists, "long wedge"), "long wedge")
    box_brush([9e4, 9e4, 9e4], [9.9e4, 9.9e4, 9.9e4], "far but legal")  # inside the limit: fine


# --------------------------------------------------------------------------------------------
# From meshes


def cube_mesh(lo=(0, 0, 0), hi=(1, 1, 1), subdivisions=1):
    """A closed cube as Blender gives it: welded vertices, quads counter-clockwise from outside;
    each side split into subdivisions x subdivisions coplanar quads."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    index: dict = {}
    verts: list = []

    def vid(p):
        key = tuple(np.round(p, 9))
        if key not in index:
            index[key] = len(verts)
            verts.append(p)
        return index[key]

    faces = []
    k = subdivisions
    for axis in range(3):
        u_axis, v_axis = (axis + 1) % 3, (axis + 2) % 3
        for high in (False, True):
            for i, j in itertools.product(range(k), range(k)):
                quad = []
                for du, dv in ((0, 0), (1, 0), (1, 1), (0, 1)):
                    p = lo.copy()
                    p[axis] = hi[axis] if high else lo[axis]
                    p[u_axis] = lo[u_axis] + (hi[u_axis] - lo[u_axis]) * (i + du) / k
                    p[v_axis] = lo[v_axis] + (hi[v_axis] - lo[v_axis]) * (j + dv) / k
                    quad.append(vid(p))
                # (u, v, axis) is right-handed: u x v = +axis, so this order faces +axis
                faces.append(quad if high else quad[::-1])
    return np.array(verts), faces


def test_cube_from_mesh():
    verts, faces = cube_mesh([0, 0, 0], [2, 1, 1])
    b = brush_from_mesh(verts, faces, "Cube", Contents.DETAIL)
    assert b.volume == pytest.approx(2.0, rel=1e-12)
    assert len(b.faces) == 6 and b.contents == Contents.DETAIL and b.name == "Cube"
    check_faces(b)


def test_subdivided_cube_merges_coplanar_faces():
    verts, faces = cube_mesh([-1, -1, 0], [1, 1, 3], subdivisions=3)
    assert len(faces) == 54
    b = brush_from_mesh(verts, faces, "Subdivided")
    assert len(b.faces) == 6 and len(b.dists) == 6
    assert b.volume == pytest.approx(12.0, rel=1e-12)
    check_faces(b)


def test_float32_noise_is_tolerated():
    verts, faces = cube_mesh([10, 20, 0], [13.3, 21.7, 2.9], subdivisions=2)
    b = brush_from_mesh(verts.astype(np.float32).astype(np.float64), faces, "Float32 cube")
    assert len(b.faces) == 6
    assert b.volume == pytest.approx(3.3 * 1.7 * 2.9, rel=1e-5)


def test_inward_normals_are_flipped():
    verts, faces = cube_mesh([0, 0, 0], [1, 2, 3], subdivisions=2)
    outward = brush_from_mesh(verts, faces, "Out")
    inward = brush_from_mesh(verts, [f[::-1] for f in faces], "In")
    assert inward.volume == pytest.approx(6.0, rel=1e-12)
    key = lambda b: sorted(zip(map(tuple, b.normals.round(12)), b.dists.round(12)))
    assert key(inward) == key(outward)


def test_open_mesh_raises_open_mesh_error():
    verts, faces = cube_mesh()
    assert_named_error(OpenMeshError, lambda: brush_from_mesh(verts, faces[:-1], "Open box"), "Open box")
    # inconsistent winding: one face flipped
    flipped = faces[:-1] + [faces[-1][::-1]]
    assert_named_error(OpenMeshError, lambda: brush_from_mesh(verts, flipped, "Flipped face"), "Flipped face")


def l_shape_mesh():
    """An L-shaped prism (closed, consistently wound, non-convex)."""
    outline = np.array([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]], float)  # counter-clockwise
    k = len(outline)
    verts = np.vstack([np.c_[outline, np.zeros(k)], np.c_[outline, np.ones(k)]])
    faces = [list(range(k))[::-1], list(range(k, 2 * k))]  # bottom faces down, top faces up
    for i in range(k):
        j = (i + 1) % k
        faces.append([i, j, k + j, k + i])
    return verts, faces


def test_l_shape_raises_non_convex_error_naming_the_object():
    verts, faces = l_shape_mesh()
    err = assert_named_error(NonConvexBrushError, lambda: brush_from_mesh(verts, faces, "L-Wall.001"), "L-Wall.001")
    assert isinstance(err, BrushError)


def test_nan_vertex_raises_invalid_coordinates():
    verts, faces = cube_mesh()
    verts[3, 1] = np.nan
    assert_named_error(InvalidCoordinatesError, lambda: brush_from_mesh(verts, faces, "Broken"), "Broken")
    verts, faces = cube_mesh()
    verts[0] = [3e5, 0, 0]
    assert_named_error(InvalidCoordinatesError, lambda: brush_from_mesh(verts, faces, "Far"), "Far")


def test_flat_mesh_raises_degenerate_error():
    verts, faces = cube_mesh([0, 0, 0], [1, 1, 1e-9])
    assert_named_error(BrushError, lambda: brush_from_mesh(verts, faces, "Flat"), "Flat")


def test_brushes_from_planes_is_brush_from_planes_bit_for_bit_errors_in_order():
    """brushes_from_planes builds many brushes at once: the same brushes as brush_from_planes, to
    the bit, and for a list with bad brushes the first bad one's error, as a loop would raise."""
    from brushbake.core.model.brushes import brushes_from_planes

    rng = np.random.default_rng(5)
    specs = []
    for i in range(60):
        n = rng.normal(size=(int(rng.integers(4, 12)), 3))
        n = np.vstack([BOX_NORMALS, n]) if i % 3 else n  # bounded or often not
        d = rng.uniform(0.3, 2.0, len(n))
        specs.append((n, d, f"s{i}", Contents.SOLID, "worldspawn"))
    good, bad = [], []
    for s in specs:
        try:
            good.append((s, brush_from_planes(s[0], s[1], s[2], s[3], entity=s[4])))
        except BrushbakeError as err:
            bad.append((s, err))
    assert len(good) > 20 and len(bad) > 5
    for got, (_, ref) in zip(brushes_from_planes([s for s, _ in good]), good):
        assert got.name == ref.name and got.textures == ref.textures
        assert got.normals.tobytes() == ref.normals.tobytes() and got.dists.tobytes() == ref.dists.tobytes()
        assert [f.tobytes() for f in got.faces] == [f.tobytes() for f in ref.faces]
    mixed = [good[0][0], bad[0][0], good[1][0], bad[1][0]]
    with pytest.raises(type(bad[0][1])) as info:
        brushes_from_planes(mixed)
    assert str(info.value) == str(bad[0][1])
