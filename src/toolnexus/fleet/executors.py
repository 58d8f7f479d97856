"""An audit's plumbing: which personas live under a prefix, and where their reads run. A child
folder is a candidate until its read finds no bootstrap file (listing costs only the prefix's pages);
files are personas by name only. Executors and Dask get batches, two per worker slot: a batch is the
unit of result (Dask retries it whole), so a persona is never reported twice."""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import multiprocessing
import os
import pickle
from collections import deque
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, TypeVar

from toolnexus.composer.budget import Budget
from toolnexus.composer.rules import BOOTSTRAP_ORDER, SoulReport
from toolnexus.fleet.results import PersonaAudit
from toolnexus.soul.compose import inspect_source, inspect_source_async
from toolnexus.sources import Pages, SourceBase, kind_by_name, resolve

#: How often Dask re-runs a batch that raised or whose worker died.
BATCH_RETRIES = 2

T = TypeVar("T")

#: ``(path, always)``: where a persona may be, and whether it is one even when nothing is found
#: there (a bundle, the prefix itself) rather than a folder that turned out to hold no bootstrap file.
Candidate = tuple[str, bool]


@dataclass(frozen=True)
class Target:
    """How a listed path becomes a source, here or on a worker (so it pickles). ``fs`` is the
    listed source's own (``None``: local disk); ``home`` the prefix's source when it is the one
    persona (a bundle)."""

    fs: Any = None
    follow_external_symlinks: bool = False
    budget: Budget | None = None
    names: tuple[str, ...] = BOOTSTRAP_ORDER
    profile: str | None = None
    #: Whether a worker forked from this process can read the personas (obstore's runtime cannot).
    fork_safe: bool = True
    home: SourceBase | None = None
    #: Whether each persona's Agent Skills are read too (their warnings: the ``skills`` issue).
    skills: bool = False

    @property
    def local(self) -> bool:
        """Local disk: read in order, in the calling thread (syscalls, no network to wait on)."""
        return getattr(self.home, "fs", self.fs) is None

    def source(self, path: str) -> SourceBase:
        if self.home is not None:
            return self.home
        return resolve(path, fs=self.fs, follow_external_symlinks=self.follow_external_symlinks)

    def location(self, path: str) -> str:
        """The persona's name in results: its path, as a URL on a remote filesystem."""
        return str(self.fs.unstrip_protocol(path)) if self.fs is not None else path


@dataclass
class Listing:
    """How the prefix's paths are read, and its candidates page by page."""

    target: Target
    pages: Iterator[list[Candidate]]


def prefix_path(prefix: Any, fs: Any) -> tuple[Any, str]:
    """``(fs, path)`` of a prefix: a path, a URL, a path on ``fs``, or a UPath (or a source with
    ``fs`` and ``path``), which carries its filesystem and options."""
    if fs is None and not isinstance(prefix, str | os.PathLike) and hasattr(prefix, "fs"):
        fs, prefix = prefix.fs, str(prefix.path)
    path = os.fspath(prefix) if isinstance(prefix, os.PathLike) else prefix
    if not isinstance(path, str):
        raise TypeError(f"expected a prefix path, URL or UPath, not {type(prefix).__name__}")
    if not path:
        raise ValueError("empty prefix: name a folder ('.' for the current one) or a URL")
    return fs, path


def list_prefix(source: SourceBase, path: str, target: Target) -> Listing:
    """Look the prefix up now (a missing one is a :class:`FileNotFoundError` naming it) and list
    it lazily; ``target`` says how its personas are fitted, the listed source how they are read."""
    fs = getattr(source, "fs", None)
    fork_safe = getattr(source, "fork_safe", True) and getattr(fs, "fork_safe", True)
    target = replace(target, fork_safe=bool(fork_safe))
    pages = source.children()
    if pages is None:  # a bundle (or a chained URL naming one): the prefix is the one persona
        return Listing(replace(target, home=source), iter([[(path, True)]]))
    return Listing(replace(target, fs=fs), _candidates(pages))


def _candidates(pages: Pages) -> Iterator[list[Candidate]]:
    """Children → candidates, page by page, in listing order; the prefix itself counts once,
    where its first bootstrap file is listed (its path is that file's folder)."""
    home_seen = False
    for page in pages:
        candidates: list[Candidate] = []
        for child in page:
            if child.folder:
                candidates.append((child.path, False))
            elif child.name in BOOTSTRAP_ORDER:
                if not home_seen:
                    home_seen = True
                    candidates.append((child.path[: -len(child.name) - 1], True))
            elif kind_by_name(child.name) is not None:
                candidates.append((child.path, True))
        yield candidates


def _result(target: Target, candidate: Candidate, report: SoulReport) -> PersonaAudit | None:
    path, always = candidate
    if not (always or target.profile or report.found) and all(f.status == "absent" for f in report.files):
        return None
    tokens = target.budget.count_tokens(report.soul) if target.budget is not None else None
    return PersonaAudit(target.location(path), report, None, tokens)


def _check(target: Target, candidate: Candidate) -> PersonaAudit | None:
    try:
        report = inspect_source(target.source(candidate[0]), target.budget, target.names, target.skills)
    except Exception as error:
        return PersonaAudit(target.location(candidate[0]), error=error)
    return _result(target, candidate, report)


async def _check_async(target: Target, candidate: Candidate) -> PersonaAudit | None:
    try:
        source = target.source(candidate[0])
        report = await inspect_source_async(source, target.budget, target.names, target.skills)
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
    target = listing.target
    if target.local:
        for candidate in itertools.chain.from_iterable(listing.pages):
            if (result := _check(target, candidate)) is not None:
                yield result
        return
    yield from (result for result in _drive(_windowed(listing, concurrency)) if result is not None)


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


def _batches(pages: Iterator[list[Candidate]], size: int) -> Iterator[list[Candidate]]:
    candidates = itertools.chain.from_iterable(pages)
    while batch := list(itertools.islice(candidates, size)):
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
    """How to audit a listing: here (``None``) or on ``executor`` (checked now, before any listing)."""
    if executor is None:
        return partial(in_process, concurrency=concurrency)
    submit, slots = _submitter(executor)
    size = max(1, concurrency // (2 * max(1, slots)))  # two batches per worker slot
    limit = max(1, concurrency // size)  # batches in flight: ``concurrency`` personas in all

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
