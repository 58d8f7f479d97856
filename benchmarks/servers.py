"""The S3 the remote benchmarks talk to: moto and the counting proxy, each in its own process.

Both run outside the client's process so that their CPU does not share the client's GIL: the
round trips and CPU measured are the client's, as against a real S3, where neither the network
nor the server runs on the client's interpreter. The proxy's log is read over a pipe.

moto is moto's S3 application alone, as everywhere in the tests (:mod:`tests.support.s3`), and a
ranged GET reads only the range of bytes kept in memory (:func:`serve_moto`): stock moto copies the
whole object out of a temporary file for every ranged GET (~55 ms for a 48 MiB bundle, a cost
proportional to the object that S3 does not have). The server's CPU is reported beside the rows
it affects (the "where the time goes" rows of the S3 home and the fleet).
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

from tests.support import make_bucket, put_objects, s3_storage_options, start_moto_server
from tests.support.proxy import RequestRecord

BUCKET = "toolnexus-bench"

_MOTO_CHILD = "from benchmarks.servers import serve_moto; serve_moto()"


def _keep_object_bytes_in_memory() -> None:
    """Let moto hand out one immutable ``bytes`` per object instead of copying it per GET.

    moto's ``FakeKey.value`` reads the whole object from its spooled temporary file for every
    request and then slices the range out of it, so a 64 KiB ranged GET of a 48 MiB object costs
    ~55 ms of server CPU. Keeping the bytes makes a ranged GET cost what S3's does: independent
    of the object's size (only the first GET after a write still copies, once; the benchmarks
    warm up before they measure). Writes go through moto's own setter and drop the kept copy.
    """
    from moto.s3.models import FakeKey  # noqa: PLC0415  (only in the server's process)

    original: property = FakeKey.value

    def read(key: Any) -> bytes:
        kept: bytes | None = key.__dict__.get("_bench_value")
        if kept is None:
            kept = original.fget(key)  # type: ignore[misc]
            key.__dict__["_bench_value"] = kept
        return kept

    def write(key: Any, value: bytes) -> None:
        key.__dict__.pop("_bench_value", None)
        original.fset(key, value)  # type: ignore[misc]

    FakeKey.value = property(read, write)  # type: ignore[method-assign,assignment]


def serve_moto() -> None:
    """The moto child: moto's S3 application on 127.0.0.1, until stdin closes.

    Racing conditional PUTs are decided atomically, as S3 decides them (``linearizable_puts``: the
    memory-edit rows). Each line on stdin is a fleet to store (see :meth:`S3.put_fleet`), answered
    with ``ok``.
    """
    from tests.support.s3 import linearizable_puts  # noqa: PLC0415

    _keep_object_bytes_in_memory()
    with linearizable_puts():
        server = start_moto_server()
        print(server.endpoint_url, flush=True)
        for line in sys.stdin:  # until the parent closes our stdin
            _store_fleet(**json.loads(line))
            print("ok", flush=True)
        server.stop()


def _store_fleet(bucket: str, prefix: str, count: int, files: dict[str, str]) -> None:
    """``count`` personas ``{prefix}p00000/…`` straight into moto's backend: 14,000 PUTs over HTTP
    would take minutes of moto's CPU, and the benchmarks measure reads."""
    from moto.core import DEFAULT_ACCOUNT_ID  # noqa: PLC0415  (only in the server's process)
    from moto.s3.models import s3_backends  # noqa: PLC0415

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    data = {name: base64.b64decode(text) for name, text in files.items()}
    for index in range(count):
        for name, body in data.items():
            backend.put_object(bucket, f"{prefix}p{index:05d}/{name}", body)


def serve_proxy(upstream: str, port: int, authkey: str) -> None:
    """The proxy child: an :class:`S3Proxy` in front of moto, answering calls from the parent."""
    from tests.support import S3Proxy  # noqa: PLC0415

    conn = Client(("127.0.0.1", port), authkey=authkey.encode())
    proxy = S3Proxy(upstream).start()
    conn.send(proxy.endpoint_url)
    while True:
        try:
            name, args = conn.recv()
        except EOFError:
            break
        try:
            if name == "latency":
                proxy.latency = args[0]
                value = None
            else:
                attribute = getattr(proxy, name)
                value = attribute(*args) if callable(attribute) else attribute
            conn.send((True, value))
        except Exception as error:  # handed back to the caller, who raises it
            conn.send((False, error))
    proxy.stop()


class ProxyProcess:
    """The parts of :class:`tests.support.S3Proxy` the benchmarks use, on a proxy in a child process."""

    def __init__(self, upstream: str) -> None:
        authkey = secrets.token_hex(16)
        with Listener(("127.0.0.1", 0), authkey=authkey.encode()) as listener:
            port = listener.address[1]
            call = f"serve_proxy({upstream!r}, {port}, {authkey!r})"
            code = f"from benchmarks.servers import serve_proxy\n{call}"
            self._process = subprocess.Popen([sys.executable, "-c", code])
            self._conn: Connection = listener.accept()
        self.endpoint_url: str = self._conn.recv()
        #: The proxy's process id, for its CPU time.
        self.pid = self._process.pid
        self._latency = 0.0

    def _call(self, name: str, *args: Any) -> Any:
        self._conn.send((name, args))
        ok, value = self._conn.recv()
        if not ok:
            raise value
        return value

    @property
    def latency(self) -> float:
        return self._latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        self._call("latency", seconds)
        self._latency = seconds

    def reset(self) -> None:
        self._call("reset")

    def count(self, method: str | None = None) -> int:
        count: int = self._call("count", method)
        return count

    @property
    def requests(self) -> list[RequestRecord]:
        records: list[RequestRecord] = self._call("requests")
        return records

    @property
    def bytes_sent(self) -> int:
        sent: int = self._call("bytes_sent")
        return sent

    @property
    def peak_in_flight(self) -> int:
        peak: int = self._call("peak_in_flight")
        return peak

    def stop(self) -> None:
        self._conn.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


@dataclass
class S3:
    """The moto endpoint, the proxy in front of it, and storage options that go through the proxy."""

    endpoint: str
    proxy: ProxyProcess
    #: The moto server's process id, for its CPU time.
    pid: int
    #: The moto child itself (its stdin takes fleets to store).
    moto: subprocess.Popen[str] | None = None

    def options(self, **extra: Any) -> dict[str, Any]:
        return s3_storage_options(self.proxy.endpoint_url, **extra)

    def put(self, objects: dict[str, bytes]) -> None:
        put_objects(self.endpoint, BUCKET, objects)

    def put_fleet(self, prefix: str, count: int, files: dict[str, bytes]) -> None:
        """``count`` personas holding ``files`` under ``prefix`` (``p00000/``, …), stored by moto itself."""
        moto = self.moto
        if moto is None or moto.stdin is None or moto.stdout is None:
            raise RuntimeError("this S3 has no moto child to store a fleet")
        encoded = {name: base64.b64encode(data).decode() for name, data in files.items()}
        command = {"bucket": BUCKET, "prefix": prefix, "count": count, "files": encoded}
        moto.stdin.write(json.dumps(command) + "\n")
        moto.stdin.flush()
        if moto.stdout.readline().strip() != "ok":
            raise RuntimeError("moto did not store the fleet")

    def observe(self, function: Callable[[], object], latency: float = 0.0) -> tuple[float, ProxyProcess]:
        """Run once with a fresh request log; returns the wall time."""
        self.proxy.latency = latency
        self.proxy.reset()
        start = time.perf_counter()
        function()
        return time.perf_counter() - start, self.proxy


@contextmanager
def s3_environment() -> Iterator[S3]:
    child = subprocess.Popen(
        [sys.executable, "-c", _MOTO_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        endpoint = child.stdout.readline().strip()
        if not endpoint.startswith("http://"):
            raise RuntimeError(f"moto did not start: {endpoint!r}")
        proxy = ProxyProcess(endpoint)
        try:
            make_bucket(endpoint, BUCKET)
            yield S3(endpoint, proxy, child.pid, child)
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
