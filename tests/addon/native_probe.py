"""Install a platform's extension zip into a throw-away Blender, bake light and run the camera
queries through the add-on, and report which native library ran and whether its answers are the
NumPy path's (tests/addon/test_extension_native.py; issue 32).

    BLENDER_USER_RESOURCES=<empty dir> python native_probe.py <brushbake-x.y.z-linux_x64.zip>

Run with no C compiler on the PATH and no cache: the library must then be the zip's own wheel.
The last stdout line is ``PROBE_RESULT <json>``.
"""

import importlib
import json
import sys
import traceback

import numpy as np

RESULT_PREFIX = "PROBE_RESULT "
MODULE = "bl_ext.user_default.brushbake"


def box(bpy, name, lo, hi):
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata((signs * (hi - lo) / 2).tolist(), [], faces)
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    obj.location = ((lo + hi) / 2).tolist()
    bpy.context.scene.collection.objects.link(obj)
    return obj


def probe(zip_path: str) -> dict:
    import bpy

    out: dict = {}
    bpy.ops.wm.read_factory_settings(use_empty=True)  # no default cube, camera or light
    out["install"] = sorted(bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default",
                                                                     enable_on_install=True))
    out["enabled"] = MODULE in bpy.context.preferences.addons
    native_lib = importlib.import_module(MODULE + ".core.native_lib")
    camera_view = importlib.import_module(MODULE + ".addon.camera_view")
    storage = importlib.import_module(MODULE + ".addon.storage")
    bake = importlib.import_module(MODULE + ".addon.bake")
    pipeline = importlib.import_module(MODULE + ".core.compile.pipeline")
    cull = importlib.import_module(MODULE + ".core.runtime.cull").cull
    out["cache_dir"] = str(native_lib.cache_dir())
    out["user_dir"] = bpy.utils.extension_path_user(MODULE, path="native")
    out["panel_report"] = native_lib.backend_report().text  # what the panel shows before any bake

    scene = bpy.context.scene
    settings = scene.brushbake
    walls = [box(bpy, "floor", (-0.5, -0.5, -0.5), (13.5, 6.5, 0)), box(bpy, "roof", (-0.5, -0.5, 3), (13.5, 6.5, 3.5)),
             box(bpy, "w", (-0.5, -0.5, 0), (0, 6.5, 3)), box(bpy, "e", (13, -0.5, 0), (13.5, 6.5, 3)),
             box(bpy, "s", (0, -0.5, 0), (13, 0, 3)), box(bpy, "n", (0, 6, 0), (13, 6.5, 3)),
             box(bpy, "wall", (6, 0, 0), (7, 5, 3)), box(bpy, "lintel", (6, 5, 2.5), (7, 6, 3)),
             box(bpy, "block", (2.5, 1.0, 0), (3.5, 2.0, 1.5))]
    lamp = bpy.data.objects.new("lamp", bpy.data.lights.new("lamp", "POINT"))
    lamp.data.energy, lamp.data.shadow_soft_size = 400.0, 0.1
    lamp.location = (1.5, 1.5, 2.2)
    scene.collection.objects.link(lamp)
    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)
    for obj in walls:
        obj.select_set(True)
    bpy.context.view_layer.objects.active = walls[0]
    out["selected"] = len(bpy.context.selected_objects)
    settings.use_vis, settings.use_light, settings.light_bounces = True, True, 2
    out["bake"] = sorted(bpy.ops.brushbake.bake())
    level = storage.load_level(scene)
    out["status"] = settings.status
    out["report"] = native_lib.backend_report().text
    out["report_backend"] = native_lib.backend_report().backend
    out["library"] = str(native_lib.backend_report().path)
    # the NumPy path: the same scene baked again with the rays in NumPy
    core_scene = bake.gather(bpy.context, walls)
    numpy_level = pipeline.bake_scene(core_scene, light_backend="numpy")
    out["light_pages_equal"] = bool(level.lm_pages.tobytes() == numpy_level.lm_pages.tobytes())
    out["light_pages_lit"] = float(level.lm_pages.max())
    # camera queries: the add-on's backend, then both against each other for many cameras
    out["camera_backend"] = camera_view.backend()
    rng = np.random.default_rng(32)
    cams = np.column_stack([rng.uniform(0.2, 12.8, 200), rng.uniform(0.2, 5.8, 200), rng.uniform(0.2, 2.8, 200),
                            rng.uniform(0, 360, 200), rng.uniform(-60, 60, 200), rng.uniform(40, 110, 200),
                            np.full(200, 1.5), np.full(200, 60.0)])
    same = []
    for mode in camera_view.MODES:
        c, n = cull(level, cams, mode, backend="c"), cull(level, cams, mode, backend="numpy")
        same.append(bool(np.array_equal(c.drawn, n.drawn) and np.array_equal(c.face_counts(), n.face_counts())))
    out["cull_equal"] = same
    row = [2.0, 1.5, 1.5, 0.0, 0.0, 40.0, 1.5, 100.0]
    out["counts"] = {k: list(v) if isinstance(v, tuple) else v for k, v in camera_view.cull_counts(level, row).items()}
    out["sys_path_has_native"] = [p for p in sys.path if "site-packages" in p and ".local" in p]
    bpy.ops.preferences.addon_disable(module=MODULE)
    return out


def main(argv) -> int:
    try:
        result = probe(argv[1])
    except Exception:
        result = {"error": traceback.format_exc()}
    sys.stdout.flush()
    print(RESULT_PREFIX + json.dumps(result, sort_keys=True, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
