"""One entry point for scene files: pick the loader by file extension."""

from __future__ import annotations

from pathlib import Path

from ..errors import SceneFormatError
from ..model.scene import Scene
from .mapfile import DEFAULT_SCALE, load_map
from .scene_json import load_scene_json

SCENE_SUFFIXES = (".map", ".json")


def load_scene(path, progress=None, cancel=None, map_scale: float | None = None) -> Scene:
    """Load a .map (Quake, standard or Valve 220) or .json (brushbake scene) file.

    Raises SceneFormatError for an unknown extension; the loaders raise their own typed errors.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".map":
        scene = load_map(p, scale=map_scale or DEFAULT_SCALE, progress=progress, cancel=cancel)
        scene.settings.map_scale = map_scale or DEFAULT_SCALE
        return scene
    if suffix == ".json":
        return load_scene_json(p, progress=progress, cancel=cancel)
    raise SceneFormatError(
        f"has the extension '{p.suffix}', which brushbake does not read.",
        subject=str(p),
        hint="Use a Quake .map file or a brushbake .json scene (see docs/SCENE_FORMAT.md).",
    )
