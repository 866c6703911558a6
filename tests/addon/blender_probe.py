"""Install the brushbake extension zip into a throw-away Blender, enable it, disable it, report.

Run as a script in a fresh Python that has the bpy wheel (tests/addon/test_extension.py does):

    BLENDER_USER_RESOURCES=<empty dir> python blender_probe.py <brushbake-x.y.z.zip>

Blender is loaded here and not in the pytest process because it cannot be unloaded again, keeps
global state between tests and installs into the user's own config unless told otherwise; the
caller points BLENDER_USER_RESOURCES at a temporary directory so nothing of the user's is touched.

The last line of stdout is ``PROBE_RESULT <json>``; everything else is Blender's own chatter.
Steps that fail are recorded in the JSON rather than raised, so the caller's assertion message
shows every check at once.
"""

import json
import sys
import traceback
from typing import Any

RESULT_PREFIX = "PROBE_RESULT "
MODULE = "bl_ext.user_default.brushbake"
PANEL = "BRUSHBAKE_PT_main"


def registered_brushbake_classes(bpy: Any) -> list[str]:
    """Names of every class Blender currently has registered for brushbake (all start BRUSHBAKE_).

    Two places are searched because neither sees everything: ``dir(bpy.types)`` lists panels,
    operators and menus by their bl_idname but not property groups, while walking the Python
    subclasses of ``bpy_struct`` finds property groups too, and ``is_registered`` tells a live class
    from one that was unregistered but not yet garbage-collected.
    """
    names = {name for name in dir(bpy.types) if name.startswith("BRUSHBAKE_")}
    pending = [bpy.types.bpy_struct]
    seen: set[type] = set()
    while pending:
        for sub in pending.pop().__subclasses__():
            if sub in seen:
                continue
            seen.add(sub)
            pending.append(sub)
            if sub.__name__.startswith("BRUSHBAKE_") and getattr(sub, "is_registered", False):
                names.add(sub.__name__)
    return sorted(names)


def scene_has_settings(bpy: Any) -> bool:
    """Whether the Scene type carries the ``brushbake`` pointer property."""
    return "brushbake" in bpy.types.Scene.bl_rna.properties.keys()


def probe(zip_path: str) -> dict[str, Any]:
    """Install, enable, inspect, disable, inspect; return what was seen at each step."""
    import bpy

    result: dict[str, Any] = {"blender": bpy.app.version_string}
    result["user_resources"] = bpy.utils.resource_path("USER")

    install = bpy.ops.extensions.package_install_files(
        filepath=zip_path, repo="user_default", enable_on_install=True
    )
    result["install"] = sorted(install)
    result["enabled"] = MODULE in bpy.context.preferences.addons
    result["classes_enabled"] = registered_brushbake_classes(bpy)
    panel = getattr(bpy.types, PANEL, None)
    result["panel_in_bpy_types"] = panel is not None
    if panel is not None:
        result["panel_location"] = [panel.bl_space_type, panel.bl_region_type, panel.bl_category]
    result["scene_property"] = scene_has_settings(bpy)
    if result["scene_property"]:
        settings = bpy.context.scene.brushbake
        result["output_path_default"] = settings.output_path
        settings.output_path = "//probe.bbk"
        result["output_path_roundtrip"] = settings.output_path == "//probe.bbk"

    disable = bpy.ops.preferences.addon_disable(module=MODULE)
    result["disable"] = sorted(disable)
    result["enabled_after_disable"] = MODULE in bpy.context.preferences.addons
    result["classes_after_disable"] = registered_brushbake_classes(bpy)
    result["scene_property_after_disable"] = scene_has_settings(bpy)
    return result


def main(argv: list[str]) -> int:
    """Run :func:`probe` on argv[1] and print its result as the last stdout line."""
    try:
        result = probe(argv[1])
    except Exception:  # report, don't crash: the caller wants the traceback in its message
        result = {"error": traceback.format_exc()}
    sys.stdout.flush()
    print(RESULT_PREFIX + json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
