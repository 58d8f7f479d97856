"""Local persona homes, read with plain ``os`` calls: the fast path, and the symlink policy.

One ``scandir`` of the home tells which names exist and what they are (from the directory entry
itself, no extra ``stat``). Regular files are opened relative to the home's descriptor with
``O_NOFOLLOW | O_NONBLOCK``: a file swapped for a symlink after the scan fails to open instead of
being followed, and one swapped for a FIFO cannot block. One ``fstat`` bounds the single read to
``min(size, limit) + 1`` bytes, so a 1 GiB file costs what a 2 MiB one does.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Sequence

from toolnexus._fs import read_capped
from toolnexus.errors import BootstrapError, location_error, read_error
from toolnexus.sources.base import Entry, Reading, SourceBase
from toolnexus.sources.registry import ArchiveFile, archive_for_file, not_a_folder
from toolnexus.stores import LocalStore, MemoryStore

__all__ = ["LocalSource"]

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
HAS_DIR_FD = os.open in os.supports_dir_fd and os.scandir in os.supports_fd
#: What ``open(O_NOFOLLOW)`` of a symlink fails with: ELOOP (Linux, macOS), EMLINK (FreeBSD).
_NOFOLLOW_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK})
_PROC_FD = "/proc/self/fd" if sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd") else None


class LocalSource(SourceBase):
    """A persona home in a local directory: ``LocalSource("personas/aster")``.

    Symlink rule: a bootstrap file that is a symlink is followed when its fully resolved target
    lies inside the home; a target outside raises :class:`BootstrapError` naming the link without
    opening the target, unless ``follow_external_symlinks=True``. A dangling symlink or a symlink
    loop also raises :class:`BootstrapError` — the author meant a file to be there.
    """

    def __init__(self, root: str | os.PathLike[str], *, follow_external_symlinks: bool = False) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.location = self.root
        self.follow_external_symlinks = follow_external_symlinks

    def read_entries(self, names: Sequence[str], limit: int, *, exact_sizes: bool = False) -> Reading:
        """One scan of the home, then one bounded read per present name (``exact_sizes`` is free).

        A home that turns out to be a regular file is read as a bundle (which kind: the
        registry decides): opening it as a directory is what tells, so a composition costs no
        ``stat`` up front.
        """
        read = self.read_fast(names, limit, exact_sizes=exact_sizes)
        if isinstance(read, Reading):
            return read
        return Reading(self.location, {name: Entry(data, len(data)) for name, data in read.items()})

    def read_fast(
        self, names: Sequence[str], limit: int, *, exact_sizes: bool = False
    ) -> dict[str, bytes] | Reading:
        """:meth:`read_entries`, but in the common case just ``{name: bytes}`` (what
        ``compose_soul`` needs): every present name a regular file within the cap, read whole.

        That case is read flat (it is most of a local composition): same scan, flags, ``dir_fd``
        and single bounded read as the careful path. On anything else — a symlink, a non-regular
        file, a file over the cap or whose size changed, an error — the same listing is read again
        the careful way (:meth:`read_listed`: the symlink rule, errors naming the file).
        """
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
        """The common case of :meth:`read_fast`, or ``None`` when the careful path must decide."""
        prefixes: dict[str, bytes] = {}
        for name in names:
            dir_entry = listing.get(name)
            if dir_entry is None:
                continue
            if not dir_entry.is_file(follow_symlinks=False):
                return None
            try:
                fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
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

    def scan(self) -> tuple[int | None, dict[str, os.DirEntry[str]] | None]:
        """``(dir_fd, {name: entry})`` of the home; the listing is ``None`` when the home is a file.

        The caller closes ``dir_fd`` (``None`` where ``os.open`` takes no ``dir_fd``).
        """
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
        """The home is not a directory: a regular file is a bundle, anything else an error."""
        self._require_regular_file()
        return archive_for_file(ArchiveFile(self.root, self.location))

    def _require_regular_file(self) -> None:
        try:
            mode = os.stat(self.root).st_mode
        except FileNotFoundError:
            raise location_error(FileNotFoundError, self.location, "no such persona home") from None
        except OSError as error:
            raise read_error(error, self.location, None) from error
        if not stat.S_ISREG(mode):
            raise location_error(NotADirectoryError, self.location, "is neither a directory nor a bundle")

    def writer(self, name: str = "MEMORY.md", *, single_writer: bool = False) -> MemoryStore:
        """An existing, writable folder: ``name`` is replaced atomically under ``flock``.

        ``single_writer`` changes nothing here: local writes are always coordinated. A bundle is
        read-only (:class:`BootstrapError`), another file a :class:`NotADirectoryError`.
        """
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
        """Read one name the scan found (``Entry(None)`` if not a regular file, ``None`` if gone)."""
        try:
            if dir_entry.is_file(follow_symlinks=False):
                fd = self._open_listed(dir_fd, dir_entry)
                try:
                    return Entry(*read_capped(fd, limit))
                finally:
                    os.close(fd)
            if dir_entry.is_symlink():
                return self._read_symlink(dir_entry.name, limit)
            return Entry(None)
        except FileNotFoundError:
            return None  # removed after the scan: absent, as if the call had come later
        except OSError as error:
            raise read_error(error, self.location, dir_entry.name) from error

    def _open_listed(self, dir_fd: int | None, dir_entry: os.DirEntry[str]) -> int:
        """Open a file the scan saw as regular; one swapped for a symlink since is refused."""
        path = dir_entry.name if dir_fd is not None else dir_entry.path
        try:
            return os.open(path, _OPEN_FLAGS, dir_fd=dir_fd)
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
        if not stat.S_ISREG(os.stat(target).st_mode):
            return Entry(None)
        fd = os.open(target, _OPEN_FLAGS)
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
