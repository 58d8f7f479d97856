"""Azure Blob (Azurite + adlfs) and GCS (gcp-storage-emulator + gcsfs), served on loopback.

Composition must match the local folder byte for byte (empty files included, bundles by plain and
chained URL); the memory tool must keep every edit on Azure (which enforces ETag conditions) and
refuse on the GCS emulator (which ignores ``ifGenerationMatch``: checked here, not assumed).
"""

from __future__ import annotations

import collections
import itertools
import uuid
from typing import Any

import fsspec
import pytest
from hypothesis import HealthCheck, given, settings

from tests.support.gcs import GCS_OPTIONS
from tests.support.store_workers import append_from_processes
from tests.test_conformance import PERSONAS, Persona, expected, zip_bytes
from toolnexus.agents import BootstrapError, compose_soul, memory_tool
from toolnexus.agents.sources import FsspecSource
from toolnexus.agents.stores import AzureBlobStore, GcsStore

pytestmark = pytest.mark.emulators

_numbers = itertools.count()


class Store:
    """One bucket (or container) on one emulator, and how to reach it."""

    def __init__(self, protocol: str, options: dict[str, Any]) -> None:
        self.protocol, self.options = protocol, options
        self.fs = fsspec.filesystem(protocol, skip_instance_cache=True, **options)
        self.bucket = f"toolnexus-{uuid.uuid4().hex[:8]}-{next(_numbers)}"
        self.fs.mkdir(self.bucket)

    def url(self, path: str) -> str:
        return f"{self.protocol}://{self.bucket}/{path}"

    def home(self, persona: Persona) -> str:
        """A persona folder; a non-bootstrap file keeps an empty persona's home existing."""
        prefix = uuid.uuid4().hex
        for name, data in {**persona, "README.txt": b"keeps the home"}.items():
            self.fs.pipe_file(f"{self.bucket}/{prefix}/{name}", data)
        return self.url(prefix)

    def bundle(self, persona: Persona, folder: str = "aster/") -> str:
        key = f"{uuid.uuid4().hex}.zip"
        self.fs.pipe_file(f"{self.bucket}/{key}", zip_bytes(persona, folder))
        return self.url(key)

    def get(self, url: str) -> bytes:
        self.fs.invalidate_cache()
        return bytes(self.fs.cat_file(url.split("://", 1)[1]))


@pytest.fixture(params=["azure", "gcs"])
def store(request: pytest.FixtureRequest) -> Store:
    if request.param == "azure":
        return Store("az", request.getfixturevalue("azurite").storage_options)
    request.getfixturevalue("gcs_emulator")
    return Store("gs", GCS_OPTIONS)


EMPTY_FILES = {"SOUL.md": b"", "AGENTS.md": b"\xef\xbb\xbfRules.\r\n", "MEMORY.md": b"", "USER.md": b"Mira"}


@settings(max_examples=5, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(persona=PERSONAS)
def test_folder_composes_as_locally(store: Store, persona: Persona) -> None:
    assert compose_soul(store.home(persona), storage_options=store.options) == expected(persona)


def test_empty_files_compose_as_present_and_empty(store: Store) -> None:
    soul, found = compose_soul(store.home(EMPTY_FILES), storage_options=store.options)
    assert (soul, found) == expected(EMPTY_FILES)
    assert found == ["AGENTS.md", "SOUL.md", "USER.md", "MEMORY.md"]


@pytest.mark.parametrize("folder", ["", "aster/"])
def test_bundle_by_plain_url_composes_as_locally(store: Store, folder: str) -> None:
    location = store.bundle(EMPTY_FILES, folder)
    assert compose_soul(location, storage_options=store.options) == expected(EMPTY_FILES)


def test_bundle_by_chained_url_composes_as_locally(store: Store) -> None:
    location = f"zip://aster::{store.bundle(EMPTY_FILES)}"
    options = {store.protocol: store.options}
    assert compose_soul(location, storage_options=options) == expected(EMPTY_FILES)


def _refusal(store: Store, home: str) -> str:
    with pytest.raises(BootstrapError) as raised:
        memory_tool(home, storage_options=store.options).tool(command="append", content="- lost?")
    return str(raised.value)


def test_empty_memory_is_editable(store: Store) -> None:
    home = store.home({"SOUL.md": b"x", "MEMORY.md": b""})
    single = store.protocol == "gs"  # the GCS emulator ignores preconditions: see the refusal test
    tool = memory_tool(home, storage_options=store.options, single_writer=single)
    assert tool.tool(command="view") == "No memories yet (MEMORY.md is empty). Use append to save a note."
    assert tool.tool(command="append", content="- first").startswith("ok: note appended")
    assert store.get(f"{home}/MEMORY.md") == b"- first\n"


def test_azurite_enforces_both_conditions(azurite: Any) -> None:
    """Without this, the no-lost-edits test below could pass against a server ignoring them."""
    azure = Store("az", azurite.storage_options)
    home = azure.home({})
    store = AzureBlobStore(FsspecSource(azure.fs, home.split("://", 1)[1]))
    assert store.put_if(b"created\n", None)
    assert not store.put_if(b"again\n", None)  # If-None-Match: * on an existing blob: 409
    data, etag = store.read_versioned()
    assert data == b"created\n"
    assert not store.put_if(b"stale\n", AzureBlobStore.stale_version)  # stale If-Match: 412
    assert store.put_if(b"fresh\n", etag)
    assert azure.get(f"{home}/MEMORY.md") == b"fresh\n"


def test_gcs_emulator_ignores_generation_preconditions(gcs_emulator: Any) -> None:
    """The fact the refusal rests on, checked against the emulator rather than assumed."""
    gcs = Store("gs", GCS_OPTIONS)
    home = gcs.home({})
    store = GcsStore(FsspecSource(gcs.fs, home.split("://", 1)[1]))
    assert store.put_if(b"created\n", None)
    assert store.put_if(b"overwritten by ifGenerationMatch=0\n", None)  # real GCS: 412
    assert store.put_if(b"overwritten by a stale generation\n", GcsStore.stale_version)  # real GCS: 412
    assert gcs.get(f"{home}/MEMORY.md") == b"overwritten by a stale generation\n"


def test_gcs_emulator_makes_the_memory_tool_refuse(gcs_emulator: Any, capsys: Any) -> None:
    gcs = Store("gs", GCS_OPTIONS)
    home = gcs.home({"SOUL.md": b"x"})
    message = _refusal(gcs, home)
    with capsys.disabled():
        print(f"\n[stores] GCS emulator refusal: {message}")
    assert message == (
        f"cannot write MEMORY.md in {home} safely: the server does not enforce conditional writes "
        "(it let ifGenerationMatch=0 overwrite an existing object), so an edit could be silently "
        "overwritten by another writer. Use a server that enforces them, or pass single_writer=True "
        "(CLI: --single-writer) if only one process ever writes this home."
    )
    gcs.fs.invalidate_cache()
    assert sorted(p.rsplit("/", 1)[-1] for p in gcs.fs.find(home.split("://", 1)[1])) == [
        "README.txt",
        "SOUL.md",
    ], "the refusal wrote MEMORY.md or left its probe object behind"


def _count(data: bytes) -> tuple[int, int]:
    notes = data.decode().splitlines()
    return len(notes), sum(1 for n in collections.Counter(notes).values() if n > 1)


@pytest.mark.slow
def test_four_processes_lose_no_note_on_azure(azurite: Any, capsys: Any) -> None:
    azure = Store("az", azurite.storage_options)
    home = azure.home({"SOUL.md": b"x"})
    assert append_from_processes(home, azure.options, writers=4, count=25) == [0, 0, 0, 0]
    data = azure.get(f"{home}/MEMORY.md")
    found, duplicated = _count(data)
    with capsys.disabled():
        print(f"\n[stores] Azure (Azurite), 4 processes x 25 appends: expected 100, found {found}, "
              f"duplicated {duplicated}")  # fmt: skip
    assert sorted(data.decode().splitlines()) == sorted(f"note {w}-{i}" for w in range(4) for i in range(25))


def test_single_writer_on_the_gcs_emulator_writes_plainly(gcs_emulator: Any) -> None:
    gcs = Store("gs", GCS_OPTIONS)
    home = gcs.home({"SOUL.md": b"x"})
    tool = memory_tool(home, storage_options=gcs.options, single_writer=True)
    for index in range(3):
        assert tool.tool(command="append", content=f"- {index}").startswith("ok:")
    assert gcs.get(f"{home}/MEMORY.md") == b"- 0\n- 1\n- 2\n"
