"""HTTP/1.1 on the wire: reading client requests, framing responses, sockets."""

from __future__ import annotations

import contextlib
import http.client
import socket
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import BinaryIO, Final

_MAX_LINE: Final = 65536
_MAX_HEADERS: Final = 256

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


def _read_request(rfile: BinaryIO, sock: socket.socket) -> _RawRequest | None:
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


def _send_simple(sock: socket.socket, status: int, message: str) -> None:
    body = message.encode("utf-8", "replace")
    phrase = HTTPStatus(status).phrase
    with contextlib.suppress(OSError):
        sock.sendall(
            f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("latin-1")
            + body
        )


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
