"""A file on an fsspec filesystem written without any condition: for ``memory://`` (which no
other process can reach) and for homes whose owner declared ``single_writer=True``.

Updates are serialised by a lock per file *within this process only*; the write is one
``pipe_file``. This is safe exactly when no other process writes the file.
"""

from __future__ import annotations

from typing import Any

from toolnexus._fs import is_empty_range_error
from toolnexus.stores.base import (
    MEMORY_FILE,
    READ_LIMIT,
    Change,
    Moved,
    Plan,
    process_lock,
    storage_error,
)
from toolnexus.stores.folders import fsspec_listing, storage_action

__all__ = ["FsspecStore"]


class FsspecStore:
    """A file on an fsspec filesystem, serialised in this process only (see the module docstring)."""

    def __init__(self, home: Any, name: str = MEMORY_FILE) -> None:
        self.home = home
        self.fs = home.fs
        self.name = name
        self.path = home.path_of(name)
        self.location = home.location
        self._key = str(self.fs.unstrip_protocol(self.path))

    def read(self) -> bytes | None:
        try:
            return bytes(self.fs.cat_file(self.path, start=0, end=READ_LIMIT))
        except FileNotFoundError:
            return None
        except Exception as error:
            if is_empty_range_error(error):
                return b""
            raise storage_error(error, self.location, self.name, "read") from error

    def update(self, plan: Plan) -> Change:
        with process_lock(self._key):
            change = plan(self.read())
            if change.data is not None:
                try:
                    self.fs.pipe_file(self.path, change.data)
                except Exception as error:
                    raise storage_error(error, self.location, self.name, "write") from error
                finally:
                    self.fs.invalidate_cache(self.path)
            return change

    def file(self, name: str) -> FsspecStore:
        """The store of another file of the same home."""
        return FsspecStore(self.home, name)

    def listing(self, folder: str) -> dict[str, int]:
        return fsspec_listing(self.home, folder)

    def remove(self) -> bool:
        with process_lock(self._key):
            if self.read() is None:
                return False
            with storage_action(self.fs, self.location, self.name, "delete", self.path):
                self.fs.rm_file(self.path)
            return True

    def rename(self, name: str) -> Moved:
        target = self.file(name)
        with process_lock(self._key):
            if self.read() is None:
                return "missing"
            if target.read() is not None:
                return "exists"
            with storage_action(self.fs, self.location, self.name, "rename", self.path, target.path):
                self.fs.mv(self.path, target.path)
            return "renamed"
