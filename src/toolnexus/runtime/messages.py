"""What the tool loop and a model adapter say to each other, in no provider's format: an adapter
turns the transcript into its wire format and the answer back into a :class:`ModelReply`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, astuple, dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable


class ModelError(Exception):
    """The provider failed; the message is one line naming it, its endpoint and what it said."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens a run consumed, as the provider reported them (0 when it reported nothing).

    ``input_tokens`` counts every prompt token, cached or not, so it means the same with caching
    on or off; ``cache_read_tokens`` and ``cache_write_tokens`` are the parts of it read from and
    written to the provider's prompt cache (billed differently: Anthropic reads 0.1x, writes 1.25x)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(mine + theirs for mine, theirs in zip(astuple(self), astuple(other), strict=True)))

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def uncached_input_tokens(self) -> int:
        """Prompt tokens neither read from nor written to the cache (billed at the full price)."""
        return self.input_tokens - self.cache_read_tokens - self.cache_write_tokens

    def to_dict(self) -> dict[str, int]:
        """JSON-ready form: the four counts and ``total_tokens``."""
        return {**asdict(self), "total_tokens": self.total_tokens}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for; ``problem`` says why ``arguments`` is ``{}`` when the model
    sent something that is not a JSON object."""

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
    """A tool, in no provider's format (each adapter declares it in its own): a name, a description,
    a JSON Schema, and ``acall`` returning the text to send back (it may raise). A ``native_kind``
    (``"memory"``: :class:`~toolnexus.agents.MemoryTool`) names a provider's built-in tool it runs
    the commands of: an adapter that has the built-in declares that, any other the schema."""

    name: str
    description: str

    @property
    def input_schema(self) -> dict[str, Any]: ...

    async def acall(self, /, **arguments: Any) -> str: ...


class Model(Protocol):
    """Messages in, text or tool calls out; a plain async function will do (a ``str`` is a final
    answer). ``system`` is the session's :class:`~toolnexus.composer.parts.Soul`, whose ``parts``
    (stable, then volatile) say where cache breakpoints go."""

    async def __call__(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> ModelReply | str: ...
