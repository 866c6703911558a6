"""bench/quake_bsp.py, the .bsp reader bench/vs_ericw.py asks ericw-tools' PVS through: on a map
qbsp and vis compiled here (BSP29, and BSP2 with qbsp -bsp2) the points land in the right leaves
and the rows answer as ericw's vis means them -- a leaf sees itself, rooms joined by a door see
each other, two rooms that no straight line joins do not, and the average row holds what vis
printed as 'average leafs visible'.

Needs ericw-tools: $ERICW_DIR names the folder of qbsp and vis (the benches' --ericw-dir); without
it, or when qbsp cannot run there (ericw-tools needs Debian's libtbb12), the tests are skipped
and say why."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def _bench(name):
    if str(REPO / "bench") not in sys.path:
        sys.path.insert(0, str(REPO / "bench"))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


quake_bsp = _bench("quake_bsp")
ericw_tools = _bench("ericw_tools")
worlds = _bench("worlds")

# A U of three rooms (units): A and C side by side with a solid block between them, both opening
# north through a thick wall into B, a hall along the top.  No straight line joins A and C.
ROOM_A, ROOM_B, ROOM_C = (128, 128, 64), (384, 448, 64), (640, 128, 64)


def u_map() -> str:
    w = worlds._Writer("three rooms in a U")
    for lo, hi in [((-16, -16, -16), (784, 592, 0)), ((-16, -16, 128), (784, 592, 144)),  # floor, ceiling
                   ((-16, -16, 0), (0, 592, 128)), ((768, -16, 0), (784, 592, 128)),  # west, east
                   ((0, -16, 0), (768, 0, 128)), ((0, 576, 0), (768, 592, 128)),  # south, north
                   ((64, 256, 0), (704, 320, 128)),  # the wall between the rooms and the hall (doors at its ends)
                   ((256, 0, 0), (512, 256, 128))]:  # the block between A and C
        w.box(lo, hi)
    w.point("info_player_start", (64, 64, 24))
    for p in (ROOM_A, ROOM_B, ROOM_C):
        w.point("light", p, light="300")
    return w.text()


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """{format: (Bsp, vis's output)} for the U map compiled by qbsp (BSP29 and -bsp2) and vis."""
    folder = os.environ.get("ERICW_DIR", "")
    if not folder or not (Path(folder) / "qbsp").is_file():
        pytest.skip("ericw-tools not found: set $ERICW_DIR to the folder holding its qbsp and vis")
    out = {}
    with ericw_tools.tool_dir(folder, tools=("qbsp", "vis")) as bin_dir:
        for fmt, flags in (("BSP29", []), ("BSP2", ["-bsp2"])):
            tmp = tmp_path_factory.mktemp(fmt)
            (tmp / "u.map").write_text(u_map(), encoding="ascii")
            q = ericw_tools.run_tool(bin_dir, "qbsp", flags, "u.map", tmp, log=tmp / "qbsp.out")
            if q["rc"] != 0:
                first = (tmp / "qbsp.out").read_text(errors="replace").strip().splitlines()[:1]
                pytest.skip(f"ericw qbsp cannot run here (exit {q['rc']}: {first}); it needs libtbb12")
            assert not (tmp / "u.pts").exists(), "the U map leaked"
            v = ericw_tools.run_tool(bin_dir, "vis", [], "u.bsp", tmp, log=tmp / "vis.out")
            assert v["rc"] == 0, (tmp / "vis.out").read_text()
            out[fmt] = (quake_bsp.read_bsp(tmp / "u.bsp"), (tmp / "vis.out").read_text())
    return out


@pytest.mark.parametrize("fmt", ["BSP29", "BSP2"])
def test_rooms_joined_by_doors_see_each_other_and_rooms_no_line_joins_do_not(compiled, fmt):
    bsp, _ = compiled[fmt]
    assert bsp.format == fmt and bsp.visleafs > 0
    leaf = bsp.point_leaves([ROOM_A, ROOM_B, ROOM_C, (32, 224, 100), (-400, 300, 64)])
    a, b, c, a2, outside = leaf
    assert bsp.open_leaves()[[a, b, c, a2]].all() and not bsp.open_leaves()[outside]
    see = lambda x, y: bool(bsp.can_see([x], [y])[0])  # noqa: E731
    assert see(a, b) and see(b, a) and see(b, c) and see(c, b) and see(a, a2)
    assert not see(a, c) and not see(c, a)
    opened = np.flatnonzero(bsp.open_leaves())
    assert bsp.can_see(opened, opened).all()  # every leaf's row holds the leaf itself


@pytest.mark.parametrize("fmt", ["BSP29", "BSP2"])
def test_the_rows_hold_what_vis_printed(compiled, fmt):
    bsp, text = compiled[fmt]
    printed = re.search(r"^average leafs visible: (\d+)", text, re.M)
    assert printed and int(bsp.avg_leafs_visible()) == int(printed.group(1))
    leafs = re.search(r"^\s*(\d+) leafs$", text, re.M)
    assert leafs and int(leafs.group(1)) == bsp.visleafs


def test_both_formats_put_points_in_the_same_places(compiled):
    rng = np.random.default_rng(0)
    pts = rng.uniform((-32, -32, -32), (800, 608, 160), size=(2000, 3))
    (b29, _), (b2, _) = compiled["BSP29"], compiled["BSP2"]
    l29, l2 = b29.point_leaves(pts), b2.point_leaves(pts)
    assert np.array_equal(b29.open_leaves()[l29], b2.open_leaves()[l2])
    i, j = rng.integers(0, len(pts), (2, 5000))
    ok = b29.open_leaves()[l29[i]] & b29.open_leaves()[l29[j]]
    assert ok.sum() > 500
    assert np.array_equal(b29.can_see(l29[i[ok]], l29[j[ok]]), b2.can_see(l2[i[ok]], l2[j[ok]]))


def test_a_file_that_is_no_bsp_is_refused():
    with pytest.raises(quake_bsp.BspError, match="only BSP29 and BSP2"):
        quake_bsp.Bsp(b"IBSP" + bytes(200))
    with pytest.raises(quake_bsp.BspError, match="too short"):
        quake_bsp.Bsp(b"BSP2")
