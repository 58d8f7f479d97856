"""Topic files: the home's ``memory/`` folder, written as MEMORY.md is (``store.file``). The rules
of :mod:`.paths` are checked against a fresh listing before each write, not locked (two writers may
each overshoot by one write); a folder is deleted or renamed file by file: never a file lost."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

from toolnexus._reply import ToolReply
from toolnexus.memory.edits import Voice
from toolnexus.memory.paths import FOLDER, MAX_FILES, MAX_TOTAL_BYTES, name_problem, topic_count
from toolnexus.stores.base import Change, FolderStore, MemoryStore, Moved, Plan

_FOLDER_METHODS = ("file", "listing", "remove", "rename")


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The topic files at one moment: ``{path below memory/: size}``."""

    files: dict[str, int]

    def is_folder(self, relative: str) -> bool:
        prefix = f"{relative}/" if relative else ""
        return any(path.startswith(prefix) for path in self.files)

    def summary(self, folder: str) -> str:
        """The portable commands' listing of the topic files below ``folder`` (``""``: all)."""
        prefix = f"{folder}/" if folder else ""
        files = {path: size for path, size in self.files.items() if path.startswith(prefix)}
        if not files:
            where = f"in {folder}" if folder else "yet"
            return f'No topic files {where}. Use append with a file (e.g. "projects/aster.md") to start one.'
        lines = [f"{path} ({size} bytes)" for path, size in sorted(files.items())]
        head = f"Topic files{f' in {folder}' if folder else ''} ({topic_count(files)} of {MAX_FILES} files, "
        return "\n".join([f"{head}{sum(files.values())} of {MAX_TOTAL_BYTES} bytes):", *lines])

    def below(self, relative: str) -> dict[str, int]:
        """The files below a folder, by path relative to it."""
        prefix = f"{relative}/"
        return {path[len(prefix) :]: size for path, size in self.files.items() if path.startswith(prefix)}

    def problem(self, parts: tuple[str, ...]) -> str | None:
        """Why no topic file can be made at ``parts``: its name, or a file where it needs a folder."""
        for depth in range(1, len(parts)):
            if (folder := "/".join(parts[:depth])) in self.files:
                return name_problem(parts) or f"{folder} is a file, not a folder"
        return name_problem(parts)


class Topics:
    """The topic files of the home that ``store`` (MEMORY.md's) belongs to."""

    def __init__(self, store: MemoryStore) -> None:
        self._folder = cast(FolderStore, store)
        #: Whether the store reaches other files (every built-in store does).
        self.supported = all(callable(getattr(store, method, None)) for method in _FOLDER_METHODS)

    def snapshot(self) -> Snapshot:
        if not self.supported:
            return Snapshot({})
        prefix = f"{FOLDER}/"
        listed = self._folder.listing(FOLDER)
        return Snapshot(
            {path[len(prefix) :]: size for path, size in listed.items() if path.startswith(prefix)}
        )

    def store(self, relative: str) -> FolderStore:
        return self._folder.file(f"{FOLDER}/{relative}")

    def create(
        self, parts: tuple[str, ...], plan: Plan, snapshot: Snapshot, shown: str, voice: Voice
    ) -> ToolReply:
        """A new topic file at ``parts`` (``shown`` names it), written by ``plan``, or why it cannot be."""
        if not self.supported:
            return voice.error(
                f"Cannot create {shown}: this home's store keeps only MEMORY.md and USER.md "
                "(it has no topic files); keep your notes in those."
            )
        problem = snapshot.problem(parts)
        if problem is not None:
            return voice.error(f"Cannot create {shown}: {problem}.")
        counted = topic_count(["/".join(parts)])  # a daily note does not count
        if counted and topic_count(snapshot.files) >= MAX_FILES:
            return voice.error(
                f"Cannot create {shown}: memory already holds {MAX_FILES} topic files, the limit.\n"
                + voice.fewer_files
            )
        return self.update("/".join(parts), plan, snapshot, voice, None)

    def update(
        self, relative: str, plan: Plan, snapshot: Snapshot, voice: Voice, missing: ToolReply | None
    ) -> ToolReply:
        """Run ``plan`` on a topic file, refusing to grow all topic files past the total limit;
        ``missing`` is the reply when the file turns out to be absent (``None``: create it)."""
        others = sum(snapshot.files.values()) - snapshot.files.get(relative, 0)

        def bounded(current: bytes | None) -> Change:
            if current is None and missing is not None:
                return Change(None, missing)
            change = plan(current)
            total = others + len(change.data or b"")
            if change.data is None or total <= MAX_TOTAL_BYTES:
                return change
            why = f"all topic files together would grow to {total} bytes, over their {MAX_TOTAL_BYTES}-byte"
            return Change(None, voice.error(f"refused — {why} limit. Condense first: {voice.condense}."))

        return ToolReply.of(self.store(relative).update(bounded).reply)

    def remove(self, relatives: Iterable[str]) -> bool:
        """Delete each file; whether any was there."""
        return any([self.store(relative).remove() for relative in relatives])  # a list: remove all

    def rename(self, moves: Iterable[tuple[str, str]]) -> Moved:
        """Move each file in turn; the first that cannot move stops the rest."""
        outcome: Moved = "missing"
        for old, new in moves:
            outcome = self.store(old).rename(f"{FOLDER}/{new}")
            if outcome != "renamed":
                return outcome
        return outcome
