"""Exact answers for the plane-shifting benchmarks, computed from the brushes alone (never the tree).

sphere_first_contacts: where a sphere moving along each segment first comes within its radius of
a colliding brush.  The exact Euclidean distance from a point to a convex brush is the distance to
its nearest face (to the face's interior along the normal when the foot lies inside the polygon,
else to the polygon's nearest edge), 0 inside.  Segments are sampled densely, and the first sample
within the radius is refined by bisection against the previous free sample (a contact that begins
and ends between two samples is not seen).
"""

from __future__ import annotations

import numpy as np


def dist_to_brush(points: np.ndarray, brush) -> np.ndarray:
    """(M,) exact distance from points to a convex brush (faces, normals, dists), 0 inside."""
    p = np.asarray(points, float)
    best = np.full(len(p), np.inf)
    for poly, n, d in zip(brush.faces, brush.normals, brush.dists):
        h = p @ n - d
        foot = p - h[:, None] * n
        edges = np.roll(poly, -1, axis=0) - poly
        # the foot is inside the face when it is left of every edge (seen from the front)
        inside = np.all(np.einsum("kj,mkj->mk", np.cross(edges, n), foot[:, None, :] - poly[None]) <= 0, axis=1)
        best = np.where(inside, np.minimum(best, np.abs(h)), best)
        rel = p[:, None, :] - poly[None]
        t = np.clip(np.einsum("mkj,kj->mk", rel, edges) / np.einsum("kj,kj->k", edges, edges), 0.0, 1.0)
        near = np.linalg.norm(rel - t[:, :, None] * edges[None], axis=2).min(axis=1)
        best = np.minimum(best, near)
    solid = np.all(p @ brush.normals.T - brush.dists <= 0, axis=1)
    return np.where(solid, 0.0, best)


def dist_to_brushes(points: np.ndarray, brushes, reach: float) -> np.ndarray:
    """(M,) exact distance to the nearest brush; inf where no brush's box comes within reach."""
    dist = np.full(len(points), np.inf)
    for b in brushes:
        lo, hi = b.bounds
        near = np.all((points > lo - reach) & (points < hi + reach), axis=1)
        if near.any():
            dist[near] = np.minimum(dist[near], dist_to_brush(points[near], b))
    return dist


def sphere_first_contacts(brushes, radius: float, starts: np.ndarray, ends: np.ndarray,
                          samples: int = 201, steps: int = 40) -> np.ndarray:
    """(N,) the segment parameter where the sphere first touches a brush (0 when it starts
    touching), inf when no sample touches."""
    ts = np.linspace(0.0, 1.0, samples)
    pts = starts[:, None, :] + ts[None, :, None] * (ends - starts)[:, None, :]
    reach = radius + 0.01
    touch = (dist_to_brushes(pts.reshape(-1, 3), brushes, reach) <= radius).reshape(pts.shape[:2])
    contact = touch.any(axis=1)
    k = np.argmax(touch, axis=1)
    first = np.full(len(starts), np.inf)
    first[contact] = 0.0
    idx = np.flatnonzero(contact & (k > 0))
    lo, hi = ts[k[idx] - 1], ts[k[idx]]
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        inside = dist_to_brushes(starts[idx] + mid[:, None] * (ends - starts)[idx], brushes, reach) <= radius
        hi, lo = np.where(inside, mid, hi), np.where(inside, lo, mid)
    first[idx] = hi
    return first
