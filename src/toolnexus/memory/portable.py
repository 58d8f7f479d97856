"""``memory_tool``: a persona keeps notes in its home (MEMORY.md, USER.md, ``memory/``'s topic files)
with portable commands (view / append / replace / remove, after Letta's core memory) or Anthropic's
built-in ones (:mod:`.native`). Mistakes the model can fix are error replies; storage failures raise."""

from __future__ import annotations

import asyncio
import copy
import errno
import os
from collections.abc import Mapping
from datetime import date, tzinfo
from typing import Any

from toolnexus._reply import ToolReply
from toolnexus.composer.rules import MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.errors import BootstrapError
from toolnexus.memory.edits import NATIVE, PORTABLE, plan_edit, readable_text
from toolnexus.memory.native import NativeMemory, is_native
from toolnexus.memory.paths import MAX_DEPTH, ROOT, SPECIAL_FILES, USER_FILE, parse
from toolnexus.memory.reference import DEFAULT_VIEW_CHARS
from toolnexus.recall import MemoryIndex, memory_index, recall_tools
from toolnexus.recall.daily import PRIVATE_PROFILES, Clock, Today, daily_day, recent_days
from toolnexus.recall.daily import today_description as daily_description
from toolnexus.sources import DEFAULT_ENGINE, SourceBase, resolve
from toolnexus.stores.base import MEMORY_FILE, MemoryStore, Plan

#: ``target`` → the file it edits.
TARGETS = {"memory": MEMORY_FILE, "user": USER_FILE}
#: The ``file`` value that names today's daily note (``memory/YYYY-MM-DD.md``).
TODAY_FILE = "today"

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


def _text(description: str, **more: Any) -> dict[str, Any]:
    return {"type": "string", **more, "description": description}


MEMORY_ONLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": _text("What to do with your memory.", enum=["view", "append", "replace", "remove"]),
        "content": _text("append: the note to add."),
        "old": _text("replace/remove: text copied exactly from the file; it must occur exactly once."),
        "new": _text("replace: the text to put in place of old."),
        "file": _text(
            "A topic file instead of your main memory, e.g. projects/aster.md (names of letters, "
            f"digits, '.', '_', '-'; ending in .md; at most {MAX_DEPTH} levels). \"/\" (with view) "
            f'lists them; "{TODAY_FILE}" is today\'s daily note.'
        ),
    },
    "required": ["command"],
    "additionalProperties": False,
}

INPUT_SCHEMA: dict[str, Any] = copy.deepcopy(MEMORY_ONLY_SCHEMA)
INPUT_SCHEMA["properties"]["target"] = _text(
    f"Which file: memory ({MEMORY_FILE}, the default) or user ({USER_FILE}).", enum=list(TARGETS)
)

#: The fields each command takes, in the order they are checked (``target`` goes with any).
_FIELDS = {"view": (), "append": ("content",), "replace": ("old", "new"), "remove": ("old",)}


def _check_arguments(arguments: Mapping[str, Any], targets: Mapping[str, str]) -> str | None:
    """The error text for a malformed call, or ``None`` when the call is well-formed."""
    command = arguments.get("command")
    if not isinstance(command, str) or command not in _FIELDS:
        return f"error: command must be one of {', '.join(_FIELDS)} (got {command!r})."
    fields = _FIELDS[command]
    takes = " and ".join(map(repr, fields)) or "no other fields"
    for field, value in arguments.items():
        if field in ("command", "target", "file") or value is None:
            continue  # None: some tool-calling modes send every field, unused ones as null
        if field not in INPUT_SCHEMA["properties"]:
            return f"error: unknown field {field!r}; {command} takes {takes}."
        if field not in fields:
            return f"error: {command} takes {takes}, not {field!r}; leave {field!r} out."
    target, file = arguments.get("target"), arguments.get("file")
    if target is not None and target not in targets:
        if target == "user":
            return f"error: this memory tool only edits {MEMORY_FILE}; leave 'target' out."
        return f"error: target must be one of {', '.join(map(repr, targets))} (got {target!r})."
    if file is not None and not isinstance(file, str):
        return f"error: 'file' must be a string like \"projects/aster.md\" (got {type(file).__name__})."
    if file is not None and target is not None:
        return "error: give 'target' (MEMORY.md or USER.md) or 'file' (a topic file), not both."
    for field in fields:
        value = arguments.get(field)
        if not isinstance(value, str):
            what = "missing" if value is None else f"{type(value).__name__}, not a string"
            return f"error: {command} needs {field!r} as a string ({field!r} is {what})."
        if field in ("old", "content") and not value.strip():
            return f"error: {field!r} must not be empty."
    return None


def _edit(command: str, text: str, arguments: Mapping[str, Any], name: str) -> tuple[str | None, str]:
    """Apply one command to the text: ``(new text, reply)``, or ``(None, error text)``."""
    if command == "append":
        note = str(arguments["content"]).rstrip("\r\n")
        separator = "" if not text or text.endswith(("\n", "\r")) else "\n"
        return f"{text}{separator}{note}\n", "ok: note appended"
    old = str(arguments["old"])
    count = text.count(old)
    if count != 1:
        where, how = (
            ("does not occur", "call view and copy the text exactly")
            if count == 0
            else (f"occurs {count} times", "include more of the surrounding text so it occurs exactly once")
        )
        return None, f"'old' {where} in {name}; {how}. Nothing was changed."
    start = text.index(old)
    end = start + len(old)
    if command == "replace":
        return text[:start] + str(arguments["new"]) + text[end:], "ok: replaced"
    whole_line = (start == 0 or text[start - 1] == "\n") and text[end : end + 1] == "\n"
    return text[:start] + text[end + 1 if whole_line else end :], "ok: removed"


def _plan(arguments: Mapping[str, Any], name: str = MEMORY_FILE) -> Plan:
    """The edit as a pure function of the file's bytes; re-run as is after a write conflict."""
    command = str(arguments["command"])
    return plan_edit(name, lambda text: _edit(command, text, arguments, name))


def _view(current: bytes | None, name: str) -> str:
    text = readable_text(current)
    if text is None:
        return f"No memories yet ({name} does not exist). Use append to save a note."
    if not text.strip():
        return f"No memories yet ({name} is empty). Use append to save a note."
    if current is not None and len(current) > MAX_BOOTSTRAP_FILE_BYTES:
        text += f"\n[…more: {name} is over the {MAX_BOOTSTRAP_FILE_BYTES}-byte limit]"
    return text


def _adds_to_today(arguments: Mapping[str, Any], today: str, native: bool) -> bool:
    """Whether a call only adds to today's note: all a group, subagent or cron session may do."""
    command = arguments.get("command")
    if native:
        path = parse(str(arguments.get("path", "")))
        return command in ("create", "insert") and not isinstance(path, str) and path.relative == today
    return command == "append" and str(arguments.get("file", "")).strip("/") in (TODAY_FILE, today)


class MemoryTool:
    """The ``memory`` tool for one persona home: declare it to the model (``openai_tool(memory)``,
    ``anthropic_tool(memory)``) and run each call with ``tool(**arguments)`` or ``acall``.
    ``private=True`` is the tool of a group, subagent or cron session (see :meth:`for_profile`)."""

    name = "memory"
    #: It runs the commands of the built-in memory tool a provider may declare (Anthropic's).
    native_kind = "memory"

    def __init__(
        self,
        store: MemoryStore,
        user_store: MemoryStore | None = None,
        *,
        max_view_chars: int = DEFAULT_VIEW_CHARS,
        today: Today | None = None,
        source: SourceBase | None = None,
        private: bool = False,
    ) -> None:
        self.store, self.user_store, self.location = store, user_store, store.location
        self.today, self.source, self.private = today or Today(), source, private
        self._description: str | None = None
        self._index: MemoryIndex | None = None
        #: The memory files by name; the native tool shows these under /memories, with the topic files.
        self.stores: dict[str, MemoryStore] = {MEMORY_FILE: store}
        if user_store is not None:
            self.stores[USER_FILE] = user_store
        self._targets = {target: name for target, name in TARGETS.items() if name in self.stores}
        self.native = NativeMemory(self.stores, max_view_chars)

    @property
    def description(self) -> str:
        """What the model reads: the commands, and today's date (read from the clock each time)."""
        if self._description is not None:
            return self._description
        base = DESCRIPTION if self.user_store is not None else MEMORY_ONLY_DESCRIPTION
        return f"{base}\n{daily_description(str(self.today()), str(self.today.timezone))}"

    @description.setter
    def description(self, text: str) -> None:
        self._description = text

    def for_profile(self, profile: str | None) -> MemoryTool:
        """This tool for a session of ``profile``: itself, or for ``group``, ``subagent`` and
        ``cron`` one that can only add to today's daily note (private memory stays private)."""
        if profile not in PRIVATE_PROFILES or self.private:
            return self
        private = copy.copy(self)
        private.private = True
        return private

    def recent_notes(self, days: int) -> dict[str, str]:
        """``{path below memory/: text}`` of the daily notes of today and the ``days - 1`` days
        before it: one listing, then only those files are read."""
        first, last = recent_days(self.today(), days)
        topics = self.native.topics
        wanted = [path for path in topics.snapshot().files if first <= (daily_day(path) or date.min) <= last]
        return {path: readable_text(topics.store(path).read()) or "" for path in sorted(wanted)}

    def index(self) -> MemoryIndex:
        """The search index of this home (built on first use, kept for the tool's life)."""
        if self._index is None:
            home = self.source if self.source is not None else self.location
            self._index = memory_index(home, clock=self.today.clock, timezone=self.today.timezone)
            topics = self.native.topics  # its listing has no bodies: unchanged files cost a 304
            self._index.lister = lambda: [f"memory/{path}" for path in topics.snapshot().files]
        return self._index

    def tools(self, profile: str | None = None, *, recall: bool = True) -> tuple[Any, ...]:
        """The tools for a loop of your own or a framework: this one, then ``memory_search`` and
        ``memory_get`` (``recall=False``: none); for a private profile, only this one (see
        :meth:`for_profile`)."""
        tool = self.for_profile(profile)
        if tool.private or not recall:
            return (tool,)
        return (tool, *recall_tools(self.index()))

    @property
    def input_schema(self) -> dict[str, Any]:
        """JSON Schema of the arguments (a fresh copy: callers may adapt it)."""
        return copy.deepcopy(INPUT_SCHEMA if self.user_store is not None else MEMORY_ONLY_SCHEMA)

    def tool(self, /, **arguments: Any) -> ToolReply:
        """Run one call as the model made it (either command set). Storage failures raise, but a
        symlinked file or a file where a folder should be is an error reply the model can act on."""
        try:
            return self._dispatch(arguments)
        except BootstrapError as error:
            cause = error.__cause__
            voice = NATIVE if is_native(arguments) else PORTABLE
            if isinstance(cause, NotADirectoryError):
                return voice.error(f"refused — {error}; nothing was changed. Use a path outside it.")
            if isinstance(cause, OSError) and cause.errno == errno.ELOOP:  # a symlinked file
                said = str(error).replace("memory_tool only", "the memory tool only")
                return voice.error(
                    f"refused — {said}; nothing was changed. Keep the note in another file "
                    "(only a person can replace the link with a regular file)."
                )
            raise

    def _dispatch(self, arguments: Mapping[str, Any]) -> ToolReply:
        native = is_native(arguments)
        if self.private and not _adds_to_today(arguments, today := self.today.note(), native):
            where = f"{ROOT}/{today} (create or insert)" if native else f'file "{TODAY_FILE}" (append)'
            return (NATIVE if native else PORTABLE).error(
                "this is a shared or delegated session: your memory stays private here, so it cannot be "
                f"read, searched or changed. You may only add a note to today's daily note, {where}."
            )
        if native:
            return self.native.run(arguments)
        problem = _check_arguments(arguments, self._targets)
        if problem is not None:
            return ToolReply(problem, is_error=True)
        file = arguments.get("file")
        if file is not None and file.strip("/") == TODAY_FILE:
            file = self.today.note()
        name = TARGETS[str(arguments.get("target") or "memory")]
        if file is not None and file.strip("/") in SPECIAL_FILES:
            name = file.strip("/")  # file="MEMORY.md" is target "memory"
            if name not in self.stores:
                return PORTABLE.error(f"this memory tool only edits {MEMORY_FILE}; leave 'file' out.")
        elif file is not None:
            return self._topic(file, arguments)
        store = self.stores[name]
        if arguments["command"] == "view":
            return ToolReply(_view(store.read(), name))
        return ToolReply.of(store.update(_plan(arguments, name)).reply)

    def _topic(self, file: str, arguments: Mapping[str, Any]) -> ToolReply:
        """A portable command on a topic file (``file`` is its path below ``memory/``)."""
        parts = tuple(part for part in file.split("/") if part)
        relative = "/".join(parts)
        if "\\" in file or "." in parts or ".." in parts:
            return PORTABLE.error(
                f"'file' is a path like projects/aster.md, without '.', '..' or '\\' (got {file!r})."
            )
        topics, command = self.native.topics, str(arguments["command"])
        snapshot = topics.snapshot()
        if command == "view":
            if not parts or snapshot.is_folder(relative):
                return ToolReply(snapshot.summary(relative))
            current = topics.store(relative).read() if topics.supported else None
            return ToolReply(_view(current, relative))
        if not parts or snapshot.is_folder(relative):
            return PORTABLE.error(
                f"{relative or file!r} is a folder; 'file' names a topic file in it, like projects/aster.md."
            )
        plan = _plan(arguments, relative)
        if relative in snapshot.files:
            gone = PORTABLE.error(f"{relative} does not exist (it was just deleted); nothing was changed.")
            return topics.update(relative, plan, snapshot, PORTABLE, None if command == "append" else gone)
        if command != "append":
            return PORTABLE.error(
                f'{relative} does not exist; view with file "/" lists your topic files, '
                "and append creates one."
            )
        return topics.create(parts, plan, snapshot, relative, PORTABLE)

    async def acall(self, /, **arguments: Any) -> ToolReply:
        """:meth:`tool` for event loops: the blocking storage work runs in a worker thread."""
        return await asyncio.to_thread(self.tool, **arguments)

    def __repr__(self) -> str:
        return f"MemoryTool({self.location!r}, files={list(self.stores)})"


def memory_tool(
    dir: str | os.PathLike[str] | Any,
    *,
    storage_options: Mapping[str, Any] | None = None,
    fs: Any = None,
    user: bool = True,
    single_writer: bool = False,
    max_view_chars: int = DEFAULT_VIEW_CHARS,
    engine: str = DEFAULT_ENGINE,
    clock: Clock | None = None,
    timezone: str | tzinfo | None = None,
) -> MemoryTool:
    """The memory tool for a persona home — the same locations as ``compose_soul``; ``user=False``:
    MEMORY.md only. A home that cannot be written fails now. No edit is answered "ok" if another
    writer could silently undo it: a home without checked compare-and-swap is refused unless
    ``single_writer=True`` (your word that only this process writes it). ``clock`` and ``timezone``
    (default UTC) say which day is today."""
    today = Today(clock, timezone)  # a bad clock or zone fails before any I/O
    source = resolve(dir, storage_options=storage_options, fs=fs, engine=engine)
    store = source.writer(MEMORY_FILE, single_writer=single_writer)
    user_store = source.writer(USER_FILE, single_writer=single_writer) if user else None
    return MemoryTool(store, user_store, max_view_chars=max_view_chars, today=today, source=source)
