"""Which backend runs the compiler's C kernels in a bake's trees and portals: `using(backend)`
around the work ('auto': the native library where it loads, else NumPy; 'numpy'; 'c'), read where
a kernel is chosen (a forked worker inherits it; a farm's worker uses 'auto').  The answers are
the same either way: each kernel is tested against its NumPy reference to the bit."""

from __future__ import annotations

import contextlib
import contextvars

BACKENDS = ("auto", "numpy", "c")

_BACKEND = contextvars.ContextVar("brushbake_compile_backend", default="auto")


@contextlib.contextmanager
def using(backend: str):
    """The compiler's kernels run by `backend` inside ('auto', 'numpy' or 'c')."""
    if backend not in BACKENDS:
        raise ValueError(f"compile backend must be auto, numpy or c, not {backend!r}")
    token = _BACKEND.set(backend)
    try:
        yield
    finally:
        _BACKEND.reset(token)


def resolve(binding) -> str:
    """'c' or 'numpy' for a kernel (its KernelBinding) under the backend in force ('c' asked for
    where the library does not load: BackendUnavailableError)."""
    backend = _BACKEND.get()
    if backend == "numpy":
        return "numpy"
    if backend == "c":
        binding.library()
        return "c"
    return "c" if binding.available() else "numpy"
