"""Keep the C heap's freed pages: batch walks allocate and free the same large temporaries many
times a call, and that should not cost a page fault per 4 KB each time.

glibc serves an allocation above its mmap threshold (128 KB to start) with a fresh mapping, and
trims the heap's top once more than twice that threshold lies free there.  Both thresholds rise
by themselves when a mapped block is freed -- to that block's size, up to 32 MB -- so a process
that has freed one large array keeps its heap pages; one that has only freed arrays of a few MB
gives them back at the end of every batch and faults them in again in the next: about a
thousand faults, 10-15% of a 20,000-segment find_first_transitions (bench/README.md).

keep_freed_pages() frees one 30 MB block once per process, which is what any large free does
anyway.  It is harmless under other allocators (jemalloc, macOS, Windows): a mapping that is
never touched, made and dropped once.  The price is that up to ~60 MB of freed memory may stay
with the process instead of going back to the system.
"""

from __future__ import annotations

import numpy as np

_DONE = False
_BLOCK_BYTES = 30 * 1024 * 1024  # above any threshold the heap has reached, below glibc's 32 MB cap


def keep_freed_pages() -> None:
    global _DONE
    if not _DONE:
        _DONE = True
        np.empty(_BLOCK_BYTES, dtype=np.uint8)  # made and dropped at once, never touched: no page faulted in
