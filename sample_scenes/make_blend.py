"""Build demo .blend files from the text samples: brush objects with their roles, the hulls, the
bake stored in the file, and a preview object of the first hull's expanded surface.

    python sample_scenes/make_blend.py [--out FOLDER] [NAME ...]

Run it with a Python that has the bpy wheel (the project's .venv: scripts/setup_env.sh).  NAME is
a sample file's name without extension (two_rooms, garage, ... ; two_rooms_map for two_rooms.map);
default: all of them.  Files go to sample_scenes/blend/ by default (not committed, not in the
extension zip: they are regenerated from the text samples).  Blender's user configuration is not
touched: add-on state lives only in this process.
"""

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLES = {p.stem: p for p in sorted(HERE.glob("*.json"))}
SAMPLES.update({f"{p.stem}_map": p for p in sorted(HERE.glob("*.map"))})


def import_brushbake():
    try:
        import brushbake
    except ImportError:  # run from a checkout without `pip install -e .`
        sys.path.insert(0, str(HERE.parents[1]))
        import brushbake
    return brushbake


def build(path: Path, preview: bool = True) -> dict:
    """Fresh empty file with the sample's objects, baked (and a preview object).  Returns counts."""
    import bpy

    brushbake = import_brushbake()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    if "brushbake" not in bpy.types.Scene.bl_rna.properties:  # registered once per process
        brushbake.register()
    from brushbake.addon import bake, operators, overlays, preview as previews
    from brushbake.core.formats.loaders import load_scene

    core_scene = load_scene(path)
    context = bpy.context
    context.scene.name = path.stem
    coll = operators.import_scene(context, core_scene, path.stem)
    level = bake.bake(context)
    settings = context.scene.brushbake
    if preview and len(level.hull_names) > 1:
        settings.overlay, settings.overlay_hull = "HULL_SURFACE", level.hull_names[1]
        geom = overlays.geometry_for(context.scene)
        previews.make_preview_object(context.scene, geom, previews.preview_name(settings))
    return {"objects": len(coll.objects), "brushes": len(level.brush_names), "hulls": level.hull_names,
            "status": settings.status}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"samples to build (default all: {', '.join(SAMPLES)})")
    parser.add_argument("--out", default=str(HERE / "blend"), help="folder for the .blend files")
    parser.add_argument("--no-preview", action="store_true", help="skip the preview objects")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in SAMPLES]
    if unknown:
        parser.error(f"unknown sample(s) {', '.join(unknown)}; choose from {', '.join(SAMPLES)}")
    import bpy

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    bpy.context.preferences.filepaths.save_version = 0  # no .blend1 backups of regenerated files
    for name in args.names or list(SAMPLES):
        info = build(SAMPLES[name], preview=not args.no_preview)
        target = out / f"{name}.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(target), compress=True)
        print(f"wrote {target}: {info['status']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
