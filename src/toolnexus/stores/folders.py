"""What the object stores share for a home's other files (the memory tool's topic files): a
fresh listing, a storage step whose failure names the file, and a rename made of a copy and a
conditional delete. Plain functions over any store, below :mod:`.base` (which uses them)."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Callable, Iterator
from typing import Any, Literal, Protocol, TypeAlias

from toolnexus._fs import fsspec_files
from toolnexus.composer.rules import MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.errors import BootstrapError, read_error

__all__ = ["FolderStore", "Moved", "fsspec_listing", "rename_by_copy", "storage_action"]

#: How a rename ended: done, no such file, or the destination already exists (nothing moved).
Moved: TypeAlias = Literal["renamed", "missing", "exists"]


class FolderStore(Protocol):
    """A :class:`~.base.MemoryStore` that also reaches the other files of its home — what topic
    files need. Every built-in store is one; a store of your own without these methods still
    serves MEMORY.md and USER.md. ``name`` may hold folders (``memory/projects/aster.md``); a
    write makes missing folders.
    """

    location: str
    name: str

    def read(self) -> bytes | None: ...

    def update(self, plan: Callable[[bytes | None], Any]) -> Any:
        """As :meth:`.base.MemoryStore.update`."""
        ...

    def file(self, name: str) -> FolderStore:
        """The store of another file of the same home, with the same guarantees."""
        ...

    def listing(self, folder: str) -> dict[str, int]:
        """Every file below ``folder`` (hidden names left out): ``{path relative to the home: size}``."""
        ...

    def remove(self) -> bool:
        """Delete the file; ``False`` if it was not there."""
        ...

    def rename(self, name: str) -> Moved:
        """Move the file to ``name`` in the same home, never over an existing file."""
        ...


@contextlib.contextmanager
def storage_action(fs: Any, location: str, name: str, action: str, *paths: str) -> Iterator[None]:
    """Any failure inside becomes the error naming the file and the location; the filesystem's
    listing cache of ``paths`` is dropped afterwards, whatever happened."""
    try:
        yield
    except Exception as error:
        raise read_error(error, location, name, action=action) from error
    finally:
        for path in paths if fs is not None else ():  # a native client (obstore) caches nothing
            fs.invalidate_cache(path)


def fsspec_listing(home: Any, folder: str) -> dict[str, int]:
    """The files below ``folder`` of an fsspec home, by path relative to the home: fresh, no
    hidden names."""
    try:
        files = fsspec_files(home.fs, home.path_of(folder))
    except Exception as error:
        raise read_error(error, home.location, folder, action="list") from error
    return {f"{folder}/{path}": size for path, size in files.items()}


def rename_by_copy(store: Any, target: Any, attempts: int, pause: Callable[[int], None]) -> Moved:
    """Move a compare-and-swap ``store``'s file to ``target``'s: a copy that must not overwrite
    anything, then a delete *at the version copied*.

    If the original changed in between, the copy is taken back (when it still holds exactly what
    was copied) and the rename starts over, so an edit made meanwhile is never lost; a reader
    between the two steps sees both files, never neither. ``"renamed"``, ``"missing"`` or
    ``"exists"`` (nothing moved).
    """
    for attempt in range(attempts):
        data, version = store.read_versioned()
        if data is None or version is None:
            return "missing"
        if len(data) > MAX_BOOTSTRAP_FILE_BYTES:
            raise BootstrapError(
                f"cannot rename {store.name} in {store.location}: it is over "
                f"{MAX_BOOTSTRAP_FILE_BYTES} bytes (written outside memory_tool)"
            )
        if not target.put_if(data, None):
            return "exists"
        if store.delete_at(version):
            return "renamed"
        copied, copy_version = target.read_versioned()
        if copied == data and copy_version is not None:
            target.delete_at(copy_version)
        pause(attempt)
    error = BootstrapError(
        f"cannot rename {store.name} in {store.location} to {target.name}: it was edited during every "
        f"one of {attempts} attempts (other writers are busy); nothing was moved, try again"
    )
    error.errno = errno.EBUSY
    raise error
