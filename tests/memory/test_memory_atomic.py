"""Atomic writes and compare-and-swap: failures injected part-way through a write, and other
writers slipped in between the read and the write."""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import S3Proxy, Status, s3_storage_options
from tests.support.homes import Home, local_home, make_home, s3_home
from toolnexus.agents import BootstrapError, memory_tool
from toolnexus.memory.portable import _plan
from toolnexus.stores import base as store_base
from toolnexus.stores import local as local_store
from toolnexus.stores.base import Change, Plan
from toolnexus.stores.fsspec import S3Store

OLD = b"- prefers metric units\n"


@pytest.fixture
def local(tmp_path: Path) -> Home:
    home = local_home(tmp_path / "aster")
    home.put("MEMORY.md", OLD)
    return home


def _assert_untouched(home: Home) -> None:
    assert home.memory() == OLD
    assert not [name for name in home.listing() if name.endswith(".tmp")], "temporary file left behind"


@pytest.mark.parametrize("failing", ["replace", "fsync", "partial-write", "open"])
def test_local_failure_part_way_keeps_the_old_file(
    local: Home, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    real_write = os.write

    def half_then_fail(fd: int, data: Any) -> int:
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.EIO, "injected I/O error")

    real_open = os.open

    def open_fails_for_temp(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith(".tmp"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    patch: dict[str, Callable[..., Any]] = {
        "replace": fail,
        "fsync": fail,
        "partial-write": half_then_fail,
        "open": open_fails_for_temp,
    }
    target = {"partial-write": "write"}.get(failing, failing)
    monkeypatch.setattr(local_store.os, target, patch[failing])
    expected = PermissionError if failing == "open" else BootstrapError
    with pytest.raises(expected, match=r"cannot write MEMORY\.md in .*aster") as raised:
        memory_tool(local.location).tool(command="append", content="- a new note")
    assert isinstance(raised.value.__cause__, OSError)
    monkeypatch.undo()
    _assert_untouched(local)


def test_local_write_keeps_the_file_mode(local: Home) -> None:
    os.chmod(os.path.join(local.location, "MEMORY.md"), 0o640)
    memory_tool(local.location).tool(command="append", content="x")
    assert stat.S_IMODE(os.stat(os.path.join(local.location, "MEMORY.md")).st_mode) == 0o640


@pytest.mark.parametrize("backend", ["local", "memory"])
def test_writer_holds_the_lock_across_read_and_write(request: pytest.FixtureRequest, backend: str) -> None:
    """While one update sits between its read and its write, another writer (on another tool
    object) must wait — otherwise the first write would drop its note. (Threads appending in a
    loop rarely interleave on memory://, so this is the test that can catch a missing lock there.)"""
    local = make_home(backend, request)
    local.put("MEMORY.md", OLD)
    first, second = local.tool(), local.tool()
    second_started, second_done = threading.Event(), threading.Event()

    def second_append() -> None:
        second_started.set()
        second.tool(command="append", content="- from the second writer")
        second_done.set()

    plan = _plan({"command": "append", "content": "- from the first writer"})

    def slow_plan(current: bytes | None) -> Change:
        threading.Thread(target=second_append).start()
        # The window opens once the second writer is running (however loaded the machine), and
        # it can only miss a bug, never fail a correct lock: a lock holds however long we wait.
        assert second_started.wait(60)
        assert not second_done.wait(0.5), "second writer got in between the first one's read and write"
        return plan(current)

    first.store.update(slow_plan)
    assert second_done.wait(60)  # a hang guard
    assert local.memory() == OLD + b"- from the first writer\n- from the second writer\n"


# -- S3: conditional PUTs ---------------------------------------------------------------------


@pytest.fixture
def s3(new_bucket: Callable[[], str], s3_options: dict[str, Any]) -> Home:
    return s3_home(new_bucket(), s3_options)


def _interfering(plan: Plan, interfere: Callable[[int], None], times: int) -> tuple[Plan, list[bytes | None]]:
    """Run ``interfere`` between the read and the write of the first ``times`` attempts."""
    seen: list[bytes | None] = []

    def wrapped(current: bytes | None) -> Change:
        seen.append(current)
        if len(seen) <= times:
            interfere(len(seen))
        return plan(current)

    return wrapped, seen


def _s3_store(home: Home) -> S3Store:
    store = home.tool().store
    assert isinstance(store, S3Store)
    return store


def test_s3_conflict_on_update_is_retried(s3: Home) -> None:
    s3.put("MEMORY.md", OLD)
    plan, seen = _interfering(
        _plan({"command": "append", "content": "- mine"}),
        lambda n: s3.put("MEMORY.md", (s3.memory() or b"") + f"- theirs {n}\n".encode()),
        times=2,
    )
    assert _s3_store(s3).update(plan).reply.startswith("ok: note appended")
    assert seen == [OLD, OLD + b"- theirs 1\n", OLD + b"- theirs 1\n- theirs 2\n"]
    assert s3.memory() == OLD + b"- theirs 1\n- theirs 2\n- mine\n"


def test_s3_conflict_on_create_is_retried(s3: Home) -> None:
    plan, seen = _interfering(
        _plan({"command": "append", "content": "- mine"}), lambda n: s3.put("MEMORY.md", b"- theirs\n"), 1
    )
    _s3_store(s3).update(plan)
    assert seen == [None, b"- theirs\n"]
    assert s3.memory() == b"- theirs\n- mine\n"


def test_s3_memory_deleted_between_read_and_write(s3: Home) -> None:
    s3.put("MEMORY.md", OLD)
    key = f"{s3.extra['bucket']}/aster/MEMORY.md"
    plan, seen = _interfering(
        _plan({"command": "append", "content": "- mine"}), lambda n: s3.extra["fs"].rm_file(key), 1
    )
    _s3_store(s3).update(plan)
    assert seen == [OLD, None]
    assert s3.memory() == b"- mine\n"


def test_s3_gives_up_after_bounded_attempts(s3: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_base, "MAX_ATTEMPTS", 3)
    monkeypatch.setattr(store_base, "_BACKOFF_MAX", 0.001)
    s3.put("MEMORY.md", OLD)
    plan, seen = _interfering(
        _plan({"command": "append", "content": "- mine"}),
        lambda n: s3.put("MEMORY.md", (s3.memory() or b"") + f"- theirs {n}\n".encode()),
        times=99,
    )
    with pytest.raises(BootstrapError, match="changed under every one of 3 attempts") as raised:
        _s3_store(s3).update(plan)
    assert raised.value.errno == errno.EBUSY
    assert len(seen) == 3
    assert s3.memory() == OLD + b"- theirs 1\n- theirs 2\n- theirs 3\n"


def test_moto_enforces_both_conditions(s3: Home) -> None:
    """Without this the tests above could pass against a server that ignores the headers."""
    store = _s3_store(s3)
    assert store.put_if(b"created\n", None)
    assert not store.put_if(b"again\n", None)  # If-None-Match: * on an existing object
    data, etag = store.read_versioned()
    assert data == b"created\n"
    assert not store.put_if(b"stale\n", '"0123456789abcdef0123456789abcdef"')  # If-Match mismatch
    assert store.put_if(b"fresh\n", etag)
    assert s3.memory() == b"fresh\n"


@pytest.mark.parametrize("method", ["GET", "PUT"])
def test_s3_access_denied_raises_permission_error(s3: Home, proxy: S3Proxy, method: str) -> None:
    s3.put("MEMORY.md", OLD)
    options = s3_storage_options(proxy.endpoint_url, skip_instance_cache=True)
    tool = memory_tool(s3.location, storage_options=options)
    proxy.add_fault(lambda request: request.method == method and "MEMORY.md" in request.path, Status(403))
    action = "read" if method == "GET" else "write"
    message = rf"cannot {action} MEMORY\.md in {s3.location}: permission denied"
    with pytest.raises(PermissionError, match=message):
        tool.tool(command="append", content="- mine")
    assert s3.memory() == OLD
