"""Provider prompt caching, on the official SDKs against loopback servers that model each
provider's cache (tests/support/prompt_cache.py): where the breakpoints go, what is sent, what
``Usage`` reports, and when the agent says caching cannot help. The issue's figures are in
test_prompt_cache_figures.py."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tests.support.cache_scenario import (
    SOUL_TOKENS,
    agent_for,
    cache_for,
    make_persona,
    responder,
    run_session,
    ten_turns,
)
from tests.support.prompt_cache import AnthropicCache, Clock
from tests.support.providers import Text, provider_server, scripted
from toolnexus.agents import (
    AnthropicModel,
    Budget,
    OpenAIChatModel,
    Usage,
    agent_from_dir,
    compose_soul,
    inspect_soul,
)


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
