"""Viewport overlays: geometry built by plain functions returning NumPy arrays, drawn by a handler.

Every overlay is an :class:`OverlayGeometry` (triangles and lines, each with a colour per vertex)
made from the compiled level alone, so the same arrays feed the viewport, the preview objects
(addon/preview.py) and the tests, which check them against the level's own queries:

* :func:`leaf_overlay`: the leaf cells of the tree that answers for a hull (the point tree for the
  point hull, the onion tree for box hulls), red where the leaf is solid for that hull, green
  (optionally) where empty.  Cells are the convex polytopes the tree's planes cut from the world box.
* :func:`hull_surface_overlay`: the faces of solid cells, cut down the tree to the parts that border
  empty cells for the hull: the expanded ('configuration space') surface its reference point collides with.
* :func:`bevel_overlay`: patches of the bevel planes (plane shifting) where they touch their cells;
  ``tri_leaf`` holds the bevel *node* of each triangle there.
* :func:`trace_overlay`: the last trace, its hit point and normal.

* addon/crowd.py slices_overlay: the crowd slices' standing places and blocked cells.

Later overlays (portals, lightmaps) add a function here and an item to
properties.OVERLAYS; :func:`geometry_for` picks by that item.  The draw handler only draws.  gpu is
imported inside the drawing functions: the geometry functions run anywhere, even without a GPU.
"""

import numpy as np

from ..core.compile.trees.cells import tree_cells
from ..core.geometry import base_polygon, polygon_normal_area, split_polygon
from ..core.tolerances import OVERLAY_MIN_AREA, ON_EPSILON
from . import storage
from .camera_view import camera_overlay, current_camera
from .crowd import slices_overlay
from .overlay_geometry import OverlayGeometry, fan
from .visibility import visible_cells_overlay

SOLID_COLOR = (0.9, 0.25, 0.15, 0.55)
EMPTY_COLOR = (0.2, 0.8, 0.35, 0.12)
SURFACE_COLOR = (0.25, 0.55, 1.0, 0.6)
TRACE_COLOR = (1.0, 0.85, 0.1, 1.0)
TRACE_REST_COLOR = (0.6, 0.6, 0.6, 1.0)
NORMAL_COLOR = (0.1, 1.0, 1.0, 1.0)
BEVEL_COLOR = (1.0, 0.65, 0.1, 0.7)

# ------------------------------------------------------------------------------------------------
# leaf cells


def _face_plane(poly: np.ndarray) -> tuple[np.ndarray, float]:
    n, _ = polygon_normal_area(poly)
    return n, float(n @ poly.mean(axis=0))


def leaf_cells(tree, bounds, node_cells: dict | None = None) -> list[list[np.ndarray]]:
    """Every leaf's convex cell within `bounds` ((2, 3) box), as outward polygons; empty list for a
    leaf that lies wholly outside the box (or has no volume there).  Pass a dict as `node_cells`
    to also get each node's region (the cell the node splits), by node index.  The cells are
    core/compile/trees/cells.py's, the same the bevel stage reads."""
    bounds = np.asarray(bounds, dtype=np.float64)
    cells: list[list[np.ndarray]] = [[] for _ in range(tree.num_leaves)]
    for code, faces, _ in tree_cells(tree, bounds[0], bounds[1], nodes=node_cells is not None):
        polys = [poly for _, poly in faces]
        if code < 0:
            cells[-1 - code] = polys
        else:
            node_cells[code] = polys
    return cells


def cell_volume(cell: list[np.ndarray]) -> float:
    """Volume of a closed convex cell (divergence theorem over its outward faces)."""
    total = 0.0
    for poly in cell:
        n, area = polygon_normal_area(poly)
        total += area * float(n @ poly[0]) / 3.0
    return total


def hull_index(level, hull) -> int:
    """A hull given by name or index, as the level's index.  Raises KeyError naming the hulls."""
    if isinstance(hull, int):
        if not 0 <= hull < len(level.hull_names):
            raise KeyError(f"the bake has no hull {hull}; it has {', '.join(level.hull_names)}")
        return hull
    if hull not in level.hull_names:
        raise KeyError(f"the bake has no hull '{hull}'; it has {', '.join(level.hull_names)}")
    return level.hull_names.index(hull)


def _cells_for(level, hull: int):
    tree = level.collision_tree(hull)
    margin = float(np.abs(level.hull_boxes[hull]).max()) if hull else 0.0
    bounds = np.asarray(level.world_bounds) + np.array([[-margin] * 3, [margin] * 3])
    return tree, leaf_cells(tree, bounds)


def leaf_overlay(level, hull=0, include_empty: bool = False) -> OverlayGeometry:
    """Leaf cells of the hull's tree as triangles, coloured by solidity for that hull."""
    h = hull_index(level, hull)
    tree, cells = _cells_for(level, h)
    solid = (np.asarray(tree.leaf_solid) >> h) & 1
    tris, colors, leaves = [], [], []
    for leaf, cell in enumerate(cells):
        if not cell or not (solid[leaf] or include_empty):
            continue
        t = fan(cell)
        tris.append(t)
        leaves.append(np.full(len(t), leaf))
        colors.append(np.tile(SOLID_COLOR if solid[leaf] else EMPTY_COLOR, (3 * len(t), 1)))
    if not tris:
        return OverlayGeometry()
    return OverlayGeometry(np.concatenate(tris).reshape(-1, 3).astype(np.float32),
                           np.concatenate(colors).astype(np.float32), np.concatenate(leaves))


def empty_pieces(tree, poly: np.ndarray, bit: int) -> list[np.ndarray]:
    """The parts of a polygon (on a solid cell's boundary, normal facing out of the cell) that
    border cells empty for the hull: the polygon pushed down the tree, split at every node it
    crosses, and sent to the side it faces where it lies in a node's plane."""
    normal = polygon_normal_area(poly)[0]
    out, stack = [], [(tree.root, poly)]
    while stack:
        code, piece = stack.pop()
        if code < 0:
            if not tree.leaf_solid[-1 - code] & bit:
                out.append(piece)
            continue
        plane = int(tree.node_plane[code])
        n, d = tree.plane_normals[plane], float(tree.plane_dists[plane])
        front_child, back_child = (int(c) for c in tree.node_children[code])
        dist = piece @ n - d
        if np.abs(dist).max() <= ON_EPSILON:
            stack.append((front_child if normal @ n > 0 else back_child, piece))
            continue
        f, b = split_polygon(piece, n, d, ON_EPSILON, dist)
        if f is not None:
            stack.append((front_child, f))
        if b is not None:
            stack.append((back_child, b))
    return out


def hull_surface_overlay(level, hull=0) -> OverlayGeometry:
    """The expanded surface for the hull: every face of a solid cell, cut to the parts that border
    an empty cell.  Triangles face out of the solid (towards where the reference point may be)."""
    h = hull_index(level, hull)
    tree, cells = _cells_for(level, h)
    bit = 1 << h
    keep, owner = [], []
    for leaf, cell in enumerate(cells):
        if cell and tree.leaf_solid[leaf] & bit:
            for poly in cell:
                pieces = [p for p in empty_pieces(tree, poly, bit) if polygon_normal_area(p)[1] > OVERLAY_MIN_AREA]
                keep.extend(pieces)
                owner.extend([leaf] * len(pieces))
    if not keep:
        return OverlayGeometry()
    counts = [len(p) - 2 for p in keep]
    t = fan(keep)
    return OverlayGeometry(t.reshape(-1, 3).astype(np.float32),
                           np.tile(SURFACE_COLOR, (3 * len(t), 1)).astype(np.float32),
                           np.repeat(owner, counts))


def bevel_overlay(level, margin: float = 0.15) -> OverlayGeometry:
    """The bevel planes of the beveled tree (core/bevel.py): for each bevel node, a patch of its
    plane around where it touches its solid cell (the plane clipped by the cell's faces pushed
    `margin` metres outward), both sides drawn.  Empty when the bake has no bevels."""
    if not level.has_bevel:
        return OverlayGeometry()
    tree = level.bevel_tree()
    nodes: dict[int, list[np.ndarray]] = {}
    leaf_cells(tree, np.asarray(level.world_bounds) + np.array([[-1.0] * 3, [1.0] * 3]), nodes)
    first_bevel = len(level.node_plane)  # the plain tree's nodes come first, unchanged
    extent = 4.0 * float(np.abs(level.world_bounds).max() + 2.0)
    patches, owners = [], []
    for node in range(first_bevel, tree.num_nodes):
        cell = nodes.get(node)
        if not cell:
            continue
        plane = int(tree.node_plane[node])
        patch = base_polygon(tree.plane_normals[plane], float(tree.plane_dists[plane]), extent)
        for poly in cell:
            pn, pd = _face_plane(poly)
            if patch is None or not pn.any():
                break
            _, patch = split_polygon(patch, pn, pd + margin, ON_EPSILON)
        if patch is not None and polygon_normal_area(patch)[1] > OVERLAY_MIN_AREA:
            patches += [patch, patch[::-1].copy()]
            owners += [node, node]
    if not patches:
        return OverlayGeometry()
    counts = [len(p) - 2 for p in patches]
    t = fan(patches)
    return OverlayGeometry(t.reshape(-1, 3).astype(np.float32),
                           np.tile(BEVEL_COLOR, (3 * len(t), 1)).astype(np.float32),
                           np.repeat(owners, counts))


def trace_overlay(start, end, point, normal, hit: bool, normal_length: float = 0.5) -> OverlayGeometry:
    """The trace as lines: start to hit (yellow), hit to end (grey), the normal (cyan), a cross."""
    start, end, point, normal = (np.asarray(v, dtype=np.float64) for v in (start, end, point, normal))
    lines = [start, point]
    colors = [TRACE_COLOR, TRACE_COLOR]
    if hit:
        lines += [point, end, point, point + normal_length * normal]
        colors += [TRACE_REST_COLOR] * 2 + [NORMAL_COLOR] * 2
        for axis in np.eye(3) * 0.1:
            lines += [point - axis, point + axis]
            colors += [TRACE_COLOR] * 2
    return OverlayGeometry(line_positions=np.array(lines, dtype=np.float32),
                           line_colors=np.array(colors, dtype=np.float32))


# ------------------------------------------------------------------------------------------------
# which overlay the scene asks for


def last_trace(settings) -> dict | None:
    if not settings.last_trace_valid:
        return None
    return dict(start=tuple(settings.last_trace_start), end=tuple(settings.last_trace_end),
                point=tuple(settings.last_trace_point), normal=tuple(settings.last_trace_normal),
                hit=settings.last_trace_fraction < 1.0)


_geometry_cache: dict[tuple, OverlayGeometry] = {}


def geometry_for(scene) -> OverlayGeometry:
    """The overlay the scene's settings choose, built from its stored bake (cached)."""
    settings = scene.brushbake
    if settings.overlay == "TRACE":
        trace = last_trace(settings)
        return OverlayGeometry() if trace is None else trace_overlay(**trace)
    camera = None
    if settings.overlay == "CAMERA":
        import bpy

        camera, _ = current_camera(bpy.context, settings.cull_use_view)
        if camera is None:
            return OverlayGeometry()
        camera = tuple(np.round(camera, 9).tolist())
        _tag_sidebar(bpy.context, camera)
    key = (storage.bake_key(scene), settings.overlay, settings.overlay_hull, settings.overlay_empty,
           tuple(scene.cursor.location) if settings.overlay == "VISIBLE" else None,
           (camera, settings.cull_mode) if camera is not None else None)
    if key[0] is None:
        return OverlayGeometry()
    if key not in _geometry_cache:
        level = storage.load_level(scene)
        hull = settings.overlay_hull if settings.overlay_hull in level.hull_names else 0
        if settings.overlay == "HULL_SURFACE":
            geom = hull_surface_overlay(level, hull)
        elif settings.overlay == "BEVELS":
            geom = bevel_overlay(level)
        elif settings.overlay == "SLICES":
            geom = slices_overlay(level)
        elif settings.overlay == "CAMERA":
            geom = camera_overlay(level, np.array(camera), settings.cull_mode)
        elif settings.overlay == "VISIBLE":
            geom = visible_cells_overlay(level, tuple(scene.cursor.location))
        else:
            geom = leaf_overlay(level, hull, settings.overlay_empty)
        _geometry_cache.clear()  # one at a time: overlays of big levels are large
        _geometry_cache[key] = geom
    return _geometry_cache[key]


_last_camera: list = [None]


def _tag_sidebar(context, camera) -> None:
    """When the view's camera moved, redraw the sidebars of the 3D views (their culling counts)."""
    if camera == _last_camera[0]:
        return
    _last_camera[0] = camera
    screen = getattr(context, "screen", None)
    for area in (screen.areas if screen else []):
        if area.type == "VIEW_3D":
            for region in area.regions:
                if region.type == "UI":
                    region.tag_redraw()


# ------------------------------------------------------------------------------------------------
# drawing (gpu): only this part needs a GPU context


def batches(geom: OverlayGeometry):
    """gpu batches for the geometry: (shader, [batch, ...])."""
    import gpu
    from gpu_extras.batch import batch_for_shader

    shader = gpu.shader.from_builtin("SMOOTH_COLOR")
    out = []
    if len(geom.tri_positions):
        out.append(batch_for_shader(shader, "TRIS", {"pos": geom.tri_positions, "color": geom.tri_colors}))
    if len(geom.line_positions):
        out.append(batch_for_shader(shader, "LINES", {"pos": geom.line_positions, "color": geom.line_colors}))
    return shader, out


def draw_geometry(geom: OverlayGeometry) -> None:
    """Draw into whatever framebuffer is bound, with the current matrices (blended, depth-tested)."""
    import gpu

    shader, bs = batches(geom)
    gpu.state.blend_set("ALPHA")
    gpu.state.depth_test_set("LESS_EQUAL")
    gpu.state.line_width_set(2.0)
    for batch in bs:
        batch.draw(shader)
    gpu.state.depth_test_set("NONE")
    gpu.state.blend_set("NONE")


_handle = None


def _draw_callback() -> None:
    import bpy

    scene = bpy.context.scene
    if scene is None or not getattr(scene, "brushbake", None) or not scene.brushbake.show_overlay:
        return
    try:
        geom = geometry_for(scene)
    except Exception:  # a damaged bake must not break the viewport; the panel shows the error
        return
    draw_geometry(geom)


def settings_changed(context) -> None:
    """Install the draw handler when an overlay is shown (removed on unregister), then redraw."""
    global _handle
    import bpy

    if _handle is None and context.scene.brushbake.show_overlay:
        _handle = bpy.types.SpaceView3D.draw_handler_add(_draw_callback, (), "WINDOW", "POST_VIEW")
    screen = getattr(context, "screen", None)
    for area in (screen.areas if screen else []):
        if area.type == "VIEW_3D":
            area.tag_redraw()


def unregister_handler() -> None:
    global _handle
    if _handle is not None:
        import bpy

        bpy.types.SpaceView3D.draw_handler_remove(_handle, "WINDOW")
        _handle = None
    _geometry_cache.clear()


classes: tuple[type, ...] = ()
