"""Blender scenarios for tests/addon/test_workflow.py, each run in a fresh Python with the bpy wheel:

    python scenarios.py NAME [ARG ...]

brushbake is registered straight from the repository (``import brushbake; brushbake.register()``),
not installed from the zip (test_extension.py covers that): faster, and it tests the working tree.
Each scenario returns a dict of what it saw; the last stdout line is ``SCENARIO_RESULT <json>``.
Checks are made by the caller, so a failure shows everything the scenario saw.  Operators are
called through bpy.ops, as a user or script would; the plain functions behind the modal parts
(bake steps, the bake job, overlay geometry) are called directly.
"""

import json
import sys
import traceback
from pathlib import Path

import numpy as np

RESULT_PREFIX = "SCENARIO_RESULT "


def setup():
    import bpy

    import brushbake

    bpy.ops.wm.read_factory_settings(use_empty=True)
    brushbake.register()
    return bpy


def box(bpy, name: str, lo, hi, collection=None):
    """A closed box mesh object with its origin at the box's centre (as an editor would make it)."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    centre, half = (lo + hi) / 2, (hi - lo) / 2
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata((signs * half).tolist(), [], faces)
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    obj.location = centre.tolist()
    (collection or bpy.context.scene.collection).objects.link(obj)
    return obj


def l_shape(bpy, name: str):
    """A closed but non-convex L-shaped prism."""
    pts2 = [(0, 0), (2, 0), (2, 1), (1, 1), (1, 2), (0, 2)]
    verts = [(x + 5, y + 5, z) for z in (0, 1) for x, y in pts2]
    n = len(pts2)
    faces = [list(range(n))[::-1], list(range(n, 2 * n))]
    faces += [[i, (i + 1) % n, n + (i + 1) % n, n + i] for i in range(n)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def tiny_box(bpy, name: str, centre=(2.0, 2.0, 1.5), scale: float = 1e-4):
    """A 1 m box object scaled by `scale`, each quad split into two triangles (every plane twice):
    issue 20's item 5 as a mesh."""
    signs = [[x * 0.5, y * 0.5, z * 0.5] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(signs, [], [t for q in quads for t in ((q[0], q[1], q[2]), (q[0], q[2], q[3]))])
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    obj.location = centre
    obj.scale = (scale, scale, scale)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def call(op, **kwargs) -> list[str]:
    """Run an operator; an ERROR report (which bpy.ops raises as RuntimeError) becomes
    ['ERROR', message] so the caller can check the message."""
    try:
        return sorted(op(**kwargs))
    except RuntimeError as err:
        return ["ERROR", str(err)]


def select(bpy, objects):
    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)
    for obj in objects:
        obj.select_set(True)
    if objects:
        bpy.context.view_layer.objects.active = objects[0]


def floor_and_pillar(bpy):
    """A floor (top at z = 0) and a pillar standing on it, selected, with the q3_stand hull."""
    floor = box(bpy, "floor", (-4, -4, -1), (4, 4, 0))
    pillar = box(bpy, "pillar", (0, 0, 0), (1, 1, 2))
    select(bpy, [pillar, floor])
    bpy.ops.brushbake.hull_add(preset="q3_stand")
    return floor, pillar


def scene_state(bpy) -> dict:
    """What a failed or cancelled bake must not change."""
    from brushbake.addon import storage

    scene = bpy.context.scene
    return {
        "objects": sorted((o.name, tuple(round(v, 6) for v in o.location)) for o in scene.objects),
        "collections": sorted(c.name for c in bpy.data.collections),
        "bake": storage.bake_key(scene),
    }


# ------------------------------------------------------------------------------------------------


def scenario_bake(args) -> dict:
    """Bake operator: nothing selected, a good bake, a non-convex brush, cancel, the job, undo."""
    bpy = setup()
    from brushbake.addon import bake, storage
    from brushbake.core.errors import CancelledError
    from brushbake.core.runtime.query import point_solid

    out: dict = {}
    scene = bpy.context.scene
    floor, pillar = floor_and_pillar(bpy)
    out["hulls"] = [h.name for h in scene.brushbake.hulls]

    select(bpy, [])
    out["nothing_selected"] = call(bpy.ops.brushbake.bake)
    out["nothing_selected_status"] = scene.brushbake.status
    out["nothing_selected_bake"] = storage.has_bake(scene)

    select(bpy, [floor, pillar])
    out["bake"] = call(bpy.ops.brushbake.bake)
    level = storage.load_level(scene)
    out["brush_names"] = level.brush_names
    out["hull_names"] = level.hull_names
    out["has_bevel"] = level.has_bevel
    probes = [(0.5, 0.5, 1.0), (2, 2, 1.0), (2, 2, -0.5), (2, 2, 0.5), (2, 2, 0.8)]
    out["point_solid"] = point_solid(level, probes, 0).tolist()
    out["stand_solid"] = point_solid(level, probes, 1).tolist()
    out["status"] = scene.brushbake.status
    good = scene_state(bpy)

    speck = tiny_box(bpy, "speck")  # issue 20 item 5: scaled by 1e-4, its planes repeated
    select(bpy, [floor, pillar, speck])
    good = scene_state(bpy)
    out["speck"] = call(bpy.ops.brushbake.bake)
    out["speck_status"] = scene.brushbake.status
    out["speck_unchanged"] = scene_state(bpy) == good
    bpy.data.objects.remove(speck)

    bad = l_shape(bpy, "Lshape")
    select(bpy, [floor, pillar, bad])
    good = scene_state(bpy)
    out["nonconvex"] = call(bpy.ops.brushbake.bake)
    out["nonconvex_status"] = scene.brushbake.status
    out["nonconvex_unchanged"] = scene_state(bpy) == good
    # the same mesh as non-solid is render-only detail: the bake goes through without it
    select(bpy, [bad])
    out["set_role"] = call(bpy.ops.brushbake.set_role, role="NONSOLID")
    select(bpy, [floor, pillar, bad])
    out["nonsolid_bake"] = call(bpy.ops.brushbake.bake)
    out["nonsolid_brushes"] = storage.load_level(scene).brush_names
    bpy.data.objects.remove(bad)
    select(bpy, [floor, pillar])
    bpy.ops.brushbake.bake()

    # cancel part way: the plain function with a cancel check that fires after some progress
    select(bpy, [floor, pillar])
    before = scene_state(bpy)
    seen = []

    def progress(fraction, message):
        seen.append(fraction)

    try:
        bake.bake(bpy.context, progress=progress, cancel=lambda: len(seen) >= 3)
        out["cancel"] = "finished"
    except CancelledError as err:
        out["cancel"] = f"cancelled: {err}"
    out["cancel_progress"] = [round(f, 3) for f in seen]
    out["cancel_unchanged"] = scene_state(bpy) == before

    # the modal operator's worker, driven by polling (timers do not run headless)
    core_scene = bake.gather(bpy.context)
    job = bake.BakeJob(core_scene).start()
    result = job.wait(60)
    out["job_result"] = type(result).__name__
    from brushbake.exporters.native import level_to_bytes

    out["job_same_bytes"] = level_to_bytes(result) == storage.bake_bytes(scene)
    # the modal operator's event steps: Esc cancels, a timer event then finds the cancellation
    job = bake.BakeJob(core_scene)
    job.start()
    steps = [job.step("MOUSEMOVE"), job.step("ESC")]
    job.wait(60)
    final = job.step("TIMER")
    out["job_steps"] = [s is None for s in steps]
    out["job_status_text"] = job.status_text()
    out["job_cancelled"] = type(final).__name__ if isinstance(final, CancelledError) else f"not cancelled: {final!r}"
    out["job_cancel_unchanged"] = scene_state(bpy) == before

    # undo after a bake brings back the previous bake
    bpy.ops.ed.undo_push(message="before second bake")
    first = storage.bake_key(bpy.context.scene)
    bpy.context.scene.brushbake.hulls.clear()
    bpy.ops.ed.undo_push(message="hulls cleared")
    select(bpy, [bpy.data.objects["floor"], bpy.data.objects["pillar"]])
    out["rebake"] = call(bpy.ops.brushbake.bake)
    out["rebake_hulls"] = storage.load_level(bpy.context.scene).hull_names
    out["rebake_changed"] = storage.bake_key(bpy.context.scene) != first
    bpy.ops.ed.undo()
    out["undo_restores"] = storage.bake_key(bpy.context.scene) == first
    out["undo_objects"] = sorted(o.name for o in bpy.context.scene.objects)
    return out


def scenario_settings(args) -> dict:
    """The properties' min and max (as Blender stores them), and a bake with a NaN setting (which
    Blender accepts, unlike values beyond max) reported as an error, not a traceback."""
    bpy = setup()
    from brushbake.addon import storage

    out: dict = {}
    scene = bpy.context.scene
    rna = type(scene.brushbake).bl_rna.properties
    out["ranges"] = {name: [rna[name].hard_min, rna[name].hard_max]
                     for name in ("split_weight", "max_candidates", "bevel_angle", "map_scale", "slice_width",
                                  "slice_height", "slice_step", "slice_cell")}
    floor, pillar = floor_and_pillar(bpy)
    select(bpy, [floor, pillar])
    scene.brushbake.bevel_angle = float("nan")
    out["nan_bake"] = call(bpy.ops.brushbake.bake)
    out["nan_status"] = scene.brushbake.status
    out["nan_stored"] = storage.has_bake(scene)
    scene.brushbake.bevel_angle = 1e9  # clamped by Blender to the table's max
    out["clamped"] = scene.brushbake.bevel_angle
    out["clamped_bake"] = call(bpy.ops.brushbake.bake)
    return out


def _typed(spec, value):
    """A value a user could type for a number setting: six digits, which float32 keeps (the value
    need not be exact in float32: the bridge reads the decimal back)."""
    return int(value) if spec.kind is int else float(f"{float(value):.6g}")


def scenario_settings_table(args) -> dict:
    """Every setting of the table (core/model/setting_specs.py) through the add-on: its property as
    Blender holds it (default, min, max, label, tooltip, menu items); values set on the property
    reaching core Settings through the bridge; and what a bad value (beyond a bound, NaN, an
    infinity) does: clamped by Blender, or refused by the bridge with InvalidSettingError."""
    bpy = setup()
    from brushbake.addon.bridge import core_settings
    from brushbake.core.errors import InvalidSettingError
    from brushbake.core.model.setting_specs import SPECS

    props = bpy.context.scene.brushbake
    rna = type(props).bl_rna.properties
    out: dict = {"props": {}, "round_trip": {}, "bad": {}, "defaults": None}
    out["defaults"] = {k: v for k, v in vars(core_settings(props)).items()}
    for spec in SPECS:
        name = spec.prop_name
        if name is None:  # not an add-on setting (png_exposure: the command line's PNGs)
            continue
        p = rna[name]
        entry = {"label": p.name, "description": p.description}
        if spec.choices:
            entry.update(default=p.default, items=[i.identifier for i in p.enum_items])
        else:
            entry["default"] = p.default
        if spec.kind in (int, float):
            entry.update(min=p.hard_min, max=p.hard_max, unit=p.unit)
        if spec.toggle is not None:
            entry["toggle"] = [rna[spec.toggle.prop].default, rna[spec.toggle.prop].name]
        out["props"][spec.name] = entry
        # values set on the property, as core sees them
        if spec.choices:
            values = [c.value for c in spec.choices]
        elif spec.kind is bool:
            values = [not spec.default, spec.default]
        else:
            r = spec.range
            values = [spec.kind(r.low), spec.kind(r.high), _typed(spec, r.low + (r.high - r.low) / 3)]
        seen = []
        for value in values:
            if spec.toggle is not None:
                off = value == spec.toggle.off_value
                setattr(props, spec.toggle.prop, not off)
                if not off:
                    setattr(props, name, value)
            else:
                setattr(props, name, value)
            seen.append([value, getattr(core_settings(props), spec.name)])
        out["round_trip"][spec.name] = seen
        bpy.ops.wm.read_factory_settings(use_empty=True)  # every property back to its default
        props = bpy.context.scene.brushbake
        if spec.kind not in (int, float):
            continue
        bad = []
        for value in (spec.range.low - 1, spec.range.high + 1, float("nan"), float("inf"), -float("inf")):
            try:
                setattr(props, name, value)
            except (TypeError, ValueError, OverflowError) as err:
                bad.append([value, "refused by Blender", type(err).__name__])
                continue
            stored = getattr(props, name)
            try:
                bad.append([value, stored, "ok", getattr(core_settings(props), spec.name)])
            except InvalidSettingError as err:
                bad.append([value, stored, "error", str(err)])
            setattr(props, name, spec.default)
        out["bad"][spec.name] = bad
    return out


def scenario_save_reload(args) -> dict:
    """The bake is saved with the .blend and comes back; baking again replaces it whole."""
    bpy = setup()
    from brushbake.addon import storage

    path = str(Path(args[0]) / "saved.blend")
    out: dict = {}
    floor_and_pillar(bpy)
    out["bake"] = call(bpy.ops.brushbake.bake)
    key = storage.bake_key(bpy.context.scene)
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    out["after_reset"] = storage.has_bake(bpy.context.scene)
    bpy.ops.wm.open_mainfile(filepath=path)
    scene = bpy.context.scene
    out["reloaded_same"] = storage.bake_key(scene) == key
    level = storage.load_level(scene)
    out["reloaded_hulls"] = level.hull_names
    out["reloaded_hull_setting"] = [h.name for h in scene.brushbake.hulls]
    out["reloaded_role"] = bpy.data.objects["floor"].brushbake.role

    scene.brushbake.hulls.clear()
    bpy.ops.brushbake.hull_add(preset="q1_large")
    select(bpy, [bpy.data.objects["floor"], bpy.data.objects["pillar"]])
    out["rebake"] = call(bpy.ops.brushbake.bake)
    out["rebaked_hulls"] = storage.load_level(scene).hull_names
    out["bake_keys"] = sorted(k for k in scene.keys() if k.startswith("brushbake_bake"))
    out["rebake_changed"] = storage.bake_key(scene) != key
    return out


def scenario_map(args) -> dict:
    """Import a .map, bake it in Blender, export native and JSON; the caller compares with the CLI."""
    bpy = setup()
    from brushbake.addon import bridge, storage
    from brushbake.core.formats.mapfile import load_map

    map_path, out_dir = args[0], Path(args[1])
    out: dict = {}
    scene = bpy.context.scene
    out["import"] = call(bpy.ops.brushbake.import_map, filepath=map_path)
    core_scene = load_map(map_path)
    meshes = [o for o in scene.objects if o.type == "MESH"]
    out["objects"] = len(meshes)
    out["brushes"] = len(core_scene.brushes) + len(core_scene.movers)
    roles: dict = {}
    for obj in meshes:
        roles[obj.brushbake.role] = roles.get(obj.brushbake.role, 0) + 1
    out["roles"] = roles
    from brushbake.addon.roles import CONTENTS_ROLE

    expected: dict = {"MOVER": len(core_scene.movers)} if core_scene.movers else {}
    for b in core_scene.brushes:
        expected[CONTENTS_ROLE[b.contents]] = expected.get(CONTENTS_ROLE[b.contents], 0) + 1
    out["expected_roles"] = expected
    # positions: each object's world-space vertices are its brush's corners
    gap = 0.0
    by_name = {b.name: b for b in core_scene.brushes + core_scene.movers}
    for obj in meshes:
        verts, _ = bridge.world_mesh(obj)
        corners = by_name[obj["brushbake_name"]].vertices
        gap = max(gap, float(np.linalg.norm(verts[:, None] - corners[None], axis=2).min(axis=1).max()))
    out["max_vertex_gap"] = gap
    out["markers"] = sum(1 for o in scene.objects if o.brushbake.role == "INSIDE_MARKER")
    out["core_markers"] = len(core_scene.markers)

    for preset in ("q3_stand", "q3_crouch"):
        bpy.ops.brushbake.hull_add(preset=preset)
    out["bake"] = call(bpy.ops.brushbake.bake)
    out["status"] = scene.brushbake.status
    out["export_native"] = call(bpy.ops.brushbake.export, filepath=str(out_dir / "blender.bbk"), format="NATIVE")
    out["export_json"] = call(bpy.ops.brushbake.export, filepath=str(out_dir / "blender.json"), format="JSON")

    out["bevels"] = check_bevel_overlay(bpy)
    # the bevel settings reach the stored bake as the command line's --bevel-angle and --no-bevels do
    settings = scene.brushbake
    settings.bevel_angle = 120.0
    out["bake_120"] = call(bpy.ops.brushbake.bake)
    out["export_120"] = call(bpy.ops.brushbake.export, filepath=str(out_dir / "blender_120.bbk"), format="NATIVE")
    settings.bevel_angle, settings.use_bevels = 90.0, False
    out["bake_no_bevels"] = call(bpy.ops.brushbake.bake)
    out["export_no_bevels"] = call(bpy.ops.brushbake.export, filepath=str(out_dir / "blender_no_bevels.bbk"),
                                   format="NATIVE")

    # a moved brush no longer matches its kept planes: it is baked from its mesh, where it now is
    moved = next(o for o in meshes if o.brushbake.role == "STRUCTURAL")
    moved.location.x += 0.25
    bpy.context.view_layer.update()
    brush = bridge.brush_from_object(moved)
    out["moved_uses_mesh"] = bridge.kept_planes_brush(moved, bridge.world_mesh(moved)[0], brush.contents) is None
    out["moved_shift"] = float(brush.bounds[0][0] - by_name[moved["brushbake_name"]].bounds[0][0])
    return out


def ridge(bpy, name: str = "ridge"):
    """A sharp ridge along x on the floor: apex at z = 2, faces 10 degrees off vertical (the
    'invisible wall' of Melax's section 5, as in tests/core/test_bevel.py)."""
    half = 2.0 * np.tan(np.radians(10.0))
    verts = [(x, y, z) for x in (0.0, 4.0) for y, z in ((-half, 0.0), (half, 0.0), (0.0, 2.0))]
    faces = [(0, 2, 1), (3, 4, 5), (0, 1, 4, 3), (1, 2, 5, 4), (2, 0, 3, 5)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def scenario_bevels(args) -> dict:
    """Bevels in the add-on: on by default, stored with the bake, used by Trace from Cursor with a
    shape; off on request (the shape then uses the plain tree, and says so); bad shapes named."""
    bpy = setup()
    from brushbake.addon import bake, storage
    from brushbake.core.compile.trees.bevel import BevelSettings, bevel_tree

    out: dict = {}
    scene = bpy.context.scene
    settings = scene.brushbake
    out["defaults"] = [settings.use_bevels, settings.bevel_angle]
    # the default region lines: the one at y = 0 runs through the ridge's apex, whose two halves
    # are beveled as the whole ridge (seam bevels), so the sphere glides over it as without lines
    floor = box(bpy, "floor", (-2, -4, -1), (6, 4, 0))
    select(bpy, [floor, ridge(bpy)])
    gathered = bake.gather(bpy.context).settings
    out["options"] = {"use_bevels": gathered.bevels, "bevel_angle": gathered.bevel_angle}

    def trace(target, start, direction=(0.0, 1.0, 0.0), distance=6.0):
        scene.cursor.location = start
        settings.trace_hull, settings.trace_distance = target, distance
        result = call(bpy.ops.brushbake.trace, direction=direction)
        return {"result": result, "fraction": settings.last_trace_fraction,
                "point": list(settings.last_trace_point), "status": settings.status}

    def baked():
        level = storage.load_level(scene)
        data = storage.bake_bytes(scene)
        expected = bevel_tree(level, level.world_bounds, BevelSettings(angle=settings.bevel_angle))
        return {"has_bevel": level.has_bevel, "nodes": level.num_nodes,
                "bevel_nodes": len(level.bevel_node_plane), "status": settings.status,
                "bvnp_in_bytes": b"BVNP" in data,
                "same_as_core": level.has_bevel and np.array_equal(level.bevel_node_plane, expected.node_plane)
                and np.array_equal(level.bevel_node_children, expected.node_children)
                and np.array_equal(level.plane_normals, expected.plane_normals)}

    # the defaults: the beveled tree is built, stored, and the sphere glides over the ridge
    out["bake_default"] = call(bpy.ops.brushbake.bake)
    out["default"] = baked()
    over, low = (2.0, -3.0, 2.5), (2.0, -3.0, 2.2)  # the sphere's lowest point 0.25 m / 0.05 m over the apex
    out["default_over"] = trace("sphere:0.25", over)
    out["default_low"] = trace("sphere:0.25", low)
    out["default_point"] = trace("point", (2.0, 0.0, 3.0), (0.0, 0.0, -1.0))
    for bad in ("sphere:-1", "cone:1", "box:1,2", "hull:no_such_points.npy", "hull://no_such_points.npy"):
        out[f"bad {bad}"] = trace(bad, over)
    np.save("empty.npy", np.zeros((0, 3)))  # no points
    out["bad hull:empty.npy"] = trace("hull:empty.npy", over)
    np.save("ball.npy", np.vstack([np.eye(3), -np.eye(3)]) * 0.25)  # an octahedron of radius 0.25
    out["hull_over"] = trace("hull:ball.npy", over)
    out["hull_low"] = trace("hull:ball.npy", (2.0, -3.0, 2.15))
    # the angle reaches the core: at 45 degrees square edges are beveled too
    settings.bevel_angle = 45.0
    out["bake_45"] = call(bpy.ops.brushbake.bake)
    out["angle_45"] = baked()
    # bevels off: no beveled tree in the bake; the shape is traced on the plain tree
    settings.bevel_angle = 90.0
    settings.use_bevels = False
    out["bake_off"] = call(bpy.ops.brushbake.bake)
    out["off"] = baked()
    out["off_over"] = trace("sphere:0.25", over)
    return out


def check_bevel_overlay(bpy) -> dict:
    """The bevel overlay against the beveled tree: one patch per bevel node, on the node's plane,
    the plane touching its cell with the whole cell on its front, the patch within the margin."""
    from brushbake.addon import overlays, storage

    level = storage.load_level(bpy.context.scene)
    tree = level.bevel_tree()
    geom = overlays.bevel_overlay(level, margin=0.15)
    nodes: dict = {}
    overlays.leaf_cells(tree, np.asarray(level.world_bounds) + np.array([[-1.0] * 3, [1.0] * 3]), nodes)
    bevel_nodes = [n for n in range(len(level.node_plane), tree.num_nodes) if nodes.get(n)]
    tris = geom.tri_positions.astype(np.float64).reshape(-1, 3, 3)
    planes = tree.node_plane[geom.tri_leaf]
    on_plane = np.einsum("tkj,tj->tk", tris, tree.plane_normals[planes]) - tree.plane_dists[planes][:, None]
    touch, behind, within = 0.0, 0.0, 0.0
    for n in bevel_nodes:
        corners = np.concatenate(nodes[n])
        p = int(tree.node_plane[n])
        dist = corners @ tree.plane_normals[p] - tree.plane_dists[p]
        touch, behind = max(touch, abs(float(dist.min()))), min(behind, float(dist.min()))
        patch = tris[geom.tri_leaf == n].reshape(-1, 3)
        for poly in nodes[n]:
            fn, fd = overlays._face_plane(poly)
            within = max(within, float((patch @ fn - fd).max()))
    return {"bevel_nodes": len(bevel_nodes), "patch_nodes": len(set(geom.tri_leaf.tolist())),
            "max_off_plane": float(np.abs(on_plane).max()) if len(tris) else 0.0,
            "max_touch_gap": touch, "most_behind": behind, "max_beyond_cell": within}


def scenario_trace_overlay(args) -> dict:
    """Trace operator, overlay geometry against the level, preview objects, one overlay drawn."""
    bpy = setup()
    from brushbake.addon import overlays, storage
    from brushbake.core.runtime.query import point_leaves, point_solid

    out: dict = {}
    scene = bpy.context.scene
    floor_and_pillar(bpy)
    bpy.ops.brushbake.bake()
    level = storage.load_level(scene)

    # trace from the cursor straight down, for the stand hull and for the point hull
    scene.cursor.location = (2.0, 2.0, 3.0)
    settings = scene.brushbake
    settings.trace_distance = 10.0
    traces = {}
    for target in ("q3_stand", "point", "sphere:0.5", "nohull"):
        settings.trace_hull = target
        result = call(bpy.ops.brushbake.trace, direction=(0.0, 0.0, -1.0))
        marker = bpy.data.objects.get("brushbake trace hit")
        traces[target] = {
            "result": result,
            "point": list(settings.last_trace_point),
            "normal": list(settings.last_trace_normal),
            "fraction": settings.last_trace_fraction,
            "marker": list(marker.location) if marker else None,
            "status": settings.status,
        }
    out["traces"] = traces
    settings.overlay = "TRACE"
    geom = overlays.geometry_for(scene)
    out["trace_lines"] = len(geom.line_positions) // 2
    settings.show_overlay = True  # installs the draw handler (it only runs with a window)
    out["handler_installed"] = overlays._handle is not None
    import brushbake

    brushbake.unregister()
    out["handler_after_unregister"] = overlays._handle is not None
    brushbake.register()
    settings = scene.brushbake  # the old settings object went with the unregistered class

    # leaf cells of the point tree and of the stand hull's onion tree, against the level
    checks = {}
    for hull in (0, 1):
        tree = level.collision_tree(hull)
        tree_bounds = np.asarray(level.world_bounds) + np.array([[-1.0] * 3, [1.0] * 3]) * (
            float(np.abs(level.hull_boxes[hull]).max()) if hull else 0.0)
        cells = overlays.leaf_cells(tree, tree_bounds)
        volumes = np.array([overlays.cell_volume(c) if c else 0.0 for c in cells])
        centroids = {i: np.mean(np.concatenate(c), axis=0) for i, c in enumerate(cells) if c}
        located = point_leaves(tree, np.array(list(centroids.values())))
        solid_bits = ((tree.leaf_solid >> hull) & 1).astype(bool)
        geom = overlays.leaf_overlay(level, hull)
        checks[hull] = {
            "box_volume": float(np.prod(tree_bounds[1] - tree_bounds[0])),
            "cells_volume": float(volumes.sum()),
            "solid_volume": float(volumes[solid_bits].sum()),
            "centroids_in_own_leaf": bool(np.all(located == np.array(list(centroids)))),
            "overlay_leaves_solid": bool(np.all(solid_bits[geom.tri_leaf])),
            "overlay_solid_leaves": sorted(set(geom.tri_leaf.tolist())) == sorted(
                i for i in centroids if solid_bits[i]),
            "triangles": geom.num_triangles,
        }
        surface = overlays.hull_surface_overlay(level, hull)
        tris = surface.tri_positions.astype(np.float64).reshape(-1, 3, 3)
        normals = np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0])
        big = np.linalg.norm(normals, axis=1) > 1e-8
        normals = normals[big] / np.linalg.norm(normals[big], axis=1)[:, None]
        centres = tris[big].mean(axis=1)
        checks[hull]["surface_triangles"] = surface.num_triangles
        checks[hull]["surface_area"] = float(0.5 * np.linalg.norm(
            np.cross(tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]), axis=1).sum())
        checks[hull]["surface_front_empty"] = bool(np.all(point_solid(level, centres + 1e-3 * normals, hull) == 0))
        checks[hull]["surface_back_solid"] = bool(np.all(point_solid(level, centres - 1e-3 * normals, hull) == 1))
        up = (normals[:, 2] > 0.99)
        checks[hull]["floor_heights"] = sorted({round(float(z), 4) for z in centres[up, 2]})
    out["cells"] = checks

    # preview objects
    settings.overlay, settings.overlay_hull = "LEAVES", "q3_stand"
    out["preview"] = call(bpy.ops.brushbake.make_preview)
    obj = bpy.data.objects.get("brushbake leaves q3_stand")
    out["preview_polygons"] = len(obj.data.polygons) if obj else None
    out["preview_expected"] = overlays.leaf_overlay(level, 1).num_triangles
    out["preview_collection"] = [c.name for c in obj.users_collection] if obj else None
    settings.overlay_hull = "nohull"
    out["preview_bad_hull"] = call(bpy.ops.brushbake.make_preview)
    out["preview_bad_hull_status"] = settings.status
    out["offscreen"] = draw_offscreen(bpy, level)
    return out


def draw_offscreen(bpy, level) -> dict:
    """Render once with Workbench (it starts the GPU context), then draw the point hull's solid
    leaves into a GPUOffScreen seen from a camera above the floor; count red pixels."""
    import gpu

    from brushbake.addon import overlays

    scene = bpy.context.scene
    cam_data = bpy.data.cameras.new("cam")
    cam = bpy.data.objects.new("cam", cam_data)
    cam.location = (0.0, 0.0, 20.0)
    scene.collection.objects.link(cam)
    scene.camera = cam
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.render.resolution_x = scene.render.resolution_y = 32
    bpy.ops.render.render()
    size = 64
    depsgraph = bpy.context.evaluated_depsgraph_get()
    projection = cam.calc_matrix_camera(depsgraph, x=size, y=size)
    view = cam.matrix_world.inverted()
    geom = overlays.leaf_overlay(level, 0)
    result = {}
    offscreen = gpu.types.GPUOffScreen(size, size)
    for label, draw in (("blank", False), ("overlay", True)):
        with offscreen.bind():
            fb = gpu.state.active_framebuffer_get()
            fb.clear(color=(0.0, 0.0, 0.0, 0.0), depth=1.0)
            with gpu.matrix.push_pop():
                gpu.matrix.load_matrix(view)
                gpu.matrix.load_projection_matrix(projection)
                if draw:
                    overlays.draw_geometry(geom)
            pixels = np.array(fb.read_color(0, 0, size, size, 4, 0, "FLOAT").to_list()).reshape(size, size, 4)
        red = (pixels[..., 0] > 0.3) & (pixels[..., 0] > 2 * pixels[..., 1]) & (pixels[..., 3] > 0.3)
        result[label] = int(red.sum())
        # the floor is 8 m wide, seen from 20 m: its centre pixel is covered, the corners are not
        result[label + "_centre_red"] = bool(red[size // 2, size // 2])
        result[label + "_corner_red"] = bool(red[0, 0])
    offscreen.free()
    return result


class LayoutRecorder:
    """Stands in for a panel's UILayout: checks every property and operator a panel names exists."""

    def __init__(self, problems: list, calls: list):
        self.problems, self.calls = problems, calls

    def _sub(self, *args, **kwargs):
        return LayoutRecorder(self.problems, self.calls)

    row = column = box = split = _sub

    def label(self, text="", **kwargs):
        self.calls.append(("label", text))

    def prop(self, data, name, **kwargs):
        self.calls.append(("prop", name))
        if name not in data.bl_rna.properties:
            self.problems.append(f"no property {name} on {data}")

    def _check_op(self, idname):
        import bpy

        module, _, op = idname.partition(".")
        try:
            getattr(getattr(bpy.ops, module), op).get_rna_type()
        except KeyError:
            self.problems.append(f"no operator {idname}")

    def operator(self, idname, **kwargs):
        self.calls.append(("operator", idname))
        self._check_op(idname)
        return type("OperatorProperties", (), {})()

    def operator_menu_enum(self, idname, prop, **kwargs):
        self.calls.append(("operator_menu_enum", idname))
        self._check_op(idname)

    def template_list(self, list_type, list_id, data, prop, active_data, active_prop, **kwargs):
        import bpy

        self.calls.append(("template_list", prop))
        for d, p in ((data, prop), (active_data, active_prop)):
            if p not in d.bl_rna.properties:
                self.problems.append(f"no property {p} on {d}")
        if not hasattr(bpy.types, list_type):
            self.problems.append(f"no UIList {list_type}")


def scenario_samples_and_panels(args) -> dict:
    """make_blend.py's build on a sample, saved; then every panel drawn against a recorder."""
    bpy = setup()
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sample_scenes"))
    import make_blend

    from brushbake.addon import panels, storage

    out: dict = {}
    out["build"] = make_blend.build(make_blend.SAMPLES["cornell_box"])
    scene = bpy.context.scene
    out["hull_setting"] = [h.name for h in scene.brushbake.hulls]
    out["bake_hulls"] = storage.load_level(scene).hull_names
    out["preview_objects"] = sorted(o.name for o in bpy.data.collections["brushbake preview"].objects)
    path = str(Path(args[0]) / "cornell_box.blend")
    out["save"] = sorted(bpy.ops.wm.save_as_mainfile(filepath=path))

    problems: list = []
    drawn = {}
    for settings in ({"overlay": "LEAVES", "source": "COLLECTION"}, {"overlay": "TRACE", "source": "SELECTED"}):
        for key, value in settings.items():
            setattr(scene.brushbake, key, value)
        for cls in panels.classes:
            if not hasattr(cls, "draw") or cls is panels.BRUSHBAKE_UL_hulls:
                continue
            calls: list = []
            fake = type("FakePanel", (), {"layout": LayoutRecorder(problems, calls)})()
            cls.draw(fake, bpy.context)
            drawn[cls.__name__] = len(calls)
    calls = []
    hull = scene.brushbake.hulls[0]
    panels.BRUSHBAKE_UL_hulls.draw_item(None, bpy.context, LayoutRecorder(problems, calls), scene.brushbake, hull,
                                        0, scene.brushbake, "active_hull")
    drawn["BRUSHBAKE_UL_hulls"] = len(calls)
    out["panel_problems"] = problems
    out["panels_drawn"] = drawn
    return out


def room_with_marker(bpy):
    """A closed room 8 x 4 x 3 m with a pillar, and an inside marker: (the wall objects, the marker)."""
    walls = [box(bpy, "floor", (-1, -1, -1), (9, 5, 0)), box(bpy, "ceiling", (-1, -1, 3), (9, 5, 4)),
             box(bpy, "west", (-1, -1, 0), (0, 5, 3)), box(bpy, "east", (8, -1, 0), (9, 5, 3)),
             box(bpy, "south", (0, -1, 0), (8, 0, 3)), box(bpy, "north", (0, 4, 0), (8, 5, 3)),
             box(bpy, "pillar", (3.5, 1.5, 0), (4.5, 2.5, 3))]
    marker = bpy.data.objects.new("start", None)
    bpy.context.scene.collection.objects.link(marker)
    marker.location = (1.0, 2.0, 1.0)
    marker.brushbake.role = "INSIDE_MARKER"
    return walls, marker


def scenario_visibility(args) -> dict:
    """A closed room with an inside marker: a bake with Visibility stores a PVS and draws no leak;
    the room with its east wall removed fails as a leak, draws the chain as a curve through the
    hole and keeps the previous bake; Frame Leak selects the brush nearest the hole; the overlay
    of what the cursor's leaf sees covers the cursor."""
    bpy = setup()
    from brushbake.addon import bake, storage, visibility

    out: dict = {}
    scene = bpy.context.scene
    settings = scene.brushbake
    out["defaults"] = [settings.use_vis, settings.vis_mode, settings.allow_leak, settings.seal, settings.fill]
    from brushbake.addon.bridge import core_settings

    settings.seal, settings.fill = "exact", False
    out["seal_to_core"] = core_settings(settings).seal
    out["fill_to_core"] = core_settings(settings).fill
    settings.seal, settings.fill = "qbsp", True
    walls, marker = room_with_marker(bpy)
    select(bpy, walls + [marker])
    settings.use_vis = True
    out["bake_sealed"] = call(bpy.ops.brushbake.bake)
    level = storage.load_level(scene)
    out["sealed_has_vis"] = level.has_vis
    out["sealed_leak_object"] = bpy.data.objects.get(visibility.LEAK_OBJECT) is not None
    scene.cursor.location = (1.0, 2.0, 1.5)
    geom = visibility.visible_cells_overlay(level, (1.0, 2.0, 1.5))
    here = int(level.point_tree().locate(np.array([[1.0, 2.0, 1.5]]))[0][0])
    out["overlay_leaves"] = sorted(set(geom.tri_leaf.tolist()))
    out["overlay_has_cursor_leaf"] = here in set(geom.tri_leaf.tolist())
    far = int(level.point_tree().locate(np.array([[7.0, 2.0, 1.5]]))[0][0])  # behind the pillar, same room
    out["overlay_has_far_leaf"] = far in set(geom.tri_leaf.tolist())
    out["overlay_in_solid"] = visibility.visible_cells_overlay(level, (4.0, 2.0, 1.5)).num_triangles
    from brushbake.core.runtime.query import point_solid

    out["void_solid"] = point_solid(level, np.array([[9.5, 2.0, 1.5], [1.0, 2.0, 1.5]])).tolist()  # the fill
    sealed_bytes = storage.bake_bytes(scene)
    # the east wall removed: a leak
    east = next(o for o in walls if o.name == "east")
    select(bpy, [o for o in walls if o is not east] + [marker])
    out["bake_leak"] = call(bpy.ops.brushbake.bake)
    out["leak_status"] = settings.status
    leak = bpy.data.objects.get(visibility.LEAK_OBJECT)
    out["leak_object"] = leak is not None
    chain = visibility.leak_points(leak) if leak is not None else np.zeros((0, 3))
    out["chain"] = chain.tolist()
    out["kept_previous_bake"] = storage.bake_bytes(scene) == sealed_bytes
    out["frame"] = call(bpy.ops.brushbake.frame_leak)
    active = bpy.context.view_layer.objects.active
    out["framed"] = active.name if active is not None else None
    # allowed: the level is stored and the chain still drawn
    settings.allow_leak = True
    select(bpy, [o for o in walls if o is not east] + [marker])
    out["bake_allowed"] = call(bpy.ops.brushbake.bake)
    out["allowed_has_vis"] = storage.load_level(scene).has_vis
    out["allowed_leak_object"] = bpy.data.objects.get(visibility.LEAK_OBJECT) is not None
    # sealed again: the drawing goes
    settings.allow_leak = False
    select(bpy, walls + [marker])
    out["bake_sealed_again"] = call(bpy.ops.brushbake.bake)
    out["sealed_again_leak_object"] = bpy.data.objects.get(visibility.LEAK_OBJECT) is not None
    return out


def scenario_rebake(args) -> dict:
    """Bake, move one brush, bake again: the second bake takes the first one's work for what the
    move did not reach (the scene's BakeCache), and stores the level a bake from scratch makes."""
    bpy = setup()
    from brushbake.addon import bake, storage
    from brushbake.core.compile.pipeline import bake_scene
    from brushbake.exporters.native import level_to_bytes

    out: dict = {}
    scene = bpy.context.scene
    scene.brushbake.region_size = 2.0  # the room spans several regions
    walls, _ = room_with_marker(bpy)
    select(bpy, walls)
    bpy.ops.brushbake.hull_add(preset="q3_stand")
    out["room"] = [o.name for o in walls]
    out["bake"] = call(bpy.ops.brushbake.bake)
    out["first"] = {k: list(v) for k, v in bake.last_cache(scene.name).summary().items()}
    pillar = next(o for o in walls if o.name == "pillar")
    pillar.location.x += 1.0
    bpy.context.view_layer.update()
    out["rebake"] = call(bpy.ops.brushbake.bake)
    out["second"] = {k: list(v) for k, v in bake.last_cache(scene.name).summary().items()}
    fresh = bake_scene(bake.gather(bpy.context, walls))
    out["same_as_fresh"] = storage.bake_bytes(scene) == level_to_bytes(fresh)
    return out


def scenario_live_leaks(args) -> dict:
    """The live leak check: switched on in a closed room it says sealed; the east wall moved away,
    a depsgraph update marks the scene and the check the timer runs draws the chain; moved back,
    the chain goes and the second check reuses cells; a brush made non-convex stops the check
    with a message (no traceback); deleting a wall is seen too."""
    bpy = setup()
    from brushbake.addon import live_leaks, visibility

    out: dict = {}
    scene = bpy.context.scene
    settings = scene.brushbake
    settings.region_size = 2.0  # the room spans several cells
    walls, marker = room_with_marker(bpy)
    bpy.context.view_layer.update()
    out["handler_registered"] = live_leaks.on_depsgraph_update in bpy.app.handlers.depsgraph_update_post
    settings.live_leak_check = True  # the toggle checks at once
    out["on_status"] = settings.status
    out["on_leak_object"] = bpy.data.objects.get(visibility.LEAK_OBJECT) is not None
    east = next(o for o in walls if o.name == "east")
    east.location.x += 2.0
    bpy.context.view_layer.update()
    out["pending_after_move"] = live_leaks.pending(scene)
    report = live_leaks.run_check(scene)  # what the timer calls once the edits pause
    out["moved_status"] = settings.status
    leak = bpy.data.objects.get(visibility.LEAK_OBJECT)
    out["moved_leak_object"] = leak is not None
    out["chain_end_x"] = float(visibility.leak_points(leak)[:, 0].max()) if leak is not None else None
    out["moved_leaks"] = bool(report.leaks) if report is not None else None
    east.location.x -= 2.0
    bpy.context.view_layer.update()
    out["pending_after_back"] = live_leaks.pending(scene)
    live_leaks.run_check(scene)
    watch = live_leaks._watches[scene.name]
    out["back_status"] = settings.status
    out["back_leak_object"] = bpy.data.objects.get(visibility.LEAK_OBJECT) is not None
    out["back_built_reused"] = [watch.built, watch.reused]
    # a brush that is no convex solid: the check stops with the core's message
    pillar = next(o for o in walls if o.name == "pillar")
    pillar.data.vertices[0].co.z += 5.0
    pillar.data.update()
    bpy.context.view_layer.update()
    out["pending_after_bend"] = live_leaks.pending(scene)
    out["bent_report"] = live_leaks.run_check(scene) is None
    out["bent_status"] = settings.status
    pillar.data.vertices[0].co.z -= 5.0
    pillar.data.update()
    # a wall deleted
    bpy.data.objects.remove(next(o for o in walls if o.name == "north"))
    bpy.context.view_layer.update()
    out["pending_after_delete"] = live_leaks.pending(scene)
    out["deleted_leaks"] = bool(live_leaks.run_check(scene).leaks)
    settings.live_leak_check = False
    out["off_forgets"] = scene.name not in live_leaks._watches
    return out


def scenario_crowd(args) -> dict:
    """Issue 13 in Blender: a floor, a bridge over it and a wall, baked with Crowd slices; the slice
    overlay shows places on both levels and the wall blocked; Spawn Crowd makes a point cloud that
    the timeline moves one tick a frame, forward and backward, as the library walks it."""
    bpy = setup()
    from brushbake.addon import crowd, overlays, storage
    from brushbake.core.runtime.crowd import Crowd

    out: dict = {}
    scene = bpy.context.scene
    settings = scene.brushbake
    out["defaults"] = [settings.use_slices, settings.slice_width, settings.slice_height, settings.slice_step,
                       settings.slice_cell]
    out["poll_before_bake"] = bpy.ops.brushbake.spawn_crowd.poll()
    objects = [box(bpy, "floor", (0, 0, -0.2), (10, 6, 0)), box(bpy, "bridge", (3, 0, 3.0), (7, 6, 3.2)),
               box(bpy, "wall", (8.45, 0, 0), (8.6, 6, 2.5))]
    select(bpy, objects)
    out["bake_plain"] = call(bpy.ops.brushbake.bake)
    out["spawn_without_slices"] = call(bpy.ops.brushbake.spawn_crowd)
    out["status_without_slices"] = settings.status
    settings.use_slices = True
    select(bpy, objects)
    out["bake"] = call(bpy.ops.brushbake.bake)
    level = storage.load_level(scene)
    c = level.crowd
    out["kept"], out["taken"] = c.kept, c.taken
    settings.overlay = "SLICES"
    geom = overlays.geometry_for(scene)
    out["overlay_triangles"] = geom.num_triangles
    out["standing_heights"] = sorted({round(float(v), 1) for v in geom.tri_positions[:, 2]})
    lines = geom.line_positions.reshape(-1, 2, 3)
    out["refused_heights"] = sorted({round(float(v), 1) for v in lines[:, 0, 2]})
    floor_x = lines[(np.abs(lines[:, 0, 2]) < 0.1) & (lines[:, 0, 0] == lines[:, 1, 0]), 0, 0]
    out["refused_floor_x"] = sorted({round(float(v), 2) for v in floor_x})
    settings.crowd_avatars, settings.crowd_frames, settings.crowd_seed = 300, 40, 7
    scene.frame_start = 1
    out["spawn"] = call(bpy.ops.brushbake.spawn_crowd)
    obj = bpy.data.objects.get(crowd.CROWD_OBJECT)
    out["type"] = obj.type if obj else None
    out["points"] = len(obj.data.points) if obj else 0
    out["frame_end"] = scene.frame_end
    reference = Crowd(c, 300, seed=7)
    seen = {}
    for frame in (1, 2, 12, 5, 12, 40):
        scene.frame_set(frame)
        want = Crowd(c, 300, seed=7)
        for _ in range(frame - 1):
            want.tick()
        got = crowd.crowd_positions(obj)
        seen[frame] = float(np.abs(got - want.positions().astype(np.float32)).max())
    out["frame_errors"] = seen
    out["moved"] = float(np.abs(crowd.crowd_positions(obj) - reference.positions().astype(np.float32)).max())
    out["levels_used"] = sorted({round(float(v), 1) for v in crowd.crowd_positions(obj)[:, 2]})
    out["undo_spawn"] = "UNDO" in bpy.types.BRUSHBAKE_OT_spawn_crowd.bl_options
    return out


def scenario_light(args) -> dict:
    """Issue 12 point 6: a closed room lit by a Blender point light.  Bake Light (the operator, with
    the scene's light in watts) stores a lightmap equal to the core's bake of the same scene; a bake
    job cancelled during the bounces keeps the light so far; Show Lightmap builds a mesh whose UV
    map 'lightmap' and page images are the level's; Bake with Cycles fills images of the same pages
    and a difference image, and the Cycles and difference views show them."""
    bpy = setup()
    from brushbake.addon import bake, lightmap, storage
    from brushbake.core.compile.pipeline import bake_scene

    out: dict = {}
    scene = bpy.context.scene
    settings = scene.brushbake
    walls = [box(bpy, "floor", (-1, -1, -1), (5, 4, 0)), box(bpy, "ceiling", (-1, -1, 3), (5, 4, 4)),
             box(bpy, "west", (-1, -1, 0), (0, 4, 3)), box(bpy, "east", (4, -1, 0), (5, 4, 3)),
             box(bpy, "south", (0, -1, 0), (4, 0, 3)), box(bpy, "north", (0, 3, 0), (4, 4, 3)),
             box(bpy, "block", (2.5, 1.0, 0), (3.5, 2.0, 1.5))]
    data = bpy.data.lights.new("lamp", "POINT")
    data.energy, data.shadow_soft_size = 400.0, 0.0
    lamp = bpy.data.objects.new("lamp", data)
    lamp.location = (1.5, 1.5, 2.2)
    scene.collection.objects.link(lamp)
    select(bpy, walls)
    settings.use_light, settings.light_bounces, settings.patch = True, 2, 2
    settings.use_bevels = False
    out["bake"] = call(bpy.ops.brushbake.bake)
    level = storage.load_level(scene)
    out["has_light"] = level.has_light
    out["status"] = settings.status
    core_scene = bake.gather(bpy.context, walls)
    out["core_lights"] = [(li.kind, li.power) for li in core_scene.lights]
    again = bake_scene(core_scene)
    out["same_as_core"] = bool(np.array_equal(again.lm_pages, level.lm_pages))
    # a bake job cancelled once the bounces run keeps the light so far
    job = bake.BakeJob(core_scene)
    calls = {"n": 0}

    def cancel_late():
        calls["n"] += 1
        return "bounce" in job.message

    job._cancel.is_set = cancel_late  # the job's cancel flag, raised as Esc would, during bounce 1
    result = job.start().wait(60)
    out["cancelled_kept"] = [type(result).__name__, result.stats["light"]["cancelled"] if hasattr(result, "stats") else None]
    out["show"] = call(bpy.ops.brushbake.show_lightmap)
    obj = bpy.data.objects.get(lightmap.OBJECT)
    uv = np.zeros(len(obj.data.loops) * 2, np.float32)
    obj.data.uv_layers[lightmap.UV_NAME].data.foreach_get("uv", uv)
    lit = np.flatnonzero(level.lm_face_page >= 0)
    index = np.concatenate([np.arange(a, a + c) for a, c in zip(level.face_first_vertex[lit], level.face_num_vertices[lit])])
    out["uv_match"] = bool(np.allclose(uv.reshape(-1, 2), level.lm_vertex_uv[index], atol=1e-6))
    out["image_match"] = bool(np.allclose(lightmap.image_page(bpy.data.images["brushbake lightmap 0"]),
                                          level.lm_pages[0], rtol=1e-6, atol=1e-6))
    out["material_emits"] = any(n.type == "EMISSION" for n in obj.data.materials[0].node_tree.nodes)
    settings.cycles_samples = 16
    out["cycles"] = call(bpy.ops.brushbake.bake_cycles)
    out["cycles_status"] = settings.status
    out["cycles_images"] = sorted(i.name for i in bpy.data.images if i.name.startswith(("brushbake cycles",
                                                                                       "brushbake difference")))
    out["cycles_mean"] = float(lightmap.image_page(bpy.data.images["brushbake cycles 0"]).mean())
    out["walls_render_again"] = all(not o.hide_render for o in walls)
    for view in ("CYCLES", "DIFFERENCE"):
        settings.lightmap_view = view
        out[f"show_{view}"] = call(bpy.ops.brushbake.show_lightmap)
    return out


def scenario_cycles_compare(args) -> dict:
    """Issue 12's comparison: a sample scene baked by brushbake and by Cycles (CPU) into the same
    pages, per-luxel relative RMSE for each number of bounces.  args: scene file, samples, then
    the bounce counts."""
    bpy = setup()
    from brushbake.addon import lightmap
    from brushbake.core.compile.light.lm_compare import relative_rmse
    from brushbake.core.compile.pipeline import bake_scene
    from brushbake.core.formats.loaders import load_scene
    from brushbake.core.model.light_units import light_power

    path, samples, bounces = args[0], int(args[1]), [int(b) for b in args[2:]]
    core = load_scene(path)
    core.hulls = []
    s = core.settings
    s.light, s.bevels, s.patch, s.light_threshold, s.shoot_fraction = True, False, 1, 0.0, 1.0
    scene = bpy.context.scene
    for li in core.lights:  # the same lights in Blender, in watts by the .map rule
        data = bpy.data.lights.new(li.name, "POINT")
        data.energy, data.color, data.shadow_soft_size = light_power(li, s.map_scale), li.color, 0.0
        obj = bpy.data.objects.new(li.name, data)
        obj.location = li.position
        scene.collection.objects.link(obj)
    out: dict = {"rmse": {}, "seconds": {}}
    import time

    for b in bounces:
        s.bounces = b
        t0 = time.perf_counter()
        level = bake_scene(core)
        t1 = time.perf_counter()
        cycles = lightmap.bake_cycles(scene, level, samples=samples, bounces=b, reflectance=s.reflectance)
        t2 = time.perf_counter()
        out["rmse"][str(b)] = relative_rmse(level, level.lm_pages, cycles)
        out["seconds"][str(b)] = {"brushbake": round(t1 - t0, 3), "cycles": round(t2 - t1, 3)}
        out["luxels"] = int(level.stats["light"]["luxels"])
    return out


def scenario_spot(args) -> dict:
    """A Blender spot light (90 degrees, blend 0.3) 2 m over a plane, baked by Cycles (direct
    diffuse), against the core's rule: the point light's value times lm_direct.spot_factor."""
    bpy = setup()
    import math

    from brushbake.addon import lightmap
    from brushbake.core.compile.light.lm_direct import SourceLight, spot_factor
    from brushbake.core.model.light_units import POINT_VALUE_PER_WATT

    scene = bpy.context.scene
    scene.render.engine = "CYCLES"
    scene.cycles.device, scene.cycles.samples = "CPU", 4
    mesh = bpy.data.meshes.new("plane")
    mesh.from_pydata([(-4, -4, 0), (4, -4, 0), (4, 4, 0), (-4, 4, 0)], [], [(0, 1, 2, 3)])
    uv = mesh.uv_layers.new(name="uv")
    uv.data.foreach_set("uv", np.array([0, 0, 1, 0, 1, 1, 0, 1], np.float32))
    img = lightmap.page_image("spot bake", np.zeros((64, 64, 3), np.float32))
    mesh.materials.append(lightmap._material("spot", img, emission=False, reflectance=0.5))
    plane = bpy.data.objects.new("plane", mesh)
    scene.collection.objects.link(plane)
    data = bpy.data.lights.new("spot", "SPOT")
    data.energy, data.shadow_soft_size, data.spot_size, data.spot_blend = 1000.0, 0.0, math.radians(90), 0.3
    lamp = bpy.data.objects.new("spot", data)
    lamp.location = (0, 0, 2)
    scene.collection.objects.link(lamp)
    for o in scene.objects:
        o.select_set(False)
    plane.select_set(True)
    bpy.context.view_layer.objects.active = plane
    scene.render.bake.use_pass_direct, scene.render.bake.use_pass_indirect, scene.render.bake.use_pass_color = True, False, False
    bpy.ops.object.bake(type="DIFFUSE", pass_filter={"DIRECT"}, margin=0)
    got = lightmap.image_page(img)[..., 0]
    c = (np.arange(64) + 0.5) / 64 * 8 - 4
    x, y = np.meshgrid(c, c)
    rel = np.stack([x, y, np.full_like(x, -2.0)], axis=-1).reshape(-1, 3)
    d = np.linalg.norm(rel, axis=1)
    light = SourceLight("spot", "spot", np.array([0, 0, 2.0]), np.ones(3), np.array([0, 0, -1.0]),
                        cos_half=math.cos(math.radians(45)), smooth=0.3 * (1 - math.cos(math.radians(45))))
    want = 1000.0 * POINT_VALUE_PER_WATT * (2.0 / d) / d ** 2 * spot_factor(light, rel / d[:, None])
    lit = want > 0.05 * want.max()
    rel_err = np.abs(got.ravel()[lit] / want[lit] - 1)
    return {"max_abs": float(np.abs(got.ravel() - want).max()), "peak": float(want.max()),
            "median_rel": float(np.median(rel_err)), "p95_rel": float(np.percentile(rel_err, 95))}


def scenario_camera(args) -> dict:
    """Issue 19 point 3: two rooms joined by a door, baked with Visibility; a camera in the first
    looking at the wall.  Its brushbake camera follows Blender's (yaw, pitch, field of view); the
    'Camera view' overlay in portal mode draws nothing of the second room while the PVS does; the
    sidebar counts portal <= frustum <= pvs and change when the camera turns to the door; the
    stats operator reports and stores them (and is refused without a bake); a viewport view
    converts too; every panel draws."""
    import math

    bpy = setup()
    import mathutils

    from brushbake.addon import camera_view, overlays, panels, storage

    out: dict = {}
    scene = bpy.context.scene
    settings = scene.brushbake
    out["defaults"] = [settings.cull_mode, settings.cull_use_view]
    cam_data = bpy.data.cameras.new("cam")
    cam_obj = bpy.data.objects.new("cam", cam_data)
    scene.collection.objects.link(cam_obj)
    scene.camera = cam_obj
    out["stats_without_bake"] = call(bpy.ops.brushbake.camera_stats)
    walls = [box(bpy, "floor", (-0.5, -0.5, -0.5), (13.5, 6.5, 0)), box(bpy, "roof", (-0.5, -0.5, 3), (13.5, 6.5, 3.5)),
             box(bpy, "w", (-0.5, -0.5, 0), (0, 6.5, 3)), box(bpy, "e", (13, -0.5, 0), (13.5, 6.5, 3)),
             box(bpy, "s", (0, -0.5, 0), (13, 0, 3)), box(bpy, "n", (0, 6, 0), (13, 6.5, 3)),
             box(bpy, "wall", (6, 0, 0), (7, 5, 3)), box(bpy, "lintel", (6, 5, 2.5), (7, 6, 3))]
    marker = bpy.data.objects.new("start", None)
    scene.collection.objects.link(marker)
    marker.location = (1.0, 1.0, 1.0)
    marker.brushbake.role = "INSIDE_MARKER"
    select(bpy, walls + [marker])
    settings.use_vis = True
    out["bake"] = call(bpy.ops.brushbake.bake)
    level = storage.load_level(scene)
    out["has_portals"] = level.has_cull_portals
    # the camera at (2, 1.5, 1.5) looking along +X: Blender cameras look down their local -Z
    cam_obj.location = (2.0, 1.5, 1.5)
    cam_obj.rotation_euler = (math.pi / 2, 0.0, -math.pi / 2)
    cam_data.lens_unit = "FOV"
    cam_data.angle = math.radians(40.0)
    cam_data.clip_end = 100.0
    scene.render.resolution_x, scene.render.resolution_y = 1500, 1000
    bpy.context.view_layer.update()
    row, why = camera_view.camera_from_object(scene, cam_obj)
    out["camera_row"] = None if row is None else [round(float(v), 4) for v in row]
    behind = level.leaf_bounds[:, 0, 0] >= 7 - 1e-9
    leaves = {}
    for mode in camera_view.MODES:
        geom = camera_view.camera_overlay(level, row, mode)
        drawn = set(geom.tri_leaf.tolist())
        leaves[mode] = sorted(drawn)
        out[f"{mode}_behind"] = bool(any(behind[list(drawn)])) if drawn else False
        out[f"{mode}_triangles"] = geom.num_triangles
        out[f"{mode}_lines"] = len(geom.line_positions) // 2
    counts = camera_view.cull_counts(level, row)
    out["counts"] = {m: list(counts[m]) for m in camera_view.MODES}
    out["faces_total"] = counts["faces_total"]
    # the overlay the scene asks for
    settings.overlay = "CAMERA"
    settings.cull_mode = "portal"
    out["scene_overlay_triangles"] = overlays.geometry_for(scene).num_triangles
    # turn to the door (y 5..6): more is drawn
    cam_obj.rotation_euler = (math.pi / 2, 0.0, -math.pi / 2 + math.radians(35))
    bpy.context.view_layer.update()
    row2, _ = camera_view.camera_from_object(scene, cam_obj)
    out["turned_counts"] = {m: list(v) for m, v in camera_view.cull_counts(level, row2).items() if m != "faces_total"}
    out["turned_portal_behind"] = bool(any(behind[list(set(camera_view.camera_overlay(level, row2, "portal").tri_leaf.tolist()))]))
    out["stats"] = call(bpy.ops.brushbake.camera_stats)
    out["stats_text"] = settings.camera_stats
    # a viewport view: a perspective view at the same place converts to the same camera
    view = mathutils.Matrix.Translation((2.0, 1.5, 1.5)) @ mathutils.Euler((math.pi / 2, 0.0, -math.pi / 2)).to_matrix().to_4x4()
    proj = mathutils.Matrix(((1 / math.tan(math.radians(20)), 0, 0, 0), (0, 1.5 / math.tan(math.radians(20)), 0, 0),
                             (0, 0, -1.0, -0.2), (0, 0, -1, 0)))
    fake_rv3d = type("R", (), {"view_matrix": view.inverted(), "window_matrix": proj, "is_perspective": True,
                               "view_perspective": "PERSP"})()
    fake_space = type("S", (), {"clip_end": 1000.0})()
    vrow, _ = camera_view.camera_from_view(fake_space, fake_rv3d)
    out["view_row"] = [round(float(v), 4) for v in vrow]
    fake_rv3d.is_perspective = False
    out["ortho"] = camera_view.camera_from_view(fake_space, fake_rv3d)[1]
    # every panel draws
    problems: list = []
    drawn = {}
    for cls in panels.classes:
        if not hasattr(cls, "draw") or cls is panels.BRUSHBAKE_UL_hulls:
            continue
        calls: list = []
        fake = type("FakePanel", (), {"layout": LayoutRecorder(problems, calls)})()
        cls.draw(fake, bpy.context)
        drawn[cls.__name__] = len(calls)
    out["panel_problems"] = problems
    out["camera_panel_calls"] = drawn.get("BRUSHBAKE_PT_camera", 0)
    return out


def _room(bpy):
    """A closed room 4 x 3 x 3 m (six wall boxes) with a block in it, the brushes selected."""
    return [box(bpy, "floor", (-1, -1, -1), (5, 4, 0)), box(bpy, "ceiling", (-1, -1, 3), (5, 4, 4)),
            box(bpy, "west", (-1, -1, 0), (0, 4, 3)), box(bpy, "east", (4, -1, 0), (5, 4, 3)),
            box(bpy, "south", (0, -1, 0), (4, 0, 3)), box(bpy, "north", (0, 3, 0), (4, 4, 3)),
            box(bpy, "block", (2.5, 1.0, 0), (3.5, 2.0, 1.5))]


def _emissive_material(bpy, name, rgb, strength, principled=True, textured=False):
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    nt = mat.node_tree
    if principled:
        p = nt.nodes["Principled BSDF"]
        p.inputs["Emission Color"].default_value = (*rgb, 1.0)
        p.inputs["Emission Strength"].default_value = strength
        if textured:
            tex = nt.nodes.new("ShaderNodeTexNoise")
            nt.links.new(tex.outputs["Color"], p.inputs["Emission Color"])
    else:
        for n in list(nt.nodes):
            if n.type != "OUTPUT_MATERIAL":
                nt.nodes.remove(n)
        e = nt.nodes.new("ShaderNodeEmission")
        e.inputs["Color"].default_value = (*rgb, 1.0)
        e.inputs["Strength"].default_value = strength
        nt.links.new(e.outputs["Emission"], nt.nodes["Material Output"].inputs["Surface"])
    return mat


def _lit_room(bpy, kind: str):
    """The room lit only by an area light (kind 'area': a 1.2 x 0.6 m rectangle, 300 W, 5 cm under
    the ceiling, turned 30 degrees about Z) or only by an emissive brush (kind 'emissive': a
    1 x 1 x 0.1 m panel on the ceiling, Principled BSDF emission strength 60, warm white)."""
    import math

    scene = bpy.context.scene
    walls = _room(bpy)
    if kind == "area":
        data = bpy.data.lights.new("panel", "AREA")
        data.shape, data.size, data.size_y, data.energy = "RECTANGLE", 1.2, 0.6, 300.0
        data.color = (1.0, 0.9, 0.8)
        lamp = bpy.data.objects.new("panel", data)
        lamp.location = (1.2, 1.5, 2.95)
        lamp.rotation_euler = (0.0, 0.0, math.radians(30))
        scene.collection.objects.link(lamp)
    else:
        panel = box(bpy, "panel", (1.0, 1.0, 2.9), (2.0, 2.0, 3.0))
        panel.data.materials.append(_emissive_material(bpy, "glow", (1.0, 0.9, 0.8), 60.0))
        walls.append(panel)
    select(bpy, walls)
    s = scene.brushbake
    s.use_light, s.light_bounces, s.patch, s.use_bevels, s.luxel = True, 0, 1, False, 0.25
    return walls


def scenario_light_read(args) -> dict:
    """Blender's area lights (every shape, object scale, exposure, normalize off, temperature) and
    emissive materials (Principled, Emission shader, textured: a warning) read into the core scene
    as the bake gathers it."""
    bpy = setup()
    import math

    from brushbake.addon import bake, lightmap

    scene = bpy.context.scene
    out: dict = {}
    walls = _room(bpy)
    for shape, sx, sy in (("SQUARE", 0.5, 0.0), ("RECTANGLE", 1.0, 0.4), ("DISK", 0.6, 0.0), ("ELLIPSE", 1.0, 0.5)):
        data = bpy.data.lights.new(shape.lower(), "AREA")
        data.shape, data.size, data.energy, data.color = shape, sx, 100.0, (1.0, 0.5, 0.25)
        if sy:
            data.size_y = sy
        obj = bpy.data.objects.new(shape.lower(), data)
        obj.location = (1.0, 2.0, 2.9)
        obj.rotation_euler = (math.radians(90), 0.0, 0.0)  # -Z turned to +Y
        scene.collection.objects.link(obj)
    data = bpy.data.lights.new("tuned", "AREA")
    data.shape, data.size, data.energy, data.spread = "SQUARE", 0.5, 10.0, math.radians(60)
    data.exposure, data.normalize = 1.0, False
    data.use_temperature, data.temperature = True, 3000.0
    tuned = bpy.data.objects.new("tuned", data)
    tuned.scale = (3.0, 1.0, 1.0)  # a 1.5 x 0.5 m rectangle
    scene.collection.objects.link(tuned)
    glow = box(bpy, "glow", (1, 1, 2.9), (2, 2, 3))
    glow.data.materials.append(_emissive_material(bpy, "warm", (1.0, 0.8, 0.5), 4.0))
    tube = box(bpy, "tube", (3, 1, 2.9), (3.2, 2, 3))
    tube.data.materials.append(_emissive_material(bpy, "pure", (0.5, 1.0, 1.0), 2.0, principled=False))
    noisy = box(bpy, "noisy", (0.2, 2.2, 2.9), (0.6, 2.6, 3))
    noisy.data.materials.append(_emissive_material(bpy, "noise", (1, 1, 1), 3.0, textured=True))
    mixed = box(bpy, "mixed", (0.2, 0.2, 2.9), (0.6, 0.6, 3))
    mat = _emissive_material(bpy, "mix", (1, 1, 1), 3.0, principled=False)
    nt = mat.node_tree
    mix = nt.nodes.new("ShaderNodeMixShader")
    nt.links.new(nt.nodes["Emission"].outputs["Emission"], mix.inputs[1])
    nt.links.new(mix.outputs["Shader"], nt.nodes["Material Output"].inputs["Surface"])
    mixed.data.materials.append(mat)
    scene.brushbake.use_light = True
    core = bake.gather(bpy.context, walls + [glow, tube, noisy, mixed])
    for li in core.lights:
        out.setdefault(li.kind, {})[li.name] = {
            "power": li.power, "color": list(li.color), "shape": li.shape, "size": li.size, "size_y": li.size_y,
            "spread": li.spread, "direction": list(li.direction), "axis": list(li.axis), "texture": li.texture,
            "position": list(li.position)}
    out["textures"] = {b.name: sorted(set(t for t in b.textures if t)) for b in core.brushes}
    out["glow_faces"] = sum(t == "emit:warm" for b in core.brushes for t in b.textures)
    out["warnings"] = core.warnings
    out["temperature_color"] = list(data.temperature_color)
    # the operators: Bake with a warning still bakes; Bake with Cycles reads the emissive faces
    select(bpy, walls + [glow, noisy])
    s = scene.brushbake
    s.light_bounces, s.use_bevels, s.cycles_samples = 0, False, 4
    out["bake_op"] = call(bpy.ops.brushbake.bake)
    out["cycles_op"] = call(bpy.ops.brushbake.bake_cycles)
    out["cycles_status"] = s.status
    out["glow_materials"] = sorted(m.name for m in bpy.data.materials if " glow " in m.name)
    # core -> Blender -> core: an area light made by the importer reads back the same
    from brushbake.addon import bridge
    from brushbake.core.model.scene import Light, Scene

    made = Light("made", (1.0, 2.0, 2.5), color=(0.2, 0.4, 0.6), kind="area", power=75.0, shape="ellipse",
                 size=1.5, size_y=0.25, spread=45.0, direction=(0.0, 0.6, -0.8), axis=(0.0, 0.8, 0.6))
    coll = bpy.data.collections.new("imported")
    scene.collection.children.link(coll)
    bridge.objects_from_scene(Scene("s", lights=[made]), coll)
    bpy.context.view_layer.update()
    back = lightmap.core_light(coll.objects["made"])
    out["round_trip"] = {k: (list(getattr(back, k)) if isinstance(getattr(back, k), tuple) else getattr(back, k))
                         for k in ("kind", "power", "shape", "size", "size_y", "spread", "direction", "axis",
                                   "position", "color")}
    return out


def scenario_cycles_lit(args) -> dict:
    """A small room lit only by an area light or only by an emissive material (args: kind,
    samples, bounce counts), read by the add-on (bake.gather), baked by brushbake and by Cycles
    into the same pages: per-luxel relative RMSE per bounce count."""
    bpy = setup()
    import time

    from brushbake.addon import bake, lightmap
    from brushbake.core.compile.light.lightmap import face_emission
    from brushbake.core.compile.light.lm_compare import relative_rmse
    from brushbake.core.compile.pipeline import bake_scene

    kind, samples, bounces = args[0], int(args[1]), [int(b) for b in args[2:]]
    walls = _lit_room(bpy, kind)
    scene = bpy.context.scene
    core = bake.gather(bpy.context, walls)
    core.hulls = []
    s = core.settings
    s.light_threshold, s.shoot_fraction = 0.0, 1.0
    out: dict = {"rmse": {}, "seconds": {}, "lights": [(li.kind, li.power) for li in core.lights]}
    for b in bounces:
        s.bounces = b
        t0 = time.perf_counter()
        level = bake_scene(core)
        t1 = time.perf_counter()
        cycles = lightmap.bake_cycles(scene, level, samples=samples, bounces=b, reflectance=s.reflectance,
                                      emission=face_emission(core, level, s.map_scale))
        t2 = time.perf_counter()
        out["rmse"][str(b)] = relative_rmse(level, level.lm_pages, cycles)
        out["seconds"][str(b)] = {"brushbake": round(t1 - t0, 3), "cycles": round(t2 - t1, 3)}
        out["luxels"] = int(level.stats["light"]["luxels"])
        out["mean"] = [float(level.lm_pages.mean()), float(cycles.mean())]
    return out


def scenario_area_units(args) -> dict:
    """Cycles' units for area lights and emission, measured: a plane under one light (1 m up),
    Cycles' direct diffuse bake (args: samples) against the rule of core/model/light_units.py
    applied to the light as the add-on reads it (lightmap.core_light: radiance colour x P /
    (pi A), Cycles' spread) by a dense sum over the light's surface; and a 1 m square of
    Principled emission strength 1 against radiance 1.  Per case the median and 5-95% ratio
    Cycles / rule over the texels lit above 10% of the peak."""
    bpy = setup()
    import math

    from brushbake.addon import lightmap
    from brushbake.core.model.light_units import area_light_area, area_spread_factor, light_power

    samples = int(args[0]) if args else 32
    wanted = args[1].split(",") if len(args) > 1 else None  # the cases to run (default: all)
    scene = bpy.context.scene
    scene.render.engine = "CYCLES"
    scene.cycles.device, scene.cycles.samples, scene.cycles.seed = "CPU", samples, 0
    n = 40
    mesh = bpy.data.meshes.new("plane")
    mesh.from_pydata([(-3, -3, 0), (3, -3, 0), (3, 3, 0), (-3, 3, 0)], [], [(0, 1, 2, 3)])
    mesh.uv_layers.new(name="uv").data.foreach_set("uv", np.array([0, 0, 1, 0, 1, 1, 0, 1], np.float32))
    img = lightmap.page_image("units bake", np.zeros((n, n, 3), np.float32))
    mesh.materials.append(lightmap._material("units", img, emission=False, reflectance=0.5))
    plane = bpy.data.objects.new("plane", mesh)
    scene.collection.objects.link(plane)
    c = (np.arange(n) + 0.5) / n * 6 - 3
    px, py = [a.ravel() for a in np.meshgrid(c, c)]

    def cycles_bake():
        for o in scene.objects:
            o.select_set(False)
        plane.select_set(True)
        bpy.context.view_layer.objects.active = plane
        b = scene.render.bake
        b.use_pass_direct, b.use_pass_indirect, b.use_pass_color = True, False, False
        bpy.ops.object.bake(type="DIFFUSE", pass_filter={"DIRECT"}, margin=0, use_clear=True)
        return lightmap.image_page(img).astype(np.float64).reshape(-1, 3)

    def rule(li, radiance):
        """value = (1 / pi) sum L s(theta) cos cos / d^2 dA over a 240 x 240 grid on the light."""
        m = 240
        g = (np.arange(m) + 0.5) / m * 2 - 1
        u, v = [a.ravel() for a in np.meshgrid(g, g)]
        if li.shape in ("disk", "ellipse"):
            keep = u * u + v * v <= 1
            u, v = u[keep], v[keep]
        sy = li.size_y if li.shape in ("rectangle", "ellipse") else li.size
        nrm = np.asarray(li.direction)
        ax = np.asarray(li.axis) - np.dot(li.axis, nrm) * nrm
        ax = ax / np.linalg.norm(ax)
        ay = np.cross(nrm, ax)
        pts = np.asarray(li.position) + np.outer(u * li.size / 2, ax) + np.outer(v * sy / 2, ay)
        da = area_light_area(li) / len(pts)
        out = np.zeros(len(px))
        for k in range(0, len(pts), 4000):
            rel = pts[None, k:k + 4000] - np.stack([px, py, np.zeros_like(px)], 1)[:, None]
            d2 = (rel * rel).sum(-1)
            cos_r = np.maximum(rel[..., 2], 0) / np.sqrt(d2)
            cos_l = np.maximum(-(rel @ nrm), 0) / np.sqrt(d2)
            tan_l = np.sqrt(np.maximum(1 - cos_l ** 2, 0)) / np.maximum(cos_l, 1e-12)
            out += (area_spread_factor(li.spread, tan_l) * cos_r * cos_l / d2).sum(1) * da
        return out[:, None] * np.asarray(radiance)[None, :] / math.pi

    def compare(got, want):
        lit = want[:, 0] > 0.1 * want[:, 0].max()
        r = got[lit] / want[lit]
        return {"median": float(np.median(r)), "p5": float(np.percentile(r, 5)), "p95": float(np.percentile(r, 95)),
                "peak_cycles": float(got[:, 0].max()), "peak_rule": float(want[:, 0].max())}

    out: dict = {}
    cases = [("square", "SQUARE", 1.0, 1.0, {}), ("rectangle", "RECTANGLE", 2.0, 0.5, {}),
             ("disk", "DISK", 1.0, 1.0, {}), ("ellipse", "ELLIPSE", 2.0, 0.5, {}),
             ("spread_90", "SQUARE", 1.0, 1.0, {"spread": math.radians(90)}),
             ("tuned", "RECTANGLE", 0.5, 0.4, {"exposure": 1.0, "normalize": False, "use_temperature": True,
                                                "temperature": 3000.0, "scale": (2.0, 1.0, 1.0), "turn": 30,
                                                "diffuse_factor": 0.5})]
    for name, shape, sx, sy, extra in cases:
        if wanted is not None and name not in wanted:
            continue
        data = bpy.data.lights.new(name, "AREA")
        data.shape, data.size, data.size_y, data.energy, data.color = shape, sx, sy, 100.0, (1.0, 0.7, 0.4)
        for key in ("spread", "exposure", "normalize", "use_temperature", "temperature", "diffuse_factor"):
            if key in extra:
                setattr(data, key, extra[key])
        obj = bpy.data.objects.new(name, data)
        obj.location = (0.0, 0.0, 1.0)
        obj.scale = extra.get("scale", (1.0, 1.0, 1.0))
        obj.rotation_euler = (0.0, 0.0, math.radians(extra.get("turn", 0)))
        scene.collection.objects.link(obj)
        bpy.context.view_layer.update()
        li = lightmap.core_light(obj)
        radiance = np.asarray(li.color) * light_power(li, 1 / 32) / (math.pi * area_light_area(li))
        out[name] = compare(cycles_bake(), rule(li, radiance))
        out[name].update(kind=li.kind, shape=li.shape, size=li.size, size_y=li.size_y, power=li.power)
        bpy.data.objects.remove(obj)
    if wanted is not None and "emission_1" not in wanted:
        return out
    em = bpy.data.meshes.new("em")
    em.from_pydata([(-.5, -.5, 1), (.5, -.5, 1), (.5, .5, 1), (-.5, .5, 1)], [], [(0, 3, 2, 1)])
    mat = bpy.data.materials.new("em")
    mat.use_nodes = True
    p = mat.node_tree.nodes["Principled BSDF"]
    p.inputs["Emission Strength"].default_value, p.inputs["Emission Color"].default_value = 1.0, (1, 1, 1, 1)
    p.inputs["Base Color"].default_value = (0, 0, 0, 1)
    em.materials.append(mat)
    scene.collection.objects.link(bpy.data.objects.new("em", em))
    from brushbake.core.model.scene import Light

    square = Light("em", (0, 0, 1), kind="area", shape="square", size=1.0, direction=(0, 0, -1))
    out["emission_1"] = compare(cycles_bake(), rule(square, (1.0, 1.0, 1.0)))
    return out


def main(argv) -> int:
    name, args = argv[1], argv[2:]
    try:
        result = globals()[f"scenario_{name}"](args)
    except Exception:
        result = {"error": traceback.format_exc()}
    sys.stdout.flush()
    print(RESULT_PREFIX + json.dumps(result, sort_keys=True, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
