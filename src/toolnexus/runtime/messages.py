"""What the tool loop and a model adapter say to each other: messages in, text or tool calls out.

The loop keeps a provider-neutral transcript (:data:`Message`); an adapter turns it into its
provider's wire format, calls the official SDK, and turns the answer back into a
:class:`ModelReply`. Anything that implements :class:`Model` — including a plain
``async def model(system, messages, tools)`` — can drive an agent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

__all__ = [
    "AssistantMessage",
    "Message",
    "Model",
    "ModelError",
    "ModelReply",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "parse_arguments",
]


class ModelError(Exception):
    """The model provider failed (unreachable, refused the key, rejected the request).

    The message is one line naming the provider, the endpoint and what it said, so a command line
    can print it as is.
    """


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens a run consumed, as the provider reported them (0 when it reported nothing).

    ``input_tokens`` counts every prompt token, cached or not (as OpenAI reports them; for
    Anthropic, whose ``input_tokens`` leaves the cache out, the three figures are added up), so it
    means the same with caching on or off. ``cache_read_tokens`` and ``cache_write_tokens`` are
    the parts of it the provider read from its prompt cache and wrote to it (Anthropic:
    ``cache_read_input_tokens`` / ``cache_creation_input_tokens``; OpenAI:
    ``prompt_tokens_details.cached_tokens`` / ``cache_write_tokens``). Providers bill them
    differently (Anthropic: reads 0.1x, writes 1.25x for 5 minutes, 2x for 1 hour).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def uncached_input_tokens(self) -> int:
        """Prompt tokens neither read from nor written to the cache (billed at the full price)."""
        return self.input_tokens - self.cache_read_tokens - self.cache_write_tokens

    def to_dict(self) -> dict[str, int]:
        """JSON-ready form: the four counts and ``total_tokens``."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for. ``arguments`` is the parsed JSON object; when the model sent
    something that is not a JSON object, it is ``{}`` and ``problem`` says what was wrong."""

    id: str
    name: str
    arguments: dict[str, Any]
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class ModelReply:
    """One model turn: its text (may be empty) and the tool calls it asked for (none: it is done)."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True, slots=True)
class UserMessage:
    text: str


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call returned (or the error text when it failed), sent back to the model."""

    call_id: str
    name: str
    text: str
    is_error: bool = False


Message: TypeAlias = UserMessage | AssistantMessage | ToolResult


@runtime_checkable
class ToolSpec(Protocol):
    """What the loop needs of a tool: a name, declarations for each provider, and a way to run it.

    :class:`~toolnexus.agents.MemoryTool`, ``Agent.as_tool()`` and :class:`~toolnexus.agents.Tool`
    all fit. ``acall`` returns the text to send back; it may raise (the loop reports the error).
    """

    name: str
    description: str

    @property
    def input_schema(self) -> dict[str, Any]: ...

    def openai_tool(self) -> dict[str, Any]: ...

    def anthropic_tool(self) -> dict[str, Any]: ...

    async def acall(self, /, **arguments: Any) -> str: ...


class Model(Protocol):
    """Messages in, text or tool calls out. A plain async function with this signature will do;
    returning a ``str`` means a final answer with no tool calls.

    An agent passes its session's soul as ``system``: a :class:`~toolnexus.composer.parts.Soul`,
    a ``str`` that also carries ``parts`` (stable, then volatile) for placing cache breakpoints.
    """

    async def __call__(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> ModelReply | str: ...


def parse_arguments(raw: str | None) -> tuple[dict[str, Any], str | None]:
    """A tool call's JSON arguments as a dict, or ``({}, why not)`` for the model to fix."""
    if raw is None or not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as error:
        return {}, f"error: the arguments are not valid JSON ({error}); send a JSON object."
    if not isinstance(value, dict):
        return {}, f"error: the arguments must be a JSON object, not {type(value).__name__}."
    return value, None
