"""The tool loop (model → tool calls → results → model, until an answer or ``max_turns``) and
sessions: one soul composed when a session starts and frozen for its life, so memory edits show in
the next session and the provider's prompt cache keeps matching. A tool that raises becomes an
``error: …`` result, so the loop never dies on a tool; a model's errors propagate."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from toolnexus._reply import reply_is_error
from toolnexus.runtime.messages import (
    AssistantMessage,
    Message,
    Model,
    ModelReply,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    UserMessage,
)

logger = logging.getLogger("toolnexus")

#: Enough for a few rounds of memory edits and delegation; a model stuck calling tools stops soon.
DEFAULT_MAX_TURNS = 20


@dataclass(frozen=True, slots=True)
class RunResult:
    """How one run ended: ``"completed"`` with the answer, or ``"max_turns"`` with the last turn's
    text (often empty) when the model still asked for tools."""

    text: str
    status: Literal["completed", "max_turns"]
    turns: int
    usage: Usage
    messages: tuple[Message, ...]

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form without the transcript: ``text``, ``status``, ``turns``, ``usage``."""
        return {"text": self.text, "status": self.status, "turns": self.turns, "usage": self.usage.to_dict()}


async def _run_call(call: ToolCall, tools: Mapping[str, ToolSpec]) -> ToolResult:
    """Run one call; every failure becomes text the model can act on."""
    if call.problem is not None:
        return ToolResult(call.id, call.name, call.problem, is_error=True)
    tool = tools.get(call.name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        text = f"error: there is no tool named {call.name!r} (tools: {known})."
        return ToolResult(call.id, call.name, text, is_error=True)
    try:
        text = await tool.acall(**call.arguments)
    except Exception as error:  # a tool must never kill the loop
        logger.debug("tool %s raised", call.name, exc_info=True)
        detail = " ".join(str(error).split()) or "no details"
        text = f"error: the tool {call.name!r} failed: {type(error).__name__}: {detail}"
        return ToolResult(call.id, call.name, text, is_error=True)
    return ToolResult(call.id, call.name, str(text), is_error=reply_is_error(text))


async def run_loop(
    model: Model,
    system: str,
    history: Sequence[Message],
    prompt: str,
    tools: Sequence[ToolSpec],
    *,
    max_turns: int = DEFAULT_MAX_TURNS,
) -> RunResult:
    """Answer ``prompt`` after ``history`` under the ``system`` prompt, running tools as asked."""
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {max_turns}")
    by_name = {tool.name: tool for tool in tools}
    messages: list[Message] = [*history, UserMessage(prompt)]
    usage = Usage()
    reply = ModelReply()
    for turn in range(1, max_turns + 1):
        answer = await model(system, tuple(messages), tools)
        reply = ModelReply(text=answer) if isinstance(answer, str) else answer
        if not isinstance(reply, ModelReply):
            raise TypeError(f"a model must return a ModelReply or a str, not {type(reply).__name__}")
        usage += reply.usage
        messages.append(AssistantMessage(reply.text, reply.tool_calls))
        if not reply.tool_calls:
            return RunResult(reply.text, "completed", turn, usage, tuple(messages))
        results = await asyncio.gather(*(_run_call(call, by_name) for call in reply.tool_calls))
        messages.extend(results)
    return RunResult(reply.text, "max_turns", max_turns, usage, tuple(messages))


T = TypeVar("T")


class SessionHost(Protocol):
    """What a session needs of the :class:`~toolnexus.agents.Agent` (a layer above) that starts it."""

    async def start_session(self) -> Session: ...

    async def closing(self, work: Awaitable[T]) -> T: ...


class Session:
    """A conversation in progress: ``soul`` (frozen), the transcript so far, the usage so far."""

    def __init__(
        self, model: Model, soul: str, found: Sequence[str], tools: Sequence[ToolSpec], max_turns: int
    ) -> None:
        self.soul, self.found, self.usage, self.turns = soul, list(found), Usage(), 0
        self.messages: list[Message] = []
        self._model, self._tools, self._max_turns = model, tuple(tools), max_turns

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """What the model may call in this session (framework integrations offer the same)."""
        return self._tools

    async def send(self, prompt: str, *, max_turns: int | None = None) -> RunResult:
        """Add a user message and run the tool loop to the next answer, on the frozen soul."""
        result = await run_loop(
            self._model, self.soul, self.messages, prompt, self._tools, max_turns=max_turns or self._max_turns
        )
        self.messages = list(result.messages)
        self.usage += result.usage
        self.turns += result.turns
        return result


class SyncSession:
    """What ``agent.session()`` returns: ``async with`` gives a :class:`Session`, plain ``with``
    this object, whose every ``send`` runs on one private loop so the provider client's
    connections are reused across the conversation. The soul is composed on entry."""

    def __init__(self, agent: SessionHost) -> None:
        self._agent = agent
        self._runner = asyncio.Runner()  # makes no loop until it first runs
        self.session: Session

    async def __aenter__(self) -> Session:
        return await self._agent.start_session()

    async def __aexit__(self, *exc_info: Any) -> None: ...

    def __enter__(self) -> SyncSession:
        try:
            self.session = self._runner.run(self._agent.start_session())
        except BaseException:
            self._runner.close()
            raise
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    @property
    def soul(self) -> str:
        return self.session.soul

    @property
    def messages(self) -> list[Message]:
        return self.session.messages

    @property
    def usage(self) -> Usage:
        return self.session.usage

    def send(self, prompt: str, *, max_turns: int | None = None) -> RunResult:
        return self._runner.run(self.session.send(prompt, max_turns=max_turns))

    def close(self) -> None:
        """Close the model's connections and the session's loop."""
        try:
            self._runner.run(self._agent.closing(asyncio.sleep(0)))
        finally:
            self._runner.close()
