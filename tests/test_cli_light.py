"""`bake --light` as users run it (a subprocess): the level holds the lightmap, --png writes one
8-bit sRGB PNG per page matching the stored pages, the table has the light rows, a bad option is
one line naming its range, and --no-light keeps a level without one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from brushbake.exporters import read_level
from brushbake.exporters.png import auto_exposure, read_png_rgb8, srgb8

SCENE = Path(__file__).resolve().parents[1] / "sample_scenes" / "cornell_box.json"


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "brushbake", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)


def test_bake_light_png_and_table(tmp_path):
    out = tmp_path / "cb.bbk"
    r = run("bake", SCENE, "-o", out, "--png", "--bounces", "2", "--no-hulls")
    assert r.returncode == 0, r.stderr
    assert "light: faces / luxels / patches" in r.stdout and "bounce 2" in r.stdout
    level = read_level(out)
    assert level.has_light and level.lm_luxel == 0.5
    png = tmp_path / "cb.lm0.png"
    assert png.is_file() and str(png.name) in r.stdout
    img = read_png_rgb8(png.read_bytes())  # the automatic exposure, never above 1, in the table
    e = auto_exposure(level.lm_pages)
    assert np.array_equal(img, srgb8(level.lm_pages[0].astype(np.float64) * e)[::-1]) and f"{e:.4g} auto" in r.stdout
    r = run("bake", SCENE, "-o", out, "--png", "--bounces", "2", "--no-hulls", "--exposure", "1", "-q")
    assert r.returncode == 0 and np.array_equal(read_png_rgb8(png.read_bytes()), srgb8(level.lm_pages[0])[::-1])
    r = run("bake", SCENE, "-o", out, "--png", "--exposure", "-1")
    assert r.returncode == 2 and "--exposure" in r.stderr and "auto" in r.stderr
    r2 = run("info", out)
    assert "lightmap" in r2.stdout


def test_bad_light_options_and_no_light(tmp_path):
    r = run("bake", SCENE, "-o", tmp_path / "x.bbk", "--luxel", "0")
    assert r.returncode == 2 and "luxel" not in r.stdout and "0.015625 to 16" in r.stderr
    r = run("bake", SCENE, "-o", tmp_path / "x.bbk", "--reflectance", "1")
    assert r.returncode == 2 and "0 to 0.9375" in r.stderr
    r = run("bake", SCENE, "-o", tmp_path / "y.bbk", "--no-light", "-q", "--no-hulls")
    assert r.returncode == 0 and not read_level(tmp_path / "y.bbk").has_light
