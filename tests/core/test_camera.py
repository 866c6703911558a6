"""Camera queries (core/runtime/camera.py, cull.py, portal_walk.py) against independent truth.

- The camera's basis and frustum: yaw 0 looks along +X, yaw 90 along +Y, pitch up is +Z; the
  vertical field of view follows from the aspect; every pixel ray lies inside the frustum.
- INSIDE-FRUSTUM for boxes is exact: against a linear program (scipy) deciding whether a box and
  the frustum's half-spaces share a point, on hypothesis cameras and boxes.
- Zero misses: from random cameras in every sample scene and map, pixel rays through the point
  tree (core/truth/camera_truth.py, independent of portals, PVS and frustum tests) find the
  points truly seen; every mode draws their leaves, and portal <= frustum <= pvs on every camera.
  Also on hypothesis rooms and corridors.
- Properties: a camera looking at a wall draws nothing behind it in 'portal' mode (while the PVS
  does); a camera in a closed room draws only that room; yaw +- 360 gives the same answer.
- Back to front equals DRAW-BSP-TREE's walk (query.leaves_back_to_front); faces are the drawn
  leaves' faces; a point in solid is never drawn; bad cameras and levels give typed errors.
bench/camera.py runs 200 cameras at 256 x 192 per scene and map."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brushbake.core.truth.camera_truth import pixel_truth, random_cameras
from brushbake.core.compile.pipeline import compile_scene
from brushbake.core.compile.vis.vis import bake_vis
from brushbake.core.errors import BrushbakeError, InvalidCameraError
from brushbake.core.model.brushes import box_brush
from brushbake.core.model.scene import Scene
from brushbake.core.runtime.camera import (boxes_meet_frustums, camera_basis, frustum_corners, frustum_planes,
                                           pixel_directions)
from brushbake.core.runtime.cull import cull, cull_camera
from brushbake.core.runtime.query import leaves_back_to_front, point_leaves

MODES = ("pvs", "frustum", "portal")


def with_vis(level):
    """A copy of a compiled level with its PVS and culling portals (the fixture's level untouched)."""
    out = dataclasses.replace(level, stats={})
    bake_vis(out, "fast")
    return out


def baked(levels, path):
    return levels.with_vis(path)  # shared with test_cruntime_camera.py (conftest.LevelCache)


def check_no_misses(level, cams, width=48, height=36):
    truth = pixel_truth(level, cams, width, height)
    results = {m: cull(level, cams, m) for m in MODES}
    for m, r in results.items():
        for i in range(len(cams)):
            missed = truth.seen_leaves[i][~r.drawn[i, truth.seen_leaves[i]]]
            assert not len(missed), (m, i, cams[i].tolist(), missed[:5].tolist())
    assert (results["portal"].drawn <= results["frustum"].drawn).all()
    assert (results["frustum"].drawn <= results["pvs"].drawn).all()
    return truth, results


# --------------------------------------------------------------------------------------------
# The camera


def test_basis_follows_the_conventions():
    cams = np.array([[0, 0, 0, 0, 0, 90, 2, 10], [0, 0, 0, 90, 0, 90, 2, 10], [0, 0, 0, 0, 90, 90, 1, 10],
                     [0, 0, 0, 180, -30, 60, 1, 10]], float)
    eye, f, r, u, th, tv = camera_basis(cams)
    np.testing.assert_allclose(f[0], [1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(f[1], [0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(f[2], [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(r[0], [0, -1, 0], atol=1e-12)  # looking along +X, the right hand is -Y
    np.testing.assert_allclose(u[0], [0, 0, 1], atol=1e-12)
    assert f[3][2] < 0  # pitch down
    for k in range(4):
        m = np.stack([f[k], r[k], u[k]])
        np.testing.assert_allclose(m @ m.T, np.eye(3), atol=1e-12)
        np.testing.assert_allclose(np.cross(r[k], f[k]), u[k], atol=1e-12)
    np.testing.assert_allclose(th[0], 1.0)
    np.testing.assert_allclose(tv[0], 0.5)  # vfov from aspect: tan(vfov / 2) = tan(hfov / 2) / aspect


@settings(max_examples=60, deadline=None)
@given(st.floats(-720, 720), st.floats(-90, 90), st.floats(1, 179), st.floats(0.05, 20), st.floats(0.01, 1e3))
def test_pixel_rays_and_corners_lie_in_the_frustum(yaw, pitch, hfov, aspect, far):
    cam = np.array([[1.0, -2.0, 3.0, yaw, pitch, hfov, aspect, far]])
    planes = frustum_planes(cam)[0]
    d = pixel_directions(cam, 8, 6)[0]
    pts = cam[0, :3] + far * d * 0.999
    dist = pts @ planes[:, :3].T - planes[:, 3]
    assert (dist >= -1e-9 * (1 + far)).all()
    corners = frustum_corners(cam)[0]
    dist = corners @ planes[:, :3].T - planes[:, 3]
    assert (dist >= -1e-9 * (1 + far)).all()
    # each corner is on three planes (the eye on four)
    assert ((np.abs(dist[1:]) <= 1e-7 * (1 + far)).sum(axis=1) >= 3).all()


@pytest.mark.parametrize("bad,words", [
    (np.zeros((2, 7)), "shape"),
    ([[0, 0, 0, 0, 0, 0.5, 1, 10]], r"hfov outside \[1, 179\]"),
    ([[0, 0, 0, 0, 95, 90, 1, 10]], r"pitch outside \[-90, 90\]"),
    ([[0, 0, 0, 0, 0, 90, 0, 10]], "aspect outside"),
    ([[0, 0, 0, 0, 0, 90, 1, 0]], "far outside"),
    ([[np.nan, 0, 0, 0, 0, 90, 1, 10]], "NaN"),
    ([[1e9, 0, 0, 0, 0, 90, 1, 10]], "position beyond"),
])
def test_bad_cameras_are_refused(bad, words):
    level = compile_scene(Scene("box", brushes=[box_brush((0, 0, 0), (1, 1, 1), "b")]))
    with pytest.raises(InvalidCameraError, match=words):
        cull(level, bad, "frustum")


def test_modes_needing_a_pvs_or_portals_say_so():
    level = compile_scene(Scene("box", brushes=[box_brush((0, 0, 0), (1, 1, 1), "b")]))
    cam = [[3, 0.5, 0.5, 180, 0, 90, 1, 10]]
    assert cull(level, cam, "frustum").drawn.any()
    for mode in ("pvs", "portal"):
        with pytest.raises(BrushbakeError, match="bake"):
            cull(level, cam, mode)
    with pytest.raises(BrushbakeError, match="modes are"):
        cull(level, cam, "nope")


# --------------------------------------------------------------------------------------------
# INSIDE-FRUSTUM, exact for boxes


def _lp_meets(planes, box, grow):
    """Does some point lie in the box (grown by `grow`) and inside every plane (moved out by grow)?"""
    from scipy.optimize import linprog

    res = linprog(np.zeros(3), A_ub=-planes[:, :3], b_ub=-(planes[:, 3] - grow),
                  bounds=list(zip(box[0] - grow, box[1] + grow)), method="highs")
    return res.status == 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.floats(0, 360), st.floats(-80, 80), st.floats(20, 150), st.floats(0.5, 3), st.floats(1, 20),
       st.lists(st.floats(-15, 15), min_size=3, max_size=3), st.lists(st.floats(0.01, 8), min_size=3, max_size=3))
def test_box_test_is_exact(yaw, pitch, hfov, aspect, far, lo, size):
    cam = np.array([[0.0, 0.0, 0.0, yaw, pitch, hfov, aspect, far]])
    box = np.array([lo, np.add(lo, size)])
    got = boxes_meet_frustums(cam, box[None], np.array([0]), np.array([0]))[0]
    planes = frustum_planes(cam)[0]
    if _lp_meets(planes, box, -1e-4):  # meets with room to spare
        assert got
    if not _lp_meets(planes, box, 1e-4):  # apart with room to spare: the sphere test would not reject all
        assert not got


# --------------------------------------------------------------------------------------------
# Zero misses on every scene and map


def test_sample_scenes_have_no_misses(levels, sample_paths):
    assert sample_paths
    for path in sample_paths:
        level = baked(levels, path)
        check_no_misses(level, random_cameras(level, 8, seed=11))


def test_maps_have_no_misses(levels, map_paths):
    assert len(map_paths) >= 10
    for path in map_paths:
        level = baked(levels, path)
        check_no_misses(level, random_cameras(level, 6, seed=12), 40, 30)


def test_portal_draws_less_on_a_real_map(levels, map_named):
    level = baked(levels, map_named("lqdm13.map"))
    cams = random_cameras(level, 30, seed=5)
    faces = {m: cull(level, cams, m).face_counts().mean() for m in MODES}
    assert faces["portal"] <= faces["frustum"] <= faces["pvs"]
    assert faces["portal"] <= 0.5 * faces["pvs"]


def _grid_scene(cells: np.ndarray, blocks: np.ndarray, size=2.0, height=3.0):
    """Rooms and corridors: a grid of cells (True: solid) in a closed shell, plus half-height
    blocks in some empty cells."""
    nx, ny = cells.shape
    t = 0.5
    w, d = nx * size, ny * size
    b = [box_brush((-t, -t, -t), (w + t, d + t, 0), "floor"), box_brush((-t, -t, height), (w + t, d + t, height + t), "roof"),
         box_brush((-t, -t, 0), (0, d + t, height), "w"), box_brush((w, -t, 0), (w + t, d + t, height), "e"),
         box_brush((0, -t, 0), (w, 0, height), "s"), box_brush((0, d, 0), (w, d + t, height), "n")]
    for i, j in zip(*np.nonzero(cells)):
        b.append(box_brush((i * size, j * size, 0), ((i + 1) * size, (j + 1) * size, height), f"c{i}_{j}"))
    for i, j in zip(*np.nonzero(blocks & ~cells)):
        b.append(box_brush((i * size + 0.5, j * size + 0.5, 0), (i * size + 1.3, j * size + 1.1, 1.2), f"k{i}_{j}"))
    return Scene("grid", brushes=b)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31 - 1), st.integers(3, 5), st.integers(3, 5), st.floats(0.2, 0.5))
def test_rooms_and_corridors_have_no_misses(seed, nx, ny, density):
    rng = np.random.default_rng(seed)
    cells = rng.random((nx, ny)) < density
    cells[0, 0] = False
    level = with_vis(compile_scene(_grid_scene(cells, rng.random((nx, ny)) < 0.3)))
    check_no_misses(level, random_cameras(level, 5, seed=seed), 40, 30)


# --------------------------------------------------------------------------------------------
# Properties


def _two_rooms(door: bool):
    """Room A x 0..6, room B x 7..13, y 0..6, z 0..3; the wall x 6..7 has a door at y 5..6 (z 0..2.5)
    when `door`, and is whole otherwise (two closed rooms)."""
    t = 0.5
    b = [box_brush((-t, -t, -t), (13 + t, 6 + t, 0), "floor"), box_brush((-t, -t, 3), (13 + t, 6 + t, 3 + t), "roof"),
         box_brush((-t, -t, 0), (0, 6 + t, 3), "w"), box_brush((13, -t, 0), (13 + t, 6 + t, 3), "e"),
         box_brush((0, -t, 0), (13, 0, 3), "s"), box_brush((0, 6, 0), (13, 6 + t, 3), "n")]
    if door:
        b += [box_brush((6, 0, 0), (7, 5, 3), "wall"), box_brush((6, 5, 2.5), (7, 6, 3), "lintel")]
    else:
        b += [box_brush((6, 0, 0), (7, 6, 3), "wall")]
    return with_vis(compile_scene(Scene("rooms", brushes=b)))


@pytest.fixture(scope="module")
def rooms_with_door():
    return _two_rooms(True)


@pytest.fixture(scope="module")
def closed_rooms():
    return _two_rooms(False)


@settings(max_examples=25, deadline=None)
@given(st.floats(1, 3), st.floats(1, 2.5), st.floats(0.5, 2.5), st.floats(-5, 5), st.floats(-10, 10))
def test_a_wall_hides_what_is_behind_it(rooms_with_door, x, y, z, yaw, pitch):
    """Looking at the wall, the door out of view: 'portal' draws nothing of room B; the PVS does."""
    level = rooms_with_door
    cam = np.array([[x, y, z, yaw, pitch, 40, 1.5, 30]])
    bounds = level.leaf_bounds
    behind = bounds[:, 0, 0] >= 7 - 1e-9
    portal, pvs = cull(level, cam, "portal"), cull(level, cam, "pvs")
    assert not (portal.drawn[0] & behind).any()
    assert (pvs.drawn[0] & behind).any()
    assert portal.drawn[0, point_leaves(level, cam[:, :3])[0]]


@settings(max_examples=25, deadline=None)
@given(st.floats(0.5, 5.5), st.floats(0.5, 5.5), st.floats(0.5, 2.5), st.floats(0, 360), st.floats(-60, 60),
       st.floats(30, 170))
def test_a_closed_room_draws_only_itself(closed_rooms, x, y, z, yaw, pitch, hfov):
    level = closed_rooms
    cam = np.array([[x, y, z, yaw, pitch, hfov, 1.3, 50]])
    inside_a = level.leaf_bounds[:, 1, 0] <= 6 + 1e-9
    for mode in MODES:
        r = cull(level, cam, mode)
        assert r.drawn[0].any() and (inside_a[r.drawn[0]]).all(), mode


def test_a_full_turn_gives_the_same_answer(levels, map_named):
    level = baked(levels, map_named("lq_e1m6.map"))
    cams = random_cameras(level, 40, seed=9)
    for mode in MODES:
        base = cull(level, cams, mode).drawn
        for turn in (360.0, -360.0, 720.0):
            turned = cams.copy()
            turned[:, 3] += turn
            assert (cull(level, turned, mode).drawn == base).all(), (mode, turn)


# --------------------------------------------------------------------------------------------
# Answers: order, faces, points


def test_back_to_front_faces_and_points(levels, map_named):
    level = baked(levels, map_named("e1m7.map"))
    cams = random_cameras(level, 12, seed=4)
    r = cull(level, cams, "portal")
    for i in range(len(cams)):
        order = leaves_back_to_front(level, cams[i, :3])
        assert (r.leaves(i, back_to_front=True) == order[r.drawn[i][order]]).all()
        faces = r.faces(i)
        expect = np.concatenate([level.leaf_faces[level.leaf_face_first[lf]: level.leaf_face_first[lf]
                                                  + level.leaf_face_count[lf]] for lf in r.leaves(i)] or [[]])
        assert sorted(faces.tolist()) == sorted(expect.astype(int).tolist())
        assert len(faces) == r.face_counts()[i]
    leaves, faces = cull_camera(level, cams[0], "portal", back_to_front=True)
    assert (leaves == r.leaves(0, True)).all() and len(faces) == r.face_counts()[0]
    # points: the drawn leaves' points give 1, points in solid 0
    solid = np.flatnonzero(level.leaf_solid & 1)
    b = level.leaf_bounds
    pts = np.stack([(b[r.leaves(i)[[0, -1, 0]], 0] + b[r.leaves(i)[[0, -1, 0]], 1]) / 2 for i in range(3)])
    got = r.points_drawn(pts)
    want = r.drawn[np.arange(3)[:, None], point_leaves(level, pts.reshape(-1, 3)).reshape(3, -1)]
    assert (got == want).all()
    s = point_leaves(level, (b[solid, 0] + b[solid, 1]) / 2)
    solid_pts = ((b[solid, 0] + b[solid, 1]) / 2)[(level.leaf_solid[s] & 1) != 0][:5]
    if len(solid_pts):
        assert not r.points_drawn(np.broadcast_to(solid_pts, (len(cams), len(solid_pts), 3))).any()
