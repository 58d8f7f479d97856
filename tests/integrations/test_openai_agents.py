"""``toolnexus.integrations.openai_agents.Persona`` through the Agents SDK's own Agent, Runner and
Chat Completions model, pointed at the loopback OpenAI-compatible server (tracing off: no network)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.integrations.personas import (
    APPEND,
    BAD,
    BAD_REPLY,
    NOON,
    RECALL_TOOLS,
    SEARCH,
    check_edit_shows_next_run,
    check_search_answered,
    clock,
    system_of,
)
from tests.support.providers import Calls, ProviderServer, Text, provider_server, scripted
from toolnexus.agents import Budget, compose_soul
from toolnexus.integrations import ReadOnlyHomeWarning


def agent(server: ProviderServer, home: Any, **options: Any) -> tuple[Any, Any]:
    """The persona and an Agents SDK agent wired to it as the issue's one line does."""
    from openai import AsyncOpenAI  # noqa: PLC0415

    from agents import Agent, OpenAIChatCompletionsModel, set_tracing_disabled  # noqa: PLC0415
    from toolnexus.integrations.openai_agents import Persona  # noqa: PLC0415

    set_tracing_disabled(True)
    model = OpenAIChatCompletionsModel(
        model="gpt-test", openai_client=AsyncOpenAI(base_url=server.base_url, api_key="k")
    )
    persona = Persona(home, **options)
    return persona, Agent(name="Aster", instructions=persona.instructions, tools=persona.tools, model=model)


def run(aster: Any, prompt: str) -> str:
    from agents import Runner  # noqa: PLC0415

    return str(Runner.run_sync(aster, prompt).final_output)


def test_the_soul_is_the_instructions_and_an_edit_shows_in_the_next_run(home: Path) -> None:
    before = system_of(home)
    with provider_server(
        "openai", scripted(Calls([("memory", APPEND)]), Text("noted"), Text("hi"))
    ) as server:
        _, aster = agent(server, home)
        assert run(aster, "Remember my tea.") == "noted"
        assert run(aster, "Hello again.") == "hi"
    check_edit_shows_next_run(server.requests, home, before)


def test_one_composition_per_run_even_when_runs_overlap(home: Path) -> None:
    from agents import Runner  # noqa: PLC0415

    async def both(aster: Any) -> None:
        await asyncio.gather(Runner.run(aster, "one"), Runner.run(aster, "two"))

    with provider_server("openai", scripted(Text("a"), Text("b"))) as server:
        persona, aster = agent(server, home)
        composed = []
        start = persona.start_run

        async def counting() -> Any:
            composed.append(1)
            return await start()

        persona.start_run = counting
        asyncio.run(both(aster))
    assert len(composed) == 2  # asked for by tools and instructions alike, composed once each


def test_skills_add_their_catalog_and_the_skill_tool(skilled: Path, home: Path) -> None:
    with provider_server("openai", scripted(Calls([("skill", {"name": "brew"})]), Text("done"))) as server:
        _, aster = agent(server, skilled)
        run(aster, "How do I make tea?")
    assert server.requests[0].system == system_of(skilled)
    assert sorted(server.requests[0].tool_names) == ["memory", "skill"]
    assert "Steep for three minutes." in next(iter(server.requests[1].tool_results.values()))


def test_the_skill_tool_is_off_in_runs_whose_home_has_no_skills(home: Path) -> None:
    with provider_server("openai", scripted(Text("hi"))) as server:
        persona, aster = agent(server, home)
        run(aster, "Hello.")
    assert {"memory", "skill"} <= {tool.name for tool in persona.tools}
    assert server.requests[0].tool_names == ["memory"]


def test_a_tool_error_is_the_tool_output_and_the_run_goes_on(home: Path) -> None:
    with provider_server("openai", scripted(Calls([("memory", BAD)]), Text("sorry"))) as server:
        _, aster = agent(server, home)
        assert run(aster, "Fix my notes.") == "sorry"
    assert list(server.requests[1].tool_results.values()) == [BAD_REPLY]


def test_a_budget_and_a_profile_narrow_what_is_sent(home: Path) -> None:
    with provider_server("openai", scripted(Text("a"), Text("b"))) as server:
        run(agent(server, home, profile="cron")[1], "Hello.")
        run(agent(server, home, budget=Budget(per_file=80))[1], "Hello.")
    profiled, budgeted = (request.system or "" for request in server.requests)
    assert profiled == compose_soul(home, profile="cron")[0]
    assert "## MEMORY.md" not in profiled
    assert budgeted == compose_soul(home, budget=Budget(per_file=80))[0]
    assert len(budgeted) < len(compose_soul(home)[0])


def test_a_read_only_home_has_no_memory_tool_and_says_so(bundle: Path) -> None:
    with provider_server("openai", scripted(Text("hi"))) as server:
        with pytest.warns(ReadOnlyHomeWarning, match="read-only|cannot write"):
            persona, aster = agent(server, bundle, skills=False)
        run(aster, "Hello.")
    assert "memory" not in {tool.name for tool in persona.tools}
    assert server.requests[0].tool_names == []
    assert server.requests[0].system == compose_soul(bundle)[0]


def test_a_home_with_notes_gets_the_search_tools_and_the_daily_prelude(noted: Path) -> None:
    with provider_server("openai", scripted(Calls([("memory_search", SEARCH)]), Text("Hamburg"))) as server:
        persona, aster = agent(server, noted, clock=clock)
        assert run(aster, "Where does Mira live?") == "Hamburg"
    first, second = server.requests
    assert set(RECALL_TOOLS) <= {tool.name for tool in persona.tools}
    assert first.tool_names == RECALL_TOOLS
    check_search_answered(first, second, noted)


def test_a_private_profile_gets_no_search_and_no_prelude(noted: Path) -> None:
    with provider_server("openai", scripted(Text("hi"))) as server:
        persona, aster = agent(server, noted, clock=clock, profile="group")
        run(aster, "Hello.")
    assert "memory_search" not in {tool.name for tool in persona.tools}
    assert server.requests[0].tool_names == ["memory"]
    assert server.requests[0].system == compose_soul(noted, profile="group")[0]


def test_the_memory_tool_tells_each_run_the_date_of_its_day(home: Path) -> None:
    now = [NOON]  # the agent is built, and first run, on 1 December
    with provider_server("openai", scripted(Text("a"), Text("b"))) as server:
        _, aster = agent(server, home, clock=lambda: now[0])
        run(aster, "Hello.")
        now[0] += timedelta(days=1)
        run(aster, "Hello again.")
    said = [request.tools[0]["function"]["description"] for request in server.requests]
    assert "today is 2026-12-01" in said[0]
    assert "today is 2026-12-02" in said[1]
