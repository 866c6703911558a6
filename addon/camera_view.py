"""Camera culling in Blender: what the active camera (or the viewport's view) would draw by the PVS,
the frustum or portals (core/runtime/cull.py, docs/CAMERA.md), as overlay geometry and as the
sidebar's counts.

A Blender camera becomes brushbake's 8 numbers (x, y, z, yaw, pitch, hfov, aspect, far).  A rolled
or shifted camera's view is not a brushbake frustum (which has no roll and is centred), so the
frustum used is the smallest centred, unrolled one that holds it: what it draws is still a superset
of what the camera sees.  Orthographic views have no eye and are not culled.
"""

import math

import numpy as np

from .overlay_geometry import OverlayGeometry, fan

MODES = ("pvs", "frustum", "portal")
#: the colours of the faces drawn per mode (the overlay), and of the frustum's edges
MODE_COLORS = {"pvs": (1.0, 0.55, 0.1, 0.25), "frustum": (0.2, 0.7, 1.0, 0.3), "portal": (0.3, 1.0, 0.4, 0.35)}
FRUSTUM_COLOR = (1.0, 1.0, 0.3, 1.0)
#: the widest hfov brushbake accepts (degrees); a wider view is clipped to it and says so
MAX_HFOV = 179.0


def camera_row(position, forward, right, up, tan_x: float, tan_y: float, far: float) -> np.ndarray:
    """brushbake's camera (8,) holding a view with the given eye, axes (the view looks along
    forward; right and up span its rectangle, half-extents tan_x and tan_y at unit depth) and far
    distance: yaw and pitch from forward, and the unrolled rectangle that contains the rolled one."""
    f = np.asarray(forward, dtype=np.float64)
    f = f / np.linalg.norm(f)
    r_c = np.asarray(right, dtype=np.float64)
    u_c = np.asarray(up, dtype=np.float64)
    yaw = math.degrees(math.atan2(f[1], f[0]))
    pitch = math.degrees(math.asin(max(-1.0, min(1.0, f[2]))))
    y = math.radians(yaw)
    p = math.radians(pitch)
    r0 = np.array([math.sin(y), -math.cos(y), 0.0])
    u0 = np.array([-math.sin(p) * math.cos(y), -math.sin(p) * math.sin(y), math.cos(p)])
    th = tan_x * abs(r_c @ r0) + tan_y * abs(u_c @ r0)
    tv = tan_x * abs(r_c @ u0) + tan_y * abs(u_c @ u0)
    th, tv = th * (1 + 1e-9) + 1e-12, tv * (1 + 1e-9) + 1e-12
    hfov = min(2 * math.degrees(math.atan(th)), MAX_HFOV)
    aspect = min(max(th / tv, 0.05), 20.0)
    return np.array([*map(float, position), yaw, pitch, hfov, aspect, float(far)])


def camera_from_object(scene, obj):
    """(camera (8,), None) for a perspective camera object, or (None, why not)."""
    if obj is None or obj.type != "CAMERA":
        return None, "no active camera"
    cam = obj.data
    if cam.type != "PERSP":
        return None, "the camera is not perspective"
    m = obj.matrix_world.to_3x3().normalized()
    frame = [np.array(v) for v in cam.view_frame(scene=scene)]  # camera space, at z = -distance
    tan_x = max(abs(v[0] / v[2]) for v in frame)
    tan_y = max(abs(v[1] / v[2]) for v in frame)
    forward = -np.array(m.col[2])
    return camera_row(obj.matrix_world.translation, forward, np.array(m.col[0]), np.array(m.col[1]),
                      tan_x, tan_y, cam.clip_end), None


def camera_from_view(space, rv3d):
    """(camera (8,), None) for a perspective 3D viewport, or (None, why not)."""
    if rv3d is None:
        return None, "no 3D view"
    if rv3d.view_perspective == "CAMERA":
        return None, "the view is the scene camera"
    if not rv3d.is_perspective:
        return None, "the view is orthographic"
    inv = rv3d.view_matrix.inverted()
    m = inv.to_3x3().normalized()
    w = rv3d.window_matrix
    tan_x = (1 + abs(w[0][2])) / w[0][0]
    tan_y = (1 + abs(w[1][2])) / w[1][1]
    return camera_row(inv.translation, -np.array(m.col[2]), np.array(m.col[0]), np.array(m.col[1]),
                      tan_x, tan_y, space.clip_end), None


def current_camera(context, use_view: bool):
    """(camera (8,) or None, why not): the viewport's view when use_view (and a 3D view is at
    hand), else the scene's active camera."""
    if use_view:
        space = getattr(context, "space_data", None)
        if space is not None and getattr(space, "type", "") == "VIEW_3D":
            return camera_from_view(space, space.region_3d)
        return None, "no 3D view"
    return camera_from_object(context.scene, context.scene.camera)


_stats_cache: dict = {}


def backend() -> str:
    """The camera queries' backend: 'c' where the native library is at hand without compiling (the
    shipped one, or one built before), else 'numpy' (the same answers; a panel's draw must not wait
    for a compiler)."""
    from ..core.native_lib import backend_report

    return "c" if backend_report().native else "numpy"


def cull_counts(level, camera, key=None) -> dict:
    """{mode: (faces drawn, clusters drawn)} for one camera, and 'faces_total'; modes the level
    cannot answer (no PVS, no portals) are left out.  Cached by `key` (one at a time)."""
    from ..core.runtime.cull import cull

    ck = (key, tuple(np.round(np.asarray(camera, dtype=np.float64), 9).tolist()))
    if key is not None and ck in _stats_cache:
        return _stats_cache[ck]
    out = {"faces_total": int(len(level.face_plane))}
    for mode in MODES:
        if mode != "frustum" and not level.has_vis:
            continue
        if mode == "portal" and not level.has_cull_portals:
            continue
        r = cull(level, np.asarray(camera, dtype=np.float64).reshape(1, 8), mode, backend=backend())
        out[mode] = (int(r.face_counts()[0]), int(r.cluster_counts()[0]))
    _stats_cache.clear()
    _stats_cache[ck] = out
    return out


def counts_text(counts: dict) -> list:
    """The sidebar's lines: 'portal: 120 / 5,000 faces, 14 clusters' per mode."""
    total = counts.get("faces_total", 0)
    lines = []
    for mode in MODES:
        if mode in counts:
            faces, clusters = counts[mode]
            lines.append(f"{mode}: {faces:,} / {total:,} faces, {clusters:,} clusters")
        else:
            lines.append(f"{mode}: needs a bake with Visibility")
    return lines


def camera_overlay(level, camera, mode: str) -> OverlayGeometry:
    """The faces `camera` draws in `mode` as triangles (tri_leaf: the face's leaf), and the
    frustum's edges as lines."""
    from ..core.runtime.camera import frustum_corners
    from ..core.runtime.cull import cull

    cam = np.asarray(camera, dtype=np.float64).reshape(1, 8)
    r = cull(level, cam, mode, backend=backend())
    polys, leaves = [], []
    for leaf in r.leaves(0).tolist():
        first, count = int(level.leaf_face_first[leaf]), int(level.leaf_face_count[leaf])
        for face in level.leaf_faces[first : first + count].tolist():
            poly = level.face_vertices(face)
            polys.append(poly)
            leaves += [leaf] * (len(poly) - 2)
    corners = frustum_corners(cam)[0]
    edges = [(0, 1), (0, 2), (0, 3), (0, 4), (1, 2), (2, 3), (3, 4), (4, 1)]
    lines = np.array([corners[i] for e in edges for i in e], dtype=np.float32)
    line_colors = np.tile(FRUSTUM_COLOR, (len(lines), 1)).astype(np.float32)
    if not polys:
        return OverlayGeometry(line_positions=lines, line_colors=line_colors)
    t = fan(polys)
    return OverlayGeometry(t.reshape(-1, 3).astype(np.float32),
                           np.tile(MODE_COLORS[mode], (3 * len(t), 1)).astype(np.float32), np.array(leaves),
                           lines, line_colors)
