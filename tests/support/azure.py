"""Azurite (Microsoft's Azure Storage emulator, an npm package) on loopback, for adlfs.

:func:`azurite_command` finds ``azurite-blob``: in ``.ci/node`` (where ``.ci/run`` installs it),
else on ``PATH``, else it installs it into ``.ci/node`` with npm, as ``.ci/run`` does — the tests
never skip for want of it. :func:`start_azurite` runs it on 127.0.0.1 with an ephemeral port and
a throwaway workspace, and waits for the line announcing the port (no sleeping).
"""

from __future__ import annotations

import fcntl
import os
import queue
import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Final

__all__ = ["AZURITE_CONNECTION_STRING", "Azurite", "azurite_command", "start_azurite"]

_REPO = Path(__file__).resolve().parents[2]
_NODE_PREFIX = _REPO / ".ci" / "node"

#: Azurite's well-known development account (documented by Microsoft; not a secret).
_DEV_ACCOUNT: Final = "devstoreaccount1"
_DEV_KEY: Final = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
AZURITE_CONNECTION_STRING: Final = (
    f"DefaultEndpointsProtocol=http;AccountName={_DEV_ACCOUNT};AccountKey={_DEV_KEY};"
    "BlobEndpoint=http://127.0.0.1:{port}/" + _DEV_ACCOUNT + ";"
)

_LISTENING = re.compile(r"listens on http://127\.0\.0\.1:(\d+)")


def azurite_command() -> str:
    """The ``azurite-blob`` executable, installed with npm into ``.ci/node`` if it is nowhere.

    Concurrent callers (pytest-xdist workers) take turns on a lock file, so one installs and the
    others find it installed.
    """
    local = _NODE_PREFIX / "node_modules" / ".bin" / "azurite-blob"
    found = shutil.which("azurite-blob")
    if found and not local.exists():
        return found
    _NODE_PREFIX.mkdir(parents=True, exist_ok=True)
    with open(_NODE_PREFIX / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if local.exists():
            return str(local)
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("Azurite is needed for the Azure tests and npm (Node.js) is not installed")
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(_NODE_PREFIX), "azurite"],
            check=True,
            stdout=subprocess.DEVNULL,
            timeout=900,
        )
    return str(local)


class Azurite:
    """A running Azurite blob service; :meth:`stop` ends it."""

    def __init__(self, process: subprocess.Popen[str], port: int) -> None:
        self.process = process
        self.port = port
        self.connection_string = AZURITE_CONNECTION_STRING.format(port=port)

    @property
    def storage_options(self) -> dict[str, str]:
        """adlfs options for this server (pass as ``storage_options``)."""
        return {"connection_string": self.connection_string}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _drain(stream: object, lines: queue.Queue[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        lines.put(line)


def start_azurite(workspace: Path, *, timeout: float = 60) -> Azurite:
    """Start ``azurite-blob`` on 127.0.0.1:0 with ``workspace`` as its data folder."""
    command = [
        azurite_command(),
        "--blobHost", "127.0.0.1", "--blobPort", "0", "-l", str(workspace),
        "--skipApiVersionCheck", "--loose", "--silent", "--disableTelemetry",
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ}
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_drain, args=(process.stdout, lines), daemon=True).start()
    seen: list[str] = []
    while True:
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            process.kill()
            raise RuntimeError(f"Azurite did not start within {timeout} s: {''.join(seen)}") from None
        seen.append(line)
        match = _LISTENING.search(line)
        if match:
            return Azurite(process, int(match.group(1)))
        if process.poll() is not None:
            raise RuntimeError(f"Azurite exited with {process.returncode}: {''.join(seen)}")
