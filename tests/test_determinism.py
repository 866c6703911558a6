"""Same input, byte-identical output -- on another machine too (core/detmath.py).

NumPy's matrix products go to OpenBLAS, which picks its kernel per CPU at run time; the variable
OPENBLAS_CORETYPE forces one.  Baking the same maps under the SSE3 kernel (Prescott, which every
x86-64 CPU runs) and under the machine's own (AVX2 with fused multiply-add on current CPUs) must
give the same bytes.  Before core/ moved its products to detmath, split vertices and bevel planes
differed in the last bits.  (Elsewhere than on x86-64 OpenBLAS ignores the variable and the two
bakes are trivially equal.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAPS = REPO / "maps"


def bake(scene: Path, out: Path, coretype: str | None) -> bytes:
    env = dict(os.environ)  # the machine's own kernel as this machine runs it (a preset kept)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    subprocess.run([sys.executable, "-m", "brushbake", "bake", str(scene), "-o", str(out), "--hull", "stand",
                    "--hull", "crouch"], check=True, env=env, capture_output=True, cwd=REPO)
    return out.read_bytes()


@pytest.mark.parametrize("scene", [MAPS / "librequake" / "slope.map", MAPS / "ericw-tools" / "q1_rocks.map",
                                   REPO / "sample_scenes" / "cornell_box.json"], ids=lambda p: p.name)
def test_bake_is_the_same_under_every_blas_kernel(scene, tmp_path):
    mine = bake(scene, tmp_path / "native.bbk", None)
    sse = bake(scene, tmp_path / "sse.bbk", "Prescott")
    assert mine == sse, f"{scene.name}: the bake differs between OpenBLAS kernels (a BLAS product in core/?)"
