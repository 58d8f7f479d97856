"""The ``gcp-storage-emulator`` package's GCS server, in this process on loopback, for gcsfs.

gcsfs finds it through ``STORAGE_EMULATOR_HOST`` (set here for this process and the workers it
spawns); ``GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false`` skips a slow gRPC probe for zonal buckets.
Known gap, checked by the tests: the emulator ignores ``ifGenerationMatch`` preconditions.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from gcp_storage_emulator.server import create_server

__all__ = ["GCS_OPTIONS", "GcsEmulator", "start_gcs_emulator"]

#: gcsfs options for the emulator (no credentials; the project is a placeholder).
GCS_OPTIONS: dict[str, Any] = {"token": "anon", "project": "toolnexus-tests"}


class GcsEmulator:
    """A running emulator; :meth:`stop` ends it."""

    def __init__(self, server: Any, endpoint_url: str) -> None:
        self.server = server
        self.endpoint_url = endpoint_url

    def stop(self) -> None:
        self.server.stop()


def start_gcs_emulator() -> GcsEmulator:
    """Start the emulator on 127.0.0.1 with an ephemeral port, objects kept in memory."""
    logging.getLogger("gcp_storage_emulator").setLevel(logging.ERROR)
    server = create_server("127.0.0.1", 0, in_memory=True)
    server._api.daemon = True  # never keeps the interpreter alive after a failed run
    server.start()
    httpd = server._api._httpd
    httpd.handle_error = lambda request, address: None  # clients closing early is not news
    endpoint_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    os.environ["STORAGE_EMULATOR_HOST"] = endpoint_url
    os.environ["GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"] = "false"
    return GcsEmulator(server, endpoint_url)
