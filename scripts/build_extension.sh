#!/usr/bin/env bash
# Build the Blender extension zips from this checkout, one per platform, and validate them, with
# Blender's own tool: `blender --command extension build --split-platforms` when a Blender is on the
# PATH, else the copy of that tool in the bpy wheel that scripts/setup_env.sh installs into .venv.
# First the native library's wheels (scripts/build_native.py: zig cc, from the ziglang package that
# setup_env.sh installs; cached, so a second run compiles nothing) into wheels/, where
# blender_manifest.toml lists them; each zip carries its platform's.
#
#   scripts/build_extension.sh [OUTPUT_DIR]        (default: dist/; created when missing)
#
# Then install dist/brushbake-<version>-<platform>.zip (linux_x64, windows_x64, macos_arm64, ...) in
# Blender: Edit > Preferences > Get Extensions > Install from Disk.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/dist}"
mkdir -p "$OUT"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
if [[ -x "$PY" ]] && tool="$("$PY" - <<'PY'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("bpy")
if spec is None or not spec.submodule_search_locations:
    sys.exit(1)
found = sorted(pathlib.Path(next(iter(spec.submodule_search_locations))).glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
if not found:
    sys.exit(1)
print(found[-1])
PY
)"; then
  run() { "$PY" "$tool" "$@"; }
elif command -v blender >/dev/null 2>&1; then
  run() { blender --factory-startup --command extension "$@"; }
else
  echo "build_extension: needs Blender's extension tool: run scripts/setup_env.sh (or scripts/test.sh) first to add the bpy wheel to .venv (scripts/bake_sample.sh installs only the headless core), or put a 'blender' on the PATH" >&2
  exit 1
fi
"$PY" "$ROOT/scripts/build_native.py" --out "$ROOT/wheels"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/blender_manifest.toml")"
rm -f "$OUT"/brushbake-"$version"-*.zip
run build --split-platforms --source-dir "$ROOT" --output-dir "$OUT"
for zip in "$OUT"/brushbake-"$version"-*.zip; do
  run validate "$zip"
  echo "built $zip ($(wc -c <"$zip") bytes)"
done
