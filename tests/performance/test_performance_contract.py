"""The performance contract, asserted deterministically: requests, ranges, bytes, memory.

Wall-clock times are for ``python -m benchmarks``; here a request-counting proxy sits between s3fs
and moto, and only counts, headers, bytes and concurrency are asserted.
"""

from __future__ import annotations

import asyncio
import io
import os
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import pytest

from tests.support import MotoServer, S3Proxy, s3_storage_options
from toolnexus.agents import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, compose_soul, compose_soul_async
from toolnexus.sources import resolve

CAP = MAX_BOOTSTRAP_FILE_BYTES
KIB, MIB = 1024, 1024 * 1024
RANGE = f"bytes=0-{CAP}"
PERSONA = {name: f"# {name}\n\nText of {name}.\n".encode() * 40 for name in BOOTSTRAP_ORDER[:6]}


def listings(proxy: S3Proxy) -> int:
    return sum(1 for r in proxy.requests if r.method == "GET" and "list-type" in r.query)


def test_s3_home_is_one_ranged_get_per_name_all_in_flight_together(
    proxy: S3Proxy, engine_via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({f"aster/{n}": data for n, data in PERSONA.items()})
    with proxy.gathering(7):  # held in the proxy until all 7 are in flight (if they ever are)
        _, found = compose_soul(f"s3://{name}/aster", **engine_via_proxy)
    assert found == list(BOOTSTRAP_ORDER[:6])
    requests = proxy.requests
    assert len(requests) == 7
    assert {r.method for r in requests} == {"GET"}
    assert listings(proxy) == 0
    assert {r.range_header for r in requests} == {RANGE}
    assert sorted(r.path.rsplit("/", 1)[-1] for r in requests) == sorted(BOOTSTRAP_ORDER)
    assert proxy.peak_in_flight == 7


def test_s3_home_without_bootstrap_files_costs_one_listing_more(
    proxy: S3Proxy, engine_via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({"quiet/notes.txt": b"not a bootstrap file"})
    assert compose_soul(f"s3://{name}/quiet", **engine_via_proxy) == ("", [])
    assert proxy.count() == 8
    assert proxy.count("HEAD") == 0
    assert listings(proxy) == 1
    assert {r.range_header for r in proxy.requests if "list-type" not in r.query} == {RANGE}


def test_s3_large_object_transfers_at_most_cap_plus_slack(
    proxy: S3Proxy, engine_via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({"big/AGENTS.md": b"x" * (8 * MIB)})
    soul, found = compose_soul(f"s3://{name}/big", **engine_via_proxy)
    assert found == ["AGENTS.md"]
    assert soul.endswith("[truncated: exceeds 2 MB bootstrap cap]")
    assert proxy.bytes_sent <= CAP + 256 * KIB


def _bundle(files: dict[str, bytes], asset: int) -> bytes:
    buffer = io.BytesIO()
    names = sorted(files)
    with zipfile.ZipFile(buffer, "w") as archive:
        for n in names[:3]:
            archive.writestr(f"aster/{n}", files[n], zipfile.ZIP_DEFLATED)
        archive.writestr("aster/assets/voice.bin", os.urandom(asset), zipfile.ZIP_STORED)
        for n in names[3:]:
            archive.writestr(f"aster/{n}", files[n], zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def test_s3_bundle_fetches_directory_and_members_not_the_asset(
    proxy: S3Proxy, engine_via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    data = _bundle(PERSONA, 12 * MIB)
    put({"aster.zip": data})
    _, found = compose_soul(f"s3://{name}/aster.zip", **engine_via_proxy)
    assert found == list(BOOTSTRAP_ORDER[:6])
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        directory = len(data) - archive.start_dir
        members = sum(
            30 + len(i.filename) + len(i.extra) + i.compress_size
            for i in archive.infolist()
            if not i.filename.startswith("aster/assets/")
        )
    assert proxy.bytes_sent <= directory + members + 256 * KIB
    assert proxy.count("HEAD") <= 1  # opening a remote file needs its size; looked up once
    assert listings(proxy) == 0


def test_s3_bundle_replaced_by_another_writer_is_seen_on_the_next_call(
    via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    fs = fsspec.filesystem("s3", **via_proxy)  # one instance: its caches persist between calls
    put({"aster.zip": _bundle(PERSONA, 64 * KIB)})
    before, _ = compose_soul(f"{name}/aster.zip", fs=fs)
    fs.ls(name)  # let s3fs cache a listing, with the old size
    put({"aster.zip": _bundle({**PERSONA, "SOUL.md": b"A new soul."}, 1 * KIB)})
    after, _ = compose_soul(f"{name}/aster.zip", fs=fs)
    assert "A new soul." in after
    assert "A new soul." not in before


def test_huge_sparse_local_file_reads_at_most_cap_plus_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (tmp_path / "AGENTS.md").open("wb") as out:
        out.truncate(1024 * MIB)  # a 1 GiB hole
    reads: list[tuple[int, int]] = []
    real_read = os.read

    def spy(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        reads.append((n, len(data)))
        return data

    monkeypatch.setattr(os, "read", spy)
    _, found = compose_soul(tmp_path)
    assert found == ["AGENTS.md"]
    assert reads == [(CAP + 1, CAP + 1)]


def test_zip_bomb_member_inflates_no_further_than_the_cap(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("SOUL.md", b"small")
        with archive.open("AGENTS.md", "w", force_zip64=True) as member:
            block = b" " * MIB
            for _ in range(64):  # 32 times the cap: enough to show, half the cost of 128
                member.write(block)
    assert bomb.stat().st_size < MIB
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        reading = resolve(str(bomb)).read_entries(BOOTSTRAP_ORDER, CAP)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    data = reading.entries["AGENTS.md"].data
    assert data is not None
    assert len(data) == CAP + 1
    assert peak < 16 * MIB  # the member inflates to 64 MiB


def test_async_fleet_on_s3_runs_on_the_filesystems_loop_all_requests_together(
    proxy: S3Proxy, bucket: tuple[str, Callable[..., None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    name, put = bucket
    put({f"p{i}/{n}": data for i in range(5) for n, data in PERSONA.items()})
    options = s3_storage_options(
        proxy.endpoint_url, skip_instance_cache=True, config_kwargs={"max_pool_connections": 100}
    )
    fs = fsspec.filesystem("s3", **options)
    compose_soul(f"{name}/p0", fs=fs)  # warm the session outside the measured gather

    def no_threads(*args: object, **kwargs: object) -> None:
        raise AssertionError("compose_soul_async used a worker thread on an async filesystem")

    async def fleet() -> list[tuple[str, list[str]]]:
        monkeypatch.setattr(asyncio.get_running_loop(), "run_in_executor", no_threads)
        monkeypatch.setattr(asyncio, "to_thread", no_threads)
        return await asyncio.gather(*(compose_soul_async(f"{name}/p{i}", fs=fs) for i in range(5)))

    proxy.reset()
    with proxy.gathering(35):  # held in the proxy until all 35 are in flight (if they ever are)
        results = asyncio.run(fleet())
    assert [found for _, found in results] == [list(BOOTSTRAP_ORDER[:6])] * 5
    assert proxy.count("GET") == proxy.count() == 35
    assert proxy.peak_in_flight == 35


def test_async_on_an_asynchronous_filesystem_awaits_it_directly(
    moto_server: MotoServer, bucket: tuple[str, Callable[..., None]]
) -> None:
    import s3fs  # noqa: PLC0415

    name, put = bucket
    put({f"aster/{n}": data for n, data in PERSONA.items()})

    async def compose() -> tuple[str, list[str]]:
        options = s3_storage_options(moto_server.endpoint_url, skip_instance_cache=True)
        fs = s3fs.S3FileSystem(asynchronous=True, **options)
        session = await fs.set_session()
        try:
            return await compose_soul_async(f"{name}/aster", fs=fs)
        finally:
            await session.close()

    soul, found = asyncio.run(compose())
    assert found == list(BOOTSTRAP_ORDER[:6])
    options = s3_storage_options(moto_server.endpoint_url)
    assert (soul, found) == compose_soul(f"s3://{name}/aster", storage_options=options)
