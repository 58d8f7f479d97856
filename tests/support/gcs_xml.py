"""GCS's XML API in front of fake-gcs-server, for obstore (whose GCS client speaks only XML).

fake-gcs-server serves XML reads and listings (``GET /{bucket}/{object}``, ``?list-type=2``) but
answers an XML write (``PUT /{bucket}/{object}``) ``400 invalid uploadType`` (it implements the
JSON upload API), has no XML delete, and ignores ``If-None-Match`` / ``If-Match`` on reads. This
gateway turns each such request into its JSON-API twin and passes the rest through:

- ``PUT`` → a multipart ``POST /upload/storage/v1/b/{bucket}/o`` (the upload fake-gcs-server
  checks preconditions on) with ``x-goog-if-generation-match`` as ``ifGenerationMatch``:
  **fake-gcs-server decides the condition** (its 412 comes back as it is), and the
  ``x-goog-meta-toolnexus-edits`` header as the object's metadata (the memory stores' lineage);
  the reply carries the new ``ETag`` and ``x-goog-generation`` as GCS's XML API does;
- ``DELETE`` → ``DELETE /storage/v1/b/{bucket}/o/{object}``;
- ``GET``/``HEAD`` with ``If-None-Match`` / ``If-Match``: forwarded without them, and answered
  ``304`` / ``412`` when the ETag of that very response does (not) match — what the condition
  means, applied to the version the server sent.

Nothing is stored here and no condition on a write is evaluated here.
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from toolnexus.stores.fsspec import _BOUNDARY, _multipart  # the multipart body GcsStore uploads

__all__ = ["GcsXmlGateway"]

#: Request headers passed upstream as they are.
_FORWARDED = ("range", "content-type")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read outcomes, not logs."""

    def _upstream(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection(self.server.upstream_host, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def _reply(self, status: int, headers: dict[str, str], body: bytes, *, head: bool = False) -> None:
        self.send_response(status)
        for name, value in headers.items():
            if name not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                self.send_header(name, value)
        self.send_header(
            "Content-Length", headers.get("content-length", str(len(body))) if head else str(len(body))
        )
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _object(self) -> tuple[str, str]:
        bucket, _, key = urllib.parse.urlsplit(self.path).path.lstrip("/").partition("/")
        return urllib.parse.unquote(bucket), urllib.parse.unquote(key)

    def _read(self, head: bool) -> None:
        forwarded = {name: self.headers[name] for name in _FORWARDED if self.headers.get(name)}
        status, headers, body = self._upstream(self.command, self.path, headers=forwarded)
        etag = headers.get("etag")
        if status in (200, 206) and etag is not None:
            if self.headers.get("if-none-match") == etag:
                return self._reply(304, {"etag": etag}, b"")
            if_match = self.headers.get("if-match")
            if if_match is not None and if_match != etag:
                return self._reply(412, {}, b"<Error><Code>PreconditionFailed</Code></Error>")
        self._reply(status, headers, body, head=head)

    def do_GET(self) -> None:
        self._read(head=False)

    def do_HEAD(self) -> None:
        self._read(head=True)

    def do_PUT(self) -> None:
        bucket, key = self._object()
        data = self.rfile.read(int(self.headers.get("content-length") or 0))
        query = {"uploadType": "multipart"}
        generation = self.headers.get("x-goog-if-generation-match")
        if generation is not None:
            query["ifGenerationMatch"] = generation
        target = f"/upload/storage/v1/b/{urllib.parse.quote(bucket)}/o?{urllib.parse.urlencode(query)}"
        content_type = f'multipart/related; boundary="{_BOUNDARY}"'
        body = _multipart(key, data, self.headers.get("x-goog-meta-toolnexus-edits"))
        status, _, body = self._upstream("POST", target, body, {"Content-Type": content_type})
        if status != 200:
            return self._reply(status, {}, body)
        created = json.loads(body)
        headers = {"etag": f'"{created["etag"]}"', "x-goog-generation": str(created["generation"])}
        self._reply(200, headers, b"")

    def do_DELETE(self) -> None:
        bucket, key = self._object()
        target = f"/storage/v1/b/{urllib.parse.quote(bucket)}/o/{urllib.parse.quote(key, safe='')}"
        status, _, body = self._upstream("DELETE", target)
        self._reply(204 if status in (200, 204) else status, {}, b"" if status in (200, 204) else body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    upstream_host: str


class GcsXmlGateway:
    """The gateway on 127.0.0.1 (an ephemeral port) in a thread; ``url`` is its base URL."""

    def __init__(self, upstream: str) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.upstream_host = urllib.parse.urlsplit(upstream).netloc
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="gcs-xml", daemon=True
        )

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
