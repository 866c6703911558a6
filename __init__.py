"""brushbake: compile brush-built game levels into collision, visibility and light data.

As a Blender extension this module's register()/unregister() hand over to addon/.  Headless,
`import brushbake` needs only NumPy: nothing here imports bpy until register() is called.
"""

from .core.version import __version__  # noqa: F401  (the one home: core/version.py)


def register():
    from .addon import register as _register

    _register()


def unregister():
    from .addon import unregister as _unregister

    _unregister()
