"""Outside fill: the void around a sealed map made solid, as qbsp's FillOutside makes it.

A sealed map's empty space is two parts that never meet: the inside, where its entities are, and
the void between its outer walls and the world box.  Nothing can be in the void, so qbsp fills it:
every empty leaf the outside reaches becomes solid, in the point tree and in each hull's tree.
Queries then answer 'solid' out there (a trace leaving through the back of a wall stops at the
wall), and a point dropped outside cannot be taken for a place.

Point tree: the leak check's flood (core/compile/vis/leaks.py) already names the clusters the
void reaches; their empty leaves are filled (the PVS leaves them out the same way).

Onion tree (box hulls): the same flood per hull, over portals between the onion tree's leaves
(core/compile/vis/portals.py run on the onion tree, every leaf its own cluster; one portal build
serves every hull, each hull crossing only the portals whose two leaves are empty for it).  The
inside points (the leak check's markers, lights and named points) are located in each hull's
space; a hull whose void reaches one of them (a gap a point passes but the box does not is
no leak; one the box passes while the point cannot is rare: a clip brush's gap) is left unfilled,
and the stats say so, as qbsp fills only sealed hulls.  Then, as qbsp prunes after its fill, the
trees are pruned (core/compile/trees/prune.py): every onion node whose two sides are leaves with
the same bits becomes one leaf, and every point node whose two sides are solid leaves (e1m7 with
Quake's hulls: 4,511 -> 3,292 onion nodes, 983 -> 818 point nodes).

The beveled tree (plane shifting) is built after the fill from the filled point tree, so its
bevels cover the filled cells too.  A leaking map, or one no inside point judged, is not filled;
``settings.fill`` False (`bake --no-fill`) keeps the void empty.
"""

from __future__ import annotations

import time

import numpy as np

from ..trees.bsp import world_box
from ..trees.prune import prune_equal_leaves, prune_point_tree
from ...runtime.level import POINT_HULL_BIT, CompiledLevel
from .leaks import flood_from_void, sealing_leaves
from .portals import PortalLinks, Portals, portal_links


def fill_point_tree(level: CompiledLevel, portals: Portals, outside: np.ndarray) -> int:
    """Make solid every empty point-tree leaf in an outside cluster (dense `outside` (C,) bool of
    the portals' clusters).  Replaces level.leaf_solid (never edited in place: trees are cached
    on their arrays).  Returns the number of leaves filled."""
    cl = portals.cluster_of_leaf.astype(np.int64)
    fill = (cl >= 0) & np.asarray(outside, dtype=bool)[np.maximum(cl, 0)]
    fill &= (level.leaf_solid & POINT_HULL_BIT) == 0
    if fill.any():
        level.leaf_solid = np.where(fill, level.leaf_solid | POINT_HULL_BIT, level.leaf_solid).astype(np.uint32)
    return int(np.count_nonzero(fill))


def onion_proxy(level: CompiledLevel) -> CompiledLevel:
    """The onion tree dressed as a point tree for portal_links: every leaf its own cluster, a
    leaf 'solid' only when it is solid for every hull (a portal touching it joins nothing), and a
    world box that holds the onion tree's own (the scene's bounds grown by the largest hull)."""
    n_leaves = len(level.onion_leaf_solid)
    every = (1 << len(level.hull_names)) - 1
    grow = float(np.abs(np.asarray(level.hull_boxes, dtype=np.float64)).max()) + 1.0
    empty3 = np.zeros((0, 3))
    return CompiledLevel(
        plane_normals=level.plane_normals, plane_dists=level.plane_dists,
        node_plane=level.onion_node_plane, node_children=level.onion_node_children,
        leaf_solid=((level.onion_leaf_solid & every) == every).astype(np.uint32),
        leaf_cluster=np.arange(n_leaves, dtype=np.int32), leaf_bounds=np.zeros((n_leaves, 2, 3)),
        leaf_face_first=np.zeros(n_leaves, np.int32), leaf_face_count=np.zeros(n_leaves, np.int32),
        leaf_faces=np.zeros(0, np.int32), face_plane=np.zeros(0, np.int32), face_first_vertex=np.zeros(0, np.int32),
        face_num_vertices=np.zeros(0, np.int32), face_brush=np.zeros(0, np.int32), face_flags=np.zeros(0, np.uint32),
        vertices=empty3, world_bounds=world_box(np.asarray(level.world_bounds, dtype=np.float64), grow),
    )


def hull_void(level: CompiledLevel, portals: PortalLinks, bit: int) -> np.ndarray:
    """(L,) bool: the onion leaves, empty for hull bit `bit`, that the outside reaches through
    portals whose two leaves are both empty for that hull."""
    solid = (level.onion_leaf_solid & np.uint32(bit)) != 0
    cl = portals.cluster_of_leaf.astype(np.int64)
    leaf_of = np.full(portals.num_clusters + 1, -1, dtype=np.int64)
    leaf_of[cl[cl >= 0]] = np.flatnonzero(cl >= 0)
    cluster_empty = np.ones(portals.num_clusters + 1, dtype=bool)  # the outside last: empty
    known = leaf_of >= 0
    cluster_empty[known] = ~solid[leaf_of[known]]
    pairs = portals.clusters.astype(np.int64)
    links = pairs[cluster_empty[pairs[:, 0]] & cluster_empty[pairs[:, 1]]]
    reached = flood_from_void(links, portals.num_clusters)
    out = np.zeros(len(solid), dtype=bool)
    out[leaf_of[:-1][reached & known[:-1]]] = True
    return out & ~solid


def fill_onion(level: CompiledLevel, points: np.ndarray, cancel=None) -> dict:
    """Fill each hull's void in the onion tree (bits 0..H); a hull whose void reaches one of the
    inside `points` (N, 3), located by qbsp's rule (leaks.sealing_leaves), is left as it is.
    Replaces level.onion_leaf_solid.  Returns {'onion_filled': leaves per hull, 'onion_leaking':
    hull names left unfilled, 'onion_portals': the portal count}."""
    portals = portal_links(onion_proxy(level), cancel=cancel)
    tree = level.onion_tree()
    solid = level.onion_leaf_solid.copy()
    filled, leaking = [], []
    for h, name in enumerate(level.hull_names):
        bit = 1 << h
        void = hull_void(level, portals, bit)
        if len(points):
            at = sealing_leaves(tree, points, bit)
            if (void[at] & ((level.onion_leaf_solid[at] & bit) == 0)).any():
                leaking.append(name)
                filled.append(0)
                continue
        solid[void] |= np.uint32(bit)
        filled.append(int(np.count_nonzero(void)))
    nodes = len(level.onion_node_plane)
    level.onion_node_plane, level.onion_node_children, level.onion_leaf_solid = prune_equal_leaves(
        level.onion_node_plane, level.onion_node_children, solid)
    return {"onion_filled": filled, "onion_leaking": leaking, "onion_portals": portals.num_portals,
            "onion_nodes": [nodes, len(level.onion_node_plane)]}


def fill_outside(level: CompiledLevel, portals: Portals, outside: np.ndarray, points: np.ndarray, cancel=None) -> dict:
    """The point tree's and the onion tree's void made solid (see the module docstring); counts
    for level.stats['fill'], seconds in level.stats['times']['fill']."""
    t0 = time.perf_counter()
    stats = {"point_filled": fill_point_tree(level, portals, outside)}
    nodes = len(level.node_plane)
    prune_point_tree(level)
    stats["point_nodes"] = [nodes, len(level.node_plane)]
    if level.has_onion:
        stats.update(fill_onion(level, np.asarray(points, dtype=np.float64).reshape(-1, 3), cancel=cancel))
    stats["solid_leaves"] = int(np.count_nonzero(level.leaf_solid & POINT_HULL_BIT))
    level.stats["fill"] = stats  # the compile's counts (nodes, leaves, solid_leaves) stay the compile's
    level.stats.setdefault("times", {})["fill"] = time.perf_counter() - t0
    return stats
