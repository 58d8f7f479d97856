"""The registry of archive kinds, and the one decision "which kind of bundle is this file?".

A home that turns out to be a regular file is a bundle: a single file holding a persona's
folder. Which kind (zip, tar, …) is decided here and nowhere else — by the file's name first
(``.zip``, ``.tar.gz``, …), then by its leading bytes, so a zip called ``aster.bin`` is a zip
bundle from every entry point and on every backend. The sources that discover a file
(:class:`LocalSource`, :class:`FsspecSource`) and the resolver (for chained ``zip://FOLDER::…``
URLs) all ask :func:`archive_for_file` / :func:`archive_kind`.

A new archive format is one module defining an :class:`ArchiveKind`, plus one
``register_archive(KIND)`` line in ``sources/__init__.py``.

The protocol table lives here too: for each fsspec protocol toolnexus knows, the source that
reads (writes, revalidates) homes on it and the extra that installs its fsspec implementation,
so that a missing one is an ImportError saying ``pip install 'toolnexus[gcs]'``. A new backend
is one module plus one ``register_filesystem_source(...)`` line.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Any

from toolnexus.errors import BootstrapError, location_error, read_error
from toolnexus.sources.base import SourceBase, read_only

__all__ = [
    "DEFAULT_ENGINE",
    "HEAD_BYTES",
    "MAX_DOWNLOAD_BYTES",
    "STREAM_BLOCK_SIZE",
    "ArchiveFile",
    "ArchiveKind",
    "ArchiveOpener",
    "Backend",
    "Engine",
    "archive_for_file",
    "archive_kind",
    "archive_kinds",
    "backend",
    "backends",
    "detect_kind",
    "engine",
    "filesystem_source",
    "not_a_bundle",
    "not_a_folder",
    "register_archive",
    "register_engine",
    "register_filesystem_source",
    "sniff_kind",
]

#: How many leading bytes a kind's ``sniff`` is shown (a tar header's magic sits at 257..262).
HEAD_BYTES = 512

#: Opens the archive afresh for one read (a new file object each call; the caller closes it).
ArchiveOpener = Callable[[], IO[bytes]]


@dataclass(frozen=True, slots=True)
class ArchiveFile:
    """One archive file, wherever it is: ``fs=None`` means local disk (``path`` is absolute).

    ``info`` is a fresh ``fs.info`` of the file when the caller just looked it up (its size spares
    a second lookup); pass it only for a single read, so it cannot go stale.
    """

    path: str
    location: str
    fs: Any = None
    info: Mapping[str, Any] | None = None

    def head(self, size: int = 512) -> bytes:
        """The first ``size`` bytes: one small read (one ranged GET remotely)."""
        try:
            if self.fs is None or _is_http(self.fs):
                with self.open_stream() as stream:
                    return stream.read(size)
            return bytes(self.fs.cat_file(self.path, start=0, end=size))[:size]
        except FileNotFoundError:
            raise location_error(FileNotFoundError, self.location, "no such persona home") from None
        except Exception as error:
            raise read_error(error, self.location, None) from error

    def open_stream(self) -> IO[bytes]:
        """The file for one sequential pass from the start (tar): large readahead remotely; over
        HTTP a plain streaming GET, which servers without Range support answer too."""
        if self.fs is None:
            return open(self.path, "rb")
        if _is_http(self.fs):
            stream: IO[bytes] = self.fs.open(self.path, "rb", block_size=0)
            return stream
        known = {} if self.info is None else {"size": self.info["size"]}
        block = STREAM_BLOCK_SIZE
        handle: IO[bytes] = self.fs.open(self.path, "rb", block_size=block, cache_type="readahead", **known)
        return handle

    def download(self) -> IO[bytes]:
        """The whole file in memory, for a server that cannot serve ranges; bounded."""
        chunks: list[bytes] = []
        size = 0
        with self.open_stream() as stream:
            while size <= MAX_DOWNLOAD_BYTES and (chunk := stream.read(MAX_DOWNLOAD_BYTES + 1 - size)):
                chunks.append(chunk)
                size += len(chunk)
        if size > MAX_DOWNLOAD_BYTES:
            raise BootstrapError(
                f"{self.location}: the server does not serve byte ranges and the bundle is over "
                f"{MAX_DOWNLOAD_BYTES} bytes; refusing to download it whole"
            )
        return io.BytesIO(b"".join(chunks))


#: Readahead for sequential passes over remote archives (one GET per MiB).
STREAM_BLOCK_SIZE = 1024 * 1024

#: Largest zip bundle downloaded whole from a server without Range support (64 MiB).
MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Backend:
    """One row of the protocol table: what toolnexus knows about an fsspec protocol."""

    protocol: str
    #: Builds the source for a home on this protocol, ``source(fs, path)``; ``None``: the
    #: generic :class:`FsspecSource` (reads everything, refuses writes without single_writer).
    source: Callable[[Any, str], SourceBase] | None
    #: The toolnexus extra that installs this protocol's fsspec implementation, if one does.
    extra: str | None = None
    #: The fsspec class (``"module.Class"``) this row is for, when it is not the protocol's
    #: usual one: obstore's adapter speaks ``s3`` too, and is read its own way.
    implementation: str | None = None

    @property
    def install_hint(self) -> str | None:
        """``pip install 'toolnexus[s3]'``, or ``None`` when no extra provides the protocol."""
        return None if self.extra is None else f"pip install 'toolnexus[{self.extra}]'"


_BACKENDS: dict[str, Backend] = {}
_IMPLEMENTATIONS: dict[tuple[str, str], Backend] = {}


def register_filesystem_source(
    protocols: Iterable[str],
    source: Callable[[Any, str], SourceBase] | None,
    *,
    extra: str | None = None,
    implementation: str | None = None,
) -> None:
    """Read (write, revalidate) homes on these fsspec protocols with ``source(fs, path)``, and
    name the toolnexus ``extra`` that installs them. With ``implementation`` (``"module.Class"``)
    the row is for filesystems of that class (or a subclass) only, and wins over the protocol's
    usual row. A later registration replaces a row."""
    for protocol in protocols:
        row = Backend(protocol, source, extra, implementation)
        if implementation is None:
            _BACKENDS[protocol] = row
        else:
            _IMPLEMENTATIONS[(implementation, protocol)] = row


def backend(protocol: str) -> Backend | None:
    """The protocol table's row for ``protocol``, if it has one."""
    return _BACKENDS.get(protocol)


def backends() -> tuple[Backend, ...]:
    """The protocol table, in registration order (rows for a particular class last)."""
    return (*_BACKENDS.values(), *_IMPLEMENTATIONS.values())


def filesystem_source(fs: Any) -> Callable[[Any, str], SourceBase] | None:
    """The registered source for ``fs``, if any: a row for its class (or a base class) and
    protocol first, else the row for its protocol. Matched by class and protocol, never by duck
    typing: a wrapper (``simplecache::s3://…``, ``dir::…``) is its own protocol and is read,
    written and revalidated as any fsspec filesystem, through the wrapper."""
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    classes = [f"{cls.__module__}.{cls.__qualname__}" for cls in type(fs).__mro__]
    special = (_IMPLEMENTATIONS.get((name, p)) for name in classes for p in protocols)
    rows = [row for row in special if row is not None] + [_BACKENDS[p] for p in protocols if p in _BACKENDS]
    return next((row.source for row in rows if row.source is not None), None)


@dataclass(frozen=True, slots=True)
class Engine:
    """A client that reaches object stores its own way, instead of through fsspec (``obstore``).

    ``open_url(url, storage_options)`` and ``open_filesystem(fs, path)`` return the source for a
    home; ``open_output(url, storage_options)`` says where ``write_bundle`` writes, as ``(fs,
    path)`` with ``fs`` offering ``exists``, ``invalidate_cache`` and ``pipe_file``;
    ``protocols`` are the URL schemes it serves.
    """

    name: str
    protocols: tuple[str, ...]
    open_url: Callable[[str, dict[str, Any]], SourceBase]
    open_filesystem: Callable[[Any, str], SourceBase]
    open_output: Callable[[str, dict[str, Any]], tuple[Any, str]]
    #: The toolnexus extra that installs it.
    extra: str | None = None
    #: ``storage_options`` for ``reads`` requests in flight at once (``audit`` sizes its client
    #: with this, as with a source's ``concurrent_options``); ``None``: nothing to size (obstore's
    #: HTTP client opens as many connections as requests need).
    concurrent_options: Callable[[Mapping[str, Any], int], dict[str, Any]] | None = None
    #: Whether a process forked after the engine was used can still use it (obstore's runtime
    #: cannot: its threads are not copied by ``fork()``, and the child hangs).
    fork_safe: bool = True


_ENGINES: dict[str, Engine] = {}

#: The engine every entry point uses unless told otherwise: fsspec, through the protocol table.
DEFAULT_ENGINE = "fsspec"


def register_engine(engine: Engine) -> Engine:
    """Make ``engine=NAME`` mean ``engine`` at every entry point."""
    _ENGINES[engine.name] = engine
    return engine


def engine(name: str) -> Engine | None:
    """The engine called ``name``; ``None`` for the default (fsspec). An unknown name is a
    :class:`ValueError` listing the known ones."""
    if name == DEFAULT_ENGINE:
        return None
    if not isinstance(name, str) or name not in _ENGINES:
        known = ", ".join(repr(n) for n in (DEFAULT_ENGINE, *_ENGINES))
        raise ValueError(f"engine must be one of {known}, not {name!r}")
    return _ENGINES[name]


def _is_http(fs: Any) -> bool:
    protocols = {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)
    return bool(protocols & {"http", "https"})


@dataclass(frozen=True, slots=True)
class ArchiveKind:
    """A kind of single-file bundle: how to recognise one, and how to read a home inside it.

    ``protocol`` is the chained-URL hop that names it (``zip`` for ``zip://FOLDER::…``);
    ``suffixes`` are lower-case file name endings that mean this kind; ``sniff`` tells from a
    file's first :data:`HEAD_BYTES` bytes; ``open(file, folder)`` returns the source
    (``folder=None`` applies the single-top-level-folder rule, ``""`` means the archive root).
    """

    protocol: str
    suffixes: tuple[str, ...]
    sniff: Callable[[bytes], bool]
    open: Callable[[ArchiveFile, str | None], SourceBase]
    #: Why such a bundle cannot be written (memory_tool's error message).
    read_only_reason: str = "a bundle is a snapshot: rebuild it with write_bundle, never edit it in place"


_KINDS: dict[str, ArchiveKind] = {}


def register_archive(kind: ArchiveKind) -> ArchiveKind:
    """Make ``kind`` known to the resolver; a later registration for a protocol replaces it."""
    _KINDS[kind.protocol] = kind
    return kind


def archive_kinds() -> tuple[ArchiveKind, ...]:
    return tuple(_KINDS.values())


def archive_kind(protocol: str) -> ArchiveKind | None:
    """The kind a chained URL's first hop names (``zip``, ``tar``), if one is registered."""
    return _KINDS.get(protocol)


def kind_by_name(path: str) -> ArchiveKind | None:
    """The kind a file name's ending says, if any (longest ending wins: ``.tar.gz`` over ``.gz``)."""
    lower = path.lower()
    best: tuple[int, ArchiveKind] | None = None
    for kind in _KINDS.values():
        for suffix in kind.suffixes:
            if lower.endswith(suffix) and (best is None or len(suffix) > best[0]):
                best = (len(suffix), kind)
    return best[1] if best else None


def sniff_kind(head: bytes) -> ArchiveKind | None:
    """The kind whose leading bytes ``head`` starts with, if any."""
    return next((kind for kind in _KINDS.values() if kind.sniff(head)), None)


def not_a_bundle(location: str) -> OSError:
    """The error for a home that is a file but no known kind of bundle."""
    kinds = " nor ".join(f"a {kind.protocol} bundle" for kind in _KINDS.values())
    return location_error(NotADirectoryError, location, f"is a file, neither a directory nor {kinds}")


def detect_kind(file: ArchiveFile) -> ArchiveKind | None:
    """Name first (no I/O); the leading bytes only when the name says nothing."""
    return kind_by_name(file.path) or sniff_kind(file.head(HEAD_BYTES))


def archive_for_file(file: ArchiveFile, folder: str | None = None) -> SourceBase:
    """The source for a home that is a file; not a known bundle → :class:`NotADirectoryError`."""
    kind = detect_kind(file)
    if kind is None:
        raise not_a_bundle(file.location)
    return kind.open(file, folder)


def not_a_folder(file: ArchiveFile) -> OSError:
    """Why a home that is a file cannot be written: a read-only bundle, or not a folder at all."""
    kind = detect_kind(file)
    if kind is not None:
        return read_only(file.location, f"a {kind.protocol} bundle (read-only)", kind.read_only_reason)
    return location_error(NotADirectoryError, file.location, "is a file, not a persona folder")
