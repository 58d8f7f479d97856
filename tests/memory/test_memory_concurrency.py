"""No lost updates: many writers appending to one home at once, on every backend.

Each test records its figures (writers, appends, notes found, time, and on S3 the conditional
PUTs and conflicts); the run prints them at the end. The default sizes keep the suite fast;
``pytest --stress`` runs the large ones (8 writers x 50 appends: on S3 some 1800 conditional
PUTs, over a minute). The deterministic interleavings (a writer slipped in between a read and a
write) are in tests/memory/test_memory_atomic.py; these tests add real contention on top.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.homes import Home, make_home
from tests.support.memory_workers import append_notes
from tests.support.store_workers import writer_context, writer_process
from toolnexus.agents import MemoryTool
from toolnexus.stores.fsspec import S3Store


@dataclass(frozen=True)
class Sizes:
    writers: int
    appends: int
    processes: int


DEFAULT, STRESS = Sizes(writers=4, appends=12, processes=3), Sizes(writers=8, appends=50, processes=4)


@pytest.fixture
def sizes(stress: bool) -> Sizes:
    return STRESS if stress else DEFAULT


def _expected(writers: int, appends: int) -> list[str]:
    return sorted(f"note {writer}-{index}" for writer in range(writers) for index in range(appends))


def _check(
    home: Home, label: str, started: float, *, writers: int, appends: int, record: Any, extra: str = ""
) -> None:
    notes = (home.memory() or b"").decode().splitlines()
    counts = collections.Counter(notes)
    report = (
        f"\n[memory concurrency] {label}: {writers} writers x {appends} appends -> {len(notes)} notes found, "
        f"{len(counts)} distinct, {sum(1 for c in counts.values() if c > 1)} duplicated, "
        f"{time.perf_counter() - started:.1f} s{extra}"
    )
    record("figures", report.strip())  # printed at the end of the run by conftest.py, also under xdist
    assert sorted(notes) == _expected(writers, appends), report


def _run_threads(tools: Callable[[int], MemoryTool], sizes: Sizes) -> float:
    start = threading.Barrier(sizes.writers)
    failures: list[BaseException] = []

    def write(writer: int) -> None:
        tool = tools(writer)
        start.wait()
        try:
            for index in range(sizes.appends):
                reply = tool.tool(command="append", content=f"note {writer}-{index}")
                assert reply.startswith("ok:"), reply
        except BaseException as error:  # surfaced below, with the thread's own traceback
            failures.append(error)

    started = time.perf_counter()
    threads = [threading.Thread(target=write, args=(writer,)) for writer in range(sizes.writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return started


@pytest.mark.parametrize("backend", ["local", "memory"])
def test_threads_on_one_home(
    request: pytest.FixtureRequest, backend: str, record_property: Any, sizes: Sizes
) -> None:
    home = make_home(backend, request)
    started = _run_threads(lambda writer: home.tool(), sizes)  # a tool per writer, like separate agents
    _check(
        home,
        f"{backend}, threads",
        started,
        writers=sizes.writers,
        appends=sizes.appends,
        record=record_property,
    )


@pytest.mark.slow  # starts processes
def test_processes_on_one_local_home(
    request: pytest.FixtureRequest, record_property: Any, sizes: Sizes
) -> None:
    home = make_home("local", request)
    start = writer_context().Barrier(sizes.processes)
    processes = [
        writer_process(append_notes, home.location, writer, sizes.appends, start)
        for writer in range(sizes.processes)
    ]
    for process in processes:
        process.start()
    started = time.perf_counter()
    for process in processes:
        process.join(timeout=300)  # a hang guard
    assert [process.exitcode for process in processes] == [0] * sizes.processes
    _check(
        home,
        "local, writer processes",
        started,
        writers=sizes.processes,
        appends=sizes.appends,
        record=record_property,
    )


@pytest.mark.s3
@pytest.mark.timeout(900)  # a hang guard: --stress sizes take minutes on a loaded machine
@pytest.mark.usefixtures("linearizable_moto")
@pytest.mark.parametrize("sharing", ["a tool per writer", "one shared tool"])
def test_threads_on_one_s3_home(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    record_property: Any,
    sharing: str,
    sizes: Sizes,
) -> None:
    home = make_home("s3", request)
    puts = collections.Counter[bool]()
    original = S3Store.put_if
    streak = threading.local()  # conflicts in a row, per writer thread
    worst = [0]

    def counted(self: S3Store, data: bytes, etag: str | None, lineage: str | None = None) -> bool:
        written = original(self, data, etag, lineage)
        puts[written] += 1
        streak.n = 0 if written else getattr(streak, "n", 0) + 1
        worst[0] = max(worst[0], streak.n)
        return written

    monkeypatch.setattr(S3Store, "put_if", counted)
    shared = home.tool()
    # With its own tool (and s3fs instance) each writer is a separate client: only the CAS protects.
    started = _run_threads(lambda writer: home.tool() if sharing == "a tool per writer" else shared, sizes)
    extra = (
        f"; {puts[True] + puts[False]} conditional PUTs, {puts[False]} conflicts retried, "
        f"longest run of conflicts for one edit {worst[0]}"
    )
    _check(
        home,
        f"s3 (moto), threads, {sharing}",
        started,
        writers=sizes.writers,
        appends=sizes.appends,
        record=record_property,
        extra=extra,
    )
