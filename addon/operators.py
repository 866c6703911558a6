"""Operators: thin shells over plain functions (addon/bake.py, bridge.py, overlays.py, preview.py).

Each operator checks with poll, speaks through self.report (and leaves the last bake message in
``scene.brushbake.status`` for the panel), returns {'CANCELLED'} with the message for a user error
(a BrushbakeError) instead of a traceback, and declares UNDO only when it changes data.
"""

import os
from pathlib import Path

import bpy
import numpy as np
from bpy.props import EnumProperty, FloatProperty, FloatVectorProperty, StringProperty
from bpy.types import Operator
from bpy_extras.io_utils import ExportHelper, ImportHelper

from ..core.errors import BrushbakeError, CancelledError
from ..core.runtime.shift import hit_check, parse_shape
from ..core.runtime.trace import trace_hull
from ..core.units import QUAKE_UNIT
from . import bake, bridge, crowd, overlays, preview, storage, visibility
from .properties import PRESET_ITEMS, ROLES

TRACE_MARKER = "brushbake trace hit"


def _fail(op, scene, err: Exception) -> set[str]:
    """Report a user error, remember it for the panel, cancel."""
    text = str(err)
    op.report({"ERROR"}, text)
    if scene is not None:
        scene.brushbake.status = f"Error: {text}"
    return {"CANCELLED"}


# ------------------------------------------------------------------------------------------------
# hulls and roles


class _NeedsBake:
    """poll for the operators that work on the scene's bake: there must be one."""

    @classmethod
    def poll(cls, context):
        return context.scene is not None and storage.has_bake(context.scene)


class BRUSHBAKE_OT_hull_add(Operator):
    """Add a box hull from a preset to the scene's hull list"""

    bl_idname = "brushbake.hull_add"
    bl_label = "Add Hull"
    bl_options = {"REGISTER", "UNDO"}

    preset: EnumProperty(name="Preset", items=PRESET_ITEMS)  # type: ignore[valid-type]

    def invoke(self, context, event):
        self.preset = context.scene.brushbake.hull_preset
        return self.execute(context)

    def execute(self, context):
        from ..core.model.hulls import PRESETS

        settings = context.scene.brushbake
        names = {h.name for h in settings.hulls}
        name, k = self.preset, 2
        while name in names:
            name, k = f"{self.preset}_{k}", k + 1
        item = settings.hulls.add()
        item.name = name
        item.mins, item.maxs = PRESETS[self.preset]
        settings.active_hull = len(settings.hulls) - 1
        self.report({"INFO"}, f"Added hull '{name}'")
        return {"FINISHED"}


class BRUSHBAKE_OT_hull_remove(Operator):
    """Remove the active hull from the scene's hull list"""

    bl_idname = "brushbake.hull_remove"
    bl_label = "Remove Hull"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        settings = context.scene.brushbake
        return 0 <= settings.active_hull < len(settings.hulls)

    def execute(self, context):
        settings = context.scene.brushbake
        name = settings.hulls[settings.active_hull].name
        settings.hulls.remove(settings.active_hull)
        settings.active_hull = max(0, min(settings.active_hull, len(settings.hulls) - 1))
        self.report({"INFO"}, f"Removed hull '{name}'")
        return {"FINISHED"}


class BRUSHBAKE_OT_set_role(Operator):
    """Give every selected object this role in the level"""

    bl_idname = "brushbake.set_role"
    bl_label = "Set Role"
    bl_options = {"REGISTER", "UNDO"}

    role: EnumProperty(name="Role", items=ROLES)  # type: ignore[valid-type]

    @classmethod
    def poll(cls, context):
        return bool(context.selected_objects)

    def execute(self, context):
        for obj in context.selected_objects:
            obj.brushbake.role = self.role
        self.report({"INFO"}, f"{len(context.selected_objects)} objects are now {self.role.lower()}")
        return {"FINISHED"}


# ------------------------------------------------------------------------------------------------
# bake


class BRUSHBAKE_OT_bake(Operator):
    """Compile the selected brushes (or the chosen collection) into collision trees, stored with the scene.
Progress shows in the status bar; Esc cancels and keeps the previous bake"""

    bl_idname = "brushbake.bake"
    bl_label = "Bake Collision"
    bl_options = {"REGISTER", "UNDO"}

    _job: bake.BakeJob | None = None
    _timer = None

    @classmethod
    def poll(cls, context):
        return context.scene is not None and context.mode == "OBJECT"

    def execute(self, context):
        """Bake on this thread (scripts, tests, and when invoked without a window)."""
        warnings: list[str] = []
        try:
            level = bake.bake(context, warnings=warnings)
        except CancelledError as err:
            self.report({"WARNING"}, str(err))
            context.scene.brushbake.status = str(err)
            return {"CANCELLED"}
        except BrushbakeError as err:
            bake.failed(context.scene, err)
            return _fail(self, context.scene, err)
        self.report({"INFO"}, bake.summary(level))
        for warning in warnings[:5]:
            self.report({"WARNING"}, warning)
        return {"FINISHED"}

    def invoke(self, context, event):
        if context.window is None:
            return self.execute(context)
        try:
            core_scene = bake.gather(context)
        except BrushbakeError as err:
            return _fail(self, context.scene, err)
        for warning in core_scene.warnings[:5]:
            self.report({"WARNING"}, warning)
        self._job = bake.BakeJob(core_scene).start()
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.1, window=context.window)
        wm.progress_begin(0, 100)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        job = self._job
        result = job.step(event.type)
        if result is None:
            if event.type == "TIMER":
                context.window_manager.progress_update(int(100 * job.fraction))
                context.workspace.status_text_set(job.status_text())
            return {"RUNNING_MODAL"} if event.type in ("ESC", "TIMER") else {"PASS_THROUGH"}
        self._finish(context)
        if isinstance(result, CancelledError):
            self.report({"WARNING"}, str(result))
            context.scene.brushbake.status = str(result)
            return {"CANCELLED"}
        if isinstance(result, BrushbakeError):
            bake.failed(context.scene, result)
            return _fail(self, context.scene, result)
        if isinstance(result, Exception):
            raise result
        self.report({"INFO"}, bake.commit(context.scene, result))
        overlays.settings_changed(context)
        return {"FINISHED"}

    def _finish(self, context):
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        context.workspace.status_text_set(None)


class BRUSHBAKE_OT_camera_stats(_NeedsBake, Operator):
    """Count the faces and clusters the active camera (or the viewport's view) draws in each culling mode, and keep the counts"""

    bl_idname = "brushbake.camera_stats"
    bl_label = "Count Camera's Faces"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        from . import camera_view

        scene = context.scene
        camera, why = camera_view.current_camera(context, scene.brushbake.cull_use_view)
        if camera is None:
            self.report({"WARNING"}, f"Nothing to cull: {why}")
            return {"CANCELLED"}
        try:
            counts = camera_view.cull_counts(storage.load_level(scene), camera)
        except BrushbakeError as err:
            return _fail(self, scene, err)
        text = "; ".join(camera_view.counts_text(counts))
        scene.brushbake.camera_stats = text
        self.report({"INFO"}, text)
        return {"FINISHED"}


class BRUSHBAKE_OT_frame_leak(Operator):
    """Select the brush nearest the hole of the last leak and frame it in the viewport"""

    bl_idname = "brushbake.frame_leak"
    bl_label = "Frame Leak"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.scene is not None and context.mode == "OBJECT" and bpy.data.objects.get(visibility.LEAK_OBJECT)

    def execute(self, context):
        obj = visibility.hole_brush_object(context.scene)
        if obj is None:
            self.report({"WARNING"}, "The brush nearest the hole is not in this scene (renamed or deleted?); "
                                     "follow the leak curve instead")
            return {"CANCELLED"}
        for other in context.view_layer.objects:
            other.select_set(False)
        obj.select_set(True)
        context.view_layer.objects.active = obj
        area = next((a for a in getattr(context.screen, "areas", ()) if a.type == "VIEW_3D"), None)
        if area is not None:
            region = next(r for r in area.regions if r.type == "WINDOW")
            with context.temp_override(area=area, region=region):
                bpy.ops.view3d.view_selected()
        self.report({"INFO"}, f"The hole is next to '{obj.name}'")
        return {"FINISHED"}


# ------------------------------------------------------------------------------------------------
# import and export


class BRUSHBAKE_OT_import_map(Operator, ImportHelper):
    """Import a Quake .map file as brush objects with their roles, in a new collection"""

    bl_idname = "brushbake.import_map"
    bl_label = "Import .map"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".map"
    filter_glob: StringProperty(default="*.map", options={"HIDDEN"})  # type: ignore[valid-type]
    scale: FloatProperty(  # type: ignore[valid-type]
        name="Scale", default=QUAKE_UNIT, min=1e-6, precision=5,
        description="Metres per .map unit (1/32: a 56-unit Quake player is 1.75 m tall)",
    )

    def execute(self, context):
        from ..core.formats.mapfile import load_map

        try:
            core_scene = load_map(self.filepath, scale=self.scale)
        except BrushbakeError as err:
            return _fail(self, context.scene, err)
        coll = import_scene(context, core_scene, Path(self.filepath).stem)
        context.scene.brushbake.map_scale = self.scale
        counts = f"{len(core_scene.brushes) + len(core_scene.movers)} brushes, {len(core_scene.markers)} markers"
        self.report({"INFO"}, f"Imported {counts} into '{coll.name}'")
        for warning in core_scene.warnings[:5]:
            self.report({"WARNING"}, warning)
        return {"FINISHED"}


def import_scene(context, core_scene, name: str):
    """Objects for a core scene in a new collection; its brushes selected, ready to bake."""
    coll = bpy.data.collections.new(name)
    context.scene.collection.children.link(coll)
    bridge.objects_from_scene(core_scene, coll)
    if core_scene.hulls:
        bridge.settings_from_scene(core_scene, context.scene.brushbake)
    for obj in context.view_layer.objects:
        obj.select_set(False)
    for obj in coll.objects:
        obj.select_set(obj.type == "MESH" and obj.brushbake.role != "IGNORE")
    if coll.objects:
        context.view_layer.objects.active = coll.objects[0]
    context.scene.brushbake.collection = coll
    return coll


class BRUSHBAKE_OT_export(Operator, ExportHelper):
    """Write the scene's bake to a file: the native .bbk level or a JSON dump"""

    bl_idname = "brushbake.export"
    bl_label = "Export Level"

    filename_ext = ".bbk"
    filter_glob: StringProperty(default="*.bbk;*.json", options={"HIDDEN"})  # type: ignore[valid-type]
    format: EnumProperty(  # type: ignore[valid-type]
        name="Format",
        items=(("NATIVE", "Native (.bbk)", "The documented binary level file (docs/FORMAT.md)"),
               ("JSON", "JSON", "Every array as JSON, for debugging and other tools")),
        default="NATIVE",
    )

    @classmethod
    def poll(cls, context):
        return context.scene is not None and storage.has_bake(context.scene)

    def check(self, context):
        ext = ".json" if self.format == "JSON" else ".bbk"
        path = Path(bpy.path.abspath(self.filepath)) if self.filepath else None
        if path is not None and path.suffix != ext:
            self.filepath = str(path.with_suffix(ext))
            return True
        return False

    def invoke(self, context, event):
        self.filepath = bpy.path.abspath(context.scene.brushbake.output_path)
        if self.format == "JSON":
            self.filepath = str(Path(self.filepath).with_suffix(".json"))
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        from ..exporters.json_dump import write_level_json
        from ..exporters.native import write_level

        path = bpy.path.abspath(self.filepath)
        try:
            level = storage.load_level(context.scene)
            (write_level_json if self.format == "JSON" else write_level)(level, path)
        except BrushbakeError as err:
            return _fail(self, context.scene, err)
        except OSError as err:
            return _fail(self, context.scene, BrushbakeError(
                f"cannot be written ({err.strerror or err}).", subject=path,
                hint="Check that the folder exists and that you may write there."))
        self.report({"INFO"}, f"Wrote {path} ({os.path.getsize(path)} bytes)")
        return {"FINISHED"}


# ------------------------------------------------------------------------------------------------
# trace and previews


def trace(level, start, direction, distance: float, target: str) -> dict:
    """One swept trace from `start` along `direction` for `distance` metres.

    `target` is a hull of the level ('point', 'stand', ...) or, through plane shifting
    (core/runtime/shift.py), a shape such as 'sphere:0.5' or 'box:0.4,0.4,0.9' on the
    beveled tree.  Returns start, end, point, normal, fraction, hit, start_solid, and a note ('' or
    why the answer may be poor: a shape traced on a bake without bevels uses the plain tree).
    """
    direction = np.asarray(direction, dtype=np.float64)
    length = float(np.linalg.norm(direction))
    if length == 0.0 or distance <= 0.0:
        raise BrushbakeError("The trace needs a direction and a positive distance.",
                             hint="Set the distance in the Previews panel.")
    start = np.asarray(start, dtype=np.float64)
    end = start + direction / length * distance
    note = ""
    if target in level.hull_names:
        r = trace_hull(level, start, end, level.hull_names.index(target))
    else:
        spec = target
        if target.startswith("hull:"):  # a points file, '//' relative to the .blend file
            spec = "hull:" + bpy.path.abspath(target[len("hull:"):])
        try:
            shape = parse_shape(spec)
        except OSError as err:
            raise BrushbakeError(f"the points of '{target}' cannot be read ({err.strerror or err}).",
                                 hint="Give hull: a .npy file of (K, 3) points in metres, '//' for "
                                      "the .blend file's folder.") from None
        except ValueError as err:
            raise BrushbakeError(
                f"'{target}' is neither a hull of the bake ({', '.join(level.hull_names)}) nor a shape ({err}).",
                hint="Type a hull name, or sphere:R, cylinder:R,H, box:HX,HY,HZ or hull:POINTS.npy in "
                     "metres.") from None
        r = hit_check(level.bevel_tree(), shape, start, end)
        if not level.has_bevel:
            note = ("; this bake has no bevels, so the shape was traced on the plain tree and may stop "
                    "early near sharp edges (bake with Bevels on)")
    point, normal, fraction, hit, start_solid = r.point, r.normal, r.fraction, r.hit, r.start_solid
    return dict(start=start, end=end, point=np.asarray(point, dtype=np.float64),
                normal=np.asarray(normal, dtype=np.float64), fraction=float(fraction), hit=bool(hit),
                start_solid=bool(start_solid), note=note)


def place_marker(scene, location, normal):
    """Put (or move) the trace marker empty at the hit, its Z axis along the normal."""
    from mathutils import Vector

    obj = bpy.data.objects.get(TRACE_MARKER)
    if obj is None:
        obj = bpy.data.objects.new(TRACE_MARKER, None)
        obj.empty_display_type = "SINGLE_ARROW"
        obj.empty_display_size = 0.5
        obj.brushbake.role = "IGNORE"
    coll = preview.preview_collection(scene)
    if obj.name not in coll.objects:
        coll.objects.link(obj)
    obj.location = tuple(location)
    n = Vector(tuple(normal))
    obj.rotation_euler = (n.to_track_quat("Z", "Y").to_euler() if n.length > 0 else (0.0, 0.0, 0.0))
    return obj


class BRUSHBAKE_OT_trace(_NeedsBake, Operator):
    """Trace from the 3D cursor along the view (or the given direction) for the chosen hull or shape,
and put a marker at the hit"""

    bl_idname = "brushbake.trace"
    bl_label = "Trace from Cursor"
    bl_options = {"REGISTER", "UNDO"}

    direction: FloatVectorProperty(name="Direction", size=3, subtype="DIRECTION", default=(0.0, 0.0, -1.0))  # type: ignore[valid-type]

    def invoke(self, context, event):
        # the view's region: context.region_data in the viewport, the space's region_3d from the sidebar
        region = getattr(context, "region_data", None) or getattr(getattr(context, "space_data", None),
                                                                   "region_3d", None)
        if region is not None:
            from mathutils import Vector

            self.direction = region.view_rotation @ Vector((0.0, 0.0, -1.0))
        return self.execute(context)

    def execute(self, context):
        scene = context.scene
        settings = scene.brushbake
        try:
            level = storage.load_level(scene)
            r = trace(level, tuple(scene.cursor.location), tuple(self.direction), settings.trace_distance,
                      settings.trace_hull)
        except BrushbakeError as err:
            return _fail(self, scene, err)
        settings.last_trace_valid = True
        settings.last_trace_start, settings.last_trace_end = r["start"], r["end"]
        settings.last_trace_point, settings.last_trace_normal = r["point"], r["normal"]
        settings.last_trace_fraction = r["fraction"]
        place_marker(scene, r["point"], r["normal"])
        p, n = r["point"], r["normal"]
        if r["start_solid"]:
            text = f"Trace for '{settings.trace_hull}' starts in solid at ({p[0]:.3f}, {p[1]:.3f}, {p[2]:.3f})"
        elif r["hit"]:
            text = (f"Hit for '{settings.trace_hull}' at ({p[0]:.3f}, {p[1]:.3f}, {p[2]:.3f}), normal "
                    f"({n[0]:.3f}, {n[1]:.3f}, {n[2]:.3f}), time {r['fraction']:.4f}")
        else:
            text = f"No hit for '{settings.trace_hull}' within {settings.trace_distance:g} m"
        text += r["note"]
        self.report({"WARNING"} if r["note"] else {"INFO"}, text)
        settings.status = text
        overlays.settings_changed(context)
        return {"FINISHED"}


class BRUSHBAKE_OT_make_preview(_NeedsBake, Operator):
    """Turn the current overlay into a mesh in the 'brushbake preview' collection, for renders and inspection"""

    bl_idname = "brushbake.make_preview"
    bl_label = "Make Preview Object"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        scene = context.scene
        settings = scene.brushbake
        try:
            level = storage.load_level(scene)
            if settings.overlay in ("LEAVES", "HULL_SURFACE"):
                overlays.hull_index(level, settings.overlay_hull)  # name it if it is not in the bake
            geom = overlays.geometry_for(scene)
        except KeyError as err:
            return _fail(self, scene, BrushbakeError(f"{err.args[0]}.", hint="Choose one of those hulls."))
        except BrushbakeError as err:
            return _fail(self, scene, err)
        obj = preview.make_preview_object(scene, geom, preview.preview_name(settings))
        self.report({"INFO"}, f"'{obj.name}': {geom.num_triangles} triangles, "
                              f"{len(geom.line_positions) // 2} lines in '{preview.COLLECTION}'")
        return {"FINISHED"}


class BRUSHBAKE_OT_spawn_crowd(Operator):
    """Spawn avatars on the bake's crowd slices as a point cloud that walks one step a frame on the timeline"""

    bl_idname = "brushbake.spawn_crowd"
    bl_label = "Spawn Crowd"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.scene is not None and context.mode == "OBJECT" and storage.has_bake(context.scene)

    def execute(self, context):
        scene = context.scene
        settings = scene.brushbake
        try:
            level = storage.load_level(scene)
            if level.crowd is None:
                raise BrushbakeError("The bake has no crowd slices.", hint="Tick Crowd slices and bake again.")
            obj = crowd.spawn_crowd(scene, level, settings.crowd_avatars, settings.crowd_seed, settings.crowd_frames)
        except BrushbakeError as err:
            return _fail(self, scene, err)
        scene.frame_set(scene.frame_start)
        self.report({"INFO"}, f"'{obj.name}': {settings.crowd_avatars} avatars on {level.crowd.kept} slices; "
                              f"play frames {scene.frame_start}-{scene.frame_end}")
        return {"FINISHED"}


class BRUSHBAKE_OT_show_lightmap(_NeedsBake, Operator):
    """Show the baked lightmap (or Cycles' bake of the same pages, or their difference) on a mesh of the
level's faces in the 'brushbake lightmap' collection, through its lightmap UVs"""

    bl_idname = "brushbake.show_lightmap"
    bl_label = "Show Lightmap"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        from . import lightmap

        scene = context.scene
        try:
            level = _light_level(scene)
            obj = lightmap.show_lightmap(scene, level, scene.brushbake.lightmap_view)
        except BrushbakeError as err:
            return _fail(self, scene, err)
        self.report({"INFO"}, f"'{obj.name}': {len(obj.data.polygons)} faces on {len(level.lm_pages)} page(s)")
        return {"FINISHED"}


class BRUSHBAKE_OT_bake_cycles(Operator):
    """Bake Blender's own diffuse lighting (Cycles, the scene's lights) into the lightmap's pages, and the
difference image, to compare with brushbake's bake (slow: Cycles on the CPU)"""

    bl_idname = "brushbake.bake_cycles"
    bl_label = "Bake with Cycles"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return context.scene is not None and storage.has_bake(context.scene) and context.mode == "OBJECT"

    def execute(self, context):
        from ..core.compile.light.lm_compare import relative_rmse
        from . import lightmap

        scene = context.scene
        settings = scene.brushbake
        try:
            level = _light_level(scene)
        except BrushbakeError as err:
            return _fail(self, scene, err)
        emission, note = _emission_of(context, level)
        cycles = lightmap.bake_cycles(scene, level, samples=settings.cycles_samples, bounces=settings.light_bounces,
                                      reflectance=settings.reflectance, emission=emission)
        lightmap.difference_images(level.lm_pages, cycles)
        rmse = relative_rmse(level, level.lm_pages, cycles)
        settings.status = (f"Cycles ({settings.cycles_samples} samples, {settings.light_bounces} bounces) against "
                           f"the bake: relative RMSE {100 * rmse:.1f}% per luxel{note}")
        self.report({"INFO"}, settings.status)
        return {"FINISHED"}


def _emission_of(context, level):
    """(F, 3) radiance of the bake's emitting faces, from the scene's objects as a bake would read
    them now (emissive materials), and a note for the status when they cannot be read."""
    from ..core.compile.light.lightmap import face_emission

    try:
        core_scene = bake.gather(context)
    except BrushbakeError:
        return None, " (emissive materials not read: select the baked brushes to include them)"
    if len(core_scene.brushes) and np.asarray(level.face_brush).size and \
            int(np.asarray(level.face_brush).max()) >= len(core_scene.brushes):
        return None, " (emissive materials not read: the selection is not the baked brushes)"
    return face_emission(core_scene, level, core_scene.settings.map_scale), ""


def _light_level(scene):
    """The stored bake, which must hold a lightmap."""
    level = storage.load_level(scene)
    if level is None or not level.has_light:
        raise BrushbakeError("The stored bake has no lightmap.", hint="Tick Light in the Bake panel and bake again.")
    return level


def menu_import(self, context):
    self.layout.operator(BRUSHBAKE_OT_import_map.bl_idname, text="Quake map for brushbake (.map)")


def menu_export(self, context):
    self.layout.operator(BRUSHBAKE_OT_export.bl_idname, text="brushbake level (.bbk, .json)")


classes: tuple[type, ...] = (
    BRUSHBAKE_OT_hull_add,
    BRUSHBAKE_OT_hull_remove,
    BRUSHBAKE_OT_set_role,
    BRUSHBAKE_OT_bake,
    BRUSHBAKE_OT_import_map,
    BRUSHBAKE_OT_export,
    BRUSHBAKE_OT_trace,
    BRUSHBAKE_OT_make_preview,
    BRUSHBAKE_OT_frame_leak,
    BRUSHBAKE_OT_camera_stats,
    BRUSHBAKE_OT_spawn_crowd,
    BRUSHBAKE_OT_show_lightmap,
    BRUSHBAKE_OT_bake_cycles,
)


def register_menus() -> None:
    bpy.types.TOPBAR_MT_file_import.append(menu_import)
    bpy.types.TOPBAR_MT_file_export.append(menu_export)


def unregister_menus() -> None:
    bpy.types.TOPBAR_MT_file_import.remove(menu_import)
    bpy.types.TOPBAR_MT_file_export.remove(menu_export)
