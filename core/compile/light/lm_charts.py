"""Lightmap charts: a luxel grid on every face, packed into pages, with per-vertex UVs.

Every face of the compiled level (the CSG'd faces, split by the tree) gets a chart: a grid of
square luxels of side `luxel` metres laid on the face's plane in a fixed basis (u, v) and aligned
to multiples of `luxel` along u and v, so coplanar neighbours share one lattice.  A chart of w x h
luxels takes (w + 2 PADDING) x (h + 2 PADDING) texels in a page; the padding ring repeats the
chart's edge luxels (lightmap.fill_pages), so bilinear filtering at any point of the face reads
only its own chart's texels: no bleeding between charts.

Page layout: page[k, y, x] is texel (x, y) of page k, y = 0 the row at V = 0 (Blender's image
origin is the bottom-left corner).  A point (s, t) = (x . u, x . v) of face f has
    U = (origin_x + PADDING + (s - s0) / luxel) / page_size,  V likewise with t, t0, origin_y,
where (s0, t0) = grid_lo * luxel is the chart's lower corner; luxel (i, j) covers
[s0 + i luxel, s0 + (i + 1) luxel] and sits on texel (origin_x + PADDING + i, origin_y + PADDING + j).

Luxel sample points: a luxel's centre may lie outside its face (the grid covers the face's
bounding rectangle), or under a brush that touches the face.  Such a centre is *moved* toward
the face's centre until it lies LUXEL_INSET inside every edge, then lifted LUXEL_LIFT off the
face; a point that is still inside solid is moved further toward the centre (lightmap
`sample_points`).  No luxel is sampled inside solid, so brushes that touch leave no dark luxels.

Patches (the radiosity's shooters and receivers, core/compile/light/lm_radiosity.py) are blocks of
patch x patch luxels of a chart, each the face polygon clipped to its block: coarser than
luxels, exactly tiling the face.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...detmath import dot, norm
from ...errors import InvalidSettingError
from ...geometry import cross3
from ...tolerances import LUXEL_GRID_SLACK, LUXEL_INSET

#: texels of padding around each chart (each side); one is enough for bilinear filtering
PADDING = 1
#: smallest and largest page side in texels (powers of two)
MIN_PAGE = 64
MAX_PAGE = 2048


@dataclass
class Charts:
    luxel: float  # m, side of a luxel
    page_size: int  # texels, side of every page
    num_pages: int
    # per face (F)
    face_u: np.ndarray  # (F, 3) unit, in the face's plane
    face_v: np.ndarray  # (F, 3) unit, n x u
    face_normal: np.ndarray  # (F, 3)
    face_dist: np.ndarray  # (F,)
    grid_lo: np.ndarray  # (F, 2) int64: the chart's lower corner in luxels along u, v
    grid_size: np.ndarray  # (F, 2) int64: luxels along u, v (w, h >= 1)
    face_page: np.ndarray  # (F,) int32
    chart_origin: np.ndarray  # (F, 2) int32: texel (x, y) of the chart's corner, padding included
    luxel_first: np.ndarray  # (F,) int64 into the luxel arrays
    # per luxel (N), face by face, row by row (j, then i)
    luxel_face: np.ndarray  # (N,) int64
    luxel_ij: np.ndarray  # (N, 2) int64
    luxel_centre: np.ndarray  # (N, 3) the grid centre (may lie off the face)
    # per vertex of the level (V): the lightmap UV
    vertex_uv: np.ndarray  # (V, 2) float64

    @property
    def num_luxels(self) -> int:
        return len(self.luxel_face)

    def luxel_texels(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(page, y, x) of every luxel's texel."""
        f = self.luxel_face
        x = self.chart_origin[f, 0] + PADDING + self.luxel_ij[:, 0]
        y = self.chart_origin[f, 1] + PADDING + self.luxel_ij[:, 1]
        return self.face_page[f].astype(np.int64), y.astype(np.int64), x.astype(np.int64)

    def uv_of_points(self, faces: np.ndarray, points: np.ndarray) -> np.ndarray:
        """(N, 2) lightmap UV of points lying on the given faces."""
        faces = np.asarray(faces, dtype=np.int64)
        p = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        s = dot(p, self.face_u[faces]) / self.luxel - self.grid_lo[faces, 0]
        t = dot(p, self.face_v[faces]) / self.luxel - self.grid_lo[faces, 1]
        x = self.chart_origin[faces, 0] + PADDING + s
        y = self.chart_origin[faces, 1] + PADDING + t
        return np.stack([x, y], axis=1) / self.page_size


def face_bases(normals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(u, v) unit vectors in each plane, v = n x u: on walls v points up (u = normalize(Z x n)),
    on floors and ceilings (|n_z| >= 0.7) u is normalize(X x n)."""
    n = np.asarray(normals, dtype=np.float64).reshape(-1, 3)
    ref = np.zeros_like(n)
    steep = np.abs(n[:, 2]) >= 0.7
    ref[steep, 0] = 1.0
    ref[~steep, 2] = 1.0
    u = cross3(ref, n)
    u = u / norm(u, axis=1)[:, None]
    v = cross3(n, u)
    return u, v


def face_polygons_2d(level, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s, t) of every vertex of the level (V, 2) and each vertex's face (V,)."""
    counts = np.asarray(level.face_num_vertices, dtype=np.int64)
    face_of_vertex = np.repeat(np.arange(len(counts)), counts)
    verts = np.asarray(level.vertices, dtype=np.float64)
    st = np.stack([dot(verts, u[face_of_vertex]), dot(verts, v[face_of_vertex])], axis=1)
    return st, face_of_vertex


def pack_charts(sizes: np.ndarray, page_size: int | None = None) -> tuple[int, int, np.ndarray, np.ndarray]:
    """Shelf packing of (w, h) texel rectangles, tallest first (ties by width, then index):
    (page_size, num_pages, page (K,), origin (K, 2)).  The page side is the smallest power of two
    from MIN_PAGE up to MAX_PAGE that holds every chart on one page, else MAX_PAGE."""
    sizes = np.asarray(sizes, dtype=np.int64).reshape(-1, 2)
    if page_size is None:
        need = int(sizes.max()) if len(sizes) else 1
        area = int((sizes[:, 0] * sizes[:, 1]).sum())
        page_size = MIN_PAGE
        while page_size < MAX_PAGE and (page_size < need or _pages_for(sizes, page_size) > 1 or page_size ** 2 < area):
            page_size *= 2
    if len(sizes) and int(sizes.max()) > page_size:
        raise InvalidSettingError(f"a face needs a lightmap chart of {int(sizes.max())} texels, more than a "
                                  f"{page_size}-texel page holds.", subject="luxel",
                                  hint="Bake light with a larger --luxel, or split the face's brush.")
    order = np.lexsort((np.arange(len(sizes)), -sizes[:, 0], -sizes[:, 1]))
    page = np.zeros(len(sizes), dtype=np.int32)
    origin = np.zeros((len(sizes), 2), dtype=np.int32)
    k = x = y = shelf = 0
    for c in order.tolist():
        w, h = int(sizes[c, 0]), int(sizes[c, 1])
        if x + w > page_size:
            x, y, shelf = 0, y + shelf, 0
        if y + h > page_size:
            k, x, y, shelf = k + 1, 0, 0, 0
        page[c], origin[c] = k, (x, y)
        x += w
        shelf = max(shelf, h)
    return page_size, (k + 1 if len(sizes) else 0), page, origin


def _pages_for(sizes: np.ndarray, page_size: int) -> int:
    if len(sizes) and int(sizes.max()) > page_size:
        return 2
    return pack_charts(sizes, page_size)[1]


def make_charts(level, luxel: float, page_size: int | None = None, lit: np.ndarray | None = None) -> Charts:
    """A chart per face of the level, packed into pages; faces where `lit` is False (faces seen
    only from outside a sealed map) get none: page -1, 0 x 0 luxels, UV (0, 0)."""
    pl = np.asarray(level.face_plane, dtype=np.int64)
    normals = np.asarray(level.plane_normals, dtype=np.float64)[pl].reshape(-1, 3)
    dists = np.asarray(level.plane_dists, dtype=np.float64)[pl]
    u, v = face_bases(normals)
    st, face_of_vertex = face_polygons_2d(level, u, v)
    nf = len(pl)
    lo = np.full((nf, 2), np.inf)
    hi = np.full((nf, 2), -np.inf)
    np.minimum.at(lo, face_of_vertex, st / luxel)
    np.maximum.at(hi, face_of_vertex, st / luxel)
    grid_lo = np.floor(lo + LUXEL_GRID_SLACK).astype(np.int64) if nf else np.zeros((0, 2), np.int64)
    grid_hi = np.ceil(hi - LUXEL_GRID_SLACK).astype(np.int64) if nf else np.zeros((0, 2), np.int64)
    size = np.maximum(grid_hi - grid_lo, 1)
    lit = np.ones(nf, dtype=bool) if lit is None else np.asarray(lit, dtype=bool)
    size[~lit] = 0
    face_page = np.full(nf, -1, dtype=np.int32)
    origin = np.zeros((nf, 2), dtype=np.int32)
    page_size, pages, face_page[lit], origin[lit] = pack_charts(size[lit] + 2 * PADDING, page_size)
    counts = size[:, 0] * size[:, 1]
    first = np.zeros(nf, dtype=np.int64)
    if nf:
        np.cumsum(counts[:-1], out=first[1:])
    luxel_face = np.repeat(np.arange(nf), counts)
    local = np.arange(int(counts.sum())) - first[luxel_face]
    w = size[luxel_face, 0]
    ij = np.stack([local % w, local // w], axis=1)
    sc = (grid_lo[luxel_face] + ij + 0.5) * luxel
    centre = (sc[:, :1] * u[luxel_face] + sc[:, 1:] * v[luxel_face]) + dists[luxel_face, None] * normals[luxel_face]
    charts = Charts(luxel, page_size, pages, u, v, normals, dists, grid_lo, size, face_page, origin, first,
                    luxel_face, ij, centre, np.zeros((len(face_of_vertex), 2)))
    if len(face_of_vertex):
        charts.vertex_uv = np.where(lit[face_of_vertex, None], charts.uv_of_points(face_of_vertex, level.vertices), 0.0)
    return charts


def lit_faces(level) -> np.ndarray:
    """(F,) bool: faces of leaves with a PVS cluster, or every face when the level has no PVS
    (a sealed map's faces toward the void lie in leaves outside it, with cluster -1)."""
    nf = len(level.face_plane)
    if not len(getattr(level, "vis_row_offset", ())):
        return np.ones(nf, dtype=bool)
    counts = np.asarray(level.leaf_face_count, dtype=np.int64)
    leaf_of_entry = np.repeat(np.arange(len(counts)), counts)
    entries = np.asarray(level.leaf_faces, dtype=np.int64)[
        np.concatenate([np.arange(a, a + c) for a, c in zip(np.asarray(level.leaf_face_first).tolist(), counts.tolist())])
        if len(counts) else np.zeros(0, np.int64)]
    lit = np.zeros(nf, dtype=bool)
    inside = np.asarray(level.vis_leaf_cluster)[leaf_of_entry] >= 0
    lit[entries[inside]] = True
    return lit


# --------------------------------------------------------------------------------------------
# Moving points into their face


def edge_lines(level, charts: Charts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each face's edges as inward 2-D lines: (face (E,), inward unit normal (E, 2), offset (E,)),
    a point q of the face's plane being inside edge e when normal . q >= offset."""
    st, face_of_vertex = face_polygons_2d(level, charts.face_u, charts.face_v)
    counts = np.asarray(level.face_num_vertices, dtype=np.int64)
    first = np.asarray(level.face_first_vertex, dtype=np.int64)
    idx = np.arange(len(st))
    nxt = np.where(idx + 1 == first[face_of_vertex] + counts[face_of_vertex], first[face_of_vertex], idx + 1)
    e = st[nxt] - st
    inward = np.stack([-e[:, 1], e[:, 0]], axis=1)  # faces are counter-clockwise seen from the front
    length = norm(inward, axis=1)
    keep = length > 0
    inward = inward[keep] / length[keep, None]
    return face_of_vertex[keep], inward, dot(inward, st[keep])


def move_into_faces(level, charts: Charts, faces: np.ndarray, st: np.ndarray, shrink: np.ndarray | None = None,
                    lines=None) -> np.ndarray:
    """(N, 2) points of the faces' planes moved toward each face's centre (the mean of its
    vertices) just far enough to lie LUXEL_INSET inside every edge: q = c + k (p - c) with the
    largest k <= 1 (times `shrink`, per point) that does it (k = 0 on faces narrower than the
    inset).  Returns the moved points."""
    faces = np.asarray(faces, dtype=np.int64)
    st = np.asarray(st, dtype=np.float64).reshape(-1, 2)
    ef, en, eo = lines if lines is not None else edge_lines(level, charts)
    centre = face_centres_2d(level, charts)
    # pairs (point, edge of its face): edges are grouped by face in face order
    edge_first = np.searchsorted(ef, np.arange(len(charts.face_page)))
    edge_count = np.bincount(ef, minlength=len(charts.face_page))
    k = np.ones(len(st)) if shrink is None else np.asarray(shrink, dtype=np.float64).copy()
    reps = edge_count[faces]
    pt = np.repeat(np.arange(len(st)), reps)
    edge = np.repeat(edge_first[faces], reps) + (np.arange(len(pt)) - np.repeat(np.cumsum(reps) - reps, reps))
    c = centre[faces[pt]]
    a = dot(en[edge], c) - eo[edge] - LUXEL_INSET
    b = dot(en[edge], st[pt] - c)
    limit = np.where(b < 0, a / np.where(b < 0, -b, 1.0), np.inf)
    has = reps > 0  # pairs are grouped by point: each point's smallest limit by reduceat
    if has.any():
        k[has] = np.minimum(k[has], np.minimum.reduceat(limit, (np.cumsum(reps) - reps)[has]))
    k = np.clip(k, 0.0, 1.0)
    cf = centre[faces]
    return cf + k[:, None] * (st - cf)


def nearest_in_faces(level, charts: Charts, faces: np.ndarray, st: np.ndarray, lines=None) -> np.ndarray:
    """(N, 2) each point clamped to its face: points outside go to the nearest point of the face's
    boundary (the nearest of the edges' nearest points), then LUXEL_INSET inside (move_into_faces);
    points inside stay (and are kept LUXEL_INSET from the edges)."""
    faces = np.asarray(faces, dtype=np.int64)
    st = np.asarray(st, dtype=np.float64).reshape(-1, 2)
    lines = lines if lines is not None else edge_lines(level, charts)
    ef, en, eo = lines
    nf = len(charts.face_page)
    edge_first = np.searchsorted(ef, np.arange(nf))
    edge_count = np.bincount(ef, minlength=nf)
    reps = edge_count[faces]
    pt = np.repeat(np.arange(len(st)), reps)
    edge = np.repeat(edge_first[faces], reps) + (np.arange(len(pt)) - np.repeat(np.cumsum(reps) - reps, reps))
    outside = np.zeros(len(st), dtype=bool)
    has = reps > 0  # pairs are grouped by point, in point order: reductions by reduceat
    if has.any():
        outside[has] = np.logical_or.reduceat(dot(en[edge], st[pt]) < eo[edge], (np.cumsum(reps) - reps)[has])
    if outside.any():
        out_pts = np.flatnonzero(outside)
        sel = outside[pt]  # the outside points' pairs, still grouped by point
        ppt, pedge = pt[sel], edge[sel]
        a, b = lines_segments(level, charts)
        pa, pb = a[pedge], b[pedge]
        ab = pb - pa
        t = np.clip(dot(st[ppt] - pa, ab) / np.maximum(dot(ab, ab), 1e-300), 0.0, 1.0)
        near = pa + t[:, None] * ab
        d2 = dot(near - st[ppt], near - st[ppt])
        group = np.repeat(np.arange(len(out_pts)), reps[out_pts])
        starts = np.cumsum(reps[out_pts]) - reps[out_pts]
        nearest = np.flatnonzero(d2 == np.minimum.reduceat(d2, starts)[group])  # the first of ties wins
        firsts = nearest[np.searchsorted(group[nearest], np.arange(len(out_pts)))]
        st = st.copy()
        st[out_pts] = near[firsts]
    return move_into_faces(level, charts, faces, st, lines=lines)


def lines_segments(level, charts: Charts) -> tuple[np.ndarray, np.ndarray]:
    """Each edge's end points (s, t), in edge_lines' order."""
    st, face_of_vertex = face_polygons_2d(level, charts.face_u, charts.face_v)
    counts = np.asarray(level.face_num_vertices, dtype=np.int64)
    first = np.asarray(level.face_first_vertex, dtype=np.int64)
    idx = np.arange(len(st))
    nxt = np.where(idx + 1 == first[face_of_vertex] + counts[face_of_vertex], first[face_of_vertex], idx + 1)
    keep = norm(st[nxt] - st, axis=1) > 0
    return st[keep], st[nxt][keep]


def face_centres_2d(level, charts: Charts) -> np.ndarray:
    """(F, 2) mean of each face's vertices in (s, t)."""
    st, face_of_vertex = face_polygons_2d(level, charts.face_u, charts.face_v)
    counts = np.maximum(np.asarray(level.face_num_vertices, dtype=np.int64), 1)
    total = np.zeros((len(counts), 2))
    np.add.at(total, face_of_vertex, st)
    return total / counts[:, None]


def lift(charts: Charts, faces: np.ndarray, st: np.ndarray, height: float) -> np.ndarray:
    """3-D points of (s, t) on the faces' planes, `height` metres in front of them."""
    f = np.asarray(faces, dtype=np.int64)
    return (st[:, :1] * charts.face_u[f] + st[:, 1:] * charts.face_v[f]
            + (charts.face_dist[f] + height)[:, None] * charts.face_normal[f])
