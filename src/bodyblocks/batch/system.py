"""What the batch runner asks of the machine: usable cores, torch threads, and freed heap memory back."""

from __future__ import annotations

import functools
import os
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


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_threads(workers: int, overlap: bool = False) -> int:
    """Torch threads of the model in `bodyblocks extract`: the usable cores shared by the parsing workers,
    less the one this thread keeps busy with parsing and NumPy while the forward pass overlaps them."""
    return max(1, usable_cores() // max(1, workers) - int(overlap))
