"""A loopback HTTP/1.1 proxy for putting between s3fs (aiobotocore) and moto.

It exists to *observe* and *perturb* the traffic of the code under test:

* count requests and response bytes (:attr:`S3Proxy.requests`,
  :meth:`S3Proxy.count`, :attr:`S3Proxy.bytes_sent`);
* inject latency (:attr:`S3Proxy.latency`, applied to every request, with
  concurrent requests sleeping concurrently);
* inject faults (:meth:`S3Proxy.add_fault` with :class:`Status`,
  :class:`Reset`, :class:`TruncateBody`, :class:`Stall` or :class:`Delay`).

The proxy is a reverse proxy: point the client's ``endpoint_url`` at
:attr:`S3Proxy.endpoint_url`.  Requests are forwarded unchanged (same method,
request target and headers, including ``Host``, so SigV4 signatures stay
valid) except for hop-by-hop headers and ``Expect`` (the proxy answers
``100-continue`` itself); chunked request bodies are de-chunked and forwarded
with a ``Content-Length``.  Responses are fully buffered and re-framed with
``Content-Length`` (HEAD responses keep the upstream one and have no body).
If the upstream cannot be reached the client gets a 502 with S3-style XML.

Each client connection is served by its own (daemon) thread, so any number of
keep-alive connections and concurrent requests are supported.  An upstream
connection to the target is kept per client connection (moto closes it after
every response anyway).
"""

from __future__ import annotations

import contextlib
import errno
import http.client
import itertools
import socket
import struct
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from types import TracebackType
from typing import BinaryIO, Final, Self, cast
from xml.sax.saxutils import escape

__all__ = [
    "Delay",
    "FaultAction",
    "FaultRule",
    "ProxyRequest",
    "RequestRecord",
    "Reset",
    "S3Proxy",
    "Stall",
    "Status",
    "TruncateBody",
    "s3_error_body",
]

LISTEN_BACKLOG: Final = 1024
_MAX_LINE: Final = 65536
_MAX_HEADERS: Final = 256
_SEND_CHUNK: Final = 256 * 1024
_UPSTREAM_TIMEOUT: Final = 120.0
_STOP_JOIN_TIMEOUT: Final = 5.0

# RFC 9110 section 7.6.1, plus headers this proxy re-frames itself.
_HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)

# Exceptions that mean "the peer went away"; never worth a traceback.
_DISCONNECT_ERRORS: Final = (OSError, ValueError, http.client.HTTPException)


# --------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class ProxyRequest:
    """A fully read client request, as seen by fault ``match`` callables.

    ``path`` and ``query`` are the raw (still percent-encoded) parts of the
    request target; ``headers`` has lower-case keys (repeated headers joined
    with ``", "``).
    """

    method: str
    path: str
    query: str
    headers: dict[str, str]
    range_header: str | None
    body: bytes = field(repr=False)
    connection_id: int


@dataclass(frozen=True)
class RequestRecord:
    """One request handled by the proxy.

    ``response_status`` is ``None`` when no response was sent (:class:`Reset`,
    :class:`Stall`, or the client went away first).  ``response_body_bytes``
    counts response *body* bytes actually written to the client socket.
    ``fault`` is the ``repr`` of the injected fault action, if any.
    """

    method: str
    path: str
    query: str
    headers: dict[str, str]
    range_header: str | None
    response_status: int | None
    response_body_bytes: int
    request_body_bytes: int = 0
    fault: str | None = None
    connection_id: int = 0


# --------------------------------------------------------------------------
# Fault actions
# --------------------------------------------------------------------------

_DEFAULT_ERROR_CODES: Final[Mapping[int, tuple[str, str]]] = {
    400: ("InvalidRequest", "Invalid Request"),
    403: ("AccessDenied", "Access Denied"),
    404: ("NoSuchKey", "The specified key does not exist."),
    405: ("MethodNotAllowed", "The specified method is not allowed."),
    409: ("OperationAborted", "A conflicting operation is in progress."),
    412: ("PreconditionFailed", "At least one precondition did not hold."),
    416: ("InvalidRange", "The requested range is not satisfiable"),
    429: ("SlowDown", "Please reduce your request rate."),
    500: ("InternalError", "We encountered an internal error. Please try again."),
    501: ("NotImplemented", "A header you provided implies unimplemented functionality."),
    502: ("BadGateway", "Bad Gateway"),
    503: ("SlowDown", "Please reduce your request rate."),
    504: ("GatewayTimeout", "Gateway Timeout"),
}


def _default_error(code: int) -> tuple[str, str]:
    if code in _DEFAULT_ERROR_CODES:
        return _DEFAULT_ERROR_CODES[code]
    try:
        phrase = HTTPStatus(code).phrase
    except ValueError:
        phrase = "Error"
    return phrase.replace(" ", "").replace("-", ""), phrase


def s3_error_body(error_code: str, message: str, *, resource: str = "", request_id: str = "") -> bytes:
    """An S3-style ``<Error>`` XML document."""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{escape(error_code)}</Code>"
        f"<Message>{escape(message)}</Message>"
        f"<Resource>{escape(resource)}</Resource>"
        f"<RequestId>{escape(request_id)}</RequestId></Error>"
    ).encode()


class FaultAction:
    """Base class of the fault actions accepted by :meth:`S3Proxy.add_fault`."""

    __slots__ = ()


@dataclass(frozen=True)
class Status(FaultAction):
    """Answer with HTTP ``code`` instead of forwarding the request.

    The body defaults to S3-style error XML whose ``<Code>`` is derived from
    the status (403 ``AccessDenied``, 404 ``NoSuchKey``, 500
    ``InternalError``, 503 ``SlowDown``, ...); override it with
    ``error_code``/``message`` or give a raw ``body``.  HEAD requests get no
    body, like from S3.
    """

    code: int
    error_code: str | None = None
    message: str | None = None
    body: bytes | None = None
    headers: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if not 200 <= self.code <= 599:
            raise ValueError(f"unsupported status code {self.code}")

    def render(self, request: ProxyRequest) -> tuple[bytes, list[tuple[str, str]]]:
        request_id = uuid.uuid4().hex[:16].upper()
        if self.body is not None:
            body = self.body
        else:
            default_code, default_message = _default_error(self.code)
            body = s3_error_body(
                self.error_code or default_code,
                self.message or default_message,
                resource=urllib.parse.unquote(request.path),
                request_id=request_id,
            )
        headers = [("Content-Type", "application/xml"), ("x-amz-request-id", request_id)]
        if self.headers:
            lower = {k.lower() for k in self.headers}
            headers = [h for h in headers if h[0].lower() not in lower]
            headers.extend(self.headers.items())
        return body, headers

    def __repr__(self) -> str:
        code = f", {self.error_code!r}" if self.error_code else ""
        return f"Status({self.code}{code})"


@dataclass(frozen=True)
class Reset(FaultAction):
    """Abort the client connection (TCP RST via ``SO_LINGER`` 0), no response."""


@dataclass(frozen=True)
class TruncateBody(FaultAction):
    """Forward upstream, then send the headers (with the *full*
    ``Content-Length``) and only part of the body, then close the connection.

    Give either ``fraction`` (of the body, ``0 <= fraction < 1``) or
    ``nbytes``; the default is half the body.  At most ``len(body) - 1`` bytes
    are sent, so a non-empty body is always actually short.
    """

    fraction: float | None = None
    nbytes: int | None = None

    def __post_init__(self) -> None:
        if self.fraction is not None and self.nbytes is not None:
            raise ValueError("give fraction or nbytes, not both")
        if self.fraction is not None and not 0 <= self.fraction < 1:
            raise ValueError("fraction must be in [0, 1)")
        if self.nbytes is not None and self.nbytes < 0:
            raise ValueError("nbytes must be >= 0")

    def keep(self, size: int) -> int:
        """How many of ``size`` body bytes to send."""
        if self.nbytes is not None:
            n = self.nbytes
        else:
            n = int(size * (0.5 if self.fraction is None else self.fraction))
        return max(0, min(n, size - 1))


@dataclass(frozen=True)
class Stall(FaultAction):
    """Read the request, send nothing for ``seconds``, then close."""

    seconds: float

    def __post_init__(self) -> None:
        if self.seconds < 0:
            raise ValueError("seconds must be >= 0")


@dataclass(frozen=True)
class Delay(FaultAction):
    """Sleep an extra ``seconds`` (on top of :attr:`S3Proxy.latency`), then
    forward normally.  Useful for slowing down only some requests."""

    seconds: float

    def __post_init__(self) -> None:
        if self.seconds < 0:
            raise ValueError("seconds must be >= 0")


Matcher = Callable[[ProxyRequest], bool]


class FaultRule:
    """A registered fault; returned by :meth:`S3Proxy.add_fault`."""

    __slots__ = ("_hits", "_lock", "action", "match", "times")

    def __init__(self, match: Matcher, action: FaultAction, times: int | None) -> None:
        self.match = match
        self.action = action
        self.times = times
        self._hits = 0
        self._lock = threading.Lock()

    @property
    def hits(self) -> int:
        """How many requests this rule has been applied to."""
        with self._lock:
            return self._hits

    @property
    def exhausted(self) -> bool:
        with self._lock:
            return self.times is not None and self._hits >= self.times

    def _try_claim(self, request: ProxyRequest) -> bool:
        if not self.match(request):
            return False
        with self._lock:
            if self.times is not None and self._hits >= self.times:
                return False
            self._hits += 1
            return True

    def __repr__(self) -> str:
        return f"<FaultRule {self.action!r} times={self.times} hits={self.hits}>"


def _make_matcher(match: Matcher | str | None) -> Matcher:
    if match is None:
        return lambda request: True
    if isinstance(match, str):
        needle = match

        def substring(request: ProxyRequest) -> bool:
            return needle in request.path or needle in urllib.parse.unquote(request.path)

        return substring
    if callable(match):
        return match
    raise TypeError(f"match must be a callable, a str or None, not {type(match).__name__}")


# --------------------------------------------------------------------------
# HTTP plumbing
# --------------------------------------------------------------------------


class _BadRequestError(Exception):
    pass


@dataclass
class _RawRequest:
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        values = [v for k, v in self.headers if k.lower() == name]
        return ", ".join(values) if values else None

    def connection_tokens(self) -> set[str]:
        value = self.header("connection") or ""
        return {t.strip().lower() for t in value.split(",") if t.strip()}

    @property
    def keep_alive(self) -> bool:
        tokens = self.connection_tokens()
        if self.version == "HTTP/1.0":
            return "keep-alive" in tokens
        return "close" not in tokens


def _readline(rfile: BinaryIO) -> bytes:
    line = rfile.readline(_MAX_LINE + 1)
    if len(line) > _MAX_LINE:
        raise _BadRequestError("line too long")
    return line


def _read_exact(rfile: BinaryIO, n: int) -> bytes:
    data = rfile.read(n)
    if len(data) != n:
        raise ConnectionError("client closed connection mid-body")
    return data


def _read_chunked(rfile: BinaryIO) -> bytes:
    parts: list[bytes] = []
    while True:
        line = _readline(rfile)
        if not line:
            raise ConnectionError("client closed connection mid-body")
        size_text = line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise _BadRequestError(f"bad chunk size {size_text!r}") from None
        if size == 0:
            break
        parts.append(_read_exact(rfile, size))
        if _read_exact(rfile, 2) != b"\r\n":
            raise _BadRequestError("missing CRLF after chunk")
    # Trailer section (dropped), terminated by an empty line.
    while True:
        line = _readline(rfile)
        if not line:
            raise ConnectionError("client closed connection in trailers")
        if line in (b"\r\n", b"\n"):
            break
    return b"".join(parts)


def _abort(sock: socket.socket) -> None:
    """Close ``sock`` with a TCP RST instead of a FIN."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _Connection:
    """Per-client-connection state."""

    def __init__(self, conn_id: int, sock: socket.socket) -> None:
        self.id = conn_id
        self.sock = sock
        self.upstream: http.client.HTTPConnection | None = None
        self.upstream_used = False
        self.closed = False

    def close_upstream(self) -> None:
        up = self.upstream
        self.upstream = None
        self.upstream_used = False
        if up is not None:
            with contextlib.suppress(OSError):
                if up.sock is not None:
                    _shutdown(up.sock)
                up.close()


# --------------------------------------------------------------------------
# The proxy
# --------------------------------------------------------------------------


class S3Proxy:
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

        self._lock = threading.Lock()
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

    # -- observation -------------------------------------------------------

    @property
    def requests(self) -> list[RequestRecord]:
        """A copy of the request log.

        Records are appended when the response starts going out (or the fault
        is applied), so a client that has seen a response finds it logged.
        """
        with self._lock:
            return list(self._records)

    def count(self, method: str | None = None) -> int:
        """Number of logged requests, optionally only those with ``method``."""
        with self._lock:
            if method is None:
                return len(self._records)
            wanted = method.upper()
            return sum(1 for r in self._records if r.method == wanted)

    @property
    def bytes_sent(self) -> int:
        """Total response *body* bytes written to clients."""
        with self._lock:
            return self._bytes_sent

    @property
    def peak_in_flight(self) -> int:
        """Highest number of requests being handled at the same time."""
        with self._lock:
            return self._peak_in_flight

    @property
    def open_connections(self) -> int:
        """Client connections currently open."""
        with self._lock:
            return len(self._connections)

    def reset(self) -> None:
        """Clear the request log and the byte/concurrency counters (not faults)."""
        with self._lock:
            self._records.clear()
            self._bytes_sent = 0
            self._peak_in_flight = self._in_flight

    # -- faults ------------------------------------------------------------

    def add_fault(
        self,
        match: Matcher | str | None,
        action: FaultAction,
        *,
        times: int | None = None,
    ) -> FaultRule:
        """Register a fault.

        ``match`` is a callable ``(ProxyRequest) -> bool``, a substring of the
        request path (raw or percent-decoded) or ``None`` (every request).
        ``times=None`` applies the fault to every matching request, an int to
        the first ``times`` matching requests only.  Rules are tried in the
        order they were added; the first one that matches (and is not
        exhausted) wins.
        """
        if not isinstance(action, FaultAction):
            raise TypeError(f"not a fault action: {action!r}")
        if times is not None and times < 0:
            raise ValueError("times must be >= 0 or None")
        rule = FaultRule(_make_matcher(match), action, times)
        with self._lock:
            self._faults.append(rule)
        return rule

    def remove_fault(self, rule: FaultRule) -> None:
        with self._lock:
            self._faults = [r for r in self._faults if r is not rule]

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _pick_fault(self, request: ProxyRequest) -> FaultAction | None:
        with self._lock:
            rules = list(self._faults)
        for rule in rules:
            if rule._try_claim(request):
                return rule.action
        return None

    # -- bookkeeping -------------------------------------------------------

    def _log(self, record: RequestRecord) -> int:
        with self._lock:
            self._records.append(record)
            self._bytes_sent += record.response_body_bytes
            return len(self._records) - 1

    def _correct(self, index: int, record: RequestRecord, sent: int) -> None:
        """Fix up a record logged optimistically before sending."""
        with self._lock:
            delta = sent - record.response_body_bytes
            if index < len(self._records) and self._records[index] is record:
                self._records[index] = replace(record, response_body_bytes=sent)
                self._bytes_sent += delta

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
            thread.start()

    def _serve_connection(self, conn: _Connection) -> None:
        rfile = cast(BinaryIO, conn.sock.makefile("rb", buffering=65536))
        abort = False
        try:
            while not self._stop_event.is_set():
                try:
                    raw = self._read_request(rfile, conn.sock)
                except _BadRequestError as exc:
                    self._send_simple(conn.sock, 400, str(exc))
                    break
                if raw is None:
                    break
                with self._lock:
                    self._in_flight += 1
                    self._peak_in_flight = max(self._peak_in_flight, self._in_flight)
                try:
                    keep_going, abort = self._handle(conn, raw)
                finally:
                    with self._lock:
                        self._in_flight -= 1
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

    def _read_request(self, rfile: BinaryIO, sock: socket.socket) -> _RawRequest | None:
        line = _readline(rfile)
        while line in (b"\r\n", b"\n"):  # tolerate stray CRLFs between requests
            line = _readline(rfile)
        if not line:
            return None
        try:
            method, target, version = line.decode("latin-1").rstrip("\r\n").split(" ")
        except ValueError:
            raise _BadRequestError(f"bad request line {line!r}") from None
        if not version.startswith("HTTP/1."):
            raise _BadRequestError(f"unsupported version {version!r}")
        headers: list[tuple[str, str]] = []
        while True:
            hline = _readline(rfile)
            if not hline:
                raise ConnectionError("client closed connection in headers")
            if hline in (b"\r\n", b"\n"):
                break
            text = hline.decode("latin-1").rstrip("\r\n")
            if text[:1] in (" ", "\t") and headers:  # obsolete line folding
                name, value = headers[-1]
                headers[-1] = (name, f"{value} {text.strip()}")
                continue
            name, sep, value = text.partition(":")
            if not sep or not name or name != name.strip():
                raise _BadRequestError(f"bad header line {hline!r}")
            headers.append((name, value.strip()))
            if len(headers) > _MAX_HEADERS:
                raise _BadRequestError("too many headers")
        raw = _RawRequest(method.upper(), target, version, headers, b"")

        if raw.version != "HTTP/1.0" and (raw.header("expect") or "").lower() == "100-continue":
            sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        te = (raw.header("transfer-encoding") or "").lower()
        if te:
            if te.split(",")[-1].strip() != "chunked":
                raise _BadRequestError(f"unsupported transfer-encoding {te!r}")
            raw.body = _read_chunked(rfile)
        else:
            length_text = raw.header("content-length")
            if length_text is not None:
                try:
                    length = int(length_text)
                except ValueError:
                    raise _BadRequestError(f"bad content-length {length_text!r}") from None
                if length < 0:
                    raise _BadRequestError("negative content-length")
                raw.body = _read_exact(rfile, length)
        return raw

    def _handle(self, conn: _Connection, raw: _RawRequest) -> tuple[bool, bool]:
        """Serve one request.  Returns ``(keep_connection, abort_with_rst)``."""
        target = raw.target
        if "://" in target.split("?", 1)[0]:  # absolute-form
            parts = urllib.parse.urlsplit(target)
            target = parts.path or "/"
            if parts.query:
                target += "?" + parts.query
        path, _, query = target.partition("?")
        lower_headers: dict[str, str] = {}
        for name, value in raw.headers:
            key = name.lower()
            lower_headers[key] = f"{lower_headers[key]}, {value}" if key in lower_headers else value
        request = ProxyRequest(
            method=raw.method,
            path=path,
            query=query,
            headers=lower_headers,
            range_header=lower_headers.get("range"),
            body=raw.body,
            connection_id=conn.id,
        )

        def record(status: int | None, body_bytes: int, fault: FaultAction | None) -> RequestRecord:
            return RequestRecord(
                method=request.method,
                path=request.path,
                query=request.query,
                headers=dict(request.headers),
                range_header=request.range_header,
                response_status=status,
                response_body_bytes=body_bytes,
                request_body_bytes=len(raw.body),
                fault=None if fault is None else repr(fault),
                connection_id=conn.id,
            )

        latency = self.latency
        if latency > 0 and self._stop_event.wait(latency):
            return False, False

        action = self._pick_fault(request)
        keep_alive = raw.keep_alive
        head_only = raw.method == "HEAD"

        if isinstance(action, Reset):
            self._log(record(None, 0, action))
            return False, True
        if isinstance(action, Stall):
            self._log(record(None, 0, action))
            self._stop_event.wait(action.seconds)
            return False, False
        if isinstance(action, Status):
            body, headers = action.render(request)
            if head_only:
                body = b""
            headers.append(("Content-Length", str(len(body))))
            return self._respond(
                conn,
                raw,
                record(action.code, len(body), action),
                status=action.code,
                headers=headers,
                body=body,
                keep_alive=keep_alive,
            )
        if isinstance(action, Delay) and action.seconds > 0 and self._stop_event.wait(action.seconds):
            return False, False

        # Forward upstream.
        try:
            status, reason, up_headers, up_body = self._forward(conn, raw, target)
        except _DISCONNECT_ERRORS as exc:
            if self._stop_event.is_set():
                return False, False
            body = s3_error_body("BadGateway", f"S3Proxy: upstream failed: {exc!r}")
            headers = [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))]
            if head_only:
                body = b""
            return self._respond(
                conn,
                raw,
                record(502, len(body), action),
                status=502,
                headers=headers,
                body=body,
                keep_alive=keep_alive,
            )

        headers = self._filter_response_headers(up_headers, head_only, status)
        if head_only or status in (204, 304) or 100 <= status < 200:
            body = b""
        else:
            body = up_body
            headers.append(("Content-Length", str(len(body))))

        if isinstance(action, TruncateBody):
            keep = action.keep(len(body))
            self._respond(
                conn,
                raw,
                record(status, keep, action),
                status=status,
                headers=headers,
                body=body[:keep],
                keep_alive=False,
                reason=reason,
                send_close_header=False,
            )
            return False, False
        return self._respond(
            conn,
            raw,
            record(status, len(body), action),
            status=status,
            headers=headers,
            body=body,
            keep_alive=keep_alive,
            reason=reason,
        )

    def _forward(
        self, conn: _Connection, raw: _RawRequest, target: str
    ) -> tuple[int, str, list[tuple[str, str]], bytes]:
        connection_tokens = raw.connection_tokens()
        headers = [
            (k, v)
            for k, v in raw.headers
            if k.lower() not in _HOP_BY_HOP
            and k.lower() not in connection_tokens
            and k.lower() not in ("content-length", "expect")
        ]
        send_length = (
            bool(raw.body)
            or raw.header("content-length") is not None
            or bool(raw.header("transfer-encoding"))
        )
        if send_length:
            headers.append(("Content-Length", str(len(raw.body))))

        for attempt in (1, 2):
            reused = conn.upstream is not None and conn.upstream_used
            if conn.upstream is None:
                conn.upstream = http.client.HTTPConnection(
                    self._upstream_host, self._upstream_port, timeout=_UPSTREAM_TIMEOUT
                )
                conn.upstream_used = False
            up = conn.upstream
            try:
                up.putrequest(raw.method, target, skip_host=True, skip_accept_encoding=True)
                for name, value in headers:
                    up.putheader(name, value)
                up.endheaders(raw.body if raw.body else None)
                resp = up.getresponse()
                body = resp.read()
                status, reason = resp.status, resp.reason
                resp_headers = list(resp.msg.items())
                conn.upstream_used = True
                if resp.will_close:
                    conn.close_upstream()
                return status, reason, resp_headers, body
            except (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine):
                conn.close_upstream()
                if attempt == 2 or not reused or self._stop_event.is_set():
                    raise
            except BaseException:
                conn.close_upstream()
                raise
        raise AssertionError("unreachable")

    @staticmethod
    def _filter_response_headers(
        headers: Iterable[tuple[str, str]], head_only: bool, status: int
    ) -> list[tuple[str, str]]:
        headers = list(headers)
        tokens: set[str] = set()
        for k, v in headers:
            if k.lower() == "connection":
                tokens |= {t.strip().lower() for t in v.split(",")}
        keep_length = head_only or status in (204, 304)
        out = []
        for k, v in headers:
            lk = k.lower()
            if lk in _HOP_BY_HOP or lk in tokens:
                continue
            if lk == "content-length" and not keep_length:
                continue
            out.append((k, v))
        return out

    def _respond(
        self,
        conn: _Connection,
        raw: _RawRequest,
        rec: RequestRecord,
        *,
        status: int,
        headers: list[tuple[str, str]],
        body: bytes,
        keep_alive: bool,
        reason: str | None = None,
        send_close_header: bool = True,
    ) -> tuple[bool, bool]:
        if reason is None:
            try:
                reason = HTTPStatus(status).phrase
            except ValueError:
                reason = "Unknown"
        lines = [f"HTTP/1.1 {status} {reason}"]
        lines.extend(f"{k}: {v}" for k, v in headers)
        if not keep_alive and send_close_header:
            lines.append("Connection: close")
        elif keep_alive and raw.version == "HTTP/1.0":
            lines.append("Connection: keep-alive")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

        # Log before the last byte goes out, so a client that has seen the
        # response also sees it in the log; corrected below on failure.
        index = self._log(rec)
        sent = 0
        try:
            if not body:
                conn.sock.sendall(head)
            else:
                view = memoryview(body)
                first = view[:_SEND_CHUNK]
                conn.sock.sendall(head + bytes(first))
                sent = len(first)
                while sent < len(view):
                    chunk = view[sent : sent + _SEND_CHUNK]
                    conn.sock.sendall(chunk)
                    sent += len(chunk)
        except OSError:
            self._correct(index, rec, sent)
            return False, False
        return keep_alive, False

    @staticmethod
    def _send_simple(sock: socket.socket, status: int, message: str) -> None:
        body = message.encode("utf-8", "replace")
        phrase = HTTPStatus(status).phrase
        with contextlib.suppress(OSError):
            sock.sendall(
                f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("latin-1")
                + body
            )
