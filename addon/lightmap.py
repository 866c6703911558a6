"""Lightmaps in Blender: Blender lights into core lights, preview meshes showing the baked pages
through their lightmap UVs, and 'Bake with Cycles' into the same pages with a difference image.

- :func:`core_light` turns a point, spot, sun or area light object into a core Light in the same
  units (watts, W/m^2; Blender's radius and sun angle for soft shadows; an area light's shape,
  size and size_y times the object's scale, its spread, its local X), so the bake sees what
  Cycles renders (core/model/light_units.py).  Power is Blender's Power x 2^Exposure, colour its
  Color x the blackbody colour when Temperature is on; an area light with Normalize off keeps its
  radiance P / pi whatever its size (power x area here).  The light's Diffuse factor is EEVEE's:
  Cycles' bake ignores it (measured), and so does the reader.  Emissive materials on brushes are
  read by addon/emission.py.
- :func:`show_lightmap` builds one mesh of the level's lit faces ('brushbake lightmap' in the
  'brushbake lightmap' collection) with the UV map 'lightmap' and one material per page: the page
  image (float, linear) through the lightmap UVs into an Emission shader, so Material Preview and
  renders show exactly the baked light.
- :func:`bake_cycles` bakes Blender's own diffuse lighting (Cycles, DIFFUSE pass, direct and
  indirect, colour off: the same E / pi a page holds) onto that mesh, every other mesh hidden
  from render, the lights of the scene left as they are, the faces given a Diffuse BSDF of the
  bake's reflectance (and faces that emit in the bake, given as `emission`, an Emission shader of
  that radiance added), into float images laid out exactly as the pages.  :func:`difference_images`
  shows |ours - Cycles| / Cycles per texel.  :func:`relative_rmse` is the comparison's figure.
"""

from __future__ import annotations

import math

import bpy
import numpy as np

from ..core.model.light_units import area_light_area
from ..core.model.scene import Light
from .preview import preview_collection

COLLECTION = "brushbake lightmap"
OBJECT = "brushbake lightmap"
UV_NAME = "lightmap"


#: Blender's smallest area light spread read (degrees): below it a spread is read as this (the
#: parallel beam of spread 0 has no form the core models), with a warning
MIN_SPREAD = 1.0


def core_light(obj, warnings: list | None = None) -> Light | None:
    """A core Light for a Blender light object (None for a kind the core has not)."""
    data = obj.data
    kind = {"POINT": "point", "SPOT": "spot", "SUN": "sun", "AREA": "area"}.get(data.type)
    if kind is None:
        return None
    m = obj.matrix_world
    rot = m.to_3x3()
    direction = tuple(float(v) for v in (rot @ _vec((0.0, 0.0, -1.0))).normalized())
    power = float(data.energy) * 2.0 ** float(getattr(data, "exposure", 0.0))  # (Diffuse factor: EEVEE's only)
    color = [float(c) for c in data.color]
    if getattr(data, "use_temperature", False):
        color = [c * float(t) for c, t in zip(color, data.temperature_color)]
    light = Light(obj.name, tuple(float(v) for v in m.translation), color=tuple(color), kind=kind, power=power,
                  direction=direction)
    if warnings is not None and getattr(data, "use_nodes", False):
        warnings.append(f"Light {obj.name!r}: its shader nodes are not read (only Color and Power).")
    if kind == "area":
        _area_light(light, data, rot, warnings)
    elif kind == "sun":
        light.radius = math.degrees(float(data.angle))
    else:
        light.radius = float(data.shadow_soft_size)
    if kind == "spot":
        light.spot_size = math.degrees(float(data.spot_size))
        light.spot_blend = float(data.spot_blend)
    return light


def _area_light(light: Light, data, rot, warnings: list | None) -> None:
    """Shape, sizes (times the object's scale along the light's X and Y: a square scaled unevenly
    is a rectangle, a disk an ellipse, as Cycles draws them), spread, local X; Normalize off."""
    shape = data.shape.lower()
    sx, sy = rot.col[0].length, rot.col[1].length
    size_x = float(data.size) * sx
    size_y = float(data.size_y if shape in ("rectangle", "ellipse") else data.size) * sy
    if shape in ("square", "disk") and abs(size_x - size_y) > 1e-9 * max(size_x, size_y):
        shape = {"square": "rectangle", "disk": "ellipse"}[shape]
    light.shape, light.size, light.size_y = shape, size_x, size_y
    spread = math.degrees(float(data.spread))
    if spread < MIN_SPREAD:
        if warnings is not None:
            warnings.append(f"Light {light.name!r}: a spread of {spread:.3g} degrees is read as {MIN_SPREAD:g} "
                            "(a parallel beam is not modelled).")
        spread = MIN_SPREAD
    light.spread = min(spread, 180.0)
    light.axis = tuple(float(v) for v in rot.col[0].normalized())
    if not getattr(data, "normalize", True):  # radiance P / pi, not P / (pi A)
        light.power = light.power * area_light_area(light)


def _vec(v):
    from mathutils import Vector

    return Vector(v)


def scene_lights(scene, warnings: list | None = None) -> list[Light]:
    """The core lights of every render-visible light object of the scene (sorted by name)."""
    out = []
    for obj in sorted(scene.objects, key=lambda o: o.name):
        if obj.type == "LIGHT" and not obj.hide_render:
            light = core_light(obj, warnings)
            if light is not None:
                out.append(light)
    return out


def page_image(name: str, page: np.ndarray):
    """A float image (linear) of an (S, S, 3) page, replacing any image of that name."""
    s = page.shape[0]
    old = bpy.data.images.get(name)
    if old is not None:
        bpy.data.images.remove(old)
    img = bpy.data.images.new(name, s, s, alpha=False, float_buffer=True)
    img.colorspace_settings.name = "Non-Color"
    rgba = np.ones((s, s, 4), dtype=np.float32)
    rgba[..., :3] = page
    img.pixels.foreach_set(rgba.ravel())
    img.pack()
    return img


def image_page(img) -> np.ndarray:
    s = img.size[0]
    px = np.empty(s * s * 4, dtype=np.float32)
    img.pixels.foreach_get(px)
    return px.reshape(s, s, 4)[..., :3].copy()


def lit_mesh(level, name: str):
    """A mesh of the level's faces that have a chart, UV map 'lightmap', material index = page."""
    lit = np.flatnonzero(np.asarray(level.lm_face_page) >= 0)
    first = np.asarray(level.face_first_vertex)[lit]
    count = np.asarray(level.face_num_vertices)[lit]
    index = np.concatenate([np.arange(a, a + c) for a, c in zip(first.tolist(), count.tolist())]) if len(lit) else []
    mesh = bpy.data.meshes.new(name)
    verts = np.asarray(level.vertices)[index]
    loops = np.arange(len(index))
    starts = np.concatenate([[0], np.cumsum(count)[:-1]]) if len(lit) else []
    mesh.from_pydata(verts.tolist(), [], [loops[s : s + c].tolist() for s, c in zip(list(starts), count.tolist())])
    uv = mesh.uv_layers.new(name=UV_NAME)
    uv.data.foreach_set("uv", np.asarray(level.lm_vertex_uv, dtype=np.float32)[index].ravel())
    mesh.polygons.foreach_set("material_index", np.asarray(level.lm_face_page, dtype=np.int32)[lit])
    mesh.update()
    return mesh


def _material(name: str, image, emission: bool, reflectance: float = 0.5, glow=None):
    mat = bpy.data.materials.get(name) or bpy.data.materials.new(name)
    mat.use_nodes = True
    nt = mat.node_tree
    nt.nodes.clear()
    out = nt.nodes.new("ShaderNodeOutputMaterial")
    tex = nt.nodes.new("ShaderNodeTexImage")
    tex.image = image
    tex.interpolation = "Linear"
    uv = nt.nodes.new("ShaderNodeUVMap")
    uv.uv_map = UV_NAME
    nt.links.new(uv.outputs["UV"], tex.inputs["Vector"])
    if emission:
        shader = nt.nodes.new("ShaderNodeEmission")
        nt.links.new(tex.outputs["Color"], shader.inputs["Color"])
        nt.links.new(shader.outputs["Emission"], out.inputs["Surface"])
    else:  # Cycles bakes into the active image node; the surface is a plain Lambertian
        shader = nt.nodes.new("ShaderNodeBsdfDiffuse")
        shader.inputs["Color"].default_value = (reflectance, reflectance, reflectance, 1.0)
        if glow is None:
            nt.links.new(shader.outputs["BSDF"], out.inputs["Surface"])
        else:  # an emitting face: its radiance added to the diffuse surface
            light = nt.nodes.new("ShaderNodeEmission")
            light.inputs["Color"].default_value = (*[float(c) for c in glow], 1.0)
            light.inputs["Strength"].default_value = 1.0
            both = nt.nodes.new("ShaderNodeAddShader")
            nt.links.new(shader.outputs["BSDF"], both.inputs[0])
            nt.links.new(light.outputs["Emission"], both.inputs[1])
            nt.links.new(both.outputs["Shader"], out.inputs["Surface"])
    nt.nodes.active = tex
    return mat


def _replace_object(scene, name: str, mesh):
    old = bpy.data.objects.get(name)
    if old is not None:
        bpy.data.objects.remove(old, do_unlink=True)
    obj = bpy.data.objects.new(name, mesh)
    preview_collection(scene, COLLECTION).objects.link(obj)
    return obj


def show_lightmap(scene, level, view: str = "BAKED"):
    """The preview object: the lit faces with the pages (view 'BAKED'), Cycles' bake of them
    ('CYCLES') or the difference ('DIFFERENCE') as emission through the lightmap UVs."""
    from ..core.errors import BrushbakeError

    prefix = {"BAKED": "brushbake lightmap", "CYCLES": "brushbake cycles", "DIFFERENCE": "brushbake difference"}[view]
    mesh = lit_mesh(level, OBJECT)
    for k in range(len(level.lm_pages)):
        if view == "BAKED":
            img = page_image(f"{prefix} {k}", level.lm_pages[k])
        else:
            img = bpy.data.images.get(f"{prefix} {k}")
            if img is None:
                bpy.data.meshes.remove(mesh)
                raise BrushbakeError(f"There is no '{prefix} {k}' image yet.", hint="Press Bake with Cycles first.")
        mesh.materials.append(_material(f"brushbake lightmap {k}", img, emission=True))
    return _replace_object(scene, OBJECT, mesh)


def bake_cycles(scene, level, samples: int = 64, bounces: int = 8, reflectance: float = 0.5,
                emission: np.ndarray | None = None) -> np.ndarray:
    """(K, S, S, 3) Cycles' diffuse light baked into the level's pages (see the module's notes).
    emission: (F, 3) radiance of the level's faces that emit (core.compile.lightmap.face_emission),
    or None.  Every other mesh is hidden from render during the bake and restored after."""
    k, s = len(level.lm_pages), level.lm_pages.shape[1]
    mesh = lit_mesh(level, "brushbake cycles bake")
    images = []
    for p in range(k):
        img = page_image(f"brushbake cycles {p}", np.zeros((s, s, 3), np.float32))
        images.append(img)
        mesh.materials.append(_material(f"brushbake cycles {p}", img, emission=False, reflectance=reflectance))
    _glowing_faces(mesh, level, images, emission, reflectance)
    obj = _replace_object(scene, "brushbake cycles bake", mesh)
    hidden = [o for o in scene.objects if o.type == "MESH" and o is not obj and not o.hide_render]
    for o in hidden:
        o.hide_render = True
    saved = (scene.render.engine, scene.cycles.samples, scene.cycles.max_bounces, scene.cycles.diffuse_bounces,
             scene.cycles.sample_clamp_direct, scene.cycles.sample_clamp_indirect)
    try:
        scene.render.engine = "CYCLES"
        scene.cycles.device = "CPU"
        scene.cycles.samples = int(samples)
        scene.cycles.use_denoising = False
        scene.cycles.seed = 0
        scene.cycles.sample_clamp_direct = scene.cycles.sample_clamp_indirect = 0.0  # no clamping: all the energy
        scene.cycles.max_bounces = scene.cycles.diffuse_bounces = int(bounces)
        bake = scene.render.bake
        bake.use_pass_direct, bake.use_pass_indirect, bake.use_pass_color = True, bounces > 0, False
        bake.margin, bake.margin_type = 1, "EXTEND"
        for o in scene.objects:
            o.select_set(False)
        obj.select_set(True)
        bpy.context.view_layer.objects.active = obj
        passes = {"DIRECT", "INDIRECT"} if bounces > 0 else {"DIRECT"}
        bpy.ops.object.bake(type="DIFFUSE", pass_filter=passes, margin=1, use_clear=True)
        return np.stack([image_page(img) for img in images]) if images else np.zeros((0, s, s, 3), np.float32)
    finally:
        for o in hidden:
            o.hide_render = False
        scene.render.engine = saved[0]
        (scene.cycles.samples, scene.cycles.max_bounces, scene.cycles.diffuse_bounces,
         scene.cycles.sample_clamp_direct, scene.cycles.sample_clamp_indirect) = saved[1:]
        bpy.data.objects.remove(obj, do_unlink=True)


def _glowing_faces(mesh, level, images, emission, reflectance: float) -> None:
    """Faces that emit get a material of their page's image with their radiance added (one per
    page and radiance, after the K page materials)."""
    if emission is None:
        return
    lit = np.flatnonzero(np.asarray(level.lm_face_page) >= 0)
    index = np.asarray(level.lm_face_page, dtype=np.int32)[lit].copy()
    made: dict = {}
    for row, f in enumerate(lit.tolist()):
        rgb = tuple(float(c) for c in emission[f])
        if max(rgb) <= 0:
            continue
        key = (int(index[row]), rgb)
        if key not in made:
            made[key] = len(mesh.materials)
            mesh.materials.append(_material(f"brushbake cycles {key[0]} glow {len(made)}", images[key[0]],
                                            emission=False, reflectance=reflectance, glow=rgb))
        index[row] = made[key]
    mesh.polygons.foreach_set("material_index", index)
    mesh.update()


def difference_images(ours: np.ndarray, cycles: np.ndarray) -> list:
    """Per page, the image |ours - Cycles| / max(Cycles, 1e-3) (grey, 1 = 100%)."""
    out = []
    for k in range(len(ours)):
        diff = np.abs(ours[k] - cycles[k]).mean(axis=2) / np.maximum(cycles[k].mean(axis=2), 1e-3)
        out.append(page_image(f"brushbake difference {k}", np.repeat(diff[..., None], 3, axis=2).astype(np.float32)))
    return out
