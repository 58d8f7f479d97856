"""The registries (archive kinds, the protocol table, engines), filled one line each in ``__init__``.
A file's kind of bundle is decided here only: by name, then by leading bytes."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Any

from toolnexus.errors import BootstrapError, location_error
from toolnexus.sources.base import SourceBase, read_errors, read_only

#: How many leading bytes a kind's ``sniff`` is shown (a tar header's magic sits at 257..262).
HEAD_BYTES = 512
#: Readahead for sequential passes over remote archives (one GET per MiB).
STREAM_BLOCK_SIZE = 1024 * 1024
#: Largest zip bundle downloaded whole from a server without Range support (64 MiB).
MAX_DOWNLOAD_BYTES = 64 * 1024 * 1024

#: Opens the archive afresh for one read (a new file object each call; the caller closes it).
ArchiveOpener = Callable[[], IO[bytes]]


@dataclass(frozen=True, slots=True)
class ArchiveFile:
    """One archive file (``fs=None``: local disk); ``info``, a fresh ``fs.info`` for a single read,
    spares a second lookup."""

    path: str
    location: str
    fs: Any = None
    info: Mapping[str, Any] | None = None

    def head(self, size: int = HEAD_BYTES) -> bytes:
        with read_errors(self.location, missing="no such persona home"):
            if self.fs is None or _is_http(self.fs):
                with self.open_stream() as stream:
                    return stream.read(size)
            return bytes(self.fs.cat_file(self.path, start=0, end=size))[:size]

    def open_stream(self) -> IO[bytes]:
        """One sequential pass (tar): large readahead remotely, a streaming GET over HTTP."""
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


def protocols(fs: Any) -> tuple[str, ...]:
    """The protocols of an fsspec filesystem (a string or a tuple of them)."""
    return (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)


def _is_http(fs: Any) -> bool:
    return not {"http", "https"}.isdisjoint(protocols(fs))


@dataclass(frozen=True, slots=True)
class Backend:
    """One row of the protocol table: ``source(fs, path)`` builds a home's source (``None``: the
    generic one), ``extra`` installs the protocol, ``implementation`` (``"module.Class"``) limits
    the row to that fsspec class (obstore's adapter speaks ``s3`` too)."""

    protocol: str
    source: Callable[[Any, str], SourceBase] | None
    extra: str | None = None
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
    """Read (write, revalidate) homes on these protocols with ``source(fs, path)``; a row with
    ``implementation`` wins over the protocol's usual one, a later registration replaces a row."""
    for protocol in protocols:
        row = Backend(protocol, source, extra, implementation)
        if implementation is None:
            _BACKENDS[protocol] = row
        else:
            _IMPLEMENTATIONS[(implementation, protocol)] = row


def backend(protocol: str) -> Backend | None:
    return _BACKENDS.get(protocol)


def backends() -> tuple[Backend, ...]:
    return (*_BACKENDS.values(), *_IMPLEMENTATIONS.values())


def filesystem_source(fs: Any) -> Callable[[Any, str], SourceBase] | None:
    """The registered source for ``fs``: a row for its class (or a base) first, else its
    protocol's; never by duck typing (a wrapper, ``simplecache::``, is its own protocol)."""
    names = protocols(fs)
    classes = [f"{cls.__module__}.{cls.__qualname__}" for cls in type(fs).__mro__]
    special = (_IMPLEMENTATIONS.get((name, p)) for name in classes for p in names)
    rows = [row for row in special if row is not None] + [_BACKENDS[p] for p in names if p in _BACKENDS]
    return next((row.source for row in rows if row.source is not None), None)


@dataclass(frozen=True, slots=True)
class Engine:
    """A client reaching object stores its own way (``obstore``), chosen in ``resolve`` only."""

    name: str
    open_url: Callable[[str, dict[str, Any]], SourceBase]
    open_filesystem: Callable[[Any, str], SourceBase]
    open_output: Callable[[str, dict[str, Any]], tuple[Any, str]]


_ENGINES: dict[str, Engine] = {}

#: The engine every entry point uses unless told otherwise: fsspec, through the protocol table.
DEFAULT_ENGINE = "fsspec"


def register_engine(engine: Engine) -> Engine:
    _ENGINES[engine.name] = engine
    return engine


def engine(name: str) -> Engine | None:
    """``None`` for the default (fsspec); an unknown name is a ValueError listing the known ones."""
    if name == DEFAULT_ENGINE:
        return None
    if not isinstance(name, str) or name not in _ENGINES:
        known = ", ".join(repr(n) for n in (DEFAULT_ENGINE, *_ENGINES))
        raise ValueError(f"engine must be one of {known}, not {name!r}")
    return _ENGINES[name]


@dataclass(frozen=True, slots=True)
class ArchiveKind:
    """A kind of single-file bundle: its chained-URL hop, lower-case name endings, a test on the
    first :data:`HEAD_BYTES` bytes, and ``open(file, folder)`` (``None``: the single-folder rule)."""

    protocol: str
    suffixes: tuple[str, ...]
    sniff: Callable[[bytes], bool]
    open: Callable[[ArchiveFile, str | None], SourceBase]
    read_only_reason: str = "a bundle is a snapshot: rebuild it with write_bundle, never edit it in place"


_KINDS: dict[str, ArchiveKind] = {}
#: Every kind's name endings, longest first (``.tar.gz`` before ``.gz``).
_ENDINGS: list[tuple[str, ArchiveKind]] = []


def register_archive(kind: ArchiveKind) -> ArchiveKind:
    _KINDS[kind.protocol] = kind
    endings = ((suffix, kind) for kind in _KINDS.values() for suffix in kind.suffixes)
    _ENDINGS[:] = sorted(endings, key=lambda ending: -len(ending[0]))
    return kind


def archive_kinds() -> tuple[ArchiveKind, ...]:
    return tuple(_KINDS.values())


def archive_hop(url: str, storage_options: dict[str, Any]) -> tuple[ArchiveKind, str, str] | None:
    """``zip://FOLDER::REST`` as ``(kind, FOLDER, REST)``, ``None`` without an archive hop first
    (which takes no options of its own)."""
    head, _, rest = url.partition("::")
    protocol, scheme, folder = head.partition("://")
    kind = _KINDS.get(protocol) if scheme and rest else None
    if kind is not None and storage_options.pop(protocol, None):
        raise TypeError(f"the {protocol}:// hop takes no storage options; key options by the inner protocol")
    return None if kind is None else (kind, folder, rest)


def kind_by_name(path: str) -> ArchiveKind | None:
    """The kind a file name's ending says (the longest wins: ``.tar.gz`` over ``.gz``)."""
    lower = path.lower()
    return next((kind for ending, kind in _ENDINGS if lower.endswith(ending)), None)


def detect_kind(file: ArchiveFile) -> ArchiveKind | None:
    kind = kind_by_name(file.path)
    if kind is None:
        head = file.head()
        kind = next((kind for kind in _KINDS.values() if kind.sniff(head)), None)
    return kind


def not_a_bundle(location: str) -> OSError:
    kinds = " nor ".join(f"a {kind.protocol} bundle" for kind in _KINDS.values())
    return location_error(NotADirectoryError, location, f"is a file, neither a directory nor {kinds}")


def archive_for_file(file: ArchiveFile, folder: str | None = None) -> SourceBase:
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
