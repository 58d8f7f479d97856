"""Personas held in a mapping — for tests, and for personas kept in a database or a cache.

>>> from toolnexus.agents import DictSource, compose_soul
>>> compose_soul(DictSource({"SOUL.md": "You are Aster."}))
('## SOUL.md\\n\\nYou are Aster.', ['SOUL.md'])
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING

from toolnexus._fs import is_hidden
from toolnexus.composer.rules import MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.errors import BootstrapError
from toolnexus.sources.base import Entry, Match, Reading, SourceBase, read_only

if TYPE_CHECKING:
    from toolnexus.stores.base import Change, Moved, Plan


def _as_bytes(location: str, name: str, value: object) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise BootstrapError(f"{name} in {location} is a {type(value).__name__}, not bytes or str")


class DictSource(SourceBase):
    """Bootstrap files from a mapping of name to ``bytes`` (or ``str``, as UTF-8), read on every
    composition; ``memory_tool`` writes a mutable one under a lock in this process."""

    def __init__(self, files: Mapping[str, bytes | str], location: str = "dict://persona") -> None:
        self.files = files
        self.location = location
        self._write_lock = threading.Lock()

    def _entry(self, name: str, limit: int) -> Entry:
        data = _as_bytes(self.location, name, self.files[name])
        return Entry(data[: limit + 1], len(data))

    def read_entries(self, names: Sequence[str], limit: int, *, exact_sizes: bool = False) -> Reading:
        entries = {name: self._entry(name, limit) for name in names if name in self.files}
        return Reading(self.location, entries)

    def read_folder(self, folder: str, limit: int, *, match: Match | None = None) -> Reading:
        prefix = f"{folder}/"
        paths = sorted(key[len(prefix) :] for key in self.files if key.startswith(prefix))
        below = [prefix + path for path in paths if not is_hidden(path) and (match is None or match(path))]
        return Reading(self.location, {name: self._entry(name, limit) for name in below})

    def writer(self, name: str = "MEMORY.md", *, single_writer: bool = False) -> DictStore:
        if not isinstance(self.files, MutableMapping):
            why = "its mapping is read-only; pass a dict to write memory into it"
            raise read_only(self.location, f"a {type(self.files).__name__}", why)
        return DictStore(self.files, self.location, name, self._write_lock)


class DictStore:
    """``name`` in a mutable mapping: read → plan → write under the source's lock (this process)."""

    def __init__(
        self, files: MutableMapping[str, bytes | str], location: str, name: str, lock: threading.Lock
    ) -> None:
        self.files = files
        self.location = location
        self.name = name
        self._lock = lock

    def read(self) -> bytes | None:
        if self.name not in self.files:
            return None
        return _as_bytes(self.location, self.name, self.files[self.name])[: MAX_BOOTSTRAP_FILE_BYTES + 1]

    def update(self, plan: Plan) -> Change:
        with self._lock:
            change = plan(self.read())
            if change.data is not None:
                self.files[self.name] = change.data
            return change

    def file(self, name: str) -> DictStore:
        return DictStore(self.files, self.location, name, self._lock)

    def listing(self, folder: str) -> dict[str, int]:
        prefix = f"{folder}/"
        return {
            key: len(_as_bytes(self.location, key, value))
            for key, value in list(self.files.items())
            if key.startswith(prefix) and not is_hidden(key)
        }

    def remove(self) -> bool:
        with self._lock:
            return self.files.pop(self.name, None) is not None

    def rename(self, name: str) -> Moved:
        with self._lock:
            if self.name not in self.files:
                return "missing"
            if name in self.files:
                return "exists"
            self.files[name] = self.files.pop(self.name)
            return "renamed"
