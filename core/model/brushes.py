"""Convex brushes: from planes (as .map files give them) and from mesh data (as Blender gives it).

A brush is the intersection of the back half-spaces of its planes (outward normals).  Building
one checks everything a designer can get wrong and raises a typed error naming the brush.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from .. import kernels
from . import brushes_c
from ..detmath import arctan2, dot, matmul, norm, run_sums
from ..errors import (
    DegenerateBrushError,
    DuplicatePlaneError,
    InvalidCoordinatesError,
    NonConvexBrushError,
    OpenMeshError,
)
from ..geometry import (
    Side,
    base_polygon,
    clip_polygon,
    cross3,
    order_polygon_vertices,
    polygon_normal_area,
    snap_normals,
)
from ..tolerances import (
    CLOSURE_AREA_FLOOR,
    CLOSURE_TOLERANCE,
    DIST_EPSILON,
    MAX_COORDINATE,
    MESH_CONVEXITY_TOLERANCE,
    MESH_NORMAL_MERGE,
    MIN_BRUSH_VOLUME,
    MIN_EDGE_LENGTH,
    NORMAL_EPSILON,
    ON_EPSILON,
    PARALLEL_DETERMINANT,
    VERTEX_EPSILON,
)


class Contents(IntEnum):
    """What a brush is for.  Values are stored in the level file."""

    NONSOLID = 0  #: render only: water, triggers, hints; no collision
    SOLID = 1  #: structural: collides, seals the world, splits the world tree first
    DETAIL = 2  #: collides, but neither seals nor splits the structural tree
    CLIP = 3  #: collision for box hulls only: players stop, bullets (the point hull) pass

    @classmethod
    def parse(cls, name: str) -> "Contents":
        key = str(name).strip().upper().replace("-", "").replace("_", "")
        aliases = {"STRUCTURAL": "SOLID", "NONSOLID": "NONSOLID", "RENDER": "NONSOLID"}
        key = aliases.get(key, key)
        try:
            return cls[key]
        except KeyError:
            raise ValueError(f"unknown contents {name!r}; use solid, detail, clip or nonsolid") from None

    @property
    def label(self) -> str:
        return self.name.lower()

    @property
    def collides_with_point(self) -> bool:
        return self in (Contents.SOLID, Contents.DETAIL)


@dataclass
class Brush:
    """A convex solid.  normals/dists are the planes that carry a face (redundant ones dropped);
    faces[i] is the polygon on plane i, counter-clockwise seen from outside."""

    name: str
    contents: Contents
    normals: np.ndarray  # (K, 3)
    dists: np.ndarray  # (K,)
    faces: list[np.ndarray]
    textures: list[str] = field(default_factory=list)
    entity: str = "worldspawn"

    @property
    def vertices(self) -> np.ndarray:
        return np.unique(np.concatenate(self.faces), axis=0)

    @property
    def bounds(self) -> np.ndarray:
        """(2, 3): mins and maxs."""
        v = np.concatenate(self.faces)
        return np.array([v.min(axis=0), v.max(axis=0)])

    @property
    def volume(self) -> float:
        return float(sum(polygon_normal_area(f)[1] * d for f, d in zip(self.faces, self.dists)) / 3.0)

    def contains(self, points: np.ndarray, eps: float = 0.0) -> np.ndarray:
        """(N,) bool: points strictly inside (by more than eps) every plane."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        return np.all(matmul(points, self.normals.T) - self.dists < -eps, axis=1)


def _check_finite(values: np.ndarray, name: str, what: str) -> None:
    if not np.all(np.isfinite(values)):
        raise InvalidCoordinatesError(
            f"has NaN or infinite {what}.",
            subject=name,
            hint="Apply or reset the object's transforms and remove broken vertices, then bake again.",
        )


def _check_extent(points: np.ndarray, name: str) -> None:
    if points.size and float(np.abs(points).max()) > MAX_COORDINATE:
        raise InvalidCoordinatesError(
            f"reaches {float(np.abs(points).max()):.3g} m from the origin; the limit is {MAX_COORDINATE:.0f} m.",
            subject=name,
            hint="Check the scale (a .map is read at 1/32 m per unit) and move the level near the origin.",
        )


def brush_from_planes(
    normals,
    dists,
    name: str,
    contents: Contents = Contents.SOLID,
    textures: list[str] | None = None,
    entity: str = "worldspawn",
) -> Brush:
    """Build a brush from outward planes n.x = d (need not be unit length; they are normalised).

    Raises DegenerateBrushError (fewer than 4 planes, unbounded, no volume), DuplicatePlaneError,
    InvalidCoordinatesError.  Planes that do not touch the brush are dropped silently, as qbsp does.
    """
    normals = np.array(normals, dtype=np.float64).reshape(-1, 3)
    dists = np.array(dists, dtype=np.float64).reshape(-1)
    textures = list(textures) if textures is not None else [""] * len(normals)
    _check_finite(normals, name, "plane normals")
    _check_finite(dists, name, "plane distances")
    if len(normals) != len(dists) or len(textures) != len(normals):
        raise ValueError("normals, dists and textures must have the same length")
    if len(normals) < 4:
        raise DegenerateBrushError(
            f"has only {len(normals)} planes; a closed convex brush needs at least 4.",
            subject=name,
            hint="Delete it or give it the missing faces.",
        )
    lengths = norm(normals, axis=1)
    if np.any(lengths == 0.0):
        raise DegenerateBrushError("has a plane with a zero normal.", subject=name, hint="Delete that face.")
    dists = dists / lengths
    normals = snap_normals(normals / lengths[:, None])
    _check_extent(dists, name)
    _check_no_duplicate_planes(normals, dists, name)

    if len(normals) <= MAX_TRIPLE_PLANES:
        verts, member = _polytope_vertices(normals, dists)
    else:
        verts = _clipped_vertices(normals, dists)
        member = np.abs(matmul(verts, normals.T) - dists) <= ON_EPSILON
    faces, keep, areas = _assemble_faces(verts, member, normals)
    total_area = sum(areas)
    closure = np.sum([a * normals[i] for a, i in zip(areas, keep)], axis=0) if faces else np.ones(3)
    if len(faces) < 4:
        raise DegenerateBrushError(
            "has no volume (its planes meet in a point, a line or a flat sheet).",
            subject=name,
            hint="Delete it, or give it thickness.",
        )
    if float(np.abs(closure).max()) > CLOSURE_TOLERANCE * max(total_area, CLOSURE_AREA_FLOOR):
        raise DegenerateBrushError(
            "is open: its planes do not enclose a bounded volume.",
            subject=name,
            hint="Add the missing faces or delete the brush.",
        )
    brush = Brush(
        name=name,
        contents=Contents(contents),
        normals=normals[keep],
        dists=dists[keep],
        faces=faces,
        textures=[textures[i] for i in keep],
        entity=entity,
    )
    if sum(a * d for a, d in zip(areas, brush.dists)) / 3.0 < MIN_BRUSH_VOLUME:
        raise DegenerateBrushError(
            "has no volume (its planes meet in a point, a line or a flat sheet).",
            subject=name,
            hint="Delete it, or give it thickness.",
        )
    _check_extent(verts, name)
    return brush


def _check_no_duplicate_planes(normals: np.ndarray, dists: np.ndarray, name: str) -> None:
    """DuplicatePlaneError naming the first two faces on one plane (the plane table's equality)."""
    same = np.all(np.abs(normals[:, None, :] - normals[None, :, :]) < NORMAL_EPSILON, axis=2) & (
        np.abs(dists[:, None] - dists[None, :]) < DIST_EPSILON
    )
    same[np.arange(len(normals)), np.arange(len(normals))] = False
    if same.any():
        i, j = (int(k) for k in np.argwhere(same)[0])
        raise DuplicatePlaneError(
            f"has the same plane twice (faces {i} and {j}).",
            subject=name,
            hint="Remove the duplicate face; editors do this with 'clean up' or by re-snapping the brush.",
        )


def brushes_from_planes(specs) -> list[Brush]:
    """[brush_from_planes(n, d, name, contents, entity=entity[, textures=textures]) for (n, d, name,
    contents, entity[, textures]) in specs], the same brushes bit for bit, built many at once (the expanded brushes of a hull
    are thousands of small brushes, where per-brush NumPy calls dominate).

    Brushes with the same plane count go through brush_from_planes' steps together: every value
    is computed by the same operations (matrix products one brush at a time, in a stacked
    matmul; row-wise arithmetic on concatenated rows).  A brush the batch does not take (more
    than MAX_TRIPLE_PLANES planes, fewer than 4) or that fails any check is built by
    brush_from_planes itself, in order, so errors are the same and come in the same order."""
    return [b if b is not None else brush_from_planes(s[0], s[1], s[2], s[3], entity=s[4],
                                                      textures=s[5] if len(s) > 5 else None)
            for b, s in zip(batch_brushes(specs), specs)]


def batch_brushes(specs) -> list[Brush | None]:
    """The brushes of specs (n, d, name, contents, entity[, textures]) the batch builds, grouped by
    plane count, bit for bit brush_from_planes' brushes; None where brush_from_planes must build
    (or refuse) it itself: more than MAX_TRIPLE_PLANES planes, fewer than 4, or any check failed."""
    built: list[Brush | None] = [None] * len(specs)
    by_count: dict[int, list[int]] = {}
    for i, (n, d, *_rest) in enumerate(specs):
        k = len(d)
        if 4 <= k <= MAX_TRIPLE_PLANES and len(n) == k:
            by_count.setdefault(k, []).append(i)
    for k, members in by_count.items():
        for i, brush in zip(members, _batch_from_planes([specs[i] for i in members], k)):
            built[i] = brush
    return built


def _batch_from_planes(specs, k: int) -> list[Brush | None]:
    """brush_from_planes for brushes of k planes each; None for a brush that needs the full path."""
    g = len(specs)
    raw_n = np.array([s[0] for s in specs], dtype=np.float64).reshape(g, k, 3)
    raw_d = np.array([s[1] for s in specs], dtype=np.float64).reshape(g, k)
    good = np.isfinite(raw_n).all(axis=(1, 2)) & np.isfinite(raw_d).all(axis=1)
    lengths = norm(raw_n.reshape(-1, 3), axis=1).reshape(g, k)
    good &= ~np.any(lengths == 0.0, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        dists = raw_d / lengths
        normals = snap_normals((raw_n / lengths[:, :, None]).reshape(-1, 3)).reshape(g, k, 3)
    good &= np.abs(dists).max(axis=1) <= MAX_COORDINATE
    same = np.all(np.abs(normals[:, :, None, :] - normals[:, None, :, :]) < NORMAL_EPSILON, axis=3) & (
        np.abs(dists[:, :, None] - dists[:, None, :]) < DIST_EPSILON)
    same[:, np.arange(k), np.arange(k)] = False
    good &= ~same.any(axis=(1, 2))
    if kernels.resolve(brushes_c.BINDING) == "c":  # the same corners and faces, brush by brush in C
        corners, _, vcount, faces = brushes_c.brush_polytopes(normals, dists, good, _triples(k))
        good &= vcount >= 4
        brush_verts = [corners[b, : vcount[b]] for b in range(g)]
    else:
        verts, member, owner, vcount = _batch_polytope_vertices(normals, dists)
        good &= vcount >= 4
        faces = _batch_assemble_faces(verts, member, owner, vcount, normals, good)
        first = np.zeros(g, dtype=np.int64)
        np.cumsum(vcount[:-1], out=first[1:])
        brush_verts = [verts[first[b] : first[b] + vcount[b]] for b in range(g)]
    out: list[Brush | None] = [None] * g
    for b in np.flatnonzero(good).tolist():
        polys, keep, areas = faces[b]
        if len(polys) < 4:
            continue
        n_b = normals[b]
        total_area = sum(areas)
        closure = np.sum([a * n_b[i] for a, i in zip(areas, keep)], axis=0)
        if float(np.abs(closure).max()) > CLOSURE_TOLERANCE * max(total_area, CLOSURE_AREA_FLOOR):
            continue
        textures = [specs[b][5][i] for i in keep] if len(specs[b]) > 5 else [""] * len(keep)
        brush = Brush(name=specs[b][2], contents=Contents(specs[b][3]), normals=n_b[keep], dists=dists[b][keep],
                      faces=polys, textures=textures, entity=specs[b][4])
        if sum(a * d for a, d in zip(areas, brush.dists)) / 3.0 < MIN_BRUSH_VOLUME:
            continue
        if float(np.abs(brush_verts[b]).max()) > MAX_COORDINATE:
            continue
        out[b] = brush
    return out


def _batch_polytope_vertices(normals: np.ndarray, dists: np.ndarray):
    """_polytope_vertices for g brushes of k planes: all vertices (V, 3) brush after brush, which
    planes each lies on (V, k), the brush of each vertex, and each brush's vertex count."""
    g, k = dists.shape
    t = _triples(k)
    a, b, c = (normals[:, t[:, col]].reshape(-1, 3) for col in range(3))
    bc, ca, ab = cross3(b, c), cross3(c, a), cross3(a, b)
    det = dot(a, bc)
    ok = np.abs(det) > PARALLEL_DETERMINANT
    da, db, dc = (dists[:, t[:, col]].reshape(-1, 1) for col in range(3))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # rows not ok are dropped
        pts = (da * bc + db * ca + dc * ab) / det[:, None]
    pts[~ok] = 0.0  # not a vertex; rows of the product below do not mix, this keeps it finite
    # each brush's own product (stacked); a product of fewer than two rows would round otherwise
    n_ok = ok.reshape(g, -1).sum(axis=1)
    dist = matmul(pts.reshape(g, len(t), 3), normals.transpose(0, 2, 1)) - dists[:, None, :]
    inside = (np.all(dist <= VERTEX_EPSILON, axis=2) & ok.reshape(g, -1)).reshape(-1)
    inside.reshape(g, -1)[n_ok < 2] = False
    rows = np.flatnonzero(inside)
    brush = rows // len(t)
    pts, tri = pts[rows], t[rows % len(t)]
    if not len(pts):
        return np.zeros((0, 3)), np.zeros((0, k), bool), np.zeros(0, np.int64), np.zeros(g, np.int64)
    # several triples meet at one corner: merge points on a fine grid per brush, uniting planes
    key = np.concatenate([brush[:, None].astype(np.float64), np.round(pts / MIN_EDGE_LENGTH)], axis=1)
    rows, member = _merge_corners(key, tri, k)  # brush by brush, each in order of first appearance
    verts = pts[rows]
    owner = brush[rows]
    vcount = np.bincount(owner, minlength=g)
    # member |= |verts @ normals.T - dists| <= VERTEX_EPSILON, one product per brush (stacked)
    width = int(vcount.max())
    start = np.zeros(g, dtype=np.int64)
    np.cumsum(vcount[:-1], out=start[1:])
    local = np.arange(len(verts)) - start[owner]
    padded = np.zeros((g, max(width, 2), 3))
    padded[owner, local] = verts
    near = np.abs(matmul(padded, normals.transpose(0, 2, 1)) - dists[:, None, :]) <= VERTEX_EPSILON
    member |= near[owner, local]
    return verts, member, owner, vcount


def _batch_assemble_faces(verts, member, owner, vcount, normals, good) -> list:
    """_assemble_faces for each brush whose `good` is set: [(faces, plane indices, areas)]."""
    g, k = normals.shape[:2]
    out: list = [([], [], [])] * g
    start = np.zeros(g, dtype=np.int64)
    np.cumsum(vcount[:-1], out=start[1:])
    counts = np.zeros((g, k), dtype=np.int64)
    np.add.at(counts, owner, member.astype(np.int64)) if len(owner) else None
    face_ok = (counts >= 3) & good[:, None]
    fb, fk = np.nonzero(face_ok)  # faces: brush by brush, planes in order
    if not len(fb):
        return out
    face_id = np.full((g, k), -1, dtype=np.int64)
    face_id[fb, fk] = np.arange(len(fb))
    # centres: each brush's own product on[:, planes].T @ verts (rows: its faces)
    centre = np.zeros((len(fb), 3))
    for b in np.unique(fb).tolist():
        a, z = start[b], start[b] + vcount[b]
        planes = np.flatnonzero(face_ok[b])
        on = member[a:z][:, planes]
        centre[face_id[b, planes]] = (matmul(on.T.astype(np.float64), verts[a:z])) / counts[b, planes, None]
    v_idx, k_idx = np.nonzero(member)
    fid = face_id[owner[v_idx], k_idx]
    keep = fid >= 0
    v_idx, fid = v_idx[keep], fid[keep]
    order = np.lexsort((v_idx, fid))  # by face, then vertex: np.nonzero(on[:, planes].T)'s order
    v_idx, fid = v_idx[order], fid[order]
    per_brush: dict[int, tuple[list, list, list]] = {}
    for f, poly, area in _face_rings(verts, v_idx, fid, centre, normals[fb, fk]):
        faces, planes, areas = per_brush.setdefault(int(fb[f]), ([], [], []))
        faces.append(poly)
        planes.append(int(fk[f]))
        areas.append(area)
    out = list(out)
    for b, value in per_brush.items():
        out[b] = value
    return out


#: Above this many planes the vertices come from clipping (O(K^2) polygon clips) instead of
#: intersecting every triple (O(K^3) memory and time): a mesh sphere can have hundreds of planes.
MAX_TRIPLE_PLANES = 48


def _clipped_vertices(normals: np.ndarray, dists: np.ndarray) -> np.ndarray:
    """Brush vertices by clipping a huge polygon on each plane by all the others."""
    out = []
    for i in range(len(normals)):
        poly = base_polygon(normals[i], dists[i])
        for j in range(len(normals)):
            if j != i:
                poly = clip_polygon(poly, normals[j], dists[j], Side.BACK)
                if poly is None:
                    break
        if poly is not None:
            out.append(poly)
    if not out:
        return np.zeros((0, 3))
    pts = np.concatenate(out)
    _, first = np.unique(np.round(pts / MIN_EDGE_LENGTH), axis=0, return_index=True)
    return pts[np.sort(first)]


@functools.lru_cache(maxsize=64)
def _triples(k: int) -> np.ndarray:
    return np.array(list(itertools.combinations(range(k), 3)), dtype=np.intp).reshape(-1, 3)


def _polytope_vertices(normals: np.ndarray, dists: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices of {x : normals.x <= dists} and which planes each lies on ((V, 3), (V, K) bool).

    Every triple of planes is intersected at once by Cramer's rule; points behind all planes are
    the vertices, and a vertex lies on the planes of every triple that produced it (several meet
    at a pyramid's apex) plus any it touches within VERTEX_EPSILON.  An unbounded set still has
    vertices; the caller's closure test catches it.
    """
    k = len(normals)
    t = _triples(k)
    a, b, c = normals[t[:, 0]], normals[t[:, 1]], normals[t[:, 2]]
    bc, ca, ab = cross3(b, c), cross3(c, a), cross3(a, b)
    det = dot(a, bc)
    ok = np.abs(det) > PARALLEL_DETERMINANT
    t = t[ok]
    da, db, dc = dists[t[:, 0], None], dists[t[:, 1], None], dists[t[:, 2], None]
    pts = (da * bc[ok] + db * ca[ok] + dc * ab[ok]) / det[ok, None]
    dist = matmul(pts, normals.T) - dists
    inside = np.all(dist <= VERTEX_EPSILON, axis=1)
    pts, t = pts[inside], t[inside]
    if len(pts) == 0:
        return pts, np.zeros((0, k), bool)
    # Several triples meet at one corner: merge points on a fine grid, uniting their planes.
    rows, member = _merge_corners(np.round(pts / MIN_EDGE_LENGTH), t, k)
    verts = pts[rows]
    member |= np.abs(matmul(verts, normals.T) - dists) <= VERTEX_EPSILON
    return verts, member


def _merge_corners(key: np.ndarray, triples: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Several plane triples meet at one corner (their points share a key row): each corner's
    first row, corners in order of first appearance (deterministic output), and which of the k
    planes each corner lies on ((corners, k) bool: the planes of every triple that made it)."""
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    slot = rank[inverse]
    member = np.zeros((len(first), k), dtype=bool)
    for col in range(3):
        member[slot, triples[:, col]] = True
    return first[order], member


def _assemble_faces(verts: np.ndarray, on: np.ndarray, normals: np.ndarray):
    """Every plane's face polygon at once: the vertices on the plane (on: (V, K) bool), sorted
    counter-clockwise (seen from outside) by angle about their centroid, in one lexsort over all
    (face, angle) pairs.  Returns (faces, plane indices, areas) for faces of positive area."""
    if not len(verts):
        return [], [], []
    counts = on.sum(axis=0)
    planes = np.flatnonzero(counts >= 3)
    if not len(planes):
        return [], [], []
    k_idx, v_idx = np.nonzero(on[:, planes].T)  # sorted by face
    centre = (matmul(on[:, planes].T.astype(np.float64), verts)) / counts[planes, None]
    rings = _face_rings(verts, v_idx, k_idx, centre, normals[planes])
    return [poly for _, poly, _ in rings], [int(planes[f]) for f, _, _ in rings], [area for _, _, area in rings]


def _face_rings(verts: np.ndarray, v_idx: np.ndarray, face: np.ndarray, centre: np.ndarray, n: np.ndarray) -> list:
    """The polygons of faces given as vertex rows v_idx of face numbers `face` (sorted by face,
    every face with at least three): each sorted counter-clockwise (seen from outside, along its
    normal n[face]) by angle about its centre, in one lexsort over all (face, angle) pairs.
    Returns [(face number, polygon, area)] for the faces of positive area, vertices closer than
    MIN_EDGE_LENGTH to their predecessor dropped."""
    axis = np.argmax(np.abs(n), axis=1)
    u = cross3(n, np.eye(3)[(axis + 1) % 3])
    u /= norm(u, axis=1)[:, None]
    v = cross3(n, u)
    rel = verts[v_idx] - centre[face]
    angle = arctan2(dot(rel, v[face]), dot(rel, u[face]))
    order = np.lexsort((angle, face))
    face, pts = face[order], verts[v_idx[order]]
    starts = np.flatnonzero(np.r_[True, face[1:] != face[:-1]])
    ends = np.r_[starts[1:], len(face)]
    nxt = np.arange(1, len(face) + 1)
    nxt[ends - 1] = starts  # each face's last vertex wraps to its first
    cross = cross3(pts, pts[nxt])
    area = 0.5 * norm(run_sums(cross, starts, ends), axis=1)
    step = pts[nxt] - pts
    long_edge = dot(step, step) > MIN_EDGE_LENGTH * MIN_EDGE_LENGTH
    out = []
    for f, (a, z) in enumerate(zip(starts.tolist(), ends.tolist())):
        if area[f] <= MIN_EDGE_LENGTH * MIN_EDGE_LENGTH:
            continue
        poly = pts[a:z]
        if not long_edge[a:z].all():
            poly = _clean_ring(poly)
            if poly is None:
                continue
        out.append((f, poly, float(area[f])))
    return out


def _clean_ring(poly: np.ndarray) -> np.ndarray | None:
    """Drop vertices closer than MIN_EDGE_LENGTH to their predecessor; None if < 3 remain."""
    step = np.concatenate([poly[1:], poly[:1]]) - poly
    keep = dot(step, step) > MIN_EDGE_LENGTH * MIN_EDGE_LENGTH
    poly = poly[keep]
    return poly if len(poly) >= 3 else None


def box_brush(mins, maxs, name: str, contents: Contents = Contents.SOLID) -> Brush:
    """An axis-aligned box brush (sample scenes, tests)."""
    mins, maxs = np.asarray(mins, float), np.asarray(maxs, float)
    normals = np.vstack([np.eye(3), -np.eye(3)])
    dists = np.concatenate([maxs, -mins])
    return brush_from_planes(normals, dists, name, contents)


def brush_from_mesh(
    vertices,
    faces,
    name: str,
    contents: Contents = Contents.SOLID,
) -> Brush:
    """Build a brush from a closed convex mesh.

    vertices: (V, 3) in metres; faces: a list of vertex-index lists (Blender's polygons), outward
    facing.  A closed mesh whose faces all point inward is accepted and flipped.  Coplanar faces
    (a subdivided side) merge into one brush plane.  Raises OpenMeshError, NonConvexBrushError,
    DegenerateBrushError, InvalidCoordinatesError, each naming `name`.
    """
    verts = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    _check_finite(verts, name, "vertex coordinates")
    _check_extent(verts, name)
    faces = [list(map(int, f)) for f in faces]
    if len(faces) < 4 or len(verts) < 4:
        raise DegenerateBrushError(
            f"has {len(faces)} faces and {len(verts)} vertices; a brush needs a closed volume.",
            subject=name,
            hint="Use a closed convex mesh such as a cube.",
        )
    if any(len(f) < 3 or min(f) < 0 or max(f) >= len(verts) for f in faces):
        raise OpenMeshError("has a face with fewer than 3 or invalid vertices.", subject=name,
                            hint="Clean up the mesh (Mesh > Clean Up > Delete Loose / Degenerate Dissolve).")
    edges: dict[tuple[int, int], int] = {}
    for f in faces:
        for a, b in zip(f, f[1:] + f[:1]):
            edges[(a, b)] = edges.get((a, b), 0) + 1
    for (a, b), count in edges.items():
        if count != 1 or edges.get((b, a), 0) != 1:
            raise OpenMeshError(
                "is not a closed mesh with consistent normals "
                f"(edge between vertices {a} and {b} is used {count + edges.get((b, a), 0)} times).",
                subject=name,
                hint="Fill its holes (select all, F), recalculate normals outside (Shift+N), and bake again.",
            )
    planes_n, planes_d, total_volume = [], [], 0.0
    for f in faces:
        n, area = polygon_normal_area(verts[f])
        if area <= MIN_EDGE_LENGTH * MIN_EDGE_LENGTH:
            continue
        d = float(matmul(n, verts[f].mean(axis=0)))
        total_volume += area * d / 3.0
        planes_n.append(n)
        planes_d.append(d)
    if total_volume < 0:  # normals point inward: flip them all
        planes_n = [-n for n in planes_n]
        planes_d = [-d for d in planes_d]
    if abs(total_volume) < MIN_BRUSH_VOLUME:
        raise DegenerateBrushError("has no volume.", subject=name, hint="Give it thickness or delete it.")
    merged_n: list[np.ndarray] = []
    merged_d: list[float] = []
    for n, d in zip(planes_n, planes_d):
        for k, (mn, md) in enumerate(zip(merged_n, merged_d)):
            if np.abs(mn - n).max() < MESH_NORMAL_MERGE and abs(md - d) < MESH_CONVEXITY_TOLERANCE:
                break
        else:
            merged_n.append(n)
            merged_d.append(d)
    normals, dists = np.array(merged_n), np.array(merged_d)
    out = matmul(verts, normals.T) - dists
    worst = np.unravel_index(np.argmax(out), out.shape)
    if out[worst] > MESH_CONVEXITY_TOLERANCE:
        raise NonConvexBrushError(
            f"is not convex: vertex {int(worst[0])} lies {out[worst]:.4g} m in front of one of its faces.",
            subject=name,
            hint="Split it into convex pieces, or give it the role 'detail mesh' or 'non-solid'.",
        )
    return brush_from_planes(normals, dists, name, contents)
