"""Sidebar panels in the 3D viewport (N panel, tab "brushbake").

Every panel mixes in :class:`BrushbakePanel`, which carries the space, region and tab, so a new
panel is a label and a ``draw``.  Sub-panels set ``bl_parent_id = "BRUSHBAKE_PT_main"``.
"""

from bpy.types import Context, Panel

from .. import __version__


class BrushbakePanel:
    """Mixin for every brushbake panel: where it lives.  Not registered itself."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "brushbake"


class BRUSHBAKE_PT_main(BrushbakePanel, Panel):
    """Top panel: what is installed and where the bake goes."""

    bl_idname = "BRUSHBAKE_PT_main"
    bl_label = "brushbake"

    def draw(self, context: Context) -> None:
        layout = self.layout
        layout.label(text=f"brushbake {__version__}")
        layout.label(text="Compile brushes into collision and visibility data", icon="INFO")
        layout.prop(context.scene.brushbake, "output_path")


classes: tuple[type, ...] = (BRUSHBAKE_PT_main,)
"""Classes of this module in registration order: parents before their sub-panels."""
