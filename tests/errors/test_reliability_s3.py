"""Remote faults on S3 (moto behind a fault-injecting loopback proxy): a failed read is an error
naming the file — after the client's own retries — and never a missing or partial section.

Retries are configured low through ``storage_options`` to keep this fast:
``config_kwargs={"retries": {"total_max_attempts": N, "mode": "standard"}}`` sets botocore's
attempts per request (``max_attempts`` would count *retries*). s3fs retries on top of that
(``S3FileSystem.retries``, 5): throttling (SlowDown) and connection-level failures (resets,
truncated bodies, timeouts) — the latter at two nested levels. docs/errors.md, "Timeouts and retries".
"""

from __future__ import annotations

import asyncio
import io
import time
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import s3fs
from botocore.retries.standard import ExponentialBackoff

from tests.support import (
    MotoServer,
    Reset,
    S3Proxy,
    Stall,
    Status,
    TruncateBody,
    make_bucket,
    put_objects,
    s3_storage_options,
)
from toolnexus.agents import MAX_BOOTSTRAP_FILE_BYTES, BootstrapError, compose_soul, compose_soul_async

PERSONA = {
    "AGENTS.md": b"Be brief.",
    "SOUL.md": b"You are Aster.",
    "USER.md": b"Mira prefers tea. " * 50_000,  # ~900 kB: a body worth truncating
}
EXPECTED_SOUL = (
    "## AGENTS.md\n\nBe brief.\n\n## SOUL.md\n\nYou are Aster.\n\n## USER.md\n\n"
    + ("Mira prefers tea. " * 50_000).rstrip()
)
EXPECTED = (EXPECTED_SOUL, ["AGENTS.md", "SOUL.md", "USER.md"])
NOTICE = "\n\n[truncated: exceeds 2 MB bootstrap cap]"
S3FS_RETRIES = s3fs.S3FileSystem.retries


@pytest.fixture(scope="module")
def proxy(moto_server: MotoServer) -> Iterator[S3Proxy]:
    with S3Proxy(moto_server.endpoint_url) as running:
        yield running


class _QuickBackoff:
    """``asyncio`` as s3fs.core sees it, but its retry backoff sleeps yield at once: these tests
    count attempts (the proxy's GETs), never the backoff's seconds, which would cost ~2 s a test.
    botocore's own backoff (up to 1 s per retry) is zeroed alike."""

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    @staticmethod
    async def sleep(delay: float, result: Any = None) -> Any:
        return await asyncio.sleep(0, result)


@pytest.fixture(autouse=True)
def _quick_s3fs_backoff(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test but the one that checks the documented wait formula (backoff included)."""
    if request.function.__name__ != "test_a_stalled_server_fails_within_the_timeouts_set_in_storage_options":
        monkeypatch.setattr(s3fs.core, "asyncio", _QuickBackoff())
        monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0.0)


@pytest.fixture(autouse=True)
def _clean_proxy(proxy: S3Proxy) -> Iterator[None]:
    proxy.clear_faults()
    proxy.reset()
    yield
    proxy.clear_faults()


def options(proxy: S3Proxy, attempts: int = 1, **config: Any) -> dict[str, Any]:
    """Storage options through the proxy, with ``attempts`` botocore attempts per request."""
    config_kwargs = {"retries": {"total_max_attempts": attempts, "mode": "standard"}, **config}
    return s3_storage_options(proxy.endpoint_url, skip_instance_cache=True, config_kwargs=config_kwargs)


@pytest.fixture(scope="module")
def home(moto_server: MotoServer) -> str:
    """One persona for the whole module: faults live in the proxy, the objects never change."""
    make_bucket(moto_server.endpoint_url, "reliability-home")
    objects = {f"home/{name}": data for name, data in PERSONA.items()}
    put_objects(moto_server.endpoint_url, "reliability-home", objects)
    return "reliability-home/home"


def gets_of(proxy: S3Proxy, key: str) -> int:
    return sum(1 for r in proxy.requests if r.method == "GET" and r.path == f"/{key}")


def on_get(key: str) -> Callable[[Any], bool]:
    return lambda request: request.method == "GET" and request.path == f"/{key}"


def compose(location: str, use_async: bool, **kwargs: Any) -> tuple[str, list[str]]:
    """compose_soul, or compose_soul_async on a fresh event loop."""
    if use_async:
        return asyncio.run(compose_soul_async(location, **kwargs))
    return compose_soul(location, **kwargs)


both = pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])


# --- server errors -----------------------------------------------------------------------------


@both
def test_500_after_the_clients_retries_is_an_error_naming_the_file(
    proxy: S3Proxy, home: str, use_async: bool
) -> None:
    proxy.add_fault(on_get(f"{home}/USER.md"), Status(500))
    with pytest.raises(
        BootstrapError, match=f"cannot read USER.md in s3://{home}: .*internal error"
    ) as caught:
        compose(f"s3://{home}", use_async, storage_options=options(proxy, attempts=2))
    assert isinstance(caught.value.__cause__, OSError)
    assert gets_of(proxy, f"{home}/USER.md") == 2  # botocore retried once, as configured


@pytest.mark.parametrize(
    ("fault", "attempts", "expected_gets"),
    [
        (Status(503, error_code="ServiceUnavailable", message="Service Unavailable"), 2, 2),
        (Status(503, error_code="SlowDown", message="Please reduce your request rate."), 1, S3FS_RETRIES),
    ],
    ids=["ServiceUnavailable", "SlowDown"],
)
def test_503_after_the_clients_retries_is_an_error_naming_the_file(
    proxy: S3Proxy, home: str, fault: Status, attempts: int, expected_gets: int
) -> None:
    proxy.add_fault(on_get(f"{home}/USER.md"), fault)
    with pytest.raises(BootstrapError, match=f"cannot read USER.md in s3://{home}"):
        compose_soul(f"s3://{home}", storage_options=options(proxy, attempts=attempts))
    # botocore retries every 503 (attempts as configured); s3fs retries throttling once more per
    # attempt of its own loop, S3FileSystem.retries times.
    assert gets_of(proxy, f"{home}/USER.md") == expected_gets


@both
@pytest.mark.parametrize("status", [500, 503])
def test_a_transient_server_error_is_retried_into_the_full_soul(
    proxy: S3Proxy, home: str, status: int, use_async: bool
) -> None:
    proxy.add_fault(on_get(f"{home}/USER.md"), Status(status), times=1)
    assert compose(f"s3://{home}", use_async, storage_options=options(proxy, attempts=2)) == EXPECTED


@both
def test_403_is_a_permission_error_naming_the_file(proxy: S3Proxy, home: str, use_async: bool) -> None:
    proxy.add_fault(on_get(f"{home}/SOUL.md"), Status(403))
    with pytest.raises(PermissionError, match=f"cannot read SOUL.md in s3://{home}: permission denied"):
        compose(f"s3://{home}", use_async, storage_options=options(proxy, attempts=3))
    assert gets_of(proxy, f"{home}/SOUL.md") == 1  # access denied is not retried


@both
def test_a_denied_prefix_is_reported_against_the_home_not_the_first_file(
    proxy: S3Proxy, home: str, use_async: bool
) -> None:
    prefix = f"/{home}/"
    proxy.add_fault(lambda request: request.method == "GET" and request.path.startswith(prefix), Status(403))
    with pytest.raises(PermissionError, match=f"cannot read s3://{home}: permission denied") as caught:
        compose(f"s3://{home}", use_async, storage_options=options(proxy))
    assert "AGENTS.md" not in str(caught.value)
    assert proxy.count("GET") == 7


# --- connection resets and truncated bodies --------------------------------------------------


@both
@pytest.mark.parametrize(
    "fault",
    [Reset(), TruncateBody(), TruncateBody(nbytes=0), TruncateBody(fraction=0.99)],
    ids=["reset", "truncate-half", "truncate-all", "truncate-last-byte"],
)
def test_a_reset_or_truncated_read_is_retried_into_the_full_soul(
    proxy: S3Proxy, home: str, fault: Any, use_async: bool
) -> None:
    proxy.add_fault(on_get(f"{home}/USER.md"), fault, times=2)
    # A reset is retried by botocore (attempts), a short body by s3fs (its own loop): 3 GETs either way.
    assert compose(f"s3://{home}", use_async, storage_options=options(proxy, attempts=3)) == EXPECTED
    assert gets_of(proxy, f"{home}/USER.md") == 3


@pytest.mark.parametrize(
    ("fault", "use_async"),
    [(Reset(), False), (Reset(), True), (TruncateBody(), False), (TruncateBody(), True)],
    ids=["reset-sync", "reset-async", "truncate-sync", "truncate-async"],
)
def test_a_read_that_keeps_failing_is_an_error_never_a_partial_section(
    proxy: S3Proxy, home: str, fault: Any, use_async: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3fs.S3FileSystem, "retries", 2)  # fewer of s3fs's backoff sleeps
    proxy.add_fault(on_get(f"{home}/USER.md"), fault)
    with pytest.raises(BootstrapError, match=f"cannot read USER.md in s3://{home}"):
        compose(f"s3://{home}", use_async, storage_options=options(proxy))


def test_a_truncated_read_of_a_file_over_the_cap_is_retried_and_truncated_by_the_rules(
    moto_server: MotoServer, proxy: S3Proxy, new_bucket: Callable[[], str]
) -> None:
    bucket = new_bucket()  # its own bucket: 2 MiB more per request in the shared home
    body = b"x" * (MAX_BOOTSTRAP_FILE_BYTES + 1000)
    put_objects(moto_server.endpoint_url, bucket, {"home/SOUL.md": body})
    proxy.add_fault(on_get(f"{bucket}/home/SOUL.md"), TruncateBody(fraction=0.5), times=1)
    soul, found = compose_soul(f"s3://{bucket}/home", storage_options=options(proxy))
    assert found == ["SOUL.md"]
    assert soul == "## SOUL.md\n\n" + "x" * MAX_BOOTSTRAP_FILE_BYTES + NOTICE


# --- the home lookup: a failure never turns into an empty home --------------------------------


@pytest.mark.parametrize(("status", "error"), [(500, BootstrapError), (403, PermissionError)])
def test_a_failed_home_lookup_is_an_error_never_an_empty_soul(
    moto_server: MotoServer, proxy: S3Proxy, new_bucket: Callable[[], str], status: int, error: type
) -> None:
    bucket = new_bucket()
    put_objects(moto_server.endpoint_url, bucket, {"home/README.txt": b"no bootstrap files here"})
    assert compose_soul(f"s3://{bucket}/home", storage_options=options(proxy)) == ("", [])
    proxy.add_fault(lambda request: not request.path.endswith(".md"), Status(status))  # HEAD and LIST
    with pytest.raises(error, match=f"cannot read s3://{bucket}/home"):
        compose_soul(f"s3://{bucket}/home", storage_options=options(proxy))


# --- bundles on S3 ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bundle(moto_server: MotoServer) -> str:
    bucket = "reliability-bundle"
    make_bucket(moto_server.endpoint_url, bucket)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in PERSONA.items():
            archive.writestr(f"aster/{name}", data)
    put_objects(moto_server.endpoint_url, bucket, {"aster.zip": buffer.getvalue()})
    return f"{bucket}/aster.zip"


@pytest.mark.parametrize(
    ("fault", "error", "message"),
    [
        (Status(403), PermissionError, "cannot read s3://{key}: permission denied"),
        (Status(500), BootstrapError, "cannot read s3://{key}: .*internal error"),
        (TruncateBody(), BootstrapError, "cannot read s3://{key}"),
        (Reset(), BootstrapError, "cannot read s3://{key}"),
    ],
    ids=["403", "500", "truncate", "reset"],
)
def test_a_failing_bundle_on_s3_is_an_error_naming_it(
    proxy: S3Proxy, bundle: str, fault: Any, error: type, message: str
) -> None:
    proxy.add_fault(on_get(bundle), fault)
    with pytest.raises(error, match=message.format(key=bundle)):
        compose_soul(f"s3://{bundle}", storage_options=options(proxy))


@pytest.mark.parametrize("fault", [Status(500), Reset(), TruncateBody()], ids=["500", "reset", "truncate"])
def test_a_transient_bundle_failure_is_retried_into_the_full_soul(
    proxy: S3Proxy, bundle: str, fault: Any
) -> None:
    proxy.add_fault(on_get(bundle), fault, times=1)
    assert compose_soul(f"s3://{bundle}", storage_options=options(proxy, attempts=2)) == EXPECTED


# --- a stalled server ---------------------------------------------------------------------------

#: Short enough to keep the suite fast. A slow answer to another request on a loaded machine
#: is retried by s3fs like any timeout, so only the stalled GET fails (and is counted).
READ_TIMEOUT = 0.5


def s3fs_backoff(retries: int = S3FS_RETRIES) -> float:
    """The sleeps of one s3fs retry loop (``min(1.7**i * 0.1, 15)`` after each failed attempt)."""
    return sum(min(1.7**i * 0.1, 15) for i in range(retries))


@pytest.mark.parametrize("s3fs_retries", [2])
def test_a_stalled_server_fails_within_the_timeouts_set_in_storage_options(
    proxy: S3Proxy, home: str, s3fs_retries: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """storage_options alone bound the wait: S3FileSystem.retries**2 * attempts tries of read_timeout
    each (s3fs retries timeouts at two nested levels) plus s3fs's backoff — the formula in docs/errors.md.
    Checked with S3FileSystem.retries = 2 (not 5) to keep the suite fast; the formula is the same."""
    monkeypatch.setattr(s3fs.S3FileSystem, "retries", s3fs_retries)
    proxy.add_fault(on_get(f"{home}/USER.md"), Stall(60))
    storage_options = options(proxy, attempts=1, connect_timeout=READ_TIMEOUT, read_timeout=READ_TIMEOUT)
    started = time.monotonic()
    with pytest.raises(BootstrapError, match=f"cannot read USER.md in s3://{home}: Read timeout"):
        compose_soul(f"s3://{home}", storage_options=storage_options)
    elapsed = time.monotonic() - started
    attempts = s3fs_retries**2
    assert gets_of(proxy, f"{home}/USER.md") == attempts
    bound = attempts * READ_TIMEOUT + (s3fs_retries + 1) * s3fs_backoff(s3fs_retries)
    # The count above carries the precision; this only shows that no attempt waited out the 60 s
    # stall, with slack for a loaded machine (client creation alone can take seconds there).
    assert elapsed < bound + 30, f"{elapsed:.1f}s, bound {bound:.1f}s"


@both
def test_a_stalled_server_fails_after_one_timeout_with_s3fs_retries_off(
    proxy: S3Proxy, home: str, use_async: bool
) -> None:
    proxy.add_fault(on_get(f"{home}/USER.md"), Stall(60))
    # Nothing retries here, so the timeout must be one a loaded machine's moto never reaches.
    fs = s3fs.S3FileSystem(**options(proxy, attempts=1, connect_timeout=2, read_timeout=2))
    fs.retries = 1  # an instance setting: not reachable through storage_options
    started = time.monotonic()
    with pytest.raises(BootstrapError, match=f"cannot read USER.md in s3://{home}: Read timeout"):
        compose(home, use_async, fs=fs)
    assert gets_of(proxy, f"{home}/USER.md") == 1
    assert time.monotonic() - started < 30  # a hang guard: the stall lasts 60 s


def test_a_deadline_on_compose_soul_async_bounds_everything(proxy: S3Proxy, home: str) -> None:
    """A caller's deadline cancels the whole compose while a GET is stalled, and nothing waits on.

    The deadline starts once the stalled GET has reached the proxy (waited for there), so a loaded
    machine that is slow to create the client cannot make it expire before the stall.
    """
    proxy.add_fault(on_get(f"{home}/USER.md"), Stall(60))
    stalled_at: list[float] = []

    async def with_deadline() -> tuple[str, list[str]]:
        task = asyncio.ensure_future(
            compose_soul_async(f"s3://{home}", storage_options=options(proxy, attempts=3))
        )
        await asyncio.to_thread(proxy.wait_until, lambda: gets_of(proxy, f"{home}/USER.md") == 1)
        stalled_at.append(time.monotonic())
        return await asyncio.wait_for(task, timeout=0.2)

    with pytest.raises(TimeoutError):
        asyncio.run(with_deadline())
    # A hang guard, not a timing: waiting out the 60 s stall would take twice as long.
    assert time.monotonic() - stalled_at[0] < 30
    assert gets_of(proxy, f"{home}/USER.md") == 1  # still waiting on the first attempt when cancelled
