"""Render the README picture with Cycles on the CPU: the two_rooms sample, ceilings hidden, with a
preview object of where the 'stand' hull's reference point rests (the upward faces of its expanded
surface inside the level, blue) over the grey brushes.

    python sample_scenes/render_readme.py [--out docs/images/blender_two_rooms.png] [--samples 8]
                                          [--size 480x270] [--sample two_rooms]

Run it with a Python that has the bpy wheel (the project's .venv).  Low samples and a small size
keep it to seconds; the picture is a guide, not art.
"""

import argparse
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_blend import SAMPLES, build  # noqa: E402


def grey_material(bpy, name: str, value: float):
    mat = bpy.data.materials.new(name)
    if bpy.app.version < (5, 0, 0):
        mat.use_nodes = True
    bsdf = next(n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Base Color"].default_value = (value, value, value, 1.0)
    bsdf.inputs["Roughness"].default_value = 0.8
    return mat


def stage(bpy, bounds) -> None:
    """Camera above the level looking down at it, a sun, a plain world; ceilings hidden."""
    from mathutils import Vector

    scene = bpy.context.scene
    (x0, y0, z0), (x1, y1, z1) = bounds
    centre = Vector(((x0 + x1) / 2, (y0 + y1) / 2, z0))
    cam = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    cam.data.lens = 30
    cam.location = centre + Vector((0.0, -0.75 * (x1 - x0), 0.9 * (x1 - x0)))
    cam.rotation_euler = (centre - cam.location).to_track_quat("-Z", "Y").to_euler()
    scene.collection.objects.link(cam)
    scene.camera = cam
    sun = bpy.data.objects.new("sun", bpy.data.lights.new("sun", "SUN"))
    sun.data.energy = 3.0
    sun.rotation_euler = (math.radians(35), math.radians(15), math.radians(30))
    scene.collection.objects.link(sun)
    world = bpy.data.worlds.new("world")
    world.color = (0.05, 0.05, 0.06)
    scene.world = world
    wall = grey_material(bpy, "brush", 0.6)
    for obj in scene.objects:
        if obj.type == "MESH" and "brushbake_planes" in obj:
            obj.data.materials.append(wall)
            if "ceiling" in obj.name:
                obj.hide_render = True
        elif obj.type == "LIGHT" and obj.data.type == "POINT":
            obj.data.energy = 200.0


def floor_preview(bpy, level) -> None:
    """Replace the surface preview by its upward faces below the roof: the walkable floors."""
    import numpy as np

    from brushbake.addon import overlays, preview

    geom = overlays.hull_surface_overlay(level, "stand")
    tris = geom.tri_positions.reshape(-1, 3, 3).astype(np.float64)
    normal = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
    up = normal[:, 2] > 0.7 * np.linalg.norm(normal, axis=1)
    # inside the level: straight up from the face, the point hull meets a ceiling (outside: the sky)
    from brushbake.core.runtime.query import segment_hits

    centre = tris.mean(axis=1) + [0.0, 0.0, 0.01]
    inside = segment_hits(level, centre, centre + [0.0, 0.0, 100.0])[:, 0] < 1.0
    keep = np.repeat(up & inside, 3)
    floors = overlays.OverlayGeometry(geom.tri_positions[keep], geom.tri_colors[keep].copy())
    floors.tri_colors[:, 3] = 0.85
    preview.make_preview_object(bpy.context.scene, floors, "brushbake surface stand")


def render(out: Path, samples: int, size: tuple[int, int], sample: str) -> None:
    import bpy

    info = build(SAMPLES[sample])
    from brushbake.addon import storage

    level = storage.load_level(bpy.context.scene)
    floor_preview(bpy, level)
    stage(bpy, level.world_bounds)
    scene = bpy.context.scene
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = False
    scene.render.resolution_x, scene.render.resolution_y = size
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    scene.render.filepath = str(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    bpy.ops.render.render(write_still=True)
    print(f"wrote {out} ({size[0]}x{size[1]}, {samples} samples): {info['status']}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE.parent / "docs" / "images" / "blender_two_rooms.png"))
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--size", default="480x270", help="WIDTHxHEIGHT in pixels")
    parser.add_argument("--sample", default="two_rooms", choices=sorted(SAMPLES))
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.size.lower().split("x"))
    render(Path(args.out), args.samples, (width, height), args.sample)
    return 0


if __name__ == "__main__":
    sys.exit(main())
