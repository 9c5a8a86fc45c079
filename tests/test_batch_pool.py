"""The worker pool's start (its workers set up side by side) and how many workers a batch run starts."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bodyblocks.batch import BatchOptions, run_batch
from bodyblocks.runtime.pool import WorkerPool, WorkerStartError

SETUP_S = 1.5


def _slow_setup() -> None:
    time.sleep(SETUP_S)


def _cannot_start() -> None:
    raise RuntimeError("this worker cannot start")


def _echo(task: int) -> int:
    return task


def test_the_workers_set_up_side_by_side() -> None:
    t0 = time.monotonic()
    pool = WorkerPool(3, _echo, init=_slow_setup)
    try:
        took = time.monotonic() - t0
        assert SETUP_S <= took < 2 * SETUP_S  # one after the other: 3 x SETUP_S
        assert sorted(result for _, result, _ in pool.run(range(6))) == list(range(6))
    finally:
        pool.close()


def test_a_worker_that_cannot_start_fails_the_pool_and_stops_the_others() -> None:
    import multiprocessing

    before = set(multiprocessing.active_children())
    with pytest.raises(WorkerStartError, match="RuntimeError: this worker cannot start"):
        WorkerPool(3, _echo, init=_cannot_start)
    assert set(multiprocessing.active_children()) == before


def test_a_worker_that_does_not_start_in_time_is_named_with_the_limit() -> None:
    with pytest.raises(WorkerStartError, match="did not start within 0.5 s"):
        WorkerPool(2, _echo, init=_slow_setup, start_timeout_s=0.5)


def _pages(folder: Path, n: int) -> Path:
    folder.mkdir()
    for i in range(n):
        (folder / f"p{i}.html").write_text(f"<html><body><p>Page {i} has a paragraph of body text.</p></body></html>",
                                           encoding="utf-8")
    return folder


@pytest.mark.parametrize(("pages", "workers", "started"), [(1, 2, 1), (2, 3, 2), (5, 2, 2), (0, 2, 1)])
def test_a_run_starts_no_more_workers_than_it_has_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       pages: int, workers: int, started: int) -> None:
    from bodyblocks.batch import runner

    sizes: list[int] = []

    class Counted(WorkerPool):
        def __init__(self, size: int, *args: object, **kwargs: object) -> None:
            sizes.append(size)
            super().__init__(size, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "WorkerPool", Counted)
    src = _pages(tmp_path / "in", pages)
    totals = run_batch([src], tmp_path / "out", BatchOptions(extractor="heuristic", workers=workers, progress=False))
    assert sizes == [started] and (totals.pages, totals.ok) == (pages, pages)


def test_inputs_are_counted_only_as_far_as_the_workers(tmp_path: Path) -> None:
    from bodyblocks.batch.runner import _pool_size

    one, many = _pages(tmp_path / "one", 1), _pages(tmp_path / "many", 3)
    missing = tmp_path / "missing.html"  # a failed page: still a page, given to a worker
    assert _pool_size([one], 4, tmp_path / "out") == 1
    assert _pool_size([one, missing], 4, tmp_path / "out") == 2
    assert _pool_size([one, many, missing], 4, tmp_path / "out") == 4
    assert _pool_size([many, one], 2, tmp_path / "out") == 2
    warc = tmp_path / "a.warc"  # pages known only once read
    warc.write_bytes(b"WARC/1.0\r\n")
    assert _pool_size([warc], 4, tmp_path / "out") == 4


def _dies_on_zero(task: int) -> int:
    import os

    if task == 0:
        os._exit(3)
    return task


def test_the_task_a_dead_worker_held_next_is_done_by_the_next_worker() -> None:
    pool = WorkerPool(1, _dies_on_zero)
    try:
        assert pool.workers[0].busy is False
        got = {task: (result, failure and failure.split(":")[0]) for task, result, failure in pool.run(range(4))}
        assert got == {0: (None, "worker-died"), 1: (1, None), 2: (2, None), 3: (3, None)}
    finally:
        pool.close()


def test_a_large_task_waits_for_a_free_worker_and_every_task_is_answered() -> None:
    from bodyblocks.runtime.pool import PREFETCH_BYTES

    big = "x" * (2 * PREFETCH_BYTES)
    pool = WorkerPool(2, _echo)
    try:
        tasks = [big, 1, big, 2, 3, big]
        assert sorted(map(str, (r for _, r, f in pool.run(tasks) if f is None))) == sorted(map(str, tasks))
    finally:
        pool.close()
