"""A file in a local folder: writers take ``flock`` on the home directory (readers never lock), re-read
the file and replace it atomically (a fsynced temporary file, then ``os.replace``). Folders below the
home are opened one at a time with ``O_NOFOLLOW`` (no symlink leads out of the home); as on object
stores, a folder exists while it holds a file (made by a write, removed when left empty)."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator

from toolnexus._fs import DIR_FLAGS, FILE_FLAGS, local_files, open_folders, read_capped
from toolnexus.composer.rules import MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.errors import BootstrapError, read_error
from toolnexus.stores.base import MEMORY_FILE, Change, Moved, Plan, process_lock

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the process-local lock is all there is
    fcntl = None  # type: ignore[assignment]


_OPEN_TEMP = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class LocalStore:
    """A file of a local home, MEMORY.md unless ``name`` says otherwise (see the module docstring)."""

    def __init__(self, root: str, name: str = MEMORY_FILE) -> None:
        self.root, self.name, self.location = root, name, root
        self.path = os.path.join(root, name)
        *folders, self._leaf = name.split("/")
        self._folders = tuple(folders)

    def file(self, name: str) -> LocalStore:
        return LocalStore(self.root, name)

    def read(self) -> bytes | None:
        """The first cap + 1 bytes of the file; a symlink or non-file there is refused, not followed."""
        try:
            root_fd = os.open(self.root, DIR_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise read_error(error, self.location, self.name, action="read") from error
        try:
            return self._read_at(root_fd)
        finally:
            os.close(root_fd)

    def _read_at(self, root_fd: int) -> bytes | None:
        with self._opened(root_fd, create=False) as folders:
            if folders is None:
                return None
            try:
                fd = os.open(self._leaf, FILE_FLAGS, dir_fd=folders[-1])
                try:
                    data = read_capped(fd, MAX_BOOTSTRAP_FILE_BYTES)[0]
                finally:
                    os.close(fd)
            except FileNotFoundError:
                return None
            except OSError as error:
                if error.errno == errno.ELOOP:
                    raise BootstrapError(
                        f"{self.name} in {self.location} is a symlink; memory_tool only edits a regular file"
                    ) from error
                raise read_error(error, self.location, self.name, action="read") from error
        if data is None:
            raise BootstrapError(f"{self.name} in {self.location} is not a regular file; not editing it")
        return data

    def update(self, plan: Plan) -> Change:
        with self._locked() as root_fd:
            change = plan(self._read_at(root_fd))
            if change.data is not None:
                with self._opened(root_fd, create=True) as folders:
                    assert folders is not None  # made when missing
                    self._replace(change.data, folders[-1])
            return change

    def listing(self, folder: str) -> dict[str, int]:
        files: dict[str, int] = {}
        try:
            for path, fd, name in local_files(self.root, folder):
                with contextlib.suppress(FileNotFoundError):  # deleted meanwhile
                    files[path] = os.stat(name, dir_fd=fd, follow_symlinks=False).st_size
        except OSError as error:
            raise read_error(error, self.location, folder, action="list") from error
        return files

    def remove(self) -> bool:
        with self._locked() as root_fd, self._opened(root_fd, create=False) as folders:
            if folders is None:
                return False
            try:
                os.unlink(self._leaf, dir_fd=folders[-1])
            except FileNotFoundError:
                return False
            except OSError as error:
                raise read_error(error, self.location, self.name, action="delete") from error
            self._prune(folders)
            return True

    def rename(self, name: str) -> Moved:
        """Move the file to ``name`` in the same home with one ``rename`` under the lock."""
        target = self.file(name)
        with self._locked() as root_fd, self._opened(root_fd, create=False) as folders:
            if folders is None or not _is_entry(self._leaf, folders[-1]):
                return "missing"
            with target._opened(root_fd, create=True) as into:
                assert into is not None  # made when missing
                if _is_entry(target._leaf, into[-1]):
                    return "exists"
                try:
                    os.rename(self._leaf, target._leaf, src_dir_fd=folders[-1], dst_dir_fd=into[-1])
                except OSError as error:
                    raise read_error(error, target.location, target.name, action="write") from error
                for fd in {into[-1], folders[-1]}:
                    with contextlib.suppress(OSError):
                        os.fsync(fd)  # make the rename itself durable
            self._prune(folders)
            return "renamed"

    @contextlib.contextmanager
    def _opened(self, root_fd: int, *, create: bool) -> Iterator[list[int] | None]:
        """The home's descriptor, then those of the file's folders below it (``None``: one is missing)."""
        try:
            folders = open_folders(root_fd, self._folders, create=create)
        except NotADirectoryError as error:
            raise BootstrapError(
                f"{self.name} in {self.location}: {error.strerror}; memory_tool only uses real folders"
            ) from error
        except OSError as error:
            raise read_error(error, self.location, self.name, action="reach") from error
        try:
            yield None if folders is None else [root_fd, *folders]
        finally:
            for fd in folders or ():
                os.close(fd)

    def _prune(self, folders: list[int]) -> None:
        """Remove the file's folders that are now empty, innermost first (never the home)."""
        for index in range(len(self._folders) - 1, -1, -1):
            try:
                os.rmdir(self._folders[index], dir_fd=folders[index])
            except OSError:
                return  # not empty (or gone): the folders above are not empty either

    @contextlib.contextmanager
    def _locked(self) -> Iterator[int]:
        """Exclusive among writers in all processes: ``flock`` on the home directory's own fd."""
        with process_lock(self.path):
            try:
                dir_fd = os.open(self.root, DIR_FLAGS)
            except OSError as error:
                raise read_error(error, self.location, self.name, action="lock the home of") from error
            try:
                if fcntl is not None:
                    fcntl.flock(dir_fd, fcntl.LOCK_EX)
                yield dir_fd
            finally:
                os.close(dir_fd)  # releases the flock

    def _replace(self, data: bytes, parent: int) -> None:
        """Write a sibling temp file, fsync it, rename it over the file; on failure remove it."""
        temp = f".{self._leaf}.{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(temp, _OPEN_TEMP, 0o666, dir_fd=parent)
            try:
                with contextlib.suppress(FileNotFoundError):
                    mode = os.stat(self._leaf, dir_fd=parent, follow_symlinks=False).st_mode
                    os.fchmod(fd, stat.S_IMODE(mode))
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, self._leaf, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException as error:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent)
            if isinstance(error, OSError):
                raise read_error(error, self.location, self.name, action="write") from error
            raise
        with contextlib.suppress(OSError):
            os.fsync(parent)  # make the rename itself durable


def _is_entry(name: str, folder: int) -> bool:
    """Whether anything (a file, a folder, a link) is called ``name`` in ``folder``."""
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True
