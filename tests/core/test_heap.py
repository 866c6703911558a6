"""core.heap.keep_freed_pages: after it, a batch's large temporaries reuse the heap's pages
instead of faulting fresh ones in each time (glibc; see the module's docstring).

Run in a fresh interpreter: the test process has long since freed large arrays itself, which
raises glibc's thresholds just the same and would hide the difference."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CHURN = """
import resource, sys
import numpy as np
if sys.argv[1] == "keep":
    from brushbake.core.runtime.heap import keep_freed_pages
    keep_freed_pages()
def churn():
    for _ in range(20):
        a = np.ones(600_000)  # 4.8 MB: a 20,000-segment batch's stack
        b = a * 2.0
        del a, b
churn()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
churn()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", CHURN, mode], check=True, capture_output=True, text=True,
                         cwd=REPO.parent)
    return int(out.stdout.strip())


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                    reason="the behaviour is glibc's")
def test_freed_pages_are_kept():
    plain, kept = _faults("plain"), _faults("keep")
    assert plain > 1000  # each 4.8 MB block mapped afresh: ~1,200 faults apiece
    assert kept < 50

