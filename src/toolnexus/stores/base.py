"""What every store shares: the edit plan, the store protocol, per-process locks, and the
compare-and-swap retry loop that S3, Azure Blob and GCS stores run over their own conditions —
exactly once, also when a write's answer is lost (see :mod:`.lineage`) — and what a store offers
beyond one file (:class:`.folders.FolderStore`: the topic files of ``memory/``)."""

from __future__ import annotations

import errno
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from toolnexus.composer.rules import MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.errors import BootstrapError, describe, detail, read_error
from toolnexus.stores.folders import FolderStore, Moved, fsspec_listing, rename_by_copy, storage_action
from toolnexus.stores.lineage import Stored, applied, lineage_after, new_edit_id

__all__ = [
    "MAX_ATTEMPTS",
    "MEMORY_FILE",
    "READ_LIMIT",
    "Change",
    "CompareAndSwapStore",
    "FolderStore",
    "MemoryStore",
    "Moved",
    "Plan",
    "Stored",
    "process_lock",
    "storage_error",
]

MEMORY_FILE = "MEMORY.md"

#: Every read is capped here, so an outsized file costs no more than the cap.
READ_LIMIT = MAX_BOOTSTRAP_FILE_BYTES + 1

#: Compare-and-swap attempts before giving up with a :class:`BootstrapError`. Generous, because
#: under sustained contention the retry count has a long tail: 8 clients appending in a tight loop
#: against moto needed up to ~30 attempts for the unluckiest edit (3.4 on average), and with ~1/8
#: odds per attempt, 50 attempts would still fail about one edit in a thousand.
MAX_ATTEMPTS = 200

#: Upper bound of the jittered pause between attempts, in seconds (grows with each attempt). Kept
#: short so an unlucky writer retries as often as fresh ones instead of starving behind them; the
#: worst case before the error is about MAX_ATTEMPTS x (one read + one write + 0.1 s).
_BACKOFF_BASE, _BACKOFF_MAX = 0.005, 0.1


@dataclass(frozen=True, slots=True)
class Change:
    """What a command decided after reading the file: the bytes to write (``None``: write
    nothing) and the text to send back to the model."""

    data: bytes | None
    reply: str


#: Turns the current file (``None`` if absent; at most cap + 1 bytes) into a :class:`Change`.
#: It may be called more than once (after a conflict), so it must be pure.
Plan = Callable[[bytes | None], Change]


class MemoryStore(Protocol):
    """One file (``name``, MEMORY.md by default) in one home. ``update`` must behave as if no
    other writer ran during it."""

    location: str
    name: str

    def read(self) -> bytes | None: ...

    def update(self, plan: Plan) -> Change: ...


_process_locks: dict[str, threading.Lock] = {}
_process_locks_guard = threading.Lock()


def process_lock(key: str) -> threading.Lock:
    """One lock per file in this process; keeps many threads out of the kernel lock queue and
    keeps threads sharing one client from spending compare-and-swap attempts on each other."""
    with _process_locks_guard:
        return _process_locks.setdefault(key, threading.Lock())


def _pause(attempt: int) -> None:
    """The jittered pause before compare-and-swap attempt ``attempt + 1``."""
    time.sleep(random.uniform(0, min(_BACKOFF_MAX, _BACKOFF_BASE * 2**attempt)))


def storage_error(cause: BaseException, location: str, name: str, action: str) -> OSError:
    return read_error(cause, location, name, action=action)


class CompareAndSwapStore:
    """A file on an object store whose writes can be made conditional on the version read.

    Subclasses provide three primitives on any path of the filesystem — :meth:`get` (bytes and
    version in one consistent read), :meth:`put` (write only if the object is still at
    ``version``, or still absent for ``None``; ``False`` on a conflict) and :meth:`delete` — and
    name their conditions; :meth:`put_with_lineage` (and a :class:`.Stored` from :meth:`get`)
    adds the lineage that makes an edit whose answer was lost exactly-once under contention. The
    update is read → plan → conditional write, retried on conflict (after checking that the
    conflict is not this edit's own earlier attempt).
    Before each update the ``probe`` it was given (in practice :func:`.probe.require_enforced`,
    which runs once per bucket and process) checks that the server really refuses a stale write;
    a server that ignores the conditions is refused. The probe is handed in, not imported: it is
    built on this class.
    """

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
        #: The fsspec filesystem the store works through (``None`` for a native client).
        self.fs: Any = getattr(home, "fs", None)
        self.probe = probe
        #: Checks before a rename that the server enforces conditional deletes (see :mod:`.probe`).
        self.delete_probe = delete_probe
        self.home = home
        self.name = name
        self.path: str = home.path_of(name)
        self.location: str = home.location
        # Writers sharing one client queue here; others meet at the CAS.
        self._lock = process_lock(f"{id(self.client)}:{self.path}")

    @property
    def client(self) -> Any:
        """What talks to the server: the filesystem, or a native client (an obstore store)."""
        return self.fs

    def server_key(self) -> tuple[str, str, str]:
        """Which server and bucket the probe's verdict holds for: the client's class, fsspec's
        token of its options (endpoint, credentials), the bucket."""
        token = str(getattr(self.fs, "_fs_token", id(self.fs)))
        return type(self.fs).__qualname__, token, self.bucket()

    def forget(self, path: str) -> None:
        """Drop whatever the client cached about ``path`` (s3fs's listings) after a write."""
        self.fs.invalidate_cache(path)

    # The primitives, on any path (the probe uses them on its own object).
    def get(self, path: str) -> Stored | tuple[bytes | None, str | None]:
        """The object's bytes (first cap + 1) and version from one consistent read: a
        ``(data, version)`` pair, or a :class:`.Stored` that also carries the lineage kept with
        the object (see :meth:`put_with_lineage`)."""
        raise NotImplementedError

    def put(self, path: str, data: bytes, version: str | None) -> bool:
        """Write ``data`` only if the object is still at ``version`` (``None``: still absent);
        ``False`` on a conflict."""
        raise NotImplementedError

    def put_with_lineage(self, path: str, data: bytes, version: str | None, lineage: str) -> bool:
        """:meth:`put`, keeping ``lineage`` in the object's metadata, where :meth:`get` returns it.

        Optional: by default the lineage is dropped, and an edit whose answer was lost is then
        settled by comparing the stored bytes with the bytes sent (:mod:`.lineage` says what that
        cannot tell apart). The built-in S3, Azure Blob and GCS stores keep it.
        """
        return self.put(path, data, version)

    def delete(self, path: str) -> None:
        raise NotImplementedError

    def bucket(self) -> str:
        """The bucket or container: the unit the probe's verdict is cached for."""
        return str(self.fs.split_path(self.path)[0])

    def read_stored(self) -> Stored:
        """The file's first cap + 1 bytes, the version of that very object and its lineage."""
        try:
            got = self.get(self.path)
        except Exception as error:
            raise storage_error(error, self.location, self.name, "read") from error
        return got if isinstance(got, Stored) else Stored(*got)

    def read_versioned(self) -> tuple[bytes | None, str | None]:
        """The file's first cap + 1 bytes and the version of that very object."""
        stored = self.read_stored()
        return stored.data, stored.version

    def read(self) -> bytes | None:
        return self.read_stored().data

    def put_if(self, data: bytes, version: str | None, lineage: str | None = None) -> bool:
        """Write only if the file is still the version read (or still absent); False on conflict."""
        try:
            if lineage is None:
                return self.put(self.path, data, version)
            return self.put_with_lineage(self.path, data, version, lineage)
        except Exception as error:
            raise storage_error(error, self.location, self.name, "write") from error
        finally:
            self.forget(self.path)

    def update(self, plan: Plan) -> Change:
        self.probe(self)
        with self._lock:
            return self._update(plan)

    def _update(self, plan: Plan) -> Change:
        """Read → plan → conditional write, until a write lands; after a conflict or a failed
        write, the fresh read first tells whether this edit was applied after all."""
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
            time.sleep(random.uniform(0, min(_BACKOFF_MAX, _BACKOFF_BASE * 2**attempt)))
            over, stored = stored, self.read_stored()
            outcome = applied(stored, edit, over, change.data)
            if outcome:
                return change  # a retry of our own write met the version it had written
            if outcome is None:
                raise self._unknown_outcome("another writer's edits followed it")
        busy = BootstrapError(
            f"cannot write {self.name} in {self.location}: it changed under every one of "
            f"{MAX_ATTEMPTS} attempts (other writers are busy); try again"
        )
        busy.errno = errno.EBUSY
        raise busy

    def _settle_failed_write(self, error: OSError, edit: str, over: Stored, data: bytes) -> None:
        """A write raised, so it may or may not have been applied: return if it was, else raise
        ``error`` (not applied; the SDK has already retried) or say that nobody can tell."""
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

    def _unknown_outcome(self, why: str) -> BootstrapError:
        error = BootstrapError(
            f"cannot tell whether the edit of {describe(self.location, self.name)} was applied: "
            f"{why}. It was not repeated; view {self.name} before trying again."
        )
        error.errno = errno.EIO
        return error

    # Beyond one file: the home's other files (topic files), deletes and renames.
    def delete_if(self, path: str, version: str) -> bool:
        """Delete the object only if it is still at ``version``; ``False`` on a conflict."""
        raise NotImplementedError

    def file(self, name: str) -> CompareAndSwapStore:
        return type(self)(self.home, name, probe=self.probe, delete_probe=self.delete_probe)

    def listing(self, folder: str) -> dict[str, int]:
        return fsspec_listing(self.home, folder)

    def remove(self) -> bool:
        """An unconditional delete: whatever edit came before it, the file is gone after it."""
        self.probe(self)
        with self._lock:
            if self.read_versioned()[0] is None:
                return False
            with storage_action(self.fs, self.location, self.name, "delete", self.path):
                self.delete(self.path)
            return True

    def rename(self, name: str) -> Moved:
        """Copy to ``name`` (must not exist), then delete the original *at the version copied*
        (see :func:`.folders.rename_by_copy`), checking first that the server enforces that."""
        self.probe(self)
        if self.delete_probe is not None:
            self.delete_probe(self)
        with self._lock:
            return rename_by_copy(self, self.file(name), MAX_ATTEMPTS, _pause)

    def delete_at(self, version: str) -> bool:
        """:meth:`delete_if` on this file, a failure naming it."""
        with storage_action(self.fs, self.location, self.name, "delete", self.path):
            return self.delete_if(self.path, version)
