"""Homes and bundles over HTTP, against a real ``http.server`` on loopback (no Range support).

Python's ``SimpleHTTPRequestHandler`` ignores ``Range`` and always sends the whole file, like many
static hosts: a home there composes with each file read only up to the cap, and zip and tar
bundles compose through a bounded plain download / one streaming GET.
"""

from __future__ import annotations

import asyncio
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.http import Server, serving
from toolnexus.agents import (
    MAX_BOOTSTRAP_FILE_BYTES,
    BootstrapError,
    compose_soul,
    compose_soul_async,
    inspect_soul,
    memory_tool,
)

FILES = {"AGENTS.md": b"# Rules\n\nBe kind.\n", "SOUL.md": b"You are Aster.\n", "MEMORY.md": b""}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, Server]]:
    root = tmp_path / "www"
    (root / "aster").mkdir(parents=True)
    for name, data in FILES.items():
        (root / "aster" / name).write_bytes(data)
    with serving(root) as server:
        yield root, server


def test_an_http_home_composes_like_the_folder(served: tuple[Path, Server]) -> None:
    root, server = served
    expected = compose_soul(root / "aster")
    assert compose_soul(f"{server.url}/aster") == expected
    assert asyncio.run(compose_soul_async(f"{server.url}/aster")) == expected
    assert inspect_soul(f"{server.url}/aster").found == expected[1]


def test_an_outsized_file_is_read_only_up_to_the_cap(served: tuple[Path, Server]) -> None:
    root, server = served
    (root / "aster" / "SOUL.md").write_bytes(b"x" * (32 * 1024 * 1024))
    server.sent.clear()
    report = inspect_soul(f"{server.url}/aster")
    soul_report = report.files[1]
    assert soul_report.truncated
    assert soul_report.kept_bytes == MAX_BOOTSTRAP_FILE_BYTES
    # The server pushes what the loopback socket buffers take before it notices the hang-up;
    # never the 32 MiB file.
    assert server.bytes_sent() < 16 * 1024 * 1024


def test_zip_and_tar_bundles_compose_without_range_support(served: tuple[Path, Server]) -> None:
    root, server = served
    expected = compose_soul(root / "aster")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in FILES.items():
            archive.writestr(f"aster/{name}", data)
    (root / "aster.zip").write_bytes(buffer.getvalue())
    (root / "aster.bin").write_bytes(buffer.getvalue())
    import tarfile  # noqa: PLC0415

    with tarfile.open(root / "aster.tgz", "w:gz") as archive:
        archive.add(root / "aster", arcname="aster")
    for name in ("aster.zip", "aster.bin", "aster.tgz"):
        assert compose_soul(f"{server.url}/{name}") == expected, name
    assert compose_soul(f"zip://aster::{server.url}/aster.zip") == expected
    assert compose_soul(f"tar://aster::{server.url}/aster.tgz") == expected


def test_missing_homes_and_writes_are_errors_naming_the_url(served: tuple[Path, Server]) -> None:
    _, server = served
    with pytest.raises(FileNotFoundError, match=rf"{server.url}/nobody: no such persona home"):
        compose_soul(f"{server.url}/nobody")
    with pytest.raises(BootstrapError, match=rf"{server.url}/aster: is on a read-only HTTPFileSystem"):
        memory_tool(f"{server.url}/aster")
