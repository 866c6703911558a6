"""Crowds in Blender (issue 13): the slice overlay's geometry and a crowd played on the timeline.

:func:`slices_overlay` draws, from a bake with crowd slices, every place an avatar can stand as a
quad at its ground height (green, a shade per kept slice) and every step between neighbouring
cells that the slices refuse (walls, ledges, ceilings too low) as a red line on the cell's edge,
so a designer sees where avatars can and cannot go.

:func:`spawn_crowd` makes a point cloud object (one point per avatar, at its feet) and the
frame-change handler :func:`on_frame` moves it: frame `start + t` shows the crowd after t ticks of
core/runtime/crowd.py's Crowd.  The walk is seeded, so any frame can be reached: forward by ticking
the kept crowd, backward by replaying from the seed.  Everything here but the object and the handler
is plain NumPy, testable headless.
"""

import bpy
import numpy as np
from bpy.app.handlers import persistent

from ..core.runtime.crowd import DIRECTIONS, Crowd, legal_steps, standing_spots
from .overlay_geometry import OverlayGeometry

#: the point cloud object a spawned crowd plays on
CROWD_OBJECT = "brushbake crowd"
#: most quads the slice overlay draws (a big grid at a fine cell has millions of places)
MAX_OVERLAY_QUADS = 400_000
BLOCKED_COLOR = (0.95, 0.15, 0.1, 1.0)
SLICE_COLORS = ((0.2, 0.85, 0.35, 0.45), (0.15, 0.65, 0.9, 0.45), (0.6, 0.9, 0.2, 0.45), (0.2, 0.9, 0.8, 0.45))

#: the crowd each scene is playing: scene name -> (key, Crowd)
_playing: dict[str, tuple[tuple, Crowd]] = {}


def _quads(centres: np.ndarray, z: np.ndarray, half: float) -> np.ndarray:
    """(N*6, 3) float32 triangles of horizontal squares of half-size `half` at (x, y, z)."""
    corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, -1], [1, 1], [-1, 1]], dtype=np.float64) * half
    xy = centres[:, None, :] + corners[None, :, :]
    zz = np.repeat(z[:, None], 6, axis=1)[:, :, None]
    return np.concatenate([xy, zz], axis=2).reshape(-1, 3).astype(np.float32)


def slices_overlay(level) -> OverlayGeometry:
    """Standing places as green quads (a shade per kept slice; tri_leaf holds the slice of each
    triangle) and, as red lines on the cell edges at the ground's height, every axial step from a
    standing place that Algorithm 1 refuses (walls, ledges, ceilings too low); empty without
    slices."""
    c = level.crowd
    if c is None:
        return OverlayGeometry()
    p = c.padded()
    ground = p.ground
    spots = standing_spots(p, p.height_u)[:MAX_OVERLAY_QUADS]
    cells, slices = spots % p.cells, spots // p.cells
    centres, z = p.centre(cells), c.metres(ground[spots])
    pos = _quads(centres, z + 0.01, 0.45 * c.cell)
    colours = np.asarray(SLICE_COLORS, dtype=np.float32)[slices % len(SLICE_COLORS)].repeat(6, axis=0)
    lines = []
    for d in (0, 2, 4, 6):  # +x, +y, -x, -y
        ok, _, _ = legal_steps(p, spots, spots + p.offsets[d], ground[spots], p.height_u, c.length_units(0) +
                               c.step_units(c.step))
        refused = np.ones(len(spots), dtype=bool)
        refused[ok] = False
        step = DIRECTIONS[d].astype(np.float64) * 0.5 * c.cell
        across = step[::-1] * np.array([-1.0, 1.0])
        mid = centres[refused] + step
        zz = z[refused, None] + 0.02
        lines.append(np.stack([np.column_stack([mid - across, zz]), np.column_stack([mid + across, zz])], axis=1))
    seg = np.concatenate(lines).reshape(-1, 3).astype(np.float32) if lines else np.zeros((0, 3), np.float32)
    return OverlayGeometry(pos, colours, slices.repeat(2), seg,
                           np.tile(np.asarray(BLOCKED_COLOR, dtype=np.float32), (len(seg), 1)))


def crowd_at(level, avatars: int, seed: int, ticks: int, key=None, playing=None) -> Crowd:
    """The crowd of `avatars` (seed) after `ticks` ticks: the playing one moved forward when it is
    the same crowd and not past that tick, else a new one replayed from the seed."""
    crowd = None
    if playing is not None and playing[0] == key and playing[1].ticks <= ticks:
        crowd = playing[1]
    if crowd is None:
        crowd = Crowd(level.crowd, avatars, seed=seed)
    while crowd.ticks < ticks:
        crowd.tick()
    return crowd


def spawn_crowd(scene, level, avatars: int, seed: int, frames: int) -> "bpy.types.Object":
    """A point cloud object CROWD_OBJECT with one point per avatar at its spawn place (replacing any
    previous crowd); the scene plays frames [frame_start, frame_start + frames - 1], one tick a
    frame.  Raises BrushbakeError when the avatars do not fit."""
    crowd = Crowd(level.crowd, avatars, seed=seed)
    clear_crowd(scene)
    mesh = bpy.data.meshes.new(CROWD_OBJECT)
    mesh.vertices.add(avatars)
    mesh.vertices.foreach_set("co", crowd.positions().astype(np.float32).ravel())
    obj = bpy.data.objects.new(CROWD_OBJECT, mesh)
    scene.collection.objects.link(obj)
    view_layer = bpy.context.view_layer
    selected = [o for o in view_layer.objects if o.select_get()]
    active = view_layer.objects.active
    for o in selected:
        o.select_set(False)
    obj.select_set(True)
    view_layer.objects.active = obj
    bpy.ops.object.convert(target="POINTCLOUD")
    obj = view_layer.objects.active
    obj.select_set(False)
    for o in selected:
        if o.name in view_layer.objects:
            o.select_set(True)
    if active is not None and active.name in view_layer.objects:
        view_layer.objects.active = active
    cloud = obj.data
    radius = cloud.attributes.new("radius", "FLOAT", "POINT")
    radius.data.foreach_set("value", np.full(avatars, 0.5 * level.crowd.width, dtype=np.float32))
    obj["brushbake_crowd"] = [avatars, seed, scene.frame_start]
    scene.frame_end = scene.frame_start + frames - 1
    _playing[scene.name] = ((avatars, seed, id(level.crowd)), crowd)
    register_handler()
    return obj


def clear_crowd(scene) -> None:
    obj = bpy.data.objects.get(CROWD_OBJECT)
    if obj is not None:
        data = obj.data
        bpy.data.objects.remove(obj)
        if data is not None and data.users == 0:
            (bpy.data.pointclouds if isinstance(data, bpy.types.PointCloud) else bpy.data.meshes).remove(data)
    _playing.pop(scene.name, None)


def crowd_positions(obj) -> np.ndarray:
    """(N, 3) the points of a crowd object."""
    pos = obj.data.attributes["position"]
    out = np.zeros(3 * len(pos.data), dtype=np.float32)
    pos.data.foreach_get("vector", out)
    return out.reshape(-1, 3)


@persistent
def on_frame(scene, depsgraph=None) -> None:
    """Move the scene's crowd object to the current frame (frame_change_post)."""
    obj = scene.objects.get(CROWD_OBJECT)
    if obj is None or obj.type != "POINTCLOUD" or "brushbake_crowd" not in obj:
        return
    from . import storage

    try:
        level = storage.load_level(scene)
    except Exception:  # noqa: BLE001 -- no bake (or a stale one): leave the crowd where it is
        return
    if level.crowd is None:
        return
    avatars, seed, start = (int(v) for v in obj["brushbake_crowd"])
    if len(obj.data.points) != avatars:
        return
    key = (avatars, seed, id(level.crowd))
    crowd = crowd_at(level, avatars, seed, max(scene.frame_current - start, 0), key, _playing.get(scene.name))
    _playing[scene.name] = (key, crowd)
    obj.data.attributes["position"].data.foreach_set("vector", crowd.positions().astype(np.float32).ravel())
    obj.data.update_tag()


def register_handler() -> None:
    if on_frame not in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.append(on_frame)


def unregister_handler() -> None:
    while on_frame in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.remove(on_frame)
    _playing.clear()
