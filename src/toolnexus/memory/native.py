"""Anthropic's built-in memory commands over ``/memories``, each reply leading with the reference
implementation's exact sentence (:mod:`.reference`). MEMORY.md and USER.md are part of the soul,
so they always exist: ``create`` writes an empty one, ``delete`` empties it, ``rename`` is refused."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from toolnexus._reply import ToolReply
from toolnexus.composer.rules import MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.memory import reference
from toolnexus.memory.edits import NATIVE, Edit, plan_edit, readable_text
from toolnexus.memory.paths import ROOT, MemoryPath, parse
from toolnexus.memory.topics import Topics
from toolnexus.stores.base import MEMORY_FILE, Change, MemoryStore, Plan

#: Required fields of each command, then optional ones (``new_str`` defaults to "": a deletion).
_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "view": (("path",), ("view_range",)),
    "create": (("path", "file_text"), ()),
    "str_replace": (("path", "old_str"), ("new_str",)),
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
        return f"The command must be one of {', '.join(_FIELDS)} (got {command!r})."
    required, optional = _FIELDS[command]
    for field, value in arguments.items():
        if field != "command" and value is not None and field not in required + optional:
            return f"{command} takes {', '.join(required + optional)}, not {field!r}."
    for field in (*required, *optional):
        value = arguments.get(field)
        wanted = int if field == "insert_line" else str
        if field == "view_range" or (value is None and field in optional):
            continue
        if not isinstance(value, wanted) or isinstance(value, bool):
            what = "missing" if value is None else type(value).__name__
            kind = "an integer" if wanted is int else "a string"
            return f"{command} needs {field!r} as {kind} (got {what})."
    return None


def _not_found(path: MemoryPath) -> ToolReply:
    return NATIVE.error(f"The path {path.given} does not exist. Please provide a valid path.")


def _not_a_file(path: MemoryPath) -> ToolReply:
    return NATIVE.error(f"The path {path.given} is not a file.")


def _exists(given: str) -> ToolReply:
    return NATIVE.error(f"File {given} already exists")


class NativeMemory:
    """The built-in command set over the memory files of one home (``stores`` by name)."""

    def __init__(self, stores: Mapping[str, MemoryStore], max_view_chars: int) -> None:
        self.stores = stores
        self.topics = Topics(stores[MEMORY_FILE])
        self.max_view_chars = max_view_chars

    def run(self, arguments: Mapping[str, Any]) -> ToolReply:
        """Run one built-in memory command; the reply leads with the reference's sentence."""
        problem = _check(arguments)
        if problem is not None:
            return NATIVE.error(problem)
        command = str(arguments["command"])
        if command == "rename":
            return self._rename(str(arguments["old_path"]), str(arguments["new_path"]))
        path = parse(str(arguments["path"]))
        if isinstance(path, str):
            return NATIVE.error(path)
        if command == "view":
            return self._view(path, arguments.get("view_range"))
        if command == "delete":
            return self._delete(path)
        return self._edit(command, path, arguments)

    def _special(self, path: MemoryPath) -> MemoryStore | None:
        return self.stores.get(path.special) if path.special else None

    def _view(self, path: MemoryPath, view_range: Any) -> ToolReply:
        if path.is_root:
            sizes = {name: len(store.read() or b"") for name, store in self.stores.items()}
            return ToolReply(reference.listing(path.given, {**sizes, **self.topics.snapshot().files}))
        special = self._special(path)
        current = special.read() if special else None
        if special is None and path.special is None:
            snapshot = self.topics.snapshot()  # one listing: is it a file, a folder, or neither?
            if path.relative in snapshot.files:
                current = self.topics.store(path.relative).read()
            elif snapshot.is_folder(path.relative):
                return ToolReply(reference.listing(path.given, snapshot.below(path.relative)))
        if current is None and special is None:
            return _not_found(path)
        reply = reference.view(path.given, readable_text(current) or "", view_range, self.max_view_chars)
        if current is not None and len(current) > MAX_BOOTSTRAP_FILE_BYTES and not reply.is_error:
            return ToolReply(
                f"{reply}\n[the file is over the {MAX_BOOTSTRAP_FILE_BYTES}-byte limit: its end is not shown]"
            )
        return reply

    def _edit(self, command: str, path: MemoryPath, arguments: Mapping[str, Any]) -> ToolReply:
        """create, str_replace, insert: one plan, on MEMORY.md / USER.md or on a topic file."""
        given = path.given
        if path.is_root:
            return _exists(given) if command == "create" else _not_a_file(path)
        edit: Edit
        if command == "create":
            edit = partial(reference.create, file_text=str(arguments["file_text"]), path=given)
        elif command == "str_replace":
            old, new = str(arguments["old_str"]), str(arguments.get("new_str") or "")
            edit = partial(reference.replace, old=old, new=new, path=given, max_chars=self.max_view_chars)
        else:
            line, insert_text = int(arguments["insert_line"]), str(arguments["insert_text"])
            edit = partial(reference.insert, line=line, insert_text=insert_text, path=given)
        plan = plan_edit(given, edit, NATIVE)
        special = self._special(path)
        if special is not None:
            return ToolReply.of(special.update(plan).reply)
        if path.special is None:
            return self._edit_topic(command, path, plan)
        if command != "create":  # USER.md, with user=False
            return _not_found(path)
        return NATIVE.error(
            f"Cannot create {given}: {path.special} is not part of this memory; keep your notes "
            f"in {ROOT}/{MEMORY_FILE}."
        )

    def _edit_topic(self, command: str, path: MemoryPath, plan: Plan) -> ToolReply:
        snapshot = self.topics.snapshot()
        relative = path.relative
        if command == "create":
            if relative in snapshot.files or snapshot.is_folder(relative):
                return _exists(path.given)
            exists = _exists(path.given)

            def create(current: bytes | None) -> Change:  # create never overwrites
                return Change(None, exists) if current is not None else plan(current)

            return self.topics.create(path.parts, create, snapshot, path.given, NATIVE)
        if snapshot.is_folder(relative):
            return _not_a_file(path)
        if relative not in snapshot.files:
            return _not_found(path)
        return self.topics.update(relative, plan, snapshot, NATIVE, _not_found(path))

    def _delete(self, path: MemoryPath) -> ToolReply:
        done = ToolReply(f"Successfully deleted {path.given}")
        if path.is_root:
            return NATIVE.error(f"Cannot delete the {ROOT} directory itself")
        special = self._special(path)
        if special is not None:
            emptied = ToolReply(
                f"{done}\n{path.special} stays in {ROOT}, now empty: it is part of your memory."
            )

            def empty(current: bytes | None) -> Change:
                return Change(b"" if current else None, emptied if current else done)

            return ToolReply.of(special.update(empty).reply)
        missing = NATIVE.error(f"The path {path.given} does not exist")
        if path.special is not None:  # USER.md, with user=False
            return missing
        snapshot = self.topics.snapshot()
        if path.relative in snapshot.files:
            return done if self.topics.remove([path.relative]) else missing
        if snapshot.is_folder(path.relative):
            self.topics.remove(f"{path.relative}/{name}" for name in snapshot.below(path.relative))
            return done
        return missing

    def _rename(self, old_path: str, new_path: str) -> ToolReply:
        old, new = parse(old_path), parse(new_path)
        if isinstance(old, str) or isinstance(new, str):
            return NATIVE.error(old if isinstance(old, str) else str(new))
        if old.is_root:
            return NATIVE.error(f"Cannot rename the {ROOT} directory itself")
        snapshot = self.topics.snapshot()
        if new.is_root or new.special or new.relative in snapshot.files or snapshot.is_folder(new.relative):
            advice = f"\n{new.special} keeps its notes; add to it with insert instead." if new.special else ""
            return NATIVE.error(f"The destination {new.given} already exists{advice}")
        missing = NATIVE.error(f"The path {old.given} does not exist")
        if old.special:
            if old.special not in self.stores:
                return missing
            return NATIVE.error(
                f"Cannot rename {old.given}: {old.special} keeps its name (it is part of your memory).\n"
                f"To move notes, create a topic file with them, then str_replace them out of {old.given}."
            )
        prefix, cannot = f"{old.relative}/", f"Cannot rename {old.given} to {new.given}"
        if old.relative in snapshot.files:
            moves = [(old.relative, new.relative)]
        else:  # every file below the folder
            moves = [
                (prefix + rest, f"{new.relative}/{rest}") for rest in sorted(snapshot.below(old.relative))
            ]
        if not moves:
            return missing
        if new.relative.startswith(prefix):
            return NATIVE.error(f"{cannot}: {new.given} is inside {old.given}.")
        for _, target in moves:
            why = snapshot.problem(tuple(target.split("/")))
            if why is not None:
                return NATIVE.error(f"{cannot}: {why}.")
        outcome = self.topics.rename(moves)
        if outcome == "exists":
            return NATIVE.error(f"The destination {new.given} already exists")
        if outcome == "missing":
            return missing
        return ToolReply(f"Successfully renamed {old.given} to {new.given}")
