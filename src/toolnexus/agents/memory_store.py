"""Where MEMORY.md is read and written for :mod:`.memory`: one store per backend, each doing
read → edit → write as one indivisible update.

- **Local disk** — writers take ``flock`` on the home directory itself (no lock file is created;
  readers, e.g. ``compose_soul``, never lock), re-read MEMORY.md under the lock, and replace it
  atomically: a temporary file in the same folder, flushed and fsynced, then ``os.replace``.
  Works across threads and processes on one machine (not across NFS clients).
- **S3** — optimistic compare-and-swap: one GET gives the bytes and their ETag together; the PUT
  is conditional (``If-Match: <etag>``, or ``If-None-Match: *`` when creating). On 412/409 the
  edit is re-read and re-applied, at most :data:`MAX_ATTEMPTS` times with jittered exponential
  backoff. Threads sharing one s3fs instance also queue on a process-local lock, so they do not
  spend attempts against each other.
- **Other fsspec filesystems** (``memory://``, …) — no compare-and-swap exists, so updates are
  serialised by a lock per location *within this process only*; the write is one ``pipe_file``.
  Writers in other processes are not coordinated.

Every read is capped at ``MAX_BOOTSTRAP_FILE_BYTES + 1`` bytes, so an outsized file costs no more
than the cap. Only MEMORY.md is ever written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import BootstrapError, location_error, read_error
from .soul import MAX_BOOTSTRAP_FILE_BYTES
from .sources import FsspecSource
from .sources.local import read_capped

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the process-local lock is all there is
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "MAX_ATTEMPTS",
    "MEMORY_FILE",
    "Change",
    "FsspecStore",
    "LocalStore",
    "MemoryStore",
    "S3Store",
    "fsspec_store",
]

MEMORY_FILE = "MEMORY.md"

#: Compare-and-swap attempts on S3 before giving up with a :class:`BootstrapError`. Generous,
#: because under sustained contention the retry count has a long tail: 8 clients appending in a
#: tight loop against moto needed up to ~30 attempts for the unluckiest edit (3.4 on average), and
#: with ~1/8 odds per attempt, 50 attempts would still fail about one edit in a thousand.
MAX_ATTEMPTS = 200

#: Upper bound of the jittered pause between S3 attempts, in seconds (grows with each attempt).
#: Kept short so an unlucky writer retries as often as fresh ones instead of starving behind them;
#: the worst case before the error is about MAX_ATTEMPTS x (one GET + one PUT + 0.1 s).
_BACKOFF_BASE, _BACKOFF_MAX = 0.005, 0.1

_READ_LIMIT = MAX_BOOTSTRAP_FILE_BYTES + 1
_NOFOLLOW, _CLOEXEC = getattr(os, "O_NOFOLLOW", 0), getattr(os, "O_CLOEXEC", 0)
_OPEN_READ = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
_OPEN_TEMP = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
_OPEN_DIR = os.O_RDONLY | _CLOEXEC | getattr(os, "O_DIRECTORY", 0)


@dataclass(frozen=True, slots=True)
class Change:
    """What a command decided after reading MEMORY.md: the bytes to write (``None``: write nothing)
    and the text to send back to the model."""

    data: bytes | None
    reply: str


#: Turns the current MEMORY.md (``None`` if absent; at most cap + 1 bytes) into a :class:`Change`.
#: It may be called more than once (after a conflict), so it must be pure.
Plan = Callable[[bytes | None], Change]


class MemoryStore(Protocol):
    """One home's MEMORY.md. ``update`` must behave as if no other writer ran during it."""

    location: str

    def read(self) -> bytes | None: ...

    def update(self, plan: Plan) -> Change: ...


_process_locks: dict[str, threading.Lock] = {}
_process_locks_guard = threading.Lock()


def _process_lock(key: str) -> threading.Lock:
    """One lock per MEMORY.md in this process; keeps many threads out of the kernel lock queue."""
    with _process_locks_guard:
        return _process_locks.setdefault(key, threading.Lock())


def _storage_error(cause: BaseException, location: str, action: str) -> OSError:
    return read_error(cause, location, MEMORY_FILE, action=action)


class LocalStore:
    """MEMORY.md in a local folder; see the module docstring for the locking and rename rules."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.location = root
        self.path = os.path.join(root, MEMORY_FILE)

    def read(self) -> bytes | None:
        """The first cap + 1 bytes of MEMORY.md; a symlink or non-file there is refused, not followed."""
        try:
            fd = os.open(self.path, _OPEN_READ)
        except FileNotFoundError:
            return None
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise BootstrapError(
                    f"{MEMORY_FILE} in {self.location} is a symlink; memory_tool only edits a regular file"
                ) from error
            raise _storage_error(error, self.location, "read") from error
        try:
            data = read_capped(fd, MAX_BOOTSTRAP_FILE_BYTES).data
        except OSError as error:
            raise _storage_error(error, self.location, "read") from error
        finally:
            os.close(fd)
        if data is None:
            raise BootstrapError(f"{MEMORY_FILE} in {self.location} is not a regular file; not editing it")
        return data

    def update(self, plan: Plan) -> Change:
        with self._locked() as dir_fd:
            change = plan(self.read())
            if change.data is not None:
                self._replace(change.data, dir_fd)
            return change

    @contextlib.contextmanager
    def _locked(self) -> Iterator[int]:
        """Exclusive among writers in all processes: ``flock`` on the home directory's own fd."""
        with _process_lock(self.path):
            try:
                dir_fd = os.open(self.root, _OPEN_DIR)
            except OSError as error:
                raise _storage_error(error, self.location, "lock the home of") from error
            try:
                if fcntl is not None:
                    fcntl.flock(dir_fd, fcntl.LOCK_EX)
                yield dir_fd
            finally:
                os.close(dir_fd)  # releases the flock

    def _replace(self, data: bytes, dir_fd: int) -> None:
        """Write a sibling temp file, fsync it, rename it over MEMORY.md; on failure remove it."""
        temp = os.path.join(self.root, f".{MEMORY_FILE}.{secrets.token_hex(8)}.tmp")
        try:
            fd = os.open(temp, _OPEN_TEMP, 0o666)
            try:
                with contextlib.suppress(FileNotFoundError):
                    os.fchmod(fd, stat.S_IMODE(os.stat(self.path, follow_symlinks=False).st_mode))
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, self.path)
        except BaseException as error:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            if isinstance(error, OSError):
                raise _storage_error(error, self.location, "write") from error
            raise
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)  # make the rename itself durable


class FsspecStore:
    """MEMORY.md on an fsspec filesystem without compare-and-swap: serialised in this process only."""

    def __init__(self, home: FsspecSource) -> None:
        self.fs = home.fs
        self.path = home.path_of(MEMORY_FILE)
        self.location = home.location
        self._key = str(self.fs.unstrip_protocol(self.path))

    def read(self) -> bytes | None:
        try:
            return bytes(self.fs.cat_file(self.path, start=0, end=_READ_LIMIT))
        except FileNotFoundError:
            return None
        except Exception as error:
            raise _storage_error(error, self.location, "read") from error

    def update(self, plan: Plan) -> Change:
        with _process_lock(self._key):
            change = plan(self.read())
            if change.data is not None:
                try:
                    self.fs.pipe_file(self.path, change.data)
                except Exception as error:
                    raise _storage_error(error, self.location, "write") from error
            return change


#: S3 error codes meaning "someone else changed MEMORY.md since we read it": re-read and retry.
_CONFLICT_CODES = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey"})


def _is_conflict(error: BaseException) -> bool:
    """s3fs translates ClientErrors but keeps the original as ``__cause__``."""
    for candidate in (error, error.__cause__):
        response = getattr(candidate, "response", None)
        if isinstance(response, dict) and response.get("Error", {}).get("Code") in _CONFLICT_CODES:
            return True
    return False


class S3Store:
    """MEMORY.md on S3 (s3fs): conditional PUTs against the ETag of the bytes that were read."""

    def __init__(self, home: FsspecSource) -> None:
        self.fs = home.fs
        self.path = home.path_of(MEMORY_FILE)
        self.bucket, self.key, _ = self.fs.split_path(self.path)
        self.location = home.location
        # Writers sharing this s3fs instance (one client) queue here; other clients meet at the CAS.
        self._lock = _process_lock(f"{id(self.fs)}:{self.path}")

    def _run(self, coroutine: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        from fsspec.asyn import sync  # noqa: PLC0415  (fsspec is only needed for remote homes)

        return sync(self.fs.loop, coroutine, *args, **kwargs)

    async def _get(self) -> tuple[bytes | None, str | None]:
        try:
            response = await self.fs._call_s3("get_object", Bucket=self.bucket, Key=self.key)
        except FileNotFoundError:
            return None, None
        data = b""
        async with response["Body"] as body:
            while len(data) < _READ_LIMIT:
                chunk = await body.read(_READ_LIMIT - len(data))
                if not chunk:
                    break
                data += chunk
        return data, str(response["ETag"])

    def read_versioned(self) -> tuple[bytes | None, str | None]:
        """MEMORY.md's first cap + 1 bytes and the ETag of that very object, from one GET."""
        try:
            result: tuple[bytes | None, str | None] = self._run(self._get)
        except Exception as error:
            raise _storage_error(error, self.location, "read") from error
        return result

    def read(self) -> bytes | None:
        return self.read_versioned()[0]

    def put_if(self, data: bytes, etag: str | None) -> bool:
        """PUT only if MEMORY.md is still the version read (or still absent); False on a conflict."""
        condition = {"IfMatch": etag} if etag is not None else {"IfNoneMatch": "*"}
        try:
            target = {"Bucket": self.bucket, "Key": self.key}
            self._run(self.fs._call_s3, "put_object", Body=data, **target, **condition)
        except Exception as error:
            if _is_conflict(error):
                return False
            raise _storage_error(error, self.location, "write") from error
        finally:
            self.fs.invalidate_cache(self.path)
        return True

    def update(self, plan: Plan) -> Change:
        with self._lock:
            return self._update(plan)

    def _update(self, plan: Plan) -> Change:
        for attempt in range(MAX_ATTEMPTS):
            current, etag = self.read_versioned()
            change = plan(current)
            if change.data is None or self.put_if(change.data, etag):
                return change
            time.sleep(random.uniform(0, min(_BACKOFF_MAX, _BACKOFF_BASE * 2**attempt)))
        error = BootstrapError(
            f"cannot write {MEMORY_FILE} in {self.location}: it changed under every one of "
            f"{MAX_ATTEMPTS} attempts (other writers are busy); try again"
        )
        error.errno = errno.EBUSY
        raise error


def fsspec_store(
    source: FsspecSource, name: str = MEMORY_FILE, *, single_writer: bool = False
) -> MemoryStore:
    """How ``FsspecSource.writer`` writes: one fresh lookup of the home, which must be a folder
    (an S3 prefix with objects); then a conditional-PUT store on S3, a process-local lock elsewhere."""
    fs, home, location = source.fs, source.path, source.location
    fs.invalidate_cache(home)
    try:
        info = fs.info(home)
    except FileNotFoundError:
        raise location_error(FileNotFoundError, location, "no such persona home") from None
    except Exception as error:
        raise read_error(error, location, None) from error
    if info.get("type") == "file":
        raise source.not_a_folder()
    if callable(getattr(fs, "_call_s3", None)):
        return S3Store(source)
    return FsspecStore(source)
