"""The :class:`S3Proxy` itself: lifecycle, accepting and serving connections."""

from __future__ import annotations

import contextlib
import errno
import itertools
import socket
import threading
import time
import urllib.parse
from types import TracebackType
from typing import BinaryIO, Final, Self, cast

from tests.support.proxy.actions import FaultRule
from tests.support.proxy.handler import _Handler
from tests.support.proxy.records import RequestRecord
from tests.support.proxy.wire import (
    _DISCONNECT_ERRORS,
    _abort,
    _BadRequestError,
    _Connection,
    _read_request,
    _send_simple,
    _shutdown,
)

LISTEN_BACKLOG: Final = 1024
_STOP_JOIN_TIMEOUT: Final = 5.0


class S3Proxy(_Handler):
    """Threaded loopback HTTP/1.1 reverse proxy in front of ``upstream_url``.

    Usage::

        with S3Proxy(moto.endpoint_url) as proxy:
            fs = s3fs.S3FileSystem(**s3_storage_options(proxy.endpoint_url))
            proxy.latency = 0.05
            proxy.add_fault("bucket/key", Status(503), times=2)
            ...
            assert proxy.count("GET") == 3

    Attributes:
        latency: seconds to sleep after a request has been read and before it
            is answered/forwarded (default 0).  Read per request; may be
            changed at any time.
        drop_request_headers: lower-case names of request headers the proxy
            does not forward (default none).
    """

    def __init__(self, upstream_url: str) -> None:
        parsed = urllib.parse.urlsplit(upstream_url)
        if parsed.scheme != "http" or not parsed.hostname:
            raise ValueError(f"upstream must be an http:// URL, got {upstream_url!r}")
        if parsed.path not in ("", "/"):
            raise ValueError("upstream URL must not have a path")
        self.upstream_url = upstream_url
        self._upstream_host = parsed.hostname
        self._upstream_port = parsed.port or 80
        self.latency: float = 0.0
        #: Request headers (lower-case names) not forwarded upstream — e.g. ``{"if-match",
        #: "if-none-match"}`` turns moto into a server that ignores conditional writes.
        self.drop_request_headers: frozenset[str] = frozenset()

        self._lock = threading.Condition()  # reentrant: wait_until's predicates read the proxy
        self._records: list[RequestRecord] = []
        self._bytes_sent = 0
        self._faults: list[FaultRule] = []
        self._in_flight = 0
        self._peak_in_flight = 0

        self._stop_event = threading.Event()
        self._listener: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self._connections: dict[int, _Connection] = {}
        self._threads: set[threading.Thread] = set()
        self._conn_ids = itertools.count(1)
        self._port: int | None = None

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> Self:
        if self._listener is not None:
            raise RuntimeError("proxy already started")
        if self._stop_event.is_set():
            raise RuntimeError("a stopped proxy cannot be restarted")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(LISTEN_BACKLOG)
        listener.settimeout(0.25)  # so the accept loop notices stop()
        self._listener = listener
        self._port = listener.getsockname()[1]
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name=f"S3Proxy-accept-{self._port}", daemon=True
        )
        self._accept_thread.start()
        return self

    def stop(self) -> None:
        """Close every socket and join the threads.  Idempotent."""
        if self._stop_event.is_set():
            return
        self._stop_event.set()
        listener = self._listener
        if listener is not None:
            _shutdown(listener)
            with contextlib.suppress(OSError):
                listener.close()
        if self._accept_thread is not None:
            self._accept_thread.join(_STOP_JOIN_TIMEOUT)
        with self._lock:
            connections = list(self._connections.values())
            threads = list(self._threads)
        for conn in connections:
            _shutdown(conn.sock)
            conn.close_upstream()
        deadline = time.monotonic() + _STOP_JOIN_TIMEOUT
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> Self:
        if self._listener is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("proxy not started")
        return self._port

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __repr__(self) -> str:
        where = self.endpoint_url if self._port is not None else "(not started)"
        return f"<S3Proxy {where} -> {self.upstream_url}>"

    # -- serving -----------------------------------------------------------

    def _accept_loop(self) -> None:
        listener = self._listener
        assert listener is not None
        while not self._stop_event.is_set():
            try:
                sock, _addr = listener.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                if self._stop_event.is_set():
                    return
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    time.sleep(0.05)
                continue
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Connection(next(self._conn_ids), sock)
            thread = threading.Thread(
                target=self._serve_connection,
                args=(conn,),
                name=f"S3Proxy-conn-{conn.id}",
                daemon=True,
            )
            with self._lock:
                if self._stop_event.is_set():
                    _abort(sock)
                    return
                self._connections[conn.id] = conn
                self._threads.add(thread)
                self._lock.notify_all()
            thread.start()

    def _serve_connection(self, conn: _Connection) -> None:
        rfile = cast(BinaryIO, conn.sock.makefile("rb", buffering=65536))
        abort = False
        try:
            while not self._stop_event.is_set():
                try:
                    raw = _read_request(rfile, conn.sock)
                except _BadRequestError as exc:
                    _send_simple(conn.sock, 400, str(exc))
                    break
                if raw is None:
                    break
                with self._lock:
                    self._in_flight += 1
                    self._peak_in_flight = max(self._peak_in_flight, self._in_flight)
                    self._lock.notify_all()
                try:
                    keep_going, abort = self._handle(conn, raw)
                finally:
                    with self._lock:
                        self._in_flight -= 1
                        self._lock.notify_all()
                if not keep_going:
                    break
        except _DISCONNECT_ERRORS:
            pass  # client went away / stop() closed the socket
        finally:
            with contextlib.suppress(*_DISCONNECT_ERRORS):
                rfile.close()
            if abort:
                _abort(conn.sock)
            else:
                with contextlib.suppress(OSError):
                    conn.sock.close()
            conn.close_upstream()
            with self._lock:
                self._connections.pop(conn.id, None)
                self._threads.discard(threading.current_thread())
                self._lock.notify_all()
