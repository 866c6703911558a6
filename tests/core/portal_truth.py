"""Independent ground truth for portals (core/compile/vis/portals.py).

- Cell polytopes: each structural cell (a node or leaf whose subtree holds one cluster) is the
  world box cut by the half-spaces of its ancestors, built here with scipy's
  HalfspaceIntersection and ConvexHull (no code of brushbake's geometry), so its boundary area is
  known independently.  An empty cell's boundary is covered by its portals (to empty clusters
  and to the outside), the structural brush faces its leaves hold (the solid-facing part), and
  the boundary it shares with a structural cell wholly inside detail brushes (solid, no portal).
- Dense sampling: points on each portal, nudged along its normal, are located in the tree and
  must land in the portal's two clusters (or outside the world box, for void portals) and not
  inside any structural brush (brute force against the scene's brushes).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog
from scipy.spatial import ConvexHull, HalfspaceIntersection

from brushbake.core.runtime.level import FACE_DETAIL, POINT_HULL_BIT
from brushbake.core.runtime.query import point_leaves
from brushbake.core.tolerances import ON_EPSILON

#: m. Samples are nudged this far off a portal's plane.
NUDGE = 1e-4
#: m. Samples nearer than this to a portal's edge are not judged (they may land in the cell
#: across the edge).
EDGE_BAND = 3e-4


def structural_cells(level):
    """{cell code: [(plane, side), ...] root-to-cell path}: cells are leaves and nodes whose
    subtree holds one cluster; side 0 = in front of the plane."""
    children = level.node_children.tolist()
    cluster = level.leaf_cluster.tolist()

    sets: dict[int, set] = {}

    def below(code):
        if code < 0:
            return {cluster[-1 - code]}
        if code not in sets:
            sets[code] = below(children[code][0]) | below(children[code][1])
        return sets[code]

    out = {}
    stack = [(level.root, [])]
    while stack:
        code, path = stack.pop()
        if code < 0 or len(below(code)) == 1:
            out[code] = path
            continue
        plane = int(level.node_plane[code])
        stack.append((children[code][0], path + [(plane, 0)]))
        stack.append((children[code][1], path + [(plane, 1)]))
    return out


def cell_leaves(level, code):
    if code < 0:
        return [-1 - code]
    out, stack = [], [code]
    while stack:
        c = stack.pop()
        if c < 0:
            out.append(-1 - c)
        else:
            stack.extend(level.node_children[c].tolist())
    return out


def polytope_area(level, path):
    """Boundary area of the world box cut by the path's half-spaces (None if it has no volume)."""
    lo, hi = level.world_bounds
    rows = []
    for axis in range(3):
        e = np.zeros(3)
        e[axis] = 1.0
        rows.append(np.concatenate([-e, [lo[axis]]]))  # x >= lo
        rows.append(np.concatenate([e, [-hi[axis]]]))  # x <= hi
    for plane, side in path:
        n, d = level.plane_normals[plane], level.plane_dists[plane]
        rows.append(np.concatenate([-n, [d]]) if side == 0 else np.concatenate([n, [-d]]))
    hs = np.array(rows)
    a, b = hs[:, :3], -hs[:, 3]
    res = linprog(np.array([0, 0, 0, -1.0]), A_ub=np.hstack([a, np.linalg.norm(a, axis=1)[:, None]]), b_ub=b,
                  bounds=[(None, None)] * 3 + [(0, None)], method="highs")
    if not res.success or res.x[3] < 1e-7:
        return None
    pts = HalfspaceIntersection(hs, res.x[:3]).intersections
    return ConvexHull(pts).area


def polygon_area(v):
    c = np.cross(v, np.roll(v, -1, axis=0)).sum(axis=0)
    return 0.5 * float(np.linalg.norm(c))


def check_areas(level, portals, raw, rel=1e-7):
    """Per empty cell: its portals' area + its structural faces' area + the area it shares with
    detail-filled cells == its polytope's boundary area.  Returns (problems, cells checked).

    Tolerance: rel * area + 4 * ON_EPSILON * sqrt(area).  The portals follow the tree's planes to
    PORTAL_EPSILON, but the brush faces come from CSG and the tree, which call a vertex within
    ON_EPSILON of a plane *on* it: where a cell ends in a sliver between nearly parallel planes
    (e3m4), a face may reach a few micrometres past the polytope's corner (6e-6 m^2 seen there).
    A missing portal the size of a 2 mm square is still caught in a 1 m^2 cell."""
    from brushbake.core.compile.vis.portals import polygon_areas, structural_cells as module_cells

    cells = structural_cells(level)
    dense = portals.cluster_of_level_cluster
    areas = portals.areas()
    per_cluster = np.zeros(portals.num_clusters + 1)
    np.add.at(per_cluster, portals.clusters[:, 0], areas)
    np.add.at(per_cluster, portals.clusters[:, 1], areas)
    # detail-filled structural cells: solid clusters whose leaves hold structural faces
    face_area = {}
    filled = set()
    for code in cells:
        leaves = cell_leaves(level, code)
        cl = int(level.leaf_cluster[leaves[0]])
        total = 0.0
        for leaf in leaves:
            a = int(level.leaf_face_first[leaf])
            for f in level.leaf_faces[a : a + int(level.leaf_face_count[leaf])].tolist():
                if not level.face_flags[f] & FACE_DETAIL:
                    total += polygon_area(level.face_vertices(f))
        face_area[code] = total
        if dense[cl] < 0 and total > 0 and all(level.leaf_solid[l] & POINT_HULL_BIT for l in leaves):
            filled.add(cl)
    shared = np.zeros(portals.num_clusters + 1)
    if filled:
        mc = module_cells(level)
        raw_areas = polygon_areas(raw.verts, raw.counts)
        cl = np.stack([mc.cluster_of_code(level, raw.sides[:, 0]), mc.cluster_of_code(level, raw.sides[:, 1])], 1)
        for k in range(len(raw_areas)):
            a, b = cl[k].tolist()
            if a in filled and b >= 0 and dense[b] >= 0:
                shared[dense[b]] += raw_areas[k]
            if b in filled and a >= 0 and dense[a] >= 0:
                shared[dense[a]] += raw_areas[k]
    problems, checked = [], 0
    for code, path in cells.items():
        leaves = cell_leaves(level, code)
        c = int(dense[level.leaf_cluster[leaves[0]]])
        if c < 0:
            continue
        truth = polytope_area(level, path)
        if truth is None:
            problems.append(f"cell {code} (cluster {c}) has no volume")
            continue
        got = per_cluster[c] + face_area[code] + shared[c]
        checked += 1
        if abs(got - truth) > rel * truth + 4 * ON_EPSILON * np.sqrt(truth):
            problems.append(f"cluster {c} (cell {code}): portals {per_cluster[c]:.9g} + faces {face_area[code]:.9g} "
                            f"+ detail-filled {shared[c]:.9g} = {got:.9g} m^2, polytope boundary {truth:.9g} m^2")
    return problems, checked


def sample_portals(portals, per_portal, rng):
    """Random points on every portal (uniform over its fan triangles), with their portal index
    and their in-plane distance to the portal's edges."""
    pts, owner, edge = [], [], []
    for i in range(portals.num_portals):
        w = portals.winding(i)
        tris = np.stack([np.repeat(w[:1], len(w) - 2, 0), w[1:-1], w[2:]], axis=1)
        area = 0.5 * np.linalg.norm(np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]), axis=1)
        pick = rng.choice(len(tris), size=per_portal, p=area / area.sum())
        u, v = rng.random(per_portal), rng.random(per_portal)
        flip = u + v > 1
        u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
        t = tris[pick]
        p = t[:, 0] + u[:, None] * (t[:, 1] - t[:, 0]) + v[:, None] * (t[:, 2] - t[:, 0])
        p = np.concatenate([p, w.mean(axis=0, keepdims=True)])
        a, b = w, np.roll(w, -1, axis=0)
        ab = b - a
        tt = np.clip(np.einsum("pkj,kj->pk", p[:, None] - a[None], ab) / np.einsum("kj,kj->k", ab, ab), 0, 1)
        dist = np.linalg.norm(p[:, None] - (a[None] + tt[..., None] * ab[None]), axis=2).min(axis=1)
        pts.append(p)
        owner.append(np.full(len(p), i))
        edge.append(dist)
    if not pts:
        return np.zeros((0, 3)), np.zeros(0, np.int64), np.zeros(0)
    return np.concatenate(pts), np.concatenate(owner), np.concatenate(edge)


def cluster_halfspaces(level, portals):
    """(C, K, 4) per dense cluster the half-spaces n.x - d >= 0 of its cell (ancestors and the
    world box, padded with always-true rows): the cell polytopes, independent of the portals."""
    lo, hi = level.world_bounds
    rows = {}
    for code, path in structural_cells(level).items():
        c = int(portals.cluster_of_level_cluster[level.leaf_cluster[cell_leaves(level, code)[0]]])
        if c < 0:
            continue
        hs = [np.concatenate([np.eye(3)[k], [lo[k]]]) for k in range(3)]
        hs += [np.concatenate([-np.eye(3)[k], [-hi[k]]]) for k in range(3)]
        for plane, side in path:
            n, d = level.plane_normals[plane], level.plane_dists[plane]
            hs.append(np.concatenate([n, [d]]) if side == 0 else np.concatenate([-n, [-d]]))
        rows[c] = np.array(hs)
    width = max((len(h) for h in rows.values()), default=6)
    out = np.zeros((portals.num_clusters, width, 4))
    out[:, :, 3] = -1.0
    for c, h in rows.items():
        out[c, : len(h)] = h
    return out


def slack(halfspaces, clusters, points):
    """Smallest n.x - d of each point over its cluster's half-spaces (> 0: inside the cell)."""
    h = halfspaces[clusters]
    return (np.einsum("nkj,nj->nk", h[:, :, :3], points) - h[:, :, 3]).min(axis=1)


def check_samples(level, portals, structural_brushes, truth, rng, per_portal=20, min_checked=0.9):
    """Points on every portal lie on the boundary of both its clusters' cells (the polytopes of
    cluster_halfspaces, within 1e-7 m; the world box's for the outside).  Nudged NUDGE along the
    normal to either side, a point inside that side's cell polytope is located (point tree) in
    that cluster and is not inside any structural brush (brute force); a point nudged out of the
    world box through a void portal is outside it.  Returns (problems, points judged)."""
    pts, owner, _ = sample_portals(portals, per_portal, rng)
    problems = []
    hs = cluster_halfspaces(level, portals)
    lo, hi = level.world_bounds
    dense = portals.cluster_of_level_cluster
    judged_total = 0
    for sign, column in ((-1.0, 0), (1.0, 1)):
        want = portals.clusters[owner, column]
        void = want == portals.outside
        inner_pts = np.flatnonzero(~void)
        s0 = slack(hs, want[inner_pts], pts[inner_pts])
        if len(s0) and s0.min() < -1e-7:
            k = inner_pts[np.argmin(s0)]
            problems.append(f"portal {owner[k]} point {pts[k].tolist()} lies {-s0.min():.3g} m outside the cell of "
                            f"cluster {want[k]}")
        q = pts + sign * NUDGE * portals.normals[owner]
        outside = np.any((q < lo) | (q > hi), axis=1)
        if np.any(void & ~outside):
            problems.append(f"{int(np.sum(void & ~outside))} samples nudged through a void portal stay in the world box")
        inside_cell = np.zeros(len(q), bool)
        inside_cell[inner_pts] = slack(hs, want[inner_pts], q[inner_pts]) > 1e-9
        judged_total += int(inside_cell.sum())
        if len(inner_pts) and inside_cell[inner_pts].mean() < min_checked:
            problems.append(f"only {inside_cell[inner_pts].mean():.1%} of the nudged samples lie inside their cell")
        idx = np.flatnonzero(inside_cell)
        leaves = point_leaves(level, q[idx])
        got = dense[level.leaf_cluster[leaves]]
        bad = np.flatnonzero(got != want[idx])
        if len(bad):
            k = idx[bad[0]]
            problems.append(f"{len(bad)} of {len(idx)} samples nudged {'behind' if sign < 0 else 'in front'} land in the "
                            f"wrong cluster, e.g. portal {owner[k]} point {q[k].tolist()}: cluster {got[bad[0]]}, "
                            f"expected {want[k]}")
        inside, _ = truth.classify_points(structural_brushes, q[idx], band=0.0)
        if inside.any():
            k = idx[np.flatnonzero(inside)[0]]
            problems.append(f"{int(inside.sum())} samples lie inside a structural brush, e.g. portal {owner[k]} "
                            f"point {q[k].tolist()}")
    return problems, judged_total


def check_windings(level, portals):
    """Each winding is convex, lies on its plane, turns counter-clockwise seen from the front; inner
    portals' planes are the level's planes; clusters are ordered and distinct."""
    problems = []
    cl = portals.clusters
    inner = np.arange(portals.num_portals) < portals.num_inner
    if np.any(cl[inner, 0] >= cl[inner, 1]) or np.any(cl[inner] >= portals.num_clusters) or np.any(cl < 0):
        problems.append("inner portals must join two different clusters, smaller first")
    if np.any(cl[~inner, 1] != portals.outside) or np.any(cl[~inner, 0] >= portals.num_clusters):
        problems.append("void portals must join a cluster to the outside")
    if np.any(portals.plane[~inner] != -1) or np.any(portals.plane[inner] < 0):
        problems.append("plane must be -1 exactly for void portals")
    p = portals.plane[inner]
    if not (np.allclose(level.plane_normals[p], portals.normals[inner], atol=0)
            and np.allclose(level.plane_dists[p], portals.dists[inner], atol=0)):
        problems.append("inner portals' normals and dists are not their plane's")
    for i in range(portals.num_portals):
        w = portals.winding(i)
        n, d = portals.normals[i], portals.dists[i]
        if np.abs(w @ n - d).max() > 1e-9 * max(1.0, np.abs(w).max()):
            problems.append(f"portal {i} is off its plane by {np.abs(w @ n - d).max():.3g} m")
        e = np.roll(w, -1, axis=0) - w
        turn = np.cross(e, np.roll(e, -1, axis=0)) @ n
        if turn.min() < -1e-9:
            problems.append(f"portal {i} is not convex and counter-clockwise seen from the front ({turn.min():.3g})")
        if len(problems) > 20:
            break
    return problems
