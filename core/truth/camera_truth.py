"""Ground truth for the camera queries by pixel rays, independent of portals, PVS and frustum
tests (tests and bench/camera.py; never a bake).

From each camera a grid of pixel rays (the pixel centres, core/runtime/camera.py
pixel_directions) runs to the far plane through the point tree (core/runtime/trace.py
trace_hulls, hull 0: the solid tree's first hit).  The empty point 1 mm back along a ray from its
hit is a point the camera truly sees: every culling mode must draw its leaf.  Rays that reach the
far plane see nothing there.  The face a ray hits is the face of that leaf on the hit plane whose
polygon holds the hit (for the tightness figures: faces drawn over faces truly hit).

Cameras are drawn in empty space with a visibility cluster (vis_truth.empty_points), seeded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..detmath import dot, norm
from ..runtime.camera import pixel_directions
from ..runtime.query import point_leaves
from ..runtime.trace import trace_hulls
from .vis_truth import empty_points

#: m: how far back along the ray from its hit the seen point is taken
SEEN_BACKOFF = 1e-3


@dataclass
class CameraTruth:
    seen_leaves: list  # per camera: (k,) int64 leaves holding a truly seen point
    seen_faces: list  # per camera: (k,) int64 faces some pixel ray hits
    seen_clusters: list  # per camera: (k,) int64 visibility clusters truly seen (the eye's included)
    rays: int
    in_solid: int  # seen points that located in a solid leaf (rounding at grazing hits): no claim


def random_cameras(level, count: int, seed: int = 0, far_range=(0.2, 1.2)) -> np.ndarray:
    """(count, 8) cameras in empty space with a cluster: yaw uniform, pitch in [-60, 60], hfov in
    [60, 110], aspect in [1, 2], far a fraction far_range of the level's diagonal."""
    rng = np.random.default_rng(seed)
    box = np.asarray(level.world_bounds, dtype=np.float64)
    lc = np.asarray(level.vis_leaf_cluster if level.has_vis else np.where(level.leaf_solid & 1, -1, 0),
                    dtype=np.int64)
    pts, _ = empty_points(level, lc, count, rng, box)
    diag = float(norm(box[1] - box[0]))
    n = len(pts)
    cams = np.empty((n, 8))
    cams[:, :3] = pts
    cams[:, 3] = rng.uniform(0, 360, n)
    cams[:, 4] = rng.uniform(-60, 60, n)
    cams[:, 5] = rng.uniform(60, 110, n)
    cams[:, 6] = rng.uniform(1, 2, n)
    cams[:, 7] = diag * rng.uniform(*far_range, n)
    return cams


def pixel_truth(level, cams: np.ndarray, width: int = 256, height: int = 192) -> CameraTruth:
    """What each camera truly sees, by width x height pixel rays."""
    cams = np.asarray(cams, dtype=np.float64).reshape(-1, 8)
    leaves_out, faces_out, clusters_out = [], [], []
    lc = np.asarray(level.vis_leaf_cluster, dtype=np.int64) if level.has_vis else None
    solid = (np.asarray(level.leaf_solid) & 1) != 0
    in_solid = 0
    for cam in cams:
        d = pixel_directions(cam[None, :], width, height)[0]
        eye = cam[:3]
        hits = trace_hulls(level, np.broadcast_to(eye, d.shape), eye + cam[7] * d)
        ok = hits.hit & ~hits.start_solid
        unit = d[ok] / norm(d[ok], axis=1)[:, None]
        seen = hits.point[ok] - SEEN_BACKOFF * unit
        leaves = point_leaves(level, seen)
        good = ~solid[leaves]
        in_solid += int(np.count_nonzero(~good))
        leaves_out.append(np.unique(leaves[good]))
        faces_out.append(hit_faces(level, leaves[good], hits.plane[ok][good], hits.point[ok][good]))
        eye_leaf = point_leaves(level, eye[None, :])
        if lc is not None:
            cl = lc[np.concatenate([leaves[good], eye_leaf])]
            clusters_out.append(np.unique(cl[cl >= 0]))
        else:
            clusters_out.append(np.zeros(0, dtype=np.int64))
    return CameraTruth(leaves_out, faces_out, clusters_out, len(cams) * width * height, in_solid)


def hit_faces(level, leaves: np.ndarray, planes: np.ndarray, points: np.ndarray) -> np.ndarray:
    """The distinct faces hit: for each hit, the faces of its leaf on the hit's plane (either
    facing) whose polygon holds the point within 1e-4 m (the first such; a hit on no polygon, at a
    seam, takes the first face on the plane)."""
    first = np.asarray(level.leaf_face_first, dtype=np.int64)[leaves]
    size = np.asarray(level.leaf_face_count, dtype=np.int64)[leaves]
    owner = np.repeat(np.arange(len(leaves)), size)
    pos = np.arange(len(owner)) - np.repeat(np.cumsum(size) - size, size)
    face = np.asarray(level.leaf_faces, dtype=np.int64)[np.repeat(first, size) + pos]
    fp = np.asarray(level.face_plane, dtype=np.int64)[face]
    on = (fp >> 1) == (planes[owner] >> 1)
    owner, face = owner[on], face[on]
    inside = _holds(level, face, points[owner])
    chosen = np.full(len(leaves), -1, dtype=np.int64)
    for sel in (~inside, inside):  # later writes win: a holding face over any face on the plane
        chosen[owner[sel][::-1]] = face[sel][::-1]
    return np.unique(chosen[chosen >= 0])


def _holds(level, faces: np.ndarray, points: np.ndarray, tol: float = 1e-4) -> np.ndarray:
    if not len(faces):
        return np.zeros(0, dtype=bool)
    nv = np.asarray(level.face_num_vertices, dtype=np.int64)[faces]
    fv = np.asarray(level.face_first_vertex, dtype=np.int64)[faces]
    normal = np.asarray(level.plane_normals)[np.asarray(level.face_plane, dtype=np.int64)[faces]]
    verts = np.asarray(level.vertices)
    owner = np.repeat(np.arange(len(faces)), nv)
    pos = np.arange(len(owner)) - np.repeat(np.cumsum(nv) - nv, nv)
    a = verts[fv[owner] + pos]
    b = verts[fv[owner] + (pos + 1) % nv[owner]]
    edge = b - a
    side = dot(np.cross(edge, points[owner] - a), normal[owner]) / np.maximum(norm(edge, axis=1), 1e-300)
    worst = np.full(len(faces), np.inf)
    np.minimum.at(worst, owner, side)
    # faces face into their leaf and run counter-clockwise seen from the front: inside is side >= 0;
    # either winding sense is accepted (the hit may be on the flip), so take the consistent sign
    best = np.full(len(faces), -np.inf)
    np.maximum.at(best, owner, side)
    return (worst >= -tol) | (best <= tol)
