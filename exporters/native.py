"""The native compiled-level file (.bbk): a checksummed container of little-endian array sections.

One idea in one module (over 600 lines): the .bbk format, written and read, with every check the
reader makes (docs/FORMAT.md lists them rule by rule for the C loader).

docs/FORMAT.md describes the file byte by byte; this module is its reference implementation.
The same level always gives the same bytes (no timestamps, sections in a fixed order), on any
machine.  The reader trusts nothing: every offset, size, checksum and index is checked, and any
bad input raises core.errors.LevelFormatError, never another exception.  Writes are atomic.
"""

from __future__ import annotations

import os
import secrets
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import LevelFormatError
from ..core.runtime.level import CompiledLevel
from ..core.model.scene import SETTING_RANGES
from ..core.runtime.crowd import CUT, CrowdSlices, expand_spans
from ..core.runtime.pvs_rows import decompress_rows
from ..core.detmath import dot
from ..core.tolerances import (CULL_PORTAL_ON_PLANE, MAX_COORDINATE, MAX_SLICE_CELLS, NORMAL_LENGTH_TOLERANCE,
                               SLICE_FINEST_UNIT)

MAGIC = b"BRBK"
VERSION_MAJOR = 1
VERSION_MINOR = 1

#: magic, major, minor, flags, header size, entry size, section count, file size, header crc,
#: reserved.  Magic and version stay at offsets 0-7 in every version of the format.
HEADER = struct.Struct("<4sHHIIIIQII")
#: tag, record size, record count, offset, byte size, crc, reserved
ENTRY = struct.Struct("<4sIQQQII")
HEADER_CRC_OFFSET = 32  # the header crc is computed with these 4 bytes set to zero
ALIGNMENT = 8

#: flag bits 0-15 change how the file must be read: a reader rejects a file with one it does not
#: know.  Bits 16-31 are hints it may ignore.  Format 1.0 defines no flags.
REQUIRED_FLAGS = 0x0000FFFF
KNOWN_FLAGS = 0

#: most nodes on any root-to-leaf path of any tree (docs/FORMAT.md, "The tree's shape").  Real
#: levels are far below it (the deepest tree of the sample maps, q1_mountain's onion tree, has
#: 127); it bounds the stack of every walk, in Python and in a C loader.
MAX_TREE_DEPTH = 512

#: most hulls a level can have: leaf_solid is a u32 bit set, one bit per hull
MAX_HULLS = 32

REBAKE = "Rebake the level (export it again from Blender or with the brushbake command line)."
COMPILER_BUG = "The level in memory is inconsistent, a bug in the compiler that made it; please report it."


@dataclass(frozen=True)
class ArraySection:
    """One CompiledLevel array stored as one section of fixed-size records."""

    tag: bytes
    field: str  # CompiledLevel attribute
    dtype: str  # explicit little-endian NumPy dtype of one element
    record: tuple[int, ...]  # shape of one record (() for a scalar)
    count: str  # the count that arrays of the same object share

    @property
    def record_size(self) -> int:
        return np.dtype(self.dtype).itemsize * int(np.prod(self.record, dtype=np.int64))


#: in file order.  world_bounds is a single (2, 3) record; the others are (count, *record).
ARRAY_SECTIONS = (
    ArraySection(b"PLNN", "plane_normals", "<f8", (3,), "planes"),
    ArraySection(b"PLND", "plane_dists", "<f8", (), "planes"),
    ArraySection(b"NODP", "node_plane", "<i4", (), "nodes"),
    ArraySection(b"NODC", "node_children", "<i4", (2,), "nodes"),
    ArraySection(b"LFSD", "leaf_solid", "<u4", (), "leaves"),
    ArraySection(b"LFCL", "leaf_cluster", "<i4", (), "leaves"),
    ArraySection(b"LFBB", "leaf_bounds", "<f8", (2, 3), "leaves"),
    ArraySection(b"LFFF", "leaf_face_first", "<i4", (), "leaves"),
    ArraySection(b"LFFC", "leaf_face_count", "<i4", (), "leaves"),
    ArraySection(b"LFFI", "leaf_faces", "<i4", (), "leaf face references"),
    ArraySection(b"FCPL", "face_plane", "<i4", (), "faces"),
    ArraySection(b"FCFV", "face_first_vertex", "<i4", (), "faces"),
    ArraySection(b"FCNV", "face_num_vertices", "<i4", (), "faces"),
    ArraySection(b"FCBR", "face_brush", "<i4", (), "faces"),
    ArraySection(b"FCFL", "face_flags", "<u4", (), "faces"),
    ArraySection(b"VERT", "vertices", "<f8", (3,), "vertices"),
    ArraySection(b"ONNP", "onion_node_plane", "<i4", (), "onion nodes"),
    ArraySection(b"ONNC", "onion_node_children", "<i4", (2,), "onion nodes"),
    ArraySection(b"ONLS", "onion_leaf_solid", "<u4", (), "onion leaves"),
    ArraySection(b"HULB", "hull_boxes", "<f8", (2, 3), "hulls"),
    ArraySection(b"WBND", "world_bounds", "<f8", (2, 3), "world"),
)
SINGLE_RECORD_FIELDS = {"world_bounds"}

#: sections a level may lack: the beveled tree for plane shifting.  A writer stores them, after
#: all other sections, only when the level has a beveled tree (so levels without one keep their
#: exact 1.0 bytes); a reader gives empty arrays when they are absent (and 1.0 readers skip them).
OPTIONAL_SECTIONS = (
    ArraySection(b"BVNP", "bevel_node_plane", "<i4", (), "bevel nodes"),
    ArraySection(b"BVNC", "bevel_node_children", "<i4", (2,), "bevel nodes"),
    ArraySection(b"BVLS", "bevel_leaf_solid", "<u4", (), "bevel leaves"),
)

#: sections a level may lack: the potentially visible set (core/runtime/pvs.py).  Written after
#: everything else, only when the level was baked with visibility; all three or none.
VIS_SECTIONS = (
    ArraySection(b"VSLC", "vis_leaf_cluster", "<i4", (), "leaves"),
    ArraySection(b"VSRO", "vis_row_offset", "<u4", (), "visibility clusters"),
    ArraySection(b"VSRD", "vis_rows", "|u1", (), "visibility row bytes"),
)

#: sections a level may lack: the portals between visibility clusters, for the camera queries'
#: portal walk (core/runtime/cull.py; docs/FORMAT.md 'How an engine culls').  Written after the
#: visibility sections, only with them; all six or none.
CULL_SECTIONS = (
    ArraySection(b"CQNC", "cull_num_clusters", "<i4", (), "culling header"),
    ArraySection(b"CQPC", "cull_portal_clusters", "<i4", (2,), "culling portals"),
    ArraySection(b"CQPL", "cull_portal_plane", "<i4", (), "culling portals"),
    ArraySection(b"CQPF", "cull_portal_first", "<i4", (), "culling portals"),
    ArraySection(b"CQPN", "cull_portal_count", "<i4", (), "culling portals"),
    ArraySection(b"CQPV", "cull_portal_vertices", "<f8", (3,), "culling portal vertices"),
)
#: most vertices a culling portal may have (a reader's bound on the work of one clip)
MAX_CULL_PORTAL_VERTICES = 64
#: sections a level may lack: the crowd slices (core/runtime/crowd.py).  Written after everything
#: else, only when the level was baked with --slices; all four or none.  CRSD's record is one
#: slice (nx * ny u2 depths), so it is not an ArraySection: its record size comes from CRSZ.
CROWD_SECTIONS = (
    ArraySection(b"CRGD", "crowd_grid", "<f8", (9,), "crowd grid"),
    ArraySection(b"CRSZ", "crowd_size", "<u4", (4,), "crowd size"),
    ArraySection(b"CRSH", "crowd_slice_height", "<u2", (), "crowd slices"),
)
CROWD_DEPTH_TAG = b"CRSD"
#: the crowd slices by change (format 1.1; core/runtime/crowd.py CrowdSlices): what a writer stores,
#: after everything else, only when the level was baked with --slices; all six or none.  The first
#: three mean what CRGD, CRSZ and CRSH mean; new tags, so a 1.0 reader skips the whole group.  A
#: reader reads either group (1.0 files have CRGD ... CRSD), never both in one file.
CROWD_CHANGE_SECTIONS = (
    ArraySection(b"CSGD", "crowd_grid", "<f8", (9,), "crowd grid"),
    ArraySection(b"CSSZ", "crowd_size", "<u4", (4,), "crowd size"),
    ArraySection(b"CSSH", "crowd_slice_height", "<u2", (), "crowd slices"),
    ArraySection(b"CSSN", "crowd_span_count", "<u4", (), "crowd slices"),
    ArraySection(b"CSSP", "crowd_span", "<u4", (2,), "crowd spans"),
    ArraySection(b"CSCV", "crowd_change_value", "<u2", (), "crowd changes"),
)
#: the crowd fields of one record each
CROWD_SINGLE_FIELDS = ("crowd_grid", "crowd_size")
#: the fields only the change group has
CROWD_CHANGE_FIELDS = ("crowd_span_count", "crowd_span", "crowd_change_value")
#: CRGD's nine values, in order
CROWD_GRID = ("origin_x", "origin_y", "cell", "z0", "unit", "width", "height", "step", "resolution")
#: the setting each avatar value of CRGD must lie in the range of
CROWD_RANGES = {"cell": "slice_cell", "width": "slice_width", "height": "slice_height", "step": "slice_step",
                "resolution": "slice_resolution"}
#: sections a level may lack: the lightmap (core/compile/light/lightmap.py).  Written after everything
#: else, only when the level was baked with light; all six or none.  lm_luxel and lm_page_shape
#: are single records; the pages are stored texel by texel (K * S * S records, page by page, row by
#: row from V = 0); fields_from_level / level_from_fields reshape them.
LIGHT_SECTIONS = (
    ArraySection(b"LMLX", "lm_luxel", "<f8", (), "lightmap header"),
    ArraySection(b"LMPS", "lm_page_shape", "<u4", (2,), "lightmap header"),
    ArraySection(b"LMPG", "lm_pages", "<f4", (3,), "lightmap texels"),
    ArraySection(b"LMFP", "lm_face_page", "<i4", (), "faces"),
    ArraySection(b"LMFR", "lm_face_rect", "<i4", (4,), "faces"),
    ArraySection(b"LMUV", "lm_vertex_uv", "<f8", (2,), "vertices"),
)
#: largest page side a reader accepts (texels)
MAX_LIGHT_PAGE = 16384

#: (index tag, text tag, field): a list of strings as (offset u32, length u32) records into a
#: UTF-8 text section
NAME_SECTIONS = ((b"BRSN", b"BRST", "brush_names"), (b"HULN", b"HULT", "hull_names"))
NAME_INDEX = np.dtype([("offset", "<u4"), ("length", "<u4")])


def _fail(message: str, subject: str | None, hint: str = REBAKE) -> LevelFormatError:
    return LevelFormatError(message, subject=subject, hint=hint)


# --------------------------------------------------------------------------------------------
# Public API


def write_level(level: CompiledLevel, path: str | os.PathLike) -> None:
    """Write `level` to `path` (.bbk) atomically: either the whole new file is there or the old
    one (or none) is, never a partial file.  Raises LevelFormatError if the level is inconsistent
    (a compiler bug) and OSError if the file cannot be written."""
    write_atomic(path, level_to_bytes(level))


def read_level(path: str | os.PathLike) -> CompiledLevel:
    """Read and fully validate a .bbk file.  Raises LevelFormatError for any bad content and
    OSError if the file cannot be opened."""
    data = Path(path).read_bytes()
    return level_from_bytes(data, source_name=os.fspath(path))


def level_to_bytes(level: CompiledLevel) -> bytes:
    """The .bbk bytes of `level`: the same level always gives the same bytes."""
    fields = fields_from_level(level, subject="level to write", hint=COMPILER_BUG)
    check_level_fields(fields, subject="level to write", hint=COMPILER_BUG)
    return _pack_sections(_encode_sections(fields))


def level_from_bytes(data: bytes, source_name: str = "<bytes>") -> CompiledLevel:
    """Parse and validate .bbk bytes.  `source_name` (usually the path) starts error messages."""
    sections = _unpack_sections(bytes(data), source_name)
    fields = _decode_sections(sections, source_name)
    check_level_fields(fields, subject=source_name, hint=REBAKE)
    return level_from_fields(fields)


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to a new temporary file beside `path`, then rename it over `path`.  On any
    error (or interrupt) the temporary file is removed and `path` is left as it was."""
    write_all_atomic([(path, data)])


def write_all_atomic(files: list[tuple[str | os.PathLike, bytes]]) -> None:
    """Write several files so that all of them are replaced or none is: every file's bytes go to
    a new temporary file beside it first (where a full disk or a folder one may not write in shows
    up), and only when all are written are they renamed over their targets, one after the other
    (a rename within a folder does not fail for want of space; only a folder changed under us
    between the renames could leave the first replaced and not the second).  On any error (or
    interrupt) the temporary files are removed and the targets not yet renamed over are left as
    they were.  An OSError names the target the user asked for, never a temporary file."""
    temps: list[Path] = []
    target = None
    try:
        try:
            for target, data in files:
                temp, fd = _new_temp(Path(target))
                temps.append(temp)
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                    os.fsync(fd)
                finally:
                    os.close(fd)
            for (target, _), temp in zip(files, list(temps)):
                os.replace(temp, target)
                temps.remove(temp)
        except OSError as err:
            raise OSError(err.errno, err.strerror or str(err), os.fspath(target)) from None
    except BaseException:
        for temp in temps:
            try:
                os.unlink(temp)
            except OSError:
                pass
        raise


def _new_temp(path: Path) -> tuple[Path, int]:
    """A new, empty file beside `path` (hidden, random name) and its descriptor, open for writing."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return temp, os.open(temp, flags, 0o666)  # the umask applies, as for any new file
        except FileExistsError:
            continue


# --------------------------------------------------------------------------------------------
# CompiledLevel <-> a dict of canonical arrays (exact dtypes and shapes), shared with json_dump


def fields_from_level(level: CompiledLevel, subject: str, hint: str) -> dict:
    """Every stored field of `level` as canonical arrays / lists of str (stats is never stored)."""
    fields = {s.field: as_field_array(getattr(level, s.field), s, subject, hint) for s in ARRAY_SECTIONS}
    for _, _, name in NAME_SECTIONS:
        fields[name] = as_name_list(getattr(level, name), name, subject, hint)
    if len(getattr(level, "bevel_leaf_solid", ())):  # optional: only a beveled level has them
        for s in OPTIONAL_SECTIONS:
            fields[s.field] = as_field_array(getattr(level, s.field), s, subject, hint)
    if len(getattr(level, "vis_row_offset", ())):  # optional: only a level baked with visibility
        for s in VIS_SECTIONS:
            fields[s.field] = as_field_array(getattr(level, s.field), s, subject, hint)
        if len(getattr(level, "cull_num_clusters", ())):  # the culling portals, with the PVS only
            for s in CULL_SECTIONS:
                fields[s.field] = as_field_array(getattr(level, s.field), s, subject, hint)
    if getattr(level, "crowd", None) is not None:  # optional: only a level baked with --slices
        fields.update(crowd_fields(level.crowd, subject, hint))
    if getattr(level, "lm_luxel", 0.0):  # optional: only a level baked with light
        pages = np.asarray(level.lm_pages)
        if pages.ndim != 4 or pages.shape[1] != pages.shape[2] or pages.shape[3] != 3:
            raise _fail(f"lm_pages has shape {pages.shape}, expected (pages, side, side, 3).", subject, hint)
        values = {"lm_luxel": [level.lm_luxel], "lm_page_shape": [[pages.shape[1], pages.shape[0]]],
                  "lm_pages": pages.reshape(-1, 3), "lm_face_page": level.lm_face_page,
                  "lm_face_rect": level.lm_face_rect, "lm_vertex_uv": level.lm_vertex_uv}
        for s in LIGHT_SECTIONS:
            fields[s.field] = as_field_array(values[s.field], s, subject, hint)
    return fields


def crowd_fields(c: CrowdSlices, subject: str | None, hint: str) -> dict:
    """The crowd slices as canonical arrays of the change group: CSGD, CSSZ, CSSH, per slice the
    count of spans of changed cells, the spans (first cell, length) and every changed cell's value
    (core/runtime/crowd.py CrowdSlices)."""
    grid = [c.origin[0], c.origin[1], c.cell, c.z0, c.unit, c.width, c.height, c.step, c.resolution]
    ny, nx = c.shape
    f = {"crowd_grid": np.array(grid, dtype=np.float64),
         "crowd_size": np.array([nx, ny, c.taken, 0], dtype=np.int64),
         "crowd_slice_height": np.asarray(c.slice_height, dtype=np.int64),
         "crowd_span_count": np.asarray(c.span_count, dtype=np.int64),
         "crowd_span": np.asarray(c.span, dtype=np.int64).reshape(-1, 2), "crowd_change_value": np.asarray(c.change_value)}
    return crowd_arrays(f, subject, hint)


def crowd_arrays(f: dict, subject: str | None, hint: str) -> dict:
    """Canonical crowd arrays from plain values (lists from a JSON dump, or arrays): the grid and
    size one record each, the heights (K,), and either the changes (1.1: span counts (K,), spans
    (S, 2), values (C,)) or crowd_depth (1.0: (K, ny, nx) u2 with nx, ny from the size)."""
    out = {}
    change = any(name in f for name in CROWD_CHANGE_FIELDS)
    for s in CROWD_CHANGE_SECTIONS if change else CROWD_SECTIONS:
        value = f[s.field]
        single = s.field in CROWD_SINGLE_FIELDS
        if single:
            try:
                value = np.asarray(value).reshape(1, -1) if np.size(value) == s.record[0] else value
            except (ValueError, TypeError):
                pass  # as_field_array says what is wrong with it
        out[s.field] = as_field_array(value, s, subject, hint).reshape(s.record if single else (-1, *s.record))
    nx, ny = (int(v) for v in out["crowd_size"][:2])
    if not (1 <= nx and 1 <= ny and nx * ny <= MAX_SLICE_CELLS):
        raise _fail(f"crowd_size gives a grid of {nx} x {ny} cells; it must have 1 to {MAX_SLICE_CELLS:,} cells.",
                    subject, hint)
    if change:
        return out
    try:
        depth = np.asarray(f["crowd_depth"])
    except (ValueError, TypeError) as err:
        raise _fail(f"crowd_depth is not a numeric array ({err}).", subject, hint) from None
    if depth.ndim != 3 or depth.shape[1:] != (ny, nx):
        raise _fail(f"crowd_depth has shape {depth.shape}, expected (slices, {ny}, {nx}).", subject, hint)
    out["crowd_depth"] = as_field_array(depth.reshape(len(depth), -1), _depth_section(nx * ny),
                                        subject, hint).reshape(depth.shape)
    return out


def _depth_section(cells: int) -> ArraySection:
    return ArraySection(CROWD_DEPTH_TAG, "crowd_depth", "<u2", (cells,), "crowd slices")


def crowd_from_fields(f: dict) -> CrowdSlices:
    """CrowdSlices from checked canonical fields of either group (1.0 depths are re-encoded as changes)."""
    g = dict(zip(CROWD_GRID, (float(v) for v in f["crowd_grid"])))
    heights = f["crowd_slice_height"].astype(np.int64)
    kw = dict(origin=(g["origin_x"], g["origin_y"]), cell=g["cell"], z0=g["z0"], unit=g["unit"], width=g["width"],
              height=g["height"], step=g["step"], resolution=g["resolution"], slice_height=heights,
              taken=int(f["crowd_size"][2]))
    if "crowd_depth" in f:
        ground = (heights[:, None, None] - f["crowd_depth"].astype(np.int64)).astype(np.int32)
        return CrowdSlices.from_ground(ground, **kw)
    nx, ny = (int(v) for v in f["crowd_size"][:2])
    return CrowdSlices(grid=(ny, nx), span_count=f["crowd_span_count"].astype(np.int64),
                       span=f["crowd_span"].astype(np.int64).reshape(-1, 2),
                       change_value=f["crowd_change_value"].astype(np.uint16), **kw)


def level_from_fields(fields: dict) -> CompiledLevel:
    """A CompiledLevel with native-endian, writable copies of the canonical arrays."""
    kwargs = {}
    for s in ARRAY_SECTIONS:
        array = fields[s.field]
        kwargs[s.field] = array.astype(array.dtype.newbyteorder("="), copy=True)
    for _, _, name in NAME_SECTIONS:
        kwargs[name] = list(fields[name])
    for s in OPTIONAL_SECTIONS + VIS_SECTIONS + CULL_SECTIONS:
        if s.field in fields:
            array = fields[s.field]
            kwargs[s.field] = array.astype(array.dtype.newbyteorder("="), copy=True)
    if "crowd_grid" in fields:
        kwargs["crowd"] = crowd_from_fields(fields)
    if "lm_luxel" in fields:
        side, count = (int(v) for v in fields["lm_page_shape"][0])
        kwargs["lm_luxel"] = float(fields["lm_luxel"][0])
        kwargs["lm_pages"] = fields["lm_pages"].astype(np.float32).reshape(count, side, side, 3)
        for name in ("lm_face_page", "lm_face_rect", "lm_vertex_uv"):
            kwargs[name] = fields[name].astype(fields[name].dtype.newbyteorder("="), copy=True)
    return CompiledLevel(**kwargs)


def as_field_array(value, section: ArraySection, subject: str | None, hint: str) -> np.ndarray:
    """`value` as an array of section.dtype shaped (n, *record) ((2, 3) for world_bounds).
    Empty arrays of any shape are accepted; integer fields accept integral floats in range."""
    what = section.field
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as err:
        raise _fail(f"{what} is not a numeric array ({err}).", subject, hint) from None
    if array.dtype.kind not in "biuf":
        raise _fail(f"{what} has element type {array.dtype}, expected numbers.", subject, hint)
    shape = section.record if section.field in SINGLE_RECORD_FIELDS else (-1, *section.record)
    if array.size == 0 and section.field not in SINGLE_RECORD_FIELDS:
        array = array.reshape((0, *section.record))
    if array.ndim != len(shape) or any(want >= 0 and got != want for got, want in zip(array.shape, shape)):
        wanted = "x".join("n" if n < 0 else str(n) for n in shape)
        raise _fail(f"{what} has shape {array.shape}, expected ({wanted}).", subject, hint)
    target = np.dtype(section.dtype)
    if target.kind in "iu" and array.size:
        if array.dtype.kind == "f" and not (np.all(np.isfinite(array)) and np.all(array == np.round(array))):
            raise _fail(f"{what} holds non-integer values.", subject, hint)
        info = np.iinfo(target)
        if array.min() < info.min or array.max() > info.max:
            raise _fail(f"{what} holds values outside the range of {target}.", subject, hint)
    return np.ascontiguousarray(array, dtype=target)


def as_name_list(value, what: str, subject: str | None, hint: str) -> list[str]:
    if isinstance(value, (str, bytes)) or not all(isinstance(name, str) for name in value):
        raise _fail(f"{what} must be a list of strings.", subject, hint)
    for name in value:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise _fail(f"{what} holds {name!r}, which is not valid Unicode text.", subject, hint) from None
    return list(value)


# --------------------------------------------------------------------------------------------
# Semantic checks, the same for writing, reading and JSON


def check_level_fields(f: dict, subject: str | None, hint: str) -> None:
    """Raise LevelFormatError unless the canonical fields form a consistent level: matching array
    lengths, every index in range, finite coordinates, unit normals, a well-formed tree."""

    def fail(message: str) -> LevelFormatError:
        return _fail(message, subject, hint)

    counts: dict[str, tuple[str, int]] = {"brushes": ("brush_names", len(f["brush_names"]))}
    counts["hulls"] = ("hull_names", len(f["hull_names"]))
    for s in ARRAY_SECTIONS:
        n = 1 if s.field in SINGLE_RECORD_FIELDS else len(f[s.field])
        first = counts.setdefault(s.count, (s.field, n))
        if first[1] != n:
            raise fail(f"{s.field} has {n} entries but {first[0]} has {first[1]}: both count the {s.count}.")
        if s.dtype == "<f8" and not np.all(np.isfinite(f[s.field])):
            raise fail(f"{s.field} holds NaN or infinite values.")
    planes, nodes, leaves = counts["planes"][1], counts["nodes"][1], counts["leaves"][1]
    faces, verts, hulls = counts["faces"][1], counts["vertices"][1], counts["hulls"][1]
    refs, brushes = counts["leaf face references"][1], counts["brushes"][1]

    _check_planes(f["plane_normals"], f["plane_dists"], fail)
    if leaves < 1:
        raise fail("has no leaves; even an empty level has one leaf, the root.")
    _check_tree(f, "", planes, nodes, leaves, fail)
    onion_nodes, onion_leaves = counts["onion nodes"][1], counts["onion leaves"][1]
    _check_tree(f, "onion_", planes, onion_nodes, onion_leaves, fail)
    if _all_or_none(f, [s.field for s in OPTIONAL_SECTIONS], "the beveled tree needs", fail):
        bevel_nodes, bevel_leaves = len(f["bevel_node_plane"]), len(f["bevel_leaf_solid"])
        if len(f["bevel_node_children"]) != bevel_nodes:
            raise fail(f"bevel_node_children has {len(f['bevel_node_children'])} entries but bevel_node_plane "
                       f"has {bevel_nodes}: both count the bevel nodes.")
        _check_tree(f, "bevel_", planes, bevel_nodes, bevel_leaves, fail)
        _check_solid_bits(f["bevel_leaf_solid"], 1, "bevel_", fail)
    _check_vis(f, leaves, fail)
    _check_crowd(f, fail)
    _check_light(f, faces, verts, fail)
    _check_cull(f, planes, fail)
    _check_ranges(f["leaf_face_first"], f["leaf_face_count"], 0, refs, "leaf", "leaf_faces", fail)
    _check_indices(f["leaf_faces"], 0, faces, "leaf_faces", "a face", fail)
    _check_indices(f["leaf_cluster"], 0, leaves, "leaf_cluster", "a leaf", fail)
    if hulls < 1 or hulls > MAX_HULLS:
        raise fail(f"has {hulls} hulls; a level has 1 (the point hull) to {MAX_HULLS}.")
    if (hulls > 1) != (onion_leaves > 0):
        names = ", ".join(f["hull_names"])
        raise fail(f"has {hulls} hull{'s' if hulls > 1 else ''} ({names}) but "
                   + ("no onion tree: box hulls are answered by the onion tree." if hulls > 1 else
                      "an onion tree: only a level with box hulls has one."))
    for prefix in ("", "onion_"):
        _check_solid_bits(f[prefix + "leaf_solid"], hulls, prefix, fail)
    _check_indices(f["face_plane"], 0, planes, "face_plane", "a plane", fail)
    _check_ranges(f["face_first_vertex"], f["face_num_vertices"], 3, verts, "face", "vertices", fail)
    _check_indices(f["face_brush"], 0, brushes, "face_brush", "a brush name", fail)
    for field in ("hull_boxes", "world_bounds"):
        boxes = f[field].reshape(-1, 2, 3)
        if np.any(boxes[:, 0] > boxes[:, 1]):
            raise fail(f"{field} has a box whose mins exceed its maxs.")


def _all_or_none(f: dict, names: list[str], what_needs: str, fail) -> bool:
    """A group of sections that only mean something together: True when all are present, False
    when none is; one present without the others is an error naming both ('{what_needs} all of')."""
    present = [n for n in names if n in f]
    if present and len(present) < len(names):
        missing = [n for n in names if n not in f]
        raise fail(f"has {', '.join(present)} but no {', '.join(missing)}: {what_needs} all of "
                   f"{', '.join(names)}.")
    return bool(present)


def _check_vis(f: dict, leaves: int, fail) -> None:
    """The PVS sections: all three or none; a cluster (or -1) per leaf; every row decodes to exactly
    ceil(C / 8) bytes with no bit beyond the last cluster."""
    if not _all_or_none(f, [s.field for s in VIS_SECTIONS], "the visibility needs", fail):
        return
    clusters = len(f["vis_row_offset"])
    if clusters < 1 or clusters > leaves:
        raise fail(f"has {clusters} visibility clusters for {leaves} leaves; each cluster is at least one leaf.")
    if len(f["vis_leaf_cluster"]) != leaves:
        raise fail(f"vis_leaf_cluster has {len(f['vis_leaf_cluster'])} entries but the level has {leaves} leaves.")
    _check_indices(f["vis_leaf_cluster"], -1, clusters, "vis_leaf_cluster", "a cluster (or -1)", fail)
    try:
        decompress_rows(f["vis_row_offset"], f["vis_rows"], clusters)
    except ValueError as err:
        raise fail(f"has a corrupt visibility row: {err}.") from None


def _check_crowd(f: dict, fail) -> None:
    """The crowd sections (docs/FORMAT.md, CRGD): all four or none; a finite grid inside the
    coordinate limit, the avatar values in their settings' ranges, a power-of-two unit; 1 to
    MAX_SLICE_CELLS cells; 1 <= kept <= taken; slice heights strictly increasing from 1; no depth
    below unit 0.  Linear in the sections' size."""
    change = any(name in f for name in CROWD_CHANGE_FIELDS)
    if change and "crowd_depth" in f:
        raise fail("has both crowd groups (the depths CRSD and the changes CSSN, CSSP, CSCV): a level has one.")
    group = [s.field for s in CROWD_CHANGE_SECTIONS] if change else [s.field for s in CROWD_SECTIONS] + ["crowd_depth"]
    if not _all_or_none(f, group, "the crowd slices need", fail):
        return
    grid, size = f["crowd_grid"], f["crowd_size"].astype(np.int64)
    heights = f["crowd_slice_height"].astype(np.int64)
    if not np.all(np.isfinite(grid)):
        raise fail("crowd_grid holds NaN or infinite values.")
    g = dict(zip(CROWD_GRID, (float(v) for v in grid)))
    for key, setting in CROWD_RANGES.items():
        r = SETTING_RANGES[setting]
        if not r.low <= g[key] <= r.high:
            raise fail(f"crowd_grid's {key} is {g[key]!r}; it must be from {r.text()} ({r.why}).")
    mantissa, _ = np.frexp(g["unit"])
    if mantissa != 0.5 or not SLICE_FINEST_UNIT / 1024 <= g["unit"] <= 1024.0:
        raise fail(f"crowd_grid's unit is {g['unit']!r}; it must be a power of two from 2^-20 to 2^10 m.")
    nx, ny, taken = int(size[0]), int(size[1]), int(size[2])
    if not (1 <= nx and 1 <= ny and nx * ny <= MAX_SLICE_CELLS):
        raise fail(f"crowd_size gives a grid of {nx} x {ny} cells; it must have 1 to {MAX_SLICE_CELLS:,} cells.")
    corner = max(abs(g["origin_x"]), abs(g["origin_y"]), abs(g["origin_x"] + nx * g["cell"]),
                 abs(g["origin_y"] + ny * g["cell"]), abs(g["z0"]), abs(g["z0"] + 65535 * g["unit"]))
    if corner > MAX_COORDINATE:
        raise fail(f"the crowd grid reaches {corner!r} m from the origin; the limit is {MAX_COORDINATE:g} m.")
    kept = len(heights)
    if not 1 <= kept <= taken or size[3] != 0:
        raise fail(f"crowd_size says {taken} slices taken (reserved {int(size[3])}) for {kept} kept; "
                   "1 <= kept <= taken and reserved 0.")
    if heights[0] < 1 or np.any(np.diff(heights) <= 0):
        raise fail("crowd_slice_height must increase strictly from at least 1.")
    if change:
        _check_crowd_changes(f, heights, nx * ny, fail)
        return
    depth = f["crowd_depth"]
    if depth.shape != (kept, ny, nx):
        raise fail(f"crowd_depth has shape {depth.shape}, expected ({kept}, {ny}, {nx}).")
    deepest = depth.reshape(kept, -1).max(axis=1).astype(np.int64)
    over = np.flatnonzero(deepest > heights)
    if over.size:
        k = int(over[0])
        raise fail(f"crowd slice {k} has a depth of {int(deepest[k])} units below its height of "
                   f"{int(heights[k])}: a depth reaches at most unit 0.")


def _check_crowd_changes(f: dict, heights: np.ndarray, cells: int, fail) -> None:
    """The change group: a span count per slice adding up to the spans; in each slice spans of at
    least one cell, on the grid, increasing and apart (a span ends before the next one's cell
    before it: touching spans are one); the spans' cells add up to the values; each value CUT
    (0xFFFF) or below its slice's height, and not the value the cell already has (so every level
    has one encoding).  One sweep: linear in the spans and changes plus the cells."""
    count, span, value = f["crowd_span_count"].astype(np.int64), f["crowd_span"].astype(np.int64), f["crowd_change_value"]
    kept = len(heights)
    if len(count) != kept:
        raise fail(f"crowd_span_count has {len(count)} entries for {kept} slices: one per slice.")
    if int(count.sum()) != len(span):
        raise fail(f"crowd_span_count adds up to {int(count.sum())} spans but crowd_span has {len(span)}.")
    if len(span) and (span[:, 1].min() < 1 or int((span[:, 0] + span[:, 1]).max()) > cells):
        raise fail(f"crowd_span holds an empty span or one past the grid's {cells} cells.")
    if int(span[:, 1].sum()) != len(value):
        raise fail(f"crowd_span's spans hold {int(span[:, 1].sum())} cells but crowd_change_value has "
                   f"{len(value)} values: one per cell.")
    now = np.zeros(cells, dtype=np.uint16)
    s_first = np.concatenate([[0], np.cumsum(count)])
    c_first = np.concatenate([[0], np.cumsum(span[:, 1])])[s_first]
    for k in range(kept):
        sp = span[s_first[k]:s_first[k + 1]]
        if np.any(sp[1:, 0] <= sp[:-1, 0] + sp[:-1, 1]):
            raise fail(f"crowd slice {k}'s spans do not increase strictly, apart.")
        c, v = expand_spans(sp), value[c_first[k]:c_first[k + 1]]
        if np.any((v != CUT) & (v.astype(np.int64) >= heights[k])):
            raise fail(f"crowd slice {k} has a ground at or above its height of {int(heights[k])} units "
                       "(a ground there is a cut, 0xFFFF).")
        if np.any(now.take(c) == v):
            raise fail(f"crowd slice {k} changes a cell to the value it already has.")
        now[c] = v


def _check_light(f: dict, faces: int, verts: int, fail) -> None:
    """The lightmap sections: all six or none; one luxel size > 0; one page shape (side 1 to
    MAX_LIGHT_PAGE) whose pages hold exactly the texels stored; texels finite and >= 0; a page
    (or -1: no chart) per face, each chart's rectangle inside its page (all zero without a page);
    a finite UV per vertex."""
    if not _all_or_none(f, [s.field for s in LIGHT_SECTIONS], "the lightmap needs", fail):
        return
    for name in ("lm_luxel", "lm_page_shape"):
        if len(f[name]) != 1:
            raise fail(f"{name} has {len(f[name])} records, expected 1.")
    luxel = float(f["lm_luxel"][0])
    if not (np.isfinite(luxel) and luxel > 0):
        raise fail(f"lm_luxel is {luxel!r}; a luxel is a positive size in metres.")
    side, count = (int(v) for v in f["lm_page_shape"][0])
    if not 1 <= side <= MAX_LIGHT_PAGE:
        raise fail(f"lm_page_shape says pages of {side} texels; a side is 1 to {MAX_LIGHT_PAGE}.")
    if count * side * side != len(f["lm_pages"]):
        raise fail(f"lm_pages holds {len(f['lm_pages'])} texels but {count} pages of {side} x {side} need "
                   f"{count * side * side}.")
    if not np.all(np.isfinite(f["lm_pages"])) or (len(f["lm_pages"]) and f["lm_pages"].min() < 0):
        raise fail("lm_pages holds NaN, infinite or negative light.")
    for name, n, what in (("lm_face_page", faces, "faces"), ("lm_face_rect", faces, "faces"),
                          ("lm_vertex_uv", verts, "vertices")):
        if len(f[name]) != n:
            raise fail(f"{name} has {len(f[name])} entries but the level has {n} {what}.")
    _check_indices(f["lm_face_page"], -1, count, "lm_face_page", "a lightmap page (or -1)", fail)
    rect = f["lm_face_rect"].astype(np.int64)
    charted = f["lm_face_page"] >= 0
    inside = ((rect[:, 0] >= 0) & (rect[:, 1] >= 0) & (rect[:, 2] >= 1) & (rect[:, 3] >= 1)
              & (rect[:, 0] + rect[:, 2] <= side) & (rect[:, 1] + rect[:, 3] <= side))
    bad = np.flatnonzero(charted & ~inside)
    if len(bad):
        raise fail(f"lm_face_rect of face {int(bad[0])} ({rect[bad[0]].tolist()}) leaves its {side}-texel page.")
    bad = np.flatnonzero(~charted & np.any(rect != 0, axis=1))
    if len(bad):
        raise fail(f"lm_face_rect of face {int(bad[0])} is not zero, but the face has no lightmap page.")
    if not np.all(np.isfinite(f["lm_vertex_uv"])):
        raise fail("lm_vertex_uv holds NaN or infinite values.")


def _check_cull(f: dict, planes: int, fail) -> None:
    """The culling portals: all six sections or none, and only with the PVS; one header record
    equal to the number of visibility clusters; each portal joins two different clusters, lies on a
    plane of the table, and has 3 to MAX_CULL_PORTAL_VERTICES finite vertices inside CQPV, each
    within CULL_PORTAL_ON_PLANE of its plane."""
    if not _all_or_none(f, [s.field for s in CULL_SECTIONS], "the culling portals need", fail):
        return
    if "vis_row_offset" not in f:
        raise fail("has culling portals but no visibility sections; they number the PVS's clusters.")
    clusters = len(f["vis_row_offset"])
    header = f["cull_num_clusters"]
    if len(header) != 1 or int(header[0]) != clusters:
        raise fail(f"cull_num_clusters is {header.tolist()}, expected [{clusters}] (the visibility clusters).")
    count = len(f["cull_portal_plane"])
    for field in ("cull_portal_clusters", "cull_portal_first", "cull_portal_count"):
        if len(f[field]) != count:
            raise fail(f"{field} has {len(f[field])} entries but cull_portal_plane has {count}: both count the "
                       "culling portals.")
    pair = f["cull_portal_clusters"].reshape(-1, 2)
    _check_indices(pair.ravel(), 0, clusters, "cull_portal_clusters", "a visibility cluster", fail)
    same = np.flatnonzero(pair[:, 0] == pair[:, 1])
    if same.size:
        raise fail(f"culling portal {int(same[0])} joins cluster {int(pair[same[0], 0])} to itself.")
    _check_indices(f["cull_portal_plane"], 0, planes, "cull_portal_plane", "a plane", fail)
    verts = f["cull_portal_vertices"].reshape(-1, 3)
    if not np.all(np.isfinite(verts)):
        raise fail("cull_portal_vertices holds NaN or infinite values.")
    first, num = f["cull_portal_first"], f["cull_portal_count"]
    _check_ranges(first, num, 3, len(verts), "culling portal", "cull_portal_vertices", fail)
    big = np.flatnonzero(num > MAX_CULL_PORTAL_VERTICES)
    if big.size:
        raise fail(f"culling portal {int(big[0])} has {int(num[big[0]])} vertices; at most "
                   f"{MAX_CULL_PORTAL_VERTICES} are allowed.")
    if count:
        owner = np.repeat(np.arange(count), num.astype(np.int64))
        pos = np.arange(len(owner)) - np.repeat(np.cumsum(num, dtype=np.int64) - num, num.astype(np.int64))
        v = verts[np.repeat(first.astype(np.int64), num.astype(np.int64)) + pos]
        plane = f["cull_portal_plane"].astype(np.int64)[owner]
        off = np.abs(dot(v, f["plane_normals"][plane]) - f["plane_dists"][plane])
        if np.any(off > CULL_PORTAL_ON_PLANE):
            k = int(owner[np.argmax(off > CULL_PORTAL_ON_PLANE)])
            raise fail(f"culling portal {k} has a vertex {float(off.max()):.3g} m off its plane "
                       f"(at most {CULL_PORTAL_ON_PLANE:g} m).")


def _check_tree(f: dict, prefix: str, planes: int, nodes: int, leaves: int, fail) -> None:
    """Prove that the node graph is a tree, in time linear in its size (FORMAT.md, "The tree's
    shape"): node planes in range; each child a later node or an existing leaf (so no cycles);
    every node but the root and every leaf the child of exactly one node (so nothing is shared,
    nothing is unreachable, and L = N + 1 follows); at most MAX_TREE_DEPTH nodes on any
    root-to-leaf path."""
    tree = prefix.replace("_", " ")
    _check_indices(f[prefix + "node_plane"], 0, planes, prefix + "node_plane", "a plane", fail)
    children = f[prefix + "node_children"].astype(np.int64)
    parent = np.arange(nodes, dtype=np.int64)[:, None]
    bad = ((children >= 0) & ((children <= parent) | (children >= nodes))) | (children < -leaves)
    if bad.any():
        node, side = (int(i) for i in np.argwhere(bad)[0])
        child = int(children[node, side])
        raise fail(
            f"{tree}node {node}'s {'front' if side == 0 else 'back'} child is {child}: "
            f"a child must be a later node (< {nodes}) or a leaf -1-c with c < {leaves}."
        )
    if nodes == 0 and leaves == 0 and prefix:  # an absent onion tree
        return
    flat = children.ravel()
    node_refs = np.bincount(flat[flat >= 0], minlength=nodes)
    leaf_refs = np.bincount(-1 - flat[flat < 0], minlength=leaves)
    (node_refs if nodes else leaf_refs)[0] += 1  # the root (node 0, or leaf 0) is reached from outside
    for shared in (True, False):  # a shared child first: it is the cause of the orphan it leaves
        for kind, refs, code in (("node", node_refs, lambda i: i), ("leaf", leaf_refs, lambda i: -1 - i)):
            wrong = np.flatnonzero(refs > 1 if shared else refs != 1)
            if wrong.size:
                i = int(wrong[0])
                owners = [int(n) for n in np.flatnonzero((children == code(i)).any(axis=1))[:2]]
                how = (f"is the child of nodes {owners[0]} and {owners[1]}" if len(owners) > 1 else
                       f"is reached twice from node {owners[0]}" if shared else "is the child of no node")
                raise fail(f"{tree}{kind} {i} {how}: the nodes must form a tree, each node and leaf reached "
                           "exactly once from the root.")
    depth = _depth_at_most(children, MAX_TREE_DEPTH)
    if depth > MAX_TREE_DEPTH:
        raise fail(f"{tree}tree is more than {MAX_TREE_DEPTH} nodes deep; the limit is {MAX_TREE_DEPTH}.")


def _depth_at_most(children: np.ndarray, limit: int) -> int:
    """Nodes on the longest root-to-leaf path of a proven tree, level by level (each level's
    frontier holds distinct nodes, so O(N) in all); stops at limit + 1."""
    frontier, depth = np.zeros(1 if len(children) else 0, dtype=np.int64), 0
    while len(frontier) and depth <= limit:
        depth += 1
        nxt = children[frontier].ravel()
        frontier = nxt[nxt >= 0]
    return depth


def _check_solid_bits(solid: np.ndarray, hulls: int, prefix: str, fail) -> None:
    stray = solid >> np.uint32(hulls) if hulls < 32 else np.zeros(0, np.uint32)
    if np.any(stray):
        leaf = int(np.flatnonzero(stray)[0])
        tree, bits = prefix.replace("_", " "), int(solid[leaf])
        raise fail(f"{tree}leaf {leaf}'s solid bits {bits:#x} name hulls beyond the {hulls} there are.")


def _check_planes(normals: np.ndarray, dists: np.ndarray, fail) -> None:
    if len(normals) % 2:
        raise fail(f"has {len(normals)} planes; planes come in pairs (plane i and i ^ 1 are flips).")
    length = np.sqrt(np.einsum("ij,ij->i", normals, normals))
    off = np.flatnonzero(~(np.abs(length - 1.0) <= NORMAL_LENGTH_TOLERANCE))
    if off.size:
        raise fail(f"plane {int(off[0])}'s normal has length {float(length[off[0]])!r}, not 1.")
    unflipped = np.any(normals[1::2] != -normals[0::2], axis=1) | (dists[1::2] != -dists[0::2])
    if unflipped.any():
        i = 2 * int(np.flatnonzero(unflipped)[0])
        raise fail(f"planes {i} and {i + 1} are not exact flips of each other.")


def _check_indices(values: np.ndarray, low: int, high: int, field: str, target: str, fail) -> None:
    bad = np.flatnonzero((values < low) | (values >= high))
    if bad.size:
        i = int(bad[0])
        raise fail(f"{field}[{i}] is {int(values[i])}, not {target} index in [{low}, {high}).")


def _check_ranges(first, count, min_count: int, size: int, owner: str, target: str, fail) -> None:
    first, count = first.astype(np.int64), count.astype(np.int64)
    bad = np.flatnonzero((first < 0) | (count < min_count) | (first + count > size))
    if bad.size:
        i = int(bad[0])
        raise fail(
            f"{owner} {i} uses {target} [{int(first[i])}, +{int(count[i])}), outside the {size} there are"
            + (f" or fewer than {min_count}." if min_count else ".")
        )


# --------------------------------------------------------------------------------------------
# Fields <-> sections


def _encode_sections(f: dict) -> list[tuple[bytes, int, int, bytes]]:
    """(tag, record size, record count, payload) for every section, in file order."""
    sections = []
    for s in ARRAY_SECTIONS:
        array = f[s.field]
        count = 1 if s.field in SINGLE_RECORD_FIELDS else len(array)
        sections.append((s.tag, s.record_size, count, array.tobytes()))
    for index_tag, text_tag, field in NAME_SECTIONS:
        encoded = [name.encode("utf-8") for name in f[field]]
        lengths = np.array([len(e) for e in encoded], dtype=np.int64)
        if lengths.sum() > 0xFFFFFFFF:
            raise _fail(f"{field} hold more than 4 GiB of text.", "level to write", COMPILER_BUG)
        index = np.zeros(len(encoded), dtype=NAME_INDEX)
        index["offset"] = np.cumsum(lengths) - lengths
        index["length"] = lengths
        sections.append((index_tag, NAME_INDEX.itemsize, len(encoded), index.tobytes()))
        text = b"".join(encoded)
        sections.append((text_tag, 1, len(text), text))
    if len(f.get("bevel_leaf_solid", ())):
        for s in OPTIONAL_SECTIONS:
            sections.append((s.tag, s.record_size, len(f[s.field]), f[s.field].tobytes()))
    if "vis_row_offset" in f:
        for s in VIS_SECTIONS:
            sections.append((s.tag, s.record_size, len(f[s.field]), f[s.field].tobytes()))
    if "cull_num_clusters" in f:
        for s in CULL_SECTIONS:
            sections.append((s.tag, s.record_size, len(f[s.field]), f[s.field].tobytes()))
    crowd = CROWD_CHANGE_SECTIONS if "crowd_span_count" in f else CROWD_SECTIONS
    for s in crowd:  # all of a group when the level has slices (check_level_fields saw to it)
        if s.field in f:
            single = s.field in CROWD_SINGLE_FIELDS
            sections.append((s.tag, s.record_size, 1 if single else len(f[s.field]), f[s.field].tobytes()))
    if "crowd_depth" in f:  # a 1.0 group (tests write one to read it back)
        depth = f["crowd_depth"]
        sections.append((CROWD_DEPTH_TAG, 2 * depth.shape[1] * depth.shape[2], len(depth), depth.tobytes()))
    if "lm_luxel" in f:
        for s in LIGHT_SECTIONS:
            sections.append((s.tag, s.record_size, len(f[s.field]), f[s.field].tobytes()))
    return sections


def _decode_sections(sections: dict, subject: str) -> dict:
    f = {}
    for s in ARRAY_SECTIONS:
        count, payload = _known_section(sections, s.tag, s.record_size, s.field, subject)
        array = np.frombuffer(payload, dtype=s.dtype).reshape((count, *s.record))
        if s.field in SINGLE_RECORD_FIELDS:
            if count != 1:
                raise _fail(f"section {s.tag.decode()} ({s.field}) has {count} records, expected 1.", subject)
            array = array[0]
        f[s.field] = array
    for index_tag, text_tag, field in NAME_SECTIONS:
        _, index_bytes = _known_section(sections, index_tag, NAME_INDEX.itemsize, field, subject)
        _, text = _known_section(sections, text_tag, 1, field + " text", subject)
        names, total = [], 0
        for i, (offset, length) in enumerate(np.frombuffer(index_bytes, dtype=NAME_INDEX).tolist()):
            if offset + length > len(text):
                raise _fail(f"{field}[{i}] lies outside its text section {text_tag.decode()}.", subject)
            total += length  # names overlapping again and again would cost (and hold) names x text bytes
            if total > len(text):
                raise _fail(f"{field}[{i}] brings the names to {total} bytes, more than their text section "
                            f"{text_tag.decode()} holds ({len(text)}): names overlap.", subject)
            try:
                names.append(text[offset : offset + length].decode("utf-8"))
            except UnicodeDecodeError:
                raise _fail(f"{field}[{i}] is not valid UTF-8.", subject) from None
        f[field] = names
    present = [s.tag.decode() for s in OPTIONAL_SECTIONS if s.tag in sections]
    if present and len(present) < len(OPTIONAL_SECTIONS):
        missing = [s.tag.decode() for s in OPTIONAL_SECTIONS if s.tag not in sections]
        raise _fail(f"has section {', '.join(present)} but no {', '.join(missing)}: the beveled tree needs "
                    f"all of {', '.join(s.tag.decode() for s in OPTIONAL_SECTIONS)}.", subject)
    for s in OPTIONAL_SECTIONS:
        if s.tag in sections:
            count, payload = _known_section(sections, s.tag, s.record_size, s.field, subject)
            f[s.field] = np.frombuffer(payload, dtype=s.dtype).reshape((count, *s.record))
        else:
            f[s.field] = np.zeros((0, *s.record), dtype=s.dtype)
    for s in VIS_SECTIONS + LIGHT_SECTIONS + CULL_SECTIONS:  # all or none: check_level_fields says which is missing
        if s.tag in sections:
            count, payload = _known_section(sections, s.tag, s.record_size, s.field, subject)
            f[s.field] = np.frombuffer(payload, dtype=s.dtype).reshape((count, *s.record))
    _decode_crowd(sections, f, subject)
    return f


def _decode_crowd(sections: dict, f: dict, subject: str) -> None:
    """The crowd sections, when any is present (check_level_fields checks that all four are and
    what they hold); CRGD and CRSZ are single records, CRSD's records are nx * ny depths.  The
    change group (CSGD ... CSCV) likewise; a file with both is refused."""
    old = [s.tag.decode() for s in CROWD_SECTIONS if s.tag in sections] + (["CRSD"] if CROWD_DEPTH_TAG in sections else [])
    new = [s.tag.decode() for s in CROWD_CHANGE_SECTIONS if s.tag in sections]
    if old and new:
        raise _fail(f"has both crowd groups ({', '.join(old)} and {', '.join(new)}): a level has one.", subject)
    for s in (*CROWD_CHANGE_SECTIONS, *CROWD_SECTIONS):
        if s.tag in sections:
            count, payload = _known_section(sections, s.tag, s.record_size, s.field, subject)
            single = s.field in CROWD_SINGLE_FIELDS
            if single and count != 1:
                raise _fail(f"section {s.tag.decode()} ({s.field}) has {count} records, expected 1.", subject)
            f[s.field] = np.frombuffer(payload, dtype=s.dtype).reshape(s.record if single else (-1, *s.record))
    if CROWD_DEPTH_TAG in sections:
        if "crowd_size" not in f:
            raise _fail("has section CRSD but no CRSZ: the crowd slices need all of CRGD, CRSZ, CRSH, CRSD.",
                        subject)
        nx, ny = (int(v) for v in f["crowd_size"][:2])
        if not (1 <= nx and 1 <= ny and nx * ny <= MAX_SLICE_CELLS):
            raise _fail(f"crowd_size gives a grid of {nx} x {ny} cells; it must have 1 to "
                        f"{MAX_SLICE_CELLS:,} cells.", subject)
        count, payload = _known_section(sections, CROWD_DEPTH_TAG, 2 * nx * ny, "crowd_depth", subject)
        f["crowd_depth"] = np.frombuffer(payload, dtype="<u2").reshape(count, ny, nx)


def _known_section(sections: dict, tag: bytes, record_size: int, what: str, subject: str):
    if tag not in sections:
        raise _fail(f"the required section {tag.decode()} ({what}) is missing.", subject)
    size, count, payload = sections[tag]
    if size != record_size:
        raise _fail(
            f"section {tag.decode()} ({what}) has {size}-byte records, expected {record_size}.", subject
        )
    return count, payload


# --------------------------------------------------------------------------------------------
# The container: header, section table, aligned sections


def _align(n: int) -> int:
    return -(-n // ALIGNMENT) * ALIGNMENT


def _pack_sections(sections: list[tuple[bytes, int, int, bytes]]) -> bytes:
    table_end = HEADER.size + ENTRY.size * len(sections)
    offset, entries, layout = _align(table_end), [], []
    for tag, record_size, count, payload in sections:
        entries.append(ENTRY.pack(tag, record_size, count, offset, len(payload), zlib.crc32(payload), 0))
        layout.append((offset, payload))
        offset = _align(offset + len(payload))
    out = bytearray(offset)
    header = HEADER.pack(
        MAGIC, VERSION_MAJOR, VERSION_MINOR, 0, HEADER.size, ENTRY.size, len(sections), offset, 0, 0
    )
    out[:table_end] = header + b"".join(entries)
    out[HEADER_CRC_OFFSET : HEADER_CRC_OFFSET + 4] = struct.pack("<I", zlib.crc32(out[:table_end]))
    for start, payload in layout:
        out[start : start + len(payload)] = payload
    return bytes(out)


def _is_tag(tag: bytes) -> bool:
    return all(48 <= c <= 57 or 65 <= c <= 90 for c in tag)  # A-Z, 0-9


def _unpack_sections(data: bytes, subject: str) -> dict[bytes, tuple[int, int, bytes]]:
    """Check the container and return {tag: (record size, record count, payload)}."""
    header_size, entry_size, count = _check_header(data, subject)
    table_end = header_size + count * entry_size
    sections, spans = {}, []
    for i in range(count):
        entry = ENTRY.unpack_from(data, header_size + i * entry_size)
        tag, record_size, records, payload = _check_entry(data, i, entry, table_end, sections, subject)
        sections[tag] = (record_size, records, payload)
        spans.append((entry[3], entry[3] + entry[4], tag.decode("ascii")))
    end = table_end
    for start, stop, name in sorted(spans):
        if start < end:
            raise _fail(f"section {name} overlaps the section table or another section.", subject)
        _check_padding(data, end, start, subject)
        end = stop
    _check_padding(data, end, len(data), subject)
    return sections


def _check_header(data: bytes, subject: str) -> tuple[int, int, int]:
    """Magic, version, sizes, header checksum, flags; returns (header size, entry size, count)."""
    size = len(data)
    truncated = f"is truncated ({size} bytes)"
    if data[:4] != MAGIC[: min(size, 4)]:
        raise _fail(f"is not a brushbake level: it starts with {data[:4]!r}, not {MAGIC!r}.", subject,
                    "Choose a .bbk file written by brushbake.")
    if size < 8:
        raise _fail(f"{truncated}: not even the header is complete.", subject)
    major, minor = struct.unpack_from("<HH", data, 4)
    if major != VERSION_MAJOR:
        raise _fail(
            f"uses format version {major}.{minor}; this brushbake reads version {VERSION_MAJOR}.x.",
            subject, "Use the brushbake version that wrote it, or rebake the level with this one.",
        )
    if size < HEADER.size:
        raise _fail(f"{truncated}: not even the header is complete.", subject)
    _, _, _, flags, header_size, entry_size, count, file_size, crc, _ = HEADER.unpack_from(data)
    if header_size < HEADER.size or entry_size < ENTRY.size or header_size % 8 or entry_size % 8:
        raise _fail(f"has a corrupt header (header size {header_size}, entry size {entry_size}).", subject)
    table_end = header_size + count * entry_size
    if table_end > size:
        raise _fail(f"{truncated} or its header is corrupt: its section table would end at {table_end}.",
                    subject)
    if zlib.crc32(data[:HEADER_CRC_OFFSET] + bytes(4) + data[HEADER_CRC_OFFSET + 4 : table_end]) != crc:
        raise _fail("is corrupt: the header checksum does not match.", subject)
    if file_size != size:
        state = "is truncated" if file_size > size else "has extra bytes at the end"
        raise _fail(f"{state}: the header says {file_size} bytes, the file has {size}.", subject)
    if size % ALIGNMENT:
        raise _fail(f"is {size} bytes long, not a multiple of {ALIGNMENT}.", subject)
    if flags & REQUIRED_FLAGS & ~KNOWN_FLAGS:
        raise _fail(f"needs features (flags {flags:#x}) this brushbake does not know.", subject,
                    "Use a newer brushbake, or rebake the level with this one.")
    return header_size, entry_size, count


def _check_entry(data: bytes, i: int, entry: tuple, table_end: int, seen: dict, subject: str):
    """One table entry's tag, sizes, place and checksum; returns (tag, record size, count, payload)."""
    tag, record_size, records, offset, byte_size, crc, _ = entry
    if not _is_tag(tag) or tag in seen:
        raise _fail(f"section table entry {i} has a bad or repeated tag {tag!r}.", subject)
    name = tag.decode("ascii")
    if record_size * records != byte_size:
        message = f"section {name} holds {records} records of {record_size} bytes in {byte_size} bytes."
        raise _fail(message, subject)
    if offset % ALIGNMENT or offset < table_end or offset + byte_size > len(data):
        raise _fail(f"section {name} at byte {offset} (+{byte_size}) lies outside the data area.", subject)
    payload = data[offset : offset + byte_size]
    if zlib.crc32(payload) != crc:
        raise _fail(f"is corrupt: the checksum of section {name} does not match.", subject)
    return tag, record_size, records, payload


def _check_padding(data: bytes, start: int, stop: int, subject: str) -> None:
    if data.count(0, start, stop) != stop - start:
        raise _fail(f"is corrupt: padding bytes between {start} and {stop} are not zero.", subject)
