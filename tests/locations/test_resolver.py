"""One resolver: every entry point turns a location into the same source, and gives the same answer.

A zip named ``aster.bin`` is a zip bundle for compose, inspect, write_bundle and memory_tool alike,
on local disk, on ``memory://`` and on S3; an unknown protocol names the location; a new archive
kind is one registration.
"""

from __future__ import annotations

import asyncio
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from tests.support import put_objects
from tests.support.cli import run
from tests.support.files import zip_bytes
from toolnexus.agents import (
    BootstrapError,
    compose_soul,
    compose_soul_async,
    inspect_soul,
    memory_tool,
    write_bundle,
)
from toolnexus.sources import (
    BundleSource,
    FsspecSource,
    LocalSource,
    SourceBase,
    archive_kinds,
    resolve,
)

FILES = {"AGENTS.md": b"# Rules\n\nBe kind.\n", "SOUL.md": b"You are Aster.\n"}
EXPECTED = ("## AGENTS.md\n\n# Rules\n\nBe kind.\n\n## SOUL.md\n\nYou are Aster.", ["AGENTS.md", "SOUL.md"])


@pytest.fixture
def memfs() -> Iterator[Any]:
    fs = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)
    yield fs
    fs.store.clear()


def test_a_zip_under_another_name_is_a_bundle_on_local_disk(tmp_path: Path) -> None:
    bundle = tmp_path / "aster.bin"
    bundle.write_bytes(zip_bytes(FILES, folder="aster/", compression=zipfile.ZIP_STORED))
    assert compose_soul(bundle) == EXPECTED
    assert inspect_soul(bundle).found == EXPECTED[1]
    assert write_bundle(bundle, tmp_path / "flat.zip") == EXPECTED[1]
    assert compose_soul(tmp_path / "flat.zip") == EXPECTED
    with pytest.raises(BootstrapError, match=r"aster\.bin: is a zip bundle \(read-only\)"):
        memory_tool(bundle)


def test_a_zip_under_another_name_is_a_bundle_on_memory_fs(memfs: Any, tmp_path: Path) -> None:
    memfs.pipe_file("/aster.bin", zip_bytes(FILES, compression=zipfile.ZIP_STORED))
    assert compose_soul("/aster.bin", fs=memfs) == EXPECTED
    assert inspect_soul("/aster.bin", fs=memfs).found == EXPECTED[1]
    assert write_bundle("/aster.bin", tmp_path / "flat.zip", fs=memfs) == EXPECTED[1]
    with pytest.raises(BootstrapError, match=r"memory:///aster\.bin: is a zip bundle \(read-only\)"):
        memory_tool("/aster.bin", fs=memfs)


@pytest.mark.slow
@pytest.mark.s3
def test_a_zip_under_another_name_is_a_bundle_on_s3(
    moto_server: Any, new_bucket: Callable[[], str], s3_options: dict[str, Any]
) -> None:
    bucket = new_bucket()
    put_objects(
        moto_server.endpoint_url, bucket, {"aster.bin": zip_bytes(FILES, compression=zipfile.ZIP_STORED)}
    )
    url = f"s3://{bucket}/aster.bin"
    assert compose_soul(url, storage_options=s3_options) == EXPECTED
    with pytest.raises(BootstrapError, match=rf"s3://{bucket}/aster\.bin: is a zip bundle \(read-only\)"):
        memory_tool(url, storage_options=s3_options)


def test_a_plain_file_is_not_a_folder_everywhere(memfs: Any, tmp_path: Path) -> None:
    (tmp_path / "notes.bin").write_bytes(b"just notes")
    memfs.pipe_file("/notes.bin", b"just notes")
    for kwargs in ({"dir": tmp_path / "notes.bin"}, {"dir": "/notes.bin", "fs": memfs}):
        with pytest.raises(NotADirectoryError, match="neither a directory nor a zip bundle"):
            compose_soul(**kwargs)
        with pytest.raises(NotADirectoryError, match="is a file, not a persona folder"):
            memory_tool(**kwargs)


def test_the_cli_gives_the_same_answer_for_a_renamed_zip(tmp_path: Path) -> None:
    bundle = tmp_path / "aster.bin"
    bundle.write_bytes(zip_bytes(FILES, compression=zipfile.ZIP_STORED))
    result = run("soul", str(bundle))
    assert (result.returncode, result.stdout) == (0, EXPECTED[0] + "\n")


def test_an_unknown_protocol_names_the_location() -> None:
    with pytest.raises(ValueError, match=r"nosuch://x: unknown protocol 'nosuch'"):
        compose_soul("nosuch://x")
    with pytest.raises(ValueError, match=r"nosuch://x: unknown protocol 'nosuch'"):
        memory_tool("nosuch://x")
    result = run("soul", "nosuch://x")
    assert result.returncode == 2
    assert "nosuch://x" in result.stderr


def test_resolve_picks_one_source_per_form(tmp_path: Path, memfs: Any) -> None:
    assert isinstance(resolve(tmp_path), LocalSource)
    assert isinstance(resolve(f"file://{tmp_path}"), LocalSource)
    assert isinstance(resolve("/x", fs=memfs), FsspecSource)
    assert isinstance(resolve(f"zip://aster::{tmp_path}/a.zip"), BundleSource)
    assert all(isinstance(resolve(tmp_path), SourceBase) for _ in range(1))
    assert "zip" in {kind.protocol for kind in archive_kinds()}


def test_sources_say_how_they_are_written(tmp_path: Path) -> None:
    (tmp_path / "aster.zip").write_bytes(zip_bytes(FILES, compression=zipfile.ZIP_STORED))
    store = LocalSource(tmp_path).writer()
    assert store.location == str(tmp_path)
    with pytest.raises(BootstrapError, match="read-only"):
        BundleSource.from_file(str(tmp_path / "aster.zip")).writer()
    with pytest.raises(BootstrapError, match="read-only HTTPFileSystem"):
        resolve("http://127.0.0.1:9/aster").writer()  # type: ignore[attr-defined]


def test_a_local_writer_writes_the_name_it_is_given(tmp_path: Path) -> None:
    from toolnexus.stores.base import Change  # noqa: PLC0415

    store = LocalSource(tmp_path).writer("USER.md")
    store.update(lambda current: Change(b"Mira\n", "ok"))
    assert (tmp_path / "USER.md").read_bytes() == b"Mira\n"
    assert not (tmp_path / "MEMORY.md").exists()


@pytest.mark.parametrize("entry_point", [compose_soul, inspect_soul, memory_tool])
def test_an_empty_location_is_an_error_not_the_current_folder(entry_point: Callable[[str], Any]) -> None:
    with pytest.raises(ValueError, match=r"empty location: name a folder \('\.' for the current one\)"):
        entry_point("")


def test_a_dir_filesystem_over_a_sync_one_composes_async_too() -> None:
    # DirFileSystem claims async_impl whatever it wraps; its coroutines then reach a sync
    # filesystem that has none, so the async path must read it as a sync filesystem.
    from fsspec.implementations.dirfs import DirFileSystem  # noqa: PLC0415

    memory = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)
    memory.pipe({"/personas/aster/SOUL.md": b"You are Aster.", "/personas/aster/USER.md": b"Mira"})
    personas = DirFileSystem("/personas", fs=memory)
    expected = compose_soul("aster", fs=personas)
    assert expected == ("## SOUL.md\n\nYou are Aster.\n\n## USER.md\n\nMira", ["SOUL.md", "USER.md"])
    assert asyncio.run(compose_soul_async("aster", fs=personas)) == expected


def test_the_extension_surface_is_what_docs_extending_shows() -> None:
    """``toolnexus.sources.__all__`` is a small surface, every name of it explained on the page
    that teaches extending; the resolver's own vocabulary stays importable without being in it."""
    import toolnexus.sources  # noqa: PLC0415

    page = (Path(__file__).resolve().parents[2] / "docs" / "extending.md").read_text(encoding="utf-8")
    assert len(toolnexus.sources.__all__) <= 15
    assert [name for name in toolnexus.sources.__all__ if f"`{name}" not in page] == []
    assert {"resolve", "LocalSource", "BundleSource"}.isdisjoint(toolnexus.sources.__all__)
    assert toolnexus.sources.resolve is resolve
