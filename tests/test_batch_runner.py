"""The batch runner's writing of decided pages: in input order, a burst at a time, none lost to a signal."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bodyblocks.batch import runner
from bodyblocks.batch.inputs import Job
from bodyblocks.batch.outputs import Rendered
from bodyblocks.types import Document


class _Recorder:
    """A Scheduler stand-in: what was written (done) and submitted, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def submit(self, pending: list[tuple[Job, Document, float]]) -> None:
        if pending:
            self.events.append(("submit", [job.key for job, _, _ in pending]))

    def done(self, job: Job, ex: Any, error: str | None, secs: float) -> None:
        self.events.append(("done", job.key))

    def drain(self) -> None:
        self.events.append(("drain", None))


def _answers(n: int, asked: list[int], stop_after: int | None = None) -> Iterator[runner.Result]:
    for i in range(n):
        if stop_after is not None and i == stop_after:
            raise KeyboardInterrupt
        asked.append(i)
        yield Job(key=f"p{i}"), Rendered("text\n", {"status": "ok"}), None, 0.01


def test_pages_are_written_in_order_a_burst_at_a_time() -> None:
    rec, asked = _Recorder(), []
    n = 2 * runner.BURST + 3
    results = _answers(n, asked)
    seen_when: list[int] = []
    real_done = rec.done

    def done(job: Job, ex: Any, error: str | None, secs: float) -> None:
        seen_when.append(len(asked))  # how many results had come back when this page was written
        real_done(job, ex, error, secs)

    rec.done = done  # type: ignore[method-assign]
    runner._classify(results, rec, staged=False, group=8)  # type: ignore[arg-type]
    assert rec.events == [("done", f"p{i}") for i in range(n)] + [("drain", None)]
    assert seen_when == [runner.BURST] * runner.BURST + [2 * runner.BURST] * runner.BURST + [n] * 3


def test_a_signal_writes_the_pages_held_first() -> None:
    rec, asked = _Recorder(), []
    with pytest.raises(KeyboardInterrupt):
        runner._classify(_answers(20, asked, stop_after=5), rec, staged=False, group=8)  # type: ignore[arg-type]
    assert rec.events == [("done", f"p{i}") for i in range(5)]


def test_parsed_pages_go_to_the_scheduler_after_the_pages_decided_before_them() -> None:
    rec = _Recorder()
    doc = Document(blocks=[])

    def mixed() -> Iterator[runner.Result]:
        yield Job(key="f0"), None, "error: broken", 0.0
        yield Job(key="d1"), doc, None, 0.01
        yield Job(key="d2"), doc, None, 0.01
        yield Job(key="f3"), None, "error: broken", 0.0
        yield Job(key="d4"), doc, None, 0.01

    runner._classify(mixed(), rec, staged=True, group=8)  # type: ignore[arg-type]
    assert rec.events == [("done", "f0"), ("submit", ["d1", "d2"]), ("done", "f3"), ("submit", ["d4"]),
                          ("drain", None)]


def test_a_signal_in_the_middle_of_a_burst_writes_no_page_twice() -> None:
    rec, asked = _Recorder(), []
    real_done = rec.done
    interrupted = []

    def done(job: Job, ex: Any, error: str | None, secs: float) -> None:
        if job.key == "p3" and not interrupted:  # Ctrl-C while p3 is being written
            interrupted.append(job.key)
            raise KeyboardInterrupt
        real_done(job, ex, error, secs)

    rec.done = done  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        runner._classify(_answers(20, asked), rec, staged=False, group=8)  # type: ignore[arg-type]
    # p3 is left to a resumed run; the burst's other pages are written once each
    assert rec.events == [("done", f"p{i}") for i in (0, 1, 2, 4, 5, 6, 7)]
