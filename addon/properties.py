"""Settings that brushbake remembers per scene.

One PropertyGroup hangs off every scene as ``scene.brushbake``, so a level's bake settings travel
with its .blend file and each scene in a file can target a different output.  Later issues add hull
sizes, lightmap options and the like here; panels and operators read them through
``context.scene.brushbake`` and never keep settings of their own.
"""

# No `from __future__ import annotations` in addon/: Blender reads property definitions from class
# annotations, and postponed evaluation would hand it strings instead of property objects.
import bpy
from bpy.props import PointerProperty, StringProperty
from bpy.types import PropertyGroup


# Blender 4.5 marks a '//' (blend-relative) path as invalid unless the property opts in, and older
# versions reject the option by name: ask for it only where it exists.
_BLEND_RELATIVE_PATH: set[str] = (
    {"PATH_SUPPORTS_BLEND_RELATIVE"} if bpy.app.version >= (4, 5, 0) else set()
)


class BRUSHBAKE_PG_settings(PropertyGroup):
    """Per-scene bake settings (``bpy.types.Scene.brushbake``)."""

    output_path: StringProperty(  # type: ignore[valid-type]  # bpy annotations are property factories
        name="Output",
        description=(
            "File the compiled level is written to. "
            "A path starting with // is relative to the .blend file"
        ),
        default="//level.bbk",
        subtype="FILE_PATH",
        options=_BLEND_RELATIVE_PATH,
    )


classes: tuple[type, ...] = (BRUSHBAKE_PG_settings,)
"""Classes of this module in registration order (unregistered in reverse)."""


def register_scene_pointer() -> None:
    """Attach the settings to every scene.  Call after BRUSHBAKE_PG_settings is registered."""
    bpy.types.Scene.brushbake = PointerProperty(type=BRUSHBAKE_PG_settings)


def unregister_scene_pointer() -> None:
    """Detach the settings from scenes.  Call before BRUSHBAKE_PG_settings is unregistered.

    Values saved in .blend files survive as ID properties and come back on the next register.
    """
    del bpy.types.Scene.brushbake
