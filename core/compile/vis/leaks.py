"""Leaks: can the void outside the world reach something that must be inside?

The flood starts at the void portals (core/compile/vis/portals.py: portals to the outside of the world
box) and crosses every portal; the clusters it reaches are `outside_clusters`.  Every point that
must be inside (player starts, lights, markers, points the user names) is located in the point
tree: one in an outside cluster means the map leaks.  The report then gives, for the leaking point
nearest the void, the shortest chain from it through portal centres to the void (Dijkstra over
the portals, by distance), the portal where the chain leaves the map (the hole) and the structural
brush whose faces lie nearest that portal.

Where the chain leaves the map (the opening): the world box is the scene's bounds plus 1 m, so
the cells beyond a hole in a closed map's walls touch it (they have void portals), and no cell of
the map's inside does.  The markers' side is every cell an inside point reaches without entering
a cell on the world box; the opening is where the chain leaves the last of the chain's cells on
that side: the portal in the gap, not the chain's end on the world box.  (Distances along portal
centres, which an earlier rule compared, mislead there: a void portal is a piece of a face of
the world box, its centre metres from the gap.)  When the entity's own cell reaches the world box
(a whole wall missing), the hole is where the chain first leaves the brushes' bounds.

A sealed map (no inside point reachable) marks the clusters the void reaches as outside: later
stages (the PVS) treat them as solid (`LeakReport.outside_mask`).  A leaking map marks nothing:
it is treated as unsealed, every cluster kept.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field

import numpy as np

from ...detmath import dot, norm
from ...runtime.level import FACE_DETAIL, POINT_HULL_BIT, CompiledLevel
from ...runtime.tree import Tree
from ...tolerances import TOUCH_EPSILON
from .portals import Portals, build_portals


@dataclass
class LeakReport:
    """What the leak flood found.  Points and lengths in metres."""

    leaks: bool
    #: (C,) bool: clusters the void reaches through portals
    outside_clusters: np.ndarray
    #: the leaking point nearest the void (its name), and where it is
    entity: str | None = None
    entity_position: tuple[float, float, float] | None = None
    #: every inside point the void reaches, by name
    leaking: list[str] = field(default_factory=list)
    #: (K, 3): the entity, the centres of the portals crossed, and the centre of the void portal
    chain: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    #: (K - 1,) the portals the chain crosses, the last one a void portal
    chain_portals: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: the portal where the chain leaves the map, its centre, the brush nearest it
    hole_portal: int = -1
    hole_position: tuple[float, float, float] | None = None
    hole_brush: str | None = None
    hole_brush_index: int = -1
    hole_brush_distance: float = float("inf")
    #: inside points that lie in solid (they cannot leak and say nothing of what is inside)
    in_solid: list[str] = field(default_factory=list)
    #: inside points in empty space (the points the verdict rests on)
    judged: int = 0
    #: 'exact' (the brushes as they are) or 'qbsp' (the tips under 0.1 unit qbsp's tree can cut are cut,
    #: core/compile/vis/sliver_seal.py)
    rule: str = "exact"
    #: with rule 'qbsp': the tips cut (sliver sites)
    sliver_sites: int = 0

    @property
    def chain_length(self) -> float:
        return float(norm(np.diff(self.chain, axis=0), axis=1).sum()) if len(self.chain) > 1 else 0.0

    @property
    def outside_mask(self) -> np.ndarray:
        """(C,) bool: clusters later stages treat as solid.  The void's clusters on a sealed map
        with at least one inside point in empty space; none on a leaking or unjudged map."""
        if self.leaks or not self.judged:
            return np.zeros_like(self.outside_clusters)
        return self.outside_clusters.copy()

    def message(self) -> str:
        """One line for the command line and the add-on's report."""
        if not self.leaks:
            return "sealed: no inside point is reachable from the void"
        x, y, z = self.entity_position
        more = f" (and {len(self.leaking) - 1} more)" if len(self.leaking) > 1 else ""
        near = f"; the hole is next to brush {self.hole_brush}" if self.hole_brush else ""
        hx = "" if self.hole_position is None else " at ({:.3f}, {:.3f}, {:.3f})".format(*self.hole_position)
        rule = (f" (as qbsp judges it: {self.sliver_sites} brush tips under 0.1 unit that its tree can cut are cut; "
                "sealed in exact geometry)" if self.rule == "qbsp" else "")
        return (f"leak{rule}: {self.entity} at ({x:.3f}, {y:.3f}, {z:.3f}){more} is reachable from the void through "
                f"a hole{hx}{near}; the chain crosses {len(self.chain_portals)} portals, {self.chain_length:.2f} m")


def inside_points(scene, extra=()) -> tuple[np.ndarray, list[str]]:
    """The points a scene says must be inside: markers (player starts, 'inside' markers, any
    info_*), lights, then `extra` (points the user names, called 'point 1', 'point 2', ...)."""
    pts, names = [], []
    for m in scene.markers:
        pts.append(m.position)
        names.append(f"{m.name} ({m.kind})")
    for light in scene.lights:
        if not getattr(light, "entity", True):
            continue  # a worldspawn sun: no place of its own
        pts.append(light.position)
        names.append(f"{light.name} (light)")
    for i, p in enumerate(extra):
        pts.append(tuple(float(v) for v in p))
        names.append(f"point {i + 1}")
    return np.array(pts, dtype=np.float64).reshape(-1, 3), names


def sealing_leaves(tree: Tree, points, bit: int) -> np.ndarray:
    """(N,) int64: the leaf of each point as qbsp places an entity (PointInLeaf, 'prefer the
    opaque one'): a point on a node's plane (within TOUCH_EPSILON) goes down both sides and
    takes the first solid leaf (for `bit`) it reaches, else its front leaf (Tree.locate).  So an
    entity whose origin lies exactly on a brush face is in the brush: it is not a flood start
    and cannot leak, and qbsp compiles such a map sealed."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    leaves, touched = tree.locate(pts)
    leaves = leaves.astype(np.int64)
    if not touched.any():
        return leaves
    normals, dists = tree.plane_normals.tolist(), tree.plane_dists.tolist()
    planes, children = tree.node_plane.tolist(), tree.node_children.tolist()
    solid = ((tree.leaf_solid & np.uint32(bit)) != 0).tolist()
    for i in np.flatnonzero(touched).tolist():
        x, y, z = pts[i].tolist()
        todo = [tree.root]
        while todo:
            code = todo.pop()
            while code >= 0:
                nx, ny, nz = normals[planes[code]]
                d = nx * x + ny * y + nz * z - dists[planes[code]]
                if abs(d) <= TOUCH_EPSILON:  # on the plane: the back side later, the front now
                    todo.append(children[code][1])
                    code = children[code][0]
                else:
                    code = children[code][1 if d < 0 else 0]
            if solid[-1 - code]:
                leaves[i] = -1 - code
                break
    return leaves


def check_scene(scene, level: CompiledLevel, extra_points=(), progress=None, cancel=None) -> tuple[Portals, LeakReport]:
    """The portals of a baked scene and its leak verdict from its markers, lights and
    `extra_points`; counts go to level.stats['leaks'], seconds to level.stats['times'] ('portals',
    'leaks').  progress and cancel as for build_portals."""
    t0 = time.perf_counter()
    portals = build_portals(level, progress=progress, cancel=cancel)
    t1 = time.perf_counter()
    report = find_leaks(level, portals, *inside_points(scene, extra_points))
    level.stats["leaks"] = {"clusters": portals.num_clusters, "portals": portals.num_inner,
                            "void_portals": portals.num_portals - portals.num_inner, "leaks": report.leaks,
                            "judged": report.judged, "outside_clusters": int(report.outside_clusters.sum())}
    level.stats.setdefault("times", {}).update(portals=t1 - t0, leaks=time.perf_counter() - t1)
    return portals, report


def flood_from_void(clusters: np.ndarray, num_clusters: int) -> np.ndarray:
    """(C,) bool: the clusters reachable from the outside (cluster id num_clusters) across the
    links `clusters` (M, 2) (breadth first, all clusters of one step at a time)."""
    c = num_clusters
    reached = np.zeros(c + 1, dtype=bool)
    reached[c] = True
    cl = np.asarray(clusters, dtype=np.int64).reshape(-1, 2)
    frontier = np.array([c])
    while len(frontier):
        mark = np.zeros(c + 1, dtype=bool)
        mark[frontier] = True
        touch = mark[cl[:, 0]] | mark[cl[:, 1]]
        nxt = np.unique(cl[touch].ravel())
        frontier = nxt[~reached[nxt]]
        reached[frontier] = True
    return reached[:c]


@dataclass
class Links:
    """What the flood crosses, each a pair of clusters and a point on the way (the portals and
    their centres; the outside is cluster num_clusters)."""

    clusters: np.ndarray  # (M, 2) int64
    points: np.ndarray  # (M, 3)
    num_portals: int


def find_leaks(level: CompiledLevel, portals: Portals, inside_points, names) -> LeakReport:
    """Flood from the void; a typed LeakReport (see the module docstring)."""
    pts = np.asarray(inside_points, dtype=np.float64).reshape(-1, 3)
    names = list(names)
    graph = Links(portals.clusters.astype(np.int64), portals.centres(), portals.num_portals)
    outside = flood_from_void(graph.clusters, portals.num_clusters)
    leaves = sealing_leaves(level.point_tree(), pts, POINT_HULL_BIT) if len(pts) else np.zeros(0, np.int64)
    cluster = portals.cluster_of_leaf[leaves].astype(np.int64) if len(pts) else np.zeros(0, np.int64)
    in_box = np.all((pts >= level.world_bounds[0]) & (pts <= level.world_bounds[1]), axis=1)
    cluster[~in_box] = -1  # beyond the world box: in the void itself
    solid = (cluster < 0) & in_box
    report = LeakReport(leaks=False, outside_clusters=outside, in_solid=[names[i] for i in np.flatnonzero(solid)],
                        judged=int(np.count_nonzero(~solid)))
    leaking = np.flatnonzero(~in_box | ((cluster >= 0) & outside[np.maximum(cluster, 0)]))
    if not len(leaking):
        return report
    report.leaks = True
    report.leaking = [names[i] for i in leaking]
    _shortest_chain(level, portals, graph, pts, cluster, leaking, names, report)
    return report


def _shortest_chain(level, portals, graph, pts, cluster, leaking, names, report) -> None:
    """Fill the chain, the entity and the hole: Dijkstra from the void over the links' points
    (and from the inside points, to find where the chain leaves the map)."""
    centres = graph.points
    by_cluster = _links_by_cluster(graph.clusters, portals.num_clusters)
    void = np.flatnonzero(graph.clusters[:, 1] == portals.outside)
    goals: dict[int, list[np.ndarray]] = {}  # link -> the leaking points in a cluster it borders
    for i in leaking.tolist():
        c = int(cluster[i])
        if c >= 0:
            for j in by_cluster[c].tolist():
                goals.setdefault(j, []).append(pts[i])
    d_void, toward = _dijkstra(graph.clusters, portals.outside, centres, by_cluster, [(0.0, int(j)) for j in void],
                               goals)
    # the entity: the leaking point with the shortest way out
    # a point beyond the world box is in the void itself (its chain is the point alone): named
    # only when no leaking point inside the box has a chain to show
    best, entity, first = np.inf, int(leaking[0]), -1
    for i in leaking.tolist():
        c = int(cluster[i])
        if c < 0:
            continue
        js = by_cluster[c]
        if not len(js):
            continue
        d = norm(centres[js] - pts[i], axis=1) + d_void[js]
        k = int(np.argmin(d))
        if d[k] < best:
            best, entity, first = float(d[k]), i, int(js[k])
    report.entity = names[entity]
    report.entity_position = tuple(float(v) for v in pts[entity])
    chain = [first] if first >= 0 else []
    while chain and toward[chain[-1]] >= 0:
        chain.append(int(toward[chain[-1]]))
    report.chain_portals = np.array(chain, dtype=np.int64)
    report.chain = np.concatenate([pts[entity][None], centres[chain]]) if chain else pts[entity][None].copy()
    if not chain:
        return
    hole = _opening(graph.clusters, portals, cluster, int(cluster[entity]), chain)
    if hole >= 0:
        k = chain.index(hole)
        toward = centres[chain[k + 1]] if k + 1 < len(chain) else centres[hole]
        set_hole(report, level, portals, hole)
        report.hole_position = tuple(float(v) for v in nearest_on_polygon(portals.winding(hole), toward))
    else:  # the entity's own cell reaches the world box: where the chain leaves the brushes' bounds
        k, point = _leaves_bounds(level, report.chain)
        set_hole(report, level, portals, chain[k], point)


def set_hole(report: LeakReport, level: CompiledLevel, portals: Portals, portal: int, point=None) -> None:
    """Name the hole: chain portal `portal`, at `point` (default its centre), and the structural
    brush nearest it (to the portal's winding, or to `point` when given)."""
    report.hole_portal = int(portal)
    where = portals.centres()[portal] if point is None else np.asarray(point, dtype=np.float64)
    report.hole_position = tuple(float(v) for v in where)
    report.hole_brush_index, report.hole_brush_distance = nearest_brush(
        level, portals.winding(portal) if point is None else where[None])
    report.hole_brush = level.brush_names[report.hole_brush_index] if report.hole_brush_index >= 0 else None


def nearest_on_polygon(verts: np.ndarray, point: np.ndarray) -> np.ndarray:
    """The point of a convex planar polygon nearest `point`: the hole is shown where the opening
    lets the chain out (the part of the portal nearest the chain's next step toward the void), not
    at the portal's centre, which on a big portal (a room's floor cut by a region line) lies metres
    from the gap."""
    verts = np.asarray(verts, dtype=np.float64)
    point = np.asarray(point, dtype=np.float64)
    centre = verts.mean(axis=0)
    normal = np.zeros(3)
    for a, b in zip(verts, np.roll(verts, -1, axis=0)):
        normal += np.cross(a - centre, b - centre)
    length = float(norm(normal))
    if length == 0.0:
        return centre
    normal /= length
    on = point - float(dot(point - centre, normal)) * normal
    inside = all(float(dot(np.cross(b - a, on - a), normal)) >= 0.0 for a, b in zip(verts, np.roll(verts, -1, axis=0)))
    if inside:
        return on
    best, best_d = centre, np.inf
    for a, b in zip(verts, np.roll(verts, -1, axis=0)):
        e = b - a
        t = min(1.0, max(0.0, float(dot(on - a, e)) / max(float(dot(e, e)), 1e-300)))
        q = a + t * e
        d = float(norm(q - on))
        if d < best_d:
            best, best_d = q, d
    return best


def _opening(clusters: np.ndarray, portals: Portals, cluster: np.ndarray, start: int, chain: list[int]) -> int:
    """The chain's portal where it leaves the last of its cells on the markers' side: the cells the
    inside points (their clusters `cluster`, -1 for none) reach without entering a cell that
    touches the world box (see the module docstring).  The chain starts in cluster `start`; -1 when
    that cell itself touches the world box."""
    c = portals.num_clusters
    on_box = np.zeros(c + 1, dtype=bool)
    on_box[clusters[portals.num_inner:].ravel()] = True  # the void portals' clusters and the outside
    side = np.zeros(c + 1, dtype=bool)
    seeds = np.unique(cluster[cluster >= 0])
    side[seeds[~on_box[seeds]]] = True
    inner = clusters[: portals.num_inner].astype(np.int64)
    inner = inner[~on_box[inner[:, 0]] & ~on_box[inner[:, 1]]]
    # breadth-first across portals between cells off the box: each cell's portals read once
    ends = np.concatenate([inner, inner[:, ::-1]])
    ends = ends[np.argsort(ends[:, 0], kind="stable")]
    first = np.searchsorted(ends[:, 0], np.arange(c + 2))
    frontier = np.flatnonzero(side)
    while len(frontier):
        counts = first[frontier + 1] - first[frontier]
        rows = np.repeat(first[frontier] - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        reached = np.unique(ends[rows, 1])
        frontier = reached[~side[reached]]
        side[frontier] = True
    hole, cell = -1, start
    for j in chain:
        if side[cell]:
            hole = j
        a, b = (int(v) for v in clusters[j])
        cell = b if a == cell else a
    return hole


def _leaves_bounds(level: CompiledLevel, chain: np.ndarray) -> tuple[int, np.ndarray]:
    """(k, point): the first point where the polyline `chain` leaves the bounds of the level's
    vertices (its brushes), on its segment k; the chain's second point when it never does."""
    if not len(level.vertices):
        return 0, chain[1]
    lo, hi = level.vertices.min(axis=0), level.vertices.max(axis=0)
    for k, (a, b) in enumerate(zip(chain[:-1], chain[1:])):
        if np.all(b >= lo) and np.all(b <= hi):
            continue
        if not (np.all(a >= lo) and np.all(a <= hi)):
            return k, a
        d = b - a
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(d > 0, (hi - a) / d, np.where(d < 0, (lo - a) / d, np.inf))
        return k, a + min(float(t.min()), 1.0) * d
    return 0, chain[1]


def _links_by_cluster(clusters: np.ndarray, num_clusters: int) -> list[np.ndarray]:
    """Per cluster (the outside included, last), the links touching it."""
    c = num_clusters + 1
    owner = clusters.astype(np.int64).ravel()
    ids = np.repeat(np.arange(len(clusters)), 2)
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(c + 1))
    return [ids[order[bounds[k]:bounds[k + 1]]] for k in range(c)]


def _dijkstra(clusters, outside, centres, by_cluster, seeds, goals=None) -> tuple[np.ndarray, np.ndarray]:
    """Shortest distances over link points (a step joins two links of one cluster, the outside
    excluded: its links are only ever seeds).  Returns (distance per link, the next link on the
    way back to the nearest seed, -1 at a seed).

    goals: {link: points} when only the shortest way from some point to a seed is wanted (the
    points of a cluster, listed under its links; a way's length is |point - link| plus the link's
    distance): the search stops once every link still open is farther than the best way found,
    so every link a best way can use is final (its distance and next link as the full search
    gives them) and the others are left at inf or a larger tentative distance."""
    n = len(clusters)
    dist = np.full(n, np.inf)
    toward = np.full(n, -1, dtype=np.int64)
    heap = []
    for d, j in seeds:
        if d < dist[j]:
            dist[j] = d
            heapq.heappush(heap, (d, j, -1))
    done = np.zeros(n, dtype=bool)
    cl = np.asarray(clusters).tolist()
    cx, cy, cz = (np.ascontiguousarray(centres[:, k]) for k in range(3))
    best = np.inf
    while heap:
        d, j, prev = heapq.heappop(heap)
        if done[j]:
            continue
        if d > best:
            break
        done[j] = True
        toward[j] = prev
        if goals is not None and j in goals:
            for p in goals[j]:
                best = min(best, float(norm(centres[j] - p)) + d)
        for c in cl[j]:
            if c == outside:
                continue
            ks = by_cluster[c]
            # |centres[ks] - centres[j]|, squares summed in order as detmath.norm sums them
            dx, dy, dz = cx[ks] - cx[j], cy[ks] - cy[j], cz[ks] - cz[j]
            nd = d + np.sqrt(dx * dx + dy * dy + dz * dz)
            better = nd < dist[ks]
            for k, v in zip(ks[better].tolist(), nd[better].tolist()):
                dist[k] = v
                heapq.heappush(heap, (v, k, j))
    return dist, toward


def nearest_brush(level: CompiledLevel, polygon: np.ndarray) -> tuple[int, float]:
    """The brush whose structural faces come nearest a portal (distance between the face and the
    portal's vertices and centre, exact per point), and that distance; (-1, inf) with no faces.
    Of faces equally near (a gap's portal touches every brush around it), the one nearest the
    portal's centre: the gap's sides rather than a floor its corner rests on."""
    faces = np.flatnonzero((level.face_flags & FACE_DETAIL) == 0)
    if not len(faces):
        return -1, float("inf")
    faces = _near_faces(level, faces, polygon)
    centre = polygon.mean(axis=0)
    to_centre = _point_face_distances(level, faces, centre)
    best = to_centre.copy()
    for p in polygon:
        best = np.minimum(best, _point_face_distances(level, faces, p))
    k = int(np.lexsort((to_centre, best))[0])
    return int(level.face_brush[faces[k]]), float(best[k])


def _near_faces(level: CompiledLevel, faces: np.ndarray, polygon: np.ndarray, first: int = 32) -> np.ndarray:
    """The faces (ascending, a subset of `faces`) that may be nearest the polygon: the distance
    between the polygon's box and a face's box is a lower bound of the face's distance to every
    point of the polygon, so a face whose bound exceeds the exact distance of one of the `first`
    faces of smallest bound is never the nearest (nor tied with it)."""
    if len(faces) <= first:
        return faces
    start = level.face_first_vertex[faces].astype(np.int64)
    count = level.face_num_vertices[faces].astype(np.int64)
    seg = np.cumsum(count) - count
    rows = level.vertices[np.repeat(start - seg, count) + np.arange(int(count.sum()))]
    lo = np.minimum.reduceat(rows, seg, axis=0)
    hi = np.maximum.reduceat(rows, seg, axis=0)
    p_lo, p_hi = polygon.min(axis=0), polygon.max(axis=0)
    gap = np.maximum(0.0, np.maximum(lo - p_hi, p_lo - hi))
    bound = np.sqrt(gap[:, 0] * gap[:, 0] + gap[:, 1] * gap[:, 1] + gap[:, 2] * gap[:, 2])
    probe = faces[np.argsort(bound, kind="stable")[:first]]
    upper = min(float(_point_face_distances(level, probe, q).min()) for q in list(polygon) + [polygon.mean(axis=0)])
    return faces[bound <= upper * (1 + 1e-9) + 1e-12]


def _point_face_distances(level: CompiledLevel, faces: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Exact distance from p to each convex face: to its plane where p projects inside it, else to
    its nearest edge."""
    first = level.face_first_vertex[faces].astype(np.int64)
    count = level.face_num_vertices[faces].astype(np.int64)
    width = int(count.max())
    slot = np.arange(width)
    valid = slot < count[:, None]
    idx = first[:, None] + np.minimum(slot, count[:, None] - 1)
    a = level.vertices[idx]
    b = level.vertices[first[:, None] + np.where(slot + 1 < count[:, None], slot + 1, 0)]
    ab = b - a
    ap = p[None, None, :] - a
    t = np.clip(dot(ap, ab) / np.maximum(dot(ab, ab), 1e-300), 0.0, 1.0)
    edge = norm(ap - t[..., None] * ab, axis=2)
    edge = np.where(valid, edge, np.inf).min(axis=1)
    n = level.plane_normals[level.face_plane[faces]]
    d = level.plane_dists[level.face_plane[faces]]
    h = dot(n, p[None, :]) - d
    foot = p[None, :] - h[:, None] * n
    # inside: the foot is on the same side of every edge (whichever way the face turns)
    side = dot(np.cross(ab, foot[:, None, :] - a), n[:, None, :])
    inside = np.all(np.where(valid, side >= -1e-12, True), axis=1) | np.all(np.where(valid, side <= 1e-12, True), axis=1)
    return np.where(inside, np.abs(h), edge)

