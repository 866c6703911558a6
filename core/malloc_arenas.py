"""One malloc arena for the command line's process, where the C library is glibc.

glibc gives each thread that meets a locked arena an arena of its own, and keeps what is freed in
each for reuse instead of giving it back.  A bake's light runs its NumPy work on four threads (two
tracing, two making the next blocks), each freeing tens of MB of arrays below glibc's mmap
threshold: slope.map's light peaked at 617 MB resident for about 450 MB live.  With one arena the
freed blocks serve every thread: 463 MB, and no slower (each thread's arrays are large and few, so
the arena's lock is rarely met).  Only the command line asks for it: inside Blender the allocator is
Blender's process's, not ours to set.  An arena limit in the environment (MALLOC_ARENA_MAX, or
glibc.malloc.arena_max in GLIBC_TUNABLES) is the user's and wins.
"""

from __future__ import annotations

import ctypes
import os
import sys

#: mallopt's parameter number for the arena limit (glibc's malloc.h: M_ARENA_MAX)
M_ARENA_MAX = -8


def limit_arenas(count: int = 1) -> bool:
    """Ask glibc's malloc for at most `count` arenas; True if it took the setting.  Call it before
    the process starts its threads.  Nothing is done off Linux, off glibc, or when the environment
    sets an arena limit of its own."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    if "glibc.malloc.arena_max" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        libc = ctypes.CDLL(None)
        gnu_get_libc_version = libc.gnu_get_libc_version  # glibc only (musl has no arenas to limit)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    del gnu_get_libc_version
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt(M_ARENA_MAX, int(count)) == 1
