"""A file in a local folder: writers take ``flock`` on the home directory itself (no lock file
is created; readers, e.g. ``compose_soul``, never lock), re-read the file under the lock, and
replace it atomically: a temporary file in the same folder, flushed and fsynced, then
``os.replace``. Works across threads and processes on one machine (not across NFS clients)."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator

from toolnexus._fs import read_capped
from toolnexus.composer.rules import MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.errors import BootstrapError
from toolnexus.stores.base import MEMORY_FILE, Change, Plan, process_lock, storage_error

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the process-local lock is all there is
    fcntl = None  # type: ignore[assignment]

__all__ = ["LocalStore"]

_NOFOLLOW, _CLOEXEC = getattr(os, "O_NOFOLLOW", 0), getattr(os, "O_CLOEXEC", 0)
_OPEN_READ = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0)
_OPEN_TEMP = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
_OPEN_DIR = os.O_RDONLY | _CLOEXEC | getattr(os, "O_DIRECTORY", 0)


class LocalStore:
    """A file (MEMORY.md unless ``name`` says otherwise) in a local folder; see the module
    docstring for the locking and rename rules."""

    def __init__(self, root: str, name: str = MEMORY_FILE) -> None:
        self.root = root
        self.name = name
        self.location = root
        self.path = os.path.join(root, name)

    def read(self) -> bytes | None:
        """The first cap + 1 bytes of the file; a symlink or non-file there is refused, not followed."""
        try:
            fd = os.open(self.path, _OPEN_READ)
        except FileNotFoundError:
            return None
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise BootstrapError(
                    f"{self.name} in {self.location} is a symlink; memory_tool only edits a regular file"
                ) from error
            raise storage_error(error, self.location, self.name, "read") from error
        try:
            data = read_capped(fd, MAX_BOOTSTRAP_FILE_BYTES)[0]
        except OSError as error:
            raise storage_error(error, self.location, self.name, "read") from error
        finally:
            os.close(fd)
        if data is None:
            raise BootstrapError(f"{self.name} in {self.location} is not a regular file; not editing it")
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
        with process_lock(self.path):
            try:
                dir_fd = os.open(self.root, _OPEN_DIR)
            except OSError as error:
                raise storage_error(error, self.location, self.name, "lock the home of") from error
            try:
                if fcntl is not None:
                    fcntl.flock(dir_fd, fcntl.LOCK_EX)
                yield dir_fd
            finally:
                os.close(dir_fd)  # releases the flock

    def _replace(self, data: bytes, dir_fd: int) -> None:
        """Write a sibling temp file, fsync it, rename it over the file; on failure remove it."""
        temp = os.path.join(self.root, f".{self.name}.{secrets.token_hex(8)}.tmp")
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
                raise storage_error(error, self.location, self.name, "write") from error
            raise
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)  # make the rename itself durable
