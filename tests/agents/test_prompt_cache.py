"""Provider prompt caching, on the official SDKs against loopback servers that model each
provider's cache (tests/support/prompt_cache.py): where the breakpoints go, what is sent
byte for byte, what ``Usage`` reports, and the figures for a 20,000-token soul with five tools
(tests/support/cache_scenario.py; ``python -m benchmarks --only prompt-cache`` prints the same)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.support.cache_scenario import (
    REMEMBER,
    SOUL_TOKENS,
    agent_for,
    billed,
    cache_for,
    make_persona,
    responder,
    run_session,
    stable_prefix_tokens,
    ten_turns,
)
from tests.support.prompt_cache import AnthropicCache, Clock
from tests.support.providers import ProviderRequest, Text, provider_server, scripted
from toolnexus.agents import (
    AnthropicModel,
    Budget,
    OpenAIChatModel,
    Usage,
    agent_from_dir,
    compose_soul,
    inspect_soul,
)
from toolnexus.models.openai import derived_cache_key
from toolnexus.soul.compose import compose_soul_parts_async
from toolnexus.sources import resolve


def markers(value: Any) -> list[Any]:
    """Every ``cache_control`` in a request body, in document order."""
    if isinstance(value, dict):
        found = [value["cache_control"]] if "cache_control" in value else []
        return found + [m for key, item in value.items() if key != "cache_control" for m in markers(item)]
    if isinstance(value, list):
        return [m for item in value for m in markers(item)]
    return []


def small_home(root: Path) -> Path:
    home = root / "aster"
    home.mkdir()
    for name, text in {"SOUL.md": "You are Aster.", "TOOLS.md": "Use tools.", "MEMORY.md": "- tea"}.items():
        (home / name).write_text(text, encoding="utf-8")
    return home


# -- Anthropic: the request ---------------------------------------------------------------------


def test_anthropic_sends_the_soul_as_blocks_with_four_breakpoints(tmp_path: Path) -> None:
    home = make_persona(tmp_path)
    with provider_server("anthropic", responder("anthropic"), AnthropicCache()) as server:
        agent = agent_for(home, server, cache_ttl="1h")
        with agent.session() as chat:
            chat.send("Hello")
            chat.send("And then?")
    first, second = server.requests
    ephemeral = {"type": "ephemeral", "ttl": "1h"}
    for request in (first, second):
        body = request.body
        assert markers(body) == [ephemeral] * 4
        assert "cache_control" in body["tools"][-1]
        assert not any("cache_control" in tool for tool in body["tools"][:-1])
        stable, volatile = body["system"]
        assert (stable["cache_control"], volatile["cache_control"]) == (ephemeral, ephemeral)
        assert stable["text"] + volatile["text"] == request.system == compose_soul(home)[0]
        assert stable["text"] == inspect_soul(home).parts[0][0]
        assert "cache_control" in body["messages"][-1]["content"][-1]
    # the latest message carries the breakpoint; earlier turns do not keep theirs
    assert [len(markers(message)) for message in second.body["messages"]] == [0, 0, 1]


def test_cache_ttl_none_sends_todays_request(tmp_path: Path) -> None:
    home = small_home(tmp_path)
    with provider_server("anthropic", scripted(Text("hi"))) as server:
        agent_for(home, server, cache_ttl=None).run_sync("Hello")
    [request] = server.requests
    assert markers(request.body) == []
    assert request.body["system"] == compose_soul(home)[0]
    assert request.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}]


def test_a_bad_cache_ttl_is_refused_with_the_allowed_values() -> None:
    with pytest.raises(ValueError, match=r"cache_ttl must be '5m', '1h' or None, not '10m'"):
        AnthropicModel("claude-test", cache_ttl="10m")  # type: ignore[arg-type]


def test_a_cache_entry_lives_for_its_ttl(tmp_path: Path) -> None:
    """Ten idle minutes: the 5-minute entries are gone, the 1-hour ones are read."""
    home = make_persona(tmp_path)
    reads = {}
    for ttl in ("5m", "1h"):
        clock = Clock()
        with provider_server("anthropic", responder("anthropic"), AnthropicCache(clock=clock)) as server:
            agent = agent_for(home, server, cache_ttl=ttl)
            agent.run_sync("Hello")
            clock.advance(600)
            reads[ttl] = agent.run_sync("Hello again").usage.cache_read_tokens
    assert reads["5m"] == 0
    assert reads["1h"] >= SOUL_TOKENS


def test_a_budgeted_agent_sends_its_budgeted_soul_in_parts(tmp_path: Path) -> None:
    home = make_persona(tmp_path)
    budget = Budget(per_file=5_000, total=20_000)
    with provider_server("anthropic", responder("anthropic")) as server:
        model = AnthropicModel("claude-test", base_url=server.base_url, api_key="k", max_retries=0)
        agent = agent_from_dir(home, model=model, budget=budget)
        agent.run_sync("Hello")
        agent.heartbeat_sync(light=True)
    session, light = server.requests
    soul = compose_soul(home, budget=budget)[0]
    assert soul != compose_soul(home)[0]  # the budget cut
    stable, volatile = session.body["system"]
    assert stable["text"] + volatile["text"] == soul
    assert stable["text"] == inspect_soul(home, budget=budget).parts[0][0]
    # a light heartbeat's soul is HEARTBEAT.md alone: one block, no stable part
    [heartbeat] = light.body["system"]
    assert heartbeat["text"] == compose_soul(home, budget=budget, profile="heartbeat")[0]
    assert heartbeat["cache_control"] == {"type": "ephemeral"}


# -- OpenAI: the request ------------------------------------------------------------------------


def test_openai_system_and_tools_are_byte_identical_over_ten_requests(tmp_path: Path) -> None:
    home = make_persona(tmp_path)
    with provider_server("openai", responder("openai"), cache_for("openai")) as server:
        agent = agent_for(home, server)
        session = run_session(agent, server, ten_turns())
        later = run_session(agent_for(home, server), server, ["A new process, the same persona."])
    requests = [*session.requests, *later.requests]
    assert len(session.requests) == 10

    def prefix(request: ProviderRequest) -> str:
        return json.dumps(request.body["messages"][0]) + json.dumps(request.body["tools"])

    assert len({prefix(request) for request in requests}) == 1
    tools = requests[0].body["tools"]
    assert [tool["function"]["name"] for tool in tools] == [
        "memory",
        "weather",
        "clock",
        "search",
        "calculate",
    ]
    assert json.dumps(tools) == json.dumps(tools, sort_keys=True)
    keys = {request.body["prompt_cache_key"] for request in requests}
    soul = asyncio.run(compose_soul_parts_async(resolve(home), persona="aster"))[0]
    assert keys == {derived_cache_key(soul)}
    # every request after the first reads the soul and the tools from the cache
    assert all(
        request.usage["prompt_tokens_details"]["cached_tokens"] >= SOUL_TOKENS for request in requests[1:]
    )
    assert session.usage.cache_read_tokens == sum(
        request.usage["prompt_tokens_details"]["cached_tokens"] for request in session.requests
    )


def test_the_prompt_cache_key_follows_the_stable_part(tmp_path: Path) -> None:
    home = small_home(tmp_path)
    with provider_server("openai", lambda request: Text("ok")) as server:
        agent = agent_for(home, server)
        agent.run_sync("one")
        (home / "MEMORY.md").write_text("- coffee now", encoding="utf-8")
        agent.run_sync("two")
        (home / "TOOLS.md").write_text("Use the new tools.", encoding="utf-8")
        agent.run_sync("three")
        agent_for(home, server, prompt_cache_key=None).run_sync("four")
        agent_for(home, server, prompt_cache_key="team-7").run_sync("five")
    keys = [request.body.get("prompt_cache_key") for request in server.requests]
    assert keys[0] == keys[1] != keys[2]
    assert all(key.startswith("aster-") and len(key) == len("aster-") + 16 for key in keys[:3])
    assert keys[3:] == [None, "team-7"]


def test_openai_usage_reports_cached_tokens_as_reads(tmp_path: Path) -> None:
    home = make_persona(tmp_path)
    with provider_server("openai", responder("openai"), cache_for("openai")) as server:
        first = agent_for(home, server).run_sync("Hello").usage
        second = agent_for(home, server).run_sync("Hello").usage
    assert (first.cache_read_tokens, first.cache_write_tokens) == (0, 0)
    assert second.input_tokens == server.requests[1].usage["prompt_tokens"]
    assert SOUL_TOKENS <= second.cache_read_tokens < second.input_tokens


# -- Usage and the one-time notice --------------------------------------------------------------


def test_usage_adds_up_every_figure_and_counts_cached_tokens_as_input() -> None:
    one = Usage(100, 5, cache_read_tokens=60, cache_write_tokens=30)
    two = Usage(50, 5, cache_read_tokens=40)
    assert one + two == Usage(150, 10, 100, 30)
    assert (one + two).uncached_input_tokens == 20
    assert (one + two).to_dict() == {
        "input_tokens": 150,
        "output_tokens": 10,
        "cache_read_tokens": 100,
        "cache_write_tokens": 30,
        "total_tokens": 160,
    }


def test_anthropic_usage_is_the_sum_of_what_the_server_reported(tmp_path: Path) -> None:
    home = make_persona(tmp_path)
    with provider_server("anthropic", responder("anthropic"), cache_for("anthropic")) as server:
        session = run_session(agent_for(home, server), server, ten_turns()[:3])
    reported = [request.usage for request in session.requests]
    assert session.usage.cache_read_tokens == sum(u["cache_read_input_tokens"] for u in reported)
    assert session.usage.cache_write_tokens == sum(u["cache_creation_input_tokens"] for u in reported)
    assert session.usage.uncached_input_tokens == sum(u["input_tokens"] for u in reported)


@pytest.mark.parametrize(
    ("wire", "options", "expected"),
    [
        ("anthropic", {}, "below the 1024"),
        ("openai", {}, "below the 1024"),
        ("anthropic", {"cache_ttl": None}, None),
    ],
)
def test_a_stable_part_too_short_to_cache_is_said_once_per_agent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, wire: str, options: dict[str, Any], expected: str | None
) -> None:
    home = small_home(tmp_path)
    with (
        caplog.at_level(logging.INFO, logger="toolnexus"),
        provider_server(wire, lambda r: Text("ok")) as server,
    ):
        agent = agent_for(home, server, **options)
        for _ in range(3):
            agent.run_sync("Hello")
        agent_for(home, server, **options).run_sync("Hello")  # another agent says it again
    said = [record.getMessage() for record in caplog.records if "stable part" in record.getMessage()]
    if expected is None:
        assert said == []
    else:
        assert len(said) == 2
        assert all(expected in line and line.startswith("aster: ") for line in said)


def test_a_large_stable_part_is_not_mentioned(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with (
        caplog.at_level(logging.INFO, logger="toolnexus"),
        provider_server("anthropic", lambda r: Text("ok")) as server,
    ):
        agent_for(make_persona(tmp_path), server).run_sync("Hello")
    assert not [record for record in caplog.records if "stable part" in record.getMessage()]


@pytest.mark.parametrize(
    ("model", "minimum"),
    [
        ("claude-sonnet-4-6", 1024),
        ("claude-opus-4-5", 4096),
        ("claude-haiku-4-5", 4096),
        ("claude-3-5-haiku", 2048),
    ],
)
def test_anthropic_minimum_cacheable_prefix_per_model(model: str, minimum: int) -> None:
    assert AnthropicModel(model).min_cacheable_tokens == minimum
    assert AnthropicModel(model, cache_ttl=None).min_cacheable_tokens is None
    assert OpenAIChatModel("gpt-test", api_key="k").min_cacheable_tokens == 1024


# -- The figures: a 20,000-token soul, five tools -------------------------------------------------


@pytest.fixture(scope="module")
def anthropic_sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Session 1 (10 turns, cold), session 2 (unchanged persona; its model edits MEMORY.md),
    session 3 (after that edit), and the same 10 turns with caching off."""
    tmp_path = tmp_path_factory.mktemp("figures")
    home = make_persona(tmp_path / "cached")
    with provider_server("anthropic", responder("anthropic"), cache_for("anthropic")) as server:
        agent = agent_for(home, server)
        one = run_session(agent, server, ten_turns())
        two = run_session(agent, server, [REMEMBER + "the user prefers tea", *ten_turns()[:8]])
        three = run_session(agent, server, ten_turns())
    plain = make_persona(tmp_path / "plain")
    with provider_server("anthropic", responder("anthropic"), cache_for("anthropic")) as server:
        uncached = run_session(agent_for(plain, server, cache_ttl=None), server, ten_turns())
    return {"one": one, "two": two, "three": three, "uncached": uncached}


def test_a_cold_ten_turn_session_costs_what_the_prices_allow_at_best(
    anthropic_sessions: dict[str, Any],
) -> None:
    """The first request must write the whole prefix (x1.25); nine more can at best read it (x0.1):
    (1.25 + 9 x 0.1) / 10 = 0.215 of the uncached cost is the floor for a cold session of ten calls.
    Issue 20 asked for <= 0.2: met by every session that starts warm (next test), not by a cold one."""
    one, uncached = anthropic_sessions["one"], anthropic_sessions["uncached"]
    assert len(one.requests) == len(uncached.requests) == 10
    assert uncached.usage.cache_read_tokens == uncached.usage.cache_write_tokens == 0
    assert uncached.usage.input_tokens >= 10 * SOUL_TOKENS
    ratio = billed(one.usage) / billed(uncached.usage)
    assert 0.215 <= ratio <= 0.22, ratio
    assert one.usage.cache_read_tokens >= 9 * SOUL_TOKENS


def test_a_session_on_an_unchanged_persona_reads_the_stable_part_and_tools(
    anthropic_sessions: dict[str, Any],
) -> None:
    two, uncached = anthropic_sessions["two"], anthropic_sessions["uncached"]
    first = two.first.usage
    assert first["cache_read_input_tokens"] >= stable_prefix_tokens(two.first)
    assert first["cache_read_input_tokens"] >= SOUL_TOKENS  # the whole soul, in fact
    assert len(two.requests) == 10  # nine prompts, one of them a memory edit (two calls)
    assert billed(two.usage) / billed(uncached.usage) <= 0.2


def test_after_a_memory_edit_the_stable_part_is_still_read(anthropic_sessions: dict[str, Any]) -> None:
    three, uncached = anthropic_sessions["three"], anthropic_sessions["uncached"]
    assert "the user prefers tea" in (three.first.system or "")
    first = three.first.usage
    assert first["cache_read_input_tokens"] == stable_prefix_tokens(three.first)  # tools + stable part
    assert first["cache_creation_input_tokens"] > 0  # HEARTBEAT.md, MEMORY.md and the prompt, rewritten
    assert first["input_tokens"] == 0
    assert billed(three.usage) / billed(uncached.usage) <= 0.2
