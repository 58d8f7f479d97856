"""What the model is told about the portable ``memory`` tool: its descriptions and JSON Schemas,
with ``target`` (MEMORY.md and USER.md) and without (``memory_tool(user=False)``)."""

from __future__ import annotations

import copy
from typing import Any

from toolnexus.composer.rules import MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.memory.paths import MAX_DEPTH, USER_FILE
from toolnexus.stores import MEMORY_FILE

#: ``target`` → the file it edits.
TARGETS = {"memory": MEMORY_FILE, "user": USER_FILE}

_COMMANDS = f"""Commands:
- view: show the file exactly as stored. View before replace/remove, to copy text exactly.
- append (content): add a note at the end, on its own line.
- replace (old, new): replace text that occurs exactly once; use it to update or merge notes.
- remove (old): delete text that occurs exactly once (a whole line goes with its line break).
Each file is limited to {MAX_BOOTSTRAP_FILE_BYTES} bytes; if an edit is refused for size, condense \
older notes first.
Topic files: longer notes on one subject (a project, a person), kept apart and read only when \
you need them (they are not loaded into your prompt). Pass file (e.g. "projects/aster.md") with \
any command to work on one instead; append creates it. view with file "/" lists them."""

MEMORY_ONLY_DESCRIPTION = f"""\
Your long-term memory: the file {MEMORY_FILE} in your home. Its text is loaded into your system \
prompt at the start of every future session (edits show from the next session, not this one). \
Save what will matter next time — the user's preferences, decisions, ongoing work, lessons \
learned — as short, self-contained notes. Do not save secrets or passing small talk.
{_COMMANDS}"""

DESCRIPTION = f"""\
Your long-term memory: two files in your home, loaded into your system prompt at the start of \
every future session (edits show from the next session, not this one). target "memory" \
({MEMORY_FILE}, the default): what you have learned — decisions, ongoing work, lessons. target \
"user" ({USER_FILE}): who the user is — name, role, preferences, how they like to work. Save what \
will matter next time as short, self-contained notes. Do not save secrets or passing small talk.
{_COMMANDS}"""

_TARGET_PROPERTY = {
    "type": "string",
    "enum": list(TARGETS),
    "description": f"Which file: memory ({MEMORY_FILE}, the default) or user ({USER_FILE}).",
}

MEMORY_ONLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "enum": ["view", "append", "replace", "remove"],
            "description": "What to do with your memory.",
        },
        "content": {"type": "string", "description": "append: the note to add."},
        "old": {
            "type": "string",
            "description": "replace/remove: text copied exactly from the file; it must occur exactly once.",
        },
        "new": {"type": "string", "description": "replace: the text to put in place of old."},
        "file": {
            "type": "string",
            "description": (
                "A topic file instead of your main memory, e.g. projects/aster.md (names of letters, "
                f"digits, '.', '_', '-'; ending in .md; at most {MAX_DEPTH} levels). \"/\" (with view) "
                "lists them."
            ),
        },
    },
    "required": ["command"],
    "additionalProperties": False,
}

INPUT_SCHEMA: dict[str, Any] = copy.deepcopy(MEMORY_ONLY_SCHEMA)
INPUT_SCHEMA["properties"]["target"] = _TARGET_PROPERTY
