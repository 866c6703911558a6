"""Seals that hang on slivers: the leak check as Quake's qbsp judges a map (seal rule 'qbsp').

Here brushes are exact convex sets, so solids meeting only along an edge or at a vertex seal
(docs/VISIBILITY.md).  qbsp-based compilers (ericw-tools qbsp/brushbsp.cc, after Quake 2's qbsp3)
build their tree from brushes, and SplitBrush does not split a brush that reaches less than 0.1
unit across a node's plane: it keeps the brush whole on the far side, so on the near side that
sliver is empty.  Where a seal rests on such a tip, as q1_mountain's terrain of tetrahedra meeting
at vertices does, those compilers report a leak that exact geometry does not have.

A *tip site*: the plane P of a face of brush A passes within SLIVER_REACH of a vertex V of another
brush B, not through it, and every other vertex of B lies behind P (B reaches across P only at V).
qbsp cuts that tip only when P splits a node holding V.  A node splits only by a side of a brush
in it (SelectSplitPlane, ChooseMidPlaneFromList), so the node holds V and a point f of A's face,
and what else can be said of it depends on which of qbsp's two ways chose the plane
(BuildTree_r, with ericw's default maxnodesize of 1024 units):

- *small nodes* (node bounds at most QBSP_MAX_NODE_SIZE on every axis): the qbsp3 heuristic
  takes a structural brush's side before any detail side (its passes), and B's piece in the node
  always offers one, so A is structural (solid, or water and hints outside func_detail*); the
  bounds hold V and f, so A's face meets the cube of half-side QBSP_MAX_NODE_SIZE around V.
- *big nodes* (the mid split): an axial side splits the node whenever one does (by more than
  SLIVER_REACH: CheckPlaneAgainstVolume is SplitBrush), and the bounds shrink only at axial
  splits, so a node is first split by a slanted plane only when it is a box that no axial face
  crosses, and its subtree stays inside that box.  A slanted P thus needs some f on A's face
  whose box with V (the smallest axis-aligned box holding both) no axial face of the tree's
  brushes crosses.  A's face is sampled (_face_samples), so a window narrower than the samples
  may be missed.

A site is cut when either way could make it: B seals (structural), A is in qbsp's point hull (not
clip), and one of the conditions above holds.  Each such tip is cut off (B clipped to the far
side of P) and the ordinary leak check runs again on the result; a bake skips that second compile
when no cut tip touches both the void's clusters and the others (sites_that_may_open), as then
the verdict cannot change.  qbsp's tree cuts a subset of
these (it does not choose every plane it could), so a map sealed here is sealed for qbsp; on the
maps in maps/ the verdicts are ericw-tools' (tests/core/test_sliver_seal.py, docs/VISIBILITY.md).
Not modelled: pieces qbsp drops for their volume (microvolume) or tiny cuts (WindingIsTiny), and
tips of B's pieces after earlier splits.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ...detmath import dot, matmul
from ...errors import BrushbakeError, check_cancel
from ...model.brushes import Contents, brush_from_planes
from ...tolerances import QBSP_MAX_NODE_SIZE, SLIVER_ON_PLANE, SLIVER_REACH
from ...units import QUAKE_UNIT
from ..trees.build import compile_scene
from .leaks import find_leaks, inside_points, set_hole
from .portals import build_portals

#: entries of the vertex-by-plane distance table computed at once (bounds its memory)
TABLE_CHUNK = 1 << 22
#: planes of one normal from which the seal check sweeps them along it (_planes_near_boxes)
SWEEP_MIN = 16
#: a box reaching more than this many times the median box along a swept normal is tested against
#: each plane of it instead of widening every plane's window (_near_swept)
SWEEP_WIDE = 64.0
#: points of A's face tried as f for the big-node condition: its corners, SITE_EDGE_STEPS - 1
#: points along each edge and a grid of SITE_FAN_STEPS^2 / 2 points in each triangle of its fan
SITE_EDGE_STEPS = 8
SITE_FAN_STEPS = 5


@dataclass(frozen=True)
class SliverSite:
    brush: int  #: index of the tip brush B in the scene's brushes
    plane_brush: int  #: index of the brush A whose face plane passes near B's vertex
    plane_index: int  #: that plane's index in A
    vertex: tuple  #: V, metres
    distance: float  #: V's distance from the plane, metres (> 0: in front of it)
    way: str = ""  #: how qbsp could cut it: 'small' or 'big' nodes ('' before qbsp_sites judges it)


def tip_sites(brushes, reach: float, on_plane: float = SLIVER_ON_PLANE, tips=None) -> list[SliverSite]:
    """Every tip site (module docstring) among `brushes`, nearest first (then by brush and plane);
    `tips`: (N,) bool, the brushes that may be B (default all).  Axial planes are matched against
    the vertices sorted on their axis; slanted ones first against the brushes' bounding boxes
    (swept along their normal where many share it: _planes_near_boxes), then against the vertices
    of the brushes whose box they pass within reach of."""
    if not brushes:
        return []
    tips = np.ones(len(brushes), bool) if tips is None else np.asarray(tips, bool)
    verts, allv, owner, first = _brush_vertices(brushes)
    normals = np.concatenate([np.asarray(b.normals, dtype=np.float64) for b in brushes])
    dists = np.concatenate([np.asarray(b.dists, dtype=np.float64) for b in brushes])
    plane_owner = np.repeat(np.arange(len(brushes)), [len(b.dists) for b in brushes])
    plane_first = np.concatenate(([0], np.cumsum([len(b.dists) for b in brushes])[:-1]))
    axis = np.argmax(np.abs(normals), axis=1)
    axial = np.abs(normals[np.arange(len(normals)), axis]) == 1.0
    tip_brushes = np.flatnonzero(tips)
    block = _VertexBlock(verts, tip_brushes)
    pairs = _axial_pairs(allv, np.flatnonzero(tips[owner]), normals, dists, axis, axial, reach, on_plane)
    pairs += _slanted_pairs(verts, first, block, normals, dists, np.flatnonzero(~axial), reach, on_plane)
    if not pairs:
        return []
    vi, pi = np.array(sorted(set(pairs)), np.int64).T
    b, a = owner[vi], plane_owner[pi]
    vi, pi, b, a = vi[a != b], pi[a != b], b[a != b], a[a != b]
    s = dot(allv[vi], normals[pi]) - dists[pi]
    found = []
    step = max(1, TABLE_CHUNK // (3 * block.width))
    for q0 in range(0, len(vi), step):
        q = slice(q0, q0 + step)
        with np.errstate(invalid="ignore"):  # NaN padding is never in front of a plane
            d = dot(block.pad[block.row[b[q]]], normals[pi[q], None, :]) - dists[pi[q], None]
            front = np.where(s[q, None] > 0, d >= -on_plane, d <= on_plane).sum(axis=1)
        for k in np.flatnonzero(front == 1).tolist():  # only V is not behind P
            i = q0 + k
            found.append(SliverSite(int(b[i]), int(a[i]), int(pi[i] - plane_first[a[i]]), tuple(allv[vi[i]].tolist()),
                                    float(s[i])))
    found.sort(key=lambda x: (abs(x.distance), x.brush, x.plane_brush, x.plane_index))
    return found


def _brush_vertices(brushes):
    """(per-brush vertex arrays, all of them stacked, owner of each row, first row of each
    brush): each brush's distinct face corners, as Brush.vertices, found in one sort."""
    faces = [np.asarray(f, dtype=np.float64) for b in brushes for f in b.faces]
    owner = np.repeat(np.arange(len(brushes), dtype=np.float64), [sum(len(f) for f in b.faces) for b in brushes])
    rows = np.unique(np.column_stack([owner, np.concatenate(faces)]), axis=0) if faces else np.zeros((0, 4))
    owner = rows[:, 0].astype(np.int64)
    allv = np.ascontiguousarray(rows[:, 1:])
    counts = np.bincount(owner, minlength=len(brushes))
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    return [allv[f: f + c] for f, c in zip(first.tolist(), counts.tolist())], allv, owner, first


@dataclass
class _VertexBlock:
    """The vertices of some brushes padded with NaN to one (T, width, 3) block, and each brush's
    row in it (-1 for brushes not in it)."""

    pad: np.ndarray
    row: np.ndarray
    width: int

    def __init__(self, verts, brushes: np.ndarray):
        self.width = max([len(verts[b]) for b in brushes.tolist()], default=1)
        self.pad = np.full((len(brushes), self.width, 3), np.nan)
        for i, b in enumerate(brushes.tolist()):
            self.pad[i, :len(verts[b])] = verts[b]
        self.row = np.full(len(verts), -1)
        self.row[brushes] = np.arange(len(brushes))


def _axial_pairs(allv, vrows, normals, dists, axis, axial, reach, on_plane) -> list[tuple[int, int]]:
    """(vertex row, plane row) for axial planes: a window of the vertices sorted on the axis."""
    out = []
    for k in range(3):
        rows = np.flatnonzero(axial & (axis == k))
        if not len(rows) or not len(vrows):
            continue
        order = vrows[np.argsort(allv[vrows, k], kind="stable")]
        coords = allv[order, k]
        c = dists[rows] * normals[rows, k]
        # vertices strictly between on_plane and reach from the plane, on either side
        for a, b in ((c - reach, c - on_plane), (c + on_plane, c + reach)):
            lo, hi = np.searchsorted(coords, a, "right"), np.searchsorted(coords, b, "left")
            for r in np.flatnonzero(hi > lo).tolist():
                out.extend((vi, int(rows[r])) for vi in order[lo[r]:hi[r]].tolist())
    return out


def _slanted_pairs(verts, first, block, normals, dists, slanted, reach, on_plane) -> list[tuple[int, int]]:
    """(vertex row, plane row) for slanted planes: unique planes against the block's brushes'
    boxes (centre distance within the box's reach along the normal), then against their vertices."""
    tip_brushes = np.flatnonzero(block.row >= 0)
    if not len(slanted) or not len(tip_brushes):
        return []
    up, p_inv = np.unique(np.column_stack([normals[slanted], dists[slanted]]), axis=0, return_inverse=True)
    p_inv = p_inv.reshape(-1)
    with np.errstate(invalid="ignore"):
        lo, hi = np.fmin.reduce(block.pad, axis=1)[block.row[tip_brushes]], np.fmax.reduce(block.pad, axis=1)[
            block.row[tip_brushes]]
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    b, p = _planes_near_boxes(centre, half, up[:, :3], up[:, 3], reach)
    pb = np.column_stack([p, tip_brushes[b]])
    if not len(pb):
        return []
    hits = []
    step = max(1, TABLE_CHUNK // (3 * block.width))
    for q0 in range(0, len(pb), step):
        q = pb[q0: q0 + step]
        with np.errstate(invalid="ignore"):
            a = np.abs(dot(block.pad[block.row[q[:, 1]]], up[q[:, 0], None, :3]) - up[q[:, 0], 3][:, None])
            pi, k = np.nonzero((a > on_plane) & (a < reach))
        hits.append(np.column_stack([q[pi, 0], first[q[pi, 1]] + k]))
    hits = np.concatenate(hits)
    rows = _group(p_inv)
    return [(int(v), int(slanted[r])) for p, v in hits.tolist() for r in rows[p]]


def _planes_near_boxes(centre, half, normals, dists, reach: float) -> tuple[np.ndarray, np.ndarray]:
    """(box, plane) index pairs, box-major then plane, of the boxes (centre, half (B, 3)) a plane
    (normals (P, 3), dists (P,)) passes within reach of: |centre . n - d| <= half . |n| + reach.
    Planes that share their normal with SWEEP_MIN others or more are swept: the boxes sorted once
    along that normal, each plane's candidates found by two binary searches, then tested as the
    rest are (a world's slanted planes come in few directions: tiled 20,000 brushes, 2,782 planes
    in 4 normals; testing each against every box grew with the square of the world, 1.5 s).  The
    rest are tested against every box.  Each test is the same sum, term for term: the same pairs."""
    groups, g_inv = np.unique(normals, axis=0, return_inverse=True)
    g_inv = g_inv.reshape(-1)
    size = np.bincount(g_inv, minlength=len(groups))
    swept = size[g_inv] >= SWEEP_MIN
    parts = [_near_every_box(centre, half, normals, dists, reach, np.flatnonzero(~swept))]
    for g in np.flatnonzero(size >= SWEEP_MIN).tolist():
        parts.append(_near_swept(centre, half, groups[g], normals, dists, reach, np.flatnonzero(g_inv == g)))
    b = np.concatenate([q[0] for q in parts])
    p = np.concatenate([q[1] for q in parts])
    order = np.lexsort((p, b))
    return b[order], p[order]


def _near_every_box(centre, half, normals, dists, reach, planes) -> tuple[np.ndarray, np.ndarray]:
    """_planes_near_boxes for `planes`, each against every box (in chunks of TABLE_CHUNK)."""
    out_b, out_p = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    chunk = max(1, TABLE_CHUNK // max(len(centre), 1))
    for p0 in range(0, len(planes), chunk):
        rows = planes[p0: p0 + chunk]
        n, d = normals[rows], dists[rows]
        off = np.abs(matmul(centre, n.T) - d)  # (B, P)
        b, p = np.nonzero(off <= matmul(half, np.abs(n).T) + reach)
        out_b.append(b)
        out_p.append(rows[p])
    return np.concatenate(out_b), np.concatenate(out_p)


def _near_swept(centre, half, normal, normals, dists, reach, planes) -> tuple[np.ndarray, np.ndarray]:
    """_planes_near_boxes for `planes`, all of the one `normal`: the boxes along it, sorted.  A box
    whose reach along the normal is over SWEEP_WIDE times the median box's (a sky or a slab: it
    would widen every plane's window) is tested against every plane of the group instead, and the
    planes go in runs whose windows hold at most TABLE_CHUNK candidates."""
    at = matmul(centre, normal[:, None])[:, 0]  # each box's centre . n, as the table's column
    limit = matmul(half, np.abs(normal)[:, None])[:, 0] + reach
    narrow = limit <= SWEEP_WIDE * float(np.median(limit)) if len(limit) else np.zeros(0, bool)
    wide = np.flatnonzero(~narrow)  # NaN limits too: the plain test answers for them
    b, p = _near_every_box(centre[wide], half[wide], normals, dists, reach, planes)
    out_b, out_p = [wide[b]], [p]
    order = np.flatnonzero(narrow)
    order = order[np.argsort(at[order], kind="stable")]
    at_sorted = at[order]
    d = dists[planes]
    widest = float(limit[order].max(initial=0.0))
    slack = 1e-9 * (np.abs(d) + widest + 1.0)  # the window only narrows; the test below decides
    lo = np.searchsorted(at_sorted, d - widest - slack, "left")
    hi = np.searchsorted(at_sorted, d + widest + slack, "right")
    count = np.maximum(hi - lo, 0)
    ends = np.cumsum(count)
    k0 = 0
    while k0 < len(planes):  # runs of planes, each at least one, at most TABLE_CHUNK candidates
        k1 = max(k0 + 1, int(np.searchsorted(ends, (ends[k0 - 1] if k0 else 0) + TABLE_CHUNK, "right")))
        c = count[k0:k1]
        p = np.repeat(planes[k0:k1], c)
        start = np.cumsum(c) - c
        b = order[np.repeat(lo[k0:k1] - start, c) + np.arange(int(c.sum()))]
        keep = np.abs(at[b] - dists[p]) <= limit[b]
        out_b.append(b[keep])
        out_p.append(p[keep])
        k0 = k1
    return np.concatenate(out_b), np.concatenate(out_p)


def _group(inverse: np.ndarray) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for row, key in enumerate(inverse.tolist()):
        groups.setdefault(key, []).append(row)
    return groups


def qbsp_sites(brushes, unit: float = QUAKE_UNIT, cancel=None) -> list[SliverSite]:
    """The tip sites qbsp's tree could cut (module docstring), `unit` metres per Quake unit."""
    reach = SLIVER_REACH * unit / QUAKE_UNIT
    sealing = np.array([b.contents == Contents.SOLID for b in brushes], bool)
    sites = [s for s in tip_sites(brushes, reach, tips=sealing) if brushes[s.plane_brush].contents != Contents.CLIP]
    if not sites:
        return []
    size = QBSP_MAX_NODE_SIZE * unit / QUAKE_UNIT
    walls = _axial_faces(brushes)
    out = []
    for s in sites:
        check_cancel(cancel)
        a = brushes[s.plane_brush]
        face = np.asarray(a.faces[s.plane_index], dtype=np.float64)
        v = np.asarray(s.vertex)
        if _structural(a) and len(_clip_to_box(face, v - size, v + size)):
            out.append(dataclasses.replace(s, way="small"))
        elif np.max(np.abs(a.normals[s.plane_index])) == 1.0 or _free_box(v, _face_samples(face), walls, reach):
            out.append(dataclasses.replace(s, way="big"))
    return out


def _structural(brush) -> bool:
    """Does qbsp's qbsp3 heuristic take this brush's sides in its structural passes?  Solid
    brushes, and nonsolid ones (water, hints) that no func_detail* entity holds."""
    if brush.contents == Contents.SOLID:
        return True
    return brush.contents == Contents.NONSOLID and not str(brush.entity).lower().startswith("func_detail")


def _clip_to_box(poly: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The convex polygon clipped to the box (Sutherland-Hodgman, boundary kept); (0, 3) if none."""
    for k in range(3):
        for sign, bound in ((1.0, hi[k]), (-1.0, lo[k])):
            if not len(poly):
                return poly
            d = sign * (poly[:, k] - bound)  # > 0: outside
            if np.all(d <= 0):
                continue
            kept = []
            for i in range(len(poly)):
                j = (i + 1) % len(poly)
                if d[i] <= 0:
                    kept.append(poly[i])
                if (d[i] < 0 < d[j]) or (d[j] < 0 < d[i]):
                    kept.append(poly[i] + (poly[j] - poly[i]) * (d[i] / (d[i] - d[j])))
            poly = np.array(kept).reshape(-1, 3)
    return poly


def _face_samples(face: np.ndarray) -> np.ndarray:
    """Points of a convex face: corners, points along the edges, a grid in each fan triangle."""
    n = len(face)
    nxt = np.roll(face, -1, axis=0)
    t = (np.arange(1, SITE_EDGE_STEPS) / SITE_EDGE_STEPS)[None, :, None]
    along = (face[:, None, :] + t * (nxt - face)[:, None, :]).reshape(-1, 3)
    c = face.mean(axis=0)
    g = np.linspace(0.1, 0.9, SITE_FAN_STEPS)
    u, w = np.meshgrid(g, g, indexing="ij")
    keep = (u + w < 1).reshape(-1)
    u, w = u.reshape(-1)[keep], w.reshape(-1)[keep]
    fan = (c[None, None, :] + u[None, :, None] * (face - c)[:, None, :]
           + w[None, :, None] * (nxt - c)[:, None, :]).reshape(n * len(u), 3)
    return np.concatenate([face, along, fan])


@dataclass
class _Walls:
    """The axial faces of the brushes in qbsp's point hull: each one's brush and plane, axis and
    coordinate, and its brush's bounds (the faces' own polygons are read only for the few near a
    site)."""

    brushes: list
    brush: np.ndarray
    plane: np.ndarray
    axis: np.ndarray
    coord: np.ndarray
    lo: np.ndarray  # (F, 3) bounds of the face's brush
    hi: np.ndarray


def _axial_faces(brushes) -> _Walls:
    normals = [np.asarray(b.normals, dtype=np.float64) for b in brushes]
    n = np.concatenate(normals) if normals else np.zeros((0, 3))
    d = np.concatenate([np.asarray(b.dists, dtype=np.float64) for b in brushes]) if normals else np.zeros(0)
    owner = np.repeat(np.arange(len(brushes)), [len(x) for x in normals])
    plane = np.concatenate([np.arange(len(x)) for x in normals]) if normals else np.zeros(0, np.int64)
    axis = np.argmax(np.abs(n), axis=1)
    keep = (np.abs(n[np.arange(len(n)), axis]) == 1.0)
    keep &= np.array([b.contents != Contents.CLIP for b in brushes], bool)[owner] if len(owner) else keep
    lo = np.array([np.min(np.concatenate(b.faces), axis=0) for b in brushes]).reshape(-1, 3)
    hi = np.array([np.max(np.concatenate(b.faces), axis=0) for b in brushes]).reshape(-1, 3)
    k = np.flatnonzero(keep)
    return _Walls(brushes, owner[k], plane[k], axis[k], d[k] * n[k, axis[k]], lo[owner[k]], hi[owner[k]])


def _free_box(v: np.ndarray, samples: np.ndarray, walls: _Walls, margin: float) -> bool:
    """Is there a sample f whose box with v no axial face crosses (by more than margin on both
    sides of it, its polygon meeting the box's inside)?"""
    lo, hi = np.minimum(v, samples), np.maximum(v, samples)
    blo, bhi = lo.min(axis=0), hi.max(axis=0)
    k = walls.axis
    inside = (walls.coord > blo[k] + margin) & (walls.coord < bhi[k] - margin)
    near = np.flatnonzero(inside & np.all(walls.hi > blo, axis=1) & np.all(walls.lo < bhi, axis=1))
    free = np.ones(len(samples), bool)
    for i in near.tolist():
        k, c = int(walls.axis[i]), float(walls.coord[i])
        cand = free & (lo[:, k] + margin < c) & (c < hi[:, k] - margin)
        if not cand.any():
            continue
        o = [j for j in range(3) if j != k]
        idx = np.flatnonzero(cand)
        poly = np.asarray(walls.brushes[walls.brush[i]].faces[walls.plane[i]], dtype=np.float64)
        crossed = _polygon_meets_rects(poly[:, o], lo[idx][:, o], hi[idx][:, o])
        free[idx[crossed]] = False
        if not free.any():
            return False
    return True


def _polygon_meets_rects(poly: np.ndarray, rlo: np.ndarray, rhi: np.ndarray) -> np.ndarray:
    """(R,) bool: the convex 2-D polygon meets the open rectangle (separating axes: the
    rectangle's two and the polygon's edge normals)."""
    meets = np.all((poly.min(axis=0) < rhi) & (poly.max(axis=0) > rlo), axis=1)
    edges = np.roll(poly, -1, axis=0) - poly
    area = float(np.sum(poly[:, 0] * np.roll(poly[:, 1], -1) - np.roll(poly[:, 0], -1) * poly[:, 1]))
    sign = 1.0 if area > 0 else -1.0
    corners = np.stack([np.column_stack([rlo[:, 0], rlo[:, 1]]), np.column_stack([rhi[:, 0], rlo[:, 1]]),
                        np.column_stack([rlo[:, 0], rhi[:, 1]]), np.column_stack([rhi[:, 0], rhi[:, 1]])], axis=1)
    # cross of each edge with (corner - edge start): <= 0 for every corner means the edge separates
    cross = sign * (edges[None, None, :, 0] * (corners[:, :, None, 1] - poly[None, None, :, 1])
                    - edges[None, None, :, 1] * (corners[:, :, None, 0] - poly[None, None, :, 0]))
    return meets & ~np.any(np.all(cross <= 0, axis=1), axis=1)


def cut_slivers(scene, sites: list[SliverSite]):
    """The scene as a qbsp tree holds it: each tip brush clipped to the far side of every plane it
    reaches across only at a vertex.  Same brushes, same names and order."""
    cuts: dict[int, list[tuple[np.ndarray, float]]] = {}
    for site in sites:
        a = scene.brushes[site.plane_brush]
        sign = 1.0 if site.distance > 0 else -1.0
        cuts.setdefault(site.brush, []).append((sign * np.asarray(a.normals[site.plane_index], dtype=np.float64),
                                                sign * float(a.dists[site.plane_index])))
    brushes = list(scene.brushes)
    for i, planes in sorted(cuts.items()):
        b = brushes[i]
        normals = np.vstack([np.asarray(b.normals, dtype=np.float64)] + [n[None, :] for n, _ in planes])
        dists = np.concatenate([np.asarray(b.dists, dtype=np.float64), [dd for _, dd in planes]])
        try:
            brushes[i] = brush_from_planes(normals, dists, b.name, b.contents, entity=b.entity)
        except BrushbakeError:  # nothing left but the tip: the brush is gone from that side
            brushes[i] = None
    return dataclasses.replace(scene, brushes=[b for b in brushes if b is not None])


def tip_boxes(brushes, sites: list[SliverSite]) -> np.ndarray:
    """(S, 2, 3): the bounds of each site's cut tip (B on V's side of P: V and the points where
    B's edges from V cross P), grown by SLIVER_ON_PLANE."""
    out = np.zeros((len(sites), 2, 3))
    for i, site in enumerate(sites):
        b, a = brushes[site.brush], brushes[site.plane_brush]
        n, d = np.asarray(a.normals[site.plane_index]), float(a.dists[site.plane_index])
        v = np.asarray(site.vertex)
        pts = [v]
        for face in b.faces:
            f = np.asarray(face, dtype=np.float64)
            at = np.flatnonzero(np.all(f == v, axis=1))
            for j in at.tolist():
                for w in (f[j - 1], f[(j + 1) % len(f)]):  # V's two edges in this face
                    sw = float(dot(w, n) - d)
                    pts.append(v + (w - v) * (site.distance / (site.distance - sw)))
        pts = np.array(pts)
        out[i, 0], out[i, 1] = pts.min(axis=0) - SLIVER_ON_PLANE, pts.max(axis=0) + SLIVER_ON_PLANE
    return out


def sites_that_may_open(level, portals, exact, points, sites, boxes) -> bool:
    """Can cutting the sites' tips change a sealed verdict?  The cut map's empty space is the
    exact one plus the cut tips, so a new way from the void to an inside point must pass through
    tips (overlapping ones chained) that touch both a cluster the void reaches and one it does
    not, or free an inside point that lay in a tip.  Tips are grouped by overlapping bounds; the
    clusters a group touches are over-counted (every leaf whose cell may meet a tip's bounds, a
    walk of the point tree), so False is safe: the verdict stays the exact one."""
    n = len(sites)
    group = list(range(n))

    def root(i):
        while group[i] != i:
            group[i] = group[group[i]]
            i = group[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if np.all(boxes[i, 0] <= boxes[j, 1]) and np.all(boxes[j, 0] <= boxes[i, 1]):
                group[root(i)] = root(j)
    touched: dict[int, set] = {}
    for i in range(n):
        if len(points) and np.any(np.all((points >= boxes[i, 0]) & (points <= boxes[i, 1]), axis=1)):
            return True  # an inside point in a tip: it may leave the solid
        cl = portals.cluster_of_leaf[_leaves_in_box(level, boxes[i, 0], boxes[i, 1])]
        touched.setdefault(root(i), set()).update(cl[cl >= 0].tolist())
    outside = exact.outside_clusters
    return any(len({bool(outside[c]) for c in cs}) == 2 for cs in touched.values())


def _leaves_in_box(level, lo, hi) -> np.ndarray:
    """Leaves of the point tree whose cells may meet the box (a box wholly on one side of a
    node's plane goes down that side only)."""
    tree = level.point_tree()
    lists = tree.lists
    centre, half = ((lo + hi) / 2).tolist(), ((hi - lo) / 2).tolist()
    out, stack = [], [tree.root]
    while stack:
        code = stack.pop()
        if code < 0:
            out.append(-1 - code)
            continue
        nx, ny, nz = lists.normals[lists.planes[code]]
        off = nx * centre[0] + ny * centre[1] + nz * centre[2] - lists.dists[lists.planes[code]]
        r = abs(nx) * half[0] + abs(ny) * half[1] + abs(nz) * half[2]
        front, back = lists.children[code]
        if off - r > 0:
            stack.append(front)
        elif off + r < 0:
            stack.append(back)
        else:
            stack += [front, back]
    return np.array(out, np.int64)


def qbsp_leak_report(scene, extra_points=(), progress=None, cancel=None, exact=None):
    """(report, sites): the leak check on the qbsp view of the scene (its point tree compiled
    again with the tips cut, no hulls or bevels: the leak check reads neither), and the sites it
    cut.  No sites: (None, []).  `exact`: (level, portals, report) of the exact check on a sealed
    map; then the map is compiled again only if the tips may open it (sites_that_may_open), and
    (None, sites) says they cannot.  progress(fraction, message) and cancel() as for
    compile_scene."""
    if progress is not None:
        progress(0.0, "Looking for brush tips qbsp's tree could cut")
    sites = qbsp_sites(scene.brushes, scene.settings.map_scale, cancel=cancel)
    if sites and exact is not None:
        points = inside_points(scene, extra_points)[0]
        if not sites_that_may_open(*exact, points, sites, tip_boxes(scene.brushes, sites)):
            if progress is not None:
                progress(1.0, f"{len(sites)} brush tips qbsp's tree could cut; none touches the void and the inside")
            return None, sites
    if not sites:
        if progress is not None:
            progress(1.0, "No brush tip qbsp's tree could cut")
        return None, sites
    if progress is not None:
        progress(0.1, f"Checking the seal with {len(sites)} brush tips cut as qbsp's tree could")
    cut = cut_slivers(scene, sites)
    cut = dataclasses.replace(cut, hulls=[], settings=dataclasses.replace(cut.settings, bevels=False))
    level = compile_scene(cut, cancel=cancel)
    if progress is not None:
        progress(0.6, "Portals with the tips cut")
    portals = build_portals(level, cancel=cancel)
    report = find_leaks(level, portals, *inside_points(cut, extra_points))
    if progress is not None:
        progress(1.0, "Leaks with the tips cut: " + ("found" if report.leaks else "none"))
    report.rule = "qbsp"
    report.sliver_sites = len(sites)
    _hole_at_a_tip(report, level, portals, tip_boxes(scene.brushes, sites))
    return report, sites


def _hole_at_a_tip(report, level, portals, boxes) -> None:
    """A map sealed in exact geometry leaks here only through cut tips, so the first portal of the
    chain whose centre lies in a cut tip's box is the opening: it names the hole (the rule for any
    map, leaks._opening, can name a later portal when the space beyond the tip is closed to the
    world box, as under q1_mountain's terrain)."""
    if not report.leaks or not len(report.chain_portals) or not len(boxes):
        return
    centres = portals.centres()[report.chain_portals]
    inside = np.all((centres[:, None] >= boxes[None, :, 0]) & (centres[:, None] <= boxes[None, :, 1]), axis=2).any(axis=1)
    if inside.any():
        set_hole(report, level, portals, int(report.chain_portals[int(np.argmax(inside))]))
