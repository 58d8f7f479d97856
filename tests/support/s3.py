"""Helpers for running an in-process moto S3 server and talking to it.

Everything here is synchronous and deliberately small; it is shared by the
test-suite and the benchmarks. moto, werkzeug and botocore are imported when a server or client
is made, so the constants and storage options cost nothing to processes that never start one
(spawned writers, the benchmarks' children: about 0.7 s of CPU each).

Notes on moto behaviour that matter to users of these helpers:

* moto keeps its backends (buckets, objects) in *process-global* state.  Every
  :class:`MotoServer` started in the same process serves the same buckets, and
  the state survives :meth:`MotoServer.stop`.  Use unique bucket names per test
  or call :meth:`MotoServer.reset`.
* The server is moto's S3 application alone, on werkzeug's threaded
  development server: moto's all-services dispatcher (what ``moto_server``
  and ``ThreadedMotoServer`` run) spends ~3 ms of CPU per request finding the
  service, 40 % of its cost, and these helpers only ever speak S3.
* moto is CPU-bound: about 3.5-4.5 ms per request on loopback, and in-process
  it shares the GIL with the code under test.  In benchmarks, injected latency
  (see :mod:`tests.support.proxy`) should dominate that cost, or the benchmark
  measures moto (``benchmarks/servers.py`` runs it in a process of its own).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Self

if TYPE_CHECKING:
    from werkzeug.serving import BaseWSGIServer

__all__ = [
    "DEFAULT_REGION",
    "DUMMY_KEY",
    "DUMMY_SECRET",
    "MotoServer",
    "make_bucket",
    "put_objects",
    "s3_storage_options",
    "start_moto_server",
]

DUMMY_KEY: Final = "testing"
DUMMY_SECRET: Final = "testing"
DEFAULT_REGION: Final = "us-east-1"

#: Listen backlog given to moto's server socket.  werkzeug's default (128) is
#: too small for benchmarks that open hundreds of concurrent connections: an
#: overflowing accept queue makes the kernel drop handshakes, which shows up as
#: ~1 s (SYN retransmit) stalls rather than as errors.
MOTO_LISTEN_BACKLOG: Final = 1024


def _set_dummy_aws_env() -> None:
    os.environ.setdefault("AWS_ACCESS_KEY_ID", DUMMY_KEY)
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", DUMMY_SECRET)
    os.environ.setdefault("AWS_DEFAULT_REGION", DEFAULT_REGION)


class MotoServer:
    """Handle on a running moto S3 server (see :func:`start_moto_server`)."""

    __slots__ = ("_server", "_stopped", "_thread")

    def __init__(self, server: BaseWSGIServer, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread
        self._stopped = False

    @property
    def host(self) -> str:
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def endpoint_url(self) -> str:
        """Base URL of the server, e.g. ``"http://127.0.0.1:54321"``."""
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        """Shut the server down, join its thread and close its socket.  Idempotent."""
        if not self._stopped:
            self._stopped = True
            self._server.shutdown()
            self._thread.join()
            self._server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else "running"
        return f"<MotoServer {self.endpoint_url} {state}>"


def start_moto_server(*, quiet: bool = True) -> MotoServer:
    """Start moto's S3 application on 127.0.0.1 with an ephemeral port, in a daemon thread.

    Sets dummy ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` /
    ``AWS_DEFAULT_REGION`` environment variables if they are unset.

    With ``quiet=True`` (default) werkzeug's per-request access log is
    silenced, unless the ``werkzeug`` logger already has a level configured.
    """
    from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app  # noqa: PLC0415
    from werkzeug.serving import ThreadedWSGIServer, make_server  # noqa: PLC0415

    _set_dummy_aws_env()
    if quiet:
        wz_logger = logging.getLogger("werkzeug")
        if wz_logger.level == logging.NOTSET:
            wz_logger.setLevel(logging.WARNING)
    # An overflowing accept queue makes the kernel drop handshakes: ~1 s stalls, not errors.
    ThreadedWSGIServer.request_queue_size = max(ThreadedWSGIServer.request_queue_size, MOTO_LISTEN_BACKLOG)
    server = make_server(
        "127.0.0.1", 0, create_backend_app("s3"), threaded=True, request_handler=MotoRequestHandler
    )
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="moto-s3", daemon=True)
    thread.start()
    return MotoServer(server, thread)


def s3_storage_options(endpoint_url: str, **extra: Any) -> dict[str, Any]:
    """fsspec/s3fs storage options for a moto (or proxy) endpoint.

    With an explicit ``endpoint_url`` botocore uses path-style addressing
    (``http://host:port/bucket/key``), which is what moto and
    :class:`tests.support.proxy.S3Proxy` expect.  ``extra`` is merged last and
    may override any key (e.g. ``config_kwargs``, ``skip_instance_cache``).

    ``verify=False``: the endpoint is plain http on loopback, so no certificate is ever checked,
    but aiobotocore would still load the CA bundle for every new client (about half the CPU of
    creating one, and the tests create thousands).
    """
    return {
        "endpoint_url": endpoint_url,
        "key": DUMMY_KEY,
        "secret": DUMMY_SECRET,
        "client_kwargs": {"region_name": DEFAULT_REGION, "verify": False},
        **extra,
    }


@functools.cache
def _client(endpoint_url: str) -> Any:
    """A synchronous S3 client (boto3 if importable, else plain botocore), one per endpoint.

    Shared because creating one costs far more than the few requests a test makes with it
    (botocore clients are thread-safe); moto closes every connection anyway, so none is held.
    """
    import botocore.session  # noqa: PLC0415
    from botocore.config import Config  # noqa: PLC0415

    try:
        import boto3  # noqa: PLC0415
    except ImportError:  # pragma: no cover - boto3 is optional, botocore comes with moto
        boto3 = None
    config = Config(
        retries={"max_attempts": 3, "mode": "standard"},
        s3={"addressing_style": "path"},
    )
    kwargs: dict[str, Any] = {
        "endpoint_url": endpoint_url,
        "aws_access_key_id": DUMMY_KEY,
        "aws_secret_access_key": DUMMY_SECRET,
        "region_name": DEFAULT_REGION,
        "config": config,
    }
    if boto3 is None:
        return botocore.session.get_session().create_client("s3", **kwargs)
    return boto3.session.Session().client("s3", **kwargs)


def make_bucket(endpoint_url: str, name: str) -> None:
    """Create bucket ``name``; a bucket that already exists is not an error."""
    client = _client(endpoint_url)
    with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
        client.create_bucket(Bucket=name)


def put_objects(endpoint_url: str, bucket: str, objects: Mapping[str, bytes]) -> None:
    """Upload ``{key: data}`` into ``bucket`` (which must exist)."""
    client = _client(endpoint_url)
    for key, data in objects.items():
        client.put_object(Bucket=bucket, Key=key, Body=data)


@contextlib.contextmanager
def linearizable_puts() -> Iterator[None]:
    """moto checks If-Match/If-None-Match and then stores the object in a separate step, with no
    lock between them, so two racing conditional PUTs can both pass; and it makes the new object
    visible before it sets its metadata, so a GET racing a PUT can see the new bytes and ETag
    without the new object's ``x-amz-meta-*`` (the memory tool's lineage). Real S3 decides a PUT
    atomically and a GET sees the whole old or the whole new object; serialising moto's PutObject,
    GetObject and HeadObject handlers (in this process) gives the tests that same server. The
    ``linearizable_moto`` fixture in ``tests/conftest.py`` wraps a test in it."""
    from moto.s3.responses import S3Response  # noqa: PLC0415

    handlers = ("put_object", "get_object", "head_object")
    originals = {name: getattr(S3Response, name) for name in handlers}
    lock = threading.Lock()

    def serialised(original: Callable[..., Any]) -> Callable[..., Any]:
        def handler(self: Any, *args: Any, **kwargs: Any) -> Any:
            with lock:
                return original(self, *args, **kwargs)

        return handler

    for name, original in originals.items():
        setattr(S3Response, name, serialised(original))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(S3Response, name, original)
