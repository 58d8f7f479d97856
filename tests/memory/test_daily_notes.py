"""Daily notes: today's note in both command sets, the session's clock and timezone, the topic
limit they are outside of, and the prelude a session starts with (after the soul, bounded)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.files import zip_bytes
from toolnexus.agents import ModelReply, ToolCall, agent_from_dir, compose_soul, inspect_soul, memory_tool
from toolnexus.recall import daily_prelude

LATE = datetime(2026, 12, 1, 23, 30, tzinfo=UTC)  # already 2 December in Tokyo
#: What a prelude says first: the date and today's note (the built-in tool carries no description).
TOLD = "Today is 2026-12-01 (UTC); today's note is memory/2026-12-01.md (/memories/2026-12-01.md).\n\n"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "aster"
    home.mkdir()
    for name in ("AGENTS.md", "SOUL.md", "TOOLS.md"):
        (home / name).write_text(f"# {name}\n\nrules of {name}\n")
    (home / "MEMORY.md").write_text("- Mira prefers tea.\n")
    return home


def test_both_command_sets_write_today_in_the_personas_timezone(tmp_path: Path) -> None:
    home = _home(tmp_path)
    utc = memory_tool(home, clock=lambda: LATE)
    tokyo = memory_tool(home, clock=lambda: LATE, timezone="Asia/Tokyo")
    assert "today is 2026-12-01 (UTC)" in utc.description
    assert "/memories/2026-12-01.md" in utc.description
    assert "today is 2026-12-02 (Asia/Tokyo)" in tokyo.description
    assert utc.tool(command="append", file="today", content="Met Mira.").startswith("ok: note appended")
    assert (home / "memory" / "2026-12-01.md").read_text() == "Met Mira.\n"
    created = tokyo.tool(command="create", path="/memories/2026-12-02.md", file_text="Tea with Mira.\n")
    assert not created.is_error
    assert not tokyo.tool(
        command="insert", path="/memories/2026-12-02.md", insert_line=1, insert_text="Rain."
    ).is_error
    assert (home / "memory" / "2026-12-02.md").read_text() == "Tea with Mira.\nRain.\n"
    assert memory_tool(home).tool(command="view", file="2026-12-01.md") == "Met Mira.\n"


def test_a_clock_must_be_aware() -> None:
    with pytest.raises(TypeError, match="zero-argument callable"):
        memory_tool(".", clock=datetime(2026, 1, 1))  # type: ignore[arg-type]
    naive = memory_tool(".", clock=lambda: datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="aware datetime"):
        _ = naive.description


def test_daily_notes_do_not_count_toward_the_topic_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("toolnexus.memory.topics.MAX_FILES", 2)
    home = _home(tmp_path)
    tool = memory_tool(home)
    for name in ("a.md", "b.md"):
        assert not tool.tool(command="append", file=name, content="x").is_error
    refused = tool.tool(command="append", file="c.md", content="x")
    assert refused.is_error
    assert "2 topic files, the limit" in refused
    for name in ("2026-11-30.md", "2026-12-01-standup.md"):
        assert not tool.tool(command="append", file=name, content="x").is_error


def test_the_prelude_keeps_the_most_recent_lines_within_bounds() -> None:
    long = "\n".join(f"line {n:04d} " + "x" * 40 for n in range(100))
    notes = {
        "2026-11-29.md": "too old",
        "2026-11-30.md": long,
        "2026-12-01.md": "Met Mira.",
        "2026-12-01-standup.md": "Shipped.",
        "projects/aster.md": "not a daily note",
    }
    prelude = daily_prelude(notes, date(2026, 12, 1), 2)
    assert prelude.startswith(f"## Daily notes\n\n{TOLD}### memory/2026-11-30.md\n\n[… earlier lines of ")
    assert prelude.index("### memory/2026-12-01-standup.md") < prelude.index("### memory/2026-12-01.md")
    assert "too old" not in prelude
    assert "not a daily note" not in prelude
    assert "line 0099" in prelude
    assert "line 0000" not in prelude
    body = prelude.split("### memory/2026-11-30.md\n\n", 1)[1].split("\n\n###", 1)[0]
    assert len(body) <= 1_200
    many = {f"2026-12-01-{n:02d}.md": long for n in range(5)}
    assert len(daily_prelude(many, date(2026, 12, 1), 2)) <= 2_800 + 100  # the header aside
    assert "2026-12-01-04" in daily_prelude(many, date(2026, 12, 1), 2)  # the newest (last) kept
    assert daily_prelude(notes, date(2026, 12, 1), 0) == ""


class Recorder:
    """A model that answers at once, keeping each system prompt and tool list it was sent."""

    def __init__(self, *calls: ToolCall) -> None:
        self.systems: list[Any] = []
        self.tools: list[list[str]] = []
        self.calls = list(calls)
        self.results: list[Any] = []

    async def __call__(self, system: Any, messages: Sequence[Any], tools: Sequence[Any]) -> ModelReply | str:
        self.systems.append(system)
        self.tools.append([tool.name for tool in tools])
        self.results = [message for message in messages if type(message).__name__ == "ToolResult"]
        if self.calls:
            return ModelReply(tool_calls=(self.calls.pop(0),))
        return "done"


def test_a_session_starts_with_the_last_days_notes_after_the_soul(tmp_path: Path) -> None:
    home = _home(tmp_path)
    tool = memory_tool(home, clock=lambda: LATE)
    tool.tool(command="append", file="2026-11-29.md", content="Too old to show.")
    tool.tool(command="append", file="2026-11-30.md", content="Yesterday: rain.")
    tool.tool(command="append", file="today", content="Today: Mira called.")
    model = Recorder()
    agent = agent_from_dir(home, model=model, clock=lambda: LATE)
    agent.run_sync("hi")
    system = model.systems[0]
    soul = compose_soul(home)[0]
    assert soul == inspect_soul(home).soul
    assert "Mira called" not in soul
    assert system.startswith(
        f"{soul}\n\n## Daily notes\n\n{TOLD}### memory/2026-11-30.md\n\nYesterday: rain."
    )
    assert system.endswith("### memory/2026-12-01.md\n\nToday: Mira called.")
    assert "Too old" not in system
    assert system.parts[0] == inspect_soul(home).parts[0]  # the cached stable part, untouched
    quiet = Recorder()
    agent_from_dir(home, model=quiet, clock=lambda: LATE, daily_notes=0).run_sync("hi")
    assert quiet.systems[0] == soul


@pytest.mark.parametrize("profile", ["group", "subagent", "cron"])
def test_private_profiles_get_no_prelude_no_search_and_a_write_only_memory(
    tmp_path: Path, profile: str
) -> None:
    home = _home(tmp_path)
    tool = memory_tool(home, clock=lambda: LATE)
    tool.tool(command="append", file="today", content="Private: Mira's address.")
    tool.tool(command="append", file="people/mira.md", content="Private too.")
    calls = [
        ToolCall("1", "memory", {"command": "view", "path": "/memories/MEMORY.md"}),
        ToolCall("2", "memory", {"command": "view", "file": "people/mira.md"}),
        ToolCall("3", "memory", {"command": "append", "content": "overwrite my soul"}),
        ToolCall("4", "memory", {"command": "append", "file": "today", "content": "From the group."}),
    ]
    model = Recorder(*calls)
    agent = agent_from_dir(home, model=model, clock=lambda: LATE, profile=profile)
    agent.run_sync("what do you remember?")
    assert "Private" not in model.systems[0]
    assert model.tools[0] == ["memory"]  # no memory_search, no memory_get
    errors = [result.is_error for result in model.results]
    assert errors == [True, True, True, False]
    assert all("Private" not in result.text for result in model.results)
    assert (home / "MEMORY.md").read_text() == "- Mira prefers tea.\n"
    assert (home / "memory" / "2026-12-01.md").read_text() == "Private: Mira's address.\nFrom the group.\n"
    main = Recorder()
    agent_from_dir(home, model=main, clock=lambda: LATE).run_sync("hi")
    assert main.tools[0] == ["memory", "memory_search", "memory_get", "skill"][: len(main.tools[0])]
    assert "From the group." in main.systems[0]


def test_a_session_profile_is_private_too(tmp_path: Path) -> None:
    home = _home(tmp_path)
    memory_tool(home, clock=lambda: LATE).tool(command="append", file="today", content="Private.")
    agent = agent_from_dir(home, model=Recorder(), clock=lambda: LATE)

    async def start() -> tuple[Any, Any]:
        group = await agent.start_session(profile="group")
        mine = await agent.start_session()
        return group, mine

    group, mine = asyncio.run(start())
    assert "Private." not in group.soul
    assert "Private." in mine.soul
    assert [tool.name for tool in agent.session_tools("group")] == ["memory"]
    assert [tool.name for tool in agent.session_tools()] == ["memory", "memory_search", "memory_get"]


def test_a_bundle_has_its_prelude_and_search_without_the_memory_tool(tmp_path: Path) -> None:
    bundle = tmp_path / "aster.zip"
    files = {"SOUL.md": b"You are Aster.", "memory/2026-12-01.md": b"Mira moved to Hamburg.\n"}
    bundle.write_bytes(zip_bytes(files))
    model = Recorder(ToolCall("1", "memory_search", {"query": "Hamburg"}))
    agent_from_dir(bundle, model=model, memory=False, clock=lambda: LATE).run_sync("where is Mira?")
    assert model.systems[0].endswith("### memory/2026-12-01.md\n\nMira moved to Hamburg.")
    assert model.tools[0][:2] == ["memory_search", "memory_get"]
    assert model.results[0].text.startswith("memory/2026-12-01.md lines 1-1")
