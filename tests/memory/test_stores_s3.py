"""S3 conditional writes, trusted only where enforced: moto keeps every edit of four processes;
moto behind a proxy that drops ``If-Match`` / ``If-None-Match`` (as s3rver ignores them) makes the
memory tool refuse instead of losing notes. Also the other refusals and opt-ins of the stores."""

from __future__ import annotations

import collections
import subprocess
from collections.abc import Iterator
from typing import Any

import fsspec
import pytest

from tests.support import MotoServer, S3Proxy, s3_storage_options
from tests.support.cli import run
from tests.support.homes import Home, s3_home
from tests.support.store_workers import append_from_processes, appends_per_process, report_figure
from toolnexus.agents import BootstrapError, compose_soul, memory_tool
from toolnexus.errors import read_error
from toolnexus.stores.probe import forget_verdicts

pytestmark = pytest.mark.s3

CONDITION_HEADERS = frozenset({"if-match", "if-none-match"})

REFUSAL = (
    "cannot write MEMORY.md in {home} safely: the server does not enforce conditional writes (it let "
    "If-None-Match: * overwrite an existing object), so an edit could be silently overwritten by "
    "another writer. Use a server that enforces them, or pass single_writer=True (CLI: "
    "--single-writer) if only one process ever writes this home."
)


@pytest.fixture
def proxy(moto_server: MotoServer) -> Iterator[S3Proxy]:
    forget_verdicts()  # a verdict about moto itself must not answer for the proxy, or vice versa
    with S3Proxy(moto_server.endpoint_url) as running:
        yield running
    forget_verdicts()


@pytest.fixture
def ignoring(proxy: S3Proxy, new_bucket: Any) -> Home:
    """A home on "a server that ignores conditions": moto behind a header-dropping proxy."""
    proxy.drop_request_headers = CONDITION_HEADERS
    return s3_home(new_bucket(), s3_storage_options(proxy.endpoint_url, skip_instance_cache=True))


def _notes(home: Home) -> list[str]:
    return (home.memory() or b"").decode().splitlines()


@pytest.mark.slow
@pytest.mark.timeout(360)  # spawned writers on a loaded 2-core machine; a hang guard, not a bound
@pytest.mark.usefixtures("linearizable_moto")
def test_four_processes_lose_no_note_on_moto(
    request: pytest.FixtureRequest, capsys: Any, record_property: Any, stress: bool
) -> None:
    home = s3_home(request.getfixturevalue("new_bucket")(), request.getfixturevalue("s3_options"))
    options = home.options["storage_options"]
    count = appends_per_process(stress)
    assert append_from_processes(home.location, options, writers=4, count=count) == [0, 0, 0, 0]
    notes = _notes(home)
    duplicated = sum(1 for n in collections.Counter(notes).values() if n > 1)
    report_figure(
        record_property,
        capsys,
        f"S3 (moto), 4 processes x {count} appends: expected {4 * count}, "
        f"found {len(notes)}, duplicated {duplicated}",
    )
    assert sorted(notes) == sorted(f"note {w}-{i}" for w in range(4) for i in range(count))


def test_a_server_ignoring_conditions_is_refused(ignoring: Home, capsys: Any, record_property: Any) -> None:
    with pytest.raises(BootstrapError) as raised:
        ignoring.tool().tool(command="append", content="- would be lost")
    report_figure(record_property, capsys, f"S3 server ignoring conditions: {raised.value}")
    assert str(raised.value) == REFUSAL.format(home=ignoring.location)
    assert ignoring.memory() is None
    assert not [n for n in ignoring.listing() if n.startswith(".toolnexus-probe")], "probe left behind"


@pytest.mark.slow
@pytest.mark.timeout(360)  # spawned writers on a loaded 2-core machine; a hang guard, not a bound
def test_four_processes_are_all_refused_on_a_server_ignoring_conditions(ignoring: Home) -> None:
    options = ignoring.options["storage_options"]
    assert append_from_processes(ignoring.location, options, writers=4, count=25) == [1, 1, 1, 1]
    assert ignoring.memory() is None  # expected 0 notes: none was answered "ok"


def test_single_writer_writes_there_anyway(ignoring: Home) -> None:
    tool = memory_tool(ignoring.location, **ignoring.options, single_writer=True)
    assert tool.tool(command="append", content="- one writer").startswith("ok: note appended")
    assert tool.tool(command="view") == "- one writer\n"


def test_the_probe_runs_once_per_bucket_and_process(proxy: S3Proxy, new_bucket: Any) -> None:
    home = s3_home(new_bucket(), s3_storage_options(proxy.endpoint_url, skip_instance_cache=True))
    before = proxy.count("PUT"), proxy.count("DELETE")
    home.tool().tool(command="append", content="- first")
    first = proxy.count("PUT") - before[0], proxy.count("DELETE") - before[1]
    home.tool().tool(command="append", content="- second")  # a new tool, same server and bucket
    second = proxy.count("PUT") - before[0] - first[0], proxy.count("DELETE") - before[1] - first[1]
    assert first == (3 + 1, 1)  # the probe's three PUTs and its DELETE, then the edit's PUT
    assert second == (1, 0)
    assert _notes(home) == ["- first", "- second"]


def test_empty_memory_is_editable_on_s3(request: pytest.FixtureRequest) -> None:
    home = s3_home(request.getfixturevalue("new_bucket")(), request.getfixturevalue("s3_options"))
    home.put("MEMORY.md", b"")
    assert home.tool().tool(command="append", content="- x").startswith("ok:")
    assert home.memory() == b"- x\n"


def test_memory_filesystem_needs_no_opt_in() -> None:
    """memory:// lives in this process: no other process can write it, so the lock suffices."""
    fs = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)
    fs.pipe_file("/aster/MEMORY.md", b"")
    assert memory_tool("/aster", fs=fs).tool(command="append", content="- x").startswith("ok:")


def test_a_filesystem_without_conditions_is_refused_unless_single_writer() -> None:
    memory = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)
    memory.pipe_file("/homes/aster/SOUL.md", b"x")
    fs = fsspec.filesystem("dir", path="/homes", fs=memory)  # protocol "dir": could be anything below
    with pytest.raises(
        BootstrapError, match=r"DirFileSystem offers no conditional write.*single_writer=True"
    ):
        memory_tool("aster", fs=fs)
    tool = memory_tool("aster", fs=fs, single_writer=True)
    assert tool.tool(command="append", content="- x").startswith("ok:")
    assert memory.cat_file("/homes/aster/MEMORY.md") == b"- x\n"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run("memory", *args)


def test_cli_takes_options_after_the_action_and_single_writer(ignoring: Home, proxy: S3Proxy) -> None:
    endpoint = f"endpoint_url={proxy.endpoint_url}"
    refused = _cli(ignoring.location, "append", "- from the shell", "-o", endpoint)
    assert refused.returncode == 2, refused.stderr
    assert "does not enforce conditional writes" in refused.stderr
    done = _cli(ignoring.location, "-o", "skip_instance_cache=true", "append", "- x", "-o", endpoint,
                "--single-writer")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert ignoring.memory() == b"- x\n"


def test_a_blank_cause_still_gives_a_detail() -> None:
    from fsspec.exceptions import FSTimeoutError  # noqa: PLC0415

    try:
        try:
            raise TimeoutError
        except TimeoutError as inner:
            raise FSTimeoutError from inner
    except FSTimeoutError as error:
        message = str(read_error(error, "s3://bucket/aster", "MEMORY.md"))
    assert message == "cannot read MEMORY.md in s3://bucket/aster: FSTimeoutError (caused by TimeoutError)"


def test_missing_home_costs_what_the_readme_says(proxy: S3Proxy, new_bucket: Any) -> None:
    bucket = new_bucket()
    options = s3_storage_options(proxy.endpoint_url, skip_instance_cache=True)
    with pytest.raises(FileNotFoundError, match="no such persona home"):
        compose_soul(f"s3://{bucket}/nobody", storage_options=options)
    kinds = collections.Counter(
        "LIST" if "list-type" in record.query else record.method for record in proxy.requests
    )
    assert dict(kinds) == {"GET": 7, "LIST": 2, "HEAD": 1}
