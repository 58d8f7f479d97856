"""Local homes, read with plain ``os`` calls: one ``scandir``, then per name
``openat(O_NOFOLLOW | O_NONBLOCK)``, ``fstat`` and one bounded read; the symlink policy; freshness
by stats never trusted younger than :data:`RACY_SECONDS`."""

from __future__ import annotations

import errno
import os
import stat
import sys
import time
from collections.abc import Hashable, Sequence

from toolnexus._fs import DIR_FLAGS, FILE_FLAGS, read_capped, read_local_files, stat_validator
from toolnexus.errors import BootstrapError, location_error, read_error
from toolnexus.sources.base import Entry, Match, Reading, SourceBase, by_content, read_errors
from toolnexus.sources.children import Pages, local_children
from toolnexus.sources.freshness import NOT_MODIFIED, Changes, FreshFile, NotModified, Validators
from toolnexus.sources.registry import ArchiveFile, archive_for_file, not_a_folder
from toolnexus.stores.base import MemoryStore
from toolnexus.stores.local import LocalStore

#: A file changed less than this long ago is re-read every call: timestamps tick coarsely (2 s on
#: FAT, a server's clock on NFS), so a same-size rewrite within one tick keeps the stat.
RACY_SECONDS = 3.0

#: The wall clock file timestamps are compared with (a seam for tests that age files).
_now = time.time

HAS_DIR_FD = os.open in os.supports_dir_fd and os.scandir in os.supports_fd
#: What ``open(O_NOFOLLOW)`` of a symlink fails with: ELOOP (Linux, macOS), EMLINK (FreeBSD).
_NOFOLLOW_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK})
_PROC_FD = "/proc/self/fd" if sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd") else None

#: What a name that is no regular file is, by its stat's file type.
_KINDS = {stat.S_IFDIR: "folder", stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket"}
_KINDS |= {stat.S_IFCHR: "device", stat.S_IFBLK: "device"}


def file_kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


class LocalSource(SourceBase):
    """A persona home in a local directory: ``LocalSource("personas/aster")``; a symlinked file is
    followed inside the home only (unless ``follow_external_symlinks=True``)."""

    def __init__(self, root: str | os.PathLike[str], *, follow_external_symlinks: bool = False) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.location = self.root
        self.follow_external_symlinks = follow_external_symlinks

    def read_entries(self, names: Sequence[str], limit: int, *, exact_sizes: bool = False) -> Reading:
        read = self.read_fast(names, limit, exact_sizes=exact_sizes)
        if isinstance(read, Reading):
            return read
        return Reading(self.location, {name: Entry(data, len(data)) for name, data in read.items()})

    def read_fast(
        self, names: Sequence[str], limit: int, *, exact_sizes: bool = False
    ) -> dict[str, bytes] | Reading:
        """Plain bytes in the common case; a symlink, a non-file, over the cap, a size that changed
        or an error is read the careful way (:meth:`read_listed`)."""
        dir_fd, listing = self.scan()
        if listing is None:
            return self.bundle().read_entries(names, limit, exact_sizes=exact_sizes)
        try:
            if dir_fd is not None:
                prefixes = self._read_plain(dir_fd, listing, names, limit)
                if prefixes is not None:
                    return prefixes
            entries: dict[str, Entry] = {}
            for name in names:
                dir_entry = listing.get(name)
                if dir_entry is not None:
                    entry = self.read_listed(dir_fd, dir_entry, limit)
                    if entry is not None:
                        entries[name] = entry
            return Reading(self.location, entries)
        finally:
            if dir_fd is not None:
                os.close(dir_fd)

    def _read_plain(
        self, dir_fd: int, listing: dict[str, os.DirEntry[str]], names: Sequence[str], limit: int
    ) -> dict[str, bytes] | None:
        prefixes: dict[str, bytes] = {}
        for name in names:
            dir_entry = listing.get(name)
            if dir_entry is None:
                continue
            if not dir_entry.is_file(follow_symlinks=False):
                return None
            try:
                fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
            except OSError as error:
                if error.errno in _NOFOLLOW_ERRNOS:  # swapped for a symlink since the scan
                    raise self._became_symlink(name) from error
                return None
            try:
                info = os.fstat(fd)
                size = info.st_size
                if size > limit or not stat.S_ISREG(info.st_mode):
                    return None
                data = os.read(fd, size + 1)
            except OSError:
                return None
            finally:
                os.close(fd)
            if len(data) != size:
                return None
            prefixes[name] = data
        return prefixes

    def read_folder(self, folder: str, limit: int, *, match: Match | None = None) -> Reading:
        """Reached one folder at a time, no symlink followed (a symlinked folder is an error)."""
        if not os.path.isdir(self.root):
            return self.bundle().read_folder(folder, limit, match=match)
        try:
            files = {
                path: Entry(data, size)
                for path, data, size in read_local_files(self.root, folder, limit, match)
            }
        except OSError as error:
            raise read_error(error, self.location, error.filename or folder) from error
        return Reading(self.location, files)

    def scan(self) -> tuple[int | None, dict[str, os.DirEntry[str]] | None]:
        """``(dir_fd, {name: entry})``, the listing ``None`` for a file; the caller closes ``dir_fd``."""
        dir_fd: int | None = None
        try:
            if HAS_DIR_FD:
                dir_fd = os.open(self.root, DIR_FLAGS)
            with os.scandir(self.root if dir_fd is None else dir_fd) as scan:
                return dir_fd, {entry.name: entry for entry in scan}
        except FileNotFoundError:
            error: OSError = location_error(FileNotFoundError, self.location, "no such persona home")
            cause = None
        except NotADirectoryError:
            return None, None  # a file: a bundle, or an error (see bundle())
        except OSError as failure:
            error, cause = read_error(failure, self.location, None), failure
        if dir_fd is not None:
            os.close(dir_fd)
        raise error from cause

    def bundle(self) -> SourceBase:
        self._require_regular_file()
        return archive_for_file(ArchiveFile(self.root, self.location))

    def _require_regular_file(self) -> os.stat_result:
        with read_errors(self.location, missing="no such persona home"):
            info = os.stat(self.root)
        if not stat.S_ISREG(info.st_mode):
            raise location_error(NotADirectoryError, self.location, "is neither a directory nor a bundle")
        return info

    @property
    def cache_key(self) -> Hashable:
        return ("local", self.root, self.follow_external_symlinks)

    def changed_since(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | NotModified:
        """Stats first (see the module); files whose stat changed are read by :meth:`read_entries`."""
        trusted_before_ns = int((_now() - RACY_SECONDS) * 1e9)
        try:
            dir_fd = os.open(self.root, DIR_FLAGS) if HAS_DIR_FD else None
        except NotADirectoryError:  # a bundle: its own stat proves every member unchanged
            tag = stat_validator(self._require_regular_file(), trusted_before_ns)
            if tag is not None and since is not None and since.tag == tag:
                return NOT_MODIFIED
            return by_content(self.bundle().read_entries(names, limit), since, tag)
        except OSError:
            dir_fd = None
        if dir_fd is None:
            return super().changed_since(since, names, limit)  # its read raises the right error
        previous = {} if since is None else since.validators
        old_tag = None if since is None else since.tag
        kept: list[str] = []
        stale: dict[str, Hashable | None] = {}
        try:
            # The folder's stat proves its listing unchanged (an entry added, removed or renamed
            # changes its mtime and ctime), with the same racy window as files.
            listing = stat_validator(os.fstat(dir_fd), trusted_before_ns)
            if listing is not None and isinstance(old_tag, tuple) and old_tag[0] == listing:
                present: frozenset[str] = old_tag[1]
            else:
                present = frozenset(names).intersection(os.listdir(dir_fd))
            for name in names:
                if name not in present:
                    continue
                try:
                    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                except OSError as error:
                    raise read_error(error, self.location, name) from error
                validator = stat_validator(info, trusted_before_ns) if stat.S_ISREG(info.st_mode) else None
                if validator is not None and name in previous and previous[name] == validator:
                    kept.append(name)
                else:
                    stale[name] = validator
        finally:
            os.close(dir_fd)
        tag = (listing, present)
        if not stale and since is not None and len(kept) == len(previous) and old_tag == tag:
            return NOT_MODIFIED
        entries = self.read_entries(list(stale), limit).entries if stale else {}
        read = {n: FreshFile(e.data, e.size, stale[n]) for n, e in entries.items() if e.data is not None}
        return Changes(self.location, tag, tuple(kept), read)

    def children(self) -> Pages | None:
        return local_children(self.root)

    def writer(self, name: str = "MEMORY.md", *, single_writer: bool = False) -> MemoryStore:
        """``name`` replaced atomically under ``flock`` (always coordinated: ``single_writer``
        changes nothing)."""
        try:
            is_dir = stat.S_ISDIR(os.stat(self.root).st_mode)
        except FileNotFoundError:
            raise location_error(FileNotFoundError, self.location, "no such persona home") from None
        if not is_dir:
            self._require_regular_file()
            raise not_a_folder(ArchiveFile(self.root, self.location))
        if not os.access(self.root, os.W_OK | os.X_OK):
            raise location_error(PermissionError, self.location, f"is not writable: {name} cannot be saved")
        return LocalStore(self.root, name)

    def read_listed(self, dir_fd: int | None, dir_entry: os.DirEntry[str], limit: int) -> Entry | None:
        """One scanned name: ``Entry(None)`` if not a regular file, ``None`` if gone meanwhile."""
        try:
            if dir_entry.is_file(follow_symlinks=False):
                fd = self._open_listed(dir_fd, dir_entry)
                try:
                    return Entry(*read_capped(fd, limit))
                finally:
                    os.close(fd)
            if dir_entry.is_symlink():
                return self._read_symlink(dir_entry.name, limit)
            return Entry(None, why=file_kind(dir_entry.stat(follow_symlinks=False).st_mode))
        except FileNotFoundError:
            return None  # removed after the scan: absent, as if the call had come later
        except OSError as error:
            raise read_error(error, self.location, dir_entry.name) from error

    def _open_listed(self, dir_fd: int | None, dir_entry: os.DirEntry[str]) -> int:
        path = dir_entry.name if dir_fd is not None else dir_entry.path
        try:
            return os.open(path, FILE_FLAGS, dir_fd=dir_fd)
        except OSError as error:
            if error.errno not in _NOFOLLOW_ERRNOS:
                raise
            raise self._became_symlink(dir_entry.name) from error

    def _became_symlink(self, name: str) -> BootstrapError:
        reason = "became a symlink after it was scanned; not followed (compose again to apply the rule)"
        return BootstrapError(f"{name} in {self.location} {reason}")

    def _read_symlink(self, name: str, limit: int) -> Entry:
        link = os.path.join(self.root, name)
        try:
            target = os.path.realpath(link, strict=True)
        except FileNotFoundError:
            raise BootstrapError(f"{name} in {self.location} is a dangling symlink") from None
        except OSError as error:
            reason = f"is a symlink that cannot be resolved ({error})"
            raise BootstrapError(f"{name} in {self.location} {reason}") from error
        self._check_inside(name, target)
        mode = os.stat(target).st_mode
        if not stat.S_ISREG(mode):
            return Entry(None, why=f"symlink to a {file_kind(mode)}")
        fd = os.open(target, FILE_FLAGS)
        try:
            if _PROC_FD is not None:  # the target may have been swapped since realpath: recheck
                self._check_inside(name, os.readlink(f"{_PROC_FD}/{fd}"))
            return Entry(*read_capped(fd, limit))
        finally:
            os.close(fd)

    def _check_inside(self, name: str, target: str) -> None:
        if self.follow_external_symlinks:
            return
        home = os.path.realpath(self.root)
        if os.path.commonpath([home, target]) != home:
            raise BootstrapError(
                f"{name} in {self.location} is a symlink to {target}, outside the home; "
                "refusing to follow it (pass follow_external_symlinks=True to allow)"
            )
