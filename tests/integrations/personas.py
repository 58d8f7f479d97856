"""What the integrations' tests share: the scripted memory calls, a skill, and the system prompt
every run must send (tests/integrations/conftest.py makes the homes)."""

from __future__ import annotations

from pathlib import Path

from toolnexus.agents import compose_soul, load_skills

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
