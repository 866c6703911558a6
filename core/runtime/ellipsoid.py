"""Ellipsoid collision against the polygons of the point tree: the thesis's chapter 6, 'Physics
in BSP-trees' (../shared/seeds/003: CALCULATE-COLLISIONRADIUS, PRE-CHECK-COLLISION, perpendicular
planes, GET-COLLIDING-POLYGON, COLLISION-HANDLING).

The alternative to box hulls (core/move.py): a character is an upright ellipsoid with one radius
in the horizontal plane and one along the vertical.  The thesis has Y up; brushbake has Z up, so
its 'xz' radius is our radius_xy and its 'y' radius is our radius_z.  No configuration space is
compiled: the ellipsoid is tested against the faces (polygons) of the point tree's leaves.

The method, as the thesis gives it:
- calculate_collision_radius(e, n) = |(rxy nx, rxy ny, rz nz)|: how far the ellipsoid reaches
  along the unit direction n (its support distance; exact for an ellipsoid).
- pre_check_collision: the centre crosses the polygon's plane moved out by that radius
  ((StartSide - R) * (EndSide - R) < 0).
- perpendicular planes: one per edge, through the edge, perpendicular to the polygon, facing
  inwards; each moved outwards by the collision radius along its own normal.  Plus one *corner
  plane* per vertex (Figure 26): for a triangle, the perpendicular plane of the opposite edge,
  moved to the vertex, turned round, and moved out by the collision radius.  The centre must be
  on the inner side of all of them.
- get_colliding_polygon: of the polygons that pass both tests, the one with the lowest facing
  value (normal . movement direction), in one pass (the thesis's rewritten O(n) version).
- collision_handling: EndPosition += Normal * (CollRadius - EndSide) for that polygon, then the
  test again from the start; at most `max_iterations` (5, the thesis's value) corrections, after
  which a move still colliding is illegal and the object stays at its start.

What brushbake decides where the thesis leaves a choice open or is unsound (each at its code):
- Polygons: faces of the point tree's leaves whose cells overlap the swept ellipsoid's bounding
  box (the thesis's "leaves the object passes through" misses faces the ellipsoid's side touches
  while the centre's path stays in a neighbouring leaf); the box grows when a correction moves
  the end outside it.  Clip brushes are not in the point tree: ellipsoids pass them.
- The collision test.  Call a polygon's *collision volume* the centres within its collision
  radius in front of its plane (0 <= side < R) and inside all its moved perpendicular and corner
  planes.  The thesis tests one point (its Object.Position) against the perpendicular planes
  after PRE-CHECK-COLLISION; brushbake asks whether the segment start -> end passes through the
  volume (clipped against its planes).  The thesis's test as written (literal=True, with the
  point taken where the centre crosses the moved plane) misses moves that enter the volume
  through a perpendicular or corner plane: such a move crosses the moved polygon plane in a
  corner the corner planes cut off, then goes on into the corner, and nothing tests it again.
  In the sample scenes that happened to 9 of 2,000 random-walk moves on the staircase, 0.1 m
  deep (tests/core/test_ellipsoid.py).  With the volume test, the ellipsoid's first contact with
  any polygon lies on the boundary of that polygon's volume, so no move from a position outside
  every volume sinks in, and every accepted end is again outside every volume: brushbake's
  random walks never sink (checked against the exact ellipsoid-brush distance).
- The correction leaves the centre COLLISION_SKIN beyond the moved plane (R + skin - EndSide),
  so that the next test does not see the same polygon again through rounding.
- Corner planes for polygons with more than three vertices (the thesis's engine used triangles,
  whose "opposite edge" is defined): the plane through the vertex whose normal is the bisector
  of the two adjacent edges' perpendicular-plane normals.  Like the thesis's plane it supports
  the polygon at that vertex, so it never cuts the exact collision area; for an equilateral
  triangle both rules give the same plane.

Where the method is approximate (measured in tests/core/test_ellipsoid.py; all of it errs on the
side of stopping early, never of sinking in):
- The accepted area around a polygon (Figure 26) is the polygon grown by plane shifts, cut at
  each corner by one plane; the exact area (Figure 27) has rounded corners.  For a sphere of
  radius R the accepted area reaches 1.08 R from a square (1.41 R without corner planes), 1.15 R
  from an equilateral triangle, 1.41 R from a right triangle's sharp corners, 1.03 R from a
  hexagon; it is 0.4% to 2.3% larger than the exact area.
- Near an edge the ellipsoid stops where the moved planes meet, not where its round surface
  touches the edge: a 0.25 m riser stops the player ellipsoid (rxy 0.469 m, rz 0.875 m) 0.14 m
  before it would touch the step; a move past a vertical corner stops with up to
  (sqrt 2 - 1) rxy = 0.19 m to spare, and does not slide round the corner.
- Corrections push along one polygon's normal at a time (no crease sliding as in move.py):
  in corners between turned blocks and walls a move can run out of its 5 corrections and stay
  at its start (cornell_box: 73 of 2,000 random-walk moves; other samples: at most 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..detmath import matmul, norm
from ..tolerances import (
    COLLISION_SKIN,
    ELLIPSOID_MIN_EDGE,
    GATHER_MARGIN,
    MIN_EDGE_LENGTH,
)

#: the thesis's MAXITERATIONS
MAX_ITERATIONS = 5


@dataclass(frozen=True)
class Ellipsoid:
    """An upright ellipsoid: radius_xy in the horizontal plane, radius_z along Z (metres)."""

    radius_xy: float
    radius_z: float

    def __post_init__(self):
        if not (self.radius_xy > 0 and self.radius_z > 0 and math.isfinite(self.radius_xy + self.radius_z)):
            raise ValueError("ellipsoid radii must be positive and finite")


def calculate_collision_radius(ellipsoid: Ellipsoid, direction) -> np.ndarray | float:
    """CALCULATE-COLLISIONRADIUS: the ellipsoid's reach along unit direction(s) (3,) or (N, 3)."""
    d = np.asarray(direction, dtype=np.float64)
    a, c = ellipsoid.radius_xy, ellipsoid.radius_z
    if d.ndim == 1:
        return math.sqrt((a * d[0]) ** 2 + (a * d[1]) ** 2 + (c * d[2]) ** 2)
    return np.sqrt((a * d[:, 0]) ** 2 + (a * d[:, 1]) ** 2 + (c * d[:, 2]) ** 2)


def pre_check_collision(start_side, end_side, collision_radius, literal: bool = False):
    """PRE-CHECK-COLLISION on side values (scalars or arrays).

    literal=True is the thesis's test: the centre crosses the polygon plane moved out by the
    collision radius, (StartSide - R) * (EndSide - R) < 0.  The default asks more broadly whether
    any part of the move lies within the radius in front of the plane (0 <= side < R): the
    polygon's *collision volume* in the slab direction (see get_colliding_polygon).
    """
    ss, es = np.asarray(start_side), np.asarray(end_side)
    if literal:
        return (ss - collision_radius) * (es - collision_radius) < 0
    return (np.minimum(ss, es) < collision_radius) & (np.maximum(ss, es) >= 0)


def perpendicular_planes(vertices, normal) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The perpendicular planes of a convex polygon: (normals (K, 3), dists (K,), is_corner (K,)).

    Edge planes first (normal = edge direction x polygon normal, turned to face inwards, through
    the edge), then one corner plane per vertex (Figure 26; see the module docstring for
    polygons with more than three vertices).  Planes are unshifted: GET-COLLIDING-POLYGON moves
    each by the collision radius along its normal.  Edges shorter than MIN_EDGE_LENGTH are skipped.
    """
    v = np.asarray(vertices, dtype=np.float64)
    n = np.asarray(normal, dtype=np.float64)
    centre = v.mean(axis=0)
    edges = []  # (a index, b index, inward unit normal)
    k = len(v)
    for i in range(k):
        a, b = v[i], v[(i + 1) % k]
        e = b - a
        length = float(norm(e))
        if length < MIN_EDGE_LENGTH:
            continue
        u = np.cross(e / length, n)
        u /= float(norm(u))
        if float(matmul(u, centre - a)) < 0:  # the thesis: invert an outward-facing normal
            u = -u
        edges.append((i, (i + 1) % k, u))
    normals = [u for _, _, u in edges]
    dists = [float(matmul(u, v[i])) for i, _, u in edges]
    corner_n, corner_d = [], []
    m = len(edges)
    if m == 3:
        # triangle (after dropping degenerate edges): the opposite edge's plane, moved to the
        # vertex and turned round (the thesis's Figure 26)
        for i, _, _ in edges:
            u = next(u for a_, b_, u in edges if i not in (a_, b_))
            corner_n.append(-u)
            corner_d.append(float(matmul(-u, v[i])))
    elif m > 3:
        for idx in range(m):
            prev_u = edges[idx - 1][2]
            i, _, next_u = edges[idx]
            s = prev_u + next_u
            length = float(norm(s))
            if length < ELLIPSOID_MIN_EDGE:
                continue
            w = s / length
            corner_n.append(w)
            corner_d.append(float(matmul(w, v[i])))
    all_n = np.array(normals + corner_n, dtype=np.float64).reshape(-1, 3)
    all_d = np.array(dists + corner_d, dtype=np.float64)
    is_corner = np.zeros(len(all_d), bool)
    is_corner[len(normals):] = True
    return all_n, all_d, is_corner


@dataclass
class EllipsoidMove:
    position: np.ndarray  # (3,) the corrected end position (the start when fell_back)
    iterations: int  # corrections made
    polygons: list = field(default_factory=list)  # face indices corrected against, in order
    fell_back: bool = False  # still colliding after max_iterations: the object stayed at its start


class EllipsoidWorld:
    """A level's point-tree polygons with their planes and perpendicular planes, and a box walk of
    the point tree that finds the leaves (and so the polygons) near a move.  Build once per level
    (EllipsoidWorld.of(level) keeps it with the level)."""

    def __init__(self, level):
        self.level = level
        tree = level.point_tree()
        lists = tree.lists
        self.tree_normals, self.tree_dists = lists.normals, lists.dists
        self.tree_planes, self.tree_children = lists.planes, lists.children
        self.root = tree.root
        self.leaf_first = level.leaf_face_first.tolist()
        self.leaf_count = level.leaf_face_count.tolist()
        self.leaf_faces = np.asarray(level.leaf_faces, dtype=np.int64)
        nf = len(level.face_plane)
        self.normals = level.plane_normals[level.face_plane].reshape(nf, 3)
        self.dists = level.plane_dists[level.face_plane].reshape(nf)
        pn, pd, pc, first, count = [], [], [], np.zeros(nf, np.int64), np.zeros(nf, np.int64)
        total = 0
        for f in range(nf):
            a, b, c = perpendicular_planes(level.face_vertices(f), self.normals[f])
            pn.append(a)
            pd.append(b)
            pc.append(c)
            first[f], count[f] = total, len(b)
            total += len(b)
        self.perp_normals = np.concatenate(pn) if pn else np.zeros((0, 3))
        self.perp_dists = np.concatenate(pd) if pd else np.zeros(0)
        self.perp_is_corner = np.concatenate(pc) if pc else np.zeros(0, bool)
        self.perp_first, self.perp_count = first, count
        #: polygons with fewer than three usable edges have no area and are never hit
        self.usable = count >= 6

    @classmethod
    def of(cls, level) -> "EllipsoidWorld":
        """The level's world, made once and kept with the level (CompiledLevel.cached)."""
        if isinstance(level, EllipsoidWorld):
            return level
        return level.cached("ellipsoid_world", lambda: cls(level), level.face_plane, level.node_plane)

    def leaves_in_box(self, lo, hi) -> list[int]:
        """Leaves whose cells may overlap the box lo..hi (exact per splitting plane: a box wholly
        on one side of a node's plane goes down that side only)."""
        cx, cy, cz = ((lo[0] + hi[0]) * 0.5, (lo[1] + hi[1]) * 0.5, (lo[2] + hi[2]) * 0.5)
        hx, hy, hz = ((hi[0] - lo[0]) * 0.5, (hi[1] - lo[1]) * 0.5, (hi[2] - lo[2]) * 0.5)
        out: list[int] = []
        stack = [self.root]
        while stack:
            code = stack.pop()
            if code < 0:
                out.append(-1 - code)
                continue
            p = self.tree_planes[code]
            nx, ny, nz = self.tree_normals[p]
            s = nx * cx + ny * cy + nz * cz - self.tree_dists[p]
            r = abs(nx) * hx + abs(ny) * hy + abs(nz) * hz
            front, back = self.tree_children[code]
            if s - r >= 0:
                stack.append(front)
            elif s + r < 0:
                stack.append(back)
            else:
                stack.append(front)
                stack.append(back)
        return out

    def polygons_in_box(self, lo, hi) -> np.ndarray:
        """The usable polygons (face indices) of the leaves overlapping the box, sorted."""
        parts = [self.leaf_faces[self.leaf_first[leaf]: self.leaf_first[leaf] + self.leaf_count[leaf]]
                 for leaf in self.leaves_in_box(lo, hi) if self.leaf_count[leaf]]
        if not parts:
            return np.zeros(0, np.int64)
        faces = np.unique(np.concatenate(parts))
        return faces[self.usable[faces]]


def _swept_box(ellipsoid: Ellipsoid, start, end):
    r = np.array([ellipsoid.radius_xy, ellipsoid.radius_xy, ellipsoid.radius_z]) + GATHER_MARGIN + COLLISION_SKIN
    return np.minimum(start, end) - r, np.maximum(start, end) + r


class PolygonSet:
    """Polygons prepared for one ellipsoid: planes, collision radii, and the moved perpendicular
    planes of every polygon in one array (each polygon's rows contiguous, from `first`)."""

    def __init__(self, world: EllipsoidWorld, polygons, ellipsoid: Ellipsoid):
        faces = np.asarray(polygons, dtype=np.int64)
        self.faces = faces
        self.normals = world.normals[faces]
        self.dists = world.dists[faces]
        self.radius = calculate_collision_radius(ellipsoid, self.normals) if len(faces) else np.zeros(0)
        counts = world.perp_count[faces]
        self.first = np.cumsum(counts) - counts
        rows = np.repeat(world.perp_first[faces], counts) + (np.arange(int(counts.sum())) - np.repeat(self.first, counts))
        self.owner = np.repeat(np.arange(len(faces)), counts)
        self.perp_normals = world.perp_normals[rows]
        self.perp_moved = (world.perp_dists[rows] - calculate_collision_radius(ellipsoid, self.perp_normals)
                           if len(rows) else np.zeros(0))

    def __len__(self) -> int:
        return len(self.faces)


def get_colliding_polygon(world: EllipsoidWorld, polygons, ellipsoid: Ellipsoid, start, end,
                          literal: bool = False) -> int:
    """GET-COLLIDING-POLYGON (the thesis's one-pass version): of the polygons the move collides
    with, the one with the lowest facing value (normal . movement direction); -1 for none.
    polygons: face indices, or a PolygonSet prepared for this ellipsoid.

    A polygon's *collision volume* is the set of centres within its collision radius in front of
    its plane (0 <= side < R) and inside all its perpendicular planes moved out by their own
    collision radii.  By default the move collides with a polygon when the segment start -> end
    passes through that volume for a positive length (clipped against its planes, Cyrus-Beck
    style).  literal=True is the thesis as written: the centre crosses the moved plane
    (PRE-CHECK-COLLISION) at a point inside the moved perpendicular planes; it misses moves that
    enter the volume through a perpendicular plane, which lets the ellipsoid sink in near polygon
    corners (see the module docstring).
    """
    ps = polygons if isinstance(polygons, PolygonSet) else PolygonSet(world, polygons, ellipsoid)
    start = np.asarray(start, dtype=np.float64)
    end = np.asarray(end, dtype=np.float64)
    move = end - start
    length = math.sqrt(float(matmul(move, move)))
    if not len(ps) or length == 0.0:
        return -1
    start_side = matmul(ps.normals, start) - ps.dists
    end_side = matmul(ps.normals, end) - ps.dists
    radius = ps.radius
    pre = pre_check_collision(start_side, end_side, radius, literal)
    if not pre.any():
        return -1
    m, moved = ps.perp_normals, ps.perp_moved
    with np.errstate(divide="ignore", invalid="ignore"):
        if literal:
            # where the centre crosses each moved plane: the thesis's Object.Position for the side test
            t = (start_side - radius) / (start_side - end_side)
            at = start + t[ps.owner, None] * move
            side = np.einsum("ij,ij->i", at, m) - moved
            inside = pre & (np.minimum.reduceat(side, ps.first) >= 0)
        else:
            # clip [0, 1] by the slab 0 <= side <= R and by every moved perpendicular plane
            lo, hi = np.zeros(len(ps)), np.ones(len(ps))
            for a, b in ((start_side, end_side), (radius - start_side, radius - end_side)):
                lo, hi = _clip(lo, hi, a, b)
            lo_q, hi_q = _clip(np.zeros(len(moved)), np.ones(len(moved)), matmul(m, start) - moved, matmul(m, end) - moved)
            lo = np.maximum(lo, np.maximum.reduceat(lo_q, ps.first))
            hi = np.minimum(hi, np.minimum.reduceat(hi_q, ps.first))
            inside = pre & (lo < hi)
    hit = np.flatnonzero(inside)
    if not len(hit):
        return -1
    facing = matmul(ps.normals[hit], move / length)
    return int(ps.faces[hit[int(np.argmin(facing))]])


def _clip(lo: np.ndarray, hi: np.ndarray, a: np.ndarray, b: np.ndarray):
    """Narrow [lo, hi] to where the linear function a + t (b - a) is >= 0."""
    lo, hi = lo.copy(), hi.copy()
    t = a / (a - b)
    entering = (a < 0) & (b >= 0)
    leaving = (a >= 0) & (b < 0)
    never = (a < 0) & (b < 0)
    lo[entering] = np.maximum(lo[entering], t[entering])
    hi[leaving] = np.minimum(hi[leaving], t[leaving])
    hi[never] = -1.0
    return lo, hi


def collision_handling(level, ellipsoid: Ellipsoid, start, end, max_iterations: int = MAX_ITERATIONS,
                       literal: bool = False) -> EllipsoidMove:
    """COLLISION-HANDLING for one ellipsoid moving its centre from start to end (against polygons;
    the thesis's object-object part is not here).  level: a CompiledLevel or an EllipsoidWorld;
    literal: use the thesis's collision test as written (for comparison; see get_colliding_polygon)."""
    world = EllipsoidWorld.of(level)
    start = np.array(start, dtype=np.float64).reshape(3)
    end = np.array(end, dtype=np.float64).reshape(3)
    lo, hi = _swept_box(ellipsoid, start, end)
    polygons = PolygonSet(world, world.polygons_in_box(lo, hi), ellipsoid)
    hits: list[int] = []
    for iteration in range(max_iterations + 1):
        p = get_colliding_polygon(world, polygons, ellipsoid, start, end, literal)
        if p < 0:
            return EllipsoidMove(end, iteration, hits, False)
        if iteration == max_iterations:
            break
        n = world.normals[p]
        radius = calculate_collision_radius(ellipsoid, n)
        end_side = float(matmul(n, end) - world.dists[p])
        end = end + n * (radius + COLLISION_SKIN - end_side)
        hits.append(p)
        lo2, hi2 = _swept_box(ellipsoid, start, end)
        if np.any(lo2 < lo) or np.any(hi2 > hi):
            lo, hi = np.minimum(lo, lo2), np.maximum(hi, hi2)
            polygons = PolygonSet(world, world.polygons_in_box(lo, hi), ellipsoid)
    return EllipsoidMove(start.copy(), max_iterations, hits, True)


def ellipsoid_move(level, ellipsoid: Ellipsoid, position, velocity, dt: float, max_iterations: int = MAX_ITERATIONS,
                   literal: bool = False) -> tuple[np.ndarray, np.ndarray, EllipsoidMove]:
    """A frame of movement: (new position, velocity implied by the corrected move, details).

    The velocity is (end - start) / dt, so sliding along a wall keeps the tangential part."""
    p = np.asarray(position, dtype=np.float64)
    v = np.asarray(velocity, dtype=np.float64)
    result = collision_handling(level, ellipsoid, p, p + v * dt, max_iterations, literal)
    new_v = (result.position - p) / dt if dt > 0 else np.zeros(3)
    return result.position, new_v, result
