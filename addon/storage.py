"""The bake saved with the .blend: the native .bbk bytes as one custom property of the scene.

Why a scene property holding the raw bytes, and not a text datablock with base64:

* It goes where the scene goes: each scene of a file has its own bake, and appending or linking a
  scene brings its bake along.  A text datablock is file-wide and would need a naming scheme.
* Undo covers it: scene ID properties are part of Blender's undo memory, so Ctrl+Z after a bake
  brings back the previous bake (or none) together with everything else.
* Baking again replaces it whole, in one assignment, only after the new bake has succeeded: there
  is never half a bake, and a failed or cancelled bake leaves the previous one untouched.
* The bytes are the exported file format (docs/FORMAT.md), checksummed and validated on reading,
  so a damaged .blend gives a clear LevelFormatError rather than a wrong level.  Blender stores
  byte strings in ID properties as they are (no base64 growth); a text datablock would invite
  users to edit it and would make the text editor crawl on a megabyte line.

Reading decodes the bytes once and caches the CompiledLevel by the bytes' hash, so the draw
handler and the operators can ask for the level on every redraw.
"""

import hashlib

from ..core.runtime.level import CompiledLevel
from ..exporters.native import level_from_bytes, level_to_bytes

BAKE_KEY = "brushbake_bake"
"""Scene custom property holding the .bbk bytes of the current bake."""

_cache: dict[str, CompiledLevel] = {}
_CACHE_SIZE = 4


def has_bake(scene) -> bool:
    """Whether the scene holds a bake."""
    return BAKE_KEY in scene.keys()


def bake_bytes(scene) -> bytes | None:
    """The stored .bbk bytes, or None."""
    if not has_bake(scene):
        return None
    return bytes(scene[BAKE_KEY])


def bake_key(scene) -> str | None:
    """A short fingerprint of the stored bake (changes whenever the bake does), or None."""
    data = bake_bytes(scene)
    return None if data is None else hashlib.sha1(data).hexdigest()


def store_level(scene, level: CompiledLevel) -> bytes:
    """Replace the scene's bake with `level`, whole.  Returns the stored bytes."""
    data = level_to_bytes(level)  # may raise (a compiler bug): then nothing is replaced
    # Delete first: Blender 5.0 assigning bytes over an existing byte-string property copies only
    # up to the first NUL byte (a fresh property keeps them all).
    if BAKE_KEY in scene.keys():
        del scene[BAKE_KEY]
    scene[BAKE_KEY] = data
    if bytes(scene[BAKE_KEY]) != data:
        raise RuntimeError("Blender did not store the bake's bytes unchanged")
    return data


def load_level(scene) -> CompiledLevel | None:
    """The scene's bake as a CompiledLevel (cached), or None.  Raises LevelFormatError if damaged."""
    data = bake_bytes(scene)
    if data is None:
        return None
    key = hashlib.sha1(data).hexdigest()
    level = _cache.get(key)
    if level is None:
        level = level_from_bytes(data, source_name=f"the bake stored in scene '{scene.name}'")
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        _cache[key] = level
    return level


def clear(scene) -> None:
    """Remove the scene's bake."""
    if has_bake(scene):
        del scene[BAKE_KEY]
