"""A persona as a pydantic-ai capability: ``Agent(model, capabilities=[Persona("s3://bucket/aster")])``.

``for_run`` composes the soul at the start of each run: the run's instructions, the same in every
request of it (the daily notes after the soul). Its toolset holds the memory tool (declared as
Anthropic's built-in memory tool on Anthropic models), ``memory_search`` and ``memory_get`` when
the home has notes, the ``skill`` tool and any ``tools=``; a failed call is a ``ToolFailed``,
which pydantic-ai returns to the model as a failed tool result (``is_error`` on Anthropic).
Anthropic models get ``cache_control`` after the tools and after the soul; OpenAI models a
``prompt_cache_key`` derived from the soul's stable part."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, cast

from toolnexus.integrations._persona import PersonaBase, PersonaRun, call_tool, missing_framework
from toolnexus.models.openai import derived_cache_key
from toolnexus.runtime.messages import ToolSpec

try:
    from pydantic_ai import RunContext, Tool
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.exceptions import ToolFailed
    from pydantic_ai.native_tools import AbstractNativeTool, MemoryTool
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.toolsets import FunctionToolset
except ImportError as error:  # pragma: no cover - the extra is installed wherever tests run
    raise missing_framework("pydantic-ai-slim", "pydantic-ai") from error

__all__ = ["Persona"]


def pydantic_ai_tool(spec: ToolSpec) -> Tool[Any]:
    """A neutral tool as a pydantic-ai tool: its own JSON Schema, errors as ``ToolFailed``."""

    async def call(**arguments: Any) -> str:
        result = await call_tool(spec, arguments)
        if result.is_error:
            raise ToolFailed(result.text)
        return result.text

    return Tool.from_schema(call, spec.name, spec.description, spec.input_schema)


class Persona(AbstractCapability[Any]):
    """The persona at ``home`` as a capability. ``cache``: the Anthropic cache breakpoints' TTL
    (``"5m"``, ``"1h"``) or ``False`` for none; every other keyword is :class:`PersonaBase`'s."""

    def __init__(self, home: Any, *, cache: Literal["5m", "1h"] | bool = "5m", **options: Any) -> None:
        super().__init__()
        self.persona = PersonaBase(home, **options)
        self.cache = cache

    async def for_run(self, ctx: RunContext[Any]) -> AbstractCapability[Any]:
        run = await self.persona.start_run()
        return _PersonaRun(run, ctx.model.system == "anthropic", self.cache)

    def __repr__(self) -> str:
        return f"Persona({self.persona.name!r})"


@dataclass
class _PersonaRun(AbstractCapability[Any]):
    """One run's persona: fixed instructions, tools and model settings."""

    run: PersonaRun = field(repr=False)
    anthropic: bool = False
    cache: Literal["5m", "1h"] | bool = "5m"

    def get_instructions(self) -> str:
        return str(self.run.system)

    def get_toolset(self) -> FunctionToolset[Any]:
        return FunctionToolset([pydantic_ai_tool(tool) for tool in self.run.tools])

    def get_native_tools(self) -> list[AbstractNativeTool]:
        memory = any(getattr(tool, "native_kind", None) == "memory" for tool in self.run.tools)
        return [MemoryTool()] if self.anthropic and memory else []

    def get_model_settings(self) -> ModelSettings:
        if not self.anthropic:
            return cast(ModelSettings, {"openai_prompt_cache_key": derived_cache_key(self.run.system)})
        ttl = "5m" if self.cache is True else self.cache
        if not ttl:
            return {}
        return cast(
            ModelSettings, {"anthropic_cache_instructions": ttl, "anthropic_cache_tool_definitions": ttl}
        )
