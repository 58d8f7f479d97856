"""Tar bundles, plain or gzip, bzip2 or xz: one sequential pass (a tar has no index), stopped
once the home's names were seen, refused past :data:`MAX_TAR_SCAN_BYTES` (a tar bomb's bound)."""

from __future__ import annotations

import bz2
import gzip
import lzma
import tarfile
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any

from toolnexus._fs import is_hidden
from toolnexus.composer.rules import BOOTSTRAP_ORDER
from toolnexus.errors import BootstrapError
from toolnexus.sources.archive_home import home_prefix, member_path, open_bundle_file, twice
from toolnexus.sources.base import Entry, Match, Reading, SourceBase, read_only
from toolnexus.sources.registry import ArchiveFile, ArchiveKind

if TYPE_CHECKING:
    from toolnexus.stores.base import MemoryStore

#: Most decompressed bytes one composition scans in a tar bundle before refusing it (64 MiB).
MAX_TAR_SCAN_BYTES = 64 * 1024 * 1024

_GZIP, _BZIP2, _XZ = b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00"


class _Prefixed:
    """A read-only stream that first returns bytes already read from ``raw`` (the magic)."""

    def __init__(self, head: bytes, raw: IO[bytes]) -> None:
        self._head, self._raw = head, raw

    def read(self, size: int = -1) -> bytes:
        if not self._head:
            return self._raw.read(size)
        if size < 0:
            data, self._head = self._head + self._raw.read(), b""
            return data
        data, self._head = self._head[:size], self._head[size:]
        return data if len(data) == size else data + self._raw.read(size - len(data))


class _Bounded:
    """Counts decompressed bytes and refuses the bundle past :data:`MAX_TAR_SCAN_BYTES`."""

    def __init__(self, stream: Any, location: str) -> None:
        self._stream, self._location, self.scanned = stream, location, 0

    def read(self, size: int = -1) -> bytes:
        want = MAX_TAR_SCAN_BYTES + 1 - self.scanned if size < 0 else size
        data: bytes = self._stream.read(want)
        self.scanned += len(data)
        if self.scanned > MAX_TAR_SCAN_BYTES:
            raise BootstrapError(
                f"{self._location}: the tar bundle holds over {MAX_TAR_SCAN_BYTES} bytes (decompressed) "
                "before its last bootstrap file; refusing to scan further (put the bootstrap files "
                "first, or use a zip bundle, which is read by index)"
            )
        return data


#: Leading bytes of each compression, and the standard library's incremental reader for it.
_DECOMPRESSORS: tuple[tuple[bytes, Callable[[Any], Any]], ...] = (
    (_GZIP, lambda stream: gzip.GzipFile(fileobj=stream, mode="rb")),
    (_BZIP2, bz2.BZ2File),
    (_XZ, lzma.LZMAFile),
)


def _decompressed(raw: IO[bytes], location: str) -> _Bounded:
    head = raw.read(len(_XZ))
    stream: Any = _Prefixed(head, raw)
    for magic, reader in _DECOMPRESSORS:
        if head.startswith(magic):
            stream = reader(stream)
            break
    return _Bounded(stream, location)


class TarSource(SourceBase):
    """A persona home inside a tar archive: ``TarSource(ArchiveFile(path, path))``; ``folder``
    as for :class:`.bundle.BundleSource`."""

    def __init__(self, file: ArchiveFile, folder: str | None = None) -> None:
        self.file = file
        self.location = file.location
        self.folder = folder.strip("/") if folder is not None else None  # "": the root

    def writer(self, name: str = "MEMORY.md", *, single_writer: bool = False) -> MemoryStore:
        raise read_only(self.location, "a tar bundle (read-only)", TAR.read_only_reason)

    def read_entries(self, names: Sequence[str], limit: int, *, exact_sizes: bool = False) -> Reading:
        return self._pass(lambda stream: self._scan(stream, names, limit))

    def read_folder(self, folder: str, limit: int, *, match: Match | None = None) -> Reading:
        return self._pass(lambda stream: self._scan_folder(stream, folder, limit, match))

    def _pass(self, scan: Callable[[_Bounded], Reading]) -> Reading:
        with open_bundle_file(self.file.open_stream, self.location) as raw:
            try:
                return scan(_decompressed(raw, self.location))
            except (BootstrapError, FileNotFoundError):
                raise
            except (tarfile.TarError, EOFError, OSError, lzma.LZMAError, ValueError) as error:
                raise BootstrapError(f"{self.location}: corrupt tar bundle ({error})") from error

    def _scan_folder(self, stream: _Bounded, folder: str, limit: int, match: Match | None) -> Reading:
        paths: list[str] = []
        candidates: dict[str, Entry] = {}
        with tarfile.open(fileobj=stream, mode="r|") as archive:  # type: ignore[call-overload]
            for member in archive:
                path = member_path(member.name, dot_prefixed=True).rstrip("/")
                paths.append(path + ("/" if member.isdir() else ""))
                inside = f"/{path}".rpartition(f"/{folder}/")[2] if folder else path
                wanted = not folder or f"/{folder}/" in f"/{path}"
                if member.isreg() and wanted and (match is None or match(inside)):
                    candidates[path] = self._entry(archive, member, limit)
        prefix = home_prefix(paths, BOOTSTRAP_ORDER, self.folder, self.location, "tar")
        below = f"{prefix}{folder}/" if folder else prefix  # "": the whole home
        entries = {
            path[len(prefix) :]: entry
            for path, entry in candidates.items()
            if path.startswith(below)
            and not is_hidden(path[len(below) :])
            and (match is None or match(path[len(below) :]))
        }
        return Reading(self.location, entries)

    def _scan(self, stream: _Bounded, names: Sequence[str], limit: int) -> Reading:
        wanted = set(names)
        paths: list[str] = []
        candidates: dict[str, Entry] = {}  # by member path: root names and one folder's names
        kept_folder = ""  # in the folder rule, the only folder that can become the home
        complete = [f"{self.folder}/{name}" if self.folder else name for name in names]
        with tarfile.open(fileobj=stream, mode="r|") as archive:  # type: ignore[call-overload]
            for member in archive:
                path = member_path(member.name, dot_prefixed=True).rstrip("/")
                paths.append(path + ("/" if member.isdir() else ""))
                folder, _, name = path.rpartition("/")
                if name not in wanted:
                    continue
                if self.folder is not None:
                    if folder != self.folder:
                        continue
                elif folder and ("/" in folder or folder != (kept_folder := kept_folder or folder)):
                    continue  # deeper, or a second folder: never the home
                if path in candidates:
                    raise twice(self.location, path)
                candidates[path] = self._entry(archive, member, limit)
                if all(path in candidates for path in complete):
                    break  # every name of the home seen (explicit folder, or a full root)
        prefix = home_prefix(paths, names, self.folder, self.location, "tar")
        location = f"tar://{prefix.rstrip('/')}::{self.location}" if prefix else self.location
        entries = {name: candidates[prefix + name] for name in names if prefix + name in candidates}
        return Reading(location, entries)

    def _entry(self, archive: tarfile.TarFile, member: tarfile.TarInfo, limit: int) -> Entry:
        if not member.isreg():
            return Entry(None, why=_KINDS.get(member.type, "not a regular file"))
        stream = archive.extractfile(member)
        if stream is None:  # pragma: no cover - isreg() members always have data
            return Entry(None)
        with stream:
            return Entry(stream.read(limit + 1), member.size)


#: What a member that is no regular file is, by its type.
_KINDS = {tarfile.DIRTYPE: "folder", tarfile.SYMTYPE: "symlink", tarfile.LNKTYPE: "hard link"}
_KINDS |= {tarfile.FIFOTYPE: "fifo", tarfile.CHRTYPE: "device", tarfile.BLKTYPE: "device"}


#: Tar bundles, plain or compressed with gzip, bzip2 or xz.
TAR = ArchiveKind(
    protocol="tar",
    suffixes=(".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tbz", ".tar.xz", ".txz"),
    sniff=lambda head: head.startswith((_GZIP, _BZIP2, _XZ)) or head[257:262] == b"ustar",
    open=TarSource,
)
