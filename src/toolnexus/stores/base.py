"""What every store shares: the edit plan, the store protocols, per-process locks, and the
compare-and-swap loop that the S3, Azure Blob, GCS and obstore stores run over their own
conditional put and delete — exactly once, also when a write's answer is lost (:mod:`.lineage`)."""

from __future__ import annotations

import contextlib
import errno
import random
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias

from toolnexus._fs import fsspec_files
from toolnexus.composer.rules import MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.errors import BootstrapError, _build, describe, detail, read_error
from toolnexus.stores.lineage import Stored, applied, lineage_after, new_edit_id

MEMORY_FILE = "MEMORY.md"

#: Every read is capped here, so an outsized file costs no more than the cap.
READ_LIMIT = MAX_BOOTSTRAP_FILE_BYTES + 1

#: Compare-and-swap attempts before giving up: 8 clients appending in a tight loop against moto
#: needed up to ~30 for the unluckiest edit; 50 would still fail about one edit in a thousand.
MAX_ATTEMPTS = 200

#: Bounds of the jittered pause between attempts (s): short, so an unlucky writer is not starved.
_BACKOFF_BASE, _BACKOFF_MAX = 0.005, 0.1

#: How a rename ended: done, no such file, or the destination already exists (nothing moved).
Moved: TypeAlias = Literal["renamed", "missing", "exists"]


@dataclass(frozen=True, slots=True)
class Change:
    """What a command decided after reading the file: the bytes to write (``None``: nothing), the reply."""

    data: bytes | None
    reply: str


#: Turns the current file (``None`` if absent; at most cap + 1 bytes) into a :class:`Change`.
#: It may be called more than once (after a conflict), so it must be pure.
Plan = Callable[[bytes | None], Change]


class MemoryStore(Protocol):
    """One file (``name``) in one home; ``update`` behaves as if no other writer ran during it."""

    location: str
    name: str

    def read(self) -> bytes | None: ...

    def update(self, plan: Plan) -> Change: ...


class FolderStore(MemoryStore, Protocol):
    """A :class:`MemoryStore` that also reaches the other files of its home (topic files; ``name``
    may hold folders, made by a write), as every built-in store does. ``listing``: ``{path relative
    to the home: size}``, no hidden names; ``remove``: ``False`` if absent; ``rename``: never over a file."""

    def file(self, name: str) -> FolderStore: ...

    def listing(self, folder: str) -> dict[str, int]: ...

    def remove(self) -> bool: ...

    def rename(self, name: str) -> Moved: ...


_process_locks: dict[Hashable, threading.Lock] = {}
_process_locks_guard = threading.Lock()


def process_lock(key: Hashable) -> threading.Lock:
    """One lock per key (a file, a probe) in this process: threads sharing a client queue here."""
    with _process_locks_guard:
        return _process_locks.setdefault(key, threading.Lock())


def _pause(attempt: int) -> None:
    time.sleep(random.uniform(0, min(_BACKOFF_MAX, _BACKOFF_BASE * 2**attempt)))


@contextlib.contextmanager
def storage_action(fs: Any, location: str, name: str, action: str, *paths: str) -> Iterator[None]:
    """A failure inside names the file and location; ``paths``' listing caches are dropped after."""
    try:
        yield
    except Exception as error:
        raise read_error(error, location, name, action=action) from error
    finally:
        for path in paths if fs is not None else ():
            fs.invalidate_cache(path)


class HomeFile:
    """A file of a home on a filesystem (``home.fs``), read by :meth:`get`; a subclass sets the
    ``_lock`` that writers of this file take in this process."""

    _lock: threading.Lock

    def __init__(self, home: Any, name: str = MEMORY_FILE) -> None:
        self.fs: Any = getattr(home, "fs", None)
        self.home, self.name, self.location = home, name, home.location
        self.path: str = home.path_of(name)

    def get(self, path: str) -> Stored | tuple[bytes | None, str | None]:
        """The first cap + 1 bytes and their version from one read (and the lineage, if any)."""
        raise NotImplementedError

    def delete(self, path: str) -> None:
        raise NotImplementedError

    def read_stored(self) -> Stored:
        """This file's :meth:`get`, a failure naming it."""
        try:
            return Stored(*self.get(self.path))
        except Exception as error:
            raise read_error(error, self.location, self.name, action="read") from error

    def read_versioned(self) -> tuple[bytes | None, str | None]:
        return self.read_stored()[:2]

    def read(self) -> bytes | None:
        return self.read_stored().data

    def listing(self, folder: str) -> dict[str, int]:
        try:
            files = fsspec_files(self.fs, self.home.path_of(folder))
        except Exception as error:
            raise read_error(error, self.location, folder, action="list") from error
        return {f"{folder}/{path}": size for path, size in files.items()}

    def remove(self) -> bool:
        """An unconditional delete: whatever edit came before it, the file is gone after it."""
        with self._lock:
            if self.read() is None:
                return False
            with storage_action(self.fs, self.location, self.name, "delete", self.path):
                self.delete(self.path)
            return True


class CompareAndSwapStore(HomeFile):
    """A file on an object store whose writes are conditional on the version read. Subclasses
    write the primitives (:meth:`get`, :meth:`put`, :meth:`delete`; optionally :meth:`put_with_lineage`,
    :meth:`delete_if`); ``probe`` (built on this class) first checks that the server refuses a stale write."""

    #: How the conditions are spelled, for messages: (must-not-exist, must-match).
    conditions: tuple[str, str] = ("", "")
    #: A version no real object can have, for the probe's stale write.
    stale_version: str = ""

    def __init__(
        self,
        home: Any,
        name: str = MEMORY_FILE,
        *,
        probe: Callable[[CompareAndSwapStore], None],
        delete_probe: Callable[[CompareAndSwapStore], None] | None = None,
    ) -> None:
        super().__init__(home, name)
        self.probe, self.delete_probe = probe, delete_probe
        self._lock = process_lock(f"{id(self.client)}:{self.path}")

    @property
    def client(self) -> Any:
        """What talks to the server: the filesystem, or a native client (an obstore store)."""
        return self.fs

    def server_key(self) -> tuple[str, str, str]:
        """Which server and bucket the probe's verdict holds for (client class, options, bucket)."""
        token = str(getattr(self.fs, "_fs_token", id(self.fs)))
        return type(self.fs).__qualname__, token, self.bucket()

    def bucket(self) -> str:
        """The bucket or container: the unit the probe's verdict is cached for."""
        return str(self.fs.split_path(self.path)[0])

    def put(self, path: str, data: bytes, version: str | None) -> bool:
        """Write only if still at ``version`` (``None``: absent); ``False`` on a conflict."""
        raise NotImplementedError

    def put_with_lineage(self, path: str, data: bytes, version: str | None, lineage: str) -> bool:
        """:meth:`put`, keeping ``lineage`` in the metadata; dropped by default (bytes then decide)."""
        return self.put(path, data, version)

    def delete_if(self, path: str, version: str) -> bool:
        """Delete the object only if it is still at ``version``; ``False`` on a conflict."""
        raise NotImplementedError

    def put_if(self, data: bytes, version: str | None, lineage: str | None = None) -> bool:
        """This file's :meth:`put` (or :meth:`put_with_lineage`), a failure naming it."""
        with storage_action(self.fs, self.location, self.name, "write", self.path):
            if lineage is None:
                return self.put(self.path, data, version)
            return self.put_with_lineage(self.path, data, version, lineage)

    def delete_at(self, version: str) -> bool:
        """This file's :meth:`delete_if`, a failure naming it."""
        with storage_action(self.fs, self.location, self.name, "delete", self.path):
            return self.delete_if(self.path, version)

    def update(self, plan: Plan) -> Change:
        """Read → plan → conditional write until one lands; after a conflict or a failed write,
        the fresh read first tells whether this edit was applied after all."""
        self.probe(self)
        with self._lock:
            edit = new_edit_id()
            stored = self.read_stored()
            for attempt in range(MAX_ATTEMPTS):
                change = plan(stored.data)
                if change.data is None:
                    return change
                try:
                    if self.put_if(change.data, stored.version, lineage_after(stored, edit)):
                        return change
                except OSError as failed:
                    self._settle_failed_write(failed, edit, stored, change.data)
                    return change
                _pause(attempt)
                over, stored = stored, self.read_stored()
                outcome = applied(stored, edit, over, change.data)
                if outcome:
                    return change  # a retry of our own write met the version it had written
                if outcome is None:
                    raise self._unknown_outcome("another writer's edits followed it")
        raise _build(
            BootstrapError,
            f"cannot write {self.name} in {self.location}: it changed under every one of "
            f"{MAX_ATTEMPTS} attempts (other writers are busy); try again",
            errno.EBUSY,
        )

    def _settle_failed_write(self, error: OSError, edit: str, over: Stored, data: bytes) -> None:
        """A write raised and may have been applied: return if it was, raise ``error`` if not (the
        SDK has retried already), or say that nobody can tell."""
        failure = f"the write failed ({detail(error.__cause__ or error)})"
        try:
            now = self.read_stored()
        except OSError:
            if isinstance(error, PermissionError):
                raise error from error.__cause__  # refused, not lost: the server said no
            raise self._unknown_outcome(f"{failure} and so did reading it back") from error
        outcome = applied(now, edit, over, data)
        if outcome is None:
            raise self._unknown_outcome(failure) from error
        if not outcome:
            raise error

    def _unknown_outcome(self, why: str) -> OSError:
        return _build(
            BootstrapError,
            f"cannot tell whether the edit of {describe(self.location, self.name)} was applied: "
            f"{why}. It was not repeated; view {self.name} before trying again.",
            errno.EIO,
        )

    def file(self, name: str) -> CompareAndSwapStore:
        return type(self)(self.home, name, probe=self.probe, delete_probe=self.delete_probe)

    def remove(self) -> bool:
        self.probe(self)
        return super().remove()

    def rename(self, name: str) -> Moved:
        """A copy that must not overwrite anything, then a delete *at the version copied* (checked
        by the probe); if the original changed in between, the copy is taken back and the rename
        starts over: no edit lost, and a reader between the steps sees both files, never neither."""
        self.probe(self)
        if self.delete_probe is not None:
            self.delete_probe(self)
        target = self.file(name)
        with self._lock:
            for attempt in range(MAX_ATTEMPTS):
                data, version = self.read_versioned()
                if data is None or version is None:
                    return "missing"
                if len(data) > MAX_BOOTSTRAP_FILE_BYTES:
                    raise BootstrapError(
                        f"cannot rename {self.name} in {self.location}: it is over "
                        f"{MAX_BOOTSTRAP_FILE_BYTES} bytes (written outside memory_tool)"
                    )
                if not target.put_if(data, None):
                    return "exists"
                if self.delete_at(version):
                    return "renamed"
                copied, copy_version = target.read_versioned()
                if copied == data and copy_version is not None:
                    target.delete_at(copy_version)
                _pause(attempt)
        raise _build(
            BootstrapError,
            f"cannot rename {self.name} in {self.location} to {name}: it was edited during every "
            f"one of {MAX_ATTEMPTS} attempts (other writers are busy); nothing was moved, try again",
            errno.EBUSY,
        )
