"""``toolnexus.integrations.pydantic_ai.Persona`` through pydantic-ai's own Agent and model classes,
pointed at the loopback OpenAI-compatible and Anthropic servers of tests/support/providers.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integrations.personas import (
    APPEND,
    BAD,
    BAD_REPLY,
    DAILY,
    NOTE,
    RECALL_TOOLS,
    SEARCH,
    check_search_answered,
    clock,
    system_of,
)
from tests.support.providers import Calls, ProviderServer, Text, provider_server, scripted
from toolnexus.agents import Budget, compose_soul
from toolnexus.integrations import ReadOnlyHomeWarning


def agent(server: ProviderServer, home: Any, **options: Any) -> Any:
    """A pydantic-ai agent on the server's wire format, with the persona as its capability."""
    from pydantic_ai import Agent  # noqa: PLC0415  (the framework's import cost, in its tests only)
    from pydantic_ai.models.anthropic import AnthropicModel  # noqa: PLC0415
    from pydantic_ai.models.openai import OpenAIChatModel  # noqa: PLC0415
    from pydantic_ai.providers.anthropic import AnthropicProvider  # noqa: PLC0415
    from pydantic_ai.providers.openai import OpenAIProvider  # noqa: PLC0415

    from toolnexus.integrations.pydantic_ai import Persona  # noqa: PLC0415

    if server.wire == "openai":
        model: Any = OpenAIChatModel(
            "gpt-test", provider=OpenAIProvider(base_url=server.base_url, api_key="k")
        )
    else:
        model = AnthropicModel(
            "claude-test", provider=AnthropicProvider(base_url=server.base_url, api_key="k")
        )
    return Agent(model, capabilities=[Persona(home, **options)])


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_the_soul_is_the_system_prompt_and_an_edit_shows_in_the_next_run(home: Path, wire: Any) -> None:
    before = system_of(home)
    with provider_server(wire, scripted(Calls([("memory", APPEND)]), Text("noted"), Text("hi"))) as server:
        aster = agent(server, home)
        assert aster.run_sync("Remember my tea.").output == "noted"
        assert aster.run_sync("Hello again.").output == "hi"
    first, second, next_run = server.requests
    assert first.system == second.system == before  # byte for byte, and frozen for the run
    assert (home / "MEMORY.md").read_text().endswith(NOTE + "\n")
    assert next_run.system == system_of(home) != before
    assert NOTE in next_run.system


def test_skills_add_their_catalog_and_the_skill_tool(skilled: Path) -> None:
    with provider_server("openai", scripted(Calls([("skill", {"name": "brew"})]), Text("done"))) as server:
        agent(server, skilled).run_sync("How do I make tea?")
    assert server.requests[0].system == system_of(skilled)
    assert "<name>brew</name>" in server.requests[0].system
    assert sorted(server.requests[0].tool_names) == ["memory", "skill"]
    assert "Steep for three minutes." in next(iter(server.requests[1].tool_results.values()))


def test_anthropic_caches_tools_and_soul_and_declares_the_native_memory_tool(home: Path) -> None:
    with provider_server("anthropic", scripted(Text("hi"))) as server:
        agent(server, home).run_sync("Hello.")
    body = server.requests[0].body
    assert "".join(block["text"] for block in body["system"]) == compose_soul(home)[0]
    assert body["system"][-1]["cache_control"]["type"] == "ephemeral"  # the tools come before it
    assert body["tools"] == [{"type": "memory_20250818", "name": "memory"}]


def test_openai_requests_carry_a_prompt_cache_key_that_outlives_a_memory_edit(home: Path) -> None:
    with provider_server(
        "openai", scripted(Calls([("memory", APPEND)]), Text("noted"), Text("hi"))
    ) as server:
        aster = agent(server, home)
        aster.run_sync("Remember my tea.")
        aster.run_sync("Hello again.")
    keys = {request.body["prompt_cache_key"] for request in server.requests}
    assert server.requests[0].system != server.requests[2].system  # the soul changed, its stable part not
    assert len(keys) == 1
    assert keys.pop().startswith("aster-")


def test_a_tool_error_goes_back_to_the_model_as_a_failed_tool_result(home: Path) -> None:
    with provider_server("anthropic", scripted(Calls([("memory", BAD)]), Text("sorry"))) as server:
        assert agent(server, home).run_sync("Fix my notes.").output == "sorry"
    (result,) = server.requests[1].body["messages"][-1]["content"]
    assert result["is_error"] is True
    assert "".join(part["text"] for part in result["content"]) == BAD_REPLY


def test_a_budget_and_a_profile_narrow_what_is_sent(home: Path) -> None:
    with provider_server("openai", scripted(Text("a"), Text("b"))) as server:
        agent(server, home, profile="subagent").run_sync("Hello.")
        agent(server, home, budget=Budget(total=600)).run_sync("Hello.")
    profiled, budgeted = (request.system or "" for request in server.requests)
    assert profiled == compose_soul(home, profile="subagent")[0]
    assert profiled.startswith("## AGENTS.md")
    assert "## SOUL.md" not in profiled
    assert budgeted == compose_soul(home, budget=Budget(total=600))[0]
    assert len(budgeted) <= 600 < len(compose_soul(home)[0])


def test_a_read_only_home_runs_without_the_memory_tool_and_says_so(bundle: Path) -> None:
    with provider_server("openai", scripted(Text("hi"))) as server:
        with pytest.warns(ReadOnlyHomeWarning, match="aster.zip"):
            aster = agent(server, bundle)
        aster.run_sync("Hello.")
    assert server.requests[0].tool_names == []
    assert server.requests[0].system == compose_soul(bundle)[0]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_home_with_notes_gets_the_search_tools_and_the_daily_prelude(noted: Path, wire: Any) -> None:
    with provider_server(wire, scripted(Calls([("memory_search", SEARCH)]), Text("Hamburg"))) as server:
        agent(server, noted, clock=clock).run_sync("Where does Mira live?")
    first, second = server.requests
    assert sorted(first.tool_names) == sorted(RECALL_TOOLS)
    check_search_answered(first, second, noted)


def test_a_private_profile_gets_no_search_and_no_prelude(noted: Path) -> None:
    with provider_server("openai", scripted(Text("hi"))) as server:
        agent(server, noted, clock=clock, profile="group").run_sync("Hello.")
    assert server.requests[0].tool_names == ["memory"]
    assert server.requests[0].system == compose_soul(noted, profile="group")[0]
    assert DAILY not in (server.requests[0].system or "")
