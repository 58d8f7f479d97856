"""What the integrations' tests share: the scripted memory calls, a skill, a daily note and the
search that finds it, and the system prompt every run must send (tests/integrations/conftest.py
makes the homes)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolnexus.agents import agent_from_dir, compose_soul, load_skills

NOTE = "- Mira takes her tea without sugar."
#: A scripted memory edit, in the portable command set every integration declares.
APPEND = {"command": "append", "content": NOTE}
#: A call the memory tool refuses: a tool error, never a crash.
BAD = {"command": "replace", "old": "no such text", "new": "x"}
BAD_REPLY = (
    "error: 'old' does not occur in MEMORY.md; call view and copy the text exactly. Nothing was changed."
)

SKILL = b"---\nname: brew\ndescription: How to brew tea for Mira.\n---\nSteep for three minutes.\n"


def system_of(home: Path) -> str:
    """What a run's system prompt must be: the soul, byte for byte, then the skill catalog."""
    catalog = load_skills(home).prompt()
    soul = compose_soul(home)[0]
    return f"{soul}\n\n{catalog}" if catalog else soul


#: The persona's clock in the recall tests: the day of :data:`DAILY`'s note.
NOON = datetime(2026, 12, 1, 12, tzinfo=UTC)
DAILY = "Mira moved to Hamburg last week."
DAILY_FILE = "memory/2026-12-01.md"
#: A scripted search the note answers, and how its hit starts (the path and line range).
SEARCH = {"query": "Hamburg"}
HIT = f"{DAILY_FILE} lines 1-1 (score "
RECALL_TOOLS = ["memory", "memory_search", "memory_get"]


def clock() -> datetime:
    return NOON


async def _no_model(system: str, messages: Sequence[Any], tools: Sequence[Any]) -> str:
    raise AssertionError("only the session's system prompt is wanted")


def session_system(home: Path, **options: Any) -> str:
    """The system prompt ``agent_from_dir``'s own session starts with on :data:`NOON`: the soul,
    the catalog, then the daily notes (what every integration's run must send)."""
    agent = agent_from_dir(home, model=_no_model, clock=clock, **options)
    return str(asyncio.run(agent.start_session()).soul)


def check_prelude(system: str | None, home: Path) -> None:
    """``system`` is ``agent_from_dir``'s, and is the soul, then today's note, named by its file."""
    assert system == session_system(home)
    assert system.startswith(compose_soul(home)[0] + "\n\n## Daily notes\n\nToday is 2026-12-01 (UTC)")
    assert system.endswith(f"### {DAILY_FILE}\n\n{DAILY}")


def check_edit_shows_next_run(requests: Sequence[Any], home: Path, before: str) -> None:
    """A run that edited MEMORY.md through the memory tool, then a second run: the first run's
    requests all carry the soul as it was, the edit is on disk, the next run carries it."""
    first, second, next_run = requests
    assert first.system == second.system == before
    assert first.tool_names == ["memory"]
    assert (home / "MEMORY.md").read_text().endswith(NOTE + "\n")
    assert next_run.system == system_of(home) != before


def check_search_answered(first: Any, second: Any, home: Path) -> None:
    """A scripted ``memory_search``: the prelude in the run's prompt, unchanged for the second
    request, which carries the note's hit back to the model."""
    check_prelude(first.system, home)
    assert second.system == first.system
    (found,) = second.tool_results.values()
    assert found.startswith(HIT)
    assert found.endswith(DAILY)
