"""Reading the Quake .bsp files ericw-tools' qbsp, vis and light write, for the benches that set
brushbake beside them: the lumps, the point tree of the world model (which leaf holds a point) and
the PVS vis writes (a run-length compressed row of leaf bits per leaf).

Two formats, as qbsp writes them: BSP29 (version 29; 16-bit node children and short bounds) and
BSP2 ('BSP2'; 32-bit children and float bounds, for maps past BSP29's limits).  The header and the
lumps (entities, planes, textures, vertexes, visibility, nodes, texinfo, faces, lighting,
clipnodes, leafs, marksurfaces, edges, surfedges, models) are the same in both.

A leaf's PVS row (visofs into the visibility lump; -1: no row, it sees everything) holds one bit
per visible leaf of the world model, leaf 1 in bit 0: leaf 0 is the shared solid leaf and has none.
A zero byte is followed by a count of zero bytes it stands for; any other byte stands for itself.
"""

from __future__ import annotations

import struct

import numpy as np

LUMPS = ("entities", "planes", "textures", "vertexes", "visibility", "nodes", "texinfo", "faces",
         "lighting", "clipnodes", "leafs", "marksurfaces", "edges", "surfedges", "models")
LUMP = {name: i for i, name in enumerate(LUMPS)}

CONTENTS_EMPTY, CONTENTS_SOLID, CONTENTS_WATER, CONTENTS_SLIME, CONTENTS_LAVA, CONTENTS_SKY = -1, -2, -3, -4, -5, -6
#: contents a player or a camera can be in (water, slime and lava are see-through and walkable)
OPEN_CONTENTS = (CONTENTS_EMPTY, CONTENTS_WATER, CONTENTS_SLIME, CONTENTS_LAVA)

PLANE = np.dtype([("normal", "<f4", 3), ("dist", "<f4"), ("type", "<i4")])
MODEL = np.dtype([("mins", "<f4", 3), ("maxs", "<f4", 3), ("origin", "<f4", 3), ("headnode", "<i4", 4),
                  ("visleafs", "<i4"), ("firstface", "<i4"), ("numfaces", "<i4")])
NODE29 = np.dtype([("plane", "<i4"), ("children", "<i2", 2), ("mins", "<i2", 3), ("maxs", "<i2", 3),
                   ("firstface", "<u2"), ("numfaces", "<u2")])
LEAF29 = np.dtype([("contents", "<i4"), ("visofs", "<i4"), ("mins", "<i2", 3), ("maxs", "<i2", 3),
                   ("firstmark", "<u2"), ("nummarks", "<u2"), ("ambient", "u1", 4)])
NODE2 = np.dtype([("plane", "<i4"), ("children", "<i4", 2), ("mins", "<f4", 3), ("maxs", "<f4", 3),
                  ("firstface", "<u4"), ("numfaces", "<u4")])
LEAF2 = np.dtype([("contents", "<i4"), ("visofs", "<i4"), ("mins", "<f4", 3), ("maxs", "<f4", 3),
                  ("firstmark", "<u4"), ("nummarks", "<u4"), ("ambient", "u1", 4)])


class BspError(ValueError):
    """Not a BSP29 or BSP2 file, or one whose lumps do not fit it."""


class Bsp:
    """A Quake .bsp in memory: lump(name, dtype) views, the world model's tree, and its PVS."""

    def __init__(self, data: bytes):
        if len(data) < 4 + 8 * len(LUMPS):
            raise BspError(f"{len(data)} bytes is too short for a .bsp header")
        magic = data[:4]
        if magic == b"BSP2":
            self.format, node, leaf = "BSP2", NODE2, LEAF2
        elif struct.unpack_from("<i", data)[0] == 29:
            self.format, node, leaf = "BSP29", NODE29, LEAF29
        else:
            raise BspError(f"version {magic!r}: only BSP29 and BSP2 are read")
        self.data = data
        self.lumps = [struct.unpack_from("<ii", data, 4 + 8 * i) for i in range(len(LUMPS))]
        for name, (offset, length) in zip(LUMPS, self.lumps):
            if offset < 0 or length < 0 or offset + length > len(data):
                raise BspError(f"lump {name} ({offset}, {length}) lies outside the file's {len(data)} bytes")
        self.planes = self.lump("planes", PLANE)
        self.nodes = self.lump("nodes", node)
        self.leafs = self.lump("leafs", leaf)
        self.models = self.lump("models", MODEL)
        self.visdata = self.lump("visibility", "u1")
        if len(self.models) == 0 or len(self.leafs) == 0:
            raise BspError("no world model or no leaf")
        self.visleafs = int(self.models[0]["visleafs"])

    def lump(self, name: str | int, dtype) -> np.ndarray:
        """The lump (by name or number) as a read-only array of `dtype` (trailing bytes that do
        not fill a record are an error)."""
        offset, length = self.lumps[LUMP[name] if isinstance(name, str) else name]
        dtype = np.dtype(dtype)
        if length % dtype.itemsize:
            raise BspError(f"lump {name}: {length} bytes is not a whole number of {dtype.itemsize}-byte records")
        return np.frombuffer(self.data, dtype=dtype, count=length // dtype.itemsize, offset=offset)

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The world model's box (units)."""
        return self.models[0]["mins"].astype(np.float64), self.models[0]["maxs"].astype(np.float64)

    def point_leaves(self, points) -> np.ndarray:
        """(N,) int64 leaf of the world model's tree holding each point (units): Quake's
        Mod_PointInLeaf, a point on a plane goes to the back side (d > 0 for the front)."""
        pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        normal = self.planes["normal"].astype(np.float64)
        dist = self.planes["dist"].astype(np.float64)
        children = self.nodes["children"].astype(np.int64)
        if self.format == "BSP29":
            # a leaf child is written as -1 - leaf; engines read the shorts as unsigned (QuakeSpasm):
            # u below the node count is a node, else the leaf 65535 - u (the same for small maps)
            u = children & 0xFFFF
            children = np.where(u < len(self.nodes), u, -1 - (0xFFFF - u))
        node = np.full(len(pts), int(self.models[0]["headnode"][0]), dtype=np.int64)
        leaf = np.full(len(pts), -1, dtype=np.int64)
        live = np.arange(len(pts))
        for _ in range(len(self.nodes) + 1):
            if len(live) == 0:
                return leaf
            n = node[live]
            p = self.nodes["plane"][n]
            d = np.einsum("ij,ij->i", pts[live], normal[p]) - dist[p]
            child = np.where(d > 0, children[n, 0], children[n, 1])
            done = child < 0
            leaf[live[done]] = -1 - child[done]
            node[live[~done]] = child[~done]
            live = live[~done]
        raise BspError("the node tree has a cycle")

    def open_leaves(self) -> np.ndarray:
        """(leafs,) bool: leaves a point can be in and see from: open contents, a PVS row of their
        own (leaf 0, the shared solid leaf, never)."""
        leafs = self.leafs
        ok = np.isin(leafs["contents"], OPEN_CONTENTS) & (leafs["visofs"] >= 0)
        ok[0] = False
        return ok

    def row(self, leaf: int) -> np.ndarray:
        """The PVS row of one leaf decompressed: (ceil(visleafs / 8),) uint8 (all 0xff where the
        leaf has no row: it sees everything, as Quake's engine answers)."""
        size = (self.visleafs + 7) >> 3
        ofs = int(self.leafs["visofs"][leaf])
        if ofs < 0 or leaf == 0:
            return np.full(size, 0xFF, dtype=np.uint8)
        return decompress_row(self.visdata, ofs, size)

    def can_see(self, a, b) -> np.ndarray:
        """(N,) bool: leaf a[i]'s row holds leaf b[i] (leaf 0 or a leaf past the world's visible
        leaves in b: False).  Only the rows of the leaves in `a` are decompressed."""
        a = np.asarray(a, dtype=np.int64).ravel()
        v = np.asarray(b, dtype=np.int64).ravel() - 1  # bit of leaf b
        need, slot = np.unique(a, return_inverse=True)
        rows = np.stack([self.row(int(i)) for i in need]) if len(need) else np.zeros((0, 1), np.uint8)
        ok = (v >= 0) & (v < self.visleafs)
        out = np.zeros(len(a), dtype=bool)
        vv = v[ok]
        out[ok] = ((rows[slot[ok], vv >> 3] >> (vv & 7).astype(np.uint8)) & 1).astype(bool)
        return out

    def avg_leafs_visible(self) -> float:
        """Mean over the world's visible leaves of the leaves each row holds: what ericw vis prints
        as 'average leafs visible' (its rows include the leaf itself)."""
        n = self.visleafs
        if n == 0:
            return 0.0
        rows = np.stack([self.row(i) for i in range(1, n + 1)])
        bits = np.unpackbits(rows, axis=1, bitorder="little")[:, :n]
        return float(bits.sum()) / n


def decompress_row(data: np.ndarray, offset: int, size: int) -> np.ndarray:
    """One run-length compressed row from `offset` in `data`: (size,) uint8."""
    out = np.zeros(size, dtype=np.uint8)
    i, o = offset, 0
    while o < size:
        if i >= len(data):
            raise BspError(f"a PVS row at {offset} runs past the visibility lump")
        byte = int(data[i])
        if byte:
            out[o] = byte
            o += 1
            i += 1
        else:
            if i + 1 >= len(data):
                raise BspError(f"a PVS row at {offset} ends in a zero byte with no count")
            o += int(data[i + 1])
            i += 2
    return out


def read_bsp(path) -> Bsp:
    with open(path, "rb") as f:
        return Bsp(f.read())
