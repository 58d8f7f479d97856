"""A real ``http.server`` serving a folder on loopback (no Range support, like many static hosts),
counting the body bytes it sends: for HTTP homes and bundles."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["Server", "serving"]


class CountingHandler(SimpleHTTPRequestHandler):
    """Serves a folder, quietly, counting the body bytes it managed to send."""

    sent: list[int]

    def copyfile(self, source: Any, outputfile: Any) -> None:
        try:
            while chunk := source.read(64 * 1024):
                outputfile.write(chunk)
                self.sent.append(len(chunk))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client had what it needed and hung up

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Server:
    def __init__(self, root: Path) -> None:
        self.sent: list[int] = []
        handler = type("Handler", (CountingHandler,), {"sent": self.sent})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def bytes_sent(self) -> int:
        return sum(self.sent)


@contextlib.contextmanager
def serving(root: Path) -> Iterator[Server]:
    """``root`` served until the block ends."""
    server = Server(root)
    server.thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
        server.thread.join(timeout=10)
