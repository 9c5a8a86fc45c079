"""How many CPU cores this process may use, and the torch threads the model gets from them.

One policy for the CLI (`bodyblocks extract`), the library (`bodyblocks.extract`, `get_extractor`) and the
evaluation: torch's own default (every core) oversubscribes a small machine when anything else runs beside
the forward pass (parsing workers, the trees' OpenMP walk), and a tiny forward pass then waits on its own
thread pool.
"""

from __future__ import annotations

import os


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
