"""What the batch runner asks of the machine: freed heap memory back (cores and threads: bodyblocks.runtime.cores)."""

from __future__ import annotations

import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, where the C library is glibc (Linux); else None.

    Looked up among the symbols already loaded (not with ctypes.util.find_library, which forks `ldconfig`: a
    child that counts this whole process as its own peak RSS)."""
    import ctypes

    try:
        return ctypes.CDLL(None).malloc_trim  # type: ignore[no-any-return]
    except (OSError, AttributeError, TypeError):  # no glibc (macOS, musl: no such symbol; Windows: no CDLL(None))
        return None


def release_free_memory() -> bool:
    """Hand the heap's free pages back to the OS (glibc malloc_trim); True when it could.

    Pages have every block count and n-gram count there is, so the forward pass frees buffers of ever new
    sizes; glibc keeps the freed memory in its heap, fragmented, and RSS crept up over a long run
    (benchmarks/memory_flat.py: 614 to 871 MB median by fifth over 20,000 pages; one malloc_trim after a
    6,000-page loop of random sizes took RSS from 440 back to 332 MB). run_batch calls it after every
    window of pages (a few ms: 2-9 ms measured).
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
