"""Lightmap charts: a luxel grid on every face, packed into pages, with per-vertex UVs.

Every face of the compiled level (the CSG'd faces, split by the tree) gets a chart: a grid of
square luxels of side `luxel` metres laid on the face's plane in a fixed basis (u, v) and aligned
to multiples of `luxel` along u and v, so coplanar neighbours share one lattice.  A chart of w x h
luxels takes (w + 2 PADDING) x (h + 2 PADDING) texels in a page, so bilinear filtering at any
point of the face reads only its own chart's texels: no bleeding between charts.  The padding ring
(chart_texels, lightmap.fill_pages) holds a coplanar neighbour's luxels where the face meets one
across the chart's edge (a face split on a lattice line: a region's line, an axial node plane at a
multiple of the luxel), so both sides of the split read the same luxels: no seam; elsewhere it
repeats the chart's edge luxels.

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
    # per vertex of the level (V): the lightmap UV
    vertex_uv: np.ndarray  # (V, 2) float64

    @property
    def num_luxels(self) -> int:
        return len(self.luxel_face)

    @property
    def luxel_centre(self) -> np.ndarray:
        """(N, 3) each luxel's grid centre (it may lie off the face), made when asked: a bake never
        reads it (made with the charts, it was 0.1 s of slope's light)."""
        f = self.luxel_face
        sc = (self.grid_lo[f] + self.luxel_ij + 0.5) * self.luxel
        return (sc[:, :1] * self.face_u[f] + sc[:, 1:] * self.face_v[f]) + self.face_dist[f, None] * self.face_normal[f]

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
    charts = Charts(luxel, page_size, pages, u, v, normals, dists, grid_lo, size, face_page, origin, first,
                    luxel_face, ij, np.zeros((len(face_of_vertex), 2)))
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
                    lines=None, backend: str = "numpy") -> np.ndarray:
    """(N, 2) points of the faces' planes moved toward each face's centre (the mean of its
    vertices) just far enough to lie LUXEL_INSET inside every edge: q = c + k (p - c) with the
    largest k <= 1 (times `shrink`, per point) that does it (k = 0 on faces narrower than the
    inset).  Returns the moved points.  backend 'c': by the C kernel (lm_charts_c), the same bits."""
    faces = np.asarray(faces, dtype=np.int64)
    st = np.asarray(st, dtype=np.float64).reshape(-1, 2)
    if backend == "c":
        return _into_faces_c(level, charts, faces, st, lines, shrink, nearest=False)
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


def nearest_in_faces(level, charts: Charts, faces: np.ndarray, st: np.ndarray, lines=None,
                     backend: str = "numpy") -> np.ndarray:
    """(N, 2) each point clamped to its face: points outside go to the nearest point of the face's
    boundary (the nearest of the edges' nearest points), then LUXEL_INSET inside (move_into_faces);
    points inside stay (and are kept LUXEL_INSET from the edges).  backend 'c': by the C kernel
    (lm_charts_c), the same bits."""
    faces = np.asarray(faces, dtype=np.int64)
    st = np.asarray(st, dtype=np.float64).reshape(-1, 2)
    lines = lines if lines is not None else edge_lines(level, charts)
    if backend == "c":
        return _into_faces_c(level, charts, faces, st, lines, None, nearest=True)
    reps, pt, edge = _point_edges(len(charts.face_page), lines[0], faces)
    outside = outside_faces(charts, faces, st, lines, pairs=(reps, pt, edge))
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


def _into_faces_c(level, charts: Charts, faces, st, lines, shrink, nearest: bool) -> np.ndarray:
    from .lm_charts_c import into_faces

    lines = lines if lines is not None else edge_lines(level, charts)
    return into_faces(len(charts.face_page), lines, lines_segments(level, charts), face_centres_2d(level, charts),
                      faces, st, shrink, nearest)


def _point_edges(nf: int, ef: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (point, edge of its face) pairs, grouped by point in point order: (edges per point,
    pair's point, pair's edge), edges as edge_lines gives them (grouped by face, in face order)."""
    edge_first = np.searchsorted(ef, np.arange(nf))
    reps = np.bincount(ef, minlength=nf)[faces]
    pt = np.repeat(np.arange(len(faces)), reps)
    edge = np.repeat(edge_first[faces], reps) + (np.arange(len(pt)) - np.repeat(np.cumsum(reps) - reps, reps))
    return reps, pt, edge


def outside_faces(charts: Charts, faces: np.ndarray, st: np.ndarray, lines, slack: float = 0.0,
                  pairs=None) -> np.ndarray:
    """(N,) bool: the point (s, t) lies more than `slack` metres outside some edge of its face (a
    point on an edge is inside; a face without edges has no outside)."""
    faces = np.asarray(faces, dtype=np.int64)
    st = np.asarray(st, dtype=np.float64).reshape(-1, 2)
    _, en, eo = lines
    reps, pt, edge = pairs if pairs is not None else _point_edges(len(charts.face_page), lines[0], faces)
    outside = np.zeros(len(st), dtype=bool)
    has = reps > 0  # pairs are grouped by point, in point order: reductions by reduceat
    if has.any():
        outside[has] = np.logical_or.reduceat(dot(en[edge], st[pt]) < eo[edge] - slack, (np.cumsum(reps) - reps)[has])
    return outside


def chart_texels(level, charts: Charts, lines=None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every texel of every chart, padding included: (page, y, x, luxel it shows), chart by chart,
    row by row.  A chart's own texels show its luxels.  A padding texel shows the luxel of the same
    lattice cell of a coplanar neighbour (same plane index: the same basis, the same lattice) that
    covers, as the face does, more than LUXEL_INSET of the side the padding cell shares with the
    chart's edge cell (for a corner cell: holds their shared corner, as the face does), faces grown
    by LUXEL_GRID_SLACK luxels; of several, one whose luxel centre lies on it, then the lowest face.
    A corner texel no neighbour lends to takes the luxel lent to the side texel next to it in its
    column, else in its row (what the split's other face repeats into that cell).
    A face split on a lattice line (a region's line, an axial node plane at a multiple of the luxel)
    then reads, bilinearly, the same luxels on either side of the split: no seam; a face behind a
    gap (a thin wall) lends nothing.  Elsewhere the padding repeats the chart's nearest edge luxel
    (clamped index), so bilinear filtering never reads another chart's texels."""
    nf = len(charts.face_page)
    w, h = charts.grid_size[:, 0], charts.grid_size[:, 1]
    tw, th = w + 2 * PADDING, h + 2 * PADDING
    counts = np.where(w > 0, tw * th, 0)
    face = np.repeat(np.arange(nf), counts)
    first = np.zeros(nf, dtype=np.int64)
    if nf:
        np.cumsum(counts[:-1], out=first[1:])
    local = np.arange(int(counts.sum())) - first[face]
    tx, ty = local % tw[face], local // tw[face]
    i = np.clip(tx - PADDING, 0, w[face] - 1)
    j = np.clip(ty - PADDING, 0, h[face] - 1)
    lux = charts.luxel_first[face] + j * w[face] + i
    pad = np.flatnonzero((i != tx - PADDING) | (j != ty - PADDING))
    if len(pad) and charts.num_luxels:
        cell = charts.grid_lo[face[pad]] + np.stack([tx[pad], ty[pad]], axis=1) - PADDING
        edge_cell = charts.grid_lo[face[pad]] + np.stack([i[pad], j[pad]], axis=1)
        lent = np.full(len(lux), -1, dtype=np.int64)
        lent[pad] = _neighbour_luxels(level, charts, face[pad], cell, edge_cell, lines)
        # a corner texel no face lends to takes what was lent to the side texel next to it in its
        # column (else in its row): the luxel the split's other face repeats into that cell
        corner = pad[(lent[pad] < 0) & (i[pad] != tx[pad] - PADDING) & (j[pad] != ty[pad] - PADDING)]
        in_column = lent[first[face[corner]] + (j[corner] + PADDING) * tw[face[corner]] + tx[corner]]
        in_row = lent[first[face[corner]] + ty[corner] * tw[face[corner]] + i[corner] + PADDING]
        lent[corner] = np.where(in_column >= 0, in_column, in_row)
        got = np.flatnonzero(lent >= 0)
        lux[got] = lent[got]
    y = (charts.chart_origin[face, 1] + ty).astype(np.int64)
    x = (charts.chart_origin[face, 0] + tx).astype(np.int64)
    return charts.face_page[face].astype(np.int64), y, x, lux


def _neighbour_luxels(level, charts: Charts, faces: np.ndarray, cell: np.ndarray, edge_cell: np.ndarray,
                      lines=None) -> np.ndarray:
    """(M,) for padding cells (lattice cell, face, the face's edge cell next to it): the
    neighbour's luxel chart_texels takes, or -1."""
    lines = lines if lines is not None else edge_lines(level, charts)
    plane = np.asarray(level.face_plane, dtype=np.int64)
    lf = charts.luxel_face
    lcell = charts.grid_lo[lf] + charts.luxel_ij
    # one integer per (plane, i) (ranks among the luxels'), then per (plane, i, j): exact, no overflow
    i_lo, j_lo = (int(x) for x in lcell.min(axis=0))
    i_span, j_span = (int(x) + 1 for x in lcell.max(axis=0) - lcell.min(axis=0))
    rows, row_rank = np.unique(plane[lf] * i_span + (lcell[:, 0] - i_lo), return_inverse=True)
    key = row_rank.astype(np.int64) * j_span + (lcell[:, 1] - j_lo)
    order = np.argsort(key, kind="stable")  # equal keys in luxel order: lowest face first
    sorted_key = key[order]
    # the padding cells' keys, where their (plane, i) and j can match a luxel's at all
    prow = plane[faces] * i_span + (cell[:, 0] - i_lo)
    at = np.minimum(np.searchsorted(rows, prow), len(rows) - 1)
    ok = ((cell[:, 0] >= i_lo) & (cell[:, 0] < i_lo + i_span) & (rows[at] == prow)
          & (cell[:, 1] >= j_lo) & (cell[:, 1] < j_lo + j_span))
    pkey = at * j_span + (cell[:, 1] - j_lo)
    k0 = np.where(ok, np.searchsorted(sorted_key, pkey, side="left"), 0)  # the cell's luxels: order[k0:k1]
    k1 = np.where(ok, np.searchsorted(sorted_key, pkey, side="right"), 0)
    # the side the padding cell shares with the chart's edge cell (its corner, for a corner cell):
    # the face and the neighbour must cover the same part of it, longer than LUXEL_INSET
    luxel = charts.luxel
    slack = LUXEL_GRID_SLACK * luxel
    differ = cell != edge_cell
    far = np.maximum(cell, edge_cell)
    a = np.where(differ, far, cell) * luxel
    b = np.where(differ, far, cell + 1) * luxel
    lo_a, hi_a = np.zeros(len(cell)), np.full(len(cell), -1.0)
    some = np.flatnonzero(k1 > k0)  # the face's own cover, where a neighbour could lend at all
    lo_a[some], hi_a[some] = segment_in_faces(charts, faces[some], a[some], b[some], lines, slack)
    n = np.where((hi_a - lo_a) * luxel > LUXEL_INSET, k1 - k0, 0)
    # candidate pairs (padding cell, luxel of that cell), each cell's in luxel order
    pc = np.repeat(np.arange(len(cell)), n)
    cand = order[np.repeat(k0, n) + (np.arange(len(pc)) - np.repeat(np.cumsum(n) - n, n))]
    cf = lf[cand]
    lo_b, hi_b = segment_in_faces(charts, cf, a[pc], b[pc], lines, slack)
    shared = (np.minimum(hi_a[pc], hi_b) - np.maximum(lo_a[pc], lo_b)) * luxel > LUXEL_INSET
    pc, cand, cf = pc[shared], cand[shared], cf[shared]
    # a neighbour whose luxel centre lies on it first, then the lowest face
    off = outside_faces(charts, cf, (lcell[cand] + 0.5) * luxel, lines)
    pick = np.lexsort((cand, off, pc))
    pc, cand = pc[pick], cand[pick]
    firsts = np.flatnonzero(np.concatenate([[True], pc[1:] != pc[:-1]])) if len(pc) else np.zeros(0, np.int64)
    out = np.full(len(cell), -1, dtype=np.int64)
    out[pc[firsts]] = cand[firsts]
    return out


def segment_in_faces(charts: Charts, faces: np.ndarray, a: np.ndarray, b: np.ndarray, lines,
                     slack: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) (N,) each segment a + x (b - a), x in [0, 1], clipped to its face grown by `slack`
    metres: the part lo <= x <= hi lies on the face (empty: lo > hi; a face without edges holds
    nothing).  A point segment (a = b) gives [0, 1] on the face, empty off it."""
    faces = np.asarray(faces, dtype=np.int64)
    _, en, eo = lines
    reps, pt, edge = _point_edges(len(charts.face_page), lines[0], faces)
    lo, hi = np.zeros(len(faces)), np.where(reps > 0, 1.0, -1.0)
    has = reps > 0
    if has.any():
        c = dot(en[edge], a[pt]) - eo[edge] + slack  # inside edge e where c + x d >= 0
        d = dot(en[edge], b[pt] - a[pt])
        bound = -c / np.where(d != 0, d, 1.0)
        low = np.where(d > 0, bound, np.where((d == 0) & (c < 0), np.inf, -np.inf))
        high = np.where(d < 0, bound, np.where((d == 0) & (c < 0), -np.inf, np.inf))
        starts = (np.cumsum(reps) - reps)[has]
        lo[has] = np.maximum(lo[has], np.maximum.reduceat(low, starts))
        hi[has] = np.minimum(hi[has], np.minimum.reduceat(high, starts))
    return lo, hi


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
    """3-D points of (s, t) on the faces' planes, `height` metres in front of them: s u + t v +
    (dist + height) n, summed in that order, in two (N, 3) arrays (fresh temporaries for every
    product were half its time: 0.15 s of slope's light)."""
    f = np.asarray(faces, dtype=np.int64)
    out = np.take(charts.face_u, f, axis=0)
    out *= st[:, :1]
    tmp = np.take(charts.face_v, f, axis=0)
    tmp *= st[:, 1:]
    out += tmp
    np.take(charts.face_normal, f, axis=0, out=tmp)
    tmp *= (charts.face_dist[f] + height)[:, None]
    out += tmp
    return out
