"""Daily notes, the prelude, the tools, the CLI search and the profile rules on every writable
backend: a local folder, ``memory://``, S3 (moto), Azure Blob (Azurite) and GCS (fake-gcs-server)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import fsspec
import pytest

from tests.support.cli import run, s3_args
from tests.support.homes import make_home
from toolnexus.agents import ModelReply, ToolCall, agent_from_dir, memory_index, memory_tool

NOON = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
#: The emulators' session fixtures, by backend, and the protocol each serves.
EMULATORS = {"azure": ("az", "azurite"), "gcs": ("gs", "fake_gcs_server")}


def _home(backend: str, request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """A persona home (its location, and the options that reach it)."""
    if backend not in EMULATORS:
        home = make_home(backend, request)
        return home.location, home.options
    protocol, fixture = EMULATORS[backend]
    options = request.getfixturevalue(fixture).storage_options
    fs = fsspec.filesystem(protocol, skip_instance_cache=True, **options)
    bucket = f"recall-{hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:10]}"
    fs.mkdir(bucket)
    fs.pipe_file(f"{bucket}/aster/SOUL.md", b"You are Aster.")
    return f"{protocol}://{bucket}/aster", {"storage_options": options}


class Model:
    """Makes the given tool calls one per turn, then answers; keeps what it was sent."""

    def __init__(self, *calls: ToolCall) -> None:
        self.calls, self.systems, self.tools, self.results = list(calls), [], [], []  # type: ignore[var-annotated]

    async def __call__(self, system: Any, messages: Sequence[Any], tools: Sequence[Any]) -> ModelReply | str:
        self.systems.append(system)
        self.tools.append([tool.name for tool in tools])
        self.results = [message for message in messages if type(message).__name__ == "ToolResult"]
        return ModelReply(tool_calls=(self.calls.pop(0),)) if self.calls else "done"


@pytest.mark.parametrize("backend", ["local", "memory", "s3", "azure", "gcs"])
def test_recall_on_every_backend(backend: str, request: pytest.FixtureRequest) -> None:
    location, options = _home(backend, request)
    tool = memory_tool(location, clock=lambda: NOON, **options)
    assert not tool.tool(command="append", file="today", content="Mira moved to Hamburg.").is_error
    assert "today is 2026-12-01" in tool.description

    search = ToolCall("1", "memory_search", {"query": "Mira Hamburg"})
    get = ToolCall("2", "memory_get", {"path": "/memories/2026-12-01.md"})
    model = Model(search, get)
    agent_from_dir(location, model=model, clock=lambda: NOON, **options).run_sync("where is Mira?")
    assert model.systems[0].endswith(
        "(/memories/2026-12-01.md).\n\n### memory/2026-12-01.md\n\nMira moved to Hamburg."
    )
    assert model.tools[0][:3] == ["memory", "memory_search", "memory_get"]
    found, window = model.results
    assert found.text.startswith("memory/2026-12-01.md lines 1-1 (score ")
    assert (window.text, window.is_error) == (
        "memory/2026-12-01.md lines 1-1:\nMira moved to Hamburg.",
        False,
    )

    view = ToolCall("3", "memory", {"command": "view", "path": "/memories/2026-12-01.md"})
    group = Model(view)
    agent_from_dir(location, model=group, clock=lambda: NOON, profile="group", **options).run_sync("hi")
    assert "Hamburg" not in group.systems[0]
    assert group.tools[0] == ["memory"]
    assert group.results[0].is_error
    assert "Hamburg" not in group.results[0].text


def test_the_cli_searches_a_home_on_s3(request: pytest.FixtureRequest, moto_server: Any) -> None:
    location, options = _home("s3", request)
    memory_tool(location, **options).tool(command="append", file="people/mira.md", content="Mira: Hamburg.")
    found = run("memory", location, "search", "Hamburg", "--json", *s3_args(moto_server.endpoint_url))
    assert found.returncode == 0, found.stderr
    assert [hit["path"] for hit in json.loads(found.stdout)] == ["memory/people/mira.md"]


def test_an_unchanged_s3_home_is_revalidated_without_bodies(
    new_bucket: Any, via_proxy: dict[str, Any], proxy: Any
) -> None:
    bucket = new_bucket()
    home = f"s3://{bucket}/aster"
    fsspec.filesystem("s3", **via_proxy).pipe_file(f"{bucket}/aster/SOUL.md", b"You are Aster.")
    tool = memory_tool(home, storage_options=via_proxy, clock=lambda: NOON)
    for day in range(1, 21):
        tool.tool(command="append", file=f"2026-11-{day:02d}.md", content=f"Day {day}: " + "notes " * 100)
    search, _ = tool.tools()[1:]
    assert "Day 7" in search.tool(query="Day 7")
    proxy.reset()
    assert "Day 7" in search.tool(query="Day 7")  # nothing changed: a listing, then 304s
    gets = [r for r in proxy.requests if r.method == "GET" and "list-type" not in r.query]
    assert len(gets) == 22  # MEMORY.md, USER.md and the 20 notes, each one conditional GET
    assert {r.response_status for r in gets} <= {304, 404}
    assert sum(r.response_body_bytes for r in gets) <= 1024
    tool.tool(command="append", file="2026-11-07.md", content="Mira visited.")
    proxy.reset()
    assert "2026-11-07.md" in search.tool(query="Mira visited")  # the one changed file is read
    bodies = [
        r
        for r in proxy.requests
        if r.method == "GET" and r.response_status in (200, 206) and "list-type" not in r.query
    ]
    assert len(bodies) == 1


@pytest.mark.parametrize("backend", ["local", "memory", "s3"])
def test_the_tools_index_equals_a_rebuild_after_edits(backend: str, request: pytest.FixtureRequest) -> None:
    """The memory tool's own index revalidates by the source's validators: still a rebuild's equal."""
    location, options = _home(backend, request)
    tool = memory_tool(location, clock=lambda: NOON, **options)
    index = tool.index()
    steps = [
        {"command": "append", "file": "today", "content": "Mira lives in Berlin."},
        {"command": "append", "file": "people/mira.md", "content": "Mira likes tea."},
        {
            "command": "str_replace",
            "path": "/memories/2026-12-01.md",
            "old_str": "Berlin",
            "new_str": "Hamburg",
        },
        {"command": "rename", "old_path": "/memories/people/mira.md", "new_path": "/memories/mira.md"},
        {"command": "delete", "path": "/memories/2026-12-01.md"},
        {"command": "append", "content": "Mira moved to Lisbon."},
    ]
    for step in steps:
        assert not tool.tool(**step).is_error, step
        fresh = memory_index(location, index_path=":memory:", today=NOON.date(), **options)
        for query in ("Mira", "Hamburg tea", "Lisbon"):
            assert index.search(query) == fresh.search(query), (step, query)
        fresh.close()
