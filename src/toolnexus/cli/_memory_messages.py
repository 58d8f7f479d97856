"""What ``toolnexus memory`` tells a person: a :class:`Recorder` around the tool's store keeps
what the edit saw and decided, and this module words it for a person, not a model.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from typing import Any

from toolnexus.agents import MAX_BOOTSTRAP_FILE_BYTES

__all__ = ["Recorder", "file_in", "outcome", "refusal", "shell_command"]


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def file_in(location: str, name: str) -> str:
    """``/tmp/aster/MEMORY.md``; ``MEMORY.md in zip://aster::…`` where a path would mislead."""
    if "::" in location or " + " in location:
        return f"{name} in {location}"
    return f"{location.rstrip('/')}/{name}"


def shell_command(homes: Sequence[str], *words: str) -> str:
    """A ``toolnexus memory …`` line a person can paste (their locations, quoted for a shell)."""
    return shlex.join(["toolnexus", "memory", *homes, *words])


class Recorder:
    """A memory tool's store (``MemoryTool.stores[name]``) that remembers what the last edit saw
    and decided (the plan's ``Change``: ``data`` to write or ``None``); otherwise it is the store."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.seen: bytes | None = None
        self.change: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def update(self, plan: Callable[[bytes | None], Any]) -> Any:
        def recorded(current: bytes | None) -> Any:
            self.seen, self.change = current, plan(current)
            return self.change

        return self.store.update(recorded)


_DONE = {
    "append": "added a note to {where}",
    "replace": "replaced {old} in {where}",
    "remove": "removed {old} from {where}",
}


def outcome(action: str, arguments: dict[str, Any], recorder: Recorder) -> str:
    """The line for an edit the tool accepted (written, or nothing to change)."""
    where = file_in(recorder.location, recorder.name)
    change = recorder.change
    if change is None or change.data is None:
        return f"toolnexus: {where} already reads that way; nothing was changed"
    done = _DONE[action].format(where=where, old=_quoted(arguments.get("old", "")))
    return f"toolnexus: {done} ({len(change.data)} of {MAX_BOOTSTRAP_FILE_BYTES} bytes used)"


def refusal(
    action: str, arguments: dict[str, Any], recorder: Recorder, homes: Sequence[str], said: str
) -> str:
    """Why the tool refused, for a person: from the very bytes it refused to edit."""
    where = file_in(recorder.location, recorder.name)
    view = shell_command(homes, "view", *(("--target", "user") if recorder.name == "USER.md" else ()))
    for field in ("content", "old"):
        if field in arguments and not str(arguments[field]).strip():
            what = "the note" if field == "content" else "the text to find"
            return f"toolnexus: {what} is empty; nothing was changed in {where}"
    seen = recorder.seen
    if seen is not None:
        problem = _unreadable(seen, where)
        if problem is not None:
            return problem
        text = seen.decode("utf-8")
        old = str(arguments.get("old", ""))
        if action in ("replace", "remove") and text.count(old) != 1:
            count = text.count(old)
            if count == 0:
                missing = f"{_quoted(old)} does not occur in {where}"
                return f"toolnexus: {missing}; nothing was changed (see it with: {view})"
            return (
                f"toolnexus: {_quoted(old)} occurs {count} times in {where}; give more of the text "
                "around it so that it occurs once; nothing was changed"
            )
    if _would_grow_past_cap(action, arguments, seen):
        return (
            f"toolnexus: the edit would take {where} over its {MAX_BOOTSTRAP_FILE_BYTES}-byte limit; "
            "nothing was changed. "
            f"Shorten older notes first (see them with: {view})"
        )
    return f"toolnexus: {where} was not changed: {said.removeprefix('error:').strip()}"


def _unreadable(seen: bytes, where: str) -> str | None:
    """Why a file cannot be edited safely at all (over the cap, UTF-16, not UTF-8), or ``None``."""
    if len(seen) > MAX_BOOTSTRAP_FILE_BYTES:
        return (
            f"toolnexus: {where} is over the {MAX_BOOTSTRAP_FILE_BYTES}-byte limit "
            "(it was written outside toolnexus), so "
            "it is not edited; shorten it in an editor first. Nothing was changed"
        )
    if seen[:2] in _UTF16_BOMS:
        return (
            f"toolnexus: {where} is UTF-16 text and toolnexus edits only UTF-8, so nothing was "
            "changed; convert it to UTF-8 first (e.g. with iconv -f UTF-16 -t UTF-8)"
        )
    try:
        seen.decode("utf-8")
    except UnicodeDecodeError as error:
        return (
            f"toolnexus: {where} is not valid UTF-8 text (byte {error.start}), so it is not edited; "
            "fix it in an editor first. Nothing was changed"
        )
    return None


def _would_grow_past_cap(action: str, arguments: dict[str, Any], seen: bytes | None) -> bool:
    """Whether the edit makes the file larger than the cap (within the two line breaks an append
    may add, which is as close as a message needs)."""
    size = len(seen or b"")
    if action == "append":
        size += len(str(arguments.get("content", "")).encode()) + 2
    elif action == "replace":
        size += len(str(arguments.get("new", "")).encode()) - len(str(arguments.get("old", "")).encode())
    return size > MAX_BOOTSTRAP_FILE_BYTES


def _quoted(text: str) -> str:
    """A piece of text as the person typed it, shortened when long."""
    return repr(text if len(text) <= 60 else text[:57] + "...")
