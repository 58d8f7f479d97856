"""Persona homes on S3 (moto), Azure Blob (Azurite) and GCS (fake-gcs-server) reached through the
fault-injecting proxy, for the exactly-once tests: the tool talks through the proxy, the test
reads and writes the server directly.

Each client gets a short read timeout, so a lost answer of the "no answer at all" kind costs a
second rather than the SDK's default minute, and Azure's blob client gets a short retry backoff
(its default waits 15 s before retrying a 5xx). Both are ordinary settings of the real SDKs.
"""

from __future__ import annotations

import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import fsspec
import pytest

from tests.support.proxy import ProxyRequest, S3Proxy
from toolnexus.agents import MemoryTool, memory_tool

__all__ = ["PATIENT", "READ_TIMEOUT", "LossyStore", "lossy_store", "writes_memory"]

#: Seconds a client waits for an answer before it gives up and retries.
READ_TIMEOUT = 1
#: The read timeout of a client whose answer a test holds back on purpose (until an event): only a
#: hang guard, so that a loaded machine cannot make the client give up before the test lets go.
PATIENT = 60


def writes_memory(request: ProxyRequest) -> bool:
    """A write of some MEMORY.md: S3/Azure name it in the path, GCS in the multipart JSON."""
    return request.method in ("PUT", "POST") and (
        urllib.parse.unquote(request.path).endswith("/MEMORY.md") or b'/MEMORY.md"' in request.body[:4096]
    )


@dataclass
class LossyStore:
    """One bucket on one server, the proxy in front of it, and tools that talk through it."""

    backend: str
    proxy: S3Proxy
    direct: Any  # an fsspec filesystem talking to the server itself
    bucket: str
    #: (home path, through the proxy?, read timeout) -> a memory tool for that home
    tool_for: Callable[..., MemoryTool]

    def home(self, memory: bytes | None) -> str:
        """A fresh persona folder (SOUL.md, and MEMORY.md unless ``None``); its bucket path."""
        path = f"{self.bucket}/{uuid.uuid4().hex[:12]}"
        self.direct.pipe_file(f"{path}/SOUL.md", b"You are Aster.\n")
        if memory is not None:
            self.direct.pipe_file(f"{path}/MEMORY.md", memory)
        return path

    def memory(self, home: str) -> bytes:
        self.direct.invalidate_cache()
        return bytes(self.direct.cat_file(f"{home}/MEMORY.md"))


def _s3(request: pytest.FixtureRequest, proxy: S3Proxy) -> LossyStore:
    from tests.support.s3 import s3_storage_options  # noqa: PLC0415

    moto = request.getfixturevalue("moto_server")
    bucket = request.getfixturevalue("new_bucket")()

    def tool_for(home: str, proxied: bool, timeout: float = READ_TIMEOUT) -> MemoryTool:
        endpoint = proxy.endpoint_url if proxied else moto.endpoint_url
        config = {"config_kwargs": {"read_timeout": timeout}, "skip_instance_cache": True}
        return memory_tool(f"s3://{home}", storage_options=s3_storage_options(endpoint, **config))

    direct = fsspec.filesystem("s3", **s3_storage_options(moto.endpoint_url, skip_instance_cache=True))
    return LossyStore("s3", proxy, direct, bucket, tool_for)


def _azure(request: pytest.FixtureRequest, proxy: S3Proxy) -> LossyStore:
    from azure.storage.blob.aio import BlobServiceClient, ExponentialRetry  # noqa: PLC0415

    from tests.support.azure import AZURITE_CONNECTION_STRING  # noqa: PLC0415

    azurite = request.getfixturevalue("azurite")

    def filesystem(port: int, timeout: float) -> Any:
        connection = AZURITE_CONNECTION_STRING.format(port=port)
        fs = fsspec.filesystem("az", connection_string=connection, skip_instance_cache=True)
        retry = ExponentialRetry(initial_backoff=0.1, increment_base=0.2, random_jitter_range=0.05)
        fs.service_client = BlobServiceClient.from_connection_string(
            connection, retry_policy=retry, read_timeout=timeout
        )
        return fs

    def tool_for(home: str, proxied: bool, timeout: float = READ_TIMEOUT) -> MemoryTool:
        return memory_tool(home, fs=filesystem(proxy.port if proxied else azurite.port, timeout))

    direct = fsspec.filesystem("az", **azurite.storage_options, skip_instance_cache=True)
    bucket = f"lossy-{uuid.uuid4().hex[:8]}"
    direct.mkdir(bucket)
    return LossyStore("azure", proxy, direct, bucket, tool_for)


def _gcs(request: pytest.FixtureRequest, proxy: S3Proxy) -> LossyStore:
    server = request.getfixturevalue("fake_gcs_server")

    def tool_for(home: str, proxied: bool, timeout: float = READ_TIMEOUT) -> MemoryTool:
        endpoint = proxy.endpoint_url if proxied else server.endpoint_url
        options = {**server.storage_options, "endpoint_url": endpoint, "requests_timeout": timeout}
        return memory_tool(f"gs://{home}", storage_options={**options, "skip_instance_cache": True})

    direct = fsspec.filesystem("gs", **server.storage_options, skip_instance_cache=True)
    bucket = f"lossy-{uuid.uuid4().hex[:8]}"
    direct.mkdir(bucket)
    return LossyStore("gcs", proxy, direct, bucket, tool_for)


_UPSTREAM = {
    "s3": ("moto_server", lambda server: server.endpoint_url),
    "azure": ("azurite", lambda server: f"http://127.0.0.1:{server.port}"),
    "gcs": ("fake_gcs_server", lambda server: server.endpoint_url),
}
_MAKERS = {"s3": _s3, "azure": _azure, "gcs": _gcs}


def lossy_store(
    request: pytest.FixtureRequest, backend: str, proxy_factory: Callable[[str], S3Proxy]
) -> LossyStore:
    """The backend's server behind a fresh proxy (``proxy_factory(upstream_url)`` starts it)."""
    fixture, url = _UPSTREAM[backend]
    proxy = proxy_factory(url(request.getfixturevalue(fixture)))
    return _MAKERS[backend](request, proxy)
