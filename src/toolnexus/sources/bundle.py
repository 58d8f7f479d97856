"""Zip bundles, read with :mod:`zipfile` over any file object opened afresh each call. Members are
inflated incrementally to ``limit + 1`` bytes (a zip bomb stops at the cap), so only stored and
deflated ones are read: zipfile inflates a bzip2 or LZMA chunk whole."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from toolnexus._fs import is_hidden
from toolnexus.composer.rules import BOOTSTRAP_ORDER
from toolnexus.errors import BootstrapError, describe, location_error, read_error
from toolnexus.sources.archive_home import home_prefix, member_path, open_bundle_file, twice
from toolnexus.sources.base import Entry, Match, Reading, SourceBase, read_errors, read_only
from toolnexus.sources.registry import ArchiveFile, ArchiveKind, ArchiveOpener

if TYPE_CHECKING:
    from toolnexus.stores.base import MemoryStore

#: Readahead for remote archives: small, so assets beside the persona's files are never fetched
#: (fsspec's default reads 50 MiB).
BUNDLE_BLOCK_SIZE = 16 * 1024

#: Leading bytes of a zip archive (local file header, empty archive, spanning marker).
ZIP_SIGNATURES = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")

#: Compression methods zipfile inflates at most ``n`` bytes at a time for ``read(n)``.
_BOUNDED_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)


class BundleSource(SourceBase):
    """A persona home inside a zip archive: ``BundleSource(lambda: open("aster.zip", "rb"), "aster.zip")``;
    ``folder`` names the home folder in it (as ``zip://aster::…``), ``None``: the single-folder rule."""

    def __init__(self, open_archive: ArchiveOpener, location: str, folder: str | None = None) -> None:
        self.open_archive = open_archive
        self.location = location
        self.folder = folder.strip("/") if folder is not None else None

    @classmethod
    def from_file(cls, path: str, folder: str | None = None) -> BundleSource:
        """A bundle on local disk: ``BundleSource.from_file("aster.zip")``."""
        path = os.path.abspath(path)
        return cls(lambda: open(path, "rb"), path, folder)

    @classmethod
    def from_archive_file(cls, file: ArchiveFile, folder: str | None = None) -> BundleSource:
        if file.fs is None:
            return cls.from_file(file.path, folder)
        return cls(functools.partial(_open_ranged_or_download, file), file.location, folder)

    def writer(self, name: str = "MEMORY.md", *, single_writer: bool = False) -> MemoryStore:
        raise read_only(self.location, "a zip bundle (read-only)", ZIP.read_only_reason)

    def read_folder(self, folder: str, limit: int, *, match: Match | None = None) -> Reading:
        with self._opened() as archive:
            members, prefix = self._home(archive, BOOTSTRAP_ORDER)
            below = f"{prefix}{folder}/" if folder else prefix  # "": the whole home
            entries: dict[str, Entry] = {}
            for path, member in members:
                relative, inside = path[len(prefix) :], path[len(below) :]
                wanted = path.startswith(below) and not member.is_dir() and not is_hidden(inside)
                if wanted and (match is None or match(inside)):
                    entries[relative] = self._member(archive, member, path, limit)
            return Reading(self.location, entries)

    def _member(self, archive: zipfile.ZipFile, member: zipfile.ZipInfo, path: str, limit: int) -> Entry:
        try:
            _check_readable(member)
            with archive.open(member) as stream:
                return Entry(stream.read(limit + 1), member.file_size)
        except NotImplementedError as error:
            raise read_error(ValueError(f"unsupported zip feature ({error})"), self.location, path) from error
        except Exception as error:
            raise read_error(error, self.location, path) from error

    @contextlib.contextmanager
    def _opened(self) -> Iterator[zipfile.ZipFile]:
        archive_file = open_bundle_file(self.open_archive, self.location)
        with archive_file, self._open_zip(archive_file) as archive:
            yield archive

    def _open_zip(self, archive_file: IO[bytes]) -> zipfile.ZipFile:
        """Read the central directory; a file that is not a zip at all is a NotADirectoryError."""
        try:
            return zipfile.ZipFile(archive_file)
        except zipfile.BadZipFile as error:
            corrupt = error
        except Exception as error:  # untrusted bytes: whatever zipfile trips on is a bad bundle
            raise read_error(error, self.location, None) from error
        with read_errors(self.location):
            archive_file.seek(0)
            signature = archive_file.read(4)
        if signature in ZIP_SIGNATURES:
            raise BootstrapError(f"{self.location}: corrupt zip bundle ({corrupt})") from corrupt
        reason = "is a file, neither a directory nor a zip bundle"
        raise location_error(NotADirectoryError, self.location, reason)

    def _home(
        self, archive: zipfile.ZipFile, names: Sequence[str]
    ) -> tuple[list[tuple[str, zipfile.ZipInfo]], str]:
        """Every member with its normalised path, and the home's prefix among them."""
        members = [(member_path(member.filename), member) for member in archive.infolist()]
        return members, home_prefix((path for path, _ in members), names, self.folder, self.location, "zip")

    def read_entries(self, names: Sequence[str], limit: int, *, exact_sizes: bool = False) -> Reading:
        with self._opened() as archive:
            members, prefix = self._home(archive, names)
            location = f"zip://{prefix.rstrip('/')}::{self.location}" if prefix else self.location
            by_name: dict[str, zipfile.ZipInfo] = {}
            wanted = {prefix + name: name for name in names}
            for path, member in members:
                if path in wanted:
                    if path in by_name:
                        raise twice(self.location, path)
                    by_name[path] = member
                elif path.rstrip("/") in wanted and member.is_dir():
                    # A folder and a file with the same name are ambiguous in either order.
                    previous = by_name.setdefault(path.rstrip("/"), member)
                    if not previous.is_dir():
                        raise BootstrapError(
                            f"{describe(self.location, path.rstrip('/'))}: the bundle also holds a folder "
                            "of this name; refusing to guess which one is the persona's"
                        )
            entries: dict[str, Entry] = {}
            # Members in archive order, so a readahead buffer serves neighbours in one fetch.
            for path, member in sorted(by_name.items(), key=lambda item: item[1].header_offset):
                name = wanted[path]
                if member.is_dir():
                    entries[name] = Entry(None, why="folder")
                else:
                    entries[name] = self._member(archive, member, path, limit)
            return Reading(location, entries)


def open_archive(fs: Any, path: str, info: Mapping[str, Any] | None = None) -> IO[bytes]:
    """An archive on an fsspec filesystem for :mod:`zipfile`: small readahead, seek errors fixed;
    ``info`` just looked up spares a HEAD (its ETag pins every GET)."""
    known = {} if info is None else {"size": info["size"]}
    handle = fs.open(path, "rb", block_size=BUNDLE_BLOCK_SIZE, cache_type="readahead", **known)
    if hasattr(type(handle), "details"):  # fsspec's AbstractBufferedFile: reads are ranged requests
        if info is not None:
            with contextlib.suppress(AttributeError):  # GCSFile.details is read-only: keep its own
                handle.details = dict(info)
        # zipfile reads the end record, the zip64 locator and the central directory backwards
        # from the end, each a readahead miss: one read of the last block serves all three.
        handle.seek(max(0, handle.size - BUNDLE_BLOCK_SIZE))
        handle.read(BUNDLE_BLOCK_SIZE)
    return _SeekErrorsAsOSError(handle)  # type: ignore[return-value]


def _open_ranged_or_download(file: ArchiveFile) -> IO[bytes]:
    """Ranged reads, or a bounded download from a server without ranges (``http.server``)."""
    try:
        return open_archive(file.fs, file.path, file.info)
    except ValueError as error:
        if "range requests" not in str(error):
            raise
    return file.download()


class _SeekErrorsAsOSError:
    """fsspec files raise ValueError for a seek before the start; zipfile probes with such seeks
    (tiny archives) and only tolerates the OSError that built-in files raise."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def seek(self, offset: int, whence: int = 0) -> int:
        try:
            return int(self._handle.seek(offset, whence))
        except ValueError as error:
            raise OSError(errno.EINVAL, str(error)) from error

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    def __enter__(self) -> _SeekErrorsAsOSError:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._handle.close()


def _check_readable(member: zipfile.ZipInfo) -> None:
    """Refuse, before inflating anything, a member that cannot be read within the cap."""
    if member.flag_bits & 0x1:  # PKWARE or strong encryption
        raise ValueError("the member is encrypted; bundles must not be password-protected")
    if member.compress_type not in _BOUNDED_METHODS:
        method = zipfile.compressor_names.get(member.compress_type, "unknown")  # type: ignore[attr-defined]
        raise ValueError(
            f"unsupported compression method {member.compress_type} ({method}); "
            "bundle members must be stored or deflated"
        )


#: Zip bundles: ``.zip`` files, anything starting with a zip signature, and ``zip://FOLDER::…``.
ZIP = ArchiveKind(
    protocol="zip",
    suffixes=(".zip",),
    sniff=lambda head: head[:4] in ZIP_SIGNATURES,
    open=BundleSource.from_archive_file,
)
