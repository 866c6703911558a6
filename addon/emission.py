"""Emissive materials into surface lights: a brush face whose Blender material emits light (in
Cycles) becomes an emitting face of the bake, in the units Cycles uses.

A material emits when the Surface of its Cycles output is

- a Principled BSDF with Emission Strength > 0 and a non-black Emission Color: radiance
  Emission Color x Strength (W/(m^2 sr); strength 1, white, is radiance 1: measured in the bpy
  wheel's Cycles, core/model/light_units.py), added to its diffuse reflection;
- an Emission shader: radiance Color x Strength.

Each such material becomes one core surface light (kind 'surface', power = strength, color =
the emission colour), named after the material, and the brush planes that carry its polygons get
its texture name EMISSIVE_PREFIX + material name, so the core's surface-light path (the .map
'_surface' idea: faces by texture) makes them emit: their patches shoot first in the radiosity.

Anything else that could emit is not read and gets a warning naming the object and the material
(scene.warnings, reported by the Bake operator): a texture or any node linked into the emission
colour or strength, an Emission node behind a Mix or Add shader or a group, a Surface fed by
another shader.  A brush plane carries one material: polygons of an emissive material make the
whole brush face emit.
"""

from __future__ import annotations

import numpy as np

from ..core.model.scene import Light
from ..core.tolerances import EMISSIVE_PLANE_MATCH

#: the texture name given to brush faces of an emissive material (keeps them apart from a .map's
#: textures and from 'sky*')
EMISSIVE_PREFIX = "emit:"


def material_emission(mat) -> tuple[tuple[float, float, float] | None, float, str | None]:
    """(colour, strength, warning) of a material: colour None when it does not emit (or cannot be
    read: then warning says why)."""
    if mat is None or not getattr(mat, "use_nodes", False) or mat.node_tree is None:
        return None, 0.0, None
    tree = mat.node_tree
    out = tree.get_output_node("CYCLES") if hasattr(tree, "get_output_node") else None
    if out is None:
        return None, 0.0, None
    surface = out.inputs.get("Surface")
    if surface is None or not surface.is_linked:
        return None, 0.0, None
    node = surface.links[0].from_node
    if node.type == "BSDF_PRINCIPLED":
        return _read(node, "Emission Color", "Emission Strength", "the Principled BSDF's emission")
    if node.type == "EMISSION":
        return _read(node, "Color", "Strength", "the Emission shader")
    hidden = [n for n in tree.nodes if n.type == "EMISSION" or (
        n.type == "BSDF_PRINCIPLED" and _strength_set(n))]
    if hidden or node.type == "GROUP":
        return None, 0.0, (f"its surface is a {node.name!r} ({node.type.lower()}) node; only a Principled BSDF "
                           "or an Emission shader straight into the Material Output is read as emission")
    return None, 0.0, None


def _strength_set(node) -> bool:
    s = node.inputs.get("Emission Strength")
    return s is not None and (s.is_linked or float(s.default_value) > 0)


def _read(node, color_name: str, strength_name: str, what: str):
    color, strength = node.inputs.get(color_name), node.inputs.get(strength_name)
    if color is None or strength is None:
        return None, 0.0, None
    if not strength.is_linked and float(strength.default_value) <= 0:
        return None, 0.0, None
    linked = [s.name for s in (color, strength) if s.is_linked]
    if linked:
        return None, 0.0, (f"{what} has {' and '.join(repr(n) for n in linked)} driven by a node (a texture?); "
                           "brushbake reads only a plain colour and strength, so these faces do not emit")
    rgb = tuple(float(c) for c in tuple(color.default_value)[:3])
    if max(rgb) <= 0:
        return None, 0.0, None
    return rgb, float(strength.default_value), None


def polygon_planes(obj, depsgraph=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """World-space unit normals (P, 3), plane distances (P,) and material slot indices (P,) of
    the object's polygons (modifiers applied, as the brush is built)."""
    evaluated = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    mesh = evaluated.to_mesh()
    try:
        co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
        mesh.vertices.foreach_get("co", co)
        m = np.array(obj.matrix_world, dtype=np.float64)
        verts = co.astype(np.float64).reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]
        slots = np.zeros(len(mesh.polygons), dtype=np.int64)
        if len(mesh.polygons):
            mesh.polygons.foreach_get("material_index", slots)
        normals, dists = [], []
        for p in mesh.polygons:
            v = verts[list(p.vertices)]
            n = np.zeros(3)  # Newell's normal
            for a, b in zip(v, np.roll(v, -1, axis=0)):
                n += ((a[1] - b[1]) * (a[2] + b[2]), (a[2] - b[2]) * (a[0] + b[0]), (a[0] - b[0]) * (a[1] + b[1]))
            length = float(np.sqrt(n @ n))
            n = n / length if length > 0 else n
            normals.append(n)
            dists.append(float(n @ v.mean(axis=0)))
    finally:
        evaluated.to_mesh_clear()
    return np.array(normals).reshape(-1, 3), np.array(dists), slots


def tag_emissive_faces(obj, brush, core_scene, depsgraph=None) -> None:
    """Give the brush faces of `obj` whose material emits that material's texture name, and add
    one surface light per emissive material to core_scene (once); warnings to core_scene.warnings."""
    slots = [s.material for s in obj.material_slots]
    if not slots:
        return
    found = {}
    for k, mat in enumerate(slots):
        rgb, strength, warning = material_emission(mat)
        if warning:
            text = f"Object {obj.name!r}, material {mat.name!r}: {warning}."
            if text not in core_scene.warnings:
                core_scene.warnings.append(text)
        if rgb is not None:
            found[k] = (mat, rgb, strength)
    if not found:
        return
    normals, dists, index = polygon_planes(obj, depsgraph)
    if len(brush.textures) != len(brush.normals):
        brush.textures = [""] * len(brush.normals)
    for k, (mat, rgb, strength) in found.items():
        texture = EMISSIVE_PREFIX + mat.name
        for p in np.flatnonzero(index == k).tolist():
            gap = np.abs(brush.normals - normals[p]).max(axis=1)
            off = np.abs(brush.dists - dists[p])
            for plane in np.flatnonzero((gap < EMISSIVE_PLANE_MATCH) & (off < EMISSIVE_PLANE_MATCH)).tolist():
                brush.textures[plane] = texture
        if not any(li.kind == "surface" and li.texture == texture for li in core_scene.lights):
            centre = tuple(float(c) for c in obj.matrix_world.translation)
            core_scene.lights.append(Light(f"material {mat.name}", centre, color=rgb, kind="surface",
                                           power=strength, texture=texture))
