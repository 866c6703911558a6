"""A seeded mutator for issue 20 ("hostile input"): level files that are not trees, huge
coordinates, bad options, degenerate brushes, queries for hulls a level lacks; issue 29 adds
'junk' (a .map line of 100 B to 1 MB with junk after its texture parameters, and other long
lines: the reader must stay linear) and 'settings' (the settings objects' fields set to hostile
values through the Python API: a value the range table refuses must end in the typed error naming
the setting).

Each case is made from (kind, seed) alone, so any case can be replayed.  run_case() feeds it
through the public API (and, for levels that pass the reader, through `info` and the queries)
and classifies the outcome:

  'result' -- the input was accepted and every step gave an answer
  'typed'  -- a BrushbakeError (the project's typed error) stopped it
  'crash'  -- anything else: a bug (the message and the case are kept)

Only the code under test is measured: each case wraps the reader, the compile or the queries in
`under_test()`, not the forging of its input (building a 15 MB JSON chain with json.dumps is the
attacker's work, not ours).  run_case_measured() returns, beside the outcome, that code's process
CPU seconds, wall seconds and, with track_memory(True) on Linux, its peak resident memory (the
kernel's VmHWM, reset before the code under test through /proc/self/clear_refs).

tests/test_hostile.py runs a fast seeded subset of every kind; bench/fuzz_hostile.py runs the
long campaign (>= 100,000 cases) and prints the counts, the slowest case and the peak memory.

The .bbk forgeries are written with valid checksums (exporters.native's own packer, bypassing
its checks), so that they reach the structural checks, not the CRC test.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import time
from functools import lru_cache

import numpy as np

from brushbake.core.errors import BrushbakeError, InvalidSettingError
from brushbake.exporters import native

#: the case kinds, with the share of the long run each gets (bakes are slow: few of them)
KINDS = {
    "tree": 0.55,       # class 1: .bbk / .json dumps whose node graph is forged
    "hull": 0.08,       # class 2: queries for hulls the level lacks, hull tables that disagree
    "coords": 0.15,     # class 3: huge .map / .json numbers and far-moved brushes (load only)
    "options": 0.20,    # class 4: bake settings from the command line and .json scenes
    "degenerate": 0.02,  # class 5: tiny brushes with repeated planes, baked with box hulls
    "crowd": 0.05,      # issue 13: .bbk / .json dumps whose crowd slices (CSGD ... CSCV) are forged
    "junk": 0.10,       # issue 29: a .map line of 100 B to 1 MB with junk after its texture (and the like)
    "settings": 0.10,   # issue 29: Settings, SplitterSettings, BevelSettings, SliceSettings and the light
                        # settings with hostile values through the Python API
}

TREES = ("", "onion_", "bevel_")

# --------------------------------------------------------------------------------------------
# Measuring the code under test

_MEASURE = {"cpu_s": 0.0, "wall_s": 0.0, "peak_rss_kib": 0, "bytes": 0}  # bytes: the input's size, where it matters
_MEMORY = {"on": False}
_CLEAR_REFS = "/proc/self/clear_refs"


def track_memory(on: bool) -> bool:
    """Measure each case's peak RSS (Linux: VmHWM reset per case); True when the kernel allows it."""
    if on:
        try:
            with open(_CLEAR_REFS, "w") as f:
                f.write("5")
        except OSError:
            on = False
    _MEMORY["on"] = on
    return on


def _peak_rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


@contextlib.contextmanager
def under_test():
    """Measure the enclosed code (the code under test of a case) into _MEASURE, even when it raises."""
    if _MEMORY["on"]:
        with open(_CLEAR_REFS, "w") as f:
            f.write("5")  # the peak resident set is now the current one
    c0, w0 = time.process_time(), time.perf_counter()
    try:
        yield
    finally:
        _MEASURE["cpu_s"] += time.process_time() - c0
        _MEASURE["wall_s"] += time.perf_counter() - w0
        if _MEMORY["on"]:
            _MEASURE["peak_rss_kib"] = max(_MEASURE["peak_rss_kib"], _peak_rss_kib())


# --------------------------------------------------------------------------------------------
# Base inputs (built once)

BASE_MAP = """{
"classname" "worldspawn"
%s
}
{
"classname" "info_player_start"
"origin" "32 32 24"
}
"""


def _box(lo, hi, tex="wall") -> str:
    (x0, y0, z0), (x1, y1, z1) = lo, hi
    planes = [((x0, y0, z0), (x0, y0 + 1, z0), (x0, y0, z0 + 1)), ((x0, y0, z0), (x0, y0, z0 + 1), (x0 + 1, y0, z0)),
              ((x0, y0, z0), (x0 + 1, y0, z0), (x0, y0 + 1, z0)), ((x1, y1, z1), (x1, y1, z1 + 1), (x1, y1 + 1, z1)),
              ((x1, y1, z1), (x1 + 1, y1, z1), (x1, y1, z1 + 1)), ((x1, y1, z1), (x1, y1 + 1, z1), (x1 + 1, y1, z1))]
    lines = [" ".join("( %s )" % " ".join(f"{v:.17g}" for v in p) for p in pl) + f" {tex} 0 0 0 1 1" for pl in planes]
    return "{\n" + "\n".join(lines) + "\n}"


#: a small room: floor, two walls, a pillar and a sloped block (a few brushes: fast to bake)
ROOM_BRUSHES = [((-64, -64, -16), (192, 192, 0)), ((-64, -64, 0), (-48, 192, 128)),
                ((-48, -64, 0), (192, -48, 128)), ((64, 64, 0), (96, 96, 96)), ((128, 0, 0), (160, 160, 32))]
BASE_MAP_TEXT = BASE_MAP % "\n".join(_box(lo, hi) for lo, hi in ROOM_BRUSHES)


@lru_cache(maxsize=1)
def base_level():
    """The small room baked with two box hulls and bevels: every tree present."""
    from brushbake.core.compile.pipeline import bake_scene
    from brushbake.core.formats.mapfile import load_map_text
    from brushbake.core.model.hulls import parse_hull

    scene = load_map_text(BASE_MAP_TEXT, "room.map", strict=True)
    scene.hulls = [parse_hull("stand"), parse_hull("crouch")]
    scene.settings.vis = "none"  # the forgeries here are of trees; the PVS section has its own fuzz
    return bake_scene(scene)


@lru_cache(maxsize=1)
def base_fields() -> dict:
    return native.fields_from_level(base_level(), "base", native.COMPILER_BUG)


def pack_unchecked(fields: dict) -> bytes:
    """.bbk bytes of `fields` with valid checksums and no semantic check (a forger's writer)."""
    return native._pack_sections(native._encode_sections(fields))


def json_unchecked(fields: dict) -> str:
    from brushbake.exporters.json_dump import FORMAT_NAME

    doc = {k: v if isinstance(v, list) else v.tolist() for k, v in fields.items()}
    doc["format"], doc["version"] = FORMAT_NAME, [native.VERSION_MAJOR, native.VERSION_MINOR]
    return json.dumps(doc)


# --------------------------------------------------------------------------------------------
# Class 1: forged trees


def _copy(fields: dict) -> dict:
    return {k: (v.copy() if isinstance(v, np.ndarray) else list(v)) for k, v in fields.items()}


def _set_tree(f: dict, prefix: str, node_plane, children, leaf_solid) -> None:
    f[prefix + "node_plane"] = np.asarray(node_plane, "<i4")
    f[prefix + "node_children"] = np.asarray(children, "<i4").reshape(-1, 2)
    f[prefix + "leaf_solid"] = np.asarray(leaf_solid, "<u4")
    if prefix == "":  # the point tree's other leaf arrays follow its leaf count
        n = len(f["leaf_solid"])
        f["leaf_cluster"] = np.arange(n, dtype="<i4")
        f["leaf_bounds"] = np.tile(np.asarray(f["world_bounds"], "<f8"), (n, 1, 1))
        f["leaf_face_first"] = np.zeros(n, "<i4")
        f["leaf_face_count"] = np.zeros(n, "<i4")


def forge_tree(rng: np.random.Generator) -> tuple[str, dict]:
    """One structural forgery of the base level's fields; returns (what, fields)."""
    f = _copy(base_fields())
    prefix = TREES[int(rng.integers(0, 3))]
    ch = f[prefix + "node_children"]
    n_nodes, n_leaves = len(ch), len(f[prefix + "leaf_solid"])
    planes = len(f["plane_dists"])
    what = str(rng.choice(["shared_child", "doubling", "cycle", "leaf_as_node", "wrong_count", "nan_plane", "chain",
                           "random_index", "swap_leaves", "orphan", "hull_table", "solid_bits"]))
    if what == "shared_child" and n_nodes > 2:  # one node the child of two nodes
        i = int(rng.integers(0, n_nodes - 1))
        ch[i, int(rng.integers(0, 2))] = int(rng.integers(i + 1, n_nodes))
    elif what == "doubling":  # node k's two children both node k + 1: 2^depth paths
        depth = int(rng.integers(2, 64))
        children = [[k + 1, k + 1] for k in range(depth - 1)] + [[-1, -1]]
        _set_tree(f, prefix, rng.integers(0, planes, depth), children, [0])
    elif what == "cycle" and n_nodes:
        i = int(rng.integers(0, n_nodes))
        ch[i, int(rng.integers(0, 2))] = int(rng.integers(0, i + 1))
    elif what == "leaf_as_node" and n_nodes:
        i = int(rng.integers(0, n_nodes))
        ch[i, int(rng.integers(0, 2))] = int(rng.choice([n_nodes, n_nodes + int(rng.integers(0, n_leaves + 1)),
                                                         -1 - n_leaves, -1 - n_leaves - int(rng.integers(0, 99))]))
    elif what == "wrong_count":
        key = prefix + str(rng.choice(["node_plane", "node_children", "leaf_solid"]))
        array = f[key]
        f[key] = array[:-1] if rng.random() < 0.5 and len(array) else np.concatenate([array, array[:1]])
    elif what == "nan_plane":
        k = int(rng.integers(0, planes))
        bad = float(rng.choice([np.nan, np.inf, -np.inf, 2.0, 0.0, 1e308]))
        if rng.random() < 0.5:
            f["plane_normals"][k, int(rng.integers(0, 3))] = bad
        else:
            f["plane_dists"][k] = bad
    elif what == "chain":  # a valid chain: deep trees around the depth limit (512)
        depth = int(rng.choice([100, 400, native.MAX_TREE_DEPTH - 1, native.MAX_TREE_DEPTH,
                                native.MAX_TREE_DEPTH + 1, 5000, 200_000]))
        children = np.stack([np.arange(1, depth + 1), -1 - np.arange(depth)], axis=1)
        children[-1, 0] = -1 - depth
        same_plane = rng.random() < 0.5  # one plane all the way down: every node splits the same way
        node_plane = np.zeros(depth, int) if same_plane else rng.integers(0, planes, depth)
        solid = rng.integers(0, 2, depth + 1) * (1 if prefix == "bevel_" else 0b111)
        _set_tree(f, prefix, node_plane, children, solid)
    elif what == "random_index":
        key = str(rng.choice([s.field for s in native.ARRAY_SECTIONS + native.OPTIONAL_SECTIONS
                              if s.dtype in ("<i4", "<u4") and len(f[s.field])]))
        flat = f[key].reshape(-1)
        value = int(rng.choice([-2**31, -1, 0, 1, n_nodes, n_leaves, 2**31 - 1]))
        flat[int(rng.integers(0, len(flat)))] = np.array(value, np.int64).astype(flat.dtype)  # wraps for u4
    elif what == "swap_leaves" and n_nodes:  # a permutation of the leaves: still a tree (accepted)
        leaves = ch < 0
        ch[leaves] = rng.permutation(ch[leaves])
    elif what == "orphan":  # an extra node or leaf nobody points at
        if rng.random() < 0.5:
            f[prefix + "leaf_solid"] = np.concatenate([f[prefix + "leaf_solid"], [0]]).astype("<u4")
            if prefix == "":
                _set_tree(f, "", f["node_plane"], f["node_children"], f["leaf_solid"])
        else:
            f[prefix + "node_plane"] = np.concatenate([f[prefix + "node_plane"], [0]]).astype("<i4")
            f[prefix + "node_children"] = np.concatenate([ch, [[-1, -1]]]).astype("<i4")
    elif what == "hull_table":  # hull table and onion tree disagree
        if rng.random() < 0.5:
            _set_tree(f, "onion_", [], np.zeros((0, 2)), [])
        else:
            f["hull_names"] = ["point"]
            f["hull_boxes"] = f["hull_boxes"][:1]
            f["onion_leaf_solid"] &= 1
    elif what == "solid_bits":
        key = prefix + "leaf_solid"
        f[key][int(rng.integers(0, len(f[key])))] = np.uint32(1 << int(rng.integers(0, 32)))
    return what, f


def run_level_queries(level, rng: np.random.Generator) -> None:
    """What `info` and `query` do with a level that passed the reader."""
    from brushbake.cli import level_table
    from brushbake.core.runtime.query import point_solid, segment_hits
    from brushbake.core.runtime.shift import parse_shape, shift_hits

    level_table(level)
    lo, hi = np.asarray(level.world_bounds)
    span = np.maximum(hi - lo, 1.0)
    pts = lo - 0.1 * span + rng.random((16, 3)) * 1.2 * span
    segs = lo - 0.1 * span + rng.random((8, 2, 3)) * 1.2 * span
    for hull in range(len(level.hull_names)):
        point_solid(level, pts, hull=hull)
        segment_hits(level, segs[:, 0], segs[:, 1], hull=hull)
    shift_hits(level.bevel_tree(), parse_shape("sphere:0.5"), segs[:, 0], segs[:, 1])


def case_tree(rng: np.random.Generator) -> str:
    from brushbake.exporters.json_dump import level_from_json

    what, fields = forge_tree(rng)
    if rng.random() < 0.15:
        text = json_unchecked(fields)
        with under_test():
            level = level_from_json(text, "forged.json")
            run_level_queries(level, rng)
    else:
        data = pack_unchecked(fields)
        with under_test():
            level = native.level_from_bytes(data, "forged.bbk")
            run_level_queries(level, rng)
    return what


# --------------------------------------------------------------------------------------------
# Class 2: hulls


def case_hull(rng: np.random.Generator) -> str:
    from brushbake.core.runtime.query import point_solid

    data = native.level_to_bytes(base_level())
    with under_test():
        level = native.level_from_bytes(data)
    hull = int(rng.choice([-1, 3, 4, 31, 32, 2**40, 1, 2]))
    if rng.random() < 0.3:  # a level whose trees lost the onion tree in memory (no reader between)
        level.onion_node_plane = level.onion_node_plane[:0]
        level.onion_node_children = level.onion_node_children[:0]
        level.onion_leaf_solid = level.onion_leaf_solid[:0]
    with under_test():
        point_solid(level, np.zeros((2, 3)), hull=hull)
    return "hull"


# --------------------------------------------------------------------------------------------
# Class 3: coordinates

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
HUGE = ["99999999999999999999", "1e308", "1e999", "-1e999", "3200001", "-3200000.5", "3.2e6", "123456789012",
        "0.000000000000000000001", "1" + "0" * 400]


def case_coords(rng: np.random.Generator) -> str:
    """A .map (or .json scene) with huge numbers or far-moved brushes: loaded, never baked."""
    from brushbake.core.formats.mapfile import load_map_text
    from brushbake.core.formats.scene_json import scene_from_dict

    if rng.random() < 0.25:
        lo = rng.choice([0.0, 1e5, 1e5 + 1e-9, 3e5, 1e20, -1e300])
        doc = {"format": "brushbake-scene", "version": 1, "name": "far",
               "brushes": [{"box": [[float(lo)] * 3, [float(lo) + 1.0] * 3], "name": "b"}],
               "markers": [{"name": "m", "kind": "player_start", "position": [float(rng.choice([0, 1e6])), 0, 0]}]}
        with under_test():
            scene_from_dict(doc, "far.json")
        return "json"
    text = BASE_MAP_TEXT
    if rng.random() < 0.5:  # move one brush (or all) by a large offset
        shift = float(rng.choice([3.2e6, -3.2e6, 3.1e6, 1e7, 1e15]))
        axis = int(rng.integers(0, 3))

        def move(m):
            values = m.group(1).split()
            values[axis] = repr(float(values[axis]) + shift)
            return "( " + " ".join(values) + " )"

        text = re.sub(r"\(\s*([^()]*?)\s*\)", move, text)
        what = "moved"
    else:
        spans = [m.span() for m in _NUMBER.finditer(text)]
        for _ in range(int(rng.integers(1, 4))):
            a, b = spans[int(rng.integers(0, len(spans)))]
            text = text[:a] + str(rng.choice(HUGE)).ljust(b - a) + text[b:]
            spans = [m.span() for m in _NUMBER.finditer(text)]
        what = "huge"
    scale = float(rng.choice([1 / 32, 1 / 32, 1.0, 1000.0]))
    strict = bool(rng.random() < 0.3)
    with under_test():
        load_map_text(text, "far.map", scale=scale, strict=strict)
    return what


# --------------------------------------------------------------------------------------------
# Class 4: options

BAD_VALUES = ["nan", "inf", "-inf", "-1", "0", "-0.0", "1e309", "1e-320", "99999999999999999999", "abc", "",
              "1.5", "180.0000001", "181", "1e6", "1000001", "0x10", "1_000", " 3", "NaN", "+inf"]
OPTIONS = {"--scale": "map_scale", "--max-candidates": "max_candidates", "--bevel-angle": "bevel_angle"}


def case_options(rng: np.random.Generator) -> str:
    """A command-line option or a .json setting with a hostile value: parsed and checked only."""
    from brushbake.cli import build_parser
    from brushbake.core.formats.scene_json import scene_from_dict
    from brushbake.core.model.scene import SETTING_RANGES, check_settings

    value = str(rng.choice(BAD_VALUES)) if rng.random() < 0.8 else repr(float(rng.normal() * 10 ** rng.integers(0, 8)))
    if rng.random() < 0.1:  # --hull NAME=MINX,...,MAXZ with one hostile number
        from brushbake.core.model.hulls import parse_hull

        numbers = ["-0.5", "-0.5", "-1", "0.5", "0.5", "1"]
        numbers[int(rng.integers(0, 6))] = str(rng.choice(BAD_VALUES + ["-1e300", "1e300", "-1001", "1000"]))
        with under_test():
            parse_hull("h=" + ",".join(numbers))
        return "hull"
    if rng.random() < 0.5:
        option = str(rng.choice(list(OPTIONS)))
        from brushbake.core.model.scene import Settings

        with under_test():
            try:
                with contextlib.redirect_stderr(io.StringIO()):
                    args = build_parser().parse_args(["bake", "x.map", f"{option}={value}"])
            except SystemExit as exit_:  # argparse refused it (one line, exit 2): counted as a typed refusal
                if exit_.code != 2:
                    raise
                raise InvalidSettingError(f"{option} refused when parsed") from None
            check_settings(Settings(**{OPTIONS[option]: getattr(args, option[2:].replace("-", "_"))}))
        return "cli"
    name = str(rng.choice(list(SETTING_RANGES) + ["splitter", "bevels"]))
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = value
    if isinstance(parsed, float) and not math.isfinite(parsed):
        parsed = value  # JSON has no NaN: the reader sees a string (or its own NaN literal, below)
    text = '{"format": "brushbake-scene", "version": 1, "name": "s", "settings": {"%s": %s}}' % (
        name, value if value in ("NaN", "Infinity", "-Infinity") else json.dumps(parsed))
    from brushbake.core.formats.scene_json import parse_scene_text

    with under_test():
        scene_from_dict(parse_scene_text(text, "s.json"), "s.json")
    return "json"


# --------------------------------------------------------------------------------------------
# Class 5: degenerate brushes


def case_degenerate(rng: np.random.Generator) -> str:
    """The room with one brush scaled by 1e-6 to 1e-2 on some axes, one of its plane lines repeated
    (sometimes nudged), baked with two box hulls and bevels."""
    from brushbake.core.compile.pipeline import bake_scene
    from brushbake.core.formats.mapfile import load_map_text
    from brushbake.core.model.hulls import parse_hull

    k = float(10.0 ** rng.uniform(-6, -2))
    axes = rng.random(3) < 0.5
    if not axes.any() or rng.random() < 0.3:
        axes[:] = True
    pick = int(rng.integers(0, len(ROOM_BRUSHES)))
    brushes = []
    for i, (lo, hi) in enumerate(ROOM_BRUSHES):
        lo, hi = np.array(lo, float), np.array(hi, float)
        if i == pick:
            c = (lo + hi) / 2
            lo, hi = c + (lo - c) * np.where(axes, k, 1), c + (hi - c) * np.where(axes, k, 1)
        block = _box(lo.tolist(), hi.tolist(), tex=str(rng.choice(["wall", "clip", "trigger", "*water"]))
                     if rng.random() < 0.2 else "wall")
        if i == pick:
            lines = block.split("\n")
            j = int(rng.integers(1, 7))
            extra = lines[j]
            if rng.random() < 0.5:  # nudged by a hair: a near-duplicate the exact test does not drop
                nudge = float(rng.choice([1e-9, 1e-6, 1e-4])) * k
                extra = _NUMBER.sub(lambda m: repr(float(m.group()) + nudge), extra, count=1)
            lines.insert(j, extra)
            block = "\n".join(lines)
        brushes.append(block)
    text, strict = BASE_MAP % "\n".join(brushes), bool(rng.random() < 0.5)
    with under_test():
        scene = load_map_text(text, "tiny.map", strict=strict)
        scene.hulls = [parse_hull("stand"), parse_hull("crouch")]
        scene.settings.vis = "none"  # a shrunken wall leaves a hole: that is the leak check's (tests/test_cli_leaks.py)
        bake_scene(scene)
    return f"k=1e{int(math.floor(math.log10(k)))}"


# --------------------------------------------------------------------------------------------
# Issue 13: forged crowd slices


@lru_cache(maxsize=1)
def crowd_fields() -> dict:
    """The small room and a slab across it (two levels: two kept slices) baked with crowd slices
    (no box hulls: the forgeries are of the slices)."""
    from brushbake.core.compile.pipeline import bake_scene
    from brushbake.core.formats.mapfile import load_map_text

    text = BASE_MAP % "\n".join(_box(lo, hi) for lo, hi in ROOM_BRUSHES + [((0, -48, 80), (128, 64, 88))])
    scene = load_map_text(text, "room.map", strict=True)
    scene.settings.vis, scene.settings.bevels, scene.settings.slices = "none", False, True
    return native.fields_from_level(bake_scene(scene), "base", native.COMPILER_BUG)


CROWD_KEYS = ("crowd_grid", "crowd_size", "crowd_slice_height", "crowd_span_count", "crowd_span", "crowd_change_value")


def forge_crowd(rng: np.random.Generator) -> tuple[str, dict]:
    """One forgery of the crowd sections: a value, a shape, a missing section, or a valid change."""
    f = _copy(crowd_fields())
    key = str(rng.choice(CROWD_KEYS))
    what = str(rng.choice(["value", "value", "drop", "truncate", "grow", "valid_shift"]))
    a = f[key]
    if what == "value":
        flat = a.reshape(-1)
        specials = [0, 1, -1, 2, 7, 65535, 2**31, 2**32 - 1, 1e9, -1e9] if a.dtype.kind in "iu" else \
            [np.nan, np.inf, -np.inf, 0.0, -1.0, 1e-300, 0.003, 1e6, 1.0, 0.5]
        value = rng.choice(specials)
        info = np.iinfo(a.dtype) if a.dtype.kind in "iu" else None
        if info is not None:
            value = int(np.clip(int(value), info.min, info.max))
        flat[int(rng.integers(0, len(flat)))] = value
    elif what == "drop":
        f.pop(key)
    elif what == "truncate" and a.ndim and len(a) > 1:
        f[key] = a[:-1]
    elif what == "grow" and key not in ("crowd_grid", "crowd_size"):
        f[key] = np.concatenate([a, a[-1:]])
    elif what == "valid_shift":  # the grid moved: still a valid level (accepted)
        f["crowd_grid"][:2] += float(rng.uniform(-10, 10))
    return f"{what} {key}", f


def case_crowd(rng: np.random.Generator) -> str:
    from brushbake.core.runtime.crowd import Crowd, check_moves
    from brushbake.exporters.json_dump import level_from_json

    from brushbake.cli import level_table

    what, fields = forge_crowd(rng)
    as_json = rng.random() < 0.2
    data = json_unchecked(fields) if as_json else pack_unchecked(fields)
    with under_test():
        level = level_from_json(data, "forged.json") if as_json else native.level_from_bytes(data, "forged.bbk")
        level_table(level)
        lo, hi = np.asarray(level.world_bounds)
        moves = lo + rng.random((64, 2, 3)) * (hi - lo)
        check_moves(level.crowd, moves)
        crowd = Crowd(level.crowd, 16, seed=int(rng.integers(0, 1000)))
        crowd.tick()
    return what


# --------------------------------------------------------------------------------------------
# Issue 29: long hostile lines in a .map (junk after the texture parameters, and the like)

VALVE_PLANE = "( -64 -64 -16 ) ( -64 -63 -16 ) ( -64 -64 -15 ) wall [ 0 1 0 0 ] [ 0 0 -1 0 ] 0 1 1"
STANDARD_PLANE = "( -64 -64 -16 ) ( -64 -63 -16 ) ( -64 -64 -15 ) wall 0 0 0 1 1"
#: the line sizes of the junk class (bytes), 100 B to 1 MB
JUNK_SIZES = (100, 1_000, 10_000, 100_000, 1_000_000)
#: what kind of long line: (text before, the repeated unit, text after, where it goes)
JUNK_LINES = {
    "numbers": (VALVE_PLANE, " 1234", " (", "plane"),  # the line: exponential before
    "numbers_standard": (STANDARD_PLANE, " 1234", " (", "plane"),
    "digits": (STANDARD_PLANE + " ", "1", "x", "plane"),
    "dots": (STANDARD_PLANE, " 1.", "e", "plane"),
    "exponent": (STANDARD_PLANE + " 1e", "1", "e", "plane"),
    "brackets": (VALVE_PLANE, " [ 1 0 0 0 ]", "", "plane"),
    "parens": (VALVE_PLANE, " ( 1 2 3 )", "", "plane"),
    "spaces": (VALVE_PLANE, " ", "(", "plane"),
    "open_points": ("(", " ( 1", "", "plane"),
    "quote": ('( -64 -64 -16 ) ( -64 -63 -16 ) ( -64 -64 -15 ) "', "t", "", "plane"),
    "random": (VALVE_PLANE, None, "", "plane"),  # random characters of the .map alphabet
    "braces": ("{", " {", " x", "plane"),
    "key_quotes": ('"message" "', '" ', "x", "key"),
    "key_spaces": ('"message" "a"', " ", "x", "key"),
    # accepted: a result, not an error
    "flags": (VALVE_PLANE, " 0", "", "plane"),  # Quake 2 / 3 extra numbers
    "comment": (VALVE_PLANE + " //", " 1234 (", "", "plane"),
    "texture": ("( -64 -64 -16 ) ( -64 -63 -16 ) ( -64 -64 -15 ) ", "t", " 0 0 0 1 1", "plane"),
    "key_value": ('"message" "', "a ", '"', "key"),
    "coordinate": ("( -64 -64 -1", "6", " ) ( -64 -63 -16 ) ( -64 -64 -15 ) wall 0 0 0 1 1", "plane"),  # beyond the world
    "many_planes": (STANDARD_PLANE, "\n" + STANDARD_PLANE, "", "plane"),  # one brush of many plane lines
}
_JUNK_ALPHABET = np.array(list(" \t0123456789.eE+-()[]\"/{}wall_*"))


def junk_line(what: str, size: int, rng: np.random.Generator | None = None) -> str:
    """A line of `size` bytes (about) of kind `what` (JUNK_LINES; 'many_planes': lines)."""
    before, unit, after, _ = JUNK_LINES[what]
    room = max(1, size - len(before) - len(after))
    if unit is None:
        rng = rng if rng is not None else np.random.default_rng(size)
        middle = "".join(rng.choice(_JUNK_ALPHABET, room))
    else:
        middle = unit * max(1, room // len(unit))
    return before + middle + after


def junk_map(what: str, size: int, rng: np.random.Generator | None = None) -> bytes:
    """The small room's .map with one long line: a plane line of its first brush replaced, or a
    key line added to worldspawn."""
    line = junk_line(what, size, rng)
    if JUNK_LINES[what][3] == "key":
        text = BASE_MAP_TEXT.replace('"classname" "worldspawn"\n', '"classname" "worldspawn"\n' + line + "\n", 1)
    else:
        first = BASE_MAP_TEXT.index("\n(", BASE_MAP_TEXT.index("{\n(")) + 1
        end = BASE_MAP_TEXT.index("\n", first)
        text = BASE_MAP_TEXT[:first] + line + BASE_MAP_TEXT[end:]
    return text.encode("utf-8")


def read_junk(data: bytes, source: str = "junk.map"):
    """What a reader does with the file: decode, parse, build (the code under test)."""
    from brushbake.core.formats.mapfile import decode_map_bytes, load_map_text

    return load_map_text(decode_map_bytes(data, source), source)


def parse_junk(data: bytes, source: str = "junk.map"):
    """The syntax stage alone (decode and parse_map_text): what is linear in the line."""
    from brushbake.core.formats.mapfile import decode_map_bytes, parse_map_text

    return parse_map_text(decode_map_bytes(data, source), source)


def case_junk(rng: np.random.Generator) -> str:
    """One long line (100 B to 1 MB, log-uniform) of a JUNK_LINES kind in the room's .map."""
    what = str(rng.choice(list(JUNK_LINES)))
    size = int(10 ** rng.uniform(2, 6))
    data = junk_map(what, size, rng)
    _MEASURE["bytes"] = len(data)
    with under_test():
        read_junk(data)
    return f"{what} 1e{int(math.log10(size))}"


# --------------------------------------------------------------------------------------------
# Issue 29: settings objects given through the Python API (not the command line, not .json)

#: a floor and a block (2 m): every stage on it is quick, even with extreme valid settings
SMALL_MAP_TEXT = BASE_MAP % "\n".join(_box(lo, hi) for lo, hi in [((-32, -32, -16), (32, 32, 0)), ((0, 0, 0), (16, 16, 16))])
SMALL_MAP_TEXT += '{\n"classname" "light"\n"origin" "-16 -16 32"\n"light" "200"\n}\n'
#: valid but slow settings are cut short: cancel() turns True after this much CPU (then 'result')
SETTINGS_DEADLINE_S = 0.5
#: the settings objects and where their fields meet SETTING_RANGES (None: no range in the table)
SETTINGS_CLASSES = ("Settings", "SplitterSettings", "BevelSettings", "SliceSettings")
_RANGE_NAME = {"BevelSettings": {"angle": "bevel_angle", "vertex_angle": None},
               "SliceSettings": {"width": "slice_width", "height": "slice_height", "step": "slice_step",
                                 "cell": "slice_cell", "resolution": "slice_resolution"}}


def _settings_specials() -> list:
    from decimal import Decimal
    from fractions import Fraction

    return [math.nan, math.inf, -math.inf, -1, -1.0, -1e-300, 0, -0.0, 1e308, 10**400, -10**400, 2**63,
            np.float32("nan"), np.float64("inf"), np.float64(-1e300), np.int64(-1), np.int64(2**62), np.uint64(2**64 - 1),
            np.bool_(True), "8", "", "nan", None, [], [1.0], {}, 1j, True, False, b"1", Decimal("sNaN"),
            Decimal("1e999999"), Fraction(1, 3), "onion", "fast"]


def hostile_setting(rng: np.random.Generator, range_name: str | None):
    """A value for one setting: a special (NaN, inf, negative, huge, wrong type), a number near or
    beyond its range's ends, or a random number of any size."""
    from brushbake.core.model.scene import SETTING_RANGES

    r = SETTING_RANGES.get(range_name) if range_name else None
    roll = rng.random()
    if roll < 0.5 or r is None and roll < 0.75:
        specials = _settings_specials()
        return specials[int(rng.integers(0, len(specials)))]
    if roll < 0.8 and r is not None:
        end = float(rng.choice([r.low, r.high]))
        value = end + float(rng.choice([-1, 1])) * float(rng.choice([0.0, 1e-9, 0.5, 1.0])) * max(abs(end), 1.0)
        return int(round(value)) if r.integer and rng.random() < 0.8 else value
    value = float(rng.normal() * 10.0 ** rng.integers(-3, 10))
    return int(value) if rng.random() < 0.4 else value


def _setting_problem(cls: str, name: str, value) -> str | None | bool:
    """The table's verdict on the value: a reason (bad), None (good), False (no table entry)."""
    from brushbake.core.model.scene import BOOL_SETTINGS, SETTING_RANGES, setting_error

    table_name = _RANGE_NAME.get(cls, {}).get(name, name)
    if table_name is None:
        return False
    if table_name in SETTING_RANGES or table_name in BOOL_SETTINGS or table_name in ("splitter", "vis", "seal"):
        try:
            return setting_error(table_name, value)
        except Exception as err:  # noqa: BLE001 -- the table's own check crashing is a verdict too
            return f"{type(err).__name__}"
    if cls == "BevelSettings" and name in ("vertices", "axial", "flat_top"):
        return None if isinstance(value, bool) else "not true or false"
    return False


@lru_cache(maxsize=1)
def small_level_bytes() -> bytes:
    from brushbake.core.compile.pipeline import compile_scene
    from brushbake.core.formats.mapfile import load_map_text

    return native.level_to_bytes(compile_scene(load_map_text(SMALL_MAP_TEXT, "small.map", strict=True)))


def _deadline_cancel():
    t0 = time.process_time()
    return lambda: time.process_time() - t0 > SETTINGS_DEADLINE_S


class SettingAccepted(Exception):
    """A value the range table refuses went through the API without the typed error."""


class SettingMessageUnclear(Exception):
    """The typed error does not name the setting."""


def _run_setting(cls: str, name: str, value, via: str) -> None:
    """Make the settings object with `name` = `value` and pass it through the API `via`."""
    from dataclasses import replace

    from brushbake.core.compile.crowds.slices import SliceSettings, slice_world
    from brushbake.core.compile.light.lightmap import bake_light
    from brushbake.core.compile.pipeline import bake_scene, compile_scene, slices_stage
    from brushbake.core.compile.trees.bevel import add_bevels
    from brushbake.core.compile.trees.bevel_cell import BevelSettings
    from brushbake.core.compile.trees.bsp import SplitterSettings, TreeBuilder, world_box
    from brushbake.core.compile.trees.csg import FaceList, brush_plane_ids, union_faces
    from brushbake.core.formats.mapfile import load_map_text
    from brushbake.core.geometry import PlaneTable
    from brushbake.core.model.brushes import Contents

    cancel = _deadline_cancel()
    if via == "load_map_text":  # map_scale as the loader's scale
        load_map_text(SMALL_MAP_TEXT, "small.map", scale=value)
        return
    scene = load_map_text(SMALL_MAP_TEXT, "small.map", strict=True)
    scene.settings.vis, scene.settings.allow_leak = "none", True
    if cls == "Settings":
        setattr(scene.settings, name, value)
    if via == "compile_scene":
        compile_scene(scene, cancel=cancel)
    elif via == "bake_scene":
        bake_scene(scene, cancel=cancel)
    elif via == "bake_light":
        level = native.level_from_bytes(small_level_bytes())
        bake_light(level, scene, cancel=cancel, backend="numpy")
    elif via == "slices_stage":
        slices_stage(scene, native.level_from_bytes(small_level_bytes()), cancel=cancel)
    elif via == "TreeBuilder":
        brushes = scene.brushes_with(Contents.SOLID)
        planes, faces = PlaneTable(), FaceList()
        union_faces(brushes, brush_plane_ids(brushes, planes), planes, out=faces)
        builder = TreeBuilder(planes, faces, replace(SplitterSettings(), **{name: value}), cancel=cancel)
        n = len(faces)
        builder.build(np.arange(n), np.ones(n, bool), np.ones(n, bool), world_box(scene.bounds))
    elif via == "add_bevels":
        add_bevels(native.level_from_bytes(small_level_bytes()), BevelSettings(**{name: value}), cancel=cancel)
    elif via == "slice_world":
        b = np.array([br.bounds for br in scene.brushes])
        bounds = np.array([b[:, 0].min(axis=0), b[:, 1].max(axis=0)])
        slice_world(scene.brushes, bounds, SliceSettings(**{name: value}), cancel=cancel)
    else:
        raise AssertionError(via)


#: where each Settings field is first used through the API (besides bake_scene, which checks all)
_SETTINGS_VIA = {**{k: "compile_scene" for k in ("splitter", "split_weight", "min_relation", "relation_scale",
                                                 "max_candidates", "max_score_faces", "onion_map_trees")},
                 **{k: "slices_stage" for k in ("slice_width", "slice_height", "slice_step", "slice_cell",
                                                "slice_resolution")},
                 **{k: "bake_light" for k in ("luxel", "patch", "bounces", "light_threshold", "reflectance",
                                              "light_samples", "luxel_samples", "shoot_fraction")},
                 "map_scale": "load_map_text"}
_CLASS_VIA = {"SplitterSettings": "TreeBuilder", "BevelSettings": "add_bevels", "SliceSettings": "slice_world"}


def _fields_of(cls: str) -> list[str]:
    from dataclasses import fields

    from brushbake.core.compile.crowds.slices import SliceSettings
    from brushbake.core.compile.trees.bevel_cell import BevelSettings
    from brushbake.core.compile.trees.bsp import SplitterSettings
    from brushbake.core.model.scene import Settings

    return [f.name for f in fields({"Settings": Settings, "SplitterSettings": SplitterSettings,
                                    "BevelSettings": BevelSettings, "SliceSettings": SliceSettings}[cls])]


def _names_setting(message: str, cls: str, name: str) -> bool:
    table = _RANGE_NAME.get(cls, {}).get(name) or name
    text = message.lower()
    names = {name, table} | ({"scale"} if name == "map_scale" else set())  # the loader's argument
    return any(v in text for n in names for v in (n, n.replace("_", " "), n.replace("_", "-")))


def case_settings(rng: np.random.Generator) -> str:
    """One field of one settings object (Settings, SplitterSettings, BevelSettings, SliceSettings;
    the light settings are Settings fields) set to a hostile value and passed through the Python
    API that uses it.  A value the range table refuses must end in a typed error naming the
    setting; a value it accepts must give a result (long work is cancelled at
    SETTINGS_DEADLINE_S of CPU and counts as a result)."""
    from brushbake.core.errors import CancelledError

    cls = SETTINGS_CLASSES[int(rng.integers(0, len(SETTINGS_CLASSES)))]
    names = _fields_of(cls)
    name = names[int(rng.integers(0, len(names)))]
    range_name = _RANGE_NAME.get(cls, {}).get(name, name)
    value = hostile_setting(rng, range_name)
    if cls == "Settings":
        via = "bake_scene" if rng.random() < 0.25 or name not in _SETTINGS_VIA else _SETTINGS_VIA[name]
    else:
        via = _CLASS_VIA[cls]
    problem = _setting_problem(cls, name, value)
    what = f"{cls}.{name} via {via}"
    try:
        with under_test():
            _run_setting(cls, name, value, via)
    except CancelledError:
        if problem:
            raise SettingAccepted(f"{what} = {value!r} ran until cancelled; the table says it {problem}") from None
        return what + " (cut at the deadline)"
    except BrushbakeError as err:
        if problem and not _names_setting(str(err), cls, name):
            raise SettingMessageUnclear(f"{what} = {value!r}: {str(err)[:160]}") from None
        raise
    if problem:
        raise SettingAccepted(f"{what} = {value!r} gave a result; the table says it {problem}")
    return what


CASES = {"tree": case_tree, "hull": case_hull, "coords": case_coords, "options": case_options,
         "degenerate": case_degenerate, "crowd": case_crowd, "junk": case_junk,
         "settings": case_settings}


def run_case(kind: str, seed: int) -> tuple[str, str]:
    """(outcome, detail) of case (kind, seed): outcome 'result', 'typed' or 'crash'."""
    return run_case_measured(kind, seed)[:2]


def run_case_measured(kind: str, seed: int) -> tuple[str, str, dict]:
    """(outcome, detail, measure) of case (kind, seed): measure holds the code under test's
    'cpu_s' and 'wall_s' and, when track_memory is on, its 'peak_rss_kib' (0 otherwise)."""
    _MEASURE.update(cpu_s=0.0, wall_s=0.0, peak_rss_kib=0, bytes=0)
    outcome, detail = _run(kind, seed)
    return outcome, detail, dict(_MEASURE)


def _run(kind: str, seed: int) -> tuple[str, str]:
    rng = np.random.default_rng([hash_kind(kind), seed])
    try:
        detail = CASES[kind](rng)
        return "result", detail
    except BrushbakeError as err:
        return "typed", type(err).__name__
    except Exception as err:  # noqa: BLE001 -- classifying is the point
        return "crash", f"{type(err).__name__}: {str(err)[:200]}"


def hash_kind(kind: str) -> int:
    return sum((i + 1) * ord(c) for i, c in enumerate(kind))
