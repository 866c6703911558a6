"""The compiled level: flat NumPy arrays (struct of arrays), the one shape every later stage,
query, exporter and preview reads.

Tree encoding: a child index c >= 0 is a node; c < 0 is leaf -1 - c (so leaf 0 is -1).  The root
is node 0, or leaf 0 (encoded -1) when the tree has no nodes.  Each node's front child
(n.x - d > 0) is children[:, 0], its back child children[:, 1].
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import UnknownHullError
from .tree import Tree

#: leaf_solid bit 0 is the point hull; bit h (h >= 1) is box hull h (the onion issue).
POINT_HULL_BIT = 1

#: face_flags bits
FACE_DETAIL = 1  # face of a detail brush, pushed into the structural tree's leaves


@dataclass
class CompiledLevel:
    # planes: plane i and i ^ 1 are flips of each other
    plane_normals: np.ndarray  # (P, 3) float64
    plane_dists: np.ndarray  # (P,) float64
    # nodes
    node_plane: np.ndarray  # (N,) int32
    node_children: np.ndarray  # (N, 2) int32, [front, back]
    # leaves
    leaf_solid: np.ndarray  # (L,) uint32 bit set per hull
    leaf_cluster: np.ndarray  # (L,) int32: the structural leaf a detail leaf lies in (itself otherwise)
    leaf_bounds: np.ndarray  # (L, 2, 3) float64, clipped to the world bounds (+ margin)
    leaf_face_first: np.ndarray  # (L,) int32 into leaf_faces
    leaf_face_count: np.ndarray  # (L,) int32
    leaf_faces: np.ndarray  # (M,) int32 face indices
    # faces (CSG'd brush faces, split by the tree)
    face_plane: np.ndarray  # (F,) int32
    face_first_vertex: np.ndarray  # (F,) int32 into vertices
    face_num_vertices: np.ndarray  # (F,) int32
    face_brush: np.ndarray  # (F,) int32 index into brush_names
    face_flags: np.ndarray  # (F,) uint32 (FACE_DETAIL, ...)
    vertices: np.ndarray  # (V, 3) float64
    # names and hulls
    brush_names: list[str] = field(default_factory=list)
    hull_names: list[str] = field(default_factory=lambda: ["point"])
    hull_boxes: np.ndarray = field(default_factory=lambda: np.zeros((1, 2, 3)))  # (H, 2, 3) mins, maxs
    world_bounds: np.ndarray = field(default_factory=lambda: np.zeros((2, 3)))  # (2, 3)
    # the onion tree (box hulls): same plane table; leaf bit h = solid for hull h (bit 0: point)
    onion_node_plane: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # (N,) int32
    onion_node_children: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int32))  # (N, 2)
    onion_leaf_solid: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))  # (L,) uint32
    # the beveled point tree for plane shifting (core/bevel.py, core/shift.py): same plane table
    # (bevel planes appended as flip pairs); nodes and leaves of the point tree first, unchanged,
    # then the bevel nodes and their zero-volume empty leaves.  Empty when the level was baked
    # without bevels.
    bevel_node_plane: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # (N,) int32
    bevel_node_children: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int32))  # (N, 2)
    bevel_leaf_solid: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))  # (L,) uint32
    # the potentially visible set (core/runtime/pvs.py, docs/VISIBILITY.md); all empty when the level
    # was baked without visibility
    vis_leaf_cluster: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # (L,) int32, -1: no row
    vis_row_offset: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))  # (C,) into vis_rows
    vis_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))  # (B,) Quake RLE rows
    # crowd slices (core/runtime/crowd.py, core/compile/crowds/slices.py); None when baked without --slices
    crowd: object = None  # CrowdSlices | None
    # lightmaps (core/compile/light/lightmap.py, docs/FORMAT.md 'LM' sections); all empty (luxel 0) when
    # the level was baked without light
    lm_luxel: float = 0.0  # m per luxel
    lm_pages: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0, 3), np.float32))  # (K, S, S, 3) linear RGB
    lm_face_page: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # (F,) page of each face's chart
    lm_face_rect: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.int32))  # (F, 4) x, y, w, h texels
    lm_vertex_uv: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))  # (V, 2) lightmap UV per vertex
    # the portals between visibility clusters, for the camera queries' portal walk
    # (core/runtime/cull.py, docs/CAMERA.md); all empty when absent (a level baked without
    # visibility, or by a brushbake before the CQ sections)
    cull_num_clusters: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # (1,) == C when present
    cull_portal_clusters: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int32))  # (Q, 2) vis clusters
    cull_portal_plane: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # (Q,) from [:, 0] into [:, 1]
    cull_portal_first: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # (Q,) into cull_portal_vertices
    cull_portal_count: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # (Q,) >= 3
    cull_portal_vertices: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))  # (V, 3) float64
    #: counts and seconds per stage, for the command line's table; never written to files
    stats: dict = field(default_factory=dict)

    # the point tree's root and sizes, so a level stands for its point tree in queries
    root = property(lambda self: self.point_tree().root)
    num_nodes = property(lambda self: self.point_tree().num_nodes)
    num_leaves = property(lambda self: self.point_tree().num_leaves)

    def face_vertices(self, face: int) -> np.ndarray:
        first = int(self.face_first_vertex[face])
        return self.vertices[first : first + int(self.face_num_vertices[face])]

    def depth(self) -> int:
        """Number of nodes on the longest root-to-leaf path."""
        return self.point_tree().depth()

    def _tree(self, kind: str, *arrays) -> Tree:
        """The level's tree of that kind, made once and kept while its arrays are the same objects
        (stages that add trees or planes replace arrays; they never edit them in place)."""
        cache = self.__dict__.setdefault("_trees", {})
        tree = cache.get(kind)
        if tree is None or not tree.same_arrays(*arrays):
            tree = cache[kind] = Tree(*arrays)
        return tree

    def point_tree(self) -> Tree:
        return self._tree("point", self.plane_normals, self.plane_dists, self.node_plane, self.node_children,
                          self.leaf_solid)

    def onion_tree(self) -> Tree:
        return self._tree("onion", self.plane_normals, self.plane_dists, self.onion_node_plane,
                          self.onion_node_children, self.onion_leaf_solid)

    @property
    def has_onion(self) -> bool:
        return len(self.onion_leaf_solid) > 0

    @property
    def has_bevel(self) -> bool:
        return len(self.bevel_leaf_solid) > 0

    @property
    def has_vis(self) -> bool:
        return len(self.vis_row_offset) > 0

    @property
    def has_light(self) -> bool:
        return self.lm_luxel > 0

    @property
    def has_cull_portals(self) -> bool:
        return len(self.cull_num_clusters) == 1

    def bevel_tree(self) -> Tree:
        """The beveled point tree for plane shifting; the plain point tree when there is none."""
        if not self.has_bevel:
            return self.point_tree()
        return self._tree("bevel", self.plane_normals, self.plane_dists, self.bevel_node_plane,
                          self.bevel_node_children, self.bevel_leaf_solid)

    def collision_tree(self, hull: int = 0) -> Tree:
        """The tree that answers for a hull: the point tree for hull 0, the onion tree otherwise."""
        names = ", ".join(f"{i} {name}" for i, name in enumerate(self.hull_names))
        if not isinstance(hull, (int, np.integer)) or not 0 <= hull < max(len(self.hull_names), 1):
            raise UnknownHullError(f"has no hull {hull!r}; its hulls are: {names}.", subject="level",
                                   hint="Query one of those, or rebake the level with the hull you need.")
        if hull == 0:
            return self.point_tree()
        if not self.has_onion:
            raise UnknownHullError(f"has no onion tree for hull {hull} ({self.hull_names[hull]}); its hull "
                                   f"table lists {names}, but only the point hull has a tree.", subject="level",
                                   hint="Rebake the level.")
        return self.onion_tree()

    def cached(self, key, make, *depends_on):
        """A value derived from this level (the ellipsoid's polygon world, ...), made once by
        make() and kept while the arrays it depends on are the same objects."""
        cache = self.__dict__.setdefault("_derived", {})
        hit = cache.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], depends_on)):
            return hit[1]
        value = make()
        cache[key] = (depends_on, value)
        return value
