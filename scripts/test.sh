#!/usr/bin/env bash
# Run every test: set up .venv (system libraries for Blender, brushbake[test], the bpy wheel) on
# first run, build the native library's wheels, then pytest: the headless core, the exporters, the
# native library of every platform, and the add-on in real Blender.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/setup_env.sh </dev/null
# The native library for every platform (zig cc; cached under a hash of the sources and flags), as
# the wheels the extension ships; the suite's C tests then run on this machine's shipped library
# (BRUSHBAKE_NATIVE=shipped: no fallback to a compiler's build), which tests/test_native_build.py
# compares with the compiler's.
.venv/bin/python scripts/build_native.py --out wheels
case "$(uname -m)" in
  x86_64) tag=manylinux_2_17_x86_64 ;;
  aarch64) tag=manylinux_2_17_aarch64 ;;
  *) tag="" ;;
esac
if [[ -n "$tag" ]]; then
  site="$ROOT/build/native-site"
  rm -rf "$site"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --no-index --target "$site" \
    wheels/brushbake_native-*-py3-none-"$tag".whl
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" BRUSHBAKE_NATIVE=shipped
fi
exec .venv/bin/python -m pytest -q "$@"
