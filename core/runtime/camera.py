"""Cameras and their view frustums, for the camera queries (core/runtime/cull.py): a camera's
basis, its frustum's planes and corners, the thesis's INSIDE-FRUSTUM for boxes (exact, by
separating axes), and the pixel rays a view casts.

A camera is a row of 8 float64 (the command line's CAMS.npy is (N, 8)):
    x, y, z, yaw, pitch, hfov, aspect, far
metres and degrees; Z up; yaw 0 looks along +X and yaw 90 along +Y; pitch up is positive; hfov is
the horizontal field of view, aspect = width / height, and the vertical field of view follows:
tan(vfov / 2) = tan(hfov / 2) / aspect.  far is the distance of the far plane along the view
direction.  The basis:
    forward = (cos p cos y, cos p sin y, sin p)
    right   = (sin y, -cos y, 0)                  (yaw 0: -Y, the right hand looking along +X)
    up      = right x forward                     (pitch 0: +Z)
The frustum is the pyramid from the eye through the rectangle at distance far: four side planes
through the eye and the far plane (there is no near plane: the eye's own leaf is always drawn).

Every plane here is (n, d) with the inside n.x - d >= 0.  Conservative rule: tests keep a box
(or a vertex) within CULL_MARGIN of the inside, so rounding can only widen a view.
"""

from __future__ import annotations

import numpy as np

from ..detmath import cos, dot, sin, tan
from ..errors import InvalidCameraError
from ..tolerances import CULL_MARGIN, MAX_COORDINATE

#: column meaning of a camera row
CAMERA_COLUMNS = ("x", "y", "z", "yaw", "pitch", "hfov", "aspect", "far")
#: (low, high) accepted per column (yaw: any finite value)
HFOV_RANGE = (1.0, 179.0)  # degrees
PITCH_RANGE = (-90.0, 90.0)  # degrees
ASPECT_RANGE = (0.05, 20.0)  # width / height
FAR_RANGE = (1e-3, 2.0 * MAX_COORDINATE)  # metres


def as_cameras(cameras, subject: str = "cameras") -> np.ndarray:
    """(N, 8) float64 cameras, checked: finite, coordinates within +-MAX_COORDINATE, pitch, hfov,
    aspect and far in their ranges.  Raises InvalidCameraError naming the first bad row."""
    try:
        cams = np.asarray(cameras, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise InvalidCameraError(f"is not a numeric array ({err}).", subject=subject,
                                 hint="Give an (N, 8) float64 array: x, y, z, yaw, pitch, hfov, aspect, far.") from None
    if cams.ndim == 1 and cams.shape == (8,):
        cams = cams[None, :]
    if cams.ndim != 2 or cams.shape[1] != 8:
        raise InvalidCameraError(f"has shape {cams.shape}; cameras are (N, 8): x, y, z, yaw, pitch, hfov, "
                                 "aspect, far.", subject=subject, hint="Reshape the array to (N, 8).")
    bad = ~np.all(np.isfinite(cams), axis=1)
    _refuse(cams, bad, "holds NaN or infinite values", subject)
    _refuse(cams, np.any(np.abs(cams[:, :3]) > MAX_COORDINATE, axis=1),
            f"has a position beyond +-{MAX_COORDINATE:g} m", subject)
    for col, (lo, hi), unit in ((4, PITCH_RANGE, "degrees"), (5, HFOV_RANGE, "degrees"),
                                (6, ASPECT_RANGE, "(width / height)"), (7, FAR_RANGE, "m")):
        name = CAMERA_COLUMNS[col]
        _refuse(cams, (cams[:, col] < lo) | (cams[:, col] > hi),
                f"has {name} outside [{lo:g}, {hi:g}] {unit}", subject, col)
    return np.ascontiguousarray(cams)


def _refuse(cams, bad, what, subject, col=None):
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        value = f" ({float(cams[i, col]):g})" if col is not None else ""
        raise InvalidCameraError(f"camera {i} {what}{value}.", subject=subject,
                                 hint="Columns are x, y, z, yaw, pitch, hfov, aspect, far (metres, degrees).")


def camera_basis(cams: np.ndarray):
    """(eye, forward, right, up, tan_h, tan_v): (N, 3) x4 and (N,) x2 for (N, 8) cameras."""
    cams = np.asarray(cams, dtype=np.float64).reshape(-1, 8)
    yaw, pitch = np.radians(np.mod(cams[:, 3], 360.0)), np.radians(cams[:, 4])  # a full turn: the same basis
    cy, sy, cp, sp = cos(yaw), sin(yaw), cos(pitch), sin(pitch)  # the C library's (the C run-time's bits)
    forward = np.stack([cp * cy, cp * sy, sp], axis=1)
    right = np.stack([sy, -cy, np.zeros_like(cy)], axis=1)
    up = np.stack([-sp * cy, -sp * sy, cp], axis=1)  # right x forward
    tan_h = tan(np.radians(cams[:, 5]) / 2)
    tan_v = tan_h / cams[:, 6]
    return cams[:, :3].copy(), forward, right, up, tan_h, tan_v


def frustum_corners(cams: np.ndarray) -> np.ndarray:
    """(N, 5, 3): the eye, then the far rectangle's corners (-r -u, +r -u, +r +u, -r +u)."""
    eye, f, r, u, th, tv = camera_basis(cams)
    far = np.asarray(cams, dtype=np.float64).reshape(-1, 8)[:, 7]
    out = np.empty((len(eye), 5, 3))
    out[:, 0] = eye
    for k, (sx, sz) in enumerate(((-1, -1), (1, -1), (1, 1), (-1, 1))):
        out[:, 1 + k] = eye + far[:, None] * (f + (sx * th)[:, None] * r + (sz * tv)[:, None] * u)
    return out


def frustum_planes(cams: np.ndarray) -> np.ndarray:
    """(N, 5, 4) planes (nx, ny, nz, d), inside n.x - d >= 0, unit normals: left, right, bottom,
    top (through the eye), far."""
    eye, f, r, u, th, tv = camera_basis(cams)
    far = np.asarray(cams, dtype=np.float64).reshape(-1, 8)[:, 7]
    normals = np.stack([
        r + th[:, None] * f,  # left: points right-ward and forward
        -r + th[:, None] * f,
        u + tv[:, None] * f,  # bottom
        -u + tv[:, None] * f,
    ], axis=1)
    normals /= np.sqrt(dot(normals, normals))[..., None]
    planes = np.empty((len(eye), 5, 4))
    planes[:, :4, :3] = normals
    planes[:, :4, 3] = dot(normals, eye[:, None, :])
    planes[:, 4, :3] = -f
    planes[:, 4, 3] = -(dot(f, eye) + far)
    return planes


def boxes_meet_frustums(cams: np.ndarray, boxes: np.ndarray, cam_index: np.ndarray,
                        box_index: np.ndarray, margin: float = CULL_MARGIN) -> np.ndarray:
    """INSIDE-FRUSTUM for boxes, exact by separating axes: (K,) bool, True where box
    box_index[k] (boxes (B, 2, 3) mins, maxs) meets camera cam_index[k]'s frustum, within `margin`
    (a box nearer than margin to the frustum counts as meeting it).

    The frustum (a pyramid: 5 vertices, 5 faces, edges along its 4 lateral directions, right and
    up) and a box are convex; they are disjoint exactly when one of these axes separates them: the
    frustum's 5 face normals, the box's 3 axes, and the 18 products of a box axis with a frustum
    edge direction.  Unlike the sphere test, this rejects every box that does not meet it."""
    cams = np.asarray(cams, dtype=np.float64).reshape(-1, 8)
    corners = frustum_corners(cams)
    planes = frustum_planes(cams)
    eye, f, r, u, th, tv = camera_basis(cams)
    lateral = corners[:, 1:] - corners[:, :1]  # (N, 4, 3)
    edges = np.concatenate([lateral, r[:, None], u[:, None]], axis=1)  # (N, 6, 3)
    eye3 = np.eye(3)
    cross = np.cross(eye3[None, :, None, :], edges[:, None, :, :]).reshape(-1, 18, 3)
    axes = np.concatenate([planes[:, :, :3], np.broadcast_to(eye3, (len(cams), 3, 3)), cross], axis=1)
    length = np.sqrt(dot(axes, axes))
    axes = axes / np.maximum(length, 1e-300)[..., None]  # a zero axis (parallel edges) separates nothing
    b = np.asarray(boxes, dtype=np.float64)[box_index]  # (K, 2, 3)
    centre, half = (b[:, 0] + b[:, 1]) / 2, (b[:, 1] - b[:, 0]) / 2
    ax = axes[cam_index]  # (K, 26, 3)
    c = dot(ax, centre[:, None, :])
    h = dot(np.abs(ax), half[:, None, :])
    proj = dot(ax[:, :, None, :], corners[cam_index][:, None, :, :])  # (K, 26, 5)
    lo, hi = proj.min(axis=2), proj.max(axis=2)
    apart = (c - h > hi + margin) | (c + h < lo - margin)
    return ~np.any(apart, axis=1)


def boxes_inside_planes(planes: np.ndarray, boxes: np.ndarray, margin: float = CULL_MARGIN) -> np.ndarray:
    """(K,) bool: box k (boxes (K, 2, 3)) is not wholly outside any of its planes (planes (K, P, 4),
    padding rows (0, 0, 0, -1) always hold), within margin.  Conservative for any convex region
    the planes bound (the narrowed frustums of the portal walk)."""
    b = np.asarray(boxes, dtype=np.float64)
    centre, half = (b[:, 0] + b[:, 1]) / 2, (b[:, 1] - b[:, 0]) / 2
    n = planes[..., :3]
    best = dot(n, centre[:, None, :]) + dot(np.abs(n), half[:, None, :]) - planes[..., 3]
    return np.all(best >= -margin, axis=1)


def pixel_directions(cams: np.ndarray, width: int, height: int) -> np.ndarray:
    """(N, height * width, 3) directions of the pixel centres' rays, row-major from the top-left,
    each scaled so its forward component is 1 (eye + far * dir lies on the far plane)."""
    eye, f, r, u, th, tv = camera_basis(cams)
    sx = (2 * (np.arange(width) + 0.5) / width - 1)
    sz = (1 - 2 * (np.arange(height) + 0.5) / height)
    gx, gz = np.meshgrid(sx, sz)  # (H, W)
    gx, gz = gx.ravel(), gz.ravel()
    return (f[:, None, :] + (th[:, None] * gx[None, :])[..., None] * r[:, None, :]
            + (tv[:, None] * gz[None, :])[..., None] * u[:, None, :])
