"""Exporters: a CompiledLevel to files engines and people read.  Never imports bpy; depends only
on core/, NumPy and the standard library.

native     the .bbk binary file (docs/FORMAT.md): write_level, read_level, level_to_bytes, ...
json_dump  a sorted, indented JSON dump for debugging: level_to_json, write_level_json, ...
"""

from .json_dump import level_from_json, level_to_json, write_level_json
from .native import level_from_bytes, level_to_bytes, read_level, write_level

__all__ = [
    "level_from_bytes",
    "level_from_json",
    "level_to_bytes",
    "level_to_json",
    "read_level",
    "write_level",
    "write_level_json",
]
