"""Independent ground truth for box hulls: the onion BSP, the expansion and the swept traces.

Nothing here calls core/expand.py, core/onion.py, core/trace.py or core/query.py.  Two routes
to 'does the box p + [mins, maxs] overlap brush B', each from first principles:

1. the separating axis theorem (SatBrush): two convex polytopes (here a box and a brush) have
   disjoint interiors iff some axis separates their projections, and it suffices to try the
   brush's face normals, the box's three axes and the cross product of every brush edge
   direction with every box axis.  Along an axis u the box projects to
   [u.p + lo_u, u.p + hi_u] (lo_u, hi_u: the box's support of -u and u) and the brush to
   [bmin_u, bmax_u]; the separating gap is max(bmin_u - u.p - hi_u, u.p + lo_u - bmax_u) and the
   box overlaps the brush iff the largest gap over all axes is negative.  Each gap is linear in
   p, so a brush becomes a list of 2A half-spaces per hull (some redundant, none missing);
2. the Minkowski sum B - H as the convex hull (scipy.spatial.ConvexHull, Qhull) of
   {brush vertex - box corner} (MinkowskiHull), used for the swept traces: a trace of the
   reference point against it is a slab (Cyrus-Beck) clip of the segment by its facet planes.

Semantics: the interior matters.  A box touching a brush (gap exactly 0) is not blocked, as a
point on a surface is empty for the point hull.  Claims are only made away from a tolerance band
(see the constants) because the compiler merges planes closer than 1e-5 m and a seam between two
touching brushes is inside their union though inside neither.

Helpers for tests/core/test_expand.py, test_onion.py and test_traces.py; the compiled scenes are
cached per process (one compile per scene per test session).
"""

from __future__ import annotations

import glob
import itertools
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from brushbake.core.model.brushes import Contents

REPO = Path(__file__).resolve().parents[2]
MAPS_DIR = REPO / "maps"
SAMPLES_DIR = REPO / "sample_scenes"

#: m. Points whose largest separating gap against some brush is within BAND of 0 are not judged.
BAND = 1e-4
#: m. A start within START_BAND of a brush's surface (inside or outside) is not judged, except
#: a start exactly on one axis-aligned face (exact in floating point) of exactly one brush.
START_BAND = 1e-5
#: m. Hit distances (fraction * segment length) must agree within T_TOL.
T_TOL = 1e-6
#: m. A hit whose entry point moves by more than this when the brushes grow / shrink by BAND is
#: near-parallel incidence and not judged (1 cm per 0.1 mm: incidence below about 0.6 degrees).
WIDE = 1e-2

#: the per-map hull choice: the Quake III boxes (the sample scenes define them too), except the
#: two ericw-tools maps made to test Quake 1's hulls, which get those.
Q3_HULLS = ("stand", "crouch")
Q1_HULLS = ("q1_player", "q1_large")
#: maps in the onion checks (compile 0.1 .. 5.4 s CPU each with two hulls on this machine).  Left
#: out for the suite's time budget (CPU seconds to compile with two hulls): light_general 3.3 and
#: e1m7 8.0 (their checks would add about a minute), lq_e0m3 23.5, q1_mountain 25.9, e3m4 more.
ONION_MAPS = ("q1_cube.map", "q1_hulls.map", "q1_rocks.map", "qbspfeatures.map", "lq_e1m6.map", "slope.map",
              "lqdm13.map")


def seed_of(*parts) -> int:
    return zlib.crc32("/".join(str(p) for p in parts).encode())


def sample_paths() -> list[Path]:
    return sorted(Path(p) for p in glob.glob(str(SAMPLES_DIR / "*.json"))) + sorted(
        Path(p) for p in glob.glob(str(SAMPLES_DIR / "*.map")))


def onion_map_paths() -> list[Path]:
    found = {Path(p).name: Path(p) for p in glob.glob(str(MAPS_DIR / "**" / "*.map"), recursive=True)}
    return [found.get(name, MAPS_DIR / name) for name in ONION_MAPS]


def scene_paths() -> list[Path]:
    return sample_paths() + onion_map_paths()


# --------------------------------------------------------------------------------------------
# Compiled scenes (once per process)


@dataclass
class OnionScene:
    path: Path
    scene: object
    level: object
    map_trees: list | None  # Tree per hull (0 = point), built on demand (map_trees_of)
    hulls: list  # [Hull] box hulls, index h - 1 for level hull h
    sat: dict = field(default_factory=dict)  # hull index -> SatScene
    mink: dict = field(default_factory=dict)  # hull index -> MinkowskiScene


def hulls_for(path: Path):
    from brushbake.core.model.hulls import preset

    names = Q1_HULLS if path.name.startswith("q1_") and path.name in ("q1_hulls.map", "q1_cube.map") else Q3_HULLS
    return [preset(n) for n in names]


@lru_cache(maxsize=None)
def load_compiled(path_str: str) -> OnionScene:
    """Load and compile a scene once per process (the production compile: default settings)."""
    from brushbake.core.compile.pipeline import compile_scene
    from brushbake.core.formats.loaders import load_scene

    path = Path(path_str)
    if not path.exists():
        raise FileNotFoundError(f"scene {path} not found (expected sample_scenes/ and maps/)")
    scene = load_scene(path)
    if not scene.hulls:
        scene.hulls = hulls_for(path)
    level = compile_scene(scene)
    return OnionScene(path, scene, level, None, list(scene.hulls))


def build_map_trees(scene) -> list:
    """The separate map trees of the onion article (one solid BSP per configuration space, hull 0
    the point hull), rebuilt with compile_scene's splitter settings and world box; the
    production compile does not keep them (Listing 3 asks the spaces' brushes instead)."""
    from brushbake.core.compile.trees.bsp import world_box
    from brushbake.core.compile.pipeline import splitter_settings
    from brushbake.core.compile.trees.csg import FaceList
    from brushbake.core.compile.trees.expand import expand_brush
    from brushbake.core.geometry import PlaneTable
    from brushbake.core.compile.trees.onion import build_map_tree, colliding_brushes, space_faces

    margin = 1.0 + max(float(np.abs(np.array([h.mins, h.maxs])).max()) for h in scene.hulls)
    bounds = world_box(scene.bounds if scene.brushes else None, margin)
    planes, faces, ranges = PlaneTable(), FaceList(), []
    for h in range(len(scene.hulls) + 1):
        base = colliding_brushes(scene.brushes, h)
        space = base if h == 0 else [expand_brush(b, scene.hulls[h - 1]) for b in base]
        start = len(faces)
        space_faces(space, planes, faces, h)
        ranges.append((start, len(faces)))
    settings = splitter_settings(scene)
    return [build_map_tree(faces, np.arange(a, b), planes, settings, bounds) for a, b in ranges]


def map_trees_of(os_: OnionScene) -> list:
    if os_.map_trees is None:
        os_.map_trees = build_map_trees(os_.scene)
    return os_.map_trees


def colliding(brushes, hull_index: int):
    """Brushes that block a hull: solid and detail always, clip for box hulls only."""
    wanted = {Contents.SOLID, Contents.DETAIL} | ({Contents.CLIP} if hull_index > 0 else set())
    return [b for b in brushes if b.contents in wanted]


def hull_box(os_: OnionScene, h: int):
    if h == 0:
        return np.zeros(3), np.zeros(3)
    hull = os_.hulls[h - 1]
    return np.asarray(hull.mins, float), np.asarray(hull.maxs, float)


def sat_scene(os_: OnionScene, h: int) -> "SatScene":
    if h not in os_.sat:
        mins, maxs = hull_box(os_, h)
        os_.sat[h] = SatScene([SatBrush.of(b) for b in colliding(os_.scene.brushes, h)], mins, maxs)
    return os_.sat[h]


def mink_scene(os_: OnionScene, h: int) -> "MinkowskiScene":
    if h not in os_.mink:
        mins, maxs = hull_box(os_, h)
        os_.mink[h] = MinkowskiScene([MinkowskiHull.of(b, mins, maxs) for b in colliding(os_.scene.brushes, h)])
    return os_.mink[h]


# --------------------------------------------------------------------------------------------
# Route 1: separating axes


def brush_vertices(brush) -> np.ndarray:
    return np.unique(np.concatenate([np.asarray(f, float) for f in brush.faces]), axis=0)


def _unique_axes(u: np.ndarray) -> np.ndarray:
    """Unit vectors, one per direction up to sign."""
    u = u / np.linalg.norm(u, axis=1)[:, None]
    big = np.argmax(np.abs(u), axis=1)
    u = u * np.where(u[np.arange(len(u)), big] < 0, -1.0, 1.0)[:, None]
    _, first = np.unique(np.round(u * 1e9), axis=0, return_index=True)
    return u[np.sort(first)]


@dataclass
class SatBrush:
    axes: np.ndarray  # (A, 3) unit
    bmin: np.ndarray  # (A,) brush projection
    bmax: np.ndarray
    lo: np.ndarray  # (3,) brush bounds
    hi: np.ndarray

    @staticmethod
    def of(brush) -> "SatBrush":
        return SatBrush.from_faces([np.asarray(f, float) for f in brush.faces])

    @staticmethod
    def from_faces(faces) -> "SatBrush":
        verts = np.unique(np.concatenate(faces), axis=0)
        normals, edges = [], []
        for f in faces:
            # the face normal from the polygon itself (Newell), not from the brush's plane list
            nxt = np.roll(f, -1, axis=0)
            n = np.array([np.sum((f[:, 1] - nxt[:, 1]) * (f[:, 2] + nxt[:, 2])),
                          np.sum((f[:, 2] - nxt[:, 2]) * (f[:, 0] + nxt[:, 0])),
                          np.sum((f[:, 0] - nxt[:, 0]) * (f[:, 1] + nxt[:, 1]))])
            normals.append(n)
            e = nxt - f
            edges.append(e[np.linalg.norm(e, axis=1) > 1e-12])
        edges = _unique_axes(np.concatenate(edges))
        eye = np.eye(3)
        cross = np.cross(edges[:, None, :], eye[None, :, :]).reshape(-1, 3)
        cross = cross[np.linalg.norm(cross, axis=1) > 1e-9]
        axes = _unique_axes(np.concatenate([np.array(normals), eye, cross]))
        proj = verts @ axes.T
        return SatBrush(axes, proj.min(axis=0), proj.max(axis=0), verts.min(axis=0), verts.max(axis=0))

    def planes(self, mins, maxs) -> tuple[np.ndarray, np.ndarray]:
        """Half-spaces (n, d) with gap(p) = max(n.p - d): the separating gaps along every axis."""
        u = self.axes
        lo_u = np.minimum(u * mins, u * maxs).sum(axis=1)  # min over the box of u.h
        hi_u = np.maximum(u * mins, u * maxs).sum(axis=1)
        # box below the brush: bmin - (u.p + hi_u) > 0;  box above it: u.p + lo_u - bmax > 0
        return np.vstack([-u, u]), np.concatenate([hi_u - self.bmin, self.bmax - lo_u])

    def gap(self, points, mins, maxs) -> np.ndarray:
        """(N,) the largest separating gap (< 0: the box p + [mins, maxs] overlaps the brush)."""
        n, d = self.planes(np.asarray(mins, float), np.asarray(maxs, float))
        return (np.asarray(points, float).reshape(-1, 3) @ n.T - d).max(axis=1)


class SatScene:
    """All colliding brushes of a scene for one box, as separating-axis half-spaces."""

    def __init__(self, brushes: list[SatBrush], mins, maxs):
        self.mins, self.maxs = np.asarray(mins, float), np.asarray(maxs, float)
        planes = [b.planes(self.mins, self.maxs) for b in brushes]
        self.normals = [p[0] for p in planes]
        self.dists = [p[1] for p in planes]
        # where the reference point can be for the box to touch the brush
        self.lo = np.array([b.lo - self.maxs for b in brushes]).reshape(-1, 3)
        self.hi = np.array([b.hi - self.mins for b in brushes]).reshape(-1, 3)

    def __len__(self):
        return len(self.normals)

    def min_gap(self, points) -> np.ndarray:
        """(N,) min over brushes of the largest separating gap (+inf far from every brush).
        < 0: the box at the point overlaps some brush."""
        pts = np.asarray(points, float).reshape(-1, 3)
        out = np.full(len(pts), np.inf)
        if not len(pts):
            return out
        order = np.argsort(pts[:, 0], kind="stable")
        xs = pts[order, 0]
        m = 2 * BAND
        for k in range(len(self)):
            a = np.searchsorted(xs, self.lo[k, 0] - m, "left")
            b = np.searchsorted(xs, self.hi[k, 0] + m, "right")
            if a >= b:
                continue
            idx = order[a:b]
            p = pts[idx]
            sel = np.all(p[:, 1:] >= self.lo[k, 1:] - m, axis=1) & np.all(p[:, 1:] <= self.hi[k, 1:] + m, axis=1)
            idx, p = idx[sel], p[sel]
            if len(idx):
                g = (p @ self.normals[k].T - self.dists[k]).max(axis=1)
                out[idx] = np.minimum(out[idx], g)
        # far from every brush's box the gap is positive; its size beyond 2 BAND does not matter
        return out

    def classify(self, points, band: float = BAND) -> tuple[np.ndarray, np.ndarray]:
        """(solid, judged): solid = the box overlaps some brush by more than `band`; judged =
        solid, or no brush within `band` (the overlap test is unambiguous there)."""
        g = self.min_gap(points)
        solid = g < -band
        return solid, solid | (g > band)


# --------------------------------------------------------------------------------------------
# Route 2: the Minkowski sum as a convex hull


def box_corners(mins, maxs) -> np.ndarray:
    return np.array(list(itertools.product(*zip(mins, maxs))), dtype=float)


@dataclass
class MinkowskiHull:
    normals: np.ndarray  # (K, 3) unit, outward
    dists: np.ndarray  # (K,) support of the point set along each normal
    axial: np.ndarray  # (K,) bool: the normal is exactly a coordinate axis
    points: np.ndarray  # (V, 3) hull vertices
    tris: np.ndarray  # (T, 3, 3) the hull's triangles
    tri_plane: np.ndarray  # (T,) plane index of each triangle
    edges: np.ndarray  # (E, 2, 3) edges between facets of different planes
    lo: np.ndarray
    hi: np.ndarray

    @staticmethod
    def of(brush, mins, maxs) -> "MinkowskiHull":
        return MinkowskiHull.from_vertices(brush_vertices(brush), mins, maxs)

    @staticmethod
    def from_vertices(verts, mins, maxs) -> "MinkowskiHull":
        from scipy.spatial import ConvexHull

        pts = (np.asarray(verts, float)[:, None, :] - box_corners(mins, maxs)[None]).reshape(-1, 3)
        pts = np.unique(pts, axis=0)
        hull = ConvexHull(pts)
        n = hull.equations[:, :3] / np.linalg.norm(hull.equations[:, :3], axis=1)[:, None]
        # axis-aligned facets exactly axial, so a point with that coordinate is exactly on them
        big = np.argmax(np.abs(n), axis=1)
        axial = np.abs(n[np.arange(len(n)), big]) > 1 - 1e-12
        snapped = np.zeros_like(n)
        snapped[np.arange(len(n)), big] = np.sign(n[np.arange(len(n)), big])
        n = np.where(axial[:, None], snapped, n)
        d = (pts @ n.T).max(axis=0)  # the support: exact for axial normals and exact vertices
        key = np.round(np.concatenate([n * 1e9, d[:, None] * 1e7], axis=1))
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        # edges between two triangles of different planes
        edges = []
        for i, simplex in enumerate(hull.simplices):
            for k in range(3):
                j = hull.neighbors[i, k]
                if j > i and inverse[i] != inverse[j]:
                    edges.append(pts[np.delete(simplex, k)])
        return MinkowskiHull(n[first], d[first], axial[first], pts[hull.vertices], pts[hull.simplices], inverse,
                             np.array(edges).reshape(-1, 2, 3), pts.min(axis=0), pts.max(axis=0))

    def max_dist(self, points) -> np.ndarray:
        return (np.asarray(points, float).reshape(-1, 3) @ self.normals.T - self.dists).max(axis=1)


class MinkowskiScene:
    def __init__(self, hulls: list[MinkowskiHull]):
        self.hulls = hulls

    def __len__(self):
        return len(self.hulls)

    def max_dists(self, points) -> np.ndarray:
        """(N,) min over brushes of max_k n_k.p - d_k (< 0: strictly inside the union)."""
        pts = np.asarray(points, float).reshape(-1, 3)
        out = np.full(len(pts), np.inf)
        for mk in self.hulls:
            sel = np.flatnonzero(np.all(pts >= mk.lo - 1.0, axis=1) & np.all(pts <= mk.hi + 1.0, axis=1))
            if len(sel):
                out[sel] = np.minimum(out[sel], mk.max_dist(pts[sel]))
        return out

    # ---- segment samples ---------------------------------------------------------------------
    def face_points(self, count: int, rng, facets: str = "all"):
        """Random points on hull facets (area-weighted; exactly on axial facets, whose vertices
        share the coordinate) with the facet's outward normal, its axial flag and the brush
        index.  facets: 'all', 'axial' or 'slanted' (the others)."""
        tris, nrm, ax, dist, owner = [], [], [], [], []
        for k, mk in enumerate(self.hulls):
            axial = mk.axial[mk.tri_plane]
            keep = {"all": np.ones(len(mk.tris), bool), "axial": axial, "slanted": ~axial}[facets]
            tris.append(mk.tris[keep])
            nrm.append(mk.normals[mk.tri_plane[keep]])
            ax.append(mk.axial[mk.tri_plane[keep]])
            dist.append(mk.dists[mk.tri_plane[keep]])
            owner.append(np.full(int(keep.sum()), k))
        tris, nrm, ax, dist, owner = (np.concatenate(x) for x in (tris, nrm, ax, dist, owner))
        if not len(tris):
            return np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, bool), np.zeros(0, np.int64)
        area = 0.5 * np.linalg.norm(np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]), axis=1)
        pick = rng.choice(len(tris), size=count, p=area / area.sum())
        u, v = rng.random(count), rng.random(count)
        flip = u + v > 1
        u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
        t = tris[pick]
        pts = t[:, 0] + u[:, None] * (t[:, 1] - t[:, 0]) + v[:, None] * (t[:, 2] - t[:, 0])
        n = nrm[pick]
        axis = np.argmax(np.abs(n), axis=1)
        a = ax[pick]
        pts[np.flatnonzero(a), axis[a]] = dist[pick][a] * n[np.flatnonzero(a), axis[a]]
        return pts, n, a, owner[pick]

    def corner_points(self, count: int, rng):
        """Random hull vertices and points on hull edges (between facets of different planes)."""
        verts = np.concatenate([mk.points for mk in self.hulls])
        edges = np.concatenate([mk.edges for mk in self.hulls])
        half = count // 2
        v = verts[rng.integers(0, len(verts), half)]
        e = edges[rng.integers(0, len(edges), count - half)]
        w = rng.random(count - half)[:, None]
        return np.concatenate([v, e[:, 0] + w * (e[:, 1] - e[:, 0])])


# --------------------------------------------------------------------------------------------
# Brute-force swept traces (slab clipping against every Minkowski hull)


def _clip(s0: np.ndarray, dd: np.ndarray):
    """Rows of plane distances at t = 0 and their rates: (enter, leave, hit, t_lo) for the open
    polytope {all distances < 0} on t in [0, 1]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = -s0 / dd
    t_lo = np.where(dd < 0, t, -np.inf).max(axis=1)
    t_hi = np.where(dd > 0, t, np.inf).min(axis=1)
    never = np.any((dd == 0) & (s0 >= 0), axis=1)
    enter = np.maximum(t_lo, 0.0)
    leave = np.minimum(t_hi, 1.0)
    return enter, leave, ~never & (enter < leave), t_lo


@dataclass
class Forward:
    """Brute force for segments s -> e, the start taken as is."""

    t: np.ndarray  # first entry into some hull's interior (inf: none); 0 when the start is inside
    start_solid: np.ndarray  # the start is inside some hull by more than START_BAND
    ambiguous: np.ndarray  # no claim (see forward())
    length: np.ndarray
    tied: list  # per segment: indices of the hulls entered at the first hit (within T_TOL)


def forward(ms: MinkowskiScene, s, e, band: float = BAND, start_band: float = START_BAND, t_tol: float = T_TOL,
            want_normals: bool = True) -> Forward:
    """First entry of each segment into the union of the Minkowski hulls, and where no claim is made:

    - start band: the start lies within START_BAND of some hull's surface (|max_k n_k.s - d_k| <=
      START_BAND) and inside none by more -- unless it lies exactly (== 0 in floating point) on
      axis-aligned facets of exactly one hull and farther than START_BAND from every other hull;
    - grazing: a hull is entered when every hull is grown by BAND and missed when shrunk by BAND
      (axial facets the start lies exactly on, s0 == 0, are not moved: the compiled plane is
      exact too -- unless the segment lies in a plane that is one hull's top and another's
      underside, facing both ways, where a slit of zero height is no claim), no later than the
      first hit (this covers chords shorter than T_TOL: edges, corners, segment ends just past a
      surface);
    - near-parallel: the first entry moves by more than WIDE between the grown and shrunk hulls;
    - zero-length segments.
    """
    s = np.asarray(s, float).reshape(-1, 3)
    e = np.asarray(e, float).reshape(-1, 3)
    n = len(s)
    delta = e - s
    length = np.linalg.norm(delta, axis=1)
    seg_lo, seg_hi = np.minimum(s, e), np.maximum(s, e)
    t_exact = np.full(n, np.inf)
    t_grow = np.full(n, np.inf)
    t_shrink = np.full(n, np.inf)
    depth = np.full(n, np.inf)  # min over hulls of max distance at the start
    near = np.zeros(n, np.int64)  # hulls with the start within start_band
    near_exact = np.zeros(n, bool)
    per = []
    margin = 2 * band
    # segments lying exactly in an axial facet plane, by the facet's outward direction (+x..+z, -x..-z)
    lying = np.zeros((n, 6), bool)
    for k, mk in enumerate(ms.hulls):
        sel = np.flatnonzero(np.all(seg_lo <= mk.hi + margin, axis=1) & np.all(seg_hi >= mk.lo - margin, axis=1))
        if not len(sel):
            continue
        s0 = s[sel] @ mk.normals.T - mk.dists
        dd = delta[sel] @ mk.normals.T
        m0 = s0.max(axis=1)
        depth[sel] = np.minimum(depth[sel], m0)
        close = np.abs(m0) <= start_band
        near[sel[close]] += 1
        exact = (m0 == 0) & np.all((s0 != 0) | mk.axial[None, :], axis=1)
        near_exact[sel[close & exact]] = True
        in_plane = (s0 == 0) & (dd == 0) & mk.axial[None, :]
        if in_plane.any():
            r, c = np.nonzero(in_plane)
            nrm = mk.normals[c]
            axis = np.argmax(np.abs(nrm), axis=1)
            lying[sel[r], axis + 3 * (nrm[np.arange(len(c)), axis] < 0)] = True
        enter, leave, hit, _ = _clip(s0, dd)
        np.minimum.at(t_exact, sel[hit], enter[hit])
        per.append((k, sel, s0, dd, enter, hit))
    # in a plane that faces both ways (one solid's top, another's underside): no exact claim
    opposed = np.any(lying[:, :3] & lying[:, 3:], axis=1)
    for i, (k, sel, s0, dd, enter, hit) in enumerate(per):
        fixed = (s0 == 0) & ms.hulls[k].axial[None, :] & ~opposed[sel, None]  # exactly on an exact facet
        enter_g, _, hit_g, _ = _clip(s0 - np.where(fixed, 0.0, band), dd)
        enter_s, _, hit_s, _ = _clip(s0 + np.where(fixed, 0.0, band), dd)
        np.minimum.at(t_grow, sel[hit_g], enter_g[hit_g])
        np.minimum.at(t_shrink, sel[hit_s], enter_s[hit_s])
        per[i] = (k, sel, s0, dd, enter, hit, enter_g, hit_g, hit_s)
    start_solid = depth < -start_band
    on_exact = (near == 1) & near_exact
    ambiguous = ~start_solid & (near > 0) & ~on_exact
    first = np.where(np.isfinite(t_exact), t_exact, 1.0)
    tied = [[] for _ in range(n)] if want_normals else None
    for k, sel, s0, dd, enter, hit, enter_g, hit_g, hit_s in per:
        unsure = (hit_g != hit_s) & (enter_g <= first[sel] + 1e-12)
        ambiguous[sel[unsure]] = True
        if want_normals:
            L = length[sel]
            rows = np.flatnonzero(hit & (np.abs(enter - t_exact[sel]) * L <= t_tol))
            for r in rows:
                tied[sel[r]].append(k)
    with np.errstate(invalid="ignore"):
        moved = (np.where(np.isfinite(t_shrink), t_shrink, 1.0) - np.where(np.isfinite(t_grow), t_grow, 1.0)) * length
    ambiguous |= np.isfinite(t_grow) & (moved > WIDE) & ~start_solid
    ambiguous |= length == 0
    return Forward(t_exact, start_solid, ambiguous, length, tied)


@dataclass
class Expected:
    """What trace_hulls must answer, per segment."""

    kind: np.ndarray  # 0 miss, 1 hit at t (fraction t), 2 start solid, 3 retry hit (fraction 0)
    t: np.ndarray  # hit fraction for kinds 1 and 3
    ambiguous: np.ndarray
    length: np.ndarray
    tied: list  # for kinds 1 and 3: the hulls entered at the (backed-off) entry point
    entry: np.ndarray  # (N, 3) that entry point

    MISS, HIT, SOLID, RETRY = 0, 1, 2, 3


def expected_traces(ms: MinkowskiScene, s, e, backoff: float) -> Expected:
    """The brute-force answer of trace_hulls, including its documented robustness retry: a start
    inside solid is retried from s' = s - backoff * (e - s) / |e - s|; if s' is empty and the
    segment s' -> e enters solid within `backoff` of s', the trace hits at fraction 0 with that
    entry's plane; otherwise the start is solid."""
    s = np.asarray(s, float).reshape(-1, 3)
    e = np.asarray(e, float).reshape(-1, 3)
    fw = forward(ms, s, e)
    n = len(s)
    kind = np.where(np.isfinite(fw.t), Expected.HIT, Expected.MISS)
    t = np.where(np.isfinite(fw.t), fw.t, 1.0)
    ambiguous = fw.ambiguous.copy()
    tied = fw.tied
    solid = np.flatnonzero(fw.start_solid & (fw.length > 0))
    kind[fw.start_solid] = Expected.SOLID
    t[fw.start_solid] = 0.0
    ambiguous[fw.start_solid] = False
    entry = s + t[:, None] * (e - s)
    if len(solid):
        d = (e[solid] - s[solid]) / fw.length[solid, None]
        back = s[solid] - backoff * d
        bw = forward(ms, back, e[solid])
        total = bw.length
        clear = ~bw.start_solid & ~bw.ambiguous
        touching = clear & np.isfinite(bw.t) & (bw.t * total <= backoff - T_TOL)
        tie = clear & np.isfinite(bw.t) & (np.abs(bw.t * total - backoff) <= T_TOL)
        ambiguous[solid[bw.ambiguous | tie]] = True
        kind[solid[touching]] = Expected.RETRY
        for i, j in zip(solid[touching], np.flatnonzero(touching)):
            tied[i] = bw.tied[j]
            entry[i] = back[j] + bw.t[j] * (e[i] - back[j])
    return Expected(kind, t, ambiguous, fw.length, tied, entry)


#: m. A hit normal n is right when the plane through the entry point with normal n supports one
#: of the entered hulls (no hull vertex in front of it by more than this) and faces the start.
#: At a facet's interior that is the facet's normal; at an edge or corner any normal of the
#: cone between the facets meeting there (a splitter through the edge may be the plane crossed).
SUPPORT_TOL = 1e-6


def check_traces(ms: MinkowskiScene, out: np.ndarray, start_solid: np.ndarray, s, e, ex: Expected,
                 t_tol: float = T_TOL, strict_normal=None) -> list[str]:
    """Compare trace_hulls' answer with the expected one on the judged segments.

    The hit normal must face the start; where strict_normal (default: everywhere) it must also
    be a supporting plane of an entered hull at the entry point (SUPPORT_TOL).  Segments made to
    pass exactly through a hull's vertex or edge are not strict: there the splitter crossed last
    may be any plane through that point (another brush's face plane passing through the corner)."""
    s = np.asarray(s, float).reshape(-1, 3)
    e = np.asarray(e, float).reshape(-1, 3)
    frac, point, normal = out[:, 0], out[:, 1:4], out[:, 4:7]
    ok = ~ex.ambiguous
    problems = []

    def report(mask, what, limit=6):
        idx = np.flatnonzero(mask & ok)
        if len(idx):
            problems.append(f"{len(idx)} of {int(ok.sum())} judged segments: {what}, e.g.")
            for i in idx[:limit]:
                problems.append(f"  {s[i].tolist()} -> {e[i].tolist()}: expected kind {int(ex.kind[i])} "
                                f"t={ex.t[i]!r}; got fraction {frac[i]!r} normal {normal[i].tolist()} "
                                f"start_solid {bool(start_solid[i])}")

    miss = ex.kind == Expected.MISS
    report(miss & ((frac != 1.0) | start_solid | np.any(normal != 0, axis=1) | np.any(point != e, axis=1)),
           "expected no hit (fraction 1, point = end, zero normal)")
    hit = ex.kind == Expected.HIT
    report(hit & start_solid, "expected a hit, got start_solid")
    report(hit & ~start_solid & (np.abs(frac - ex.t) * ex.length > t_tol),
           f"hit distance differs by more than {t_tol} m")
    sol = ex.kind == Expected.SOLID
    report(sol & (~start_solid | (frac != 0) | np.any(normal != 0, axis=1) | np.any(point != s, axis=1)),
           "expected start_solid (fraction 0, point = start, zero normal)")
    retry = ex.kind == Expected.RETRY
    report(retry & (start_solid | (frac != 0) | np.any(point != s, axis=1)),
           "expected the retry's hit at fraction 0 (start on a surface, rounding put it inside)")
    judged_hits = np.flatnonzero(ok & (hit | retry) & ~start_solid)
    bad_normal = np.zeros(len(s), bool)
    for i in judged_hits:
        nv = normal[i]
        faces_start = nv @ (e[i] - s[i]) < 0 and abs(np.linalg.norm(nv) - 1) < 1e-9
        strict = strict_normal is None or strict_normal[i]
        supports = not strict or any((ms.hulls[k].points @ nv - nv @ ex.entry[i]).max() <= SUPPORT_TOL
                                     for k in ex.tied[i])
        bad_normal[i] = not (faces_start and supports)
    report(bad_normal, "the normal does not face the start or is not a supporting plane of the entered hull")
    return problems


def check_no_pass_through(sat: SatScene, out, start_solid, s, e, rng, per_segment: int = 4) -> list[str]:
    """Every traced segment, judged or not: points sampled before the reported stop (and the
    last 1e-4 m before it) must be empty by the separating-axis test, allowing BAND; a reported
    hit's stop point must touch a brush (|gap| <= BAND)."""
    s = np.asarray(s, float).reshape(-1, 3)
    e = np.asarray(e, float).reshape(-1, 3)
    free = np.flatnonzero(~start_solid & (out[:, 0] > 0))
    frac = out[free, 0]
    L = np.linalg.norm(e[free] - s[free], axis=1)
    u = rng.random((len(free), per_segment)) * frac[:, None]
    u[:, 0] = np.maximum(frac - 1e-4 / np.maximum(L, 1e-12), 0.0)
    pts = s[free, None, :] + u[..., None] * (e[free] - s[free])[:, None, :]
    g = sat.min_gap(pts.reshape(-1, 3)).reshape(len(free), per_segment)
    problems = []
    bad = np.flatnonzero(np.any(g < -BAND, axis=1))
    if len(bad):
        problems.append(f"{len(bad)} traces pass through solid before their reported stop, e.g.")
        for i in bad[:6]:
            j = free[i]
            problems.append(f"  {s[j].tolist()} -> {e[j].tolist()} fraction {out[j, 0]!r}: box overlap "
                            f"{-g[i].min():.3g} m at fraction {u[i, np.argmin(g[i])]!r}")
    hits = np.flatnonzero(~start_solid & (out[:, 0] > 0) & (out[:, 0] < 1))
    gs = sat.min_gap(out[hits, 1:4])
    far = np.flatnonzero(np.abs(gs) > BAND)
    if len(far):
        problems.append(f"{len(far)} hits stop where the box touches nothing, e.g.")
        for i in far[:6]:
            j = hits[i]
            problems.append(f"  {s[j].tolist()} -> {e[j].tolist()} fraction {out[j, 0]!r}: gap {gs[i]!r}")
    return problems
