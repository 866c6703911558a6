"""Sidebar panels in the 3D viewport (N panel, tab "brushbake"), in the order of the workflow:
hulls -> roles -> bake -> previews -> export.

Every panel mixes in :class:`BrushbakePanel`, which carries the space, region and tab, so a new
panel is a label and a ``draw``.  Sub-panels set ``bl_parent_id = "BRUSHBAKE_PT_main"``; later
issues (visibility, light, crowds) add theirs the same way, between Previews and Export.
"""

import bpy
from bpy.types import Context, Panel, UIList

from ..core.native_lib import backend_report
from ..core.version import __version__
from . import storage


class BrushbakePanel:
    """Mixin for every brushbake panel: where it lives.  Not registered itself."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "brushbake"


class BrushbakeSubPanel(BrushbakePanel):
    bl_parent_id = "BRUSHBAKE_PT_main"


class BRUSHBAKE_UL_hulls(UIList):
    """One row per hull: its name and size."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index=0):
        row = layout.row(align=True)
        row.prop(item, "name", text="", emboss=False, icon="MESH_CUBE")
        size = [hi - lo for lo, hi in zip(item.mins, item.maxs)]
        row.label(text=" x ".join(f"{v:.2f}" for v in size))


class BRUSHBAKE_PT_main(BrushbakePanel, Panel):
    """Top panel: what is installed and the state of the scene's bake."""

    bl_idname = "BRUSHBAKE_PT_main"
    bl_label = "brushbake"

    def draw(self, context: Context) -> None:
        layout = self.layout
        settings = context.scene.brushbake
        layout.label(text=f"brushbake {__version__}")
        layout.label(text="Compile brushes into collision and visibility data", icon="INFO")
        native = backend_report()  # which library the light's rays and the camera queries run on, and why
        layout.label(text=f"Queries: {native.name}", icon="CHECKMARK" if native.native else "INFO")
        layout.label(text=native.why)
        if settings.status:
            layout.label(text=settings.status, icon="ERROR" if settings.status.startswith("Error") else "CHECKMARK")


class BRUSHBAKE_PT_hulls(BrushbakeSubPanel, Panel):
    bl_idname = "BRUSHBAKE_PT_hulls"
    bl_label = "Hulls"

    def draw(self, context: Context) -> None:
        layout = self.layout
        settings = context.scene.brushbake
        row = layout.row()
        row.template_list("BRUSHBAKE_UL_hulls", "", settings, "hulls", settings, "active_hull", rows=3)
        col = row.column(align=True)
        col.operator("brushbake.hull_add", icon="ADD", text="")
        col.operator("brushbake.hull_remove", icon="REMOVE", text="")
        layout.prop(settings, "hull_preset")
        if 0 <= settings.active_hull < len(settings.hulls):
            hull = settings.hulls[settings.active_hull]
            col = layout.column(align=True)
            col.prop(hull, "mins")
            col.prop(hull, "maxs")
        layout.label(text="The point hull is always baked", icon="DOT")


class BRUSHBAKE_PT_roles(BrushbakeSubPanel, Panel):
    bl_idname = "BRUSHBAKE_PT_roles"
    bl_label = "Roles"

    def draw(self, context: Context) -> None:
        layout = self.layout
        obj = context.active_object
        if obj is None:
            layout.label(text="No active object")
        else:
            layout.prop(obj.brushbake, "role", text=obj.name)
        layout.operator_menu_enum("brushbake.set_role", "role", text="Set Role of Selected")


class BRUSHBAKE_PT_bake(BrushbakeSubPanel, Panel):
    bl_idname = "BRUSHBAKE_PT_bake"
    bl_label = "Bake"

    def draw(self, context: Context) -> None:
        layout = self.layout
        settings = context.scene.brushbake
        layout.prop(settings, "source", expand=True)
        if settings.source == "COLLECTION":
            layout.prop(settings, "collection")
        col = layout.column(align=True)
        col.prop(settings, "splitter")
        col.prop(settings, "split_weight")
        col.prop(settings, "max_candidates")
        if settings.splitter == "thesis":
            col.prop(settings, "min_relation")
            col.prop(settings, "relation_scale")
        col.prop(settings, "max_score_faces")
        col.prop(settings, "region_size")
        col.prop(settings, "onion_map_trees")
        row = layout.row(align=True)
        row.prop(settings, "use_bevels")
        sub = row.row()
        sub.enabled = settings.use_bevels
        sub.prop(settings, "bevel_angle")
        row = layout.row(align=True)
        row.prop(settings, "use_vis")
        sub = row.row(align=True)
        sub.enabled = settings.use_vis
        sub.prop(settings, "vis_mode", text="")
        sub.prop(settings, "allow_leak")
        sub = layout.row()
        sub.enabled = settings.use_vis
        sub.prop(settings, "seal")
        sub.prop(settings, "fill")
        layout.prop(settings, "use_slices")
        col = layout.column(align=True)
        col.enabled = settings.use_slices
        row = col.row(align=True)
        row.prop(settings, "slice_width")
        row.prop(settings, "slice_height")
        row = col.row(align=True)
        row.prop(settings, "slice_step")
        row.prop(settings, "slice_cell")
        col.prop(settings, "slice_resolution")
        row = layout.row(align=True)
        row.prop(settings, "use_light")
        sub = row.row(align=True)
        sub.enabled = settings.use_light
        sub.prop(settings, "luxel")
        sub.prop(settings, "light_bounces")
        layout.operator("brushbake.bake", icon="MOD_BUILD")
        layout.prop(settings, "live_leak_check")
        if bpy.data.objects.get("brushbake leak") is not None:
            layout.operator("brushbake.frame_leak", icon="ERROR")
        layout.operator("brushbake.import_map", icon="IMPORT")
        layout.label(text="Bake stored with the scene" if storage.has_bake(context.scene) else "No bake yet")


class BRUSHBAKE_PT_previews(BrushbakeSubPanel, Panel):
    bl_idname = "BRUSHBAKE_PT_previews"
    bl_label = "Previews"

    def draw(self, context: Context) -> None:
        layout = self.layout
        settings = context.scene.brushbake
        layout.prop(settings, "overlay")
        if settings.overlay in ("LEAVES", "HULL_SURFACE"):
            layout.prop(settings, "overlay_hull")
        if settings.overlay == "LEAVES":
            layout.prop(settings, "overlay_empty")
        layout.prop(settings, "show_overlay", icon="OVERLAY")
        layout.operator("brushbake.make_preview", icon="MESH_DATA")
        box = layout.box()
        box.prop(settings, "trace_hull", text="Hull or shape")
        box.prop(settings, "trace_distance")
        box.operator("brushbake.trace", icon="CURSOR")
        box = layout.box()
        row = box.row(align=True)
        row.prop(settings, "crowd_avatars")
        row.prop(settings, "crowd_frames")
        box.prop(settings, "crowd_seed")
        box.operator("brushbake.spawn_crowd", icon="COMMUNITY")


class BRUSHBAKE_PT_light(BrushbakeSubPanel, Panel):
    bl_idname = "BRUSHBAKE_PT_light"
    bl_label = "Light"

    def draw(self, context: Context) -> None:
        layout = self.layout
        settings = context.scene.brushbake
        col = layout.column(align=True)
        col.prop(settings, "use_light")
        col.prop(settings, "luxel")
        col.prop(settings, "patch")
        col.prop(settings, "light_bounces")
        col.prop(settings, "reflectance")
        col.prop(settings, "light_threshold")
        col.prop(settings, "light_samples")
        col.prop(settings, "luxel_samples")
        col.prop(settings, "shoot_fraction")
        layout.operator("brushbake.bake", text="Bake Light", icon="LIGHT_SUN")
        layout.prop(settings, "lightmap_view", expand=True)
        layout.operator("brushbake.show_lightmap", icon="IMAGE_DATA")
        row = layout.row(align=True)
        row.prop(settings, "cycles_samples")
        row.operator("brushbake.bake_cycles", icon="RENDER_STILL")


class BRUSHBAKE_PT_camera(BrushbakeSubPanel, Panel):
    """What the active camera (or the viewport's view) draws by each culling mode, live."""

    bl_idname = "BRUSHBAKE_PT_camera"
    bl_label = "Camera Culling"

    def draw(self, context: Context) -> None:
        from . import camera_view

        layout = self.layout
        settings = context.scene.brushbake
        layout.prop(settings, "cull_mode", expand=True)
        layout.prop(settings, "cull_use_view")
        col = layout.column(align=True)
        if not storage.has_bake(context.scene):
            col.label(text="No bake yet")
        else:
            camera, why = camera_view.current_camera(context, settings.cull_use_view)
            if camera is None:
                col.label(text=f"Nothing to cull: {why}")
            else:
                try:
                    level = storage.load_level(context.scene)
                    counts = camera_view.cull_counts(level, camera, key=storage.bake_key(context.scene))
                    for line in camera_view.counts_text(counts):
                        col.label(text=line)
                except Exception as err:  # a damaged bake must not break the sidebar
                    col.label(text=f"Error: {err}", icon="ERROR")
        layout.operator("brushbake.camera_stats", icon="CAMERA_DATA")
        if settings.camera_stats:
            layout.label(text=settings.camera_stats)


class BRUSHBAKE_PT_export(BrushbakeSubPanel, Panel):
    bl_idname = "BRUSHBAKE_PT_export"
    bl_label = "Export"

    def draw(self, context: Context) -> None:
        layout = self.layout
        layout.prop(context.scene.brushbake, "output_path")
        row = layout.row(align=True)
        row.operator("brushbake.export", text="Export .bbk", icon="EXPORT").format = "NATIVE"
        row.operator("brushbake.export", text="Export JSON").format = "JSON"


classes: tuple[type, ...] = (
    BRUSHBAKE_UL_hulls,
    BRUSHBAKE_PT_main,
    BRUSHBAKE_PT_hulls,
    BRUSHBAKE_PT_roles,
    BRUSHBAKE_PT_bake,
    BRUSHBAKE_PT_previews,
    BRUSHBAKE_PT_light,
    BRUSHBAKE_PT_camera,
    BRUSHBAKE_PT_export,
)
"""Classes of this module in registration order: parents before their sub-panels."""
