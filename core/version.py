"""The version of brushbake, in one place: the root package and the add-on take it from here.

pyproject.toml and blender_manifest.toml repeat it as plain TOML (Blender and older setuptools read
them without running Python); tests/addon/test_manifest.py checks that all three agree.
"""

__version__ = "0.1.0"
