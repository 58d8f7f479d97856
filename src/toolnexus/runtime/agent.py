"""``agent_from_dir``: a persona's home and a model make an :class:`Agent` that runs; each session
composes the soul when it starts, and an agent can be another's tool (:meth:`Agent.as_tool`)."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from datetime import tzinfo
from typing import Any, TypeVar

from toolnexus.composer.budget import Budget, checked_budget, select_names
from toolnexus.composer.parts import Soul
from toolnexus.errors import BootstrapError
from toolnexus.memory.portable import MemoryTool, memory_tool
from toolnexus.recall import (
    PRIVATE_PROFILES,
    Clock,
    Today,
    daily_prelude,
    memory_index,
    recall_tools,
)
from toolnexus.recall.daily import DEFAULT_DAYS, recent_notes
from toolnexus.runtime.loop import DEFAULT_MAX_TURNS, RunResult, Session, SyncSession
from toolnexus.runtime.messages import Model, Tool, ToolSpec, check_tool, run_blocking
from toolnexus.skills import SkillSet, load_skills
from toolnexus.soul.compose import compose_soul_parts_async
from toolnexus.sources import DEFAULT_ENGINE, SourceBase, resolve

HEARTBEAT_OK = "HEARTBEAT_OK"

HEARTBEAT_PROMPT = (
    "Heartbeat: this is your periodic check, not a message from the user. Follow the HEARTBEAT.md "
    "section of your instructions now. If nothing needs the user's attention, reply with exactly "
    f"{HEARTBEAT_OK} and nothing else; otherwise reply with what they should know."
)

T = TypeVar("T")

_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]")

logger = logging.getLogger("toolnexus")

#: The usual rule of thumb for English text: the uncacheable notice is advice, not a count.
CHARS_PER_TOKEN = 4


def _home_name(home: Any) -> str:
    """A home's last path component: ``s3://b/personas/aster/`` → ``aster``; ``aster.zip`` → ``aster``."""
    if isinstance(home, list | tuple) and home:
        return _home_name(home[-1])  # layers: the persona is the topmost one
    if not isinstance(home, str | os.PathLike):
        home = getattr(home, "location", home)  # a source object names its own location
    text = (home if isinstance(home, str) else str(home)).split("::", 1)[0]
    if "://" not in text:
        text = os.path.abspath(text)
    last = text.split("://", 1)[-1].rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    return last.removesuffix(".zip") or "agent"


class AgentTool(Tool):
    """An agent as a tool of another: each call runs one fresh session of it on ``prompt`` and
    returns its final text."""

    def __init__(self, agent: Agent, name: str, description: str) -> None:
        prompt = {"type": "string", "description": f"What to ask {agent.name}, complete in itself."}
        schema = {"type": "object", "properties": {"prompt": prompt}, "required": ["prompt"]}
        super().__init__(self._ask, description, {**schema, "additionalProperties": False}, name=name)
        self.agent = agent

    async def _ask(self, prompt: str) -> str:
        result = await self.agent.run(prompt)
        if result.completed:
            return result.text
        return f"error: {self.agent.name} did not finish within {result.turns} turns" + (
            f"; its last words: {result.text}" if result.text else "."
        )

    def tool(self, /, **arguments: Any) -> str:
        """Run one call outside an event loop."""
        return run_blocking(lambda: self.agent.closing(self.acall(**arguments)), "AgentTool.tool()")


class Agent:
    """A persona that runs: its home, its model, its tools. Build one with :func:`agent_from_dir`."""

    def __init__(
        self,
        home: Any,
        *,
        model: Model,
        name: str,
        description: str,
        tools: Sequence[ToolSpec] = (),
        memory: MemoryTool | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        budget: Budget | None = None,
        files: Iterable[str] | None = None,
        profile: str | None = None,
        skills: bool | Sequence[str] = False,
        daily_notes: int = 0,
        recall: bool | None = False,
        today: Today | None = None,
    ) -> None:
        if not callable(model):
            raise TypeError(f"model must be a model object or an async callable, not {type(model).__name__}")
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        self.home, self.model, self.name, self.description = home, model, name, description
        self.memory, self.max_turns, self.profile = memory, max_turns, profile
        for tool in tools:
            check_tool(tool)
        self.tools: tuple[ToolSpec, ...] = (*([memory] if memory is not None else []), *tools)
        if not isinstance(daily_notes, int) or isinstance(daily_notes, bool) or daily_notes < 0:
            raise ValueError(f"daily_notes must be a number of days (0 turns it off), got {daily_notes!r}")
        #: Days of daily notes each session starts with; whether it may search memory (``None``:
        #: when the home has topic or daily files); what day it is for the persona.
        self.daily_notes, self.recall = daily_notes, recall
        self.today = today or (memory.today if memory is not None else Today())
        recall_names = ["memory_search", "memory_get"] if recall is not False else []
        names = [tool.name for tool in self.tools] + (["skill"] if skills else []) + recall_names
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(
                f"two tools are named {', '.join(map(repr, duplicates))}; tool names must be unique"
            )
        #: What every session's soul is fitted to, and the bootstrap names it is composed from.
        self.budget, self.names = checked_budget(budget), select_names(files, profile)
        #: The home, resolved once: every session composes from this very source.
        self.source: SourceBase = resolve(home)
        self._said_uncacheable = False
        #: Which skills sessions offer: every one (``True``), none, or those named.
        self.skills = skills if isinstance(skills, bool) else tuple(skills)

    async def closing(self, work: Awaitable[T]) -> T:
        """``await work``, then close the model's connections (for a loop that is about to end)."""
        try:
            return await work
        finally:
            close = getattr(self.model, "aclose", None)
            if close is not None:
                await close()

    async def compose(self, *, profile: str | None = None) -> tuple[Soul, list[str]]:
        """``compose_soul``'s soul as the home holds it now, fitted to the agent's budget (or of
        ``profile``'s files), as a :class:`Soul` that knows its stable part for the prompt cache."""
        names = self.names if profile is None else select_names(profile=profile)
        return await compose_soul_parts_async(self.source, persona=self.name, budget=self.budget, names=names)

    async def start_session(self, *, profile: str | None = None, skills: bool = True) -> Session:
        """A new session: composes the soul now and keeps it for the session's life. Sessions of
        the agent's own files also see its skills (read alongside the soul): the catalog after
        the soul, as a part of its own, and the ``skill`` tool; heartbeats and profiles do not."""
        wanted = bool(self.skills) and skills and profile is None
        (soul, found), found_skills, prelude = await asyncio.gather(
            self.compose(profile=profile),
            asyncio.to_thread(self.load_skills) if wanted else asyncio.sleep(0, SkillSet()),
            asyncio.to_thread(self.daily_prelude, profile),
        )
        if profile is None:  # a light heartbeat's soul says nothing of the agent's usual prefix
            self._check_cacheable(soul)
        tools = await asyncio.to_thread(self.session_tools, profile, found_skills)
        # The catalog, then the daily notes (what changes most), each a part after the soul:
        # the soul's stable prefix stays cacheable.
        parts = list(soul.parts)
        for text in filter(None, (found_skills.prompt(), prelude)):
            parts.append((f"\n\n{text}" if parts else text, False))
        if len(parts) > len(soul.parts):
            soul = Soul(parts, persona=soul.persona)
        return Session(self.model, soul, found, tools, self.max_turns)

    def _private(self, profile: str | None) -> bool:
        """Whether a session of ``profile`` (or, for none, the agent's own) keeps memory private."""
        return (profile if profile is not None else self.profile) in PRIVATE_PROFILES

    def session_tools(
        self, profile: str | None = None, skills: SkillSet | None = None, *, recall: bool | None = None
    ) -> tuple[ToolSpec, ...]:
        """The tools a session of ``profile`` offers, in order: memory, recall (unless private),
        the agent's own, then ``skills``' tool. The one place a persona's tools are assembled
        (sessions and framework integrations call it); blocking."""
        private = self._private(profile)
        wanted = self.recall if recall is None else recall
        if wanted is None and not private:
            wanted = self.has_notes()
        search = bool(wanted) and not private
        if self.memory is not None:
            memory = self.memory.tools(profile if profile is not None else self.profile, recall=search)
        else:
            memory = recall_tools(self._index) if search else ()
        skill = (skills.tool(),) if skills is not None and skills.prompt() else ()
        return (*memory, *self.tools[1 if self.memory is not None else 0 :], *skill)

    def has_notes(self) -> bool:
        """Whether the home holds topic or daily files (what ``recall=None`` decides by)."""
        if self.memory is not None:
            return bool(self.memory.native.topics.snapshot().files)
        return bool(self.source.read_folder("memory", 0).entries)

    @functools.cached_property
    def _index(self) -> Any:
        return memory_index(self.source, clock=self.today.clock, timezone=self.today.timezone)

    def daily_prelude(self, profile: str | None = None) -> str:
        """The daily notes a session of ``profile`` starts with: the last :attr:`daily_notes`
        days' (``""`` for none, for heartbeats and the private profiles). Blocking."""
        if not self.daily_notes or self._private(profile) or profile not in (None, "main"):
            return ""
        today = self.today()
        if self.memory is not None:
            notes = self.memory.recent_notes(self.daily_notes)
        else:
            notes = recent_notes(self.source, today, self.daily_notes)
        return daily_prelude(notes, today, self.daily_notes, timezone=str(self.today.timezone))

    def load_skills(self) -> SkillSet:
        """The skills the agent's sessions offer, as its home holds them now."""
        found = load_skills(self.source)
        if isinstance(self.skills, tuple):
            return SkillSet(tuple(skill for skill in found if skill.name in self.skills), found.warnings)
        return found

    def _check_cacheable(self, soul: Soul) -> None:
        """One info line per agent when the stable part is shorter than the provider caches."""
        minimum = getattr(self.model, "min_cacheable_tokens", None)
        estimate = len(soul.stable) // CHARS_PER_TOKEN
        if self._said_uncacheable or not isinstance(minimum, int) or estimate >= minimum:
            return
        self._said_uncacheable = True
        logger.info(
            "%s: the stable part of the soul (AGENTS.md through TOOLS.md) is about %d tokens, "
            "below the %d the model's provider caches at least; its prompt cache will not help",
            self.name,
            estimate,
            minimum,
        )

    def session(self) -> SyncSession:
        """A multi-turn conversation on one frozen soul: ``async with`` or plain ``with``."""
        return SyncSession(self)

    async def run(self, prompt: str, *, max_turns: int | None = None) -> RunResult:
        """One fresh session, run to the final answer (or ``max_turns``)."""
        return await (await self.start_session()).send(prompt, max_turns=max_turns)

    def run_sync(self, prompt: str, *, max_turns: int | None = None) -> RunResult:
        """:meth:`run` for code without an event loop."""
        return run_blocking(lambda: self.closing(self.run(prompt, max_turns=max_turns)), "Agent.run_sync()")

    async def heartbeat(self, *, light: bool = False) -> str | None:
        """One session following HEARTBEAT.md: ``None`` when the persona answers exactly
        ``HEARTBEAT_OK`` (nothing to report), else its report. ``light=True`` composes the
        ``heartbeat`` profile (HEARTBEAT.md alone): a cheap periodic check."""
        session = await self.start_session(profile="heartbeat" if light else None, skills=False)
        result = await session.send(HEARTBEAT_PROMPT)
        text = result.text.strip()
        return None if text == HEARTBEAT_OK and result.completed else text

    def heartbeat_sync(self, *, light: bool = False) -> str | None:
        """:meth:`heartbeat` for code without an event loop."""
        return run_blocking(lambda: self.closing(self.heartbeat(light=light)), "Agent.heartbeat_sync()")

    def as_tool(self, name: str | None = None, description: str | None = None) -> AgentTool:
        """This agent as a tool another agent can call; one fresh session per call."""
        tool_name = name or (_TOOL_NAME.sub("_", self.name)[:64] or "agent")
        return AgentTool(self, tool_name, description or self.description)

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, model={self.model!r}, tools={[tool.name for tool in self.tools]})"


def agent_from_dir(
    home: Any,
    *,
    model: Model,
    name: str | None = None,
    description: str | None = None,
    memory: bool = True,
    tools: Sequence[ToolSpec] = (),
    storage_options: Mapping[str, Any] | None = None,
    fs: Any = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    single_writer: bool = False,
    budget: Budget | None = None,
    files: Iterable[str] | None = None,
    profile: str | None = None,
    engine: str = DEFAULT_ENGINE,
    skills: bool | Sequence[str] = True,
    daily_notes: int = DEFAULT_DAYS,
    recall: bool | None = None,
    clock: Clock | None = None,
    timezone: str | tzinfo | None = None,
) -> Agent:
    """An agent for the persona whose home is ``home`` — any location ``compose_soul`` accepts.

    ``model`` is a model adapter or any ``async (system, messages, tools)`` callable. The home is
    resolved once, here; ``memory=True`` needs it writable (a bundle raises :class:`BootstrapError`:
    pass ``memory=False``). Each session composes the soul when it starts (``files``, ``profile``,
    ``budget`` as :func:`compose_soul`), then the ``skills`` catalog and ``daily_notes`` days of
    notes; ``recall`` offers ``memory_search``/``memory_get`` (``None``: when the home has notes).
    ``group``, ``subagent`` and ``cron`` sessions get a memory tool that only adds to today's note."""
    checked_budget(budget), select_names(files, profile)  # bad arguments fail before any I/O
    today = Today(clock, timezone)
    persona = name or _home_name(home)
    source = resolve(home, storage_options=storage_options, fs=fs, engine=engine)
    memory_builtin = None
    if memory:
        try:
            memory_builtin = memory_tool(source, single_writer=single_writer, clock=clock, timezone=timezone)
        except BootstrapError as error:
            message = str(error).rstrip()
            end = " " if message.endswith(".") else "; "
            raise BootstrapError(
                f"{message}{end}Or pass memory=False to run without the memory tool."
            ) from error
    return Agent(
        source,
        model=model,
        name=persona,
        description=description or f"Ask {persona}, a persona with its own instructions and memory.",
        tools=tools,
        memory=memory_builtin,
        max_turns=max_turns,
        budget=budget,
        files=files,
        profile=profile,
        skills=skills,
        daily_notes=daily_notes,
        recall=recall,
        today=today,
    )
