#!/usr/bin/env bash
# Set up (or refresh) the development environment in .venv at the repository root:
#   1. the system libraries the bpy wheel loads (Debian/Ubuntu packages; installed only when some are
#      missing, and only as root or through sudo; otherwise the apt-get command is printed),
#   2. the virtualenv .venv (created if missing, recreated if its interpreter no longer runs),
#   3. brushbake itself, editable, with the [test] extras (ziglang among them: zig cc builds the
#      native library for every platform), and bpy (Blender as a Python module),
#   4. wine64, qemu-user and libc6-arm64-cross where it can (the native library's Windows and arm64
#      tests; optional).
# Safe to run again: when nothing changed since the last run it only checks, in well under a second.
#
#   scripts/setup_env.sh            then   .venv/bin/python -m pytest -q
#
# Environment: PYTHON picks the interpreter for the venv (default python3.11, else python3).  The
# bpy wheel exists only for CPython 3.11, so that is what the venv must use.
set -euo pipefail

BPY_VERSION="5.0.1"

# What the bpy wheel needs from the system.  The first line is what its __init__.so links against
# (import fails without them); the second is what Blender loads on demand for software OpenGL
# through EGL/Mesa (Workbench renders, the gpu module offscreen) plus the X extensions it probes.
APT_PACKAGES=(
  libx11-6 libxext6 libxrender1 libxfixes3 libxi6 libxkbcommon0 libsm6 libice6 libgl1
  libegl1 libegl-mesa0 libgl1-mesa-dri libglx-mesa0 libgbm1 libxxf86vm1 libxkbcommon-x11-0
)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
STAMP="$VENV/.brushbake-setup"

say() { printf 'setup_env: %s\n' "$*"; }

# Packages from APT_PACKAGES (and any extra arguments) that dpkg does not list as installed.
missing_packages() {
  local pkg
  for pkg in "${APT_PACKAGES[@]}" "$@"; do
    if [[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null)" != ii* ]]; then
      printf '%s\n' "$pkg"
    fi
  done
}

# Run apt-get as root, directly or through sudo; return 1 when neither is possible.
apt_as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then
    DEBIAN_FRONTEND=noninteractive apt-get "$@"
  elif command -v sudo >/dev/null 2>&1 && { [[ -t 0 ]] || sudo -n true 2>/dev/null; }; then
    sudo DEBIAN_FRONTEND=noninteractive apt-get "$@"
  else
    return 1
  fi
}

# Install whichever of the packages are missing.  Not fatal when that is impossible: the tests
# then fail with Blender's own message about the library it could not load.
install_system_packages() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    say "not a Debian system: make sure the equivalents of these are installed: ${APT_PACKAGES[*]}"
    return 0
  fi
  local missing
  mapfile -t missing < <(missing_packages "$@")
  if [[ ${#missing[@]} -eq 0 ]]; then
    say "system packages present"
    return 0
  fi
  say "installing system packages: ${missing[*]}"
  if ! { apt_as_root update -qq && apt_as_root install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
    say "could not install them (not root, no sudo?); please run:"
    say "  sudo apt-get install -y ${missing[*]}"
  fi
}

# The interpreter to build the venv from: $PYTHON, else python3.11, else python3.
pick_python() {
  if [[ -n "${PYTHON:-}" ]]; then
    printf '%s\n' "$PYTHON"
  elif command -v python3.11 >/dev/null 2>&1; then
    printf 'python3.11\n'
  else
    printf 'python3\n'
  fi
}

# Debian splits venv support into python3-venv; ask for it when the interpreter cannot make one.
extra_packages=()
python_bin="$(pick_python)"
if ! "$python_bin" -c 'import ensurepip, venv' >/dev/null 2>&1; then
  extra_packages+=(python3-venv)
fi
install_system_packages "${extra_packages[@]}"

# Wine and qemu-user run the Windows and the Linux arm64 builds of the native library in the tests
# (tests/test_native_foreign.py; about 12 s and 20 s to install).  Optional: without them those
# tests are skipped, saying why.
optional_packages=()
if command -v dpkg-query >/dev/null 2>&1 && [[ "$(dpkg --print-architecture)" == amd64 ]]; then
  for pkg in wine64 qemu-user libc6-arm64-cross; do
    if [[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null)" != ii* ]]; then
      optional_packages+=("$pkg")
    fi
  done
fi
if [[ ${#optional_packages[@]} -gt 0 ]]; then
  say "installing ${optional_packages[*]} (the native library's Windows and arm64 tests)"
  if ! { apt_as_root update -qq && apt_as_root install -y -qq --no-install-recommends "${optional_packages[@]}" >/dev/null; }; then
    say "could not install them: those tests will be skipped"
  fi
fi

if ! "$python_bin" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  say "error: $python_bin is not CPython 3.11; bpy==$BPY_VERSION has wheels only for 3.11."
  say "set PYTHON=/path/to/python3.11 and run again"
  exit 1
fi

# A venv whose interpreter no longer starts (base Python upgraded or removed), or that is not
# CPython 3.11 (made by hand with another python3), is rebuilt.
if [[ -e "$VENV" ]] && ! "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' >/dev/null 2>&1; then
  say "rebuilding broken $VENV"
  rm -rf "$VENV"
fi
if [[ ! -x "$VENV/bin/python" ]]; then
  say "creating $VENV with $python_bin"
  "$python_bin" -m venv "$VENV"
fi

# pip takes several seconds even when everything is installed (it rebuilds the editable wheel), so
# skip it while the inputs that decide what gets installed are unchanged and the imports still work.
want_stamp="bpy==$BPY_VERSION $(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want_stamp" ]] \
  && "$VENV/bin/python" -c 'import importlib.util as u, brushbake; assert u.find_spec("bpy")' >/dev/null 2>&1; then
  say "python packages up to date"
else
  say "installing brushbake[test] and bpy==$BPY_VERSION into $VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    -e "${ROOT}[test]" "bpy==$BPY_VERSION"
  printf '%s\n' "$want_stamp" >"$STAMP"
fi

# Python compiles a module's source each time it imports one without a bytecode file beside it, and
# with PYTHONDONTWRITEBYTECODE set (some machines and CI images set it) it never writes one: 0.15 s of
# every bake, most of a small map's.  Compile brushbake's once here (a few hundredths when current).
"$VENV/bin/python" -m compileall -q -j 0 "$ROOT"/*.py "$ROOT/core" "$ROOT/exporters" "$ROOT/farm" "$ROOT/addon" >/dev/null

say "ready: $("$VENV/bin/python" -c 'import numpy, sys; print(f"Python {sys.version.split()[0]}, numpy {numpy.__version__}")')"
