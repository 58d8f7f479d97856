"""Anthropic's built-in memory tool (``memory_20250818``), spoken natively by :class:`MemoryTool`.

Claude models are trained on its commands — ``view`` (with ``view_range``), ``create``,
``str_replace``, ``insert``, ``delete``, ``rename`` — over a ``/memories`` directory. Here that
directory shows exactly the persona's writable memory files: ``/memories/MEMORY.md`` and, unless
``user=False``, ``/memories/USER.md``. The mapping:

- ``view /memories`` lists both files with their sizes (an absent file is listed as 0 bytes);
  ``view`` on a file prints it with line numbers, ``view_range: [first, last]`` (1-based,
  ``last = -1`` for the end) a part of it.
- ``create`` writes a file that is absent or empty; one with content is refused (view it and
  edit it instead), so a model never wipes notes by "creating" its memory again.
- ``str_replace`` (``old_str`` must occur exactly once) and ``insert`` (after line
  ``insert_line``; 0 is the top) edit in place; ``delete`` empties the file (it stays, empty).
- ``rename``, any other path, and ``..``/``.`` segments are refused with an ``error: …`` the model
  can act on. Every edit goes through the store: cap, atomic write, compare-and-swap on S3.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolnexus.memory.edits import CAP, find_once, plan_edit, readable_text
from toolnexus.stores import Change, MemoryStore, Plan

__all__ = ["ROOT", "TOOL_TYPE", "is_native", "run"]

TOOL_TYPE = "memory_20250818"
ROOT = "/memories"

#: Required fields of each command, then optional ones.
_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "view": (("path",), ("view_range",)),
    "create": (("path", "file_text"), ()),
    "str_replace": (("path", "old_str", "new_str"), ()),
    "insert": (("path", "insert_line", "insert_text"), ()),
    "delete": (("path",), ()),
    "rename": (("old_path", "new_path"), ()),
}
_NATIVE_ONLY = frozenset(_FIELDS) - {"view"}


def is_native(arguments: Mapping[str, Any]) -> bool:
    """Whether a call uses the built-in command set (a path, or a command only it has)."""
    return "path" in arguments or "old_path" in arguments or arguments.get("command") in _NATIVE_ONLY


def _check(arguments: Mapping[str, Any]) -> str | None:
    command = arguments.get("command")
    if not isinstance(command, str) or command not in _FIELDS:
        return f"error: command must be one of {', '.join(_FIELDS)} (got {command!r})."
    required, optional = _FIELDS[command]
    for field, value in arguments.items():
        if field != "command" and value is not None and field not in required + optional:
            return f"error: {command} takes {', '.join(required + optional)}, not {field!r}."
    for field in required:
        value = arguments.get(field)
        wanted = int if field == "insert_line" else str
        if not isinstance(value, wanted) or isinstance(value, bool):
            what = "missing" if value is None else type(value).__name__
            kind = "an integer" if wanted is int else "a string"
            return f"error: {command} needs {field!r} as {kind} (got {what})."
    return None


def _files(stores: Mapping[str, MemoryStore]) -> str:
    return " and ".join(f"{ROOT}/{name}" for name in stores)


def _resolve(path: str, stores: Mapping[str, MemoryStore]) -> str | tuple[str] | None:
    """``None`` for the /memories directory, the file name for one of its files, or ``(error,)``."""
    if "\\" in path or "\x00" in path or not (path == ROOT or path.startswith(ROOT + "/")):
        return (f"error: memory paths start with {ROOT}/ (got {path!r}); your files are {_files(stores)}.",)
    parts = [part for part in path[len(ROOT) :].split("/") if part]
    if any(part in (".", "..") for part in parts):
        return (f"error: {path!r}: '.' and '..' are not allowed; use {_files(stores)} as written.",)
    if not parts:
        return None
    if len(parts) == 1 and parts[0] in stores:
        return parts[0]
    return (
        f"error: {path} does not exist. {ROOT} holds exactly {_files(stores)} — no other files or "
        "folders can be made; keep your notes in those.",
    )


def run(stores: Mapping[str, MemoryStore], arguments: Mapping[str, Any]) -> str:
    """Run one built-in memory command against the persona's memory files."""
    problem = _check(arguments)
    if problem is not None:
        return problem
    command = str(arguments["command"])
    if command == "rename":
        return (
            f"error: rename is not supported: the files in {ROOT} ({_files(stores)}) have fixed names. "
            "To move a note, insert it into one file and str_replace it out of the other."
        )
    path = str(arguments["path"])
    name = _resolve(path, stores)
    if isinstance(name, tuple):
        return name[0]
    if name is None:
        if command == "view":
            return _listing(stores)
        return f"error: {ROOT} is the memory directory; {command} works on a file in it: {_files(stores)}."
    store = stores[name]
    if command == "view":
        return _view(store.read(), path, arguments.get("view_range"))
    return store.update(_plan(command, path, arguments)).reply


def _size(size: int) -> str:
    return f"{size}B" if size < 1024 else f"{size / 1024:.1f}K"


def _listing(stores: Mapping[str, MemoryStore]) -> str:
    sizes = {name: len(store.read() or b"") for name, store in stores.items()}
    lines = [f"{_size(sum(sizes.values()))}\t{ROOT}"]
    lines += [f"{_size(size)}\t{ROOT}/{name}" for name, size in sizes.items()]
    header = f"Here're the files and directories up to 2 levels deep in {ROOT}, excluding hidden items:"
    return "\n".join([header, *lines])


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _span(view_range: Any, count: int) -> tuple[int, int] | None:
    """``[first, last]`` (1-based, inclusive, ``-1`` = the end) as a checked pair, else ``None``."""
    if not isinstance(view_range, list | tuple) or len(view_range) != 2:
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range):
        return None
    first, last = view_range[0], count if view_range[1] == -1 else view_range[1]
    return (first, last) if 1 <= first <= last <= count else None


def _view(current: bytes | None, path: str, view_range: Any) -> str:
    text = readable_text(current)
    if text is None or not text:
        return f"{path} is empty. Use create to write it, or insert to add lines."
    lines = _lines(text)
    span = (1, len(lines)) if view_range is None else _span(view_range, len(lines))
    if span is None:
        return (
            f"error: view_range must be [first, last] with 1 <= first <= last <= {len(lines)} "
            f"(last may be -1 for the end of the file); got {view_range!r}."
        )
    first, last = span
    numbered = [f"{n:>6}\t{lines[n - 1].removesuffix(chr(13))}" for n in range(first, last + 1)]
    if current is not None and len(current) > CAP:
        numbered.append(f"[…more: the file is over the {CAP}-byte limit]")
    return "\n".join([f"Here's the content of {path} with line numbers:", *numbered])


def _insert(text: str, line: int, insert_text: str, path: str) -> tuple[str | None, str]:
    lines = _lines(text)
    if not 0 <= line <= len(lines):
        return None, f"error: insert_line must be between 0 and {len(lines)} for {path} (got {line})."
    addition = insert_text.rstrip("\r\n") + "\n"
    position = sum(len(existing) + 1 for existing in lines[:line])
    if position > len(text):  # after a last line that has no line break
        position, addition = len(text), "\n" + addition
    return text[:position] + addition + text[position:], f"The file {path} has been edited"


def _plan(command: str, path: str, arguments: Mapping[str, Any]) -> Plan:
    name = path.rsplit("/", 1)[-1]
    if command == "create":
        file_text = str(arguments["file_text"])

        def create(text: str) -> tuple[str | None, str]:
            if text:
                return None, (
                    f"error: {path} already exists and holds notes; view it, then edit it with "
                    "str_replace or insert (create only writes an empty file). Nothing was changed."
                )
            return file_text, f"File created successfully at: {path}"

        return plan_edit(name, create)
    if command == "str_replace":
        old, new = str(arguments["old_str"]), str(arguments["new_str"])

        def replace(text: str) -> tuple[str | None, str]:
            if not old:
                return None, "error: 'old_str' must not be empty."
            start = find_once(text, old, path, field="old_str", fix="view the file")
            if isinstance(start, str):
                return None, start
            return text[:start] + new + text[start + len(old) :], "The memory file has been edited"

        return plan_edit(name, replace)
    if command == "insert":
        line, insert_text = int(arguments["insert_line"]), str(arguments["insert_text"])
        return plan_edit(name, lambda text: _insert(text, line, insert_text, path))
    emptied = plan_edit(name, lambda text: ("", f"Successfully deleted {path} (the file is now empty)"))

    def delete(current: bytes | None) -> Change:
        if current is None:
            return Change(None, f"error: {path} does not exist; nothing to delete.")
        return emptied(current)

    return delete
