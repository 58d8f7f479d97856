"""Serving one request: latency, faults, forwarding upstream, the response."""

from __future__ import annotations

import contextlib
import http.client
import threading
import urllib.parse
from http import HTTPStatus
from typing import Final

from tests.support.proxy.actions import (
    Delay,
    FaultAction,
    Hold,
    LoseResponse,
    Reset,
    Stall,
    Status,
    TruncateBody,
    s3_error_body,
)
from tests.support.proxy.ledger import _Ledger
from tests.support.proxy.records import ProxyRequest, RequestRecord
from tests.support.proxy.wire import (
    _DISCONNECT_ERRORS,
    _HOP_BY_HOP,
    _Connection,
    _filter_response_headers,
    _RawRequest,
)

_SEND_CHUNK: Final = 256 * 1024
_UPSTREAM_TIMEOUT: Final = 120.0


class _Handler(_Ledger):
    """Per-request serving of :class:`S3Proxy`.

    The attributes below are initialised by ``S3Proxy.__init__``.
    """

    latency: float
    drop_request_headers: frozenset[str]
    _stop_event: threading.Event
    _upstream_host: str
    _upstream_port: int

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

        action, stopping = self._before_answering(conn, raw, target, self._pick_fault(request))
        if stopping:
            return False, False
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

        headers = _filter_response_headers(up_headers, head_only, status)
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

    def _before_answering(
        self, conn: _Connection, raw: _RawRequest, target: str, action: FaultAction | None
    ) -> tuple[FaultAction | None, bool]:
        """Play the faults that act before the answer (:class:`Hold`, :class:`LoseResponse`):
        the action that decides the answer, and whether the proxy is stopping meanwhile."""
        if isinstance(action, Hold):
            action.release.wait(action.timeout)
            return action.then, self._stop_event.is_set()
        if isinstance(action, LoseResponse):
            # The server applies it and its answer is dropped; if the upstream fails instead, the
            # outcome is as unknown to us as to the client.
            with contextlib.suppress(*_DISCONNECT_ERRORS):
                self._forward(conn, raw, target)
            if action.applied is not None:
                action.applied.set()
                with self._lock:
                    self._lock.notify_all()
            if action.resume is not None:
                action.resume.wait(action.timeout)
            return action.then, self._stop_event.is_set()
        return action, False

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
            and k.lower() not in self.drop_request_headers
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
