"""The pure half of every memory edit, shared by both command sets: decode the bytes read, apply
an edit, check the cap. A plan may run again after a write conflict, so all here is pure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from toolnexus._reply import ToolReply
from toolnexus.composer.rules import MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.stores.base import Change, Plan

#: One edit of a file's text: ``(new text, reply)``, or ``(None, error text)`` to write nothing.
Edit = Callable[[str], tuple[str | None, str]]


@dataclass(frozen=True, slots=True)
class Voice:
    """How a command set words the replies made here (the native set's errors, as the
    reference's, have no prefix)."""

    error_prefix: str
    condense: str
    usage: bool
    fewer_files: str

    def error(self, text: str) -> ToolReply:
        return ToolReply(self.error_prefix + text, is_error=True)


PORTABLE = Voice(
    "error: ",
    "merge or shorten older notes with replace, drop stale ones with remove",
    usage=True,
    fewer_files="Keep further notes in an existing topic file, or ask the user to remove the ones "
    "no longer needed.",
)
NATIVE = Voice(
    "",
    "merge or shorten older notes with str_replace, drop stale ones with str_replace and an empty "
    "new_str (or delete a topic file you no longer need)",
    usage=False,
    fewer_files="Merge related notes into fewer files, delete the ones you no longer need, then try again.",
)


def plan_edit(name: str, edit: Edit, voice: Voice = PORTABLE) -> Plan:
    """A store plan: decode ``name``'s bytes (absent: ``""``), apply ``edit``, refuse what is over the cap."""

    def plan(current: bytes | None) -> Change:
        if current is not None and len(current) > MAX_BOOTSTRAP_FILE_BYTES:
            why = f"{name} is already larger than the {MAX_BOOTSTRAP_FILE_BYTES}-byte limit (it was written "
            why += "outside this tool) and cannot be edited safely; ask the user to condense it."
            return Change(None, voice.error(why))
        try:
            text = "" if current is None else current.decode("utf-8")
        except UnicodeDecodeError as error:
            why = f"{name} contains bytes that are not valid UTF-8 (at byte {error.start}), so it is not "
            why += "edited — no text would survive intact; ask the user to fix the file."
            return Change(None, voice.error(why))
        new_text, reply = edit(text)
        if new_text is None:
            return Change(None, voice.error(reply))
        data = new_text.encode("utf-8")
        if len(data) > MAX_BOOTSTRAP_FILE_BYTES:
            why = f"refused — {name} would grow to {len(data)} bytes, over its {MAX_BOOTSTRAP_FILE_BYTES}"
            why += f"-byte limit. Condense first: {voice.condense}, then try again with a shorter note."
            return Change(None, voice.error(why))
        unchanged = current is not None and data == current
        if voice.usage:
            used = f"{len(data)} of {MAX_BOOTSTRAP_FILE_BYTES} bytes used"
            reply = f"{reply} (no change; {used})." if unchanged else f"{reply} ({used})."
        return Change(None if unchanged else data, ToolReply(reply))

    return plan


def readable_text(current: bytes | None) -> str | None:
    """The file's text for viewing (``None`` when absent): capped, invalid bytes replaced, no BOM."""
    if current is None:
        return None
    return current[:MAX_BOOTSTRAP_FILE_BYTES].decode("utf-8", errors="replace").removeprefix("\ufeff")
