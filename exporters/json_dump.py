"""A JSON dump of a compiled level, for reading and diffing by eye; the .bbk file is what engines load.

Every stored CompiledLevel field appears under its own name (sorted keys, indent 1), arrays as
nested lists, floats as Python's shortest round-trip repr, so the same level always gives the same
text and level_from_json(level_to_json(level)) equals `level` exactly.  `stats` is not written.
The beveled tree's arrays (bevel_node_plane, bevel_node_children, bevel_leaf_solid) are written and
read back when the level has one, as the .bbk file's optional sections are; a dump has all three or
none.  So are the visibility arrays (vis_leaf_cluster, vis_row_offset, vis_rows) of a level baked
with visibility and its culling portals (cull_*), and the crowd slices (crowd_grid, crowd_size,
crowd_slice_height and the changes crowd_span_count, crowd_span, crowd_change_value) of a
level baked with --slices; a dump of format 1.0 with crowd_depth instead of the changes is read too.
"""

from __future__ import annotations

import json
import os

from ..core.errors import LevelFormatError
from ..core.runtime.level import CompiledLevel
from .native import (
    ARRAY_SECTIONS,
    COMPILER_BUG,
    NAME_SECTIONS,
    OPTIONAL_SECTIONS,
    VIS_SECTIONS,
    LIGHT_SECTIONS,
    CULL_SECTIONS,
    VERSION_MAJOR,
    VERSION_MINOR,
    CROWD_SECTIONS,
    CROWD_CHANGE_SECTIONS,
    as_field_array,
    crowd_arrays,
    as_name_list,
    check_level_fields,
    fields_from_level,
    level_from_fields,
    write_atomic,
)

FORMAT_NAME = "brushbake-level"
CROWD_FIELDS = tuple(s.field for s in CROWD_CHANGE_SECTIONS)
#: a 1.0 dump's crowd slices (depths)
CROWD_DEPTH_FIELDS = tuple(s.field for s in CROWD_SECTIONS) + ("crowd_depth",)
REDUMP = "Dump the level to JSON again."


def level_to_json(level: CompiledLevel) -> str:
    """The JSON text of `level` (ends with a newline)."""
    fields = fields_from_level(level, subject="level to dump", hint=COMPILER_BUG)
    check_level_fields(fields, subject="level to dump", hint=COMPILER_BUG)
    doc = {name: value if isinstance(value, list) else value.tolist() for name, value in fields.items()}
    doc["format"] = FORMAT_NAME
    doc["version"] = [VERSION_MAJOR, VERSION_MINOR]
    return json.dumps(doc, sort_keys=True, indent=1, allow_nan=False) + "\n"


def write_level_json(level: CompiledLevel, path: str | os.PathLike) -> None:
    """Write level_to_json(level) to `path` atomically (UTF-8)."""
    write_atomic(path, level_to_json(level).encode("utf-8"))


def level_from_json(text: str, source_name: str = "<json>") -> CompiledLevel:
    """Parse a dump made by level_to_json, with the same checks as the .bbk reader.
    Raises LevelFormatError for anything else."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise LevelFormatError(f"is not valid JSON ({err}).", subject=source_name, hint=REDUMP) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        raise LevelFormatError("is not a brushbake level dump.", subject=source_name, hint=REDUMP)
    if not isinstance(doc.get("version"), list) or doc["version"][:1] != [VERSION_MAJOR]:
        raise LevelFormatError(
            f"has dump version {doc.get('version')!r}; this brushbake reads {VERSION_MAJOR}.x.",
            subject=source_name,
            hint=REDUMP,
        )
    fields = {}
    for s in ARRAY_SECTIONS:
        fields[s.field] = as_field_array(_required(doc, s.field, source_name), s, source_name, REDUMP)
    for _, _, name in NAME_SECTIONS:
        value = _required(doc, name, source_name)
        if not isinstance(value, list):
            raise LevelFormatError(f"{name} must be a list of strings.", subject=source_name, hint=REDUMP)
        fields[name] = as_name_list(value, name, source_name, REDUMP)
    for s in OPTIONAL_SECTIONS + VIS_SECTIONS + LIGHT_SECTIONS + CULL_SECTIONS:  # the beveled tree: all three or none (check_level_fields says which)
        if s.field in doc:
            fields[s.field] = as_field_array(doc[s.field], s, source_name, REDUMP)
    names = CROWD_DEPTH_FIELDS if "crowd_depth" in doc else CROWD_FIELDS
    if "crowd_depth" in doc and any(name in doc for name in CROWD_FIELDS[3:]):
        raise LevelFormatError("has both crowd_depth and the changes (crowd_span_count ...): a level has one crowd group.",
                               subject=source_name, hint=REDUMP)
    crowd = [name for name in names if name in doc]
    if crowd:  # the crowd slices: all of a group or none
        if len(crowd) < len(names):
            raise LevelFormatError(f"has {', '.join(crowd)} but not all of {', '.join(names)}.",
                                   subject=source_name, hint=REDUMP)
        fields.update(crowd_arrays({name: doc[name] for name in names}, source_name, REDUMP))
    check_level_fields(fields, subject=source_name, hint=REDUMP)
    return level_from_fields(fields)


def _required(doc: dict, key: str, source_name: str):
    if key not in doc:
        raise LevelFormatError(f"has no '{key}'.", subject=source_name, hint=REDUMP)
    return doc[key]
