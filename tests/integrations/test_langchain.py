"""``toolnexus.integrations.langchain.PersonaMiddleware`` through LangChain's own ``create_agent``
with ``ChatOpenAI`` and ``ChatAnthropic``, pointed at the loopback servers."""

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
    NOTE,
    RECALL_TOOLS,
    SEARCH,
    check_edit_shows_next_run,
    check_search_answered,
    clock,
    system_of,
)
from tests.support.providers import Calls, ProviderServer, Text, provider_server, scripted
from toolnexus.agents import Budget, compose_soul, inspect_soul
from toolnexus.integrations import ReadOnlyHomeWarning


def agent(server: ProviderServer, home: Any, **options: Any) -> Any:
    from langchain.agents import create_agent  # noqa: PLC0415
    from langchain_anthropic import ChatAnthropic  # noqa: PLC0415
    from langchain_openai import ChatOpenAI  # noqa: PLC0415

    from toolnexus.integrations.langchain import PersonaMiddleware  # noqa: PLC0415

    if server.wire == "openai":
        model: Any = ChatOpenAI(model="gpt-test", base_url=server.base_url, api_key="k")
    else:
        model = ChatAnthropic(model="claude-test", base_url=server.base_url, api_key="k")
    return create_agent(model, tools=[], middleware=[PersonaMiddleware(home, **options)])


def ask(aster: Any, prompt: str) -> str:
    return str(aster.invoke({"messages": [{"role": "user", "content": prompt}]})["messages"][-1].content)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_the_soul_is_the_system_prompt_and_an_edit_shows_in_the_next_run(home: Path, wire: Any) -> None:
    before = system_of(home)
    with provider_server(wire, scripted(Calls([("memory", APPEND)]), Text("noted"), Text("hi"))) as server:
        aster = agent(server, home)
        assert ask(aster, "Remember my tea.") == "noted"
        assert ask(aster, "Hello again.") == "hi"
    check_edit_shows_next_run(server.requests, home, before)


def test_the_async_agent_is_the_same(home: Path) -> None:
    with provider_server("openai", scripted(Calls([("memory", APPEND)]), Text("noted"))) as server:
        aster = agent(server, home)
        reply = asyncio.run(aster.ainvoke({"messages": [{"role": "user", "content": "Remember my tea."}]}))
    assert reply["messages"][-1].content == "noted"
    assert server.requests[0].system == server.requests[1].system
    assert (home / "MEMORY.md").read_text().endswith(NOTE + "\n")


def test_anthropic_gets_cache_breakpoints_after_the_stable_part_and_the_soul(home: Path) -> None:
    with provider_server("anthropic", scripted(Text("hi"))) as server:
        ask(agent(server, home), "Hello.")
    blocks = server.requests[0].body["system"]
    assert "".join(block["text"] for block in blocks) == compose_soul(home)[0]
    assert [block.get("cache_control") for block in blocks] == [{"type": "ephemeral"}] * 2
    assert "## TOOLS.md" in blocks[0]["text"]
    assert "## MEMORY.md" not in blocks[0]["text"]
    assert blocks[1]["text"].startswith("\n\n## HEARTBEAT.md")


def test_skills_add_their_catalog_and_the_skill_tool(skilled: Path) -> None:
    with provider_server("openai", scripted(Calls([("skill", {"name": "brew"})]), Text("done"))) as server:
        ask(agent(server, skilled), "How do I make tea?")
    assert server.requests[0].system == system_of(skilled)
    assert sorted(server.requests[0].tool_names) == ["memory", "skill"]
    assert "Steep for three minutes." in next(iter(server.requests[1].tool_results.values()))


def test_a_tool_error_is_an_error_tool_message(home: Path) -> None:
    with provider_server("anthropic", scripted(Calls([("memory", BAD)]), Text("sorry"))) as server:
        assert ask(agent(server, home), "Fix my notes.") == "sorry"
    (result,) = server.requests[1].body["messages"][-1]["content"]
    assert result["is_error"] is True
    assert server.requests[1].tool_results == {result["tool_use_id"]: BAD_REPLY}


def test_a_budget_and_a_profile_narrow_what_is_sent(home: Path) -> None:
    with provider_server("openai", scripted(Text("a"), Text("b"))) as server:
        ask(agent(server, home, files=["SOUL.md", "MEMORY.md"]), "Hello.")
        ask(agent(server, home, budget=Budget(total=500)), "Hello.")
    narrowed, budgeted = (request.system or "" for request in server.requests)
    assert narrowed == compose_soul(home, files=["SOUL.md", "MEMORY.md"])[0]
    assert budgeted == compose_soul(home, budget=Budget(total=500))[0]
    assert len(budgeted) <= 500


def test_a_read_only_home_has_no_memory_tool_and_says_so(bundle: Path) -> None:
    with provider_server("openai", scripted(Text("hi"))) as server:
        with pytest.warns(ReadOnlyHomeWarning):
            aster = agent(server, bundle)
        ask(aster, "Hello.")
    assert server.requests[0].tool_names == []
    assert server.requests[0].system == compose_soul(bundle)[0]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_home_with_notes_gets_the_search_tools_and_the_daily_prelude(noted: Path, wire: Any) -> None:
    with provider_server(wire, scripted(Calls([("memory_search", SEARCH)]), Text("Hamburg"))) as server:
        assert ask(agent(server, noted, clock=clock), "Where does Mira live?") == "Hamburg"
    first, second = server.requests
    assert first.tool_names == RECALL_TOOLS
    check_search_answered(first, second, noted)
    if wire == "anthropic":  # breakpoints after the stable part and after the notes
        blocks = first.body["system"]
        assert blocks[0]["text"] == inspect_soul(noted).parts[0][0]
        assert blocks[-1]["text"].endswith(DAILY)
        marked = [index for index, block in enumerate(blocks) if block.get("cache_control")]
        assert marked == [0, len(blocks) - 1]


def test_a_private_profile_gets_no_search_and_no_prelude(noted: Path) -> None:
    with provider_server("openai", scripted(Text("hi"))) as server:
        ask(agent(server, noted, clock=clock, profile="group"), "Hello.")
    assert server.requests[0].tool_names == ["memory"]
    assert server.requests[0].system == compose_soul(noted, profile="group")[0]
