"""A persona for the OpenAI Agents SDK: ``persona = Persona(home)``, then
``Agent(name="Aster", instructions=persona.instructions, tools=persona.tools)``.

The SDK asks for the instructions before every model call of a run; the first ask of a run
composes the soul and every later one, and every tool call, gets that same run (the SDK hands one
``usage`` object to all of them, which keys it). ``tools`` are fixed when the agent is built, so
each is a stand-in dispatching to the run's tool of its name (``skill`` is enabled in runs whose
home has skills, ``memory_search`` and ``memory_get`` in runs whose home has notes). A failed
call answers its ``error: …`` text, as the SDK's own function tools answer their failures."""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from toolnexus.integrations._persona import PersonaBase, PersonaRun, call_tool, missing_framework
from toolnexus.models.openai import parse_arguments
from toolnexus.runtime.messages import ToolSpec

try:
    from agents import Agent, FunctionTool, RunContextWrapper
except ImportError as error:  # pragma: no cover - the extra is installed wherever tests run
    raise missing_framework("openai-agents", "openai-agents") from error

__all__ = ["Persona"]


class Persona(PersonaBase):
    """The persona at ``home`` for Agents SDK agents (keywords: :class:`PersonaBase`'s)."""

    def __init__(self, home: Any, **options: Any) -> None:
        super().__init__(home, **options)
        self._runs: dict[int, asyncio.Future[PersonaRun]] = {}

    async def run_of(self, context: RunContextWrapper[Any]) -> PersonaRun:
        """The run ``context`` belongs to, composed on its first ask (concurrent asks share it)."""
        key = id(context.usage)
        if key not in self._runs:
            self._runs[key] = asyncio.ensure_future(self.start_run())
            weakref.finalize(context.usage, self._runs.pop, key, None)
        return await asyncio.shield(self._runs[key])

    async def instructions(self, context: RunContextWrapper[Any], agent: Agent[Any]) -> str:
        """The run's soul (plus its skill catalog): pass the method itself as ``instructions``."""
        return str((await self.run_of(context)).system)

    @property
    def tools(self) -> list[FunctionTool]:
        """Function tools for memory, skills and the persona's other tools."""
        return [self._function_tool(tool) for tool in self.declared_tools()]

    def _function_tool(self, declared: ToolSpec) -> FunctionTool:
        name = declared.name

        async def invoke(context: RunContextWrapper[Any], raw: str) -> str:
            arguments, problem = parse_arguments(raw)
            tool = (await self.run_of(context)).tool(name)
            if problem is not None or tool is None:
                return problem or f"error: there is no tool named {name!r} in this run."
            return (await call_tool(tool, arguments)).text

        async def enabled(context: RunContextWrapper[Any], agent: Any) -> bool:
            return (await self.run_of(context)).tool(name) is not None

        return _StandIn(
            declared,
            name=name,
            params_json_schema=declared.input_schema,
            on_invoke_tool=invoke,
            strict_json_schema=False,  # the tools' own schemas, as toolnexus's loop declares them
            is_enabled=enabled,
        )


class _StandIn(FunctionTool):
    """A declared tool as the SDK keeps it, whose description is read from the tool each time it
    is sent: the memory tool's names today's date, which the agent outlives."""

    def __init__(self, declared: ToolSpec, **fields: Any) -> None:
        self.__dict__["_declared"] = declared
        super().__init__(description=declared.description, **fields)

    @property
    def description(self) -> str:
        return str(self.__dict__["_declared"].description)

    @description.setter
    def description(self, text: str) -> None:
        """The SDK's constructor and copies set it; the declared tool's own stays the truth."""
