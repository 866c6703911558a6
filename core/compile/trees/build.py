"""The trees of a level from its scene: brushes -> plane table -> CSG union of faces (structural,
then detail) -> the structural point tree -> detail faces pushed and split into its empty leaves ->
flat arrays -> the onion tree of the scene's box hulls.  :func:`compile_scene` is the first stage
of a bake (core/compile/pipeline.py chains the rest); the qbsp seal check (vis/sliver_seal.py)
calls it again on a cut copy of the scene.
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from ...detmath import matmul
from ...errors import check_cancel
from ...geometry import PlaneTable
from ...model.brushes import Contents
from ...model.scene import Scene, check_settings
from ...runtime.level import FACE_DETAIL, POINT_HULL_BIT, CompiledLevel
from ...tolerances import ON_EPSILON, PROBE_STEPS
from ..stage_progress import StageProgress
from .bsp import SplitterSettings, TreeBuilder, flatten_tree, world_box
from .csg import FaceList, brush_plane_ids, union_faces
from .expand import expand_brushes
from .onion import compile_onion
from .faceless import faceless_leaves, interior_points, settle_faceless_leaves
from .probes import builder_leaves, leaf_probes
from .regions import RegionGrid


def splitter_settings(scene: Scene) -> SplitterSettings:
    return SplitterSettings.from_settings(scene.settings)


def compile_scene(scene: Scene, progress=None, cancel=None, farm=None, cache=None) -> CompiledLevel:
    """Compile the point-hull solid BSP of a scene, and the onion tree of its box hulls.

    progress(fraction, message) is called as work advances; cancel() returning True stops the
    work with CancelledError.  Solid and detail brushes collide with the point hull; clip brushes
    (box hulls only) and non-solid brushes do not.  The stages below each record their counts in
    `stats` and their seconds in `times`.  `farm`: a cluster's workers (brushbake.farm.level's
    LevelFarm) that build the regions' subtrees of both trees (core/compile/trees/region_jobs.py):
    the same level (a farm with a `union`, region_jobs.LocalRegions, also computes the onion's unions
    of faces).  `cache`: a BakeCache (core/compile/bake_cache.py) that keeps the unions' pieces,
    the hulls' brushes and the regions' subtrees of earlier bakes and computes only what is new:
    the same level.
    """
    runner = farm.region_runner(cancel) if farm is not None else None
    union = getattr(farm, "union", None) or union_faces
    expand = expand_brushes
    if cache is not None:
        runner, union, expand = cache.region_runner(runner), cache.union(union), cache.expand
    weights = {"csg": 1.0, "tree": 4.0, "detail": 1.0}
    if scene.hulls:
        weights["onion"] = 6.0 * len(scene.hulls)
    weights["arrays"] = 0.2
    bar = StageProgress(progress, weights)
    check_settings(scene.settings, where=f"scene {scene.name!r}")  # a Settings checks itself; forced fields too
    stats: dict = {"brushes": len(scene.brushes)}
    times: dict = {}

    t0 = time.perf_counter()
    planes, faces, ordered, n_structural = _csg_stage(scene, bar.stage("csg"), cancel, stats,
                                                     cache.union() if cache is not None else union_faces)
    times["csg"] = time.perf_counter() - t0
    check_cancel(cancel)

    t0 = time.perf_counter()
    bounds = world_box(scene.bounds if scene.brushes else None)
    grid = RegionGrid.for_world(scene.settings.region_size, bounds)
    builder = _structural_tree(scene, planes, faces, n_structural, bounds, grid, bar.stage("tree"), cancel, stats,
                               runner)
    structural_nodes, structural_leaves = len(builder.node_plane), len(builder.leaves)
    times["tree"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    detail_ids = list(range(n_structural, stats["faces_after_csg"]))
    first_sub_leaf = len(builder.leaves)
    if cache is not None:  # each leaf's detail subtree, kept as a region's is (built here when new)
        builder.runner = cache.region_runner()
    _detail_stage(builder, faces, detail_ids, scene.brushes_with(Contents.DETAIL), bar.stage("detail"), cancel, stats)
    if grid is not None:  # the detail subtrees' faceless leaves: inside a detail brush, or empty
        stats["empty_faceless_leaves"] += settle_faceless_leaves(
            builder, faces, faceless_leaves(builder, first_sub_leaf), scene.brushes_with(Contents.DETAIL))
    times["detail"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    level = _flatten(builder, planes, faces, ordered, bounds)
    times["arrays"] = time.perf_counter() - t0

    if scene.hulls:
        _onion_stage(scene, level, planes, bar.stage("onion"), cancel, stats, times, runner, union, expand)
    bar.stage("arrays")(1.0, "done")

    stats.update(
        splits=builder.stats.splits,
        nodes=level.num_nodes,
        leaves=level.num_leaves,
        structural_nodes=structural_nodes,
        structural_leaves=structural_leaves,
        solid_leaves=int(np.count_nonzero(level.leaf_solid & POINT_HULL_BIT)),
        depth=level.depth(),
        hulls=len(scene.hulls),
        faces=len(level.face_plane),
        planes=len(planes),
        candidates_scored=builder.stats.scored,
    )
    stats["times"] = times
    level.stats = stats
    return level


def _csg_stage(scene: Scene, report, cancel, stats: dict, union=union_faces):
    """The plane table and the CSG'd faces: structural faces on the union surface first, then
    detail faces cut by structural and detail brushes.  Returns (planes, faces, the brushes in
    that order, the number of structural faces)."""
    structural = scene.brushes_with(Contents.SOLID)
    detail = scene.brushes_with(Contents.DETAIL)
    ordered = structural + detail
    planes = PlaneTable()
    plane_ids = brush_plane_ids(ordered, planes)
    faces = FaceList()
    union(structural, plane_ids[: len(structural)], planes, out=faces, cancel=cancel)
    n_structural = len(faces)
    report(0.5, f"{n_structural} structural faces")
    union(ordered, plane_ids, planes, subtract_from=len(structural), flags=FACE_DETAIL, out=faces, cancel=cancel)
    stats.update(structural_brushes=len(structural), detail_brushes=len(detail),
                 faces_before_csg=sum(len(b.faces) for b in ordered), faces_after_csg=len(faces),
                 detail_faces_after_csg=len(faces) - n_structural)
    return planes, faces, ordered, n_structural


def _structural_tree(scene: Scene, planes, faces, n_structural: int, bounds, grid, report, cancel,
                     stats: dict, runner=None) -> TreeBuilder:
    """The structural tree over the structural faces, cut along the region grid first (when
    there is one; its faceless leaves are then decided by a point inside, core/compile/trees/
    faceless.py); each of its leaves is its own cluster."""
    builder = TreeBuilder(planes, faces, splitter_settings(scene), progress=report, cancel=cancel, grid=grid,
                          runner=runner)
    ids = np.arange(n_structural)
    if n_structural:
        builder.build(ids, np.ones(n_structural, bool), np.ones(n_structural, bool), bounds)
    else:
        builder.build(ids, np.zeros(0, bool), np.zeros(0, bool), bounds)
    builder.runner = None  # the detail subtrees are built here (or through a cache: compile_scene)
    if grid is not None:
        stats["region_size"] = grid.size
        stats["empty_faceless_leaves"] = settle_faceless_leaves(builder, faces, faceless_leaves(builder),
                                                                scene.brushes_with(Contents.SOLID))
    for i, leaf in enumerate(builder.leaves):
        leaf.cluster = i
    return builder


def _detail_stage(builder: TreeBuilder, faces, detail_ids: list, detail_brushes, report, cancel, stats: dict) -> None:
    """Detail faces pushed down the structural tree (PUSH-POLYGON); every leaf that receives some
    is built further from them alone, its sub-leaves keeping its cluster; empty leaves wholly
    inside a detail brush are made solid."""
    pushed, on_boundary = builder.push_faces(detail_ids) if detail_ids else ({}, set())
    builder.progress = None  # sub-builds report through this stage's own bar
    check_cancel(cancel)
    leaf_order = sorted(pushed)
    roots = []
    for leaf_index in leaf_order:  # every leaf with detail is built further, all together
        leaf = builder.leaves[leaf_index]
        leaf.alive = False
        ids = np.array(leaf.faces + pushed[leaf_index], dtype=np.int64)
        is_detail = np.array([(faces.flags[f] & FACE_DETAIL) != 0 for f in ids], dtype=bool)
        candidate = is_detail & np.array([f not in on_boundary for f in ids.tolist()], dtype=bool)
        roots.append((ids, candidate, is_detail, leaf.bounds, leaf.parent, leaf.side))
    for leaf_index, (_, first, end) in zip(leaf_order, builder.build_many(roots)):
        for sub in builder.leaves[first:end]:
            sub.cluster = builder.leaves[leaf_index].cluster
    report(1.0, f"{len(pushed)} leaves with detail")
    stats["leaves_inside_detail"] = _mark_leaves_inside_detail(builder, faces, detail_brushes, set(pushed))


def _onion_stage(scene: Scene, level: CompiledLevel, planes, report, cancel, stats: dict, times: dict,
                 runner=None, union=union_faces, expand=expand_brushes) -> None:
    """The onion tree of the scene's box hulls (core/compile/trees/onion.py), into the level."""
    margin = 1.0 + max(float(np.abs(np.array([h.mins, h.maxs])).max()) for h in scene.hulls)
    bounds = world_box(scene.bounds if scene.brushes else None, margin)
    onion = compile_onion(scene.brushes, list(scene.hulls), planes, splitter_settings(scene), bounds,
                          progress=report, cancel=cancel, map_trees=scene.settings.onion_map_trees,
                          grid=RegionGrid.for_world(scene.settings.region_size, world_box(
                              scene.bounds if scene.brushes else None)), runner=runner, union=union, expand=expand)
    level.plane_normals, level.plane_dists = planes.arrays()  # expanded brushes added planes
    level.onion_node_plane = onion["node_plane"]
    level.onion_node_children = onion["node_children"]
    level.onion_leaf_solid = onion["leaf_solid"]
    level.hull_names = ["point"] + [h.name for h in scene.hulls]
    level.hull_boxes = np.array([[[0.0] * 3, [0.0] * 3]] + [[list(h.mins), list(h.maxs)] for h in scene.hulls])
    stats.update(onion["stats"])
    times.update(onion["times"])


def _mark_leaves_inside_detail(builder: TreeBuilder, faces: FaceList, detail, pushed: set[int]) -> int:
    """Make solid the empty structural leaves that lie wholly inside a detail brush.

    Such a leaf receives no detail face (no detail surface crosses it), so pushing faces cannot
    tell; since it is wholly inside or wholly outside the detail union, one interior point
    decides.  The point is taken just in front of one of the leaf's own faces (every empty leaf
    holds one) and checked to land in that leaf.  Overlaps, probes and containment are tested
    for all leaves at once.
    """
    if not detail:
        return 0
    todo = [index for index, leaf in enumerate(builder.leaves)
            if not (leaf.solid or not leaf.alive or index in pushed or leaf.cluster != index)]
    if not todo:
        return 0
    overlaps = _box_overlaps(np.array([builder.leaves[i].bounds for i in todo]), np.array([b.bounds for b in detail]))
    todo, overlaps = [i for i, o in zip(todo, overlaps) if len(o)], [o for o in overlaps if len(o)]
    # each leaf's faces in turn, each at the first two probe steps
    tries = ((face_no, step) for face_no in itertools.count() for step in PROBE_STEPS[:2])
    points, found = leaf_probes(builder, faces, todo, tries,
                                lambda probes, ks: builder_leaves(builder, probes) == np.asarray(todo)[ks])
    faceless = [k for k in np.flatnonzero(~found).tolist() if not builder.leaves[todo[k]].faces]
    if faceless:  # an empty leaf without faces (a region cell): a point inside it decides
        points[faceless] = interior_points(builder, faces, [todo[k] for k in faceless])
        found[faceless] = True
    # touching detail brushes may fill the leaf together with the probe exactly on their contact
    # plane: accept points within ON_EPSILON (no surface of the union comes that close, since
    # none crosses the leaf)
    marked = 0
    for index, overlap, point, ok in zip(todo, overlaps, points, found.tolist()):
        if ok and _inside_some(point, [detail[j] for j in overlap.tolist()], ON_EPSILON):
            builder.leaves[index].solid = True
            marked += 1
    return marked


def _box_overlaps(boxes: np.ndarray, others: np.ndarray, chunk_cells: int = 1 << 20) -> list[np.ndarray]:
    """For each (2, 3) box, the indices of `others` whose open interiors overlap it (in chunks of
    about chunk_cells box pairs, so memory stays bounded)."""
    out: list[np.ndarray] = []
    step = max(1, chunk_cells // max(1, len(others)))
    for start in range(0, len(boxes), step):
        b = boxes[start : start + step]
        hit = np.all(others[None, :, 0] < b[:, None, 1], axis=2) & np.all(others[None, :, 1] > b[:, None, 0], axis=2)
        rows, cols = np.nonzero(hit)
        out.extend(np.split(cols, np.searchsorted(rows, np.arange(1, len(b)))))
    return out


def _inside_some(point: np.ndarray, brushes, eps: float) -> bool:
    """The point lies within eps of the inside of some brush: every plane distance < eps.  One
    product against all the brushes' planes, then one verdict per brush."""
    counts = [len(b.dists) for b in brushes]
    dist = matmul(point, np.concatenate([b.normals for b in brushes]).T) - np.concatenate([b.dists for b in brushes])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return bool(np.logical_and.reduceat(dist < eps, starts).any())


def _flatten(builder: TreeBuilder, planes: PlaneTable, faces: FaceList, brushes, bounds) -> CompiledLevel:
    """Renumber leaves and faces in tree order and pack everything into flat arrays."""
    flat = flatten_tree(builder)
    order = flat.leaf_order.tolist()
    face_order: list[int] = []
    face_first = np.zeros(len(order), dtype=np.int32)
    face_count = np.zeros(len(order), dtype=np.int32)
    for new, old in enumerate(order):
        rec = builder.leaves[old]
        face_first[new] = len(face_order)
        face_count[new] = len(rec.faces)
        face_order.extend(rec.faces)
    verts = [faces.verts[f] for f in face_order]
    counts = np.array([len(v) for v in verts], dtype=np.int32)
    first_vertex = np.zeros(len(verts), dtype=np.int32)
    if len(verts):
        np.cumsum(counts[:-1], out=first_vertex[1:])
    # clusters numbered 0.. in order of first appearance
    clusters = [builder.leaves[old].cluster for old in order]
    cluster_ids: dict[int, int] = {}
    normals, dists = planes.arrays()
    return CompiledLevel(
        plane_normals=normals,
        plane_dists=dists,
        node_plane=flat.node_plane,
        node_children=flat.node_children,
        leaf_solid=np.array([POINT_HULL_BIT if builder.leaves[o].solid else 0 for o in order], dtype=np.uint32),
        leaf_cluster=np.array([cluster_ids.setdefault(c, len(cluster_ids)) for c in clusters], dtype=np.int32),
        leaf_bounds=np.array([builder.leaves[o].bounds for o in order], dtype=np.float64).reshape(-1, 2, 3),
        leaf_face_first=face_first,
        leaf_face_count=face_count,
        leaf_faces=np.arange(len(face_order), dtype=np.int32),
        face_plane=np.array([faces.plane[f] for f in face_order], dtype=np.int32),
        face_first_vertex=first_vertex,
        face_num_vertices=counts,
        face_brush=np.array([faces.brush[f] for f in face_order], dtype=np.int32),
        face_flags=np.array([faces.flags[f] for f in face_order], dtype=np.uint32),
        vertices=np.concatenate(verts) if verts else np.zeros((0, 3)),
        brush_names=[b.name for b in brushes],
        world_bounds=np.asarray(bounds, dtype=np.float64),
    )
