"""Memory edits through the obstore engine: obstore's conditional puts, trusted only where enforced.

Four processes append 12 notes each (50 with ``--stress``) on moto, Azurite and fake-gcs-server
(through the XML gateway, which hands every condition to the server): every note kept, none twice.
moto behind a proxy that drops the condition headers (a server ignoring them) makes the memory
tool refuse.
"""

from __future__ import annotations

import collections
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import fsspec
import pytest

from tests.support import MotoServer, S3Proxy, make_bucket, put_objects, s3_storage_options
from tests.support import obstore as engine
from tests.support.folders import exercise_folder_store
from tests.support.lossy import writes_memory
from tests.support.proxy import LoseResponse, Reset, Status
from tests.support.store_workers import append_from_processes, appends_per_process, report_figure
from toolnexus.agents import BootstrapError, memory_tool
from toolnexus.sources import ObstoreSource, resolve
from toolnexus.stores.obstore import ObstoreStore
from toolnexus.stores.probe import forget_verdicts, require_enforced

REFUSAL = (
    "cannot write MEMORY.md in {home} safely: the server does not enforce conditional writes (it let "
    'put(mode="create") overwrite an existing object), so an edit could be silently overwritten by '
    "another writer. Use a server that enforces them, or pass single_writer=True (CLI: "
    "--single-writer) if only one process ever writes this home."
)


class Server:
    """A bucket on one server, as the obstore engine reaches it, and raw access behind its back."""

    def __init__(self, protocol: str, options: dict[str, Any], fs: Any, bucket: str) -> None:
        self.protocol, self.options, self.fs, self.bucket = protocol, options, fs, bucket

    def home(self) -> str:
        prefix = f"{self.bucket}/{uuid.uuid4().hex}"
        self.fs.pipe_file(f"{prefix}/SOUL.md", b"You are Aster.")
        return f"{self.protocol}://{prefix}"

    def notes(self, home: str) -> list[str]:
        self.fs.invalidate_cache()
        try:
            return bytes(self.fs.cat_file(f"{home.split('://', 1)[1]}/MEMORY.md")).decode().splitlines()
        except FileNotFoundError:
            return []


def _on(request: pytest.FixtureRequest, backend: str) -> Server:
    bucket = f"toolnexus-{uuid.uuid4().hex[:12]}"
    if backend == "s3":
        moto = request.getfixturevalue("moto_server")
        make_bucket(moto.endpoint_url, bucket)
        fs = fsspec.filesystem("s3", **request.getfixturevalue("s3_options"))
        return Server("s3", engine.s3_options(moto.endpoint_url), fs, bucket)
    if backend == "azure":
        azurite = request.getfixturevalue("azurite")
        fs = fsspec.filesystem("az", skip_instance_cache=True, **azurite.storage_options)
        fs.mkdir(bucket)
        return Server("az", engine.azure_options(azurite.connection_string), fs, bucket)
    fake = request.getfixturevalue("fake_gcs_server")
    fs = fsspec.filesystem("gs", skip_instance_cache=True, **fake.storage_options)
    fs.mkdir(bucket)
    return Server("gs", engine.gcs_options(request.getfixturevalue("gcs_xml").url), fs, bucket)


@pytest.mark.slow
@pytest.mark.timeout(360)  # spawned writers on a loaded 2-core machine; a hang guard, not a bound
@pytest.mark.parametrize("backend", ["s3", "azure", "gcs"])
def test_four_processes_lose_no_note(
    request: pytest.FixtureRequest, backend: str, capsys: Any, record_property: Any, stress: bool
) -> None:
    if backend == "s3":
        request.getfixturevalue("linearizable_moto")
    server = _on(request, backend)
    home = server.home()
    count = appends_per_process(stress)
    assert append_from_processes(home, server.options, writers=4, count=count, engine="obstore") == [0] * 4
    notes = server.notes(home)
    duplicated = sum(1 for n in collections.Counter(notes).values() if n > 1)
    report_figure(
        record_property,
        capsys,
        f"obstore engine, {backend}, 4 processes x {count} appends: expected {4 * count}, "
        f"found {len(notes)}, duplicated {duplicated}",
    )
    assert sorted(notes) == sorted(f"note {w}-{i}" for w in range(4) for i in range(count))


@pytest.mark.parametrize("backend", ["s3", "azure", "gcs"])
def test_the_server_enforces_both_conditions(request: pytest.FixtureRequest, backend: str) -> None:
    """Without this, the no-lost-note test above could pass against a server ignoring them."""
    server = _on(request, backend)
    home: Any = resolve(server.home(), storage_options=server.options, engine="obstore")
    store = ObstoreStore(home, probe=require_enforced)
    assert store.put_if(b"created\n", None)
    assert not store.put_if(b"again\n", None)  # must not exist: 412 / 409
    data, version = store.read_versioned()
    assert data == b"created\n"
    assert not store.put_if(b"stale\n", ObstoreStore.stale_version)
    assert store.put_if(b"fresh\n", version)
    assert server.notes(home.location) == ["fresh"]


@pytest.fixture
def ignoring(moto_server: MotoServer, new_bucket: Callable[[], str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """A home on "a server that ignores conditions": moto behind a header-dropping proxy."""
    forget_verdicts()
    with S3Proxy(moto_server.endpoint_url) as proxy:
        proxy.drop_request_headers = frozenset({"if-match", "if-none-match"})
        bucket = new_bucket()
        put_objects(moto_server.endpoint_url, bucket, {"aster/SOUL.md": b"You are Aster."})
        yield (
            f"s3://{bucket}/aster",
            {"storage_options": engine.s3_options(proxy.endpoint_url), "engine": "obstore"},
        )
    forget_verdicts()


@pytest.mark.s3
def test_a_server_ignoring_conditions_is_refused(
    ignoring: tuple[str, dict[str, Any]], capsys: Any, record_property: Any
) -> None:
    home, kw = ignoring
    with pytest.raises(BootstrapError) as raised:
        memory_tool(home, **kw).tool(command="append", content="- would be lost")
    report_figure(record_property, capsys, f"obstore engine, S3 server ignoring conditions: {raised.value}")
    assert str(raised.value) == REFUSAL.format(home=home)
    source: Any = resolve(home, **kw)
    assert source.read(["MEMORY.md"], 10) == {}


@pytest.mark.s3
@pytest.mark.slow
@pytest.mark.timeout(360)
def test_four_processes_are_all_refused_on_a_server_ignoring_conditions(
    ignoring: tuple[str, dict[str, Any]],
) -> None:
    home, kw = ignoring
    assert (
        append_from_processes(home, kw["storage_options"], writers=4, count=25, engine="obstore") == [1] * 4
    )


@pytest.mark.s3
def test_single_writer_writes_there_anyway(ignoring: tuple[str, dict[str, Any]]) -> None:
    home, kw = ignoring
    tool = memory_tool(home, **kw, single_writer=True)
    assert tool.tool(command="append", content="- one writer").startswith("ok: note appended")
    assert tool.tool(command="view") == "- one writer\n"
    assert isinstance(resolve(home, **kw), ObstoreSource)


@pytest.mark.s3
@pytest.mark.parametrize(
    "fault", [LoseResponse(Reset()), LoseResponse(Status(500))], ids=["reset after", "500 after"]
)
def test_an_edit_whose_answer_is_lost_lands_exactly_once(
    moto_server: MotoServer, new_bucket: Callable[[], str], fault: Any
) -> None:
    """The write landed but its answer is lost: obstore either retries it (a 500: the retry meets
    the version its first attempt wrote, 412) or gives up (a reset: the store reads back); either
    way the lineage kept in the object's metadata says the edit was applied — once, not twice."""
    bucket = new_bucket()
    put_objects(moto_server.endpoint_url, bucket, {"aster/SOUL.md": b"x", "aster/MEMORY.md": b"- old\n"})
    with S3Proxy(moto_server.endpoint_url) as proxy:
        options = engine.s3_options(proxy.endpoint_url)
        tool = memory_tool(f"s3://{bucket}/aster", storage_options=options, engine="obstore")
        tool.tool(command="view")
        tool.tool(command="append", content="- probed")  # the probe's own refusals come first
        rule = proxy.add_fault(writes_memory, fault, times=1)
        assert tool.tool(command="append", content="- once").startswith("ok: note appended")
        assert rule.hits == 1
    raw = fsspec.filesystem("s3", **s3_storage_options(moto_server.endpoint_url, skip_instance_cache=True))
    assert raw.cat_file(f"{bucket}/aster/MEMORY.md") == b"- old\n- probed\n- once\n"
    # The lineage is where fsspec's engine keeps it too: either engine settles the other's edits.
    assert len(raw.metadata(f"{bucket}/aster/MEMORY.md")["toolnexus-edits"].split()) >= 2


@pytest.mark.s3
def test_topic_files_through_obstore(moto_server: MotoServer, new_bucket: Callable[[], str]) -> None:
    """Listings, topic files and deletes as on every store; a rename needs a delete conditional
    on a version, which obstore does not offer: refused, saying so — unless single_writer."""
    bucket = new_bucket()
    put_objects(moto_server.endpoint_url, bucket, {"aster/SOUL.md": b"x"})
    home = f"s3://{bucket}/aster"
    kw = {"storage_options": engine.s3_options(moto_server.endpoint_url), "engine": "obstore"}

    def raw_put(path: str, data: bytes) -> None:
        put_objects(moto_server.endpoint_url, bucket, {f"aster/{path}": data})

    exercise_folder_store(memory_tool(home, **kw, single_writer=True).store, raw_put)
    tool = memory_tool(home, **kw)
    tool.tool(command="create", path="/memories/projects/aster.md", file_text="- owner: Mira\n")
    assert tool.store.listing("memory")["memory/projects/aster.md"] == 14
    with pytest.raises(BootstrapError, match=r"conditional deletes \(obstore offers no delete conditional"):
        tool.tool(command="rename", old_path="/memories/projects/aster.md", new_path="/memories/aster.md")
    assert tool.tool(command="delete", path="/memories/projects/aster.md").startswith("Successfully deleted")
    assert "memory/projects/aster.md" not in tool.store.listing("memory")
    forget_verdicts()
