"""Everything of brushbake that imports bpy: properties, operators, panels, overlays.

The package root hands register()/unregister() over to this module.  Each submodule exports a
``classes`` tuple; this module registers them in one loop, in dependency order (property groups
before the panels and operators that read them), and unregisters in reverse so Blender never sees a
class whose dependencies have already gone.  To add operators or overlays, write addon/operators.py
or addon/overlays.py with its own ``classes`` and add it to ``_modules`` below.

Nothing outside addon/ may import bpy: core/ and exporters/ run headless.
"""

import bpy

from . import bake, crowd, live_leaks, operators, overlays, panels, properties

_modules = (properties, operators, overlays, panels)
"""Submodules whose ``classes`` are registered, in this order."""

classes: tuple[type, ...] = tuple(cls for module in _modules for cls in module.classes)
"""Every class brushbake registers with Blender, in registration order."""


def register() -> None:
    """Register every class, then attach the per-scene settings (``scene.brushbake``)."""
    use_extension_cache()
    for cls in classes:
        bpy.utils.register_class(cls)
    properties.register_scene_pointer()
    operators.register_menus()
    crowd.register_handler()  # a crowd saved with a .blend plays again after a restart
    live_leaks.register_handler()  # the live leak check follows edits (when switched on)


def use_extension_cache() -> None:
    """A native library built from source goes to Blender's per-extension user folder
    (core/native_lib.py), never into the add-on's own, which may be read-only.  Installed some
    other way (not as an extension) the default cache folder stays."""
    from ..core import native_lib

    try:
        native_lib.set_cache_dir(bpy.utils.extension_path_user(__package__.rpartition(".")[0], path="native"))
    except (ValueError, AttributeError, TypeError):
        native_lib.set_cache_dir(None)


def unregister() -> None:
    """Undo :func:`register` exactly: draw handler, menus, scene pointer, then the classes in reverse."""
    overlays.unregister_handler()
    crowd.unregister_handler()
    live_leaks.unregister_handler()
    bake.forget_caches()
    operators.unregister_menus()
    properties.unregister_scene_pointer()
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
