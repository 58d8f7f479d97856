"""``Tool``: any Python function as a tool the agent loop can run, with the same interface as
:class:`~toolnexus.agents.MemoryTool` (``name``, ``description``, ``input_schema``,
``openai_tool()``, ``anthropic_tool()``, ``acall``/``tool``)."""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["Tool", "check_tool", "declarations", "run_blocking"]

T = TypeVar("T")

#: What the tool loop calls on every tool.
TOOL_INTERFACE = ("name", "description", "openai_tool", "anthropic_tool", "acall")


def run_blocking(make: Callable[[], Coroutine[Any, Any, T]], what: str) -> T:
    """Run the coroutine ``make()`` on a loop of its own; inside a running loop, say to await the
    async form instead (nothing is created then, so nothing is left un-awaited)."""
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


def declarations(
    name: str, description: str, schema: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The OpenAI and Anthropic ``tools`` entries for one tool."""
    function = {"name": name, "description": description, "parameters": schema}
    return {"type": "function", "function": function}, {
        "name": name,
        "description": description,
        "input_schema": schema,
    }


class Tool:
    """A function the model may call. ``function`` receives the model's arguments as keywords and
    returns the text to send back (anything else is ``str()``-ed); it may be ``async``. A sync
    function runs in a worker thread so it never blocks the loop or the other calls of a turn.

    >>> def weather(city: str) -> str:
    ...     return f"sunny in {city}"
    >>> tool = Tool(weather, "Today's weather in a city.",
    ...             {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    """

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

    def openai_tool(self) -> dict[str, Any]:
        return declarations(self.name, self.description, self.input_schema)[0]

    def anthropic_tool(self) -> dict[str, Any]:
        return declarations(self.name, self.description, self.input_schema)[1]

    async def acall(self, /, **arguments: Any) -> str:
        if inspect.iscoroutinefunction(self.function):
            result = await self.function(**arguments)
        else:
            result = await asyncio.to_thread(self.function, **arguments)
        return result if isinstance(result, str) else str(result)

    def tool(self, /, **arguments: Any) -> str:
        """Run one call outside an event loop."""
        return run_blocking(lambda: self.acall(**arguments), "Tool.tool()")

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"
