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
side of P) and the ordinary leak check runs again on the result.  qbsp's tree cuts a subset of
these (it does not choose every plane it could), so a map sealed here is sealed for qbsp; on the
maps in maps/ the verdicts are ericw-tools' (tests/core/test_sliver_seal.py, docs/VISIBILITY.md).
Not modelled: pieces qbsp drops for their volume (microvolume) or tiny cuts (WindingIsTiny), and
tips of B's pieces after earlier splits.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..detmath import dot, matmul
from ..errors import BrushbakeError, check_cancel
from ..model.brushes import Contents, brush_from_planes
from ..tolerances import QBSP_MAX_NODE_SIZE, SLIVER_ON_PLANE, SLIVER_REACH
from ..units import QUAKE_UNIT

#: entries of the vertex-by-plane distance table computed at once (bounds its memory)
TABLE_CHUNK = 1 << 22
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
    the vertices sorted on their axis; slanted ones first against the brushes' bounding boxes,
    then against the vertices of the brushes whose box they pass within reach of."""
    if not brushes:
        return []
    tips = np.ones(len(brushes), bool) if tips is None else np.asarray(tips, bool)
    verts = [np.asarray(b.vertices, dtype=np.float64) for b in brushes]
    counts = np.array([len(v) for v in verts])
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    owner = np.repeat(np.arange(len(brushes)), counts)
    allv = np.concatenate(verts)
    normals = np.concatenate([np.asarray(b.normals, dtype=np.float64) for b in brushes])
    dists = np.concatenate([np.asarray(b.dists, dtype=np.float64) for b in brushes])
    plane_owner = np.repeat(np.arange(len(brushes)), [len(b.dists) for b in brushes])
    plane_first = np.concatenate(([0], np.cumsum([len(b.dists) for b in brushes])[:-1]))
    axis = np.argmax(np.abs(normals), axis=1)
    axial = np.abs(normals[np.arange(len(normals)), axis]) == 1.0
    vrows = np.flatnonzero(tips[owner])
    pairs = _axial_pairs(allv, vrows, normals, dists, axis, axial, reach, on_plane)
    pairs += _slanted_pairs(verts, first, np.flatnonzero(tips), normals, dists, np.flatnonzero(~axial), reach,
                            on_plane)
    found = []
    for vi, pi in sorted(set(pairs)):
        b, a = int(owner[vi]), int(plane_owner[pi])
        if a == b:
            continue
        s = float(dot(allv[vi], normals[pi]) - dists[pi])
        d = matmul(verts[b], normals[pi]) - dists[pi]
        if (d >= -on_plane if s > 0 else d <= on_plane).sum() == 1:  # only V is not behind P
            found.append(SliverSite(b, a, int(pi - plane_first[a]), tuple(allv[vi].tolist()), s))
    found.sort(key=lambda x: (abs(x.distance), x.brush, x.plane_brush, x.plane_index))
    return found


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


def _slanted_pairs(verts, first, tip_brushes, normals, dists, slanted, reach, on_plane) -> list[tuple[int, int]]:
    """(vertex row, plane row) for slanted planes: unique planes against the tip brushes' boxes
    (centre distance within the box's reach along the normal), then against their vertices."""
    if not len(slanted) or not len(tip_brushes):
        return []
    up, p_inv = np.unique(np.column_stack([normals[slanted], dists[slanted]]), axis=0, return_inverse=True)
    p_inv = p_inv.reshape(-1)
    lo = np.array([verts[b].min(axis=0) for b in tip_brushes])
    hi = np.array([verts[b].max(axis=0) for b in tip_brushes])
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    pb = []
    chunk = max(1, TABLE_CHUNK // len(tip_brushes))
    for p0 in range(0, len(up), chunk):
        n, d = up[p0: p0 + chunk, :3], up[p0: p0 + chunk, 3]
        off = np.abs(matmul(centre, n.T) - d)  # (B, P)
        b, p = np.nonzero(off <= matmul(half, np.abs(n).T) + reach)
        pb.append(np.column_stack([p + p0, tip_brushes[b]]))
    pb = np.concatenate(pb)
    if not len(pb):
        return []
    # the tip brushes' vertices padded to a (T, M, 3) block (NaN rows never count as near)
    where = np.full(len(verts), -1)
    where[tip_brushes] = np.arange(len(tip_brushes))
    m = max(len(verts[b]) for b in tip_brushes)
    pad = np.full((len(tip_brushes), m, 3), np.nan)
    for i, b in enumerate(tip_brushes.tolist()):
        pad[i, :len(verts[b])] = verts[b]
    hits = []
    step = max(1, TABLE_CHUNK // (3 * m))
    for q0 in range(0, len(pb), step):
        q = pb[q0: q0 + step]
        with np.errstate(invalid="ignore"):
            a = np.abs(dot(pad[where[q[:, 1]]], up[q[:, 0], None, :3]) - up[q[:, 0], 3][:, None])  # (pairs, M)
            pi, k = np.nonzero((a > on_plane) & (a < reach))
        hits.append(np.column_stack([q[pi, 0], first[q[pi, 1]] + k]))
    hits = np.concatenate(hits)
    prow, vrow = hits[:, 0], hits[:, 1]
    rows = _group(p_inv)
    return [(int(v), int(slanted[r])) for v, p in zip(vrow.tolist(), prow.tolist()) for r in rows[p]]


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
    """Axial faces of the brushes in qbsp's point hull: axis, coordinate, 2-D bounds, polygons."""

    axis: np.ndarray
    coord: np.ndarray
    lo: np.ndarray  # (F, 3) bounds of the face (its own axis too)
    hi: np.ndarray
    polys: list


def _axial_faces(brushes) -> _Walls:
    axis, coord, lo, hi, polys = [], [], [], [], []
    for b in brushes:
        if b.contents == Contents.CLIP:
            continue
        for n, f in zip(b.normals, b.faces):
            k = int(np.argmax(np.abs(n)))
            if abs(n[k]) != 1.0:
                continue
            f = np.asarray(f, dtype=np.float64)
            axis.append(k)
            coord.append(float(f[0, k]))
            lo.append(f.min(axis=0))
            hi.append(f.max(axis=0))
            polys.append(f)
    z = np.zeros((0, 3))
    return _Walls(np.array(axis, np.int64), np.array(coord), np.array(lo) if lo else z, np.array(hi) if hi else z, polys)


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
        crossed = _polygon_meets_rects(walls.polys[i][:, o], lo[idx][:, o], hi[idx][:, o])
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


def qbsp_leak_report(scene, extra_points=(), progress=None, cancel=None):
    """(report, sites): the leak check on the qbsp view of the scene (its point tree compiled
    again with the tips cut, no hulls or bevels: the leak check reads neither), and the sites it
    cut.  No sites: (None, []).  progress(fraction, message) and cancel() as for compile_scene."""
    from .leaks import find_leaks, inside_points
    from .pipeline import compile_scene
    from .portals import build_portals

    if progress is not None:
        progress(0.0, "Looking for brush tips qbsp's tree could cut")
    sites = qbsp_sites(scene.brushes, scene.settings.map_scale, cancel=cancel)
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
    return report, sites
