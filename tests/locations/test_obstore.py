"""The obstore engine and obstore's fsspec adapter give fsspec's answers and fsspec's errors.

Souls are compared for every backend in ``test_conformance.py``; here the failures are: each
scenario runs on both engines (moto, faults from the proxy) and must raise the same error class
with the same message (up to the client's own detail in parentheses). Options are translated or
refused by name, before any request.
"""

from __future__ import annotations

import datetime
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from tests.support import S3Proxy, Status, s3_storage_options
from tests.support import obstore as engine
from tests.support.files import DictSource, zip_bytes
from toolnexus.agents import (
    MAX_BOOTSTRAP_FILE_BYTES,
    BootstrapError,
    SoulCache,
    compose_soul,
    inspect_soul,
    memory_tool,
    write_bundle,
)
from toolnexus.sources import ObstoreSource

PERSONA = {"SOUL.md": b"You are Aster.", "USER.md": b"Mira", "MEMORY.md": b""}
#: obstore retries a 5xx ten times over up to three minutes by default; the tests' faults are
#: meant to stay, so one quick retry is enough to show the answer.
QUICK_RETRY = {"max_retries": 1, "backoff": {"init_backoff": datetime.timedelta(milliseconds=5)}}


def engines(endpoint: str) -> dict[str, dict[str, Any]]:
    """The keyword arguments that point each engine at ``endpoint``."""
    return {
        "fsspec": {"storage_options": s3_storage_options(endpoint, skip_instance_cache=True)},
        "obstore": {
            "storage_options": {**engine.s3_options(endpoint), "retry_config": QUICK_RETRY},
            "engine": "obstore",
        },
    }


def failure(call: Callable[[], object]) -> tuple[type[BaseException], str]:
    """The error ``call`` raised, its message without the client's own detail in parentheses."""
    try:
        call()
    except Exception as error:  # the outcome under comparison
        return type(error), re.sub(r" \(.*\)$", "", str(error), flags=re.S)
    raise AssertionError("no error was raised")


@pytest.fixture
def homes(bucket: tuple[str, Callable[..., None]]) -> str:
    """A bucket holding a home, a bundle, a plain file and a corrupt bundle."""
    name, put = bucket
    put({f"aster/{n}": data for n, data in PERSONA.items()})
    put({"bundles/aster.zip": zip_bytes(PERSONA), "notes.txt": b"just text", "broken.zip": b"PK\x03\x04junk"})
    return name


SCENARIOS: dict[str, Callable[[str, dict[str, Any]], object]] = {
    "no such home": lambda b, kw: compose_soul(f"s3://{b}/nobody", **kw),
    "a plain file": lambda b, kw: compose_soul(f"s3://{b}/notes.txt", **kw),
    "a corrupt bundle": lambda b, kw: compose_soul(f"s3://{b}/broken.zip", **kw),
    "memory on a bundle": lambda b, kw: memory_tool(f"s3://{b}/bundles/aster.zip", **kw),
    "memory with no home": lambda b, kw: memory_tool(f"s3://{b}/nobody", **kw),
    "inspect no home": lambda b, kw: inspect_soul(f"s3://{b}/nobody", **kw),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_the_same_failure_raises_the_same_error(homes: str, moto_server: Any, scenario: str) -> None:
    outcomes = {
        name: failure(lambda kw=kw: SCENARIOS[scenario](homes, kw))
        for name, kw in engines(moto_server.endpoint_url).items()
    }
    assert outcomes["obstore"] == outcomes["fsspec"]


@pytest.mark.parametrize(
    ("fault", "file", "expected", "clients"),
    [
        (Status(403), "SOUL.md", (PermissionError, "cannot read SOUL.md in {home}: permission denied"), 2),
        (Status(403), None, (PermissionError, "cannot read {home}: permission denied"), 2),
        # fsspec's side of a lasting 500 (ten seconds of s3fs retries) is test_reliability_s3's.
        (Status(500), "USER.md", (BootstrapError, "cannot read USER.md in {home}: HTTP 500 .*"), 1),
    ],
    ids=["403 on one file", "403 on every file", "500 on one file"],
)
def test_denied_and_failed_reads_raise_the_same_errors(
    proxy: S3Proxy,
    homes: str,
    *,
    fault: Status,
    file: str | None,
    expected: tuple[type[Exception], str],
    clients: int,
) -> None:
    home = f"s3://{homes}/aster"
    path = f"/{homes}/aster/{file or ''}"
    proxy.add_fault(lambda request: request.method == "GET" and request.path.startswith(path), fault)
    for kw in list(engines(proxy.endpoint_url).values())[-clients:]:
        cls, message = failure(lambda kw=kw: compose_soul(home, **kw))
        assert cls is expected[0]
        assert re.fullmatch(expected[1].format(home=home), message), message


def test_the_adapter_reads_as_any_filesystem_and_maps_its_errors(proxy: S3Proxy, homes: str) -> None:
    """Absent names are absent (its cat_ranges would fail the batch), a 403 a PermissionError."""
    fs = engine.s3_adapter(proxy.endpoint_url)
    expected = compose_soul(f"s3://{homes}/aster", **engines(proxy.endpoint_url)["fsspec"])
    assert compose_soul(f"{homes}/aster", fs=fs) == expected
    assert compose_soul(f"{homes}/bundles/aster.zip", fs=fs) == expected
    assert inspect_soul(f"{homes}/aster", fs=fs).found == expected[1]
    cache = SoulCache()
    assert (
        cache.compose_soul(f"{homes}/aster", fs=fs) == cache.compose_soul(f"{homes}/aster", fs=fs) == expected
    )
    proxy.add_fault(lambda request: request.path.endswith("/aster/SOUL.md"), Status(403))
    with pytest.raises(
        PermissionError, match=f"cannot read SOUL.md in s3://{homes}/aster: permission denied"
    ):
        compose_soul(f"{homes}/aster", fs=fs)


def test_the_adapter_is_refused_for_memory_unless_single_writer_or_the_engine(
    homes: str, moto_server: Any
) -> None:
    fs = engine.s3_adapter(moto_server.endpoint_url)
    with pytest.raises(BootstrapError) as refused:
        memory_tool(f"{homes}/aster", fs=fs)
    assert str(refused.value) == (
        f"cannot write MEMORY.md in s3://{homes}/aster safely: FsspecStore offers no conditional write, "
        "so writers in other processes could silently overwrite each other's edits. If only one "
        "process ever writes this home, pass single_writer=True (CLI: --single-writer). For "
        "compare-and-swap writes through obstore, pass engine='obstore' (CLI: --engine obstore)."
    )
    native = memory_tool(f"{homes}/aster", fs=fs, engine="obstore")  # the adapter's store, natively
    assert native.tool(command="append", content="- native").startswith("ok: note appended")
    plain = memory_tool(f"{homes}/aster", fs=fs, single_writer=True)
    assert plain.tool(command="append", content="- plain").startswith("ok: note appended")
    assert compose_soul(f"{homes}/aster", fs=fs)[0].endswith("## MEMORY.md\n\n- native\n- plain")


def test_a_store_object_is_a_location_and_a_writable_home() -> None:
    """No server at all: obstore's MemoryStore, which enforces conditional puts like S3."""
    import obstore  # noqa: PLC0415
    from obstore.store import MemoryStore  # noqa: PLC0415

    store = MemoryStore()
    obstore.put(store, "personas/aster/SOUL.md", b"You are Aster.")
    home = ObstoreSource(store, "personas/aster")
    assert compose_soul(home) == ("## SOUL.md\n\nYou are Aster.", ["SOUL.md"])
    assert memory_tool(home).tool(command="append", content="Likes tea.").startswith("ok: note appended")
    assert compose_soul(home)[1] == ["SOUL.md", "MEMORY.md"]
    with pytest.raises(FileNotFoundError, match="memory://personas/nobody: no such persona home"):
        compose_soul(ObstoreSource(store, "personas/nobody"))


def test_write_bundle_writes_through_the_engine(homes: str, moto_server: Any) -> None:
    kw = engines(moto_server.endpoint_url)["obstore"]
    out = f"s3://{homes}/out/aster.zip"
    assert write_bundle(f"s3://{homes}/aster", out, **kw) == ["SOUL.md", "USER.md", "MEMORY.md"]
    assert compose_soul(out, **kw) == compose_soul(f"s3://{homes}/aster", **kw)
    with pytest.raises(FileExistsError, match="already exists"):
        write_bundle(f"s3://{homes}/aster", out, **kw)


@pytest.mark.parametrize("backend", ["azure", "gcs"])
def test_bundles_and_their_revalidation_on_the_emulators(
    request: pytest.FixtureRequest, backend: str
) -> None:
    """A zip from its tail (Azure: a HEAD, then a GET pinned to its ETag: no suffix ranges), a
    chained folder, and a cache that keeps an unchanged bundle and sees a replaced one."""
    import fsspec  # noqa: PLC0415

    if backend == "azure":
        server = request.getfixturevalue("azurite")
        options, protocol = engine.azure_options(server.connection_string), "az"
    else:
        server = request.getfixturevalue("fake_gcs_server")
        options, protocol = engine.gcs_options(request.getfixturevalue("gcs_xml").url), "gs"
    fs = fsspec.filesystem(protocol, skip_instance_cache=True, **server.storage_options)
    container = f"toolnexus-{uuid.uuid4().hex[:12]}"
    fs.mkdir(container)
    fs.pipe_file(f"{container}/flat.zip", zip_bytes(PERSONA))
    fs.pipe_file(f"{container}/folder.zip", zip_bytes(PERSONA, folder="aster/", folder_entry=True))
    kw = {"storage_options": options, "engine": "obstore"}
    expected = compose_soul(DictSource(PERSONA))
    assert compose_soul(f"{protocol}://{container}/flat.zip", **kw) == expected
    assert compose_soul(f"{protocol}://{container}/folder.zip", **kw) == expected
    chained = engine.keyed(kw, protocol)
    assert compose_soul(f"zip://aster::{protocol}://{container}/folder.zip", **chained) == expected
    cache = SoulCache()
    assert cache.compose_soul(f"{protocol}://{container}/flat.zip", **kw) == expected
    assert cache.compose_soul(f"{protocol}://{container}/flat.zip", **kw) == expected
    fs.pipe_file(f"{container}/flat.zip", zip_bytes({"SOUL.md": b"Birch."}))
    assert cache.compose_soul(f"{protocol}://{container}/flat.zip", **kw) == (
        "## SOUL.md\n\nBirch.",
        ["SOUL.md"],
    )


def test_inspect_reports_the_same_on_both_engines(
    bucket: tuple[str, Callable[..., None]], moto_server: Any
) -> None:
    """Sizes included: a file over the cap is sized from obstore's GET itself (no extra request)."""
    name, put = bucket
    put(
        {
            "big/AGENTS.md": b"a" * (MAX_BOOTSTRAP_FILE_BYTES + 10),
            "big/SOUL.md": b"\xef\xbb\xbfYou are Aster.\r\n",
        }
    )
    reports = [
        inspect_soul(f"s3://{name}/big", **kw).to_dict() for kw in engines(moto_server.endpoint_url).values()
    ]
    assert reports[0] == reports[1]
    assert reports[1]["files"][0]["size"] == MAX_BOOTSTRAP_FILE_BYTES + 10


def test_every_entry_point_takes_the_engine(homes: str, moto_server: Any) -> None:
    """compose_soul (sync, async, cached), inspect_soul, memory_tool, agent_from_dir and
    write_bundle all read through obstore when told, and answer what fsspec's engine answers."""
    import asyncio  # noqa: PLC0415

    from toolnexus.agents import agent_from_dir, compose_soul_async  # noqa: PLC0415

    home = f"s3://{homes}/aster"
    fsspec_kw, kw = engines(moto_server.endpoint_url).values()
    expected = compose_soul(home, **fsspec_kw)
    assert compose_soul(home, **kw) == expected
    assert asyncio.run(compose_soul_async(home, **kw)) == expected
    assert compose_soul(home, cache=SoulCache(), **kw) == expected
    assert inspect_soul(home, **kw).to_dict() == inspect_soul(home, **fsspec_kw).to_dict()

    async def model(system: str, messages: Any, tools: Any) -> str:
        return "ok"

    agent = agent_from_dir(home, model=model, **kw)
    assert isinstance(agent.source, ObstoreSource)
    assert agent.memory is not None
    assert agent.memory.tool(command="append", content="- through obstore").startswith("ok:")
    assert memory_tool(home, **kw).tool(command="view") == "- through obstore\n"
    out = f"s3://{homes}/out/entry.zip"
    assert write_bundle(home, out, **kw) == expected[1]
    assert compose_soul(out, **fsspec_kw)[1] == expected[1]


def test_a_server_ignoring_ranges_gets_an_error_not_a_download(
    proxy: S3Proxy, bucket: tuple[str, Callable[..., None]]
) -> None:
    """Whole objects answered to ranged GETs: a bundle larger than the tail it asked for is an
    error naming it, never fetched whole (it may hold large assets); a small one is read."""
    import io  # noqa: PLC0415
    import os  # noqa: PLC0415
    import zipfile  # noqa: PLC0415

    name, put = bucket
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("SOUL.md", b"You are Aster.")
        archive.writestr("assets/voice.bin", os.urandom(100 * 1024))
    put({"big.zip": buffer.getvalue(), "small.zip": zip_bytes(PERSONA)})
    proxy.drop_request_headers = frozenset({"range"})
    kw = engines(proxy.endpoint_url)["obstore"]
    with pytest.raises(BootstrapError, match=f"s3://{name}/big.zip.*does not answer byte ranges"):
        compose_soul(f"s3://{name}/big.zip", **kw)
    assert compose_soul(f"s3://{name}/small.zip", **kw) == compose_soul(DictSource(PERSONA))
