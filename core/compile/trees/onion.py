"""The onion BSP: one tree over the configuration spaces of several box hulls (Golodetz, after
van Waveren), whose leaves carry a solid bit per hull.

Compilation (onion article, section 3):
1. per box hull, every colliding brush (solid, detail and clip) expanded into its configuration
   space (core/compile/trees/expand.py), the expanded brushes' faces unioned (core/compile/trees/csg.py),
   and a *map tree* built from them by the ordinary compiler; hull 0, the point hull, uses the unexpanded solid
   and detail brushes (clip brushes let points through);
2. one tree from the faces of all spaces together (build_tree / build_subtree, Listings 1-2);
3. determine_leaf_solidity (Listing 3): an arbitrary point of each leaf classified in every map
   tree gives the leaf's bit per hull.

arbitrary_leaf_point (Listing 4) builds the leaf's polytope from its ancestors and a world box;
that is exact but costs O(depth^3) per leaf, so it is the fallback here.  The fast path (probe
points, core/compile/trees/probes.py) uses what the tree already knows: every face in a leaf faces into
it, so a point a hair in front of a leaf face lies in the leaf; a leaf with no face lies right
behind its parent's splitter face.  Each probe is checked by locating it in the finished tree
with a margin; the rare failures go to Listing 4.  All probes are classified in each map tree in
one batched query per hull.
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from ...model.brushes import Brush, Contents
from .box_pairs import points_in_boxes
from .bsp import TreeBuilder, flatten_tree
from .csg import FaceList, brush_bounds, brush_plane_ids, union_faces
from ...detmath import matmul
from ...errors import check_cancel
from .expand import expand_brushes
from ...geometry import PlaneTable
from ...runtime.tree import Tree
from .probes import leaf_probes, locate
from ...runtime.query import point_leaves
from ...model.scene import Hull
from ...tolerances import ON_EPSILON, PARALLEL_DETERMINANT, PROBE_STEPS, WORLD_HALF_EXTENT


def colliding_brushes(brushes: list[Brush], hull_index: int) -> list[Brush]:
    """What blocks a hull: solid and detail always; clip brushes block box hulls, not points."""
    wanted = (Contents.SOLID, Contents.DETAIL) if hull_index == 0 else (Contents.SOLID, Contents.DETAIL, Contents.CLIP)
    return [b for b in brushes if b.contents in wanted]


def space_faces(brushes: list[Brush], planes: PlaneTable, out: FaceList, space: int, cancel=None,
                union=union_faces) -> None:
    """Union faces of one configuration space, appended to `out` with `space` as their flags
    (`union`: csg.union_faces or what computes the same, region_jobs.LocalUnion)."""
    union(brushes, brush_plane_ids(brushes, planes), planes, flags=space, out=out, cancel=cancel)


def build_map_tree(faces: FaceList, ids: np.ndarray, planes: PlaneTable, settings, bounds) -> Tree:
    """A solid BSP (solidity by face orientation) over the given faces of one space."""
    sub = FaceList([faces.verts[i] for i in ids], [faces.plane[i] for i in ids],
                   [faces.brush[i] for i in ids], [faces.flags[i] for i in ids])
    builder = TreeBuilder(planes, sub, settings)
    n = len(sub)
    builder.build(np.arange(n), np.ones(n, bool), np.ones(n, bool), bounds)
    flat = flatten_tree(builder)
    solid = np.array([1 if builder.leaves[o].solid else 0 for o in flat.leaf_order], dtype=np.uint32)
    return Tree(planes.normals, planes.dists, flat.node_plane, flat.node_children, solid)


def compile_onion(brushes: list[Brush], hulls: list[Hull], planes: PlaneTable, settings, bounds,
                  progress=None, cancel=None, map_trees: bool = False, grid=None, runner=None,
                  union=union_faces, expand=expand_brushes) -> dict:
    """Build the onion tree for the point hull plus `hulls`.

    Returns {'node_plane', 'node_children', 'leaf_solid' (bit h per hull), 'map_trees' (when
    asked), 'stats', 'times'}.  `planes` is shared with the point tree so one plane table serves
    both.  Leaf solidity asks, for each leaf's interior point, whether it lies in a space's solid.
    With map_trees=True that is Listing 3 verbatim (a map tree per space, built by the ordinary
    compiler); by default the point is tested against the space's expanded brushes directly,
    which gives the same answer (the tests check it) without building trees nobody keeps.
    `grid`: the region grid the onion tree is cut along first (core/compile/trees/regions.py; its
    leaves' solidity is by points anyway); `runner` builds its regions' subtrees (region_jobs.py);
    `union` computes each space's union of faces (csg.union_faces, or region_jobs.LocalUnion);
    `expand` the brushes of the hulls' spaces (expand.expand_brushes, or a BakeCache's).
    """
    times: dict = {}
    stats: dict = {}

    def report(fraction, message):
        if progress is not None:
            progress(fraction, message)

    # 1. configuration spaces and their faces
    t0 = time.perf_counter()
    faces = FaceList()
    space_ranges = []
    spaces: list[list[Brush]] = []
    report(0.0, "expanding brushes")
    expanded = expand(colliding_brushes(brushes, 1), hulls) if hulls else []
    for h in range(len(hulls) + 1):
        check_cancel(cancel)
        report(0.3 * h / (len(hulls) + 1), f"union of faces for hull {h}")
        space = colliding_brushes(brushes, 0) if h == 0 else expanded[h - 1]
        spaces.append(space)
        start = len(faces)
        space_faces(space, planes, faces, h, cancel, union)
        space_ranges.append((start, len(faces)))
        stats[f"space{h}_brushes"] = len(space)
        stats[f"space{h}_faces"] = len(faces) - start
    times["expand_csg"] = time.perf_counter() - t0

    # 2. map trees, one per space (Listing 3's classifiers), when asked for
    trees: list[Tree] = []
    if map_trees:
        t0 = time.perf_counter()
        for h, (a, b) in enumerate(space_ranges):
            check_cancel(cancel)
            report(0.3 + 0.2 * h / len(space_ranges), f"map tree for hull {h}")
            trees.append(build_map_tree(faces, np.arange(a, b), planes, settings, bounds))
        stats["map_tree_nodes"] = [t.num_nodes for t in trees]
        stats["separate_tree_nodes"] = int(sum(t.num_nodes for t in trees))
        times["map_trees"] = time.perf_counter() - t0

    # 3. the onion tree over all spaces' faces
    t0 = time.perf_counter()
    n = len(faces)
    sub_progress = None if progress is None else (lambda f, m: report(0.5 + 0.4 * f, f"onion tree: {m}"))
    builder = TreeBuilder(planes, faces, settings, progress=sub_progress, cancel=cancel, grid=grid, runner=runner)
    builder.build(np.arange(n), np.ones(n, bool), np.ones(n, bool), bounds)
    flat = flatten_tree(builder)
    times["onion_tree"] = time.perf_counter() - t0

    # 4. determine_leaf_solidity for every leaf at once
    t0 = time.perf_counter()
    report(0.9, "leaf solidity")
    view = Tree(planes.normals, planes.dists, flat.node_plane, flat.node_children,
                    np.zeros(len(flat.leaf_order), np.uint32))
    points, fallbacks = leaf_points(builder, flat, view, faces, bounds)
    solid = determine_leaf_solidity(points, trees if map_trees else spaces)
    times["leaf_solidity"] = time.perf_counter() - t0
    stats.update(onion_nodes=len(flat.node_plane), onion_leaves=len(flat.leaf_order),
                 onion_splits=builder.stats.splits, leaf_point_fallbacks=fallbacks)
    return {"node_plane": flat.node_plane, "node_children": flat.node_children, "leaf_solid": solid,
            "map_trees": trees, "stats": stats, "times": times}


def determine_leaf_solidity(points: np.ndarray, spaces: list) -> np.ndarray:
    """Listing 3: bit h of a leaf is set when its point is solid in space h.

    spaces[h] is either a map tree (Tree: the leaf holding the point is solid) or the list
    of that space's brushes (the point is strictly inside one of them).
    """
    bits = np.zeros(len(points), dtype=np.uint32)
    for h, space in enumerate(spaces):
        if isinstance(space, Tree):
            solid = space.leaf_solid[point_leaves(space, points)] != 0
        else:
            solid = points_in_brushes(points, space)
        bits |= solid.astype(np.uint32) << np.uint32(h)
    return bits


def points_in_brushes(points: np.ndarray, brushes: list[Brush]) -> np.ndarray:
    """(N,) bool: the point is inside some brush (bounding boxes first, from a grid, then planes).

    Points within ON_EPSILON of a brush surface count as inside: leaf probes keep more than that
    from every surface of the union, but may sit exactly on the contact plane of two touching
    brushes, which is inside the union and strictly inside neither.
    """
    inside = np.zeros(len(points), dtype=bool)
    if not len(points) or not brushes:
        return inside
    lo, hi = brush_bounds(brushes)
    p, b = points_in_boxes(points, lo - ON_EPSILON, hi + ON_EPSILON)  # candidates from a grid
    near = np.all((points[p] > lo[b] - ON_EPSILON) & (points[p] < hi[b] + ON_EPSILON), axis=1)
    p, b = p[near], b[near]
    count = np.array([len(br.dists) for br in brushes])
    normals = np.zeros((len(brushes), int(count.max()), 3))
    dists = np.zeros((len(brushes), int(count.max())))
    for i, br in enumerate(brushes):
        normals[i, : count[i]], dists[i, : count[i]] = br.normals, br.dists
    padding = np.arange(normals.shape[1]) >= count[:, None]
    width = np.ones(len(b), np.int64)  # planes read per pair: the brush's count up to a power of two
    while np.any(width < count[b]):
        width[width < count[b]] *= 2
    for k in np.unique(width).tolist():  # pairs in groups of like plane counts, in slices of bounded size
        rows = np.flatnonzero(width == k)
        step = max(1, (1 << 21) // k)
        for a in range(0, len(rows), step):  # each distance summed as matmul(point, normals.T) sums it
            pp, bb = p[rows[a : a + step]], b[rows[a : a + step]]
            q, n = points[pp, None, :], normals[bb, :k]
            dist = q[..., 0] * n[..., 0] + q[..., 1] * n[..., 1] + q[..., 2] * n[..., 2] - dists[bb, :k]
            inside[pp[np.all((dist < ON_EPSILON) | padding[bb, :k], axis=1)]] = True
    return inside


def leaf_points(builder: TreeBuilder, flat, view: Tree, faces: FaceList, bounds) -> tuple[np.ndarray, int]:
    """An interior point of every leaf (in flattened order), and how many needed Listing 4: a probe
    (core/compile/trees/probes.py) at each of PROBE_STEPS in turn, kept when it lands in its leaf more
    than ON_EPSILON from every plane on its path."""

    def lands(probes: np.ndarray, ks: np.ndarray) -> np.ndarray:
        leaf, margin = locate(view.node_plane, view.node_children, view.plane_normals, view.plane_dists, probes)
        return (leaf == ks) & (margin > ON_EPSILON)

    tries = [(0, step) for step in PROBE_STEPS]
    points, found = leaf_probes(builder, faces, flat.leaf_order.tolist(), tries, lands)
    pending = np.flatnonzero(~found)
    if len(pending):  # Listing 4, exact and slow; in the leaf's own box, which holds its cell
        parent_of = _parents(builder)
        for k in pending:
            leaf = int(flat.leaf_order[k])
            points[k] = arbitrary_leaf_point(_ancestors(builder, parent_of, leaf), builder.leaves[leaf].bounds,
                                             builder.planes)
    return points, len(pending)


def _parents(builder: TreeBuilder) -> dict[int, tuple[int, int]]:
    parent: dict[int, tuple[int, int]] = {}
    for node, (front, back) in enumerate(builder.node_children):
        if front >= 0:
            parent[front] = (node, 0)
        if back >= 0:
            parent[back] = (node, 1)
    return parent


def _ancestors(builder: TreeBuilder, parent_of, old_leaf: int) -> list[int]:
    """Plane indices bounding a leaf, each oriented so the leaf is on its *front* (Listing 2's
    ancestors: the splitter on the way to the front child, its flip on the way to the back)."""
    rec = builder.leaves[old_leaf]
    out = []
    node, side = rec.parent, rec.side
    while node >= 0:
        out.append(builder.node_plane[node] ^ side)
        node, side = parent_of.get(node, (-1, 0))
    return out


def arbitrary_leaf_point(ancestor_planes: list[int] | tuple, bounds, planes: PlaneTable | None = None,
                         normals: np.ndarray | None = None, dists: np.ndarray | None = None) -> np.ndarray:
    """Listing 4: the mean of the vertices of the polytope bounded by the ancestors (leaf on their
    front) and a box holding the leaf (the world box, or the leaf's own).  Pass plane indices with
    `planes`, or explicit (normals, dists).

    The polytope is clipped one ancestor at a time, its vertices found from every three of the
    planes that bound it so far (an ancestor with every vertex in front is passed over, and a plane
    no vertex lies on is dropped): a deep leaf's hundred ancestors would otherwise cost every three
    of a hundred planes, millions of solves and gigabytes, where the few dozen that bound it cost
    thousands.  Any point inside the leaf answers for it, so which vertices are averaged (a vertex
    met by four planes counts once per three of them) does not matter."""
    if normals is None:
        normals = planes.normals[list(ancestor_planes)]
        dists = planes.dists[list(ancestor_planes)]
    lo, hi = np.asarray(bounds[0], float), np.asarray(bounds[1], float)
    # inward (leaf on front) -> outward for the vertex enumeration: n.x >= d  <=>  -n.x <= -d
    out_n = np.vstack([np.eye(3), -np.eye(3), -np.asarray(normals, float).reshape(-1, 3)])
    out_d = np.concatenate([hi, -lo, -np.asarray(dists, float).reshape(-1)])
    active = list(range(6))
    pts = _polytope_vertices(out_n[active], out_d[active])
    for j in range(6, len(out_n)):
        if not len(pts):
            break
        if np.all(matmul(pts, out_n[j]) - out_d[j] <= ON_EPSILON):
            continue  # the polytope so far lies behind it: it bounds nothing
        active.append(j)
        pts = _polytope_vertices(out_n[active], out_d[active])
        touched = np.abs(matmul(pts, out_n[active].T) - out_d[active]) <= ON_EPSILON
        active = [p for p, t in zip(active, touched.any(axis=0).tolist()) if t]
    if not len(pts):
        return np.full(3, WORLD_HALF_EXTENT)  # an empty cell (zero volume): any point far away
    return pts.mean(axis=0)


def _polytope_vertices(out_n: np.ndarray, out_d: np.ndarray) -> np.ndarray:
    """Vertices of {x: out_n x <= out_d} (within ON_EPSILON), from every three planes that meet in
    a point."""
    if len(out_n) < 3:
        return np.zeros((0, 3))
    idx = np.array(list(itertools.combinations(range(len(out_n)), 3)))
    a = out_n[idx]
    ok = np.abs(np.linalg.det(a)) > PARALLEL_DETERMINANT
    pts = np.linalg.solve(a[ok], out_d[idx[ok]][..., None])[..., 0]
    return pts[np.all(matmul(pts, out_n.T) - out_d <= ON_EPSILON, axis=1)]
