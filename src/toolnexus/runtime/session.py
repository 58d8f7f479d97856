"""Sessions: one conversation on one soul, composed when the session starts and frozen for its
life (memory edits show in the next session). ``agent.session()`` is ``async with`` or ``with``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any, Protocol, TypeVar

from toolnexus.runtime.loop import RunResult, run_loop
from toolnexus.runtime.messages import Message, Model, ToolSpec, Usage

T = TypeVar("T")


class SessionHost(Protocol):
    """What a session needs of the :class:`~toolnexus.agents.Agent` that starts it (not the class:
    it sits above)."""

    async def start_session(self) -> Session: ...

    async def closing(self, work: Awaitable[T]) -> T: ...


class Session:
    """A conversation in progress: ``soul`` (frozen), the transcript so far, the usage so far."""

    def __init__(
        self, model: Model, soul: str, found: Sequence[str], tools: Sequence[ToolSpec], max_turns: int
    ) -> None:
        self.soul = soul
        self.found = list(found)
        self.messages: list[Message] = []
        self.usage = Usage()
        self.turns = 0
        self._model, self._tools, self._max_turns = model, tuple(tools), max_turns

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
    """:class:`Session` for code without an event loop: every ``send`` runs on one private loop,
    so the provider client's connections are reused across the conversation."""

    def __init__(self, agent: SessionHost) -> None:
        self._agent = agent
        self._runner = asyncio.Runner()
        try:
            self.session: Session = self._runner.run(agent.start_session())
        except BaseException:
            self._runner.close()
            raise

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


class SessionContext:
    """What ``agent.session()`` returns: ``async with`` gives a :class:`Session`, ``with`` a
    :class:`SyncSession`. The soul is composed on entry."""

    def __init__(self, agent: SessionHost) -> None:
        self._agent = agent
        self._sync: SyncSession | None = None

    async def __aenter__(self) -> Session:
        return await self._agent.start_session()

    async def __aexit__(self, *exc_info: Any) -> None:
        return None

    def __enter__(self) -> SyncSession:
        self._sync = SyncSession(self._agent)
        return self._sync

    def __exit__(self, *exc_info: Any) -> None:
        if self._sync is not None:
            self._sync.close()
