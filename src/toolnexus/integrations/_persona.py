"""What every framework integration shares, written once: a persona's home resolved once into the
runtime's own :class:`~toolnexus.agents.Agent` (no model: the framework brings its own), and for
each run a :class:`PersonaRun` — the soul composed at its start and frozen (the skill catalog as
its last part, so a cache breakpoint after the stable part still holds), and the tools that
session offers, assembled exactly as ``Agent.start_session`` assembles them for toolnexus's loop.

A framework module maps three things and nothing else: the soul to its system prompt, a
:class:`~toolnexus.runtime.messages.ToolSpec` to its tool type, and :func:`call_tool`'s
``is_error`` to its tool error."""

from __future__ import annotations

import errno
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any

from toolnexus.composer.budget import Budget
from toolnexus.composer.parts import Soul
from toolnexus.errors import BootstrapError
from toolnexus.recall import Clock
from toolnexus.recall.daily import DEFAULT_DAYS
from toolnexus.runtime.agent import Agent, agent_from_dir
from toolnexus.runtime.loop import _run_call
from toolnexus.runtime.messages import Message, ModelReply, ToolCall, ToolResult, ToolSpec, run_blocking
from toolnexus.skills import SkillSet, SkillTool
from toolnexus.sources import DEFAULT_ENGINE

__all__ = ["PersonaBase", "PersonaRun", "ReadOnlyHomeWarning", "call_tool", "missing_framework"]


class ReadOnlyHomeWarning(UserWarning):
    """The home cannot be written (a bundle, HTTP): the persona runs without its memory tool."""


def missing_framework(package: str, extra: str) -> ImportError:
    """The one error of an integration whose framework is not installed."""
    return ImportError(
        f"the {package!r} package is needed for this integration: pip install 'toolnexus[{extra}]'"
    )


async def call_tool(tool: ToolSpec, arguments: Mapping[str, Any]) -> ToolResult:
    """One call under toolnexus's own loop rules: never raises; a failure, or a reply that says
    it is one, comes back with ``is_error`` (each framework then raises or flags its own error)."""
    return await _run_call(ToolCall("", tool.name, dict(arguments)), {tool.name: tool})


@dataclass(frozen=True)
class PersonaRun:
    """One run of a persona: ``system`` (the soul, plus the skill catalog when there are skills)
    is its system prompt, the same text in every model request of the run; ``tools`` are what the
    model may call during it; ``found`` names the bootstrap files composed."""

    system: Soul
    tools: tuple[ToolSpec, ...]
    found: tuple[str, ...]

    def tool(self, name: str) -> ToolSpec | None:
        return next((tool for tool in self.tools if tool.name == name), None)


async def _no_model(system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelReply:
    raise RuntimeError("an integration's persona has no model of its own: its framework calls the model")


class PersonaBase:
    """A persona for a framework: ``home`` is any location ``compose_soul`` accepts (paths, URLs,
    bundles, layers, ``fs=``, ``storage_options=``); ``budget``, ``files`` and ``profile`` narrow
    every run's soul as in :func:`~toolnexus.agents.agent_from_dir`, and ``daily_notes``,
    ``recall``, ``clock`` and ``timezone`` are its too (the last days' notes after the soul;
    ``memory_search``/``memory_get``); ``tools`` are more :class:`~toolnexus.agents.Tool`
    objects. A home that cannot be written gets no memory tool and a
    :class:`ReadOnlyHomeWarning` (``memory=False`` asks for none, silently)."""

    def __init__(
        self,
        home: Any,
        *,
        name: str | None = None,
        memory: bool = True,
        tools: Sequence[ToolSpec] = (),
        storage_options: Mapping[str, Any] | None = None,
        fs: Any = None,
        engine: str = DEFAULT_ENGINE,
        single_writer: bool = False,
        budget: Budget | None = None,
        files: Iterable[str] | None = None,
        profile: str | None = None,
        skills: bool | Sequence[str] = True,
        daily_notes: int = DEFAULT_DAYS,
        recall: bool | None = None,
        clock: Clock | None = None,
        timezone: str | tzinfo | None = None,
    ) -> None:
        options: dict[str, Any] = {
            "model": _no_model,
            "name": name,
            "tools": tools,
            "storage_options": storage_options,
            "fs": fs,
            "engine": engine,
            "single_writer": single_writer,
            "budget": budget,
            "files": files,
            "profile": profile,
            "skills": skills,
            "daily_notes": daily_notes,
            "recall": recall,
            "clock": clock,
            "timezone": timezone,
        }
        try:
            self.agent: Agent = agent_from_dir(home, memory=memory, **options)
        except BootstrapError as error:
            if getattr(error.__cause__, "errno", None) != errno.EROFS:
                raise
            warnings.warn(
                f"{error.__cause__}; the persona runs without its memory tool",
                ReadOnlyHomeWarning,
                stacklevel=3,
            )
            self.agent = agent_from_dir(home, memory=False, **options)

    @property
    def name(self) -> str:
        return self.agent.name

    async def start_run(self) -> PersonaRun:
        """Compose the soul now (and read the skills), for one run: the home as it is now."""
        session = await self.agent.start_session()
        soul = session.soul if isinstance(session.soul, Soul) else Soul(((session.soul, True),))
        return PersonaRun(soul, session.tools, tuple(session.found))

    def start_run_sync(self) -> PersonaRun:
        """:meth:`start_run` for code without an event loop."""
        return run_blocking(self.start_run, "start_run_sync()")

    def declared_tools(self) -> tuple[ToolSpec, ...]:
        """The tools any run may offer, known before one starts (no I/O), for frameworks whose
        tool list is fixed when the agent is built: the skill tool stands for each run's own (its
        schema takes any name; the run's catalog says which exist)."""
        skill = (_AnySkill(SkillSet()),) if self.agent.skills else ()
        # Search is declared unless turned off: whether a run offers it depends on its home.
        return (*self.agent.session_tools(recall=self.agent.recall is not False), *skill)


class _AnySkill(SkillTool):
    """The ``skill`` tool declared before a run: the same, but any name (a run's own checks it)."""

    @property
    def input_schema(self) -> dict[str, Any]:
        schema = super().input_schema
        del schema["properties"]["name"]["enum"]
        return schema
