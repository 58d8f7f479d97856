"""compose_soul and compose_soul_async from many threads and event loops at once: every call gives
the same soul, as a fresh ``found`` list, on every backend."""

from __future__ import annotations

import asyncio
import threading
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import fsspec
import pytest
import s3fs

from tests.support import MotoServer, make_bucket, put_objects, s3_storage_options
from toolnexus.agents import BOOTSTRAP_ORDER, compose_soul, compose_soul_async

PERSONA = {
    "AGENTS.md": b"# Operating instructions\r\nBe brief.\r\n" * 20,
    "SOUL.md": "You are Aster, a careful navigator. ✨\n".encode() * 40,
    "IDENTITY.md": b"\xef\xbb\xbfName: Aster\nPronouns: she/her\n",
    "USER.md": b"Mira prefers tea.\n" * 100,
    "TOOLS.md": b"",
    "HEARTBEAT.md": b"Every morning: check the calendar.\n   \n",
    "MEMORY.md": b"- 2026-05-01: Mira moved to Lisbon.\n" * 30,
}
THREADS = 8
CALLS_PER_THREAD = 200

Compose = Callable[[], tuple[str, list[str]]]


def hammer(compose: Compose, threads: int, calls: int) -> list[list[str]]:
    """Run ``compose`` ``calls`` times in each of ``threads`` threads, all released together.

    Returns every ``found`` list; asserts every result equals the first sequential one.
    """
    expected = compose()
    barrier = threading.Barrier(threads)

    def worker() -> list[list[str]]:
        barrier.wait()
        found_lists = []
        for _ in range(calls):
            result = compose()
            assert result == expected
            found_lists.append(result[1])
        return found_lists

    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(worker) for _ in range(threads)]
        return [found for future in futures for found in future.result()]


@pytest.fixture(scope="module")
def local_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("persona") / "aster"
    home.mkdir()
    for name, data in PERSONA.items():
        (home / name).write_bytes(data)
    return home


@pytest.fixture(scope="module")
def bundle(local_home: Path) -> Path:
    path = local_home.parent / "aster.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in PERSONA:
            archive.write(local_home / name, f"aster/{name}")
    return path


@pytest.fixture(scope="module")
def memory_fs() -> Any:
    fs = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)
    for name, data in PERSONA.items():
        fs.pipe_file(f"/aster/{name}", data)
    return fs


@pytest.fixture(scope="module")
def s3_home(moto_server: MotoServer) -> str:
    make_bucket(moto_server.endpoint_url, "concurrency")
    put_objects(moto_server.endpoint_url, "concurrency", {f"aster/{n}": d for n, d in PERSONA.items()})
    return "s3://concurrency/aster"


@pytest.fixture(scope="module")
def s3_options(moto_server: MotoServer) -> dict[str, Any]:
    """Instance-cached options (one filesystem per thread, as fsspec caches them), big pool."""
    return s3_storage_options(moto_server.endpoint_url, config_kwargs={"max_pool_connections": 64})


@pytest.fixture(scope="module")
def expected(local_home: Path) -> tuple[str, list[str]]:
    soul, found = compose_soul(local_home)
    assert found == list(BOOTSTRAP_ORDER)
    return soul, found


# --- 8 threads x 200 compositions ---------------------------------------------------------------


@pytest.mark.parametrize("backend", ["local", "bundle", "memory"])
def test_eight_threads_times_two_hundred_compositions_are_identical(
    backend: str,
    local_home: Path,
    bundle: Path,
    memory_fs: Any,
    expected: tuple[str, list[str]],
) -> None:
    composers: dict[str, Compose] = {
        "local": lambda: compose_soul(local_home),
        "bundle": lambda: compose_soul(bundle),
        "memory": lambda: compose_soul("/aster", fs=memory_fs),
    }
    found_lists = hammer(composers[backend], THREADS, CALLS_PER_THREAD)
    assert len(found_lists) == THREADS * CALLS_PER_THREAD
    assert composers[backend]() == expected
    assert len({id(found) for found in found_lists}) == len(found_lists)  # a new list every call


@pytest.mark.parametrize("shared_fs", [True, False], ids=["one-shared-s3fs", "url-per-thread"])
def test_eight_threads_compose_the_same_s3_home(
    s3_home: str, s3_options: dict[str, Any], expected: tuple[str, list[str]], shared_fs: bool
) -> None:
    calls = 5  # 7 GETs each to an in-process moto: enough to overlap, cheap enough to run always
    if shared_fs:
        fs = s3fs.S3FileSystem(**s3_options, skip_instance_cache=True)
        path = s3_home.removeprefix("s3://")
        found_lists = hammer(lambda: compose_soul(path, fs=fs), THREADS, calls)
    else:
        found_lists = hammer(lambda: compose_soul(s3_home, storage_options=s3_options), THREADS, calls)
    assert len(found_lists) == THREADS * calls
    assert compose_soul(s3_home, storage_options=s3_options) == expected


# --- threads and event loops at once ------------------------------------------------------------


@pytest.fixture
def locations(
    local_home: Path, bundle: Path, memory_fs: Any, s3_home: str, s3_options: dict[str, Any]
) -> list[tuple[Any, dict[str, Any]]]:
    """Every backend, as (location, keyword arguments) for compose_soul / compose_soul_async."""
    shared_s3 = s3fs.S3FileSystem(**s3_options, skip_instance_cache=True)
    return [
        (local_home, {}),
        (bundle, {}),
        (f"zip://aster::{bundle}", {}),
        ("/aster", {"fs": memory_fs}),
        (s3_home, {"storage_options": s3_options}),
        (s3_home.removeprefix("s3://"), {"fs": shared_s3}),
    ]


def test_sync_and_async_from_many_threads_and_event_loops_at_once(
    locations: list[tuple[Any, dict[str, Any]]],
    s3_home: str,
    s3_options: dict[str, Any],
    expected: tuple[str, list[str]],
) -> None:
    loops, sync_threads, rounds = 4, 4, 2
    barrier = threading.Barrier(loops + sync_threads)
    results: list[tuple[str, list[str]]] = []
    lock = threading.Lock()

    def record(batch: list[tuple[str, list[str]]]) -> None:
        with lock:
            results.extend(batch)

    async def compose_all() -> None:
        # An asynchronous s3fs bound to this very loop, next to the shared sync-mode one.
        own_s3 = s3fs.S3FileSystem(**s3_options, asynchronous=True, skip_instance_cache=True)
        session = await own_s3.set_session()
        try:
            own = [(s3_home.removeprefix("s3://"), {"fs": own_s3})]
            for _ in range(rounds):
                batch = await asyncio.gather(
                    *(compose_soul_async(where, **kwargs) for where, kwargs in [*locations, *own] * 2)
                )
                record(list(batch))
        finally:
            await session.close()

    def run_loop() -> None:
        barrier.wait()
        asyncio.run(compose_all())

    def run_sync() -> None:
        barrier.wait()
        for _ in range(rounds):
            record([compose_soul(where, **kwargs) for where, kwargs in locations])

    with ThreadPoolExecutor(loops + sync_threads) as pool:
        futures = [pool.submit(run_loop) for _ in range(loops)]
        futures += [pool.submit(run_sync) for _ in range(sync_threads)]
        for future in futures:
            future.result()

    per_loop = rounds * 2 * (len(locations) + 1)
    assert len(results) == loops * per_loop + sync_threads * rounds * len(locations)
    assert all(result == expected for result in results)


def test_many_event_loops_in_turn_reuse_nothing_stale(
    s3_home: str, s3_options: dict[str, Any], expected: tuple[str, list[str]]
) -> None:
    """A fresh asyncio.run per call (what scripts and notebooks do) keeps working on S3."""
    for _ in range(10):
        assert asyncio.run(compose_soul_async(s3_home, storage_options=s3_options)) == expected
