"""Visibility in Blender: the leak chain as a curve object, the brush nearest the hole, and the
cells visible from a point (the 3D cursor) as overlay geometry.

The bake's visibility stage (core/compile/pipeline.py) leaves its leak report in level.stats; a
leaking bake that the user did not allow fails with LeakError, which carries the same report.
Either way :func:`show_leak` draws the chain from the entity that must be inside, through the
portals, out to the void, so the designer sees where the map is open.
"""

import bpy
import numpy as np

from . import bridge
from .overlay_geometry import OverlayGeometry, fan

#: the curve object drawing the leak chain (replaced at every bake, removed when sealed)
LEAK_OBJECT = "brushbake leak"
#: the colour of the cells seen from the cursor (the cell holding it is drawn brighter)
SEEN_COLOR = (0.3, 0.6, 1.0, 0.18)
HERE_COLOR = (1.0, 0.9, 0.2, 0.35)


def show_leak(scene, chain, hole_brush: str | None) -> "bpy.types.Object":
    """The chain (K, 3) as a poly-line curve object named LEAK_OBJECT in the scene, replacing any
    previous one; the hole's brush name is kept on it ('brushbake_hole_brush')."""
    clear_leak(scene)
    chain = np.asarray(chain, dtype=np.float64).reshape(-1, 3)
    curve = bpy.data.curves.new(LEAK_OBJECT, type="CURVE")
    curve.dimensions = "3D"
    curve.bevel_depth = 0.05
    spline = curve.splines.new("POLY")
    spline.points.add(max(len(chain) - 1, 0))
    coords = np.ones((len(chain), 4))
    coords[:, :3] = chain
    spline.points.foreach_set("co", coords.ravel().tolist())
    obj = bpy.data.objects.new(LEAK_OBJECT, curve)
    obj["brushbake_hole_brush"] = hole_brush or ""
    scene.collection.objects.link(obj)
    return obj


def clear_leak(scene) -> None:
    """Remove the leak curve (a sealed bake has none)."""
    obj = bpy.data.objects.get(LEAK_OBJECT)
    if obj is not None:
        curve = obj.data
        bpy.data.objects.remove(obj)
        if curve is not None and curve.users == 0:
            bpy.data.curves.remove(curve)


def leak_points(obj) -> np.ndarray:
    """The chain a leak curve draws, (K, 3)."""
    points = obj.data.splines[0].points
    coords = np.zeros(4 * len(points))
    points.foreach_get("co", coords)
    return coords.reshape(-1, 4)[:, :3]


def hole_brush_object(scene):
    """The object of the brush nearest the hole of the last leak, or None."""
    obj = bpy.data.objects.get(LEAK_OBJECT)
    name = obj.get("brushbake_hole_brush", "") if obj is not None else ""
    if not name:
        return None
    return next((o for o in scene.objects if o.type == "MESH" and bridge.brush_name(o) == name), None)


def box_faces(bounds) -> list[np.ndarray]:
    """The six faces of an axis-aligned box (2, 3), counter-clockwise seen from outside."""
    (x0, y0, z0), (x1, y1, z1) = np.asarray(bounds, dtype=np.float64)
    c = np.array([[x0, y0, z0], [x1, y0, z0], [x1, y1, z0], [x0, y1, z0],
                  [x0, y0, z1], [x1, y0, z1], [x1, y1, z1], [x0, y1, z1]])
    quads = [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]
    return [c[list(q)] for q in quads]


def visible_cells_overlay(level, point) -> OverlayGeometry:
    """The leaves the PVS lets the point's leaf see, as their bounding boxes (conservative boxes of
    the cells); the point's own leaf in HERE_COLOR.  Empty when the level has no PVS or the point
    is in solid or outside."""
    from ..core.runtime.pvs import has_vis, visibility

    if not has_vis(level):
        return OverlayGeometry()
    p = np.asarray(point, dtype=np.float64).reshape(1, 3)
    vis = visibility(level)
    if vis.clusters_of_points(p)[0] < 0:  # in solid or outside the map: no cell to see from
        return OverlayGeometry()
    seen = np.flatnonzero(vis.visible_leaf_mask(p)[0])
    here = int(level.point_tree().locate(p)[0][0])
    tris, colors, leaves = [], [], []
    for leaf in seen.tolist():
        t = fan(box_faces(level.leaf_bounds[leaf]))
        tris.append(t)
        leaves.append(np.full(len(t), leaf))
        colors.append(np.tile(HERE_COLOR if leaf == here else SEEN_COLOR, (3 * len(t), 1)))
    return OverlayGeometry(np.concatenate(tris).reshape(-1, 3).astype(np.float32),
                           np.concatenate(colors).astype(np.float32), np.concatenate(leaves))

