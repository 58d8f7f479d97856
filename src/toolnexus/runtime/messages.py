"""What the tool loop and a model adapter say to each other, in no provider's format: an adapter
turns the transcript and the tools into its wire format and the answer back into a
:class:`ModelReply`. :class:`Tool` makes any Python function such a tool."""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import asdict, astuple, dataclass, field
from typing import Any, Protocol, TypeAlias, TypeVar, runtime_checkable


class ModelError(Exception):
    """The provider failed; the message is one line naming it, its endpoint and what it said."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens a run consumed as the provider reported them. ``input_tokens`` counts every prompt
    token, cached or not, so it means the same with caching on or off; the cache counts are parts
    of it, billed differently (Anthropic: reads 0.1x, writes 1.25x)."""

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
    """One call the model asked for; ``problem``: why ``arguments`` is ``{}`` (not a JSON object)."""

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
    """A tool in no provider's format, so each adapter declares it its own way; an optional
    ``native_kind`` (``"memory"``) names a provider's built-in tool whose commands it runs."""

    name: str
    description: str

    @property
    def input_schema(self) -> dict[str, Any]: ...

    async def acall(self, /, **arguments: Any) -> str: ...


class Model(Protocol):
    """Messages in, text or tool calls out: a plain async function will do. ``system`` is a
    :class:`~toolnexus.composer.parts.Soul`, whose ``parts`` say where cache breakpoints go."""

    async def __call__(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> ModelReply | str: ...


T = TypeVar("T")


def run_blocking(make: Callable[[], Coroutine[Any, Any, T]], what: str) -> T:
    """Run ``make()`` on a loop of its own; inside a running loop, refuse before creating it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    raise RuntimeError(f"{what} blocks, so it cannot run inside an event loop; await its async form instead")


def check_tool(tool: Any) -> None:
    """A :class:`TypeError` now, naming what is missing, rather than a failed call mid-run."""
    missing = [name for name in ("name", "description", "input_schema", "acall") if not hasattr(tool, name)]
    if missing:
        raise TypeError(
            f"{tool!r} is not a tool: it lacks {', '.join(missing)} (wrap a function in Tool(function, "
            "description, input_schema))"
        )


class Tool:
    """A function the model may call with its arguments as keywords; what it returns is sent back
    as text. A sync function runs in a worker thread, so it never blocks the loop or the other
    calls of a turn: ``Tool(weather, "Today's weather in a city.", schema)``."""

    def __init__(
        self,
        function: Callable[..., Any],
        description: str,
        input_schema: dict[str, Any] | None = None,
        *,
        name: str | None = None,
    ) -> None:
        self.function = function
        self.name = name or function.__name__
        self.description = description
        self._schema = input_schema or {"type": "object", "properties": {}}

    @property
    def input_schema(self) -> dict[str, Any]:
        return copy.deepcopy(self._schema)

    async def acall(self, /, **arguments: Any) -> str:
        if inspect.iscoroutinefunction(self.function):
            result = await self.function(**arguments)
        else:
            result = await asyncio.to_thread(self.function, **arguments)
        return result if isinstance(result, str) else str(result)

    def tool(self, /, **arguments: Any) -> str:
        """Run one call outside an event loop."""
        return run_blocking(lambda: self.acall(**arguments), f"{type(self).__name__}.tool()")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
