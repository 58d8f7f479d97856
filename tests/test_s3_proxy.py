"""Tests of the shared S3 test support: moto helpers and the fault-injecting proxy.

s3fs is used for real, through :class:`S3Proxy`, against a real moto server.
Retries are turned down where a test expects failure, so the file stays fast:
botocore via ``config_kwargs={"retries": {"total_max_attempts": n}}`` and s3fs's
own retry loop via the ``retries`` attribute (it is not a constructor option).
"""

from __future__ import annotations

import errno
import http.client
import socket
import threading
import time
from typing import Any

import aiohttp
import botocore.exceptions
import pytest
import s3fs
from botocore.retries.standard import ExponentialBackoff

from tests.support import (
    FaultAction,
    Hold,
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

BUCKET = "support-tests"
DATA = bytes(range(256)) * 40  # 10 KiB, every byte value
# A request without a real signature: moto does not verify signatures.
AUTH = {
    "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/s3/aws4_request, "
    "SignedHeaders=host, Signature=0"
}
# What a failed read may surface as: s3fs translates S3 error responses to OSError
# subclasses, but passes transport errors through untranslated.
READ_ERRORS = (OSError, aiohttp.ClientError, botocore.exceptions.BotoCoreError)


@pytest.fixture(autouse=True)
def _no_botocore_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore retries at once: these tests count attempts (rule hits), and its backoff
    (up to 2 s for a throttling 503) would only make them wait."""
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0.0)


@pytest.fixture(scope="module")
def bucket(moto_server: MotoServer) -> str:
    make_bucket(moto_server.endpoint_url, BUCKET)
    put_objects(moto_server.endpoint_url, BUCKET, {"data.bin": DATA, "empty.bin": b""})
    return BUCKET


def make_fs(proxy: S3Proxy, *, attempts: int = 3, s3fs_retries: int = 5, **extra: Any) -> Any:
    """An uncached s3fs instance talking through ``proxy``.

    ``attempts`` is botocore's total attempts per call; ``s3fs_retries`` bounds
    s3fs's own retry loop, which wraps botocore's.
    """
    config = {"retries": {"total_max_attempts": attempts, "mode": "standard"}}
    fs = s3fs.S3FileSystem(
        skip_instance_cache=True,
        **s3_storage_options(proxy.endpoint_url, config_kwargs=config, **extra),
    )
    fs.retries = s3fs_retries
    return fs


def raw_get(proxy: S3Proxy, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=60)
    try:
        conn.request("GET", path, headers=AUTH)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


# -- forwarding and recording --------------------------------------------------


def test_write_then_ranged_read_is_forwarded_and_recorded(proxy: S3Proxy, bucket: str) -> None:
    fs = make_fs(proxy)
    fs.pipe_file(f"{bucket}/written.txt", b"0123456789abcdefghij")
    (put,) = proxy.requests
    assert (put.method, put.path, put.response_status) == ("PUT", f"/{bucket}/written.txt", 200)
    assert put.request_body_bytes == 20

    proxy.reset()
    assert fs.cat_file(f"{bucket}/written.txt", start=0, end=10) == b"0123456789"

    (get,) = proxy.requests
    assert get.method == "GET"
    assert get.path == f"/{bucket}/written.txt"
    assert get.range_header == "bytes=0-9"
    assert get.headers["range"] == "bytes=0-9"
    assert (get.response_status, get.response_body_bytes) == (206, 10)
    assert proxy.bytes_sent == 10
    assert proxy.count() == proxy.count("GET") == proxy.count("get") == 1
    assert proxy.count("HEAD") == 0


def test_head_keeps_content_length_and_connections_are_reused(proxy: S3Proxy, bucket: str) -> None:
    fs = make_fs(proxy)
    assert fs.info(f"{bucket}/data.bin")["size"] == len(DATA)
    assert fs.cat_file(f"{bucket}/data.bin") == DATA  # HEAD for the size, then a GET

    head, *_ = proxy.requests
    assert (head.method, head.response_status, head.response_body_bytes) == ("HEAD", 200, 0)
    assert proxy.bytes_sent == len(DATA)
    # Sequential requests from one client ride one keep-alive connection.
    assert len({record.connection_id for record in proxy.requests}) == 1


def test_empty_object_ranged_read_is_einval(proxy: S3Proxy, bucket: str) -> None:
    """S3 answers 416 for any range of an empty object; the proxy passes it through."""
    fs = make_fs(proxy)
    with pytest.raises(OSError, match="not satisfiable") as caught:
        fs.cat_file(f"{bucket}/empty.bin", start=0, end=10)
    assert caught.value.errno == errno.EINVAL
    assert [r.response_status for r in proxy.requests] == [416]
    assert fs.cat_file(f"{bucket}/empty.bin") == b""


def test_chunked_request_body_is_forwarded(proxy: S3Proxy, bucket: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=60)
    try:
        body = iter([b"hello ", b"chunked ", b"world"])
        conn.request("PUT", f"/{bucket}/chunked.txt", body=body, headers=AUTH, encode_chunked=True)
        response = conn.getresponse()
        response.read()
        assert response.status == 200
    finally:
        conn.close()
    (put,) = proxy.requests
    assert put.headers["transfer-encoding"] == "chunked"
    assert put.request_body_bytes == len(b"hello chunked world")
    assert make_fs(proxy).cat_file(f"{bucket}/chunked.txt") == b"hello chunked world"


# -- latency and concurrency ------------------------------------------------------


def test_latency_is_applied_concurrently(proxy: S3Proxy, bucket: str) -> None:
    fs = make_fs(proxy)
    fs.info(f"{bucket}/data.bin")  # set up the client outside the timed part
    proxy.reset()
    proxy.latency = 0.5
    starts = list(range(0, 1000, 100))
    started = time.perf_counter()
    out = fs.cat_ranges([f"{bucket}/data.bin"] * 10, starts, [s + 10 for s in starts])
    elapsed = time.perf_counter() - started
    assert out == [DATA[s : s + 10] for s in starts]
    assert proxy.count("GET") == 10
    assert elapsed >= 0.5  # the latency was applied (a lower bound: load cannot make it fail)
    assert proxy.peak_in_flight > 1  # and requests overlapped (wall-clock upper bounds would flake)


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_hundreds_of_concurrent_connections(proxy: S3Proxy) -> None:
    """400 connections have a request in flight at the same time: each is held in the proxy until
    all 400 are (then answered by the proxy itself, so moto's throughput does not enter)."""
    n = 400
    release = threading.Event()
    proxy.add_fault(None, Hold(release, then=Status(404)))
    barrier = threading.Barrier(n)
    statuses: list[int] = []
    lock = threading.Lock()

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
        try:
            conn.connect()
            barrier.wait()
            for _ in range(2):  # two requests on the same keep-alive connection
                conn.request("GET", "/nowhere/key", headers=AUTH)
                response = conn.getresponse()
                response.read()
                with lock:
                    statuses.append(response.status)
        finally:
            conn.close()

    threads = [threading.Thread(target=client) for _ in range(n)]
    for thread in threads:
        thread.start()
    try:
        proxy.wait_until(lambda: proxy.in_flight == n)  # every connection's first request, at once
    finally:
        release.set()
    for thread in threads:
        thread.join(60)
    assert statuses == [404] * (2 * n)
    assert proxy.peak_in_flight == n
    assert len({r.connection_id for r in proxy.requests}) == n


# -- faults -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected", "error_code"),
    [
        (503, OSError, errno.EBUSY),  # SlowDown
        (500, OSError, errno.EREMOTEIO),  # InternalError
        (403, PermissionError, None),  # AccessDenied
        (404, FileNotFoundError, None),  # NoSuchKey
    ],
)
def test_status_fault(
    proxy: S3Proxy, bucket: str, status: int, expected: type[OSError], error_code: int | None
) -> None:
    fs = make_fs(proxy, attempts=2, s3fs_retries=1)
    rule = proxy.add_fault("data.bin", Status(status))
    with pytest.raises(expected) as caught:
        fs.cat_file(f"{bucket}/data.bin", start=0, end=10)
    if error_code is not None:
        assert caught.value.errno == error_code
    # botocore retries 5xx (2 attempts here), never 4xx.
    assert rule.hits == (2 if status >= 500 else 1)
    assert all(r.fault == repr(rule.action) for r in proxy.requests)
    assert proxy.bytes_sent > 0  # the error XML went out


def test_status_fault_on_head_has_no_body(proxy: S3Proxy, bucket: str) -> None:
    fs = make_fs(proxy)
    proxy.add_fault(lambda request: request.method == "HEAD", Status(403))
    with pytest.raises(PermissionError):
        fs.info(f"{bucket}/data.bin")
    assert {(r.method, r.response_status, r.response_body_bytes) for r in proxy.requests} == {
        ("HEAD", 403, 0)
    }


def test_times_limits_a_fault_and_clear_faults_removes_it(proxy: S3Proxy, bucket: str) -> None:
    rule = proxy.add_fault(f"/{bucket}/", Status(503), times=2)
    assert [raw_get(proxy, f"/{bucket}/data.bin")[0] for _ in range(3)] == [503, 503, 200]
    assert (rule.hits, rule.exhausted) == (2, True)
    status, body = raw_get(proxy, f"/{bucket}/data.bin")
    assert (status, body) == (200, DATA)

    proxy.add_fault("data.bin", Status(500))
    status, body = raw_get(proxy, f"/{bucket}/data.bin")
    assert status == 500
    assert b"<Code>InternalError</Code>" in body
    proxy.clear_faults()
    assert raw_get(proxy, f"/{bucket}/data.bin")[0] == 200


@pytest.mark.parametrize(
    "action", [TruncateBody(), TruncateBody(nbytes=1), TruncateBody(fraction=0.0), Reset()], ids=repr
)
def test_transport_fault_once_is_never_silently_short(
    proxy: S3Proxy, bucket: str, action: FaultAction
) -> None:
    fs = make_fs(proxy, attempts=2, s3fs_retries=2)
    fs.info(f"{bucket}/data.bin")  # open the keep-alive connection first
    rule = proxy.add_fault("data.bin", action, times=1)
    try:
        out = fs.cat_file(f"{bucket}/data.bin", start=0, end=1000)
    except READ_ERRORS:
        pass  # failing loudly is acceptable
    else:
        assert out == DATA[:1000]
    assert rule.hits == 1


@pytest.mark.parametrize("action", [TruncateBody(), Reset()], ids=repr)
def test_persistent_transport_fault_raises(proxy: S3Proxy, bucket: str, action: FaultAction) -> None:
    fs = make_fs(proxy, attempts=1, s3fs_retries=1)
    rule = proxy.add_fault("data.bin", action)
    with pytest.raises(READ_ERRORS):
        fs.cat_file(f"{bucket}/data.bin", start=0, end=1000)
    assert rule.hits >= 1
    if isinstance(action, TruncateBody):
        assert [r.response_body_bytes for r in proxy.requests] == [500] * rule.hits
    else:
        assert all(r.response_status is None for r in proxy.requests)


def test_stall_then_close_is_retried(proxy: S3Proxy, bucket: str) -> None:
    fs = make_fs(proxy, attempts=2, s3fs_retries=2)
    fs.info(f"{bucket}/data.bin")
    rule = proxy.add_fault("data.bin", Stall(0.3), times=1)
    started = time.perf_counter()
    assert fs.cat_file(f"{bucket}/data.bin", start=0, end=10) == DATA[:10]
    assert time.perf_counter() - started >= 0.3
    assert rule.hits == 1
    stalled, *_ = [r for r in proxy.requests if r.method == "GET"]
    assert (stalled.response_status, stalled.fault) == (None, "Stall(seconds=0.3)")


# -- robustness ---------------------------------------------------------------------


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_client_disconnects_do_not_hurt_the_proxy(proxy: S3Proxy, bucket: str) -> None:
    port = proxy.port
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /half-a-request HTTP/1.1\r\nHost: x\r\n")  # then hang up
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"PUT /x/y HTTP/1.1\r\nContent-Length: 100\r\n\r\nonly part")
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"garbage\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 400 ")
    proxy.latency = 0.2
    with socket.create_connection(("127.0.0.1", port)) as sock:  # leaves mid-latency
        sock.sendall(f"GET /{bucket}/data.bin HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        proxy.wait_until(lambda: proxy.peak_in_flight == 1)
    # The proxy answers into the closed socket (and logs it); incomplete requests never get in flight.
    proxy.wait_until(lambda: proxy.count() >= 1 and proxy.in_flight == 0)
    proxy.latency = 0
    assert proxy.count() == 1  # only the complete request was handled
    assert raw_get(proxy, f"/{bucket}/data.bin") == (200, DATA)


def test_stop_is_prompt_with_idle_and_stalled_connections(moto_server: MotoServer, bucket: str) -> None:
    proxy = S3Proxy(moto_server.endpoint_url).start()
    idle = [socket.create_connection(("127.0.0.1", proxy.port)) for _ in range(20)]
    proxy.add_fault(None, Stall(30))
    stalled = socket.create_connection(("127.0.0.1", proxy.port))
    stalled.sendall(f"GET /{bucket}/data.bin HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    proxy.wait_until(lambda: proxy.count() == 1)  # the stall has started
    started = time.perf_counter()
    proxy.stop()
    assert time.perf_counter() - started < 15  # a hang guard: waiting out the stall would take 30 s
    assert proxy.open_connections == 0
    for sock in [*idle, stalled]:
        assert sock.recv(10) == b""  # closed by the proxy
        sock.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", proxy.port), timeout=2)
