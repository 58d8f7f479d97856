"""``toolnexus.integrations.claude_agent_sdk.Persona``: the ``ClaudeAgentOptions`` it builds, and its
tools called through the SDK's own in-process MCP server (with the ``mcp`` package's client), as
Claude Code would call them. The CLI itself is not run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.integrations.personas import (
    APPEND,
    BAD,
    BAD_REPLY,
    DAILY,
    HIT,
    NOTE,
    RECALL_TOOLS,
    SEARCH,
    check_prelude,
    clock,
    system_of,
)
from toolnexus.agents import Budget, compose_soul
from toolnexus.integrations import ReadOnlyHomeWarning


def persona(home: Any, **options: Any) -> Any:
    from toolnexus.integrations.claude_agent_sdk import Persona  # noqa: PLC0415

    return Persona(home, **options)


def call(options: Any, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    """One call of the options' MCP tool ``name``, through the SDK's server: (text, is_error)."""
    from mcp import Client  # noqa: PLC0415

    async def go() -> tuple[str, bool]:
        async with Client(options.mcp_servers["persona"]["instance"]) as client:
            result = await client.call_tool(name, arguments)
        return "".join(part.text for part in result.content), bool(result.is_error)

    return asyncio.run(go())


def test_the_options_carry_the_soul_and_the_persona_server(home: Path) -> None:
    from claude_agent_sdk import ClaudeAgentOptions  # noqa: PLC0415

    options = persona(home).claude_agent_options(max_turns=3, allowed_tools=["Read"])
    assert isinstance(options, ClaudeAgentOptions)
    assert options.system_prompt == system_of(home)
    assert options.max_turns == 3
    assert options.allowed_tools == ["Read", "mcp__persona__memory"]
    assert options.mcp_servers["persona"]["type"] == "sdk"


def test_a_memory_edit_lands_once_and_shows_in_the_next_session(home: Path) -> None:
    aster = persona(home)
    options = aster.claude_agent_options()
    size = len((home / "MEMORY.md").read_bytes()) + len(NOTE) + 1
    assert call(options, "memory", APPEND) == (f"ok: note appended ({size} of 2097152 bytes used).", False)
    assert (home / "MEMORY.md").read_text().count(NOTE) == 1
    assert NOTE not in options.system_prompt  # this session's prompt is frozen
    assert NOTE in aster.claude_agent_options().system_prompt


def test_a_tool_error_is_an_mcp_error_result(home: Path) -> None:
    options = persona(home).claude_agent_options()
    assert call(options, "memory", BAD) == (BAD_REPLY, True)
    text, failed = call(options, "memory", {"command": "bogus"})  # the SDK checks the schema first
    assert failed
    assert "bogus" in text


def test_skills_add_their_catalog_and_the_skill_tool(skilled: Path) -> None:
    options = asyncio.run(persona(skilled).claude_agent_options_async())
    assert options.system_prompt == system_of(skilled)
    assert options.allowed_tools == ["mcp__persona__memory", "mcp__persona__skill"]
    text, failed = call(options, "skill", {"name": "brew"})
    assert not failed
    assert "Steep for three minutes." in text


def test_a_budget_and_a_profile_narrow_the_prompt(home: Path) -> None:
    budget = Budget(total=400)
    assert (
        persona(home, budget=budget).claude_agent_options().system_prompt
        == compose_soul(home, budget=budget)[0]
    )
    group = persona(home, profile="group").claude_agent_options().system_prompt
    assert group == compose_soul(home, profile="group")[0]
    assert "## MEMORY.md" not in group


def test_a_read_only_home_has_no_memory_tool_and_says_so(bundle: Path) -> None:
    with pytest.warns(ReadOnlyHomeWarning):
        options = persona(bundle).claude_agent_options()
    assert options.allowed_tools == []
    assert options.system_prompt == compose_soul(bundle)[0]


def test_on_s3_an_edit_whose_answer_is_lost_lands_exactly_once(
    proxy: Any, new_bucket: Any, home: Path
) -> None:
    from tests.support.homes import s3_home  # noqa: PLC0415
    from tests.support.lossy import writes_memory  # noqa: PLC0415
    from tests.support.proxy import LoseResponse, Reset  # noqa: PLC0415
    from tests.support.s3 import s3_storage_options  # noqa: PLC0415

    remote = s3_home(new_bucket(), s3_storage_options(proxy.upstream_url, skip_instance_cache=True))
    for path in home.iterdir():
        remote.put(path.name, path.read_bytes())
    options = persona(
        remote.location, storage_options=s3_storage_options(proxy.endpoint_url, skip_instance_cache=True)
    ).claude_agent_options()
    assert options.system_prompt == system_of(home)
    rule = proxy.add_fault(writes_memory, LoseResponse(Reset()), times=1)
    text, failed = call(options, "memory", APPEND)
    assert (text.startswith("ok: note appended"), failed, rule.hits) == (True, False, 1)
    assert (remote.memory() or b"").decode().count(NOTE) == 1


def test_a_home_with_notes_gets_the_search_tools_and_the_daily_prelude(noted: Path) -> None:
    options = persona(noted, clock=clock).claude_agent_options()
    assert options.allowed_tools == [f"mcp__persona__{name}" for name in RECALL_TOOLS]
    check_prelude(options.system_prompt, noted)
    found, failed = call(options, "memory_search", SEARCH)
    assert (found.startswith(HIT), found.endswith(DAILY), failed) == (True, True, False)


def test_a_private_profile_gets_no_search_and_no_prelude(noted: Path) -> None:
    options = persona(noted, clock=clock, profile="group").claude_agent_options()
    assert options.allowed_tools == ["mcp__persona__memory"]
    assert options.system_prompt == compose_soul(noted, profile="group")[0]


def test_a_read_only_home_with_notes_can_still_search_them(noted: Path, tmp_path: Path) -> None:
    from toolnexus.agents import write_bundle  # noqa: PLC0415

    write_bundle(noted, tmp_path / "noted.zip")
    with pytest.warns(ReadOnlyHomeWarning):
        options = persona(tmp_path / "noted.zip", clock=clock).claude_agent_options()
    assert options.allowed_tools == ["mcp__persona__memory_search", "mcp__persona__memory_get"]
    assert options.system_prompt.endswith(DAILY)
    found, failed = call(options, "memory_search", SEARCH)
    assert (found.startswith(HIT), failed) == (True, False)
