"""The pure half of every memory edit: decode the bytes read, apply an edit, check the cap.

Both command sets — the portable one (:mod:`.memory`) and Anthropic's built-in one
(:mod:`.memory_native`) — build their :data:`Plan` here, so the cap, the UTF-8 rule and the
"nothing changed" reply are written once. A plan may run more than once (after a write
conflict), so everything here is a pure function of the bytes.
"""

from __future__ import annotations

from collections.abc import Callable

from toolnexus.composer.rules import MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.stores import Change, Plan

__all__ = ["CAP", "Edit", "find_once", "plan_edit", "readable_text"]

CAP = MAX_BOOTSTRAP_FILE_BYTES

#: One edit of a file's text: ``(new text, reply)``, or ``(None, error text)`` to write nothing.
Edit = Callable[[str], tuple[str | None, str]]


def _decode(current: bytes | None, name: str) -> tuple[str | None, str | None]:
    """``(text, None)`` for an editable file (absent → ``""``), else ``(None, error text)``."""
    if current is None:
        return "", None
    if len(current) > CAP:
        return None, (
            f"error: {name} is already larger than the {CAP}-byte limit (it was written "
            "outside this tool) and cannot be edited safely; ask the user to condense it."
        )
    try:
        return current.decode("utf-8"), None
    except UnicodeDecodeError as error:
        return None, (
            f"error: {name} contains bytes that are not valid UTF-8 (at byte {error.start}), so it "
            "is not edited — no text would survive intact; ask the user to fix the file."
        )


def plan_edit(name: str, edit: Edit) -> Plan:
    """A store plan: decode ``name``'s bytes, apply ``edit``, refuse anything over the cap."""

    def plan(current: bytes | None) -> Change:
        text, problem = _decode(current, name)
        if text is None:
            return Change(None, problem or "error")
        new_text, reply = edit(text)
        if new_text is None:
            return Change(None, reply)
        data = new_text.encode("utf-8")
        if len(data) > CAP:
            return Change(
                None,
                (
                    f"error: refused — {name} would grow to {len(data)} bytes, over its {CAP}-byte "
                    "limit. Condense first: merge or shorten older notes with replace, drop stale ones "
                    "with remove, then try again with a shorter note."
                ),
            )
        if current is not None and data == current:
            return Change(None, f"{reply} (no change; {len(data)} of {CAP} bytes used).")
        return Change(data, f"{reply} ({len(data)} of {CAP} bytes used).")

    return plan


def find_once(text: str, old: str, name: str, *, field: str = "old", fix: str = "call view") -> int | str:
    """Where ``old`` starts in ``text`` when it occurs exactly once, else the error text."""
    count = text.count(old)
    if count == 1:
        return text.index(old)
    where = "does not occur" if count == 0 else f"occurs {count} times"
    how = (
        f"{fix} and copy the text exactly"
        if count == 0
        else "include more of the surrounding text so it occurs exactly once"
    )
    return f"error: {field!r} {where} in {name}; {how}. Nothing was changed."


def readable_text(current: bytes | None) -> str | None:
    """The file's text for viewing (``None`` when absent): capped, invalid bytes replaced, no BOM."""
    if current is None:
        return None
    return current[:CAP].decode("utf-8", errors="replace").removeprefix("\ufeff")
