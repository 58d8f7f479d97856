"""SoulCache: revalidates on every call, skips only what provably did not change.

Local reads are counted by spying on ``os.read``; S3 traffic through the counting proxy (exact
requests, conditional headers, body bytes). ``sources.local._now`` is moved forward where a test
needs files old enough for their stat to be trusted (see ``RACY_SECONDS``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import pytest

from tests.support import S3Proxy, Status
from tests.support.files import make_home
from toolnexus.agents import BOOTSTRAP_ORDER, compose_soul, compose_soul_async
from toolnexus.soul.cache import SoulCache
from toolnexus.sources import local as local_source

PERSONA = {name: f"# {name}\n\nText of {name}.\n".encode() * 20 for name in BOOTSTRAP_ORDER[:6]}


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every ``os.read`` made, by size."""
    seen: list[int] = []
    real_read = os.read

    def spy(fd: int, n: int) -> bytes:
        seen.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", spy)
    return seen


@pytest.fixture
def aged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written by the test count as old enough for their stat to be trusted."""
    monkeypatch.setattr(local_source, "_now", lambda: time.time() + 2 * local_source.RACY_SECONDS)


def after_a_timestamp_tick(home: Path) -> None:
    """Wait, on the filesystem itself, until a write gets a later ctime than anything in ``home``.

    With the racy window switched off (``aged``) a change within the same timestamp tick would be
    invisible by design; this makes the change the test makes next land in a later tick.
    """
    newest = max(path.stat().st_ctime_ns for path in [home, *home.iterdir()])
    probe = home.parent / f".tick-{home.name}"
    deadline = time.monotonic() + 10
    while True:
        probe.write_bytes(b"tick")
        if probe.stat().st_ctime_ns > newest:
            break
        assert time.monotonic() < deadline, "the filesystem clock did not advance"
    probe.unlink()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- local -------------------------------------------------------------------------------------


def test_local_cached_soul_is_exactly_compose_soul(tmp_path: Path) -> None:
    home = make_home(tmp_path / "aster", PERSONA)
    (home / "MEMORY.md").mkdir()  # not a regular file: skipped by both
    os.symlink(home / "SOUL.md", home / "IDENTITY.md.link")
    cache = SoulCache()
    assert cache.compose_soul(home) == compose_soul(home)
    assert cache.compose_soul(home) == compose_soul(home)
    assert cache.stats.misses == 1
    assert cache.stats.revalidated == 1


def test_unchanged_local_files_are_not_read_again(
    tmp_path: Path, reads: list[int], aged: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = make_home(tmp_path / "aster", PERSONA)
    cache = SoulCache()
    first = cache.compose_soul(home)
    assert len(reads) == 6
    reads.clear()
    listings: list[object] = []
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda *args: listings.append(args) or real_listdir(*args))
    assert cache.compose_soul(home) == first
    assert reads == []
    assert listings == []  # the folder's unchanged stat proves its listing unchanged


def test_recent_files_are_read_every_call_until_they_age(tmp_path: Path, reads: list[int]) -> None:
    home = make_home(tmp_path / "aster", PERSONA)  # just written: within RACY_SECONDS
    cache = SoulCache()
    cache.compose_soul(home)
    reads.clear()
    cache.compose_soul(home)
    assert len(reads) == 6


def test_same_size_rewrite_within_one_second_is_seen(tmp_path: Path) -> None:
    home = make_home(tmp_path / "aster", {"SOUL.md": b"You are Aster."})
    soul = home / "SOUL.md"
    cache = SoulCache()
    assert cache.compose_soul(home)[0] == "## SOUL.md\n\nYou are Aster."
    before = soul.stat()
    soul.write_bytes(b"You are Birch.")  # same size, same inode
    os.utime(soul, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same mtime
    assert cache.compose_soul(home)[0] == "## SOUL.md\n\nYou are Birch."


@pytest.mark.parametrize("change", ["rewrite", "replace", "add", "remove", "grow"])
def test_every_local_change_is_seen_on_the_next_call(tmp_path: Path, aged: None, change: str) -> None:
    home = make_home(tmp_path / "aster", PERSONA)
    cache = SoulCache()
    cache.compose_soul(home)
    after_a_timestamp_tick(home)
    if change == "rewrite":
        data = (home / "SOUL.md").read_bytes()
        (home / "SOUL.md").write_bytes(data.upper())
    elif change == "replace":
        (home / "new").write_bytes(b"A replaced soul.")
        os.replace(home / "new", home / "SOUL.md")
    elif change == "add":
        (home / "MEMORY.md").write_bytes(b"Remember this.")
    elif change == "remove":
        (home / "SOUL.md").unlink()
    else:
        with (home / "SOUL.md").open("ab") as out:
            out.write(b"\nOne more line.")
    assert cache.compose_soul(home) == compose_soul(home)


def test_local_bundle_revalidates_by_its_stat(tmp_path: Path, reads: list[int], aged: None) -> None:
    from toolnexus.agents import write_bundle  # noqa: PLC0415

    bundle = tmp_path / "aster.zip"
    write_bundle(make_home(tmp_path / "aster", PERSONA), bundle)
    cache = SoulCache()
    assert cache.compose_soul(bundle) == compose_soul(bundle)
    reads.clear()
    cache.compose_soul(bundle)
    assert reads == []
    after_a_timestamp_tick(tmp_path)
    write_bundle(make_home(tmp_path / "birch", {"SOUL.md": b"Birch."}), bundle, force=True)
    assert cache.compose_soul(bundle) == ("## SOUL.md\n\nBirch.", ["SOUL.md"])


def test_max_age_serves_without_any_io_then_revalidates(tmp_path: Path, reads: list[int]) -> None:
    home = make_home(tmp_path / "aster", {"SOUL.md": b"Aster."})
    clock = FakeClock()
    cache = SoulCache(max_age=5, clock=clock)
    cache.compose_soul(home)
    (home / "SOUL.md").write_bytes(b"Birch.")
    reads.clear()
    clock.now += 4.9
    assert cache.compose_soul(home)[0] == "## SOUL.md\n\nAster."  # within max_age: the old soul
    assert reads == []
    clock.now += 0.1
    assert cache.compose_soul(home)[0] == "## SOUL.md\n\nBirch."
    assert cache.stats.fresh_hits == 1


def test_a_removed_home_is_never_served_even_with_stale_if_error(tmp_path: Path) -> None:
    home = make_home(tmp_path / "aster", PERSONA)
    cache = SoulCache(stale_if_error=3600)
    cache.compose_soul(home)
    shutil.rmtree(home)
    with pytest.raises(FileNotFoundError, match="no such persona home"):
        cache.compose_soul(home)
    assert len(cache) == 0


def test_lru_bound_by_personas(tmp_path: Path) -> None:
    homes = [make_home(tmp_path / f"p{i}", {"SOUL.md": f"Persona {i}.".encode()}) for i in range(3)]
    cache = SoulCache(max_personas=2)
    for home in homes:
        cache.compose_soul(home)
    cache.compose_soul(homes[2])
    assert len(cache) == 2
    assert cache.stats.evictions == 1
    cache.compose_soul(homes[0])  # evicted: a miss again
    assert cache.stats.misses == 4


# -- S3 ----------------------------------------------------------------------------------------


@pytest.fixture
def s3(via_proxy: dict[str, Any]) -> Any:
    """One filesystem per test: building one (a botocore session) costs more than the test."""
    return fsspec.filesystem("s3", **via_proxy)


def test_unchanged_s3_persona_costs_seven_conditional_gets_and_no_bodies(
    proxy: S3Proxy, s3: Any, bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({f"aster/{n}": data for n, data in PERSONA.items()})
    home = f"{name}/aster"
    cache = SoulCache()
    first = cache.compose_soul(home, fs=s3)
    assert first == compose_soul(home, fs=s3)
    proxy.reset()
    assert cache.compose_soul(home, fs=s3) == first
    requests = proxy.requests
    assert [r.method for r in requests] == ["GET"] * 7
    statuses = sorted(r.response_status or 0 for r in requests)
    assert statuses == [304] * 6 + [404]  # MEMORY.md is absent: a 404, checked so an add is seen
    assert all(r.headers.get("if-none-match") for r in requests if r.response_status == 304)
    assert sum(r.response_body_bytes for r in requests if r.response_status == 304) == 0
    assert proxy.bytes_sent <= 1024


@pytest.mark.parametrize("change", ["same-size rewrite", "add", "remove"])
def test_every_s3_change_is_seen_on_the_next_call(
    s3: Any, bucket: tuple[str, Callable[..., None]], change: str
) -> None:
    name, put = bucket
    put({f"aster/{n}": data for n, data in PERSONA.items()})
    home = f"{name}/aster"
    cache = SoulCache()
    cache.compose_soul(home, fs=s3)
    if change == "same-size rewrite":
        put({"aster/SOUL.md": PERSONA["SOUL.md"].upper()})
    elif change == "add":
        put({"aster/MEMORY.md": b"Remember this."})
    else:
        s3.rm_file(f"{name}/aster/SOUL.md")
    assert cache.compose_soul(home, fs=s3) == compose_soul(home, fs=s3)


def test_s3_bundle_revalidates_with_one_conditional_request(
    proxy: S3Proxy, s3: Any, bucket: tuple[str, Callable[..., None]]
) -> None:
    from toolnexus.soul.bundling import bundle_bytes  # noqa: PLC0415

    name, put = bucket
    put({"aster.zip": bundle_bytes(PERSONA)})
    url = f"{name}/aster.zip"
    cache = SoulCache()
    first = cache.compose_soul(url, fs=s3)
    assert first == compose_soul(url, fs=s3)
    proxy.reset()
    assert cache.compose_soul(url, fs=s3) == first
    (request,) = proxy.requests
    assert (request.method, request.response_status, request.response_body_bytes) == ("GET", 304, 0)
    assert request.headers.get("if-none-match")
    put({"aster.zip": bundle_bytes({"SOUL.md": b"Birch."})})
    assert cache.compose_soul(url, fs=s3) == ("## SOUL.md\n\nBirch.", ["SOUL.md"])


def test_stale_if_error_serves_the_last_good_soul_and_says_why(
    proxy: S3Proxy,
    s3: Any,
    bucket: tuple[str, Callable[..., None]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    name, put = bucket
    put({f"aster/{n}": data for n, data in PERSONA.items()})
    home = f"{name}/aster"
    clock = FakeClock()
    strict, lenient = SoulCache(clock=clock), SoulCache(stale_if_error=60, clock=clock)
    first = strict.compose_soul(home, fs=s3)
    assert lenient.compose_soul(home, fs=s3) == first
    proxy.add_fault(None, Status(403))
    with pytest.raises(PermissionError):
        strict.compose_soul(home, fs=s3)  # off by default: the error
    with caplog.at_level(logging.WARNING, logger="toolnexus.agents"):
        assert lenient.compose_soul(home, fs=s3) == first
    (warning,) = [r for r in caplog.records if "stale_if_error" in r.getMessage()]
    assert "permission denied" in warning.getMessage()
    clock.now += 61
    with pytest.raises(PermissionError):
        lenient.compose_soul(home, fs=s3)  # too old to serve


def test_compose_soul_takes_the_cache(tmp_path: Path) -> None:
    home = make_home(tmp_path / "aster", PERSONA)
    cache = SoulCache()
    assert compose_soul(home, cache=cache) == compose_soul(home)
    assert asyncio.run(compose_soul_async(home, cache=cache)) == compose_soul(home)
    assert (cache.stats.misses, cache.stats.revalidated) == (1, 1)


def test_async_s3_revalidation_runs_on_the_filesystems_loop(
    proxy: S3Proxy, s3: Any, bucket: tuple[str, Callable[..., None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    name, put = bucket
    put({f"aster/{n}": data for n, data in PERSONA.items()})
    cache = SoulCache()
    expected = compose_soul(f"{name}/aster", fs=s3)  # warms the session outside the check

    def no_threads(*args: object, **kwargs: object) -> None:
        raise AssertionError("the cache used a worker thread for an S3 home")

    async def twice() -> list[tuple[str, list[str]]]:
        monkeypatch.setattr(asyncio, "to_thread", no_threads)
        first = await cache.compose_soul_async(f"{name}/aster", fs=s3)
        proxy.reset()
        return [first, await cache.compose_soul_async(f"{name}/aster", fs=s3)]

    first, second = asyncio.run(twice())
    assert first == second == expected
    assert sorted(r.response_status or 0 for r in proxy.requests[:7]) == [304] * 6 + [404]


def test_chained_url_bundle_on_s3_revalidates_by_etag(
    proxy: S3Proxy, via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    from toolnexus.soul.bundling import bundle_bytes  # noqa: PLC0415

    name, put = bucket
    put({"a.zip": bundle_bytes(PERSONA)})
    url, options = f"zip://::s3://{name}/a.zip", {"s3": via_proxy}
    cache = SoulCache()
    first = cache.compose_soul(url, storage_options=options)
    assert first == compose_soul(url, storage_options=options)
    proxy.reset()
    assert cache.compose_soul(url, storage_options=options) == first
    assert [(r.method, r.response_status) for r in proxy.requests] == [("GET", 304)]
