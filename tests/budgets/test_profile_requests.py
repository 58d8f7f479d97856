"""Files outside a profile are never read: on S3 no request names them, cached or not, in a
folder home or a zip bundle."""

from __future__ import annotations

import asyncio
import io
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import S3Proxy
from toolnexus.agents import (
    BOOTSTRAP_ORDER,
    PROFILES,
    Budget,
    SoulCache,
    compose_soul,
    compose_soul_async,
    inspect_soul,
)
from toolnexus.sources.objects import TAIL_BYTES

PERSONA = {name: f"# {name}\n\nText of {name}.\n".encode() * 40 for name in BOOTSTRAP_ORDER}


def asked(proxy: S3Proxy) -> list[str]:
    """The object names requested, in order of arrival."""
    return sorted(request.path.rsplit("/", 1)[-1] for request in proxy.requests)


def test_a_profile_on_s3_requests_only_its_files(
    proxy: S3Proxy, via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({f"aster/{file}": data for file, data in PERSONA.items()})
    home = f"s3://{name}/aster"
    _soul, found = compose_soul(home, storage_options=via_proxy, profile="subagent")
    assert found == ["AGENTS.md", "TOOLS.md"]
    assert asked(proxy) == ["AGENTS.md", "TOOLS.md"]
    assert {request.method for request in proxy.requests} == {"GET"}
    proxy.reset()
    report = inspect_soul(home, storage_options=via_proxy, profile="heartbeat", budget=Budget(total=100))
    assert asked(proxy) == ["HEARTBEAT.md"]
    assert report.found == ["HEARTBEAT.md"]
    assert len(report.soul) <= 100
    proxy.reset()
    found = asyncio.run(compose_soul_async(home, storage_options=via_proxy, files=["MEMORY.md"]))[1]
    assert found == asked(proxy) == ["MEMORY.md"]


def test_a_cached_profile_on_s3_revalidates_only_its_files(
    proxy: S3Proxy, via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({f"aster/{file}": data for file, data in PERSONA.items()})
    home, cache = f"s3://{name}/aster", SoulCache()
    group = sorted(PROFILES["group"])
    first = cache.compose_soul(home, storage_options=via_proxy, profile="group")
    assert asked(proxy) == group
    proxy.reset()
    again = cache.compose_soul(home, storage_options=via_proxy, profile="group")
    assert asked(proxy) == group, "no request for MEMORY.md"
    assert [request.response_status for request in proxy.requests] == [304] * len(group)
    assert again == first == compose_soul(home, storage_options=via_proxy, profile="group")


def large_bundle(files: dict[str, bytes]) -> tuple[bytes, dict[str, tuple[int, int]]]:
    """A zip of stored ``files`` and each member's ``[header, next header)`` span in it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data, zipfile.ZIP_STORED)
    data = buffer.getvalue()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        starts = [*sorted(member.header_offset for member in archive.infolist()), archive.start_dir]
        spans = {
            m.filename: (m.header_offset, starts[starts.index(m.header_offset) + 1])
            for m in archive.infolist()
        }
    return data, spans


def members_requested(proxy: S3Proxy, spans: dict[str, tuple[int, int]]) -> set[str]:
    """The members any ranged GET after the first (the tail) overlapped."""
    tail, *pieces = proxy.requests
    assert tail.range_header == f"bytes=-{TAIL_BYTES}"
    touched: set[str] = set()
    for request in pieces:
        first, last = request.byte_span
        touched |= {name for name, (start, end) in spans.items() if first < end and last >= start}
    return touched


#: How the names are chosen, and the names that makes.
SELECTIONS: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "subagent": ({"profile": "subagent"}, PROFILES["subagent"]),
    "files": ({"files": ["MEMORY.md", "SOUL.md"]}, ("SOUL.md", "MEMORY.md")),
}


@pytest.mark.parametrize("selection", SELECTIONS)
def test_a_profile_on_an_s3_zip_bundle_fetches_only_its_members(
    proxy: S3Proxy,
    engine_via_proxy: dict[str, Any],
    bucket: tuple[str, Callable[..., None]],
    tmp_path: Path,
    selection: str,
) -> None:
    select, names = SELECTIONS[selection]
    # Every member larger than the tail, so none lies inside the first request.
    files = {name: f"# {name}\n\n".encode() + b"A line of the persona.\n" * 4000 for name in BOOTSTRAP_ORDER}
    assert all(len(data) > TAIL_BYTES for data in files.values())
    data, spans = large_bundle(files)
    name, put = bucket
    put({"aster.zip": data})
    folder = tmp_path / "aster"
    folder.mkdir()
    for file, body in files.items():
        (folder / file).write_bytes(body)
    soul, found = compose_soul(f"s3://{name}/aster.zip", **engine_via_proxy, **select)
    assert (soul, found) == compose_soul(folder, **select)
    assert found == list(names)
    assert members_requested(proxy, spans) == set(names)
    assert len(proxy.requests) <= 1 + len(names)
