"""Where an audit's reads run: this process (asyncio), a ``concurrent.futures`` executor, or Dask.

Results come in listing order, at most ``concurrency`` personas held at once. Executors and Dask
get batches, two per worker slot; a batch is the unit of result (Dask retries it whole).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import os
from collections import deque
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from functools import partial
from typing import Any, TypeVar

from toolnexus.fleet.check import check, check_async, check_batch, failed
from toolnexus.fleet.listing import Candidate, Listing, Target
from toolnexus.fleet.results import PersonaAudit

__all__ = ["BATCH_RETRIES", "batch_plan", "in_process", "on_executor", "refuse_fork"]

#: How often Dask re-runs a batch that raised or whose worker died.
BATCH_RETRIES = 2

T = TypeVar("T")


def in_process(listing: Listing, concurrency: int) -> Generator[PersonaAudit, None, None]:
    if listing.target.local:
        for page in listing.pages:
            for candidate in page:
                result = check(listing.target, candidate)
                if result is not None:
                    yield result
        return
    for result in _drive(_windowed(listing, concurrency)):
        if result is not None:
            yield result


async def _windowed(listing: Listing, concurrency: int) -> AsyncIterator[PersonaAudit | None]:
    """Start reads in listing order, ``concurrency`` at a time; yield each in order when done."""
    window: deque[asyncio.Task[PersonaAudit | None]] = deque()
    try:
        while (page := await asyncio.to_thread(next, listing.pages, None)) is not None:
            for candidate in page:
                if len(window) >= concurrency:
                    yield await window.popleft()
                window.append(asyncio.ensure_future(check_async(listing.target, candidate)))
        while window:
            yield await window.popleft()
    finally:  # the caller stopped early: nothing keeps running behind its back
        for task in window:
            task.cancel()
        await asyncio.gather(*window, return_exceptions=True)


def _drive(results: AsyncIterator[T]) -> Iterator[T]:
    """An async iterator as a plain one, on a private loop stepped once per item (paused between
    items: the back-pressure); stepped in a helper thread if this thread's loop runs (notebooks)."""
    loop = asyncio.new_event_loop()
    helper: concurrent.futures.ThreadPoolExecutor | None = None
    try:
        asyncio.get_running_loop()
        helper = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="toolnexus-audit")
    except RuntimeError:
        pass

    def step(awaitable: Any) -> Any:
        if helper is None:
            return loop.run_until_complete(awaitable)
        return helper.submit(loop.run_until_complete, awaitable).result()

    try:
        while True:
            try:
                item: T = step(anext(results))
            except StopAsyncIteration:
                return
            yield item
    finally:
        try:
            step(results.aclose())  # type: ignore[attr-defined]
            step(loop.shutdown_default_executor())
        finally:
            loop.close()
            if helper is not None:
                helper.shutdown()


def batch_plan(concurrency: int, slots: int) -> tuple[int, int]:
    """``(batch size, batches in flight)``: two batches per worker slot, ``concurrency`` in all."""
    size = max(1, concurrency // (2 * max(1, slots)))
    return size, max(1, concurrency // size)


def _batches(pages: Iterator[list[Candidate]], size: int) -> Iterator[list[Candidate]]:
    batch: list[Candidate] = []
    for page in pages:
        for candidate in page:
            batch.append(candidate)
            if len(batch) == size:
                yield batch
                batch = []
    if batch:
        yield batch


def _submitter(executor: Any) -> tuple[Callable[..., Any], int]:
    """``(submit, worker slots)`` for a ``concurrent.futures.Executor`` or a Dask client."""
    if isinstance(executor, concurrent.futures.Executor):
        slots = getattr(executor, "_max_workers", None) or os.cpu_count() or 1
        return executor.submit, int(slots)
    if type(executor).__module__.split(".")[0] == "distributed" and hasattr(executor, "nthreads"):
        slots = sum(executor.nthreads().values()) or 1
        return partial(executor.submit, retries=BATCH_RETRIES, pure=False), slots
    raise TypeError(
        f"executor must be a concurrent.futures.Executor or a dask.distributed.Client, "
        f"not {type(executor).__name__}"
    )


def refuse_fork(executor: Any, target: Target) -> None:
    """A forking pool for a client that does not survive ``fork()`` is refused now, not hung."""
    if not isinstance(executor, concurrent.futures.ProcessPoolExecutor) or target.fork_safe:
        return
    context = getattr(executor, "_mp_context", None) or multiprocessing.get_context()
    if context.get_start_method() == "fork":
        raise ValueError(
            "executor: the client reading these personas does not survive fork(), and a forked "
            "worker would hang; start the workers another way: ProcessPoolExecutor("
            "mp_context=multiprocessing.get_context('forkserver')), or 'spawn'"
        )


def on_executor(executor: Any, concurrency: int) -> Callable[[Listing], Generator[PersonaAudit, None, None]]:
    """How to audit a listing on ``executor`` (checked now, before anything is listed)."""
    submit, slots = _submitter(executor)
    size, limit = batch_plan(concurrency, slots)

    def run(listing: Listing) -> Generator[PersonaAudit, None, None]:
        window: deque[tuple[list[Candidate], Any]] = deque()
        try:
            for batch in _batches(listing.pages, size):
                if len(window) >= limit:
                    yield from _collect(listing, *window.popleft())
                window.append((batch, submit(check_batch, listing.target, batch)))
            while window:
                yield from _collect(listing, *window.popleft())
        finally:
            for _, future in window:
                future.cancel()

    return run


def _collect(listing: Listing, batch: list[Candidate], future: Any) -> Generator[PersonaAudit, None, None]:
    try:
        results: list[PersonaAudit | None] = future.result()
    except Exception as error:  # the batch failed for good (a worker died past its retries, …)
        results = [failed(listing.target, path, error) for path, _ in batch]
    yield from (result for result in results if result is not None)
