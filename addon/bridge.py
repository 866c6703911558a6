"""The bridge between Blender objects and core scenes, both ways.

Blender -> core (:func:`scene_from_objects`): each object's role (``object.brushbake.role``) says
what it is; mesh objects with a brush role become brushes through ``brush_from_mesh`` with their
vertices in world space (object transforms and modifiers applied), inside markers become markers.
Any bad brush raises the core's typed error, which names the object.

Core -> Blender (:func:`objects_from_scene`, used by Import .map and sample_scenes/make_blend.py):
one mesh object per brush, its role from the brush's contents, and three custom properties:

* ``brushbake_planes``: the brush's own planes (n.x, n.y, n.z, d per plane, float64, world space);
* ``brushbake_name``: the brush's name in the source file ('q1_rocks.map:entity0:brush3');
* ``brushbake_order``: its position in the source file.

Why keep the planes: a .map brush is defined by planes; its vertices are derived, and Blender
stores them as float32.  Planes rebuilt from those rounded vertices differ from the file's in the
last bits, so a bake in Blender would not give the same bytes as ``python -m brushbake bake``
on the .map.  With the planes kept, the bridge builds the brush from exactly the planes the .map
loader used, in the same order and with the same names, and both paths give the same file byte for
byte (tests/addon checks it).  The planes are trusted only while the mesh still agrees with them:
if the object has been moved or edited, its world-space vertices no longer match the brush the
planes make, and the brush is built from the mesh instead, as for any other object.
"""

from dataclasses import dataclass

import bpy
import numpy as np

from ..core.model.brushes import Brush, Contents, brush_from_mesh, brush_from_planes
from ..core.errors import BrushbakeError, BrushError
from ..core.model.hulls import make_hull
from ..core.model.light_units import light_power
from ..core.model.scene import DetailMesh, Hull, Marker, Scene, Settings
from ..core.model.setting_specs import SPECS, from_float32
from ..core.tolerances import PLANES_MATCH_TOLERANCE
from .roles import CONTENTS_ROLE, ROLE_CONTENTS

PLANES_KEY = "brushbake_planes"
NAME_KEY = "brushbake_name"
ORDER_KEY = "brushbake_order"
KIND_KEY = "brushbake_kind"

BRUSH_ROLES = frozenset(ROLE_CONTENTS) | {"MOVER"}


# ------------------------------------------------------------------------------------------------
# Blender -> core


def objects_to_bake(context) -> list:
    """The objects a bake reads: the selection, or the chosen collection's objects (with children)."""
    settings = context.scene.brushbake
    if settings.source == "COLLECTION":
        if settings.collection is None:
            raise BrushbakeError("No collection is chosen to bake.",
                                 hint="Pick a collection in the Bake panel, or bake the selection instead.")
        objects = list(settings.collection.all_objects)
    else:
        objects = list(context.selected_objects)
    return sort_objects(objects)


def sort_objects(objects) -> list:
    """Source-file order first (imported brushes), then by name: the same objects always give the
    same scene, whatever the selection order."""
    return sorted(objects, key=lambda ob: (ob.get(ORDER_KEY, float("inf")), ob.name))


def world_mesh(obj, depsgraph=None) -> tuple[np.ndarray, list[list[int]]]:
    """World-space vertices (V, 3) float64 and polygons of a mesh object, modifiers applied."""
    evaluated = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    mesh = evaluated.to_mesh()
    try:
        co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
        mesh.vertices.foreach_get("co", co)
        local = co.astype(np.float64).reshape(-1, 3)
        matrix = np.array(obj.matrix_world, dtype=np.float64)
        verts = local @ matrix[:3, :3].T + matrix[:3, 3]
        faces = [list(p.vertices) for p in mesh.polygons]
    finally:
        evaluated.to_mesh_clear()
    return verts, faces


def brush_name(obj) -> str:
    """The brush's name in the level: the source name kept at import, unless the object was renamed."""
    source = obj.get(NAME_KEY)
    if isinstance(source, str) and source[:63] == obj.name:
        return source
    return obj.name


def kept_planes_brush(obj, verts: np.ndarray, contents: Contents) -> Brush | None:
    """The brush from the object's kept source planes, if the mesh still agrees with them."""
    planes = obj.get(PLANES_KEY)
    if planes is None:
        return None
    planes = np.asarray(list(planes), dtype=np.float64).reshape(-1, 4)
    try:
        brush = brush_from_planes(planes[:, :3], planes[:, 3], brush_name(obj), contents)
    except BrushbakeError:
        return None
    corners = brush.vertices
    if len(corners) != len(verts):
        return None
    gap = np.linalg.norm(verts[:, None, :] - corners[None, :, :], axis=2).min(axis=1)
    return brush if float(gap.max()) <= PLANES_MATCH_TOLERANCE else None


def brush_from_object(obj, depsgraph=None) -> Brush:
    """A brush from a mesh object with a brush role.  Raises the core's typed error naming it."""
    role = obj.brushbake.role
    contents = ROLE_CONTENTS.get(role, Contents.NONSOLID)
    verts, faces = world_mesh(obj, depsgraph)
    brush = kept_planes_brush(obj, verts, contents)
    if brush is None:
        brush = brush_from_mesh(verts, faces, brush_name(obj), contents)
    return brush


def hulls_from_settings(settings) -> list[Hull]:
    """The scene's hull list as core hulls.  Raises BrushbakeError for a bad size or name."""
    hulls = [make_hull(h.name, h.mins, h.maxs) for h in settings.hulls]
    names = [h.name for h in hulls]
    if len(set(names)) != len(names) or "point" in names:
        raise BrushbakeError(f"Hull names must be different and not 'point' (got {', '.join(names)}).",
                             hint="Rename the hulls in the Hulls panel.")
    return hulls


def core_settings(settings) -> Settings:
    """Compile settings from the scene's PropertyGroup, copied by the table
    (core/model/setting_specs.py) as addon/properties.py made them: a float as the decimal typed
    (Blender keeps float32: 0.1 is 0.1, as on the command line), a toggled-off choice as its off
    value (Visibility off: vis 'none').  Raises InvalidSettingError for a value out of range (NaN:
    Blender clamps the rest)."""
    values = {}
    for spec in SPECS:
        if spec.prop_name is None:
            continue
        value = getattr(settings, spec.prop_name)
        if spec.toggle is not None and not getattr(settings, spec.toggle.prop):
            value = spec.toggle.off_value
        elif spec.kind is float:
            value = from_float32(value)
        values[spec.name] = value
    return Settings(**values)


def scene_from_objects(objects, settings, name: str = "blender", depsgraph=None) -> Scene:
    """A core Scene from Blender objects (in the given order) and the scene's settings.

    Raises BrushbakeError when nothing is there to bake, and the core's typed brush errors (naming
    the object) for a mesh that is not a closed convex solid.
    """
    scene = Scene(name=name, hulls=hulls_from_settings(settings), settings=core_settings(settings))
    for obj in objects:
        role = obj.brushbake.role
        if role == "INSIDE_MARKER":
            position = tuple(float(v) for v in obj.matrix_world.translation)
            scene.markers.append(Marker(obj.name, str(obj.get(KIND_KEY, "inside")), position))
        elif obj.type == "MESH" and role in BRUSH_ROLES:
            try:
                brush = brush_from_object(obj, depsgraph)
            except BrushError:
                if role != "NONSOLID":
                    raise
                # a non-solid mesh need not be a convex brush: it is render-only detail
                verts, faces = world_mesh(obj, depsgraph)
                scene.detail_meshes.append(DetailMesh(obj.name, verts, faces))
                continue
            if settings.use_light and role != "MOVER":  # faces of emissive materials emit (addon/emission.py)
                from .emission import tag_emissive_faces

                tag_emissive_faces(obj, brush, scene, depsgraph)
            (scene.movers if role == "MOVER" else scene.brushes).append(brush)
    if not scene.brushes:
        raise BrushbakeError(
            "Nothing to bake: no mesh object with a brush role is selected.",
            hint="Select the level's brush meshes (or choose a collection in the Bake panel) and bake again.",
        )
    return scene


# ------------------------------------------------------------------------------------------------
# core -> Blender


def _area_light_object(obj, data, light) -> None:
    """An area light object as the core light: shape and sizes, spread, its -Z along the light's
    direction and its X along the light's axis."""
    from mathutils import Matrix

    data.shape = light.shape.upper()
    data.size, data.size_y, data.spread = light.size, light.size_y, np.radians(light.spread)
    z = -np.asarray(light.direction, dtype=np.float64)
    z = z / np.linalg.norm(z)
    x = np.asarray(light.axis, dtype=np.float64) - np.dot(light.axis, z) * z
    if np.linalg.norm(x) < 1e-9:
        x = np.cross(z, [0.0, 1.0, 0.0] if abs(z[1]) < 0.9 else [1.0, 0.0, 0.0])
    x = x / np.linalg.norm(x)
    y = np.cross(z, x)
    obj.rotation_euler = Matrix(np.stack([x, y, z], axis=1).tolist()).to_euler()


@dataclass
class ImportCounts:
    brushes: int = 0
    details: int = 0
    markers: int = 0
    lights: int = 0


def mesh_from_brush(brush: Brush, name: str):
    """A Blender mesh of a brush's faces, with vertices relative to the brush's centre.

    Returns (mesh, centre) so the object can sit at the centre (a sensible origin for editing).
    """
    corners = brush.vertices
    centre = 0.5 * (corners.min(axis=0) + corners.max(axis=0))
    keys = {tuple(np.round(v, 9)): i for i, v in enumerate(corners)}
    polys = [[keys[tuple(np.round(v, 9))] for v in face] for face in brush.faces]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata((corners - centre).tolist(), [], polys)
    mesh.validate()
    mesh.update()
    return mesh, centre


def objects_from_scene(core_scene: Scene, collection) -> ImportCounts:
    """Create one object per brush (and detail mesh, marker, light) of a core scene in `collection`.

    Brushes keep their source planes, names and order (see the module docstring), so baking the
    objects gives the same level as baking the scene file.
    """
    counts = ImportCounts()
    everything = [(b, CONTENTS_ROLE[b.contents]) for b in core_scene.brushes] + [(b, "MOVER") for b in core_scene.movers]
    for order, (brush, role) in enumerate(everything):
        short = brush.name[-63:] if len(brush.name) > 63 else brush.name
        mesh, centre = mesh_from_brush(brush, short)
        obj = bpy.data.objects.new(short, mesh)
        obj.location = centre.tolist()
        obj.brushbake.role = role
        obj[PLANES_KEY] = np.column_stack([brush.normals, brush.dists]).reshape(-1).tolist()
        obj[NAME_KEY] = brush.name
        obj[ORDER_KEY] = order
        if role in ("NONSOLID", "CLIP", "MOVER"):
            obj.display_type = "WIRE"
        collection.objects.link(obj)
        counts.brushes += 1
    for detail in core_scene.detail_meshes:
        # render-only geometry: never part of the collision (the core ignores detail meshes too)
        mesh = bpy.data.meshes.new(detail.name[-63:])
        mesh.from_pydata(np.asarray(detail.vertices, dtype=np.float64).tolist(), [], [list(f) for f in detail.faces])
        mesh.update()
        obj = bpy.data.objects.new(detail.name[-63:], mesh)
        obj.brushbake.role = "IGNORE"
        collection.objects.link(obj)
        counts.details += 1
    for marker in core_scene.markers:
        obj = bpy.data.objects.new(marker.name[-63:], None)
        obj.empty_display_type = "SINGLE_ARROW"
        obj.location = marker.position
        obj.rotation_euler[2] = np.radians(marker.angle)
        obj.brushbake.role = "INSIDE_MARKER"
        obj[KIND_KEY] = marker.kind
        collection.objects.link(obj)
        counts.markers += 1
    for light in core_scene.lights:
        if light.kind == "surface":
            continue  # emitting faces, not a light object
        data = bpy.data.lights.new(light.name[-63:], light.kind.upper())
        data.color = light.color
        data.energy = float(light_power(light, core_scene.settings.map_scale))  # watts / W/m^2, the .map rule
        obj = bpy.data.objects.new(light.name[-63:], data)
        obj.location = light.position
        if light.kind in ("spot", "sun"):  # a Blender light shines along its -Z
            from mathutils import Vector

            obj.rotation_euler = Vector((0.0, 0.0, -1.0)).rotation_difference(Vector(light.direction)).to_euler()
        if light.kind == "spot":
            data.spot_size, data.spot_blend = np.radians(light.spot_size), light.spot_blend
        if light.kind == "sun":
            data.angle = np.radians(light.radius)
        elif light.kind == "area":
            _area_light_object(obj, data, light)
        else:
            data.shadow_soft_size = light.radius
        collection.objects.link(obj)
        counts.lights += 1
    return counts


def settings_from_scene(core_scene: Scene, settings) -> None:
    """Copy a core scene's hulls and compile settings into the scene's PropertyGroup."""
    settings.hulls.clear()
    for hull in core_scene.hulls:
        item = settings.hulls.add()
        item.name, item.mins, item.maxs = hull.name, hull.mins, hull.maxs
    settings.active_hull = 0
    s = core_scene.settings
    settings.splitter, settings.split_weight, settings.max_candidates = s.splitter, s.split_weight, s.max_candidates
