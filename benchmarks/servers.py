"""The S3 the remote benchmarks talk to: moto in a child process, the counting proxy in front.

moto runs in its own process so that its CPU (several ms per request, in Python) does not share
the client's GIL: the round trips and CPU measured are the client's, as against a real S3. The
latency-injecting, request-counting proxy stays in this process, where its log is read.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tests.support import S3Proxy, make_bucket, put_objects, s3_storage_options

BUCKET = "toolnexus-bench"

_CHILD = """
import sys
from tests.support import start_moto_server
server = start_moto_server()
print(server.endpoint_url, flush=True)
sys.stdin.read()  # until the parent closes our stdin
server.stop()
"""


@dataclass
class S3:
    """The moto endpoint, the proxy in front of it, and storage options that go through the proxy."""

    endpoint: str
    proxy: S3Proxy
    #: The moto server's process id, for its CPU time.
    pid: int

    def options(self, **extra: Any) -> dict[str, Any]:
        return s3_storage_options(self.proxy.endpoint_url, **extra)

    def put(self, objects: dict[str, bytes]) -> None:
        put_objects(self.endpoint, BUCKET, objects)

    def observe(self, function: Callable[[], object], latency: float = 0.0) -> tuple[float, S3Proxy]:
        """Run once with a fresh request log; returns the wall time."""
        self.proxy.latency = latency
        self.proxy.reset()
        start = time.perf_counter()
        function()
        return time.perf_counter() - start, self.proxy


@contextmanager
def s3_environment() -> Iterator[S3]:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        endpoint = child.stdout.readline().strip()
        if not endpoint.startswith("http://"):
            raise RuntimeError(f"moto did not start: {endpoint!r}")
        proxy = S3Proxy(endpoint).start()
        try:
            make_bucket(endpoint, BUCKET)
            yield S3(endpoint, proxy, child.pid)
        finally:
            proxy.stop()
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
