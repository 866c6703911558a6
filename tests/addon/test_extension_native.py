"""The per-platform extension zips and the native library inside them, in real Blender (issue 32).

- `extension build --split-platforms` (Blender's own builder, from the bpy wheel) makes one zip per
  platform in blender_manifest.toml, each holding its own brushbake_native wheel and no other; each
  validates.
- The linux-x64 zip installed into a throw-away Blender with no C compiler on the PATH and an empty
  cache: the light bake and the camera queries run on the library of the zip's wheel (the report and
  the bake say 'shipped'), with the same lightmap bytes as the NumPy path and the same leaves drawn
  for 200 cameras in each mode; a library built from source would go to Blender's per-extension user
  folder (extension_path_user), not the add-on's.
"""

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

if importlib.util.find_spec("bpy") is None:
    pytest.skip("bpy wheel not installed (scripts/setup_env.sh installs bpy==5.0.1)", allow_module_level=True)

from test_extension import (REPO, TIMEOUT_S, blender_ext_messages, ensure_wheels, find_blender_ext,  # noqa: E402
                            isolated_blender_env, run_python)

pytestmark = pytest.mark.blender

PROBE = Path(__file__).with_name("native_probe.py")
PLATFORM_WHEELS = {"windows_x64": "win_amd64", "windows_arm64": "win_arm64", "linux_x64": "manylinux_2_17_x86_64",
                   "linux_arm64": "manylinux_2_17_aarch64", "macos_x64": "macosx_11_0_x86_64",
                   "macos_arm64": "macosx_11_0_arm64"}


@pytest.fixture(scope="module")
def split_zips(tmp_path_factory) -> dict:
    """{platform: zip} from `extension build --split-platforms`, the wheels built first."""
    ensure_wheels()
    out = tmp_path_factory.mktemp("split")
    proc = run_python(find_blender_ext(), "build", "--split-platforms", "--output-type", "JSON",
                      "--source-dir", REPO, "--output-dir", out)
    assert proc.returncode == 0, f"build failed:\n{proc.stdout}\n{proc.stderr}"
    return {p.stem.split("-", 2)[2]: p for p in sorted(out.glob("brushbake-*.zip"))}


def test_one_zip_per_platform_with_its_own_wheel(split_zips):
    assert set(split_zips) == set(PLATFORM_WHEELS)
    for platform, path in split_zips.items():
        with zipfile.ZipFile(path) as archive:
            wheels = [n for n in archive.namelist() if n.endswith(".whl")]
            manifest = archive.read("blender_manifest.toml").decode()
        assert wheels == [f"wheels/brushbake_native-0.1.0-py3-none-{PLATFORM_WHEELS[platform]}.whl"], (platform, wheels)
        assert f'platforms = ["{platform.replace("_", "-")}"]' in manifest, platform
        assert path.stat().st_size < 1_000_000, (platform, path.stat().st_size)


def test_every_platform_zip_validates(split_zips):
    for platform, path in split_zips.items():
        proc = run_python(find_blender_ext(), "validate", "--output-type", "JSON", path)
        assert proc.returncode == 0, f"{platform}:\n{proc.stdout}\n{proc.stderr}"
        assert not [m for m in blender_ext_messages(proc) if m[0] != "STATUS"], platform


def test_linux_zip_bakes_light_and_culls_with_the_shipped_library(split_zips, tmp_path):
    user = tmp_path / "blender_user"
    user.mkdir()
    (tmp_path / "no_compiler").mkdir()
    env = isolated_blender_env(user)
    for key in ("PYTHONPATH", "BRUSHBAKE_NATIVE", "BRUSHBAKE_C_CACHE", "XDG_CACHE_HOME"):
        env.pop(key, None)
    env.update(PATH=str(tmp_path / "no_compiler"), CC="", HOME=str(tmp_path / "home"))
    proc = subprocess.run([sys.executable, str(PROBE), str(split_zips["linux_x64"])], capture_output=True, text=True,
                          timeout=4 * TIMEOUT_S, env=env, stdin=subprocess.DEVNULL, cwd=tmp_path)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("PROBE_RESULT ")]
    assert proc.returncode == 0 and lines, f"probe failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    r = json.loads(lines[-1].removeprefix("PROBE_RESULT "))
    context = json.dumps(r, indent=1)
    assert "error" not in r, r.get("error")
    assert r["install"] == ["FINISHED"] and r["enabled"], context
    assert r["cache_dir"] == r["user_dir"] and str(user) in r["cache_dir"], context  # never the add-on's folder
    assert r["panel_report"].startswith("native (shipped): brushbake_native 0.1.0 for linux-x64"), context
    assert r["bake"] == ["FINISHED"] and "(rays: native (shipped))" in r["status"], context  # the light's rays
    assert r["report_backend"] == "shipped" and "/extensions/" in r["library"], context
    assert r["light_pages_lit"] > 0 and r["light_pages_equal"], context
    assert r["camera_backend"] == "c" and r["cull_equal"] == [True, True, True], context
    assert not os.path.exists(r["cache_dir"]), context  # nothing was built
