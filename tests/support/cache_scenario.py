"""The prompt-cache scenario: a 20,000-token soul, five tools, sessions against the loopback
providers with their caches modelled (:mod:`tests.support.prompt_cache`).

Shared by ``tests/agents/test_prompt_cache_figures.py`` (which asserts the figures) and
``benchmarks/prompt_cache.py`` (which reports them), so both measure the very same thing.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.prompt_cache import CHARS_PER_TOKEN, AnthropicCache, OpenAICache, anthropic_blocks
from tests.support.providers import Calls, ProviderRequest, ProviderServer, Reply, Text
from toolnexus.agents import Agent, AnthropicModel, OpenAIChatModel, Tool, Usage, agent_from_dir

#: Characters per file: 80,000 in all, a 20,000-token soul (characters ÷ 4); 15,000 of its
#: tokens in the stable part (AGENTS.md … TOOLS.md).
FILE_CHARS = {
    "AGENTS.md": 30_000,
    "SOUL.md": 10_000,
    "IDENTITY.md": 2_000,
    "USER.md": 4_000,
    "TOOLS.md": 14_000,
    "HEARTBEAT.md": 4_000,
    "MEMORY.md": 16_000,
}
SOUL_TOKENS = sum(FILE_CHARS.values()) // CHARS_PER_TOKEN

#: Anthropic's prices relative to an uncached input token.
WRITE_PRICE = {"5m": 1.25, "1h": 2.0}
READ_PRICE = 0.1

_WORDS = [
    "persona",
    "memory",
    "cache",
    "river",
    "lantern",
    "orchard",
    "compass",
    "harbour",
    "meadow",
    "ledger",
]

#: What a user message asks the scripted model to do: edit its memory, then answer.
REMEMBER = "Please remember: "


def text_of(length: int, seed: int) -> str:
    """``length`` characters of word-like text, different for each seed, the same on every call."""
    words = itertools.cycle(_WORDS[seed % len(_WORDS) :] + _WORDS[: seed % len(_WORDS)])
    text = ""
    while len(text) < length:
        text += next(words) + (".\n" if len(text) % 97 < 9 else " ")
    return text[:length]


def make_persona(root: Path, name: str = "aster") -> Path:
    """A home whose soul is :data:`SOUL_TOKENS` tokens long."""
    home = root / name
    home.mkdir(parents=True)
    for seed, (file, chars) in enumerate(FILE_CHARS.items()):
        body = text_of(chars - len(f"## {file}\n\n") - 2, seed)  # header and separator counted
        (home / file).write_text(body, encoding="utf-8")
    return home


def _tool(name: str, description: str, field: str) -> Tool:
    def run(**arguments: Any) -> str:
        return f"{name}: {arguments.get(field, '')}"

    schema = {"type": "object", "properties": {field: {"type": "string", "description": description}}}
    return Tool(run, description, {**schema, "required": [field]}, name=name)


def extra_tools() -> list[Tool]:
    """Four tools besides memory: five in all."""
    return [
        _tool("weather", "Today's weather in a city.", "city"),
        _tool("clock", "The time in a time zone.", "zone"),
        _tool("search", "Search the persona's notes.", "query"),
        _tool("calculate", "Evaluate an arithmetic expression.", "expression"),
    ]


def memory_call(wire: str, note: str) -> dict[str, Any]:
    if wire == "openai":
        return {"command": "append", "content": note}
    return {"command": "insert", "path": "/memories/MEMORY.md", "insert_line": 0, "insert_text": note}


def responder(wire: str) -> Any:
    """Answers every prompt; a prompt starting with :data:`REMEMBER` is a memory edit first."""

    def respond(request: ProviderRequest) -> Reply:
        said = request.last_user_text
        if said.startswith(REMEMBER) and not request.tool_results:
            return Calls([("memory", memory_call(wire, "- " + said.removeprefix(REMEMBER)))])
        return Text(f"Answer to {said!r}.")

    return respond


def cache_for(wire: str) -> AnthropicCache | OpenAICache:
    return OpenAICache() if wire == "openai" else AnthropicCache()


def agent_for(home: Path, server: ProviderServer, **model_options: Any) -> Agent:
    model: Any
    if server.wire == "openai":
        model = OpenAIChatModel(
            "gpt-test", base_url=server.base_url, api_key="k", max_retries=0, **model_options
        )
    else:
        model = AnthropicModel(
            "claude-test", base_url=server.base_url, api_key="k", max_retries=0, **model_options
        )
    return agent_from_dir(home, model=model, tools=extra_tools())


@dataclass
class SessionFigures:
    """One session: the requests the server saw and the usage the agent added up."""

    requests: list[ProviderRequest] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    @property
    def first(self) -> ProviderRequest:
        return self.requests[0]


def run_session(agent: Agent, server: ProviderServer, prompts: Sequence[str]) -> SessionFigures:
    """One session of ``prompts``; its requests are those the server received meanwhile."""
    before = len(server.requests)
    with agent.session() as chat:
        for prompt in prompts:
            chat.send(prompt)
        usage = chat.usage
    return SessionFigures(server.requests[before:], usage)


def ten_turns() -> list[str]:
    """Ten prompts, each answered in one model call: a 10-turn session."""
    return [f"Question {number}: what next?" for number in range(1, 11)]


def billed(usage: Usage, ttl: str = "5m") -> float:
    """Input cost in uncached-token units: input x1, cache writes x1.25 (1 h: x2), reads x0.1."""
    return (
        usage.uncached_input_tokens
        + WRITE_PRICE[ttl] * usage.cache_write_tokens
        + READ_PRICE * usage.cache_read_tokens
    )


def stable_prefix_tokens(request: ProviderRequest) -> int:
    """Tokens (as the cache model counts them) up to the breakpoint after the soul's stable part:
    the tool declarations and the stable system block."""
    chars = 0
    for text, ttl in anthropic_blocks(request.body):
        chars += len(text)
        if ttl is not None and text.startswith("system:"):
            return chars // CHARS_PER_TOKEN
    raise AssertionError("no breakpoint after a system block")
