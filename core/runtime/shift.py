"""Dynamic plane shifting (Melax, section 3): one solid tree traced by shapes of any size.

A shape moves its *reference point* from v0 to v1 (segment parameter t in [0, 1]).  At a node
with plane n.x = d (front = empty side) the shape can touch the front half-space while
n.x - d >= -h(n) and the back half-space while n.x - d < h(-n), where h is the shape's support
function (h(u) = max over the shape's points p, relative to the reference point, of u.p).  So
HitCheck passes each child the part of the segment inside its half-space *shifted* by the shape:
the back child's plane moves up by h(-n), the front child's down by h(n).  The two parts overlap;
the near child (the side the segment starts on) is visited first, and a hit there shortens the
segment for the far child.  A solid leaf reached by [t0, t1] is a hit at t0, through the plane
that last clipped t0 (oriented to face the start).  Reaching a solid leaf with an unclipped start
means the shape starts inside the grown solid: start_solid, t = 0, zero normal.

The plane table stores each plane beside its flip (p ^ 1), and h(-n_p) = h(n_{p^1}), so one array
off[p] = h(n_p) over the whole table gives both shifts: down = off[p], up = off[p ^ 1].  It is
computed once per shape and plane table (exactly: every shape here has a closed-form support, and a
hull's is a (P, K) matrix product, so Melax's hill climbing or Dobkin-Kirkpatrick hierarchy is not
needed when the table is small compared with the queries).  Offsets up and down differ whenever the
reference point is not the shape's centre (a cylinder standing on its reference point, a hull).

Plane shifting is conservative: the union of the grown solid cells contains the solid grown by the
shape (a cell grown by the shape lies inside the cell with shifted planes), so it never misses a
collision, and reports some early (the 'protrusions' of section 5 that bevels trim: core/bevel.py).

Shapes: Point (a plain ray), Sphere(r), Cylinder(r, h) (upright, reference point at the centre of
its *base*), Box(half extents, centred), ConvexHull(points relative to the reference point).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..detmath import matmul, norm
from ..tolerances import (
    CYLINDER_HORIZONTAL_EPSILON,
    SHIFT_CONTACT_EPSILON,
    SUPPORT_MIN_LENGTH,
)
from .cruntime import c_level, check_backend
from .results import Hit, Hits
from .tree import Tree, as_tree

# --------------------------------------------------------------------------------------------
# Shapes


class Shape:
    """A convex shape around a reference point (metres, Z up)."""

    def support(self, normals: np.ndarray) -> np.ndarray:
        """(P,) h(n) = max over the shape of n.p for unit normals (P, 3)."""
        raise NotImplementedError

    def support_point(self, dirs: np.ndarray) -> np.ndarray:
        """(N, 3) a shape point (relative to the reference point) attaining h in each direction."""
        raise NotImplementedError

    def key(self):
        return (type(self).__name__,) + tuple(np.asarray(self._params(), float).ravel().tolist())

    def _params(self):
        return ()


class Point(Shape):
    """The plain ray: no shift."""

    def support(self, normals):
        return np.zeros(len(normals))

    def support_point(self, dirs):
        return np.zeros((len(dirs), 3))


@dataclass(frozen=True)
class Sphere(Shape):
    radius: float

    def support(self, normals):
        return np.full(len(normals), float(self.radius))

    def support_point(self, dirs):
        d = np.asarray(dirs, float)
        return self.radius * d / np.maximum(norm(d, axis=1, keepdims=True), SUPPORT_MIN_LENGTH)

    def _params(self):
        return (self.radius,)


@dataclass(frozen=True)
class Cylinder(Shape):
    """Upright cylinder of radius r and height h standing on its reference point: the base disc
    is centred on it (z from 0 to h), as for a character whose reference point is its feet."""

    radius: float
    height: float

    def support(self, normals):
        n = np.asarray(normals, float)
        return self.radius * np.hypot(n[:, 0], n[:, 1]) + self.height * np.maximum(n[:, 2], 0.0)

    def support_point(self, dirs):
        d = np.asarray(dirs, float)
        horiz = np.hypot(d[:, 0], d[:, 1])
        out = np.zeros((len(d), 3))
        ok = horiz > CYLINDER_HORIZONTAL_EPSILON
        out[ok, :2] = self.radius * d[ok, :2] / horiz[ok, None]
        out[:, 2] = np.where(d[:, 2] > 0, self.height, np.where(d[:, 2] < 0, 0.0, 0.5 * self.height))
        return out

    def _params(self):
        return (self.radius, self.height)


@dataclass(frozen=True)
class Box(Shape):
    """Axis-aligned box with half extents (hx, hy, hz), centred on the reference point."""

    half: tuple

    def support(self, normals):
        return matmul(np.abs(np.asarray(normals, float)), np.asarray(self.half, float))

    def support_point(self, dirs):
        return np.sign(np.asarray(dirs, float)) * np.asarray(self.half, float)

    def _params(self):
        return tuple(self.half)


class ConvexHull(Shape):
    """The convex hull of points (K, 3) given relative to the reference point (which need not be
    inside).  h(n) is the exact maximum of n.p over the points (a matrix product)."""

    def __init__(self, points):
        self.points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if not len(self.points) or not np.all(np.isfinite(self.points)):
            raise ValueError("a hull needs at least one finite point")

    def support(self, normals):
        return (matmul(np.asarray(normals, float), self.points.T)).max(axis=1)

    def support_point(self, dirs):
        return self.points[np.argmax(matmul(np.asarray(dirs, float), self.points.T), axis=1)]

    def _params(self):
        return self.points


def parse_shape(spec: str) -> Shape:
    """'sphere:R', 'cylinder:R,H', 'box:HX,HY,HZ', 'hull:POINTS.npy' or 'point' (ValueError if bad)."""
    kind, _, rest = spec.partition(":")
    kind = kind.strip().lower()
    if kind in ("point", "ray"):
        return Point()
    if kind == "hull":
        return ConvexHull(np.load(rest, allow_pickle=False))
    try:
        vals = [float(v) for v in rest.split(",")] if rest else []
    except ValueError:
        raise ValueError(f"'{rest}' is not a list of numbers") from None
    need = {"sphere": 1, "cylinder": 2, "box": 3}.get(kind)
    if need is None:
        raise ValueError(f"unknown shape '{kind}' (sphere, cylinder, box, hull or point)")
    if len(vals) != need or not all(math.isfinite(v) and v >= 0 for v in vals):
        raise ValueError(f"{kind} takes {need} non-negative number(s), got '{rest}'")
    if kind == "sphere":
        return Sphere(vals[0])
    if kind == "cylinder":
        return Cylinder(vals[0], vals[1])
    return Box(tuple(vals))


# --------------------------------------------------------------------------------------------
# HitCheck


def _offsets(tree, shape: Shape) -> np.ndarray:
    return np.asarray(shape.support(np.asarray(tree.plane_normals, float)), dtype=np.float64)


class ShiftTree:
    """A tree (the level's beveled tree, or any Tree) for single HitChecks: its cached list form,
    with each shape's plane offsets computed once and kept.  shift_tree(tree) gives the tree's
    own, made once."""

    def __init__(self, tree: Tree):
        self.tree = tree
        lists = tree.lists
        self.normals, self.dists, self.planes, self.children = lists.normals, lists.dists, lists.planes, lists.children
        self.solid = [bits & 1 for bits in lists.solid]
        self.root = tree.root
        self._cache: dict = {}

    def offsets(self, shape: Shape) -> list:
        key = shape.key()
        if key not in self._cache:
            self._cache[key] = _offsets(self.tree, shape).tolist()
        return self._cache[key]

    def hit_check(self, shape: Shape, v0, v1) -> Hit:
        """HitCheckBSP for one swept shape (plain Python, DFS stack, near child first)."""
        off = self.offsets(shape)
        sx, sy, sz = (float(v) for v in v0)
        dx, dy, dz = float(v1[0]) - sx, float(v1[1]) - sy, float(v1[2]) - sz
        eps = SHIFT_CONTACT_EPSILON
        best, best_plane, solid_start = 2.0, -1, False
        visited = 0
        stack = [(self.root, 0.0, 1.0, -1)]
        while stack:
            code, t0, t1, entry = stack.pop()
            if t1 > best:
                t1 = best
            if t0 >= best or t0 > t1:
                continue
            if code < 0:
                if self.solid[-1 - code]:
                    best, best_plane, solid_start = t0, entry, entry < 0
                continue
            visited += 1
            p = self.planes[code]
            nx, ny, nz = self.normals[p]
            ds = nx * sx + ny * sy + nz * sz - self.dists[p]
            dd = nx * dx + ny * dy + nz * dz
            up, down = off[p ^ 1], off[p]
            parts = []
            for side, gs, gd, face in ((0, -down - ds, -dd, p ^ 1), (1, ds - up, dd, p)):
                g0 = gs + gd * t0
                if gd > 0:
                    a, b, ent = t0, min(t1, -gs / gd), entry
                    ok = a < b
                elif gd < 0:
                    tc = -gs / gd
                    a, b = (tc, t1) if tc > t0 else (t0, t1)
                    ent = face if g0 >= -eps else entry
                    ok = a < b or (a == b and t0 == t1)
                else:
                    a, b, ent = t0, t1, entry
                    ok = g0 <= 0 if side == 0 else g0 < 0
                if ok:
                    parts.append((self.children[code][side], a, b, ent))
            if len(parts) == 2 and dd > 0:  # moving toward the front: the back part comes first
                parts.reverse()
            stack.extend(reversed(parts))
        return self._result(shape, (sx, sy, sz), (dx, dy, dz), best, best_plane, solid_start, visited)

    def _result(self, shape, s, delta, best, plane, solid_start, visited) -> Hit:
        s, delta = np.array(s), np.array(delta)
        if best > 1.0:
            return Hit(1.0, s + delta, np.zeros(3), -1, False, False, s + delta, visited)
        point = s + best * delta
        if solid_start or plane < 0:
            return Hit(0.0, s.copy(), np.zeros(3), -1, True, True, s.copy(), visited)
        normal = np.array(self.normals[plane])
        impact = point + shape.support_point(-normal[None])[0]
        return Hit(best, point, normal, plane, False, True, impact, visited)


def shift_tree(tree) -> ShiftTree:
    """The tree's ShiftTree, made once and kept with the tree."""
    tree = as_tree(tree)
    if "shift" not in tree.cache:
        tree.cache["shift"] = ShiftTree(tree)
    return tree.cache["shift"]


def hit_check(tree, shape: Shape, v0, v1) -> Hit:
    """One HitCheck through the tree (a level: its point tree; pass level.bevel_tree() for bevels)."""
    return shift_tree(tree).hit_check(shape, v0, v1)


def hit_checks(tree, shape: Shape, starts, ends, offsets: np.ndarray | None = None, backend: str = "numpy") -> Hits:
    """HitCheck for many swept shapes at once, in NumPy.

    Every segment walks the tree in lock step with its own stack of (node, t0, t1, entry plane),
    as trace.find_first_transitions does; one iteration pops one entry per live segment, clips it
    to the segment's best hit so far, and pushes the far child's shifted part, then the near
    child's (popped first).  Returns Hits (core/runtime/results.py) with impact points and the
    nodes each segment visited.

    backend "c": the C run-time (core/runtime/cruntime.py) sweeps the shape through the level's
    beveled tree (its point tree when it has none): `tree` is then the level itself.  Points,
    spheres, cylinders, boxes and convex hulls; the same answers.
    """
    if backend != "numpy":
        check_backend(backend)
        if isinstance(tree, Tree) or offsets is not None:
            raise ValueError("the C backend sweeps through a level's beveled tree: pass the level, no offsets")
        return c_level(tree).shift(shape, starts, ends)
    s = np.asarray(starts, dtype=np.float64).reshape(-1, 3)
    e = np.asarray(ends, dtype=np.float64).reshape(-1, 3)
    n = len(s)
    off = _offsets(tree, shape) if offsets is None else offsets
    normals, dists = np.asarray(tree.plane_normals), np.asarray(tree.plane_dists)
    planes = np.asarray(tree.node_plane, dtype=np.int64)
    children = np.asarray(tree.node_children, dtype=np.int64).reshape(-1, 2)
    solid_of_leaf = (np.asarray(tree.leaf_solid) & 1) != 0
    best = np.full(n, 2.0)
    best_plane = np.full(n, -1, dtype=np.int64)
    visited = np.zeros(n, dtype=np.int64)
    eps = SHIFT_CONTACT_EPSILON
    depth = tree.depth() + 3
    st_code = np.empty((n, depth), dtype=np.int64)
    st_t0, st_t1 = np.empty((n, depth)), np.empty((n, depth))
    st_ent = np.empty((n, depth), dtype=np.int64)
    st_code[:, 0], st_t0[:, 0], st_t1[:, 0], st_ent[:, 0] = tree.root, 0.0, 1.0, -1
    sp = np.ones(n, dtype=np.int64)
    delta = e - s
    live = np.arange(n)
    while len(live):
        top = sp[live] - 1
        sp[live] = top
        code = st_code[live, top]
        t0 = st_t0[live, top]
        t1 = np.minimum(st_t1[live, top], best[live])
        ent = st_ent[live, top]
        keep = (t0 < best[live]) & (t0 <= t1)
        leaf = keep & (code < 0)
        if leaf.any():
            hit = leaf.copy()
            hit[leaf] = solid_of_leaf[-1 - code[leaf]]
            r = live[hit]
            best[r] = t0[hit]
            best_plane[r] = ent[hit]
        node = keep & (code >= 0)
        if node.any():
            rays, nodes, a0, a1, en = live[node], code[node], t0[node], t1[node], ent[node]
            visited[rays] += 1
            p = planes[nodes]
            nrm = normals[p]
            ds = np.einsum("ij,ij->i", s[rays], nrm) - dists[p]
            dd = np.einsum("ij,ij->i", delta[rays], nrm)
            part = []
            for side, gs, gd, face in ((0, -off[p] - ds, -dd, p ^ 1), (1, ds - off[p ^ 1], dd, p)):
                g0 = gs + gd * a0
                with np.errstate(divide="ignore", invalid="ignore"):
                    tc = -gs / np.where(gd == 0, 1.0, gd)
                pos, neg = gd > 0, gd < 0
                lo = np.where(neg & (tc > a0), tc, a0)
                hi = np.where(pos, np.minimum(a1, tc), a1)
                ok = np.where(pos, lo < hi, np.where(neg, (lo < hi) | ((lo == hi) & (a0 == a1)),
                                                     (g0 <= 0) if side == 0 else (g0 < 0)))
                en2 = np.where(neg & (g0 >= -eps), face, en)
                part.append((children[nodes, side], lo, hi, en2, ok))
            back_first = dd > 0
            for which in (0, 1):  # push the far part, then the near part
                far_side = np.where(back_first, 0, 1) if which == 0 else np.where(back_first, 1, 0)
                for side in (0, 1):
                    m = (far_side == side) & part[side][4]
                    if m.any():
                        r = rays[m]
                        k = sp[r]
                        st_code[r, k] = part[side][0][m]
                        st_t0[r, k] = part[side][1][m]
                        st_t1[r, k] = part[side][2][m]
                        st_ent[r, k] = part[side][3][m]
                        sp[r] = k + 1
        live = live[sp[live] > 0]
    hit = best <= 1.0
    start_solid = hit & (best_plane < 0)
    t = np.where(hit, np.where(start_solid, 0.0, best), 1.0)
    point = np.where(hit[:, None], s + t[:, None] * delta, e)
    normal = np.zeros((n, 3))
    ok = hit & ~start_solid
    normal[ok] = normals[best_plane[ok]]
    impact = point.copy()
    if ok.any():
        impact[ok] += shape.support_point(-normal[ok])
    return Hits(t, point, normal, np.where(ok, best_plane, -1), start_solid, hit, impact, visited)


def shift_hits(tree, shape: Shape, starts, ends, impact: bool = False, backend: str = "numpy") -> np.ndarray:
    """hit_checks packed as the command line writes it: (N, 7) [fraction, point xyz, normal xyz],
    or (N, 10) with the impact point on the shape appended when `impact` is True.  backend "c":
    `tree` is the level (see hit_checks)."""
    return hit_checks(tree, shape, starts, ends, backend=backend).packed(impact)
