"""Where an audit's reads run: this process (asyncio), a ``concurrent.futures`` executor, or Dask.

Results come in listing order, at most ``concurrency`` personas held at once. Executors and Dask
get batches, two per worker slot; a batch is the unit of result (Dask retries it whole). A failure
is the persona's result (``error``); a folder holding no bootstrap file is no persona (``None``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import os
import pickle
from collections import deque
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from functools import partial
from typing import Any, TypeVar

from toolnexus.composer.rules import SoulReport
from toolnexus.fleet.listing import Candidate, Listing, Target
from toolnexus.fleet.results import PersonaAudit
from toolnexus.soul.compose import inspect_source, inspect_source_async

__all__ = ["BATCH_RETRIES", "batch_plan", "check_batch", "in_process", "on_executor", "refuse_fork"]

#: How often Dask re-runs a batch that raised or whose worker died.
BATCH_RETRIES = 2

T = TypeVar("T")


def _result(target: Target, candidate: Candidate, report: SoulReport) -> PersonaAudit | None:
    path, always = candidate
    if not (always or target.profile or report.found) and all(f.status == "absent" for f in report.files):
        return None
    tokens = target.budget.count_tokens(report.soul) if target.budget is not None else None
    return PersonaAudit(target.location(path), report, None, tokens)


def _check(target: Target, candidate: Candidate) -> PersonaAudit | None:
    try:
        report = inspect_source(target.source(candidate[0]), budget=target.budget, names=target.names)
    except Exception as error:
        return PersonaAudit(target.location(candidate[0]), error=error)
    return _result(target, candidate, report)


async def _check_async(target: Target, candidate: Candidate) -> PersonaAudit | None:
    try:
        source = target.source(candidate[0])
        report = await inspect_source_async(source, budget=target.budget, names=target.names)
    except Exception as error:
        return PersonaAudit(target.location(candidate[0]), error=error)
    return _result(target, candidate, report)


async def _gather(target: Target, candidates: Sequence[Candidate]) -> list[PersonaAudit | None]:
    return list(await asyncio.gather(*(_check_async(target, candidate) for candidate in candidates)))


def check_batch(target: Target, candidates: Sequence[Candidate]) -> list[PersonaAudit | None]:
    """A worker's unit: local personas in order, remote ones all in flight; an error that does not
    pickle becomes an :class:`OSError` naming its type, so a worker can always send its results."""
    if target.local:
        results = [_check(target, candidate) for candidate in candidates]
    else:
        results = asyncio.run(_gather(target, candidates))
    return [_picklable(result) for result in results]


def _picklable(result: PersonaAudit | None) -> PersonaAudit | None:
    if result is None or result.error is None:
        return result
    try:
        pickle.dumps(result.error)
    except Exception:
        error = OSError(f"{type(result.error).__name__}: {result.error}")
        return PersonaAudit(result.location, error=error)
    return result


def in_process(listing: Listing, concurrency: int) -> Generator[PersonaAudit, None, None]:
    if listing.target.local:
        results: Iterator[PersonaAudit | None] = (
            _check(listing.target, candidate) for page in listing.pages for candidate in page
        )
    else:
        results = _drive(_windowed(listing, concurrency))
    yield from (result for result in results if result is not None)


async def _windowed(listing: Listing, concurrency: int) -> AsyncIterator[PersonaAudit | None]:
    """Start reads in listing order, ``concurrency`` at a time; yield each in order when done."""
    window: deque[asyncio.Task[PersonaAudit | None]] = deque()
    try:
        while (page := await asyncio.to_thread(next, listing.pages, None)) is not None:
            for candidate in page:
                if len(window) >= concurrency:
                    yield await window.popleft()
                window.append(asyncio.ensure_future(_check_async(listing.target, candidate)))
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
    for candidate in (candidate for page in pages for candidate in page):
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
        results = [PersonaAudit(listing.target.location(path), error=error) for path, _ in batch]
    yield from (result for result in results if result is not None)
