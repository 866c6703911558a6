"""Patch creation, the part the thesis's chapter 4 leaves undefined ("quite a challenging
problem ... we will not go further into that").

A patch is a block of `block` x `block` luxels of one face's chart (core/compile/light/lm_charts.py),
its polygon the face clipped to the block's rectangle: patches tile every face exactly, are
never larger than the block (Quake 2 chops at 64 units, 4 luxels of 16), and line up with the
luxel grid, so a luxel's bounce light is read from its face's patch grid by bilinear
interpolation (lightmap.interpolate_patches).  Blocks the face does not reach (its bounding
rectangle's corners) are empty patches of area 0, kept so the grid stays regular.

Clipping is Sutherland-Hodgman on all patches at once (clip_batch: padded vertex arrays).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...tolerances import CLIP_SNAP
from .lm_charts import Charts, face_polygons_2d


@dataclass
class Patches:
    block: int  # luxels per patch side
    face: np.ndarray  # (P,) int64
    grid_first: np.ndarray  # (F,) first patch of each face
    grid_size: np.ndarray  # (F, 2) patches along u, v
    cell: np.ndarray  # (P, 2) the patch's (i, j) in its face's grid
    st: np.ndarray  # (P, K, 2) polygon in the face's (s, t), padded
    count: np.ndarray  # (P,) vertices (0: empty patch)
    area: np.ndarray  # (P,) m^2
    centroid_st: np.ndarray  # (P, 2)

    def __len__(self) -> int:
        return len(self.face)


def clip_batch(verts: np.ndarray, count: np.ndarray, dist: np.ndarray,
               snapped: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Clip many convex polygons to where `dist` >= 0 (Sutherland-Hodgman, one step for all).

    verts (N, K, D) padded vertex rows, count (N,) vertices used, dist (N, K) signed distances
    of the vertices.  Returns (N, K + 1, D) and the new counts (0: nothing left).

    A plane crosses a convex polygon's boundary twice at most; more crossings come from vertices
    within rounding of the plane (a polygon lying in it, or collinear vertices along an edge in
    it).  Those rows are clipped again with distances under CLIP_SNAP taken as 0 (on the plane,
    kept), and a row still crossed more than twice keeps nothing (it lies in the plane: no area).
    Every other row is clipped as it is."""
    n, k = dist.shape
    if n == 0 or k == 0:
        return np.zeros((n, k + 1, verts.shape[2])), np.zeros(n, dtype=np.int64)
    j = np.arange(k)
    valid = j[None, :] < count[:, None]
    j1 = np.where(j[None, :] + 1 < count[:, None], j[None, :] + 1, 0)
    rows = np.arange(n)[:, None]
    d0, d1 = dist, dist[rows, j1]
    v0, v1 = verts, verts[rows, j1]
    inside0, inside1 = d0 >= 0, d1 >= 0
    cross = valid & (inside0 != inside1)
    t = np.where(cross, d0 / np.where(cross, d0 - d1, 1.0), 0.0)
    cut = v0 + t[..., None] * (v1 - v0)
    out = np.empty((n, 2 * k, verts.shape[2]))
    out[:, 0::2], out[:, 1::2] = v0, cut
    keep = np.empty((n, 2 * k), dtype=bool)
    keep[:, 0::2], keep[:, 1::2] = valid & inside0, cross
    new_count = keep.sum(axis=1)
    bad = np.flatnonzero(cross.sum(axis=1) > 2)
    new_count[bad] = 0
    order = np.argsort(~keep, axis=1, kind="stable")[:, : k + 1]
    clipped = np.take_along_axis(out, order[..., None], axis=1)
    clipped[np.arange(k + 1)[None, :] >= new_count[:, None]] = 0.0
    if len(bad) and not snapped:
        d = dist[bad]
        clipped[bad], new_count[bad] = clip_batch(verts[bad], count[bad], np.where(np.abs(d) <= CLIP_SNAP, 0.0, d),
                                                  snapped=True)
    return clipped, np.where(new_count >= 3, new_count, 0)


def polygon_area_centroid_2d(st: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N,) areas and (N, 2) centroids of padded 2-D polygons (shoelace, fixed order)."""
    n, k = st.shape[:2]
    area = np.zeros(n)
    cx = np.zeros(n)
    cy = np.zeros(n)
    if k == 0:
        return area, np.zeros((n, 2))
    rows = np.arange(n)
    base = st[:, 0]
    for j in range(1, k - 1):  # a fan from vertex 0: triangles (0, j, j + 1)
        live = j + 1 < count
        a, b = st[rows, j] - base, st[rows, j + 1] - base
        tri = 0.5 * (a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]) * live
        area = area + tri
        cx = cx + tri * (base[:, 0] + st[rows, j, 0] + st[rows, j + 1, 0]) / 3.0
        cy = cy + tri * (base[:, 1] + st[rows, j, 1] + st[rows, j + 1, 1]) / 3.0
    safe = np.where(area > 0, area, 1.0)
    centroid = np.where(area[:, None] > 0, np.stack([cx / safe, cy / safe], axis=1), base)
    return area, centroid


def make_patches(level, charts: Charts, block: int) -> Patches:
    """Every face's chart cut into blocks of `block` luxels, each the face polygon clipped to it."""
    st, face_of_vertex = face_polygons_2d(level, charts.face_u, charts.face_v)
    counts = np.asarray(level.face_num_vertices, dtype=np.int64)
    firsts = np.asarray(level.face_first_vertex, dtype=np.int64)
    nf = len(counts)
    gsize = (charts.grid_size + block - 1) // block
    per_face = gsize[:, 0] * gsize[:, 1]
    grid_first = np.zeros(nf, dtype=np.int64)
    if nf:
        np.cumsum(per_face[:-1], out=grid_first[1:])
    face = np.repeat(np.arange(nf), per_face)
    local = np.arange(len(face)) - grid_first[face]
    cell = np.stack([local % gsize[face, 0], local // gsize[face, 0]], axis=1)
    kmax = int(counts.max()) if nf else 3
    poly = np.zeros((len(face), kmax, 2))
    slot = np.arange(kmax)
    take = slot[None, :] < counts[face][:, None]
    src = np.where(take, firsts[face][:, None] + slot[None, :], 0)
    poly[take] = st[src[take]]
    cnt = counts[face].copy()
    lux = charts.luxel
    lo = (charts.grid_lo[face] + cell * block) * lux  # (P, 2) the block's lower corner
    hi = lo + block * lux
    for axis, bound, sign in ((0, lo, 1.0), (0, hi, -1.0), (1, lo, 1.0), (1, hi, -1.0)):
        dist = sign * (poly[..., axis] - bound[:, axis, None])
        poly, cnt = clip_batch(poly, cnt, dist)
    area, centroid = polygon_area_centroid_2d(poly, cnt)
    return Patches(block, face, grid_first, gsize, cell, poly, cnt, area, centroid)
