"""Bevel planes of one solid cell: the rules of core/compile/trees/bevel.py (Melax sections 5 and 8),
phase by phase (axial planes or the flat top, edges, vertices), for one cell at a time.

cell_bevels() gives one cell's bevels from its faces; bevel.py runs the same phases for all solid
cells at once (the cells' planes, distances, axial bevels, sharp edges and corner reaches as
arrays) and calls the per-cell steps here only where a cell's own earlier bevels change an answer,
so the two give the same planes bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...detmath import arctan2, matmul, norm
from ...geometry import snap_normals
from ...model.setting_specs import invalid, setting_view
from ...tolerances import (AXIAL_SNAP_EPSILON, BEVEL_COSINE_SLACK, BEVEL_MIN_DIRECTION, BEVEL_ON_EPSILON,
                          CORNER_DETERMINANT, CORNER_FEASIBLE_SLACK, FLAT_TOP_LEVEL_Z, MIN_EDGE_LENGTH,
                          NORMAL_EPSILON, ON_EPSILON)
from .cells import unique_points

#: An edge gap wider than the bevel angle is cut into at most this many equal parts (only angles
#: below 180 / MAX_EDGE_PARTS degrees are limited by it).
MAX_EDGE_PARTS = 8


@dataclass
@setting_view(angle="bevel_angle")
class BevelSettings:
    """What bevels to add (angles in degrees).  `angle` is the bake setting bevel_angle (edge
    bevels where adjacent planes at a cell's edge differ by more than it; its default and range
    are core/model/setting_specs.py's); the rest are not user settings.  Checked when made."""

    vertices: bool = True
    vertex_angle: float = 60.0  #: vertex bevel where the grown corner reaches over 1/cos(this) times the shift
    axial: bool = True
    flat_top: bool = True

    def __post_init__(self):
        if isinstance(self.vertex_angle, bool) or not (isinstance(self.vertex_angle, (int, float))
                                                       and 0.0 <= self.vertex_angle < 90.0):
            raise invalid("vertex_angle", f"is {self.vertex_angle!r}; it must be from 0 to under 90 (degrees: a "
                          "corner reaching over 1/cos(it) times the shift gets a vertex bevel).", "BevelSettings")
        for name in ("vertices", "axial", "flat_top"):
            if not isinstance(getattr(self, name), bool):
                raise invalid(name, f"is {getattr(self, name)!r}; it must be true or false.", "BevelSettings")

    @classmethod
    def off(cls) -> "BevelSettings":
        return cls(angle=180.0, vertices=False, axial=False, flat_top=False)



# --------------------------------------------------------------------------------------------
# Bevel planes of one cell


class _CellPlanes:
    """One solid cell and the planes plane shifting clips it with, as the bevel phases add to them.

    verts: the cell's vertices (one per MIN_EDGE_LENGTH grid cell); fn, fd: each face's plane
    (zeros for box faces), real: not a box face; on_box: vertices on the world box.  pn, pd (the
    first `count` rows): the planes at the cell in the order they count, real faces, then the
    ancestors that touch the cell (an edge or a vertex, without being a face), then the bevels as
    they are chosen; dist: (V, count) each vertex's distance to each of them, computed once per
    plane (detmath products, so each entry has the bits of a product of that vertex and plane).
    """

    def __init__(self, faces, normals: np.ndarray, dists: np.ndarray, chain, seams=()):
        tags = [t for t, _ in faces]
        tag_arr = np.array(tags)
        self.real = tag_arr >= 0
        self.fn, self.fd = np.zeros((len(tags), 3)), np.zeros(len(tags))
        self.fn[self.real], self.fd[self.real] = normals[tag_arr[self.real]], dists[tag_arr[self.real]]
        self.verts = unique_points(np.concatenate([v for _, v in faces]))
        box = [v for t, v in faces if t < 0]
        self.on_box = np.zeros(len(self.verts), bool)
        if box:
            box_lo, box_hi = np.min(np.concatenate(box), axis=0), np.max(np.concatenate(box), axis=0)
            self.on_box = (np.any(np.abs(self.verts - box_lo) <= ON_EPSILON, axis=1)
                           | np.any(np.abs(self.verts - box_hi) <= ON_EPSILON, axis=1))
        real_tags = [t for t in tags if t >= 0]
        self.n_real = len(real_tags)
        extra = sorted(({int(p) for p in chain} | {int(p) for p in seams}) - set(real_tags))
        pn = np.concatenate([normals[real_tags].reshape(-1, 3), normals[extra].reshape(-1, 3)])
        pd = np.concatenate([dists[real_tags], dists[extra]]).astype(np.float64)
        dist = matmul(self.verts, pn.T) - pd
        keep = np.ones(len(pd), bool)
        keep[self.n_real:] = np.any(np.abs(dist[:, self.n_real:]) <= BEVEL_ON_EPSILON, axis=0)  # touching ancestors
        cap = int(keep.sum()) + 16
        self.pn, self.pd = np.zeros((cap, 3)), np.zeros(cap)
        self.dist = np.zeros((len(self.verts), cap))
        self.count = int(keep.sum())
        self.pn[: self.count], self.pd[: self.count], self.dist[:, : self.count] = pn[keep], pd[keep], dist[:, keep]
        self.out: dict = {"seam": [(normals[t], float(dists[t])) for t in seams],
                          "edge": [], "vertex": [], "axial": [], "flat_top": []}
        self.edges = None  # the sharp edges when found for many cells at once (_all_sharp_edges)
        self.vertex_todo = None  # the vertex phase's candidates when found for many cells at once

    def on(self) -> np.ndarray:
        """(V, real faces) bool: the vertex lies on the face's plane."""
        return np.abs(self.dist[:, : self.n_real]) <= BEVEL_ON_EPSILON

    def through(self, rows) -> np.ndarray:
        """(P,) bool: the planes (faces, touching ancestors, bevels) through all these vertices."""
        return np.all(np.abs(self.dist[rows, : self.count]) <= BEVEL_ON_EPSILON, axis=0)

    def add(self, kind: str, n: np.ndarray, d: float, proj: np.ndarray | None = None) -> bool:
        """Choose the bevel (n, d) unless the cell has it already (a plane equal within tolerance,
        or a face with its normal); True when chosen.  proj: matmul(verts, n) when known."""
        same = np.all(np.abs(self.pn[: self.count] - n) < NORMAL_EPSILON, axis=1)
        if same[: self.n_real].any() or (same & (np.abs(self.pd[: self.count] - d) < ON_EPSILON)).any():
            return False
        self.push(kind, n, d, (matmul(self.verts, n) if proj is None else proj) - d)
        return True

    def push(self, kind: str, n: np.ndarray, d: float, dist: np.ndarray) -> None:
        """Choose the bevel (n, d) whose vertex distances are `dist`, without looking for it."""
        if self.count == len(self.pd):
            grow = len(self.pd)
            self.pn = np.concatenate([self.pn, np.zeros((grow, 3))])
            self.pd = np.concatenate([self.pd, np.zeros(grow)])
            self.dist = np.concatenate([self.dist, np.zeros((len(self.verts), grow))], axis=1)
        self.pn[self.count], self.pd[self.count] = n, d
        self.dist[:, self.count] = dist
        self.count += 1
        self.out[kind].append((n, d))


#: the six axial directions in the order the axial phase tries them (+x, -x, +y, -y, +z, -z)
_AXES = np.array([[1.0, 0, 0], [-1.0, 0, 0], [0, 1.0, 0], [0, -1.0, 0], [0, 0, 1.0], [0, 0, -1.0]])


def _axial_bevels(cell: _CellPlanes, settings: BevelSettings) -> None:
    """The six axis-aligned planes through the cell's extremes (or only the flat top, section 8,
    when axial planes are off and no face tops the cell), except where the cell reaches the
    world box that way or has the plane already.  All six are looked for at once: two axial
    planes are never the same plane, so choosing one never hides another."""
    topped = bool(np.any(cell.real & (cell.fn[:, 2] >= FLAT_TOP_LEVEL_Z)))
    proj = matmul(cell.verts, _AXES.T)
    d = proj.max(axis=0)
    boxed = np.any(cell.on_box[:, None] & (proj >= d - ON_EPSILON), axis=0)  # reaches the world box that way
    same = np.all(np.abs(cell.pn[: cell.count, None, :] - _AXES[None]) < NORMAL_EPSILON, axis=2)
    had = same[: cell.n_real].any(axis=0) | (same & (np.abs(cell.pd[: cell.count, None] - d) < ON_EPSILON)).any(axis=0)
    for j in np.flatnonzero(~boxed & ~had).tolist():
        if settings.axial:
            kind = "axial"
        elif j == 4 and not topped:
            kind = "flat_top"
        else:
            continue
        cell.push(kind, _AXES[j].copy(), float(d[j]), proj[:, j] - d[j])


def _sharp_edges(cell: _CellPlanes, cos_edge: float):
    """(face a, face b, vertex mask) for each edge of the cell (two real faces sharing vertices a
    real distance apart) whose faces differ by more than the bevel angle, in face-pair order."""
    on = cell.on()
    share = matmul(on.T.astype(np.int32), on.astype(np.int32))
    fr = cell.pn[: cell.n_real]
    cosines = matmul(fr, fr.T)
    ri = np.flatnonzero(cell.real)
    for a, b in zip(*np.nonzero(np.triu(share >= 2, 1) & (cosines < cos_edge - BEVEL_COSINE_SLACK))):
        mask = on[:, a] & on[:, b]
        if np.ptp(cell.verts[mask], axis=0).max() >= MIN_EDGE_LENGTH:
            yield ri[a], ri[b], mask


def _edge_frame(fn: list, fa: int, fb: int):
    """(u, w, span) of the edge between faces fa and fb (normals fn, Python floats): u the first
    face's normal, w the unit direction in the edge's normal plane towards the second, span the
    angle from u to it; None for a zero-thickness sliver (opposite faces)."""
    u, b = fn[fa], fn[fb]
    bu = b[0] * u[0] + b[1] * u[1] + b[2] * u[2]
    w = [b[0] - bu * u[0], b[1] - bu * u[1], b[2] - bu * u[2]]
    length = math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    if length < BEVEL_MIN_DIRECTION:
        return None
    w = [w[0] / length, w[1] / length, w[2] / length]
    return u, w, math.atan2(b[0] * w[0] + b[1] * w[1] + b[2] * w[2], bu)


def _edge_angles(cell: _CellPlanes, mask, u, w, span) -> list[float]:
    """The sorted distinct angles (from u towards w, clipped to [0, span]) of the planes through
    the edge's vertices (faces, touching ancestors, bevels so far), with 0 and span."""
    at = cell.pn[: cell.count][cell.through(mask)]
    angles = np.clip(arctan2(matmul(at, np.array(w)), matmul(at, np.array(u))), 0.0, span)
    return np.unique(np.concatenate([[0.0, span], angles])).tolist()


def _cut_gaps(cell: _CellPlanes, angles: list[float], u, w, limit: float, cos_edge: float) -> None:
    """Cut each gap between adjacent angles wider than the bevel angle into equal parts: a bevel
    plane through the edge at each inner angle (normals snapped and normalised as
    geometry.snap_normals and detmath.norm do, here on Python floats: the same IEEE operations)."""
    for lo_, hi_ in zip(angles[:-1], angles[1:]):
        gap = hi_ - lo_
        if math.cos(gap) >= cos_edge - BEVEL_COSINE_SLACK:
            continue  # adjacent planes within the angle
        parts = min(MAX_EDGE_PARTS, max(2, math.ceil(gap / max(limit, BEVEL_COSINE_SLACK) - BEVEL_COSINE_SLACK)))
        for k in range(1, parts):
            phi = lo_ + gap * k / parts
            c, s_ = math.cos(phi), math.sin(phi)
            m = _snap([c * u[0] + s_ * w[0], c * u[1] + s_ * w[1], c * u[2] + s_ * w[2]])
            length = math.sqrt(m[0] * m[0] + m[1] * m[1] + m[2] * m[2])
            m = np.array([m[0] / length, m[1] / length, m[2] / length])
            v = cell.verts
            proj = v[:, 0] * m[0] + v[:, 1] * m[1] + v[:, 2] * m[2]  # matmul(v, m), in its order
            cell.add("edge", m, float(proj.max()), proj)


def _snap(n: list) -> list:
    """geometry.snap_normals of one normal, on Python floats."""
    mag = [abs(n[0]), abs(n[1]), abs(n[2])]
    axis = 0 if mag[0] >= mag[1] and mag[0] >= mag[2] else (1 if mag[1] >= mag[2] else 2)  # the first largest
    if max(mag[(axis + 1) % 3], mag[(axis + 2) % 3]) < AXIAL_SNAP_EPSILON:
        out = [0.0, 0.0, 0.0]
        out[axis] = 1.0 if n[axis] > 0 else (-1.0 if n[axis] < 0 else 0.0)
        return out
    return n


def _edge_bevels(cell: _CellPlanes, settings: BevelSettings) -> None:
    """Around each sharp edge, planes through it (faces, touching ancestors, bevels so far) sorted
    by angle; each gap between adjacent ones wider than the angle is cut into equal parts.  The
    3-vectors are Python floats (the same IEEE operations, in the order detmath sums them)."""
    limit = math.radians(settings.angle)
    cos_edge = math.cos(limit)
    fn = cell.fn.tolist()
    edges = cell.edges if cell.edges is not None else _sharp_edges(cell, cos_edge)
    for fa, fb, mask in edges:
        frame = _edge_frame(fn, fa, fb)
        if frame is not None:
            u, w, span = frame
            _cut_gaps(cell, _edge_angles(cell, mask, u, w, span), u, w, limit, cos_edge)


def _vertex_candidates(cell: _CellPlanes) -> tuple[list[int], np.ndarray]:
    """The vertices the vertex phase looks at (off the world box, on three real faces or more)
    and, for each, which of the cell's planes pass through it: (vertices, (V', P) bool)."""
    if cell.vertex_todo is None:
        todo = np.flatnonzero(~cell.on_box & (cell.on().sum(axis=1) >= 3)).tolist()
    else:
        todo = cell.vertex_todo
    return todo, np.abs(cell.dist[todo, : cell.count]) <= BEVEL_ON_EPSILON


def _vertex_bevels(cell: _CellPlanes, settings: BevelSettings, reach=None, candidates=None) -> None:
    """At each vertex (off the world box, on three faces or more) whose corner, grown by a unit
    shift of every plane through it, reaches beyond 1 / cos(vertex_angle): a plane through it
    with the mean of its faces' normals.  `reach`: each candidate's corner_reach, computed for
    many cells at once by the caller (else here); a later vertex that a chosen vertex bevel
    passes through is computed again with it.  `candidates`: _vertex_candidates(cell) when known."""
    reach_limit = 1.0 / math.cos(math.radians(settings.vertex_angle))
    todo, through = _vertex_candidates(cell) if candidates is None else candidates
    if not todo:
        return
    if reach is None:
        reach = corner_reaches([cell.pn[: cell.count][row] for row in through])
    on = ri = None
    first = cell.count
    for v, r in zip(todo, reach):
        if cell.count > first and (np.abs(cell.dist[v, first: cell.count]) <= BEVEL_ON_EPSILON).any():
            r = corner_reach(cell.pn[: cell.count][cell.through([v])])  # a vertex bevel passes here too
        if r <= reach_limit:
            continue
        if on is None:
            on, ri = cell.on(), np.flatnonzero(cell.real)
        m = cell.fn[ri[np.flatnonzero(on[v])]].sum(axis=0)
        length = float(norm(m))
        if length < BEVEL_MIN_DIRECTION:
            continue
        m = snap_normals((m / length)[None])[0]
        cell.add("vertex", m, float(matmul(cell.verts[v], m)))


def _cell_phases(faces, normals: np.ndarray, dists: np.ndarray, settings: BevelSettings, chain,
                 seams=()) -> _CellPlanes:
    """A solid cell after the axial (or flat-top) and edge phases; the vertex phase is left to
    the caller, which may batch it over many cells."""
    cell = _CellPlanes(faces, normals, dists, chain, seams)
    if settings.axial or settings.flat_top:
        _axial_bevels(cell, settings)
    _edge_bevels(cell, settings)
    return cell


def cell_bevels(faces, normals: np.ndarray, dists: np.ndarray, settings: BevelSettings, chain=(),
                seams=()) -> dict:
    """Bevel planes of one solid cell: {'seam'|'edge'|'vertex'|'axial'|'flat_top': [(normal, dist),
    ...]}, each an outward plane touching the cell with the whole cell behind it.

    `seams` (plane indices, outward) are the planes the cell borrows from the solid cells across
    its splits (core/compile/trees/bevel_seams.py): made first, and counted like ancestors.

    `chain` (plane indices, outward) are the leaf's ancestors' planes.  Plane shifting clips with
    every one of them, so those that touch the cell count like faces: a bevel equal to one of them
    is not made, and they count among the planes at an edge or a vertex.  Three phases, each
    seeing the planes chosen before it: axial planes (or the flat top), edges, vertices:

    - an edge gets bevels only where two *adjacent* planes through it (faces, touching ancestors,
      bevels already chosen, sorted by angle around the edge) differ by more than the angle, the
      criterion of Melax's section 8 ('at most a 95-degree difference in adjacent planes'); each
      such gap is cut into equal parts of at most the angle (at most MAX_EDGE_PARTS), so an axial
      bevel that already splits a sharp edge into square ones makes the halfway bevel unneeded;
    - a vertex gets a bevel when the corner of the planes through it (faces, touching ancestors,
      bevels) reaches too far.
    """
    cell = _cell_phases(faces, normals, dists, settings, chain, seams)
    if settings.vertices:
        _vertex_bevels(cell, settings)
    return cell.out


def corner_reach(normals: np.ndarray) -> float:
    """How far a corner where planes with these outward normals meet reaches when every plane is
    shifted out by 1 (a unit sphere's plane shifting): the largest |x| over the vertices of
    {x : n_i.x <= 1}.  A cube corner reaches sqrt(3); a needle reaches far."""
    return corner_reaches([normals])[0]


#: corner_reaches solves at most this many 3x3 systems at once (memory: 72 bytes each, twice)
REACH_CHUNK = 1 << 16


def corner_reaches(groups) -> list[float]:
    """corner_reach of each (k_i, 3) array of normals, in batches: every triple of each group is
    one 3x3 system (LAPACK solves each matrix of a stack alone, so a value never depends on the
    rest of the batch, and each is the value corner_reach would give alone)."""
    groups = [np.asarray(g, float).reshape(-1, 3) for g in groups]
    flat = np.concatenate(groups) if groups else np.zeros((0, 3))
    return corner_reaches_flat(flat, np.array([len(g) for g in groups], np.int64))


def corner_reaches_flat(flat: np.ndarray, sizes: np.ndarray) -> list[float]:
    """corner_reaches of the groups flat[:sizes[0]], flat[sizes[0]:sizes[0] + sizes[1]], ..."""
    out: list[float] = []
    systems = sizes * (sizes - 1) * (sizes - 2) // 6
    starts = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    systems_l, n = systems.tolist(), len(sizes)
    start = 0
    while start < n:
        end, total = start, 0
        while end < n and (end == start or total + systems_l[end] <= REACH_CHUNK):
            total += systems_l[end]
            end += 1
        out += _reaches(flat[starts[start]: starts[end]], sizes[start:end])
        start = end
    return out


def _triples(k: int) -> np.ndarray:
    t = _TRIPLES.get(k)
    if t is None:
        t = _TRIPLES[k] = np.array([(a, b, c) for a in range(k) for b in range(a + 1, k) for c in range(b + 1, k)],
                                   dtype=np.int64).reshape(-1, 3)
    return t


def _reaches(flat: np.ndarray, sizes: np.ndarray) -> list[float]:
    """corner_reaches of one batch.  Layout: padded (G, W, 3) the groups' normals padded with zero
    rows to the widest (a zero row never makes a vertex infeasible); mats (T, 3, 3) every group's
    triples, grouped by size; owner (T,) the group of each."""
    out = [1.0] * len(sizes)
    width = int(sizes.max()) if len(sizes) else 0
    if width < 3:
        return out
    padded = np.zeros((len(sizes), width, 3))
    group = np.repeat(np.arange(len(sizes)), sizes)
    padded[group, np.arange(len(flat)) - np.repeat(np.cumsum(sizes) - sizes, sizes)] = flat
    mats, owners = [], []
    for k in np.unique(sizes[sizes >= 3]).tolist():
        g = np.flatnonzero(sizes == k)
        t = _triples(k)
        mats.append(padded[g[:, None, None], t[None]].reshape(-1, 3, 3))
        owners.append(np.repeat(g, len(t)))
    mats, owner = np.concatenate(mats), np.concatenate(owners)
    ok = np.abs(np.linalg.det(mats)) > CORNER_DETERMINANT
    if not ok.any():
        return out
    x = np.linalg.solve(mats[ok], np.ones((int(ok.sum()), 3, 1)))[..., 0]
    owner = owner[ok]
    n = padded[owner]
    feasible = np.all(x[:, None, 0] * n[:, :, 0] + x[:, None, 1] * n[:, :, 1] + x[:, None, 2] * n[:, :, 2]
                      <= 1 + CORNER_FEASIBLE_SLACK, axis=1)
    best = np.full(len(sizes), -np.inf)
    np.maximum.at(best, owner[feasible], norm(x[feasible], axis=1))
    return [b if b != -np.inf else 1.0 for b in best.tolist()]


_TRIPLES: dict = {}
