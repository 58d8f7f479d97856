"""``memory_tool``: the opt-in built-in that lets a persona keep durable notes in its own MEMORY.md.

The model calls one tool, ``memory``, with a ``command`` (view / append / replace / remove, after
Letta's core-memory and Anthropic's memory tool). Mistakes the model can fix come back as
``"error: …"`` text telling it what to do; storage failures raise, like ``compose_soul``'s.
Edits are planned here, purely, from the bytes read; :mod:`.memory_store` makes each
read-plan-write indivisible on its backend. The soul a session was composed with never changes;
the next ``compose_soul`` shows the edits.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from typing import Any

from .memory_store import MEMORY_FILE, Change, MemoryStore, Plan
from .soul import MAX_BOOTSTRAP_FILE_BYTES
from .sources import resolve, writer_of

__all__ = ["MemoryTool", "memory_tool"]

_CAP = MAX_BOOTSTRAP_FILE_BYTES

DESCRIPTION = f"""\
Your long-term memory: the file {MEMORY_FILE} in your home. Its text is loaded into your system \
prompt at the start of every future session (edits show from the next session, not this one). \
Save what will matter next time — the user's preferences, decisions, ongoing work, lessons \
learned — as short, self-contained notes. Do not save secrets or passing small talk.
Commands:
- view: show the memory exactly as stored. View before replace/remove, to copy text exactly.
- append (content): add a note at the end, on its own line.
- replace (old, new): replace text that occurs exactly once; use it to update or merge notes.
- remove (old): delete text that occurs exactly once (a whole line goes with its line break).
Memory is limited to {_CAP} bytes; if an edit is refused for size, condense older notes first."""

INPUT_SCHEMA: dict[str, Any] = {
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
            "description": "replace/remove: text copied exactly from memory; it must occur exactly once.",
        },
        "new": {"type": "string", "description": "replace: the text to put in place of old."},
    },
    "required": ["command"],
    "additionalProperties": False,
}

#: The fields each command takes, in the order they are checked.
_FIELDS: dict[str, tuple[str, ...]] = {
    "view": (),
    "append": ("content",),
    "replace": ("old", "new"),
    "remove": ("old",),
}


def _check_arguments(arguments: Mapping[str, Any]) -> str | None:
    """The error text for a malformed call, or ``None`` when the call is well-formed."""
    command = arguments.get("command")
    if not isinstance(command, str) or command not in _FIELDS:
        return f"error: command must be one of {', '.join(_FIELDS)} (got {command!r})."
    fields = _FIELDS[command]
    for field, value in arguments.items():
        if field == "command" or value is None:
            continue  # None: some tool-calling modes send every field, unused ones as null
        if field not in INPUT_SCHEMA["properties"]:
            return f"error: unknown field {field!r}; {command} takes {_describe(fields)}."
        if field not in fields:
            return f"error: {command} takes {_describe(fields)}, not {field!r}; leave {field!r} out."
    for field in fields:
        value = arguments.get(field)
        if not isinstance(value, str):
            what = "missing" if value is None else f"{type(value).__name__}, not a string"
            return f"error: {command} needs {field!r} as a string ({field!r} is {what})."
        if field in ("old", "content") and not value.strip():
            return f"error: {field!r} must not be empty."
    return None


def _describe(fields: tuple[str, ...]) -> str:
    return " and ".join(repr(field) for field in fields) if fields else "no other fields"


def _decode(current: bytes | None) -> tuple[str | None, str | None]:
    """``(text, None)`` for an editable MEMORY.md (absent → ``""``), else ``(None, error text)``."""
    if current is None:
        return "", None
    if len(current) > _CAP:
        return None, (
            f"error: {MEMORY_FILE} is already larger than the {_CAP}-byte limit (it was written "
            "outside this tool) and cannot be edited safely; ask the user to condense it."
        )
    try:
        return current.decode("utf-8"), None
    except UnicodeDecodeError as error:
        return None, (
            f"error: {MEMORY_FILE} contains bytes that are not valid UTF-8 (at byte {error.start}), so it "
            "is not edited — no text would survive intact; ask the user to fix the file."
        )


def _edit(command: str, text: str, arguments: Mapping[str, Any]) -> tuple[str | None, str]:
    """Apply one command to the text: ``(new text, reply)``, or ``(None, error text)``."""
    if command == "append":
        note = str(arguments["content"]).rstrip("\r\n")
        separator = "" if not text or text.endswith(("\n", "\r")) else "\n"
        return f"{text}{separator}{note}\n", "ok: note appended"
    old = str(arguments["old"])
    count = text.count(old)
    if count != 1:
        where = "does not occur" if count == 0 else f"occurs {count} times"
        fix = (
            "call view and copy the text exactly"
            if count == 0
            else "include more of the surrounding text so it occurs exactly once"
        )
        return None, f"error: 'old' {where} in {MEMORY_FILE}; {fix}. Nothing was changed."
    start = text.index(old)
    end = start + len(old)
    if command == "replace":
        return text[:start] + str(arguments["new"]) + text[end:], "ok: replaced"
    whole_line = (start == 0 or text[start - 1] == "\n") and text[end : end + 1] == "\n"
    return text[:start] + text[end + 1 if whole_line else end :], "ok: removed"


def _plan(arguments: Mapping[str, Any]) -> Plan:
    """The edit as a pure function of MEMORY.md's bytes; re-run as is after a write conflict."""
    command = str(arguments["command"])

    def plan(current: bytes | None) -> Change:
        text, problem = _decode(current)
        if text is None:
            return Change(None, problem or "error")
        new_text, reply = _edit(command, text, arguments)
        if new_text is None:
            return Change(None, reply)
        data = new_text.encode("utf-8")
        if len(data) > _CAP:
            return Change(
                None,
                (
                    f"error: refused — {MEMORY_FILE} would grow to {len(data)} bytes, over its {_CAP}-byte "
                    "limit. Condense first: merge or shorten older notes with replace, drop stale ones "
                    "with remove, then try again with a shorter note."
                ),
            )
        if current is not None and data == current:
            return Change(None, f"{reply} (no change; {len(data)} of {_CAP} bytes used).")
        return Change(data, f"{reply} ({len(data)} of {_CAP} bytes used).")

    return plan


def _view(current: bytes | None) -> str:
    if current is None:
        return f"No memories yet ({MEMORY_FILE} does not exist). Use append to save a note."
    text = current[:_CAP].decode("utf-8", errors="replace").removeprefix("\ufeff")
    if not text.strip():
        return f"No memories yet ({MEMORY_FILE} is empty). Use append to save a note."
    if len(current) > _CAP:
        text += f"\n[…more: {MEMORY_FILE} is over the {_CAP}-byte limit]"
    return text


class MemoryTool:
    """The ``memory`` tool for one persona home: give ``openai_tool()`` or ``anthropic_tool()`` to
    the model and feed each call it makes to ``tool(**arguments)``."""

    name = "memory"
    description = DESCRIPTION

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.location = store.location

    @property
    def input_schema(self) -> dict[str, Any]:
        """JSON Schema of the arguments (a fresh copy: callers may adapt it)."""
        return copy.deepcopy(INPUT_SCHEMA)

    def openai_tool(self) -> dict[str, Any]:
        """The OpenAI (Chat Completions) ``tools`` entry."""
        function = {"name": self.name, "description": self.description, "parameters": self.input_schema}
        return {"type": "function", "function": function}

    def anthropic_tool(self) -> dict[str, Any]:
        """The Anthropic Messages ``tools`` entry."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}

    def tool(self, /, **arguments: Any) -> str:
        """Run one call as the model made it; returns the text to send back.

        Model mistakes return ``"error: …"``; storage failures raise ``PermissionError`` or
        ``BootstrapError`` naming MEMORY.md and the location.
        """
        problem = _check_arguments(arguments)
        if problem is not None:
            return problem
        if arguments["command"] == "view":
            return _view(self.store.read())
        return self.store.update(_plan(arguments)).reply

    def __repr__(self) -> str:
        return f"MemoryTool({self.location!r})"


def memory_tool(
    dir: str | os.PathLike[str] | Any,
    *,
    storage_options: Mapping[str, Any] | None = None,
    fs: Any = None,
) -> MemoryTool:
    """The memory tool for a persona home — the same locations as ``compose_soul``.

    The location is resolved once, here, and the source says how MEMORY.md is written; one that
    cannot be written fails now, not at the first write: a bundle (zip or tar, whatever its name)
    or read-only filesystem raises :class:`BootstrapError` saying why, a missing home
    :class:`FileNotFoundError`, a plain file :class:`NotADirectoryError`, an unwritable local
    folder :class:`PermissionError`, and a custom ``BootstrapSource`` without a ``writer``
    :class:`TypeError`. A layered persona writes to its top layer.
    """
    source = resolve(dir, storage_options=storage_options, fs=fs)
    return MemoryTool(writer_of(source, MEMORY_FILE))
