"""Settings that brushbake remembers: per scene (``scene.brushbake``) and per object (``object.brushbake``).

One PropertyGroup hangs off every scene, so a level's bake settings travel with its .blend file and
each scene in a file can target a different output.  Per object there is only the role: what the
object is for in the level.  Panels and operators read these and never keep settings of their own.
The compiled bake itself is not a property here: addon/storage.py keeps it (raw .bbk bytes on the
scene) so that it is replaced whole and covered by undo.
"""

# No `from __future__ import annotations` in addon/: Blender reads property definitions from class
# annotations, and postponed evaluation would hand it strings instead of property objects.
import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)
from bpy.types import PropertyGroup

from ..core.model.hulls import PRESETS
from ..core.model.setting_specs import SPECS
from . import overlays

# Blender 4.5 marks a '//' (blend-relative) path as invalid unless the property opts in, and older
# versions reject the option by name: ask for it only where it exists.
_BLEND_RELATIVE_PATH: set[str] = (
    {"PATH_SUPPORTS_BLEND_RELATIVE"} if bpy.app.version >= (4, 5, 0) else set()
)

#: Object roles: (identifier, label, description).  The identifiers are stored in .blend files.
ROLES = (
    ("STRUCTURAL", "Structural", "Brush that collides, seals the world and splits the tree first"),
    ("DETAIL", "Detail", "Brush that collides but neither seals nor splits the structural tree"),
    ("CLIP", "Clip", "Collision for box hulls only: characters stop, the point hull passes"),
    ("NONSOLID", "Non-solid", "Brush that never collides (water, triggers, hints)"),
    ("MOVER", "Mover", "Brush of a moving entity (door, platform): kept, not compiled yet"),
    ("INSIDE_MARKER", "Inside marker", "A point known to be inside the level (player start, leak checks)"),
    ("IGNORE", "Ignored", "Not part of the level: never baked (preview objects, references)"),
)


#: hull presets offered by the Add Hull button, in a fixed order (the aliases stand/crouch left out)
PRESET_ITEMS = tuple(
    (name, name.replace("_", " "), f"{name}: mins {PRESETS[name][0]}, maxs {PRESETS[name][1]} m")
    for name in ("q3_stand", "q3_crouch", "q1_player", "q1_large", "onion_stand", "onion_crouch")
)

OVERLAYS = (
    ("LEAVES", "Leaves", "Leaf cells of the tree for the chosen hull, red where solid"),
    ("HULL_SURFACE", "Hull surface", "The expanded surface the chosen hull's reference point collides with"),
    ("BEVELS", "Bevel planes", "Where the bevel planes for plane shifting touch the solid cells"),
    ("TRACE", "Last trace", "The last trace from the 3D cursor, its hit point and normal"),
    ("VISIBLE", "Seen from cursor", "The leaves the PVS lets the 3D cursor's leaf see (bake with Visibility)"),
    ("SLICES", "Crowd slices", "Where avatars can stand (green, by slice) and where they cannot (red); bake with "
               "Crowd slices"),
    ("CAMERA", "Camera view", "The faces the active camera (or the viewport's view) draws in the chosen culling "
               "mode, and its frustum (bake with Visibility for pvs and portal)"),
)

#: camera culling modes (core/runtime/cull.py, docs/CAMERA.md)
CULL_MODES = (
    ("pvs", "PVS", "The clusters in the PVS row of the camera's cluster"),
    ("frustum", "Frustum", "Those whose leaf bounds meet the view frustum"),
    ("portal", "Portal", "Those the portal walk reaches, the view narrowed at each portal"),
)


def _redraw_overlay(self, context) -> None:
    overlays.settings_changed(context)


class BRUSHBAKE_PG_hull(PropertyGroup):
    """One box hull: mins and maxs relative to the character's reference point (metres)."""

    name: StringProperty(name="Name", default="hull")  # type: ignore[valid-type]
    mins: FloatVectorProperty(  # type: ignore[valid-type]
        name="Mins", size=3, subtype="XYZ", unit="LENGTH", default=(-0.5, -0.5, -1.0), max=0.0
    )
    maxs: FloatVectorProperty(  # type: ignore[valid-type]
        name="Maxs", size=3, subtype="XYZ", unit="LENGTH", default=(0.5, 0.5, 1.0), min=0.0
    )


def _live_toggle(settings, context) -> None:
    from . import live_leaks  # the check's module imports the bridge; properties are imported first

    live_leaks.on_toggle(settings, context)


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
    # hulls
    hulls: CollectionProperty(type=BRUSHBAKE_PG_hull)  # type: ignore[valid-type]
    active_hull: IntProperty(name="Active hull", default=0, min=0)  # type: ignore[valid-type]
    hull_preset: EnumProperty(  # type: ignore[valid-type]
        name="Preset", items=PRESET_ITEMS, default="q3_stand", description="Size of the next hull added"
    )
    # what to bake
    source: EnumProperty(  # type: ignore[valid-type]
        name="Bake",
        items=(("SELECTED", "Selected", "The selected objects"),
               ("COLLECTION", "Collection", "Every object in a collection, with its children")),
        default="SELECTED",
    )
    collection: PointerProperty(type=bpy.types.Collection, name="Collection")  # type: ignore[valid-type]
    # the bake settings (splitter, bevels, vis, slices, light, map scale ...) are made from the
    # table, below the class: setting_properties()
    crowd_avatars: IntProperty(  # type: ignore[valid-type]
        name="Avatars", default=500, min=1, max=10_000_000, description="How many avatars Spawn Crowd places",
    )
    crowd_frames: IntProperty(  # type: ignore[valid-type]
        name="Frames", default=250, min=1, max=1_000_000, description="Frames the crowd walks, one tick a frame",
    )
    crowd_seed: IntProperty(name="Seed", default=0, min=0, description="Seed of the crowd's spawn and turns")  # type: ignore[valid-type]
    cycles_samples: IntProperty(  # type: ignore[valid-type]
        name="Cycles samples", default=64, min=1, max=65536,
        description="Samples per texel when baking Blender's own lighting with Cycles for comparison",
    )
    lightmap_view: EnumProperty(  # type: ignore[valid-type]
        name="Show",
        items=(("BAKED", "Baked", "brushbake's lightmap"),
               ("CYCLES", "Cycles", "Blender's own diffuse lighting baked into the same pages"),
               ("DIFFERENCE", "Difference", "|baked - Cycles| / Cycles per texel")),
        default="BAKED",
    )
    # status of the last bake, shown in the panel (errors as data: the text of the last report)
    status: StringProperty(name="Status", default="")  # type: ignore[valid-type]
    live_leak_check: BoolProperty(  # type: ignore[valid-type]
        name="Live leak check", default=False, update=lambda self, context: _live_toggle(self, context),
        description="Check for leaks again after every edit of a structural brush or marker and draw the "
                    "chain, without baking (structural brushes only, the exact seal)")
    # trace
    trace_hull: StringProperty(name="Trace hull", default="point")  # type: ignore[valid-type]
    trace_distance: FloatProperty(name="Distance", default=100.0, min=0.0, unit="LENGTH")  # type: ignore[valid-type]
    last_trace_valid: BoolProperty(default=False)  # type: ignore[valid-type]
    last_trace_start: FloatVectorProperty(size=3, subtype="XYZ")  # type: ignore[valid-type]
    last_trace_end: FloatVectorProperty(size=3, subtype="XYZ")  # type: ignore[valid-type]
    last_trace_point: FloatVectorProperty(size=3, subtype="XYZ")  # type: ignore[valid-type]
    last_trace_normal: FloatVectorProperty(size=3, subtype="XYZ")  # type: ignore[valid-type]
    last_trace_fraction: FloatProperty(default=1.0)  # type: ignore[valid-type]
    # overlays
    overlay: EnumProperty(name="Overlay", items=OVERLAYS, default="LEAVES", update=_redraw_overlay)  # type: ignore[valid-type]
    overlay_hull: StringProperty(name="Hull", default="point", update=_redraw_overlay)  # type: ignore[valid-type]
    overlay_empty: BoolProperty(  # type: ignore[valid-type]
        name="Empty leaves too", default=False, update=_redraw_overlay,
        description="Draw the empty leaf cells as well (green), not only the solid ones",
    )
    show_overlay: BoolProperty(name="Show in viewport", default=False, update=_redraw_overlay)  # type: ignore[valid-type]
    # camera culling (the 'Camera view' overlay and the sidebar's counts)
    cull_mode: EnumProperty(name="Culling", items=CULL_MODES, default="portal", update=_redraw_overlay)  # type: ignore[valid-type]
    cull_use_view: BoolProperty(  # type: ignore[valid-type]
        name="Viewport view", default=False, update=_redraw_overlay,
        description="Cull for the 3D viewport's own view instead of the scene's active camera",
    )
    camera_stats: StringProperty(name="Camera counts", default="")  # type: ignore[valid-type]


def setting_properties() -> dict:
    """A bpy property for every setting of core/model/setting_specs.py's table, by its add-on
    name: default, min and max (Blender clamps to them), label and tooltip from the table.  A
    setting with a Toggle is a checkbox plus a menu without the toggle's value (Visibility + Method
    for vis).  addon/bridge.py copies them back into core Settings by the same table."""
    props = {}
    for spec in SPECS:
        if spec.prop_name is None:
            continue
        if spec.toggle is not None:
            t = spec.toggle
            props[t.prop] = BoolProperty(name=t.label, default=t.default, description=t.tip)
        common = {"name": spec.label, "default": spec.default, "description": spec.tip_text()}
        if spec.choices:
            off = spec.toggle.off_value if spec.toggle else None
            items = tuple((c.value, c.label, c.tip) for c in spec.choices if c.value != off)
            props[spec.prop_name] = EnumProperty(items=items, **common)
        elif spec.kind is bool:
            props[spec.prop_name] = BoolProperty(**common)
        elif spec.kind is int:
            props[spec.prop_name] = IntProperty(min=int(spec.range.low), max=int(spec.range.high), **common)
        else:
            extra = {"unit": "LENGTH"} if spec.unit == "m" else {}
            if spec.precision is not None:
                extra["precision"] = spec.precision
            props[spec.prop_name] = FloatProperty(min=spec.range.low, max=spec.range.high, **extra, **common)
    return props


BRUSHBAKE_PG_settings.__annotations__.update(setting_properties())


class BRUSHBAKE_PG_object(PropertyGroup):
    """Per-object settings (``bpy.types.Object.brushbake``): the role in the level."""

    role: EnumProperty(name="Role", items=ROLES, default="STRUCTURAL")  # type: ignore[valid-type]


classes: tuple[type, ...] = (BRUSHBAKE_PG_hull, BRUSHBAKE_PG_settings, BRUSHBAKE_PG_object)
"""Classes of this module in registration order (unregistered in reverse)."""


def register_scene_pointer() -> None:
    """Attach the settings to every scene and object.  Call after the groups are registered."""
    bpy.types.Scene.brushbake = PointerProperty(type=BRUSHBAKE_PG_settings)
    bpy.types.Object.brushbake = PointerProperty(type=BRUSHBAKE_PG_object)


def unregister_scene_pointer() -> None:
    """Detach the settings.  Call before the groups are unregistered.

    Values saved in .blend files survive as ID properties and come back on the next register.
    """
    del bpy.types.Object.brushbake
    del bpy.types.Scene.brushbake
