"""brushbake: compile brush-built game levels into collision, visibility and light data.

As a Blender extension this module's register()/unregister() hand over to addon/.  Headless,
`import brushbake` needs only NumPy: nothing here imports bpy until register() is called.
"""

# Imported as the package (brushbake, or Blender's bl_ext.<repo>.brushbake), re-export the version.
# pytest also imports this file when it sets up the repository's folder as a package of tests; in a
# clone whose folder name is no identifier (brushbake-main/, fresh-clone/) it does so as a plain
# module '__init__' without a parent package, where there is nothing to re-export.
if __package__:
    from .core.version import __version__  # noqa: F401  (the one home: core/version.py)


def register():
    from .addon import register as _register

    _register()


def unregister():
    from .addon import unregister as _unregister

    _unregister()
