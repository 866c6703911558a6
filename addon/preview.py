"""Preview objects: an overlay's geometry turned into a mesh in the 'brushbake preview' collection.

Overlays drawn by a handler vanish in renders and cannot be inspected or measured; a mesh can.
Triangles become faces, lines become loose edges, and the overlay colours go into a colour
attribute ('brushbake_color') that the shared preview material shows, in the viewport's Attribute
colouring and in Cycles and EEVEE renders alike.  Making the same preview again replaces it.
"""

import bpy
import numpy as np

from .overlay_geometry import OverlayGeometry

COLLECTION = "brushbake preview"
MATERIAL = "brushbake preview"
COLOR_ATTRIBUTE = "brushbake_color"


def preview_collection(scene, name: str = COLLECTION):
    """The scene's collection `name` ('brushbake preview' by default), created and linked when missing."""
    coll = bpy.data.collections.get(name)
    if coll is None:
        coll = bpy.data.collections.new(name)
    if coll.name not in scene.collection.children:
        scene.collection.children.link(coll)
    return coll


def preview_material():
    """A material showing the colour attribute, with its alpha as transparency."""
    mat = bpy.data.materials.get(MATERIAL)
    if mat is not None:
        return mat
    mat = bpy.data.materials.new(MATERIAL)
    if bpy.app.version < (5, 0, 0):  # node materials are the only kind from 5.0 on
        mat.use_nodes = True
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    bsdf = next(n for n in nodes if n.type == "BSDF_PRINCIPLED")
    attr = nodes.new("ShaderNodeAttribute")
    attr.attribute_name = COLOR_ATTRIBUTE
    attr.attribute_type = "GEOMETRY"
    links.new(attr.outputs["Color"], bsdf.inputs["Base Color"])
    links.new(attr.outputs["Alpha"], bsdf.inputs["Alpha"])
    if hasattr(mat, "surface_render_method"):
        mat.surface_render_method = "BLENDED"
    return mat


def mesh_from_geometry(geom: OverlayGeometry, name: str):
    """A mesh of the overlay: one face per triangle, one loose edge per line, colours per corner."""
    tri = np.asarray(geom.tri_positions, dtype=np.float64).reshape(-1, 3)
    line = np.asarray(geom.line_positions, dtype=np.float64).reshape(-1, 3)
    verts = np.concatenate([tri, line]) if len(line) else tri
    faces = np.arange(len(tri)).reshape(-1, 3).tolist()
    edges = (len(tri) + np.arange(len(line))).reshape(-1, 2).tolist()
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts.tolist(), edges, faces)
    if len(tri):
        colors = mesh.color_attributes.new(COLOR_ATTRIBUTE, "FLOAT_COLOR", "CORNER")
        # corners follow the faces' vertex order, which is the triangle vertex order here
        colors.data.foreach_set("color", np.asarray(geom.tri_colors, dtype=np.float32).reshape(-1))
        mesh.materials.append(preview_material())
    mesh.update()
    return mesh


def make_preview_object(scene, geom: OverlayGeometry, name: str):
    """Create (or replace) the preview object `name` in the preview collection; returns it."""
    coll = preview_collection(scene)
    old = bpy.data.objects.get(name)
    if old is not None:
        old_mesh = old.data
        bpy.data.objects.remove(old)
        if old_mesh is not None and old_mesh.users == 0:
            bpy.data.meshes.remove(old_mesh)
    obj = bpy.data.objects.new(name, mesh_from_geometry(geom, name))
    obj.brushbake.role = "IGNORE"  # never baked, even if selected
    obj.hide_select = False
    coll.objects.link(obj)
    return obj


def preview_name(settings) -> str:
    """Name of the preview object for the scene's current overlay choice."""
    if settings.overlay == "TRACE":
        return "brushbake trace"
    if settings.overlay == "BEVELS":
        return "brushbake bevels"
    if settings.overlay == "CAMERA":
        return f"brushbake camera {settings.cull_mode}"
    kind = "surface" if settings.overlay == "HULL_SURFACE" else "leaves"
    return f"brushbake {kind} {settings.overlay_hull}"
