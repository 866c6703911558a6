"""The live leak check: with it on, every edit of a structural brush or a marker checks the level
for leaks again and draws the chain (or clears it), without pressing Bake.

The check is the core's LeakWatch (core/compile/vis/leak_watch.py): the structural brushes only,
the exact seal, each grid cell's subtree kept between checks so that an edit rebuilds only the
cells it reaches.  Here the Blender half keeps the same economy: a brush is converted from its
mesh again only when its matrix or its vertices changed (a key of their bytes), and the check runs
once the edits pause (a timer DEBOUNCE_S after the last depsgraph update that moved something the
check reads), not at every step of a drag.

What it reads is what Bake reads for a leak: the objects of the bake's source (the chosen
collection, or every object of the scene when baking the selection: the selection changes as the
designer edits), structural brushes, inside markers, and the lights when Light is on.  A brush
that is not a convex solid stops the check with the core's message in the panel's status.
"""

from __future__ import annotations

import hashlib
import time

import bpy
import numpy as np
from bpy.app.handlers import persistent

from ..core.compile.vis.leak_watch import LeakWatch
from ..core.errors import BrushbakeError
from ..core.model.scene import Marker, Scene
from . import bridge, visibility

#: seconds after the last edit before the check runs
DEBOUNCE_S = 0.25
#: the roles whose objects the check reads
WATCHED_ROLES = frozenset({"STRUCTURAL", "INSIDE_MARKER"})

_watches: dict[str, LeakWatch] = {}  # per scene name
_brushes: dict[str, tuple[bytes, object]] = {}  # per object name: (key, core Brush)
_pending: set[str] = set()  # scenes with edits not checked yet
_counts: dict[str, int] = {}  # per scene: how many watched objects it had at the last look


def watched_objects(scene) -> list:
    """Structural brushes and inside markers of the bake's source, in the bake's order."""
    settings = scene.brushbake
    if settings.source == "COLLECTION" and settings.collection is not None:
        objects = settings.collection.all_objects
    else:
        objects = scene.objects
    return bridge.sort_objects([o for o in objects if o.brushbake.role in WATCHED_ROLES])


def object_key(obj) -> bytes:
    """The bytes a brush's conversion depends on: its matrix and its mesh's vertices."""
    h = hashlib.blake2b(digest_size=16)
    h.update(np.array(obj.matrix_world, dtype=np.float64).tobytes())
    mesh = obj.data
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    h.update(co.tobytes())
    h.update(str(len(mesh.polygons)).encode())
    return h.digest()


def structural_scene(scene) -> Scene:
    """The core scene a leak check reads, converting only brushes whose key changed."""
    settings = scene.brushbake
    core = Scene(name=scene.name, settings=bridge.core_settings(settings))
    seen = set()
    for obj in watched_objects(scene):
        if obj.brushbake.role == "INSIDE_MARKER":
            position = tuple(float(v) for v in obj.matrix_world.translation)
            core.markers.append(Marker(obj.name, str(obj.get(bridge.KIND_KEY, "inside")), position))
            continue
        if obj.type != "MESH":
            continue
        key = object_key(obj)
        cached = _brushes.get(obj.name)
        if cached is None or cached[0] != key:
            cached = _brushes[obj.name] = (key, bridge.brush_from_object(obj))
        seen.add(obj.name)
        core.brushes.append(cached[1])
    for name in [n for n in _brushes if n not in seen]:
        del _brushes[name]
    if settings.use_light:  # Bake counts the lights as inside points when it bakes light
        from .lightmap import scene_lights

        core.lights.extend(scene_lights(scene, []))
    return core


def run_check(scene):
    """Check now: draw the chain of a leak or clear it; the verdict and the seconds go to the
    panel's status.  Returns the LeakReport, or None when the scene cannot be checked (its status
    says why)."""
    _pending.discard(scene.name)
    t0 = time.perf_counter()
    try:
        core = structural_scene(scene)
        if not core.brushes:
            visibility.clear_leak(scene)
            scene.brushbake.status = "Live leak check: no structural brush to check"
            return None
        size = min(LeakWatch.REGION_SIZE, scene.brushbake.region_size or LeakWatch.REGION_SIZE)
        watch = _watches.get(scene.name)
        if watch is None or watch.region_size != size:  # the finer of the bake's cells and its own
            watch = _watches[scene.name] = LeakWatch(size)
        report = watch.check(core)
    except BrushbakeError as err:
        scene.brushbake.status = f"Live leak check stopped: {err}"
        return None
    seconds = time.perf_counter() - t0
    if report.leaks:
        visibility.show_leak(scene, report.chain, report.hole_brush)
        where = report.hole_position
        hole = "" if where is None else " near ({:.2f}, {:.2f}, {:.2f})".format(*where)
        scene.brushbake.status = f"Live leak check: LEAK from {report.entity}{hole} ({seconds:.2f} s)"
    else:
        visibility.clear_leak(scene)
        scene.brushbake.status = f"Live leak check: sealed ({seconds:.2f} s)"
    return report


def pending(scene) -> bool:
    """An edit the check has not seen yet (the timer will run it)."""
    return scene.name in _pending


@persistent
def on_depsgraph_update(scene, depsgraph) -> None:
    """Mark the scene when something the check reads moved, appeared or went; start the timer."""
    settings = getattr(scene, "brushbake", None)
    if settings is None or not settings.live_leak_check:
        return
    touched = False
    for update in depsgraph.updates:
        obj = update.id.original if isinstance(update.id, bpy.types.Object) else None
        if obj is not None and obj.name != visibility.LEAK_OBJECT and obj.brushbake.role in WATCHED_ROLES \
                and (update.is_updated_transform or update.is_updated_geometry):
            touched = True
            break
    count = sum(1 for o in scene.objects if o.brushbake.role in WATCHED_ROLES)
    if count != _counts.get(scene.name):  # an object added, deleted or given a role
        _counts[scene.name] = count
        touched = True
    if touched and scene.name not in _pending:
        _pending.add(scene.name)
        name = scene.name
        bpy.app.timers.register(lambda: _on_timer(name), first_interval=DEBOUNCE_S)


def _on_timer(scene_name: str):
    scene = bpy.data.scenes.get(scene_name)
    settings = getattr(scene, "brushbake", None)  # None once the add-on is switched off
    if settings is not None and scene_name in _pending and settings.live_leak_check:
        run_check(scene)
    return None  # once


def on_toggle(settings, context) -> None:
    """Switched on: check at once.  Switched off: forget the scene's cells; the drawing stays."""
    scene = context.scene
    if settings.live_leak_check:
        _counts[scene.name] = sum(1 for o in scene.objects if o.brushbake.role in WATCHED_ROLES)
        run_check(scene)
    else:
        _watches.pop(scene.name, None)
        _pending.discard(scene.name)


def register_handler() -> None:
    if on_depsgraph_update not in bpy.app.handlers.depsgraph_update_post:
        bpy.app.handlers.depsgraph_update_post.append(on_depsgraph_update)


def unregister_handler() -> None:
    while on_depsgraph_update in bpy.app.handlers.depsgraph_update_post:
        bpy.app.handlers.depsgraph_update_post.remove(on_depsgraph_update)
    _watches.clear()
    _brushes.clear()
    _pending.clear()
    _counts.clear()
