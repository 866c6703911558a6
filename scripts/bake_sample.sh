#!/usr/bin/env bash
# Bake the default sample scene end to end: set up .venv with the headless core on first run
# (NumPy only; no Blender needed), compile sample_scenes/two_rooms.json (point tree plus the onion
# tree for its 'stand' and 'crouch' hulls), write out/two_rooms.bbk and a JSON dump, print the
# level's table and answer a few queries from .npy files, as an engine or a script would.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
if [[ -n "${PYTHON:-}" ]]; then py="$PYTHON"
elif command -v python3.11 >/dev/null 2>&1; then py=python3.11
else py=python3; fi

if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
  if ! "$py" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    echo "bake_sample: $py cannot create a virtualenv; install python3-venv (apt-get install python3-venv)" >&2
    if [[ "$(id -u)" -eq 0 ]]; then
      DEBIAN_FRONTEND=noninteractive apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
    else
      exit 1
    fi
  fi
  rm -rf "$VENV"
  "$py" -m venv "$VENV"
fi
if [[ ! -x "$VENV/bin/brushbake" ]] || ! "$VENV/bin/python" -c 'import brushbake.core.compile, numpy' >/dev/null 2>&1; then
  echo "bake_sample: installing brushbake (headless core) into .venv"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$ROOT"
fi

# the modules' bytecode, once (scripts/setup_env.sh says why)
"$VENV/bin/python" -m compileall -q -j 0 "$ROOT"/*.py "$ROOT/core" "$ROOT/exporters" >/dev/null

mkdir -p out
"$VENV/bin/brushbake" bake sample_scenes/two_rooms.json -o out/two_rooms.bbk --json out/two_rooms.json
"$VENV/bin/brushbake" info out/two_rooms.bbk
"$VENV/bin/python" - <<'PY'
import numpy as np
# the player start and a point inside the pillar; a standing walk from room A through the corridor to room B
np.save("out/points.npy", np.array([[2.0, 2.0, 0.78125], [4.0, 5.5, 1.0]]))
# two standing walks: through the corridor into room B (free), and into room A's west wall (blocked)
np.save("out/walk.npy", np.array([[[2.0, 4.0, 0.78125], [15.0, 4.0, 0.78125]],
                                  [[2.0, 4.0, 0.78125], [-2.0, 4.0, 0.78125]]]))
PY
"$VENV/bin/brushbake" query out/two_rooms.bbk --points out/points.npy -o out/points_solid.npy
"$VENV/bin/brushbake" query out/two_rooms.bbk --hull stand --segments out/walk.npy -o out/walk_hit.npy
"$VENV/bin/python" -c "import numpy as np; print('points solid:', np.load('out/points_solid.npy')); print('walk (fraction, point, normal):', np.round(np.load('out/walk_hit.npy'), 3))"
