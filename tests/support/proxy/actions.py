"""Fault actions for :meth:`S3Proxy.add_fault`, and the rules that hold them."""

from __future__ import annotations

import threading
import urllib.parse
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Final
from xml.sax.saxutils import escape

from tests.support.proxy.records import ProxyRequest

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


@dataclass(frozen=True, eq=False)
class Hold(FaultAction):
    """Hold the request until ``release`` is set, then answer with ``then`` (or forward it).

    Lets a test get many requests in flight at once and release them together, instead of
    hoping they overlap within some latency. ``timeout`` only bounds a hang (the test forgot
    to release): the request then goes on as if released.
    """

    release: threading.Event
    then: Status | None = None
    timeout: float = 60.0


@dataclass(frozen=True, eq=False)
class LoseResponse(FaultAction):
    """Forward the request upstream (so the server applies it), then lose the answer: the client
    gets ``then`` instead — :class:`Reset` (the default: a connection reset), a :class:`Status`
    (a 5xx after the body was sent) or :class:`Stall` (no answer: the client times out).

    ``applied``, if given, is set once the server has answered, and the proxy then waits for
    ``resume`` (if given) before it answers the client: a test can act on the server while the
    client still does not know its request's outcome.
    """

    then: Reset | Status | Stall = Reset()
    applied: threading.Event | None = None
    resume: threading.Event | None = None
    timeout: float = 60.0


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
