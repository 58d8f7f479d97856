"""Azure Blob (Azurite + adlfs) and GCS (fake-gcs-server and gcp-storage-emulator + gcsfs), served
on loopback.

Composition must match the local folder byte for byte (empty files included, bundles by plain and
chained URL); the memory tool must keep every edit on Azurite and fake-gcs-server (which enforce
ETag / generation conditions) and refuse on gcp-storage-emulator (which ignores
``ifGenerationMatch``: checked here, not assumed).
"""

from __future__ import annotations

import collections
import itertools
import uuid
from typing import Any

import fsspec
import pytest
from hypothesis import HealthCheck, given, settings

from tests.support.backends import PERSONAS, Persona, expected
from tests.support.files import zip_bytes
from tests.support.folders import exercise_compare_and_swap_rename, exercise_folder_store
from tests.support.store_workers import append_from_processes, appends_per_process, report_figure
from toolnexus.agents import BootstrapError, compose_soul, memory_tool
from toolnexus.sources import FsspecSource
from toolnexus.stores.fsspec import AzureBlobStore, GcsStore
from toolnexus.stores.probe import require_conditional_delete, require_enforced

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
        self.fs.pipe_file(f"{self.bucket}/{key}", zip_bytes(persona, folder=folder))
        return self.url(key)

    def get(self, url: str) -> bytes:
        self.fs.invalidate_cache()
        return bytes(self.fs.cat_file(url.split("://", 1)[1]))


#: Each backend and the session fixture serving it.
SERVERS = {
    "azure": ("az", "azurite"),
    "gcs": ("gs", "fake_gcs_server"),
    "gcs-emulator": ("gs", "gcs_emulator"),
}


def _store(request: pytest.FixtureRequest, backend: str) -> Store:
    protocol, fixture = SERVERS[backend]
    return Store(protocol, request.getfixturevalue(fixture).storage_options)


@pytest.fixture(params=list(SERVERS))
def store(request: pytest.FixtureRequest) -> Store:
    return _store(request, request.param)


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


def test_empty_memory_is_editable(request: pytest.FixtureRequest, store: Store) -> None:
    home = store.home({"SOUL.md": b"x", "MEMORY.md": b""})
    single = "gcs_emulator" in request.fixturenames  # it ignores preconditions: see the refusal test
    tool = memory_tool(home, storage_options=store.options, single_writer=single)
    assert tool.tool(command="view") == "No memories yet (MEMORY.md is empty). Use append to save a note."
    assert tool.tool(command="append", content="- first").startswith("ok: note appended")
    assert store.get(f"{home}/MEMORY.md") == b"- first\n"


def _memory_store(store: Store, store_class: Any) -> tuple[Any, str]:
    home = store.home({})
    source = FsspecSource(store.fs, home.split("://", 1)[1])
    return store_class(source, probe=require_enforced), home


@pytest.mark.parametrize(("backend", "store_class"), [("azure", AzureBlobStore), ("gcs", GcsStore)])
def test_server_enforces_both_conditions(
    request: pytest.FixtureRequest, backend: str, store_class: Any
) -> None:
    """Without this, the no-lost-notes test below could pass against a server ignoring them."""
    store = _store(request, backend)
    memory, home = _memory_store(store, store_class)
    assert memory.put_if(b"created\n", None)
    assert not memory.put_if(b"again\n", None)  # must not exist: Azure 409, GCS 412
    data, version = memory.read_versioned()
    assert data == b"created\n"
    assert not memory.put_if(b"stale\n", store_class.stale_version)  # stale version: 412
    assert memory.put_if(b"fresh\n", version)
    assert store.get(f"{home}/MEMORY.md") == b"fresh\n"


@pytest.mark.parametrize(("backend", "store_class"), [("azure", AzureBlobStore), ("gcs", GcsStore)])
def test_topic_files_listings_deletes_and_renames(
    request: pytest.FixtureRequest, backend: str, store_class: Any
) -> None:
    store = _store(request, backend)
    memory, home = _memory_store(store, store_class)
    prefix = home.split("://", 1)[1]

    def raw_put(name: str, data: bytes) -> None:
        store.fs.pipe_file(f"{prefix}/{name}", data)

    exercise_folder_store(memory, raw_put)  # no delete probe here: renames run unchecked
    if backend == "azure":
        require_conditional_delete(memory)  # Azurite enforces If-Match on a delete
        exercise_compare_and_swap_rename(memory, raw_put)


def test_fake_gcs_server_ignores_conditional_deletes_so_renames_are_refused(
    request: pytest.FixtureRequest,
) -> None:
    store = _store(request, "gcs")
    memory, home = _memory_store(store, GcsStore)
    notes = memory.file("memory/notes.md")
    assert notes.put_if(b"first\n", None)
    assert notes.delete_if(notes.path, GcsStore.stale_version)  # real GCS: 412, the object stays
    assert notes.read() is None
    tool = memory_tool(home, storage_options=store.options)
    tool.tool(command="create", path="/memories/notes.md", file_text="first\n")
    with pytest.raises(BootstrapError, match="the server does not enforce conditional deletes"):
        tool.tool(command="rename", old_path="/memories/notes.md", new_path="/memories/moved.md")
    assert tool.tool(command="view", path="/memories").splitlines()[-1] == "6B\t/memories/notes.md"


def test_gcs_emulator_ignores_generation_preconditions(request: pytest.FixtureRequest) -> None:
    """The fact the refusal rests on, checked against the emulator rather than assumed."""
    store = _store(request, "gcs-emulator")
    memory, home = _memory_store(store, GcsStore)
    assert memory.put_if(b"created\n", None)
    assert memory.put_if(b"overwritten by ifGenerationMatch=0\n", None)  # real GCS: 412
    assert memory.put_if(b"overwritten by a stale generation\n", GcsStore.stale_version)  # ditto
    assert store.get(f"{home}/MEMORY.md") == b"overwritten by a stale generation\n"


def test_gcs_emulator_makes_the_memory_tool_refuse(
    request: pytest.FixtureRequest, capsys: Any, record_property: Any
) -> None:
    store = _store(request, "gcs-emulator")
    home = store.home({"SOUL.md": b"x"})
    with pytest.raises(BootstrapError) as raised:
        memory_tool(home, storage_options=store.options).tool(command="append", content="- lost?")
    report_figure(record_property, capsys, f"gcp-storage-emulator refusal: {raised.value}")
    assert str(raised.value) == (
        f"cannot write MEMORY.md in {home} safely: the server does not enforce conditional writes "
        "(it let ifGenerationMatch=0 overwrite an existing object), so an edit could be silently "
        "overwritten by another writer. Use a server that enforces them, or pass single_writer=True "
        "(CLI: --single-writer) if only one process ever writes this home."
    )
    store.fs.invalidate_cache()
    left = sorted(path.rsplit("/", 1)[-1] for path in store.fs.find(home.split("://", 1)[1]))
    assert left == ["README.txt", "SOUL.md"], "the refusal wrote MEMORY.md or left its probe behind"


@pytest.mark.slow
@pytest.mark.timeout(360)  # spawned writers on a loaded 2-core machine; a hang guard, not a bound
@pytest.mark.parametrize("backend", ["azure", "gcs"])
def test_four_processes_lose_no_note(
    request: pytest.FixtureRequest, backend: str, capsys: Any, record_property: Any, stress: bool
) -> None:
    store = _store(request, backend)
    home = store.home({"SOUL.md": b"x"})
    count = appends_per_process(stress)
    assert append_from_processes(home, store.options, writers=4, count=count) == [0, 0, 0, 0]
    notes = store.get(f"{home}/MEMORY.md").decode().splitlines()
    duplicated = sum(1 for n in collections.Counter(notes).values() if n > 1)
    report_figure(
        record_property,
        capsys,
        f"{backend} ({SERVERS[backend][1]}), 4 processes x {count} appends: expected {4 * count}, "
        f"found {len(notes)}, duplicated {duplicated}",
    )
    assert sorted(notes) == sorted(f"note {w}-{i}" for w in range(4) for i in range(count))


def test_single_writer_on_the_gcs_emulator_writes_plainly(request: pytest.FixtureRequest) -> None:
    store = _store(request, "gcs-emulator")
    home = store.home({"SOUL.md": b"x"})
    tool = memory_tool(home, storage_options=store.options, single_writer=True)
    for index in range(3):
        assert tool.tool(command="append", content=f"- {index}").startswith("ok:")
    assert store.get(f"{home}/MEMORY.md") == b"- 0\n- 1\n- 2\n"
