"""Planes, the plane table, and convex polygons: classify, split, clip.

A plane is n.x = d with |n| = 1; its *front* (n.x - d > 0) is the empty side of a face.
Polygons are (K, 3) float64 arrays of vertices in counter-clockwise order seen from the front.
"""

from __future__ import annotations

import math
from enum import IntEnum

import numpy as np

from .detmath import arctan2, matmul, norm
from .tolerances import (
    AXIAL_SNAP_EPSILON,
    DIST_EPSILON,
    MIN_EDGE_LENGTH,
    NORMAL_EPSILON,
    ON_EPSILON,
    WORLD_HALF_EXTENT,
)


class Side(IntEnum):
    """Where a point set lies against a plane (the thesis's CALCULATE-SIDE answers)."""

    ON = 0
    FRONT = 1
    BACK = 2
    SPANNING = 3


# --------------------------------------------------------------------------------------------
# Planes


def snap_normal(n: np.ndarray) -> np.ndarray:
    """Return n normalised, with near-axial normals made exactly axial."""
    n = np.asarray(n, dtype=np.float64)
    n = n / math.sqrt(float(matmul(n, n)))
    axis = int(np.argmax(np.abs(n)))
    if max(abs(n[(axis + 1) % 3]), abs(n[(axis + 2) % 3])) < AXIAL_SNAP_EPSILON:
        out = np.zeros(3)
        out[axis] = 1.0 if n[axis] > 0 else -1.0
        return out
    return n


def plane_from_points(a, b, c) -> tuple[np.ndarray, float]:
    """Plane through three points, front side where (b - a) x (c - a) points.

    Raises ValueError for collinear points (the caller names the brush).
    """
    a = np.asarray(a, dtype=np.float64)
    cross = np.cross(np.asarray(b, dtype=np.float64) - a, np.asarray(c, dtype=np.float64) - a)
    length = math.sqrt(float(matmul(cross, cross)))
    if not length > 0.0 or not math.isfinite(length):
        raise ValueError("the three points are collinear")
    n = snap_normal(cross / length)
    return n, float(matmul(n, a))


def _is_canonical(n: np.ndarray) -> bool:
    """The even member of a plane pair has its dominant axis component positive (ties: first axis)."""
    axis = int(np.argmax(np.abs(n)))
    return bool(n[axis] > 0)


class PlaneTable:
    """Unique planes, each stored beside its flip: plane i and plane i ^ 1 face opposite ways.

    Adding a plane within NORMAL_EPSILON / DIST_EPSILON of a stored one (either facing) returns
    the stored index, so 'coplanar' is `a >> 1 == b >> 1` and 'same facing' is `a == b`.
    Tolerances apply here, once, when a plane is created; indices are handed out first come,
    first served, so the same planes in the same order always get the same indices.

    Lookups compare plain Python floats (a plane is looked up once per brush face, and NumPy's
    per-call overhead would cost ten times the comparison itself).
    """

    _BUCKET = 0.01  # m, hash bucket of the canonical distance; neighbours are searched too

    def __init__(self) -> None:
        self._normals = np.zeros((64, 3))
        self._dists = np.zeros(64)
        self._count = 0
        self._buckets: dict[int, list[int]] = {}
        self._canonical: list[tuple[float, float, float, float]] = []  # (nx, ny, nz, d) of plane 2k

    def __len__(self) -> int:
        return self._count

    @property
    def normals(self) -> np.ndarray:
        """(P, 3) float64 unit normals (a view; do not keep across add())."""
        return self._normals[: self._count]

    @property
    def dists(self) -> np.ndarray:
        """(P,) float64 distances."""
        return self._dists[: self._count]

    def normal(self, index: int) -> np.ndarray:
        return self._normals[index]

    def dist(self, index: int) -> float:
        return float(self._dists[index])

    def _grow(self) -> None:
        cap = 2 * len(self._dists)
        normals, dists = np.zeros((cap, 3)), np.zeros(cap)
        normals[: self._count] = self._normals[: self._count]
        dists[: self._count] = self._dists[: self._count]
        self._normals, self._dists = normals, dists

    def _search(self, nx: float, ny: float, nz: float, d: float) -> int:
        """The first stored canonical plane (even index) within tolerance of (n, d), or -1.

        Buckets key, key - 1, key + 1 in that order, each in insertion order: deterministic."""
        key = math.floor(d / self._BUCKET)
        canonical = self._canonical
        for k in (key, key - 1, key + 1):
            for idx in self._buckets.get(k, ()):
                sx, sy, sz, sd = canonical[idx >> 1]
                if (abs(sd - d) < DIST_EPSILON and abs(sx - nx) < NORMAL_EPSILON and abs(sy - ny) < NORMAL_EPSILON
                        and abs(sz - nz) < NORMAL_EPSILON):
                    return idx
        return -1

    def _find_snapped(self, nx: float, ny: float, nz: float, d: float, canonical: bool) -> int:
        """find() for a snapped normal given as floats, its canonical flag already known.

        The canonical orientation is searched first; then the opposite one, which can only match
        when two components tie in size and rounding picked the other as dominant (a 45-degree
        plane stored as (a, -b) and looked up as (b, -a))."""
        cx, cy, cz, cd = (nx, ny, nz, d) if canonical else (-nx, -ny, -nz, -d)
        idx = self._search(cx, cy, cz, cd)
        if idx >= 0:
            return idx if canonical else idx ^ 1
        idx = self._search(-cx, -cy, -cz, -cd)
        if idx >= 0:
            return idx ^ 1 if canonical else idx
        return -1

    def find(self, n: np.ndarray, d: float) -> int:
        """Index of the stored plane equal to (n, d) within tolerance (either facing), or -1."""
        nx, ny, nz = (float(x) for x in n)
        return self._find_snapped(nx, ny, nz, float(d), _is_canonical(n))

    def _insert(self, nx: float, ny: float, nz: float, d: float, canonical: bool) -> int:
        """Append (n, d) and its flip, the canonical member first; returns the index of (n, d)."""
        cx, cy, cz, cd = (nx, ny, nz, d) if canonical else (-nx, -ny, -nz, -d)
        if self._count + 2 > len(self._dists):
            self._grow()
        idx = self._count
        self._normals[idx] = (cx, cy, cz)
        self._normals[idx + 1] = (-cx, -cy, -cz)
        self._dists[idx], self._dists[idx + 1] = cd, -cd
        self._count += 2
        self._canonical.append((cx, cy, cz, cd))
        self._buckets.setdefault(math.floor(cd / self._BUCKET), []).append(idx)
        return idx if canonical else idx + 1

    def add(self, n, d: float) -> int:
        """Index of plane (n, d), adding it (and its flip) if new.  n must be unit length."""
        n = snap_normal(n)
        nx, ny, nz = n.tolist()
        d = float(d)
        canonical = _is_canonical(n)
        found = self._find_snapped(nx, ny, nz, d, canonical)
        return found if found >= 0 else self._insert(nx, ny, nz, d, canonical)

    def add_many(self, normals: np.ndarray, dists: np.ndarray) -> np.ndarray:
        """add() for each row in order, as (K,) int64 indices: the same answers, the same table.

        Snapping and the canonical test run on all rows at once (bit for bit what add() computes
        per row); only the tolerant lookup, which depends on the rows added before, is a loop."""
        normals = np.asarray(normals, dtype=np.float64).reshape(-1, 3)
        dists = np.asarray(dists, dtype=np.float64).reshape(-1)
        out = np.empty(len(normals), dtype=np.int64)
        if not len(normals):
            return out
        snapped = _snap_unit_normals(normals)
        mag = np.abs(snapped)
        axis = np.argmax(mag, axis=1)
        canonical = (snapped[np.arange(len(snapped)), axis] > 0).tolist()
        for k, ((nx, ny, nz), d, c) in enumerate(zip(snapped.tolist(), dists.tolist(), canonical)):
            found = self._find_snapped(nx, ny, nz, d, c)
            out[k] = found if found >= 0 else self._insert(nx, ny, nz, d, c)
        return out

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of (normals, dists) for a compiled level."""
        return self.normals.copy(), self.dists.copy()


def _snap_unit_normals(normals: np.ndarray) -> np.ndarray:
    """snap_normal of each row, bit for bit: normalised by the square root of the same dot
    product (detmath sums in the same fixed order for a row as for one vector), then snapped."""
    sq = matmul(normals[:, None, :], normals[:, :, None])[:, 0, 0]
    return snap_normals(normals / np.sqrt(sq)[:, None])


# --------------------------------------------------------------------------------------------
# Convex polygons


def classify_points(dist: np.ndarray, eps: float = ON_EPSILON) -> Side:
    """CALCULATE-SIDE from signed distances of a polygon's vertices to a plane."""
    front = bool((dist > eps).any())
    back = bool((dist < -eps).any())
    if front and back:
        return Side.SPANNING
    if front:
        return Side.FRONT
    if back:
        return Side.BACK
    return Side.ON


def classify_polygon(verts: np.ndarray, n: np.ndarray, d: float, eps: float = ON_EPSILON) -> Side:
    return classify_points(matmul(verts, n) - d, eps)


def split_polygon(
    verts: np.ndarray, n: np.ndarray, d: float, eps: float = ON_EPSILON, dist: np.ndarray | None = None
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Split a convex polygon by a plane into (front, back); either is None when empty.

    Vertices within eps of the plane go to both halves, so the halves share the cut edge exactly.
    A polygon lying on the plane is returned as (verts, None) and the caller decides by facing.
    Polygons have a handful of vertices, so the loop is plain Python on lists (NumPy's per-call
    overhead would dominate); `dist` may be given as an array or a list.
    """
    if dist is None:
        dist = matmul(verts, n) - d
    dl = dist if isinstance(dist, list) else dist.tolist()
    if min(dl) >= -eps:
        return verts, None
    if max(dl) <= eps:
        return None, verts
    vl = verts.tolist()
    side = [1 if x > eps else (-1 if x < -eps else 0) for x in dl]
    # exactly axial only: a normal tilted by 1e-9 still has a component that rounds to +-1
    axial = [i for i in range(3) if (n[i] == 1.0 or n[i] == -1.0) and n[(i + 1) % 3] == 0 and n[(i + 2) % 3] == 0]
    front: list = []
    back: list = []
    k = len(vl)
    for i in range(k):
        p, s = vl[i], side[i]
        if s >= 0:
            front.append(p)
        if s <= 0:
            back.append(p)
        j = i + 1 if i + 1 < k else 0
        sj = side[j]
        if s != 0 and sj != 0 and s != sj:
            q = vl[j]
            t = dl[i] / (dl[i] - dl[j])
            mid = [p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1]), p[2] + t * (q[2] - p[2])]
            for axis in axial:  # put the new vertex exactly on an axial plane: no drift
                mid[axis] = d * n[axis]
            front.append(mid)
            back.append(mid)
    # A new vertex lies more than eps (> MIN_EDGE_LENGTH) along its edge from both ends, since
    # both ends are more than eps from the plane: no short edges can appear, so no cleaning pass.
    return (np.array(front) if len(front) >= 3 else None), (np.array(back) if len(back) >= 3 else None)


def split_polygons(
    verts: np.ndarray, counts: np.ndarray, dist: np.ndarray, normals: np.ndarray, dists: np.ndarray,
    eps: float = ON_EPSILON,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """split_polygon for many polygons at once, each by its own plane, bit for bit.

    verts (M, V, 3) padded polygons with counts (M,) vertices; dist (M, V) their vertices'
    distances (the padding is ignored); normals (M, 3) and dists (M,) the planes (used only to
    put new vertices exactly on axial planes).  Returns (front, front_counts, back, back_counts):
    padded (M, V', 3) arrays, a count of 0 where split_polygon returns None.  Each new vertex is
    computed by the same operations in the same order as split_polygon's, so the values are the
    same floats; a polygon wholly on one side (or on the plane) comes back whole on that side.
    """
    m, v = verts.shape[:2]
    slot = np.arange(v)
    valid = slot < counts[:, None]
    side = np.where(dist > eps, 1, np.where(dist < -eps, -1, 0)) * valid
    nxt = np.where(slot + 1 < counts[:, None], slot + 1, 0)
    side_next = np.take_along_axis(side, nxt, axis=1)
    cross = valid & (side != 0) & (side_next != 0) & (side != side_next)
    dist_next = np.take_along_axis(dist, nxt, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(cross, dist / (dist - dist_next), 0.0)
    q = np.take_along_axis(verts, nxt[:, :, None], axis=1)
    mid = verts + t[:, :, None] * (q - verts)
    axial = ((normals == 1.0) | (normals == -1.0)) & (np.count_nonzero(normals, axis=1) == 1)[:, None]
    mid = np.where(axial[:, None, :], (dists[:, None] * normals)[:, None, :], mid)
    # slots 2i: vertex i, 2i + 1: the new vertex on edge (i, i + 1)
    slots = np.stack([verts, mid], axis=2).reshape(m, 2 * v, 3)
    lo = np.where(valid, dist, np.inf).min(axis=1)
    hi = np.where(valid, dist, -np.inf).max(axis=1)
    whole_front = lo >= -eps  # split_polygon's early answers: (verts, None) and (None, verts)
    whole_back = ~whole_front & (hi <= eps)
    keep_f = np.stack([valid & (side >= 0), cross], axis=2).reshape(m, 2 * v)
    keep_b = np.stack([valid & (side <= 0), cross], axis=2).reshape(m, 2 * v)
    keep_f[whole_front | whole_back] = False
    keep_b[whole_front | whole_back] = False
    keep_f[whole_front] = np.stack([valid, np.zeros_like(valid)], axis=2).reshape(m, 2 * v)[whole_front]
    keep_b[whole_back] = np.stack([valid, np.zeros_like(valid)], axis=2).reshape(m, 2 * v)[whole_back]
    front, nf = _compact(slots, keep_f)
    back, nb = _compact(slots, keep_b)
    nf[nf < 3] = 0
    nb[nb < 3] = 0
    return front, nf, back, nb


def _compact(slots: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of `slots` where `keep`, moved to the front of each polygon in order: (M, W, 3), (M,)."""
    n = keep.sum(axis=1)
    width = int(n.max()) if len(n) else 0
    out = np.zeros((len(slots), max(width, 1), 3))
    rows, cols = np.nonzero(keep)
    pos = np.cumsum(keep, axis=1)[rows, cols] - 1
    out[rows, pos] = slots[rows, cols]
    return out, n


def clip_polygon(
    verts: np.ndarray, n: np.ndarray, d: float, keep: Side = Side.BACK, eps: float = ON_EPSILON
) -> np.ndarray | None:
    """The part of a convex polygon on one side of a plane (None when nothing is left).

    A polygon lying on the plane is kept.
    """
    front, back = split_polygon(verts, n, d, eps)
    return back if keep == Side.BACK else front


def cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (..., 3) arrays; np.cross costs ~30 us of overhead per call."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def polygon_normal_area(verts: np.ndarray) -> tuple[np.ndarray, float]:
    """Newell's normal (unit, counter-clockwise seen from the front) and the polygon's area."""
    nxt = np.concatenate([verts[1:], verts[:1]])
    cross = cross3(verts, nxt).sum(axis=0)
    length = math.sqrt(float(matmul(cross, cross)))
    if length == 0.0:
        return np.zeros(3), 0.0
    return cross / length, 0.5 * length


def polygon_area(verts: np.ndarray) -> float:
    return polygon_normal_area(verts)[1]


def polygon_centroid(verts: np.ndarray) -> np.ndarray:
    return verts.mean(axis=0)


def base_polygon(n: np.ndarray, d: float, half_extent: float = WORLD_HALF_EXTENT) -> np.ndarray:
    """A huge square on plane (n, d), counter-clockwise seen from the front, to clip a face from."""
    axis = int(np.argmax(np.abs(n)))
    up = np.array([0.0, 0.0, 1.0]) if axis != 2 else np.array([1.0, 0.0, 0.0])
    right = np.cross(up, n)
    right /= norm(right)
    up = np.cross(n, right)
    centre = n * d
    r, u = right * half_extent, up * half_extent
    return np.array([centre - r - u, centre + r - u, centre + r + u, centre - r + u])


def order_polygon_vertices(points: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Sort coplanar points counter-clockwise around their centroid, seen from the front of n."""
    centre = points.mean(axis=0)
    axis = int(np.argmax(np.abs(n)))
    u = cross3(n, np.eye(3)[(axis + 1) % 3])
    u /= math.sqrt(float(matmul(u, u)))
    v = cross3(n, u)
    rel = points - centre
    angle = arctan2(matmul(rel, v), matmul(rel, u))
    return points[np.argsort(angle, kind="stable")]


def snap_normals(normals: np.ndarray) -> np.ndarray:
    """Vectorised snap_normal for (K, 3) unit normals."""
    normals = np.array(normals, dtype=np.float64)
    mag = np.abs(normals)
    axis = np.argmax(mag, axis=1)
    rows = np.arange(len(normals))
    off_axis = np.maximum(mag[rows, (axis + 1) % 3], mag[rows, (axis + 2) % 3])
    snap = off_axis < AXIAL_SNAP_EPSILON
    if snap.any():
        signs = np.sign(normals[rows, axis])
        normals[snap] = 0.0
        normals[rows[snap], axis[snap]] = signs[snap]
    return normals
