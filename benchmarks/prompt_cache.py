"""What provider prompt caching saves a persona with a 20,000-token soul and five tools, on the
official SDKs against the loopback providers that model each cache (``tests/support/prompt_cache.py``;
tokens are characters ÷ 4). Token counts, not timings: the figures are exact on every run.

Billed input cost is in uncached-token units at Anthropic's prices: input x1, cache writes
x1.25 (5-minute entries), reads x0.1. A cold session of ten model calls cannot cost less than
(1.25 + 9 x 0.1) / 10 = 0.215 of the uncached session (the first call writes the whole prefix,
nine at best read it): that floor is its baseline.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cache_scenario import (
    READ_PRICE,
    REMEMBER,
    WRITE_PRICE,
    SessionFigures,
    agent_for,
    billed,
    cache_for,
    make_persona,
    responder,
    run_session,
    stable_prefix_tokens,
    ten_turns,
)
from tests.support.providers import provider_server

from benchmarks.harness import Row

TARGET = "prompt cache"
COLD_FLOOR = (WRITE_PRICE["5m"] + 9 * READ_PRICE) / 10


def _anthropic(work: Path) -> dict[str, SessionFigures]:
    home = make_persona(work / "cached")
    with provider_server("anthropic", responder("anthropic"), cache_for("anthropic")) as server:
        agent = agent_for(home, server)
        sessions = {"cold": run_session(agent, server, ten_turns())}
        sessions["warm"] = run_session(agent, server, [REMEMBER + "the user prefers tea", *ten_turns()[:8]])
        sessions["edited"] = run_session(agent, server, ten_turns())
    with provider_server("anthropic", responder("anthropic"), cache_for("anthropic")) as server:
        plain = agent_for(make_persona(work / "plain"), server, cache_ttl=None)
        sessions["uncached"] = run_session(plain, server, ten_turns())
    return sessions


def _cost_row(label: str, session: SessionFigures, uncached: SessionFigures, limit: float) -> Row:
    """Against caching off (``≤ limit``), or for the cold session against the pricing floor."""
    usage, plain = session.usage, billed(uncached.usage)
    of_plain = billed(usage) / plain
    cold = label.startswith("cold")
    ratio = of_plain / COLD_FLOOR if cold else of_plain
    return Row(
        TARGET,
        f"Anthropic, {label}: billed input cost",
        f"{billed(usage):,.0f} (read {usage.cache_read_tokens:,}, written {usage.cache_write_tokens:,}, "
        f"uncached {usage.uncached_input_tokens:,})",
        f"pricing floor {COLD_FLOOR * plain:,.0f} ({COLD_FLOOR:.3f}× of caching off {plain:,.0f}); "
        f"{of_plain:.3f}× of caching off"
        if cold
        else f"caching off {plain:,.0f}",
        ratio,
        requests=f"{len(session.requests)} model calls",
        limit=f"≤ {limit}× the floor" if cold else f"≤ {limit}×",
        ok=ratio <= limit,
        details={"of_uncached": of_plain, "floor": COLD_FLOOR},
        bound=limit,
        key="cache-cold" if cold else ("cache-warm" if label.startswith("next") else ""),
    )


def _first_request_row(label: str, session: SessionFigures, expect: str) -> Row:
    first = session.first.usage
    stable = stable_prefix_tokens(session.first)
    read, written = first["cache_read_input_tokens"], first["cache_creation_input_tokens"]
    ok = read >= stable if expect == "at least" else read == stable
    return Row(
        TARGET,
        f"Anthropic, {label}: first request",
        f"read {read:,}, written {written:,}, uncached {first['input_tokens']:,}",
        f"tools + stable part {stable:,}",
        requests="1 model call",
        limit=f"read {expect} tools + stable part",
        ok=ok,
    )


def _openai(work: Path) -> list[Row]:
    home = make_persona(work / "openai")
    with provider_server("openai", responder("openai"), cache_for("openai")) as server:
        one = run_session(agent_for(home, server), server, ten_turns())
        two = run_session(agent_for(home, server), server, ten_turns()[:1])  # a new agent: another process
    prefixes = {json.dumps(r.body["messages"][0]) + json.dumps(r.body["tools"]) for r in one.requests}
    keys = {r.body.get("prompt_cache_key") for r in [*one.requests, *two.requests]}
    read = one.usage.cache_read_tokens / one.usage.input_tokens
    return [
        Row(
            TARGET,
            "OpenAI: system message + tools over a 10-call session",
            f"{len(prefixes)} distinct of {len(one.requests)}; {read:.0%} of input read from the cache",
            requests=f"{len(one.requests)} model calls",
            limit="byte-identical",
            ok=len(prefixes) == 1,
        ),
        Row(
            TARGET,
            "OpenAI: prompt_cache_key across two sessions",
            ", ".join(sorted(map(str, keys))),
            limit="one key",
            ok=len(keys) == 1 and None not in keys,
        ),
    ]


def target_prompt_cache(work: Path) -> list[Row]:
    sessions = _anthropic(work)
    uncached = sessions["uncached"]
    return [
        _cost_row("cold 10-call session", sessions["cold"], uncached, 1.02),
        _cost_row("next session, unchanged persona", sessions["warm"], uncached, 0.2),
        _first_request_row("next session, unchanged persona", sessions["warm"], "at least"),
        _first_request_row("session after a memory edit", sessions["edited"], "exactly"),
        _cost_row("session after a memory edit", sessions["edited"], uncached, 0.2),
        *_openai(work),
    ]
