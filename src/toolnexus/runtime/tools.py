"""``Tool``: any Python function as a tool the loop can run, in no provider's format (the shape of
:class:`~toolnexus.runtime.messages.ToolSpec`, as :class:`~toolnexus.agents.MemoryTool`'s)."""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

#: What the loop and the model adapters use of every tool.
TOOL_INTERFACE = ("name", "description", "input_schema", "acall")


def run_blocking(make: Callable[[], Coroutine[Any, Any, T]], what: str) -> T:
    """Run ``make()`` on a loop of its own; inside a running loop, refuse before creating it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    raise RuntimeError(f"{what} blocks, so it cannot run inside an event loop; await its async form instead")


def check_tool(tool: Any) -> None:
    """A :class:`TypeError` now, naming what is missing, rather than a failed call mid-run."""
    missing = [attribute for attribute in TOOL_INTERFACE if not hasattr(tool, attribute)]
    if missing:
        raise TypeError(
            f"{tool!r} is not a tool: it lacks {', '.join(missing)} (wrap a function in Tool(function, "
            "description, input_schema))"
        )


class Tool:
    """A function the model may call. ``function`` receives the model's arguments as keywords and
    returns the text to send back (anything else is ``str()``-ed); it may be ``async``. A sync
    function runs in a worker thread so it never blocks the loop or the other calls of a turn.

    >>> def weather(city: str) -> str:
    ...     return f"sunny in {city}"
    >>> tool = Tool(weather, "Today's weather in a city.",
    ...             {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    """

    #: A built-in tool of some provider this one stands for (see ``ToolSpec``); a function has none.
    native_kind: str | None = None

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
