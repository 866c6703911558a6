"""Hand-built compiled levels for the exporter tests (the BSP compiler is not needed to make them;
only beveled_level runs it, for a beveled tree with real bevel nodes), and an independent writer of
.bbk files that follows docs/FORMAT.md."""

from __future__ import annotations

import struct
import zlib

import numpy as np

from brushbake.core.runtime.level import CompiledLevel


def i32(values, shape=None):
    array = np.array(values, dtype=np.int32)
    return array.reshape(shape) if shape else array


def empty_level() -> CompiledLevel:
    """No brushes: no planes, no nodes, one empty leaf (the root, encoded -1)."""
    return CompiledLevel(
        plane_normals=np.zeros((0, 3)),
        plane_dists=np.zeros(0),
        node_plane=i32([]),
        node_children=i32([], (0, 2)),
        leaf_solid=np.zeros(1, np.uint32),
        leaf_cluster=i32([0]),
        leaf_bounds=np.array([[[-10.0, -10, -10], [10, 10, 10]]]),
        leaf_face_first=i32([0]),
        leaf_face_count=i32([0]),
        leaf_faces=i32([]),
        face_plane=i32([]),
        face_first_vertex=i32([]),
        face_num_vertices=i32([]),
        face_brush=i32([]),
        face_flags=np.zeros(0, np.uint32),
        vertices=np.zeros((0, 3)),
        world_bounds=np.array([[-10.0, -10, -10], [10, 10, 10]]),
    )


ONION_FIELDS = ("onion_node_plane", "onion_node_children", "onion_leaf_solid")
BEVEL_FIELDS = ("bevel_node_plane", "bevel_node_children", "bevel_leaf_solid")
VIS_FIELDS = ("vis_leaf_cluster", "vis_row_offset", "vis_rows")
CULL_FIELDS = ("cull_num_clusters", "cull_portal_clusters", "cull_portal_plane", "cull_portal_first",
               "cull_portal_count", "cull_portal_vertices")


def with_onion(level: CompiledLevel, node_plane, node_children, leaf_solid) -> CompiledLevel:
    """`level` with this onion tree (the tree for the box hulls)."""
    level.onion_node_plane = np.asarray(node_plane, dtype=np.int32)
    level.onion_node_children = np.asarray(node_children, dtype=np.int32).reshape(-1, 2)
    level.onion_leaf_solid = np.asarray(leaf_solid, dtype=np.uint32)
    return level


def box_level() -> CompiledLevel:
    """One solid box brush [0, 1] x [0, 2] x [0, 3] in a 10 m world, with a point hull and a box
    hull.  Six nodes in a chain, one per box face: each front child is an empty leaf outside that
    face, the last back child is the solid leaf inside.  Each empty leaf holds the face it sees.
    The onion tree (for the box hull) is the same chain on the expanded box's planes, here
    simplified to two nodes on the x faces."""
    size = np.array([1.0, 2.0, 3.0])
    normals, dists = [], []
    for axis in range(3):  # canonical plane (dominant axis positive) then its flip
        for d in (size[axis], 0.0):
            n = np.zeros(3)
            n[axis] = 1.0
            normals += [n, -n]
            dists += [d, -d]
    # node k splits on the outward plane of box face k: +x (plane 0), -x (plane 3), +y (4), ...
    node_plane = [0, 3, 4, 7, 8, 11]
    children = [[-1 - k, k + 1] for k in range(5)] + [[-6, -7]]
    world = np.array([[-10.0, -10, -10], [10, 10, 10]])
    leaf_bounds = np.repeat(world[None], 7, axis=0)
    leaf_bounds[6] = [[0, 0, 0], size]
    vertices, face_first = [], []
    corners = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float) * size
    for k, plane in enumerate(node_plane):
        axis, high = k // 2, k % 2 == 0
        quad = corners[corners[:, axis] == (size[axis] if high else 0.0)]
        face_first.append(len(vertices))
        vertices += list(quad[[0, 1, 3, 2]])
    level = CompiledLevel(
        plane_normals=np.array(normals),
        plane_dists=np.array(dists),
        node_plane=i32(node_plane),
        node_children=i32(children),
        leaf_solid=np.array([0, 0, 0, 0, 0, 0, 0b11], np.uint32),
        leaf_cluster=i32(range(7)),
        leaf_bounds=leaf_bounds,
        leaf_face_first=i32([0, 1, 2, 3, 4, 5, 6]),
        leaf_face_count=i32([1, 1, 1, 1, 1, 1, 0]),
        leaf_faces=i32(range(6)),
        face_plane=i32(node_plane),
        face_first_vertex=i32(face_first),
        face_num_vertices=i32([4] * 6),
        face_brush=i32([0] * 6),
        face_flags=np.array([0, 0, 0, 0, 1, 0], np.uint32),
        vertices=np.array(vertices),
        brush_names=["Crate.001 \u00e9\u00e8"],
        hull_names=["point", "player"],
        hull_boxes=np.array([[[0.0, 0, 0], [0, 0, 0]], [[-0.4, -0.4, -0.9], [0.4, 0.4, 0.9]]]),
        world_bounds=world,
    )
    return with_onion(level, [0, 3], [[-1, 1], [-2, -3]], [0, 0, 0b11])


def beveled_level() -> CompiledLevel:
    """A compiled level with a beveled tree that has bevel nodes of several kinds: a floor, a wedge
    whose slope meets its other faces at 135 degrees, a ridge 10 degrees off vertical and a tilted
    tetrahedron, one box hull, compiled and beveled as `bake` does."""
    from brushbake.core.compile.trees.bevel import add_bevels
    from brushbake.core.model.brushes import box_brush, brush_from_planes
    from brushbake.core.compile.pipeline import compile_scene
    from brushbake.core.model.hulls import make_hull
    from brushbake.core.model.scene import Scene

    r, s, c = np.sqrt(0.5), np.sin(np.radians(80.0)), np.cos(np.radians(80.0))
    wedge = [((0, 0, -1), 0.0), ((1, 0, 0), 1.0), ((-r, 0, r), 0.0), ((0, 1, 0), 2.0), ((0, -1, 0), 0.0)]
    ridge = [((0, s, c), 2 * c + 3 * s), ((0, -s, c), 2 * c - 3 * s), ((0, 0, -1), 0.0), ((1, 0, 0), 6.0),
             ((-1, 0, 0), -3.0)]
    centre = np.array([5.0, 4.0, 1.5])
    tetra = [(n / np.linalg.norm(n), 0.0) for n in np.array([[1, 2, 3], [-2, 1, 1], [1, -3, 1], [0.3, 0.2, -1]], float)]
    tetra = [(n, float(n @ centre) + 0.7) for n, _ in tetra]
    brushes = [box_brush((-2, -2, -1), (8, 6, 0), "floor")] + [
        brush_from_planes([np.array(n, float) for n, _ in planes], [d for _, d in planes], name)
        for name, planes in (("wedge", wedge), ("ridge", ridge), ("tetra", tetra))]
    level = compile_scene(Scene("bevels", brushes=brushes, hulls=[make_hull("player", (-0.4, -0.4, -0.9),
                                                                             (0.4, 0.4, 0.9))]))
    add_bevels(level)
    return level


def random_tree_children(rng: np.random.Generator, nodes: int) -> np.ndarray:
    """(nodes, 2) children of a random tree in the file's encoding: node k (k >= 1) takes a random
    free child slot of an earlier node, then the nodes + 1 slots left get the leaves in a random
    order.  Every node but the root and every leaf is the child of exactly one node."""
    children = np.zeros((nodes, 2), np.int32)
    slots = [(0, 0), (0, 1)] if nodes else []
    for node in range(1, nodes):
        parent, side = slots.pop(int(rng.integers(0, len(slots))))
        children[parent, side] = node
        slots += [(node, 0), (node, 1)]
    for leaf, (parent, side) in zip(rng.permutation(len(slots)), slots):
        children[parent, side] = -1 - int(leaf)
    return children


def random_level(seed: int, max_nodes: int = 12) -> CompiledLevel:
    """A random but consistent level: random unit planes, a random tree whose children are later
    nodes or leaves, random face and vertex ranges, random names (some non-ASCII)."""
    rng = np.random.default_rng(seed)
    n_pairs, nodes = int(rng.integers(0, 6)), int(rng.integers(0, max_nodes + 1))
    normals = rng.normal(size=(n_pairs, 3)) + 1e-3
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    dists = rng.uniform(-50, 50, n_pairs)
    plane_normals = np.empty((2 * n_pairs, 3))
    plane_normals[0::2], plane_normals[1::2] = normals, -normals
    plane_dists = np.empty(2 * n_pairs)
    plane_dists[0::2], plane_dists[1::2] = dists, -dists
    if n_pairs == 0:
        nodes = 0
    leaves = nodes + 1  # a tree: every node but the root and every leaf the child of one node
    children = random_tree_children(rng, nodes)
    brushes = int(rng.integers(1, 4))
    verts = int(rng.integers(5, 40))
    faces = int(rng.integers(0, 10)) if n_pairs else 0
    num_vertices = rng.integers(3, 6, faces)
    first_vertex = np.array([rng.integers(0, verts - n + 1) for n in num_vertices], dtype=np.int64)
    refs = int(rng.integers(0, 12)) if faces else 0
    face_count = rng.integers(0, refs + 1, leaves)
    face_first = np.array([rng.integers(0, refs - c + 1) for c in face_count], dtype=np.int64)
    hulls = int(rng.integers(1, 4))
    mins = rng.uniform(-1, 0, (hulls, 3))
    level = CompiledLevel(
        plane_normals=plane_normals,
        plane_dists=plane_dists,
        node_plane=rng.integers(0, max(2 * n_pairs, 1), nodes).astype(np.int32),
        node_children=children,
        leaf_solid=rng.integers(0, 1 << hulls, leaves).astype(np.uint32),
        leaf_cluster=rng.integers(0, leaves, leaves).astype(np.int32),
        leaf_bounds=np.sort(rng.uniform(-100, 100, (leaves, 2, 3)), axis=1),
        leaf_face_first=face_first.astype(np.int32),
        leaf_face_count=face_count.astype(np.int32),
        leaf_faces=rng.integers(0, max(faces, 1), refs).astype(np.int32),
        face_plane=rng.integers(0, max(2 * n_pairs, 1), faces).astype(np.int32),
        face_first_vertex=first_vertex.astype(np.int32),
        face_num_vertices=num_vertices.astype(np.int32),
        face_brush=rng.integers(0, brushes, faces).astype(np.int32),
        face_flags=rng.integers(0, 4, faces).astype(np.uint32),
        vertices=rng.uniform(-100, 100, (verts, 3)),
        brush_names=[f"brush{i}" + "\u00fc\u4e16" * i for i in range(brushes)],
        hull_names=["point"] + [f"hull {h}" for h in range(1, hulls)],
        hull_boxes=np.stack([mins, -mins], axis=1),
        world_bounds=np.array([[-100.0, -100, -100], [100, 100, 100]]),
    )
    onion_nodes = int(rng.integers(0, 6)) if n_pairs and hulls > 1 else 0
    onion_leaves = onion_nodes + 1 if hulls > 1 else 0
    # a chain: node k's front is node k + 1 (the last node's is leaf n), its back is leaf k
    onion_children = [[k + 1 if k + 1 < onion_nodes else -1 - onion_nodes, -1 - k] for k in range(onion_nodes)]
    return with_onion(
        level,
        rng.integers(0, max(2 * n_pairs, 1), onion_nodes),
        onion_children,
        rng.integers(0, 1 << hulls, onion_leaves),
    )


def assert_levels_equal(a: CompiledLevel, b: CompiledLevel) -> None:
    """Every stored field equal, with the same dtype and shape (stats is never stored)."""
    for name in (
        "plane_normals plane_dists node_plane node_children leaf_solid leaf_cluster leaf_bounds "
        "leaf_face_first leaf_face_count leaf_faces face_plane face_first_vertex face_num_vertices "
        "face_brush face_flags vertices hull_boxes world_bounds"
    ).split() + list(ONION_FIELDS) + list(BEVEL_FIELDS) + list(VIS_FIELDS) + list(LIGHT_FIELDS) + list(CULL_FIELDS):
        x, y = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
        assert x.shape == y.shape, name
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert a.brush_names == b.brush_names
    assert a.hull_names == b.hull_names


# --------------------------------------------------------------------------------------------
# An independent reading of docs/FORMAT.md, to build files the writer never would


def split_bbk(data: bytes) -> list[tuple[bytes, int, int, bytes]]:
    """The sections of a well-formed .bbk file as (tag, record size, count, payload), in table order."""
    header_size, entry_size, count = struct.unpack_from("<III", data, 12)
    out = []
    for i in range(count):
        entry = struct.unpack_from("<4sIQQQII", data, header_size + i * entry_size)
        tag, rsize, rcount, offset, size = entry[:5]
        out.append((tag, rsize, rcount, data[offset : offset + size]))
    return out


def build_bbk(sections, major=1, minor=1, flags=0, header_extra=b"", entry_extra=b"", gap=0) -> bytes:
    """A .bbk file laid out as FORMAT.md says, with valid checksums.  header_extra and entry_extra
    append (8-byte multiples of) bytes a later minor version might add; gap adds zero padding
    before each section."""
    header_size, entry_size = 40 + len(header_extra), 40 + len(entry_extra)
    offset = header_size + entry_size * len(sections)
    entries, body = [], bytearray()
    for tag, rsize, rcount, payload in sections:
        offset = -(-(offset + gap) // 8) * 8
        crc = zlib.crc32(payload)
        entries.append(struct.pack("<4sIQQQII", tag, rsize, rcount, offset, len(payload), crc, 0) + entry_extra)
        body += bytes(offset - (header_size + entry_size * len(sections) + len(body))) + payload
        offset += len(payload)
    table_end = header_size + entry_size * len(sections)
    total = -(-(table_end + len(body)) // 8) * 8
    body += bytes(total - table_end - len(body))
    head = struct.pack(
        "<4sHHIIIIQII", b"BRBK", major, minor, flags, header_size, entry_size, len(sections), total, 0, 0
    )
    table = head + header_extra + b"".join(entries)
    crc = zlib.crc32(table)
    return table[:32] + struct.pack("<I", crc) + table[36:] + bytes(body)


def replace_section(sections, tag: bytes, payload: bytes, rcount=None, rsize=None):
    out = []
    for t, s, c, p in sections:
        if t == tag:
            s = s if rsize is None else rsize
            c = len(payload) // s if rcount is None else rcount
            p = payload
        out.append((t, s, c, p))
    return out


LIGHT_FIELDS = ("lm_luxel", "lm_pages", "lm_face_page", "lm_face_rect", "lm_vertex_uv")


def with_random_light(level: CompiledLevel, seed: int) -> CompiledLevel:
    """`level` with a random lightmap: 1-3 pages of 1-64 texels, each face on a page (or none,
    -1) with a rectangle inside it, random light and UVs."""
    rng = np.random.default_rng(seed)
    side, count = int(rng.integers(1, 65)), int(rng.integers(1, 4))
    faces, verts = len(level.face_plane), len(level.vertices)
    level.lm_luxel = float(rng.uniform(0.1, 2.0))
    level.lm_pages = rng.uniform(0, 4, (count, side, side, 3)).astype(np.float32)
    level.lm_face_page = rng.integers(-1, count, faces).astype(np.int32)
    w = rng.integers(1, side + 1, faces)
    h = rng.integers(1, side + 1, faces)
    x = (rng.random(faces) * (side - w + 1)).astype(np.int64)
    y = (rng.random(faces) * (side - h + 1)).astype(np.int64)
    rect = np.stack([x, y, w, h], axis=1).astype(np.int32)
    rect[level.lm_face_page < 0] = 0
    level.lm_face_rect = rect
    level.lm_vertex_uv = rng.uniform(0, 1, (verts, 2))
    return level


def with_random_vis(level: CompiledLevel, seed: int) -> CompiledLevel:
    """`level` with a random symmetric PVS over random clusters of its leaves (some -1)."""
    from brushbake.core.runtime.pvs_rows import compress_rows, pack_bits

    rng = np.random.default_rng(seed)
    leaves = level.num_leaves
    clusters = int(rng.integers(1, leaves + 1))
    leaf_cluster = rng.integers(-1, clusters, leaves).astype(np.int32)
    leaf_cluster[rng.permutation(leaves)[:clusters]] = np.arange(clusters)
    see = rng.random((clusters, clusters)) < rng.random()
    see = see | see.T | np.eye(clusters, dtype=bool)
    offsets, rows = compress_rows(pack_bits(see))
    level.vis_leaf_cluster, level.vis_row_offset, level.vis_rows = leaf_cluster, offsets, rows
    return level


def with_random_cull(level: CompiledLevel, seed: int, portals: int | None = None) -> CompiledLevel:
    """`level` (with a PVS) with random culling portals: convex polygons (3 to 8 vertices, a
    regular polygon around a random point) on random planes of its table, between random pairs of
    distinct clusters (none when it has one cluster)."""
    rng = np.random.default_rng(seed)
    clusters = len(level.vis_row_offset)
    count = int(rng.integers(0, 12)) if portals is None else portals
    if clusters < 2:
        count = 0
    planes = len(level.plane_dists)
    plane = rng.integers(0, planes, count).astype(np.int32)
    pair = np.stack([rng.integers(0, clusters, count), rng.integers(0, clusters, count)], axis=1)
    pair[:, 1] = np.where(pair[:, 1] == pair[:, 0], (pair[:, 0] + 1) % max(clusters, 1), pair[:, 1])
    nverts = rng.integers(3, 9, count)
    verts = []
    for i in range(count):
        n, d = level.plane_normals[plane[i]], level.plane_dists[plane[i]]
        t = np.cross(n, [1.0, 0, 0] if abs(n[0]) < 0.9 else [0, 1.0, 0])
        t /= np.linalg.norm(t)
        b = np.cross(n, t)
        centre = n * d + rng.uniform(-2, 2) * t + rng.uniform(-2, 2) * b
        ang = np.arange(nverts[i]) * 2 * np.pi / nverts[i]
        r = rng.uniform(0.1, 2)
        verts.append(centre + r * (np.cos(ang)[:, None] * t + np.sin(ang)[:, None] * b))
    level.cull_num_clusters = np.array([clusters], dtype=np.int32)
    level.cull_portal_clusters = pair.astype(np.int32).reshape(-1, 2)
    level.cull_portal_plane = plane
    level.cull_portal_first = (np.cumsum(nverts) - nverts).astype(np.int32)
    level.cull_portal_count = nverts.astype(np.int32)
    level.cull_portal_vertices = np.concatenate(verts).reshape(-1, 3) if verts else np.zeros((0, 3))
    return level
