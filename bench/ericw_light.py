"""Quake light formulas against ericw-tools' light itself: one JSON line per falloff case.

A 1280 x 1280 x 512 unit room with a 16-unit shell and one light entity over its floor, compiled
by ericw qbsp and lit by ericw light (no bounce); the floor's lightmap bytes are read back from the
BSP29 file (faces, texinfo, surfedges, lighting) at their sample points ((smin + i) * 16 in
texture space) and compared with brushbake's formula there (core/model/light_units.py:
quake_light_value times quake_angle, the value the bake stores times 255): ericw writes half of
it as the byte (its default '_range' 0.5: an engine shows byte / 128 of the texture, so the byte
stands for value / 255 of white, as brushbake's page does).  Prints, per case, the luxels
compared, how many are lit, and the mean and largest (ericw byte - brushbake value * 255 / 2).

    python bench/ericw_light.py --ericw-dir DIR    # DIR ($ERICW_DIR): qbsp, light, libembree4.so.4.4.0

The anchors' libembree4.so.4 may be stored as a text file naming its target: the tools are copied
into a temporary folder with the link made there (bench/ericw_tools.py tool_dir).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ericw_tools import tool_dir  # noqa: E402
from quake_bsp import Bsp  # noqa: E402

from brushbake.core.model.light_units import quake_angle, quake_light_value  # noqa: E402

ORIGIN = np.array([24.0, -40.0, 96.0])
CASES = [  # (light entity keys, formula; "minlight": the worldspawn's 'light')
    ({"light": "300"}, {}),
    ({"light": "200", "wait": "2"}, {"light": 200, "wait": 2}),
    ({"light": "250", "_falloff": "400"}, {"light": 250, "falloff": 400}),
    ({"light": "150", "delay": "1", "wait": "0.5"}, {"delay": 1, "light": 150, "wait": 0.5}),
    ({"light": "150", "delay": "2"}, {"delay": 2, "light": 150}),
    ({"light": "90", "delay": "3"}, {"delay": 3, "light": 90}),
    ({"light": "400", "delay": "5", "wait": "1.5"}, {"delay": 5, "light": 400, "wait": 1.5}),
    ({"light": "300", "_anglescale": "1"}, {"anglescale": 1}),
    ({"light": "300", "_anglescale": "0"}, {"anglescale": 0}),
    ({"light": "300"}, {"minlight": 40}),
]


def box(lo, hi) -> str:
    (x0, y0, z0), (x1, y1, z1) = lo, hi
    faces = [((x0, 0, 0), (x0, 1, 0), (x0, 0, 1)), ((x1, 0, 0), (x1, 0, 1), (x1, 1, 0)),
             ((0, 0, z0), (0, 1, z0), (-1, 0, z0)), ((0, 0, z1), (-1, 0, z1), (0, 1, z1)),
             ((0, y0, 0), (-1, y0, 0), (0, y0, 1)), ((0, y1, 0), (0, y1, 1), (-1, y1, 0))]
    return "{\n" + "".join(" ".join(f"( {a} {b} {c} )" for a, b, c in f) + " floor 0 0 0 1 1\n" for f in faces) + "}\n"


def room_map(keys: dict, minlight: float = 0.0) -> str:
    r, t, h = 640, 16, 512
    walls = [((-r, -r, -t), (r, r, 0)), ((-r, -r, h - t), (r, r, h)), ((-r, -r, 0), (-r + t, r, h)),
             ((r - t, -r, 0), (r, r, h)), ((-r, -r, 0), (r, -r + t, h)), ((-r, r - t, 0), (r, r, h))]
    light = "".join(f'"{k}" "{v}"\n' for k, v in keys.items())
    world = f'"light" "{minlight:g}"\n' if minlight else ""
    return ('{\n"classname" "worldspawn"\n' + world + "".join(box(a, b) for a, b in walls) + "}\n"
            '{\n"classname" "info_player_start"\n"origin" "0 0 24"\n}\n'
            '{\n"classname" "light"\n"origin" "%d %d %d"\n%s}\n' % (*ORIGIN.astype(int), light))


def floor_samples(bsp: bytes):
    """(points (N, 3) in units, bytes (N,)) of every lightmap sample of the faces on the plane z = 0
    facing up."""
    lump = Bsp(bsp).lump
    planes = lump(1, np.dtype([("n", "<f4", 3), ("d", "<f4"), ("t", "<i4")]))
    verts = lump(3, "<f4").reshape(-1, 3).astype(np.float64)
    tex = lump(6, np.dtype([("v", "<f4", (2, 4)), ("m", "<i4"), ("f", "<i4")]))
    faces = lump(7, np.dtype([("p", "<i2"), ("side", "<i2"), ("fe", "<i4"), ("ne", "<i2"), ("ti", "<i2"),
                              ("st", "u1", 4), ("lo", "<i4")]))
    light = lump(8, "u1")
    edges = lump(12, "<u2").reshape(-1, 2)
    surf = lump(13, "<i4")
    points, values = [], []
    for f in faces:
        n = planes[f["p"]]["n"] * (-1 if f["side"] else 1)
        if n[2] < 0.9 or abs(planes[f["p"]]["d"]) > 1e-6 or f["lo"] < 0:
            continue
        e = surf[f["fe"]:f["fe"] + f["ne"]]
        vs = verts[np.where(e >= 0, edges[np.abs(e), 0], edges[np.abs(e), 1])]
        tv = tex[f["ti"]]["v"].astype(np.float64)
        st = vs @ tv[:, :3].T + tv[:, 3]
        lo, hi = np.floor(st.min(axis=0) / 16), np.ceil(st.max(axis=0) / 16)
        w, h = (hi - lo + 1).astype(int)
        j, i = np.mgrid[0:h, 0:w]
        s_t = np.stack([(lo[0] + i.ravel()) * 16, (lo[1] + j.ravel()) * 16], axis=1) - tv[:, 3]
        xy = np.linalg.solve(tv[:, :2], s_t.T).T
        points.append(np.concatenate([xy, np.zeros((len(xy), 1))], axis=1))
        values.append(light[f["lo"]:f["lo"] + w * h].astype(np.float64))
    return np.concatenate(points), np.concatenate(values)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ericw-dir", default=os.environ.get("ERICW_DIR", ""))
    args = p.parse_args()
    if not args.ericw_dir:
        p.error("--ericw-dir (or $ERICW_DIR): the folder holding ericw-tools' qbsp and light")
    with tool_dir(args.ericw_dir, tools=("qbsp", "light")) as tmp:
        env = {"LD_LIBRARY_PATH": str(tmp), "PATH": "/usr/bin:/bin"}
        for keys, formula in CASES:
            (tmp / "case.map").write_text(room_map(keys, formula.get("minlight", 0.0)))
            for tool, target in (("qbsp", "case.map"), ("light", "case.bsp")):
                subprocess.run([str(tmp / tool), "-nopercent", target], cwd=tmp, env=env, check=True,
                               capture_output=True)
            points, ericw = floor_samples((tmp / "case.bsp").read_bytes())
            inside = (np.abs(points[:, :2]) < 600).all(axis=1)
            points, ericw = points[inside], ericw[inside]
            rel = ORIGIN[None, :] - points
            d = np.linalg.norm(rel, axis=1)
            ours = quake_light_value(formula.get("delay", 0), formula.get("light", 300), formula.get("wait", 1.0),
                                     formula.get("falloff", 0.0), d) * quake_angle(formula.get("anglescale", 0.5),
                                                                                   rel[:, 2] / d)
            ours = np.maximum(ours, formula.get("minlight", 0.0))  # the worldspawn's minlight: a floor
            diff = ericw - ours / 2
            lit = ours / 2 >= 0.5
            print(json.dumps({"keys": keys, **({"minlight": formula["minlight"]} if "minlight" in formula else {}),
                              "luxels": int(len(d)), "lit": int(lit.sum()),
                              "mean_diff": round(float(diff[lit].mean()), 3),
                              "max_abs_diff": round(float(np.abs(diff[lit]).max()), 3),
                              "dark_where_ours_dark": bool((ericw[ours / 2 < 0.5] <= 1).all())}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
