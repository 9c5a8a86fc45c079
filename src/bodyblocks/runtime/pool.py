"""Worker processes that may die or hang without taking the run with them.

    pool = WorkerPool(2, work, init=init_worker, init_args=(...,), deadline_s=125)
    for task, result, failure in pool.run(tasks): ...     # in the order they finish; pool.close() at the end

Each worker (forked, so it inherits what the parent built) answers one task at a time through its own pipe, and
holds the next one already in that pipe (PREFETCH): it never waits for the run's process to wake up between two
tasks. A worker that exits (a crash inside C code, the OOM killer, kill -9) fails the task it was on with
"worker-died"; one that is on a task past `deadline_s` (stuck where no signal reaches it) is killed and its task
fails with "timeout". Either way a fresh worker takes its place, the task it held next goes to the next worker
free, and the other tasks go on. multiprocessing.Pool, in
contrast, never returns the task of a worker killed under it: the whole run waits for ever.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection, wait
from multiprocessing.reduction import ForkingPickler
from typing import Any

JOIN_S = 5.0  # how long a killed worker is waited for
# Tasks a worker holds at once: the one it is on and the next, sent while it works, so that it starts that one as
# soon as it has sent its answer. Handed out one by one, each worker waited for the run's process to wake up,
# take the answer and send the next task: 8-10% of a worker's time on 181 pages when the cores are shared.
PREFETCH = 2
# A task held next is sent only when it is this small (a page named by its path, not one carried in the task),
# so that it sits in the pipe's buffer (64 KiB) and the send never waits for a busy worker to read it
PREFETCH_BYTES = 32 << 10


class WorkerStartError(RuntimeError):
    """A worker process could not set itself up (its `init` raised, or it did not answer in time)."""


# Allocations between two collections of the young generation in a run's processes (CPython's default is 700). A
# page makes tens of thousands of objects that live until it is done (blocks, lists, the tree's proxies): at 700
# they are collected and promoted several times a page and walked again by the older generations' collections.
# Freed by reference counting, most of them are gone before 50,000 allocations; cycles are still collected, so
# memory stays bounded (benchmarks/cli_profile.py counts the collector's time per page).
GC_YOUNG = 50_000


def collect_rarely() -> tuple[int, ...]:
    """Collect this process's young generation every GC_YOUNG allocations from now on; the thresholds before."""
    before = gc.get_threshold()
    gc.set_threshold(GC_YOUNG, *before[1:])
    return before


@contextmanager
def few_collections() -> Iterator[None]:
    """collect_rarely inside the block (a run's own process: its pages when it has no workers, else what it
    writes), CPython's thresholds restored after."""
    before = collect_rarely()
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _die_with_parent(parent: int) -> None:
    """Have the kernel kill this worker when the run's process dies (Linux): a worker left behind by a kill -9
    would go on with its page for nobody (up to the page's time limit, or forever in code stuck in C)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the worker still ends at its pipe's end of file
        pass
    if os.getppid() != parent:  # the parent died before the call above
        os._exit(0)


def _main(conn: Connection, fn: Callable[[Any], Any], init: Callable[..., None] | None, init_args: tuple,
          parent: int) -> None:
    """A worker: set up and say so (or why not), then answer tasks until None (or the run's end of its pipe)."""
    # Ctrl-C reaches the whole process group: the run's process stops the run and then the workers; a worker
    # that took it too would print a KeyboardInterrupt traceback from wherever it was. SIGINT was blocked
    # across the fork (_Worker), so none can arrive before it is ignored here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _die_with_parent(parent)
    # what the worker inherits (modules, the parent's models) lives as long as it does: its collections of the
    # old generation skip it (each such collection walked all of it: ~20 ms, or 0.3 ms a page of a run's 30)
    gc.freeze()
    collect_rarely()  # for the worker's pages
    try:
        if init is not None:
            init(*init_args)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it as WorkerStartError
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    try:
        conn.send(("ready", None))
        while (task := conn.recv()) is not None:
            result = fn(task)  # (an error of fn's own is no pipe's: it ends the worker as it did)
            conn.send(result)
    except (EOFError, BrokenPipeError, ConnectionResetError):  # the run's process went away: nothing to answer
        return


@contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT held back in this thread inside the block (a Ctrl-C then is delivered when it ends)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


class _Worker:
    """One process with its pipe and the tasks it holds (sent, not answered yet: the first is the one it is on);
    started, not yet set up (wait_ready)."""

    def __init__(self, ctx: Any, fn: Callable[[Any], Any], init: Callable[..., None] | None, init_args: tuple
                 ) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_main, args=(child, fn, init, init_args, os.getpid()), daemon=True)
        with _sigint_blocked():  # the worker starts with SIGINT blocked and ignores it before unblocking (_main)
            self.proc.start()
        child.close()
        self.tasks: deque[Any] = deque()
        self.deadline = 0.0

    @property
    def busy(self) -> bool:
        return bool(self.tasks)

    @property
    def task(self) -> Any:
        """The task the worker is on (None: none)."""
        return self.tasks[0] if self.tasks else None

    def wait_ready(self, until: float, limit_s: float) -> None:
        """Block until the worker has set up, at the latest until `until` (time.monotonic), `limit_s` after the
        start; WorkerStartError when it cannot (the worker stopped)."""
        try:
            if not self.conn.poll(max(0.0, until - time.monotonic())):
                raise WorkerStartError(f"a worker process did not start within {limit_s:g} s")
            kind, message = self.conn.recv()
        except (EOFError, OSError):
            kind, message = "error", "the worker process exited while starting"
        except WorkerStartError:
            self.stop()
            raise
        if kind != "ready":
            self.stop()
            raise WorkerStartError(message)

    def send(self, task: Any, payload: bytes, deadline_s: float) -> None:
        """Hand the worker a task (`payload`: pickled); its deadline runs from now when it is the worker's only one,
        else from the answer before it (answered)."""
        if not self.tasks:
            self.deadline = time.monotonic() + deadline_s
        self.tasks.append(task)
        self.conn.send_bytes(payload)

    def answered(self, deadline_s: float) -> Any:
        """The task just answered, taken off; the next one's deadline runs from now."""
        task = self.tasks.popleft()
        self.deadline = time.monotonic() + deadline_s
        return task

    def stop(self) -> None:
        """Kill the process (it may be stuck inside C code that no signal interrupts)."""
        self.proc.kill()
        self.proc.join(JOIN_S)
        self.conn.close()


class WorkerPool:
    """`workers` supervised processes running fn(task) (module docstring)."""

    def __init__(self, workers: int, fn: Callable[[Any], Any], *, init: Callable[..., None] | None = None,
                 init_args: tuple = (), deadline_s: float = 600.0, start_timeout_s: float = 600.0) -> None:
        """Start the workers, each set up by init(*init_args) (WorkerStartError when one cannot be); a task may
        take `deadline_s`, a worker's setup `start_timeout_s` (loading a model, say)."""
        if workers < 1 or deadline_s <= 0:
            raise ValueError("a worker pool needs at least one worker and a positive deadline")
        self.ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
        self.fn, self.init, self.init_args, self.deadline_s = fn, init, init_args, deadline_s
        self.start_timeout_s = start_timeout_s
        self.workers: list[_Worker] = []
        # run()'s tasks: those still to hand out, those a failed worker held after its own (handed out first), one
        # too large to be held next by a busy worker (to the next free one), and whether the first have run out
        self._queue: Iterator[Any] = iter(())
        self._again: deque[Any] = deque()
        self._held: tuple[Any, bytes] | None = None
        self._exhausted = True
        try:  # all started before any is waited for: they set up side by side
            for _ in range(workers):
                self.workers.append(_Worker(self.ctx, self.fn, self.init, self.init_args))
            until = time.monotonic() + start_timeout_s
            for w in self.workers:
                w.wait_ready(until, start_timeout_s)
        except WorkerStartError:
            self.close()
            raise

    def _spawn(self) -> _Worker:
        """A fresh worker in place of one that died or overran, set up before it is given a task."""
        w = _Worker(self.ctx, self.fn, self.init, self.init_args)
        w.wait_ready(time.monotonic() + self.start_timeout_s, self.start_timeout_s)
        return w

    def run(self, tasks: Iterable[Any]) -> Iterator[tuple[Any, Any, str | None]]:
        """(task, fn(task), None) for each task as it finishes, or (task, None, reason) for one whose worker
        died or overran; the workers stay up for the next call. Each worker holds its next task while it works
        (PREFETCH), and a worker that finished gets another before the results are handed out: it works while
        the caller deals with them (the batch runner writes each page's output)."""
        for finished in self.rounds(tasks):
            yield from finished

    def rounds(self, tasks: Iterable[Any], tick_s: float | None = None) -> Iterator[list[tuple[Any, Any, str | None]]]:
        """run's results, a list of those that finished together at a time; with `tick_s`, an empty list too
        when that long passed without any (the caller looks at the time: a task stuck past its own limit)."""
        self._queue, self._again, self._held, self._exhausted = iter(tasks), deque(), None, False
        self._feed()
        while True:
            busy = [w for w in self.workers if w.busy]
            if not busy:
                return
            timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            ready = wait([w.conn for w in busy], timeout=timeout if tick_s is None else min(timeout, tick_s))
            finished = []
            for i, w in enumerate(self.workers):
                if w.busy:
                    finished += self._collect(i, w, ready)
            self._feed()
            if finished or tick_s is not None:
                yield finished

    def _next(self) -> tuple[Any, bytes] | None:
        """The next task to hand out with its pickled form (a task given back by a failed worker first), or
        None when there are no more."""
        if self._held is not None:
            held, self._held = self._held, None
            return held
        if self._again:
            task = self._again.popleft()
        elif self._exhausted:
            return None
        else:
            task = next(self._queue, _END)
            if task is _END:
                self._exhausted = True
                return None
        return task, bytes(ForkingPickler.dumps(task))

    def _feed(self) -> None:
        """The next task to each idle worker (a worker that died while idle replaced first: nothing of ours was
        lost), then one more to each worker that holds fewer than PREFETCH (a small one: PREFETCH_BYTES)."""
        for i, w in enumerate(self.workers):
            if not w.busy and not w.proc.is_alive():
                w.stop()
                self.workers[i] = self._spawn()
        for held in range(PREFETCH):
            for w in self.workers:
                if len(w.tasks) != held:
                    continue
                nxt = self._next()
                if nxt is None:
                    return
                if held and len(nxt[1]) > PREFETCH_BYTES:  # for the next worker that is free
                    self._held = nxt
                    return
                w.send(nxt[0], nxt[1], self.deadline_s)

    def _collect(self, i: int, w: _Worker, ready: list[Any]) -> list[tuple[Any, Any, str | None]]:
        """The answers worker i has sent, or its task failed when it died or overran (the worker replaced, the
        tasks it held after that one given to the next workers free)."""
        out: list[tuple[Any, Any, str | None]] = []
        if w.conn in ready:
            try:
                while w.busy:
                    result = w.conn.recv()
                    out.append((w.answered(self.deadline_s), result, None))
                    if not w.conn.poll():
                        return out
            except (EOFError, OSError):
                failure = "worker-died: the worker process exited on this page (a crash inside C code, or killed)"
            else:
                return out
        elif time.monotonic() >= w.deadline:
            failure = f"timeout: no result within {self.deadline_s:g} s (the worker was killed)"
        else:
            return out
        task = w.tasks.popleft()
        self._again.extendleft(reversed(w.tasks))  # not started: done by another worker, in their order
        w.stop()
        self.workers[i] = self._spawn()
        return [*out, (task, None, failure)]

    def close(self) -> None:
        """Stop every worker (all killed first: they exit at once, not one after the other)."""
        for w in self.workers:
            w.proc.kill()
        for w in self.workers:
            w.stop()


_END = object()
