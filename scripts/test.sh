#!/usr/bin/env bash
# Run every test: set up .venv (system libraries for Blender, brushbake[test], the bpy wheel) on
# first run, then pytest: the headless core, the exporters, and the add-on in real Blender.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/setup_env.sh </dev/null
exec .venv/bin/python -m pytest -q "$@"
