"""The one source interface: the :class:`BootstrapSource` protocol users implement, and
:class:`SourceBase`, which every source below :func:`~toolnexus.sources.resolve` is."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from toolnexus.errors import BootstrapError, location_error, read_error
from toolnexus.sources.freshness import Changes, FreshFile, NotModified, Validators

if TYPE_CHECKING:
    from toolnexus.sources.children import Pages
    from toolnexus.stores.base import MemoryStore


@runtime_checkable
class BootstrapSource(Protocol):
    """Where a persona's bootstrap files come from. Implement it to compose from anywhere.

    ``read`` is asked once for all the names (a remote source reads them concurrently) and returns
    **at most** ``limit + 1`` bytes of each present regular file (the extra byte says "over the
    cap"); absent names are left out, an unreadable one raises. The composer does the rest.

    A source over rows of a database table (here a dict; :class:`DictSource` is a ready one)::

        >>> from collections.abc import Mapping, Sequence
        >>> from toolnexus.agents import compose_soul
        >>> class TableSource:
        ...     def __init__(self, rows: Mapping[str, bytes], location: str = "db://personas/aster") -> None:
        ...         self.rows = dict(rows)
        ...         self.location = location
        ...
        ...     def read(self, names: Sequence[str], limit: int) -> Mapping[str, bytes]:
        ...         return {n: self.rows[n][: limit + 1] for n in names if n in self.rows}
        >>> soul, found = compose_soul(TableSource({"SOUL.md": b"You are Aster."}))
        >>> soul
        '## SOUL.md\\n\\nYou are Aster.'
        >>> found
        ['SOUL.md']
    """

    @property
    def location(self) -> str:
        """Where it is, for messages (``"s3://bucket/aster"``)."""
        ...

    def read(self, names: Sequence[str], limit: int) -> Mapping[str, bytes]: ...


#: Which files of a folder :meth:`SourceBase.read_folder` reads, by their path below it.
Match = Callable[[str], bool]


class Entry(NamedTuple):
    """One name as found: ``data`` ``None`` for no regular file (``why`` says what), ``size`` the
    full size when known, ``origin`` the layer. A named tuple: one is built per file and call."""

    data: bytes | None
    size: int | None = None
    origin: str | None = None
    why: str | None = None


class Reading(NamedTuple):
    """What one batch read found, and where the home turned out to be (a folder in a bundle)."""

    location: str
    entries: dict[str, Entry]


def by_content(reading: Reading, since: Validators | None, tag: Hashable | None = None) -> Changes:
    """The proof every source has: a file whose bytes hash the same as last time is ``kept``."""
    previous: Mapping[str, Hashable | None] = {} if since is None else since.validators
    kept: list[str] = []
    read: dict[str, FreshFile] = {}
    for name, entry in reading.entries.items():
        if entry.data is None:
            continue
        digest = ("blake2b", hashlib.blake2b(entry.data, digest_size=16).digest())
        if previous.get(name) == digest:
            kept.append(name)
        else:
            read[name] = FreshFile(entry.data, entry.size, digest)
    return Changes(reading.location, tag, tuple(kept), read)


def fs_token(fs: Any) -> Hashable:
    """What tells two fsspec filesystems apart (endpoint, credentials)."""
    return getattr(fs, "_fs_token", None) or id(fs)


@contextlib.contextmanager
def read_errors(location: str, name: str | None = None, *, missing: str | None = None) -> Iterator[None]:
    """A failure inside as :func:`.read_error` about ``name``; with ``missing``, no such file is that."""
    try:
        yield
    except Exception as error:
        if missing is not None and isinstance(error, FileNotFoundError):
            raise location_error(FileNotFoundError, location, missing) from None
        raise read_error(error, location, name) from error


def read_only(location: str, what: str, why: str) -> BootstrapError:
    """The error a read-only source's ``writer`` raises; its ``errno`` is ``EROFS``."""
    error = BootstrapError(
        f"{location}: is {what}, which memory_tool cannot write ({why}); "
        "point it at a writable persona folder"
    )
    error.errno = errno.EROFS
    return error


def _cannot_write(kind: str) -> TypeError:
    return TypeError(
        f"memory_tool needs a location it can write (a path, URL, fs= or UPath), "
        f"not a {kind}, which can only be read"
    )


class SourceBase:
    """What every source below ``resolve`` is. Implement :meth:`read_entries` (sizes, non-files,
    where the home turned out to be); override :meth:`writer` to be written, :meth:`changed_since`
    for a cheaper proof of freshness (:mod:`.freshness`), :meth:`children` to be audited."""

    location: str

    def read_entries(self, names: Sequence[str], limit: int, *, exact_sizes: bool = False) -> Reading:
        raise NotImplementedError

    async def read_entries_async(
        self, names: Sequence[str], limit: int, *, exact_sizes: bool = False
    ) -> Reading:
        return await asyncio.to_thread(self.read_entries, names, limit, exact_sizes=exact_sizes)

    def read_fast(
        self, names: Sequence[str], limit: int, *, exact_sizes: bool = False
    ) -> Mapping[str, bytes] | Reading:
        """:meth:`read_entries`, or plain ``{name: bytes}`` when every present name is a whole
        regular file within the cap (the local hot path)."""
        return self.read_entries(names, limit, exact_sizes=exact_sizes)

    def changed_since(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | NotModified:
        """What changed since ``since`` (``None``: a first read); by default, content digests."""
        return by_content(self.read_entries(names, limit), since)

    async def changed_since_async(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | NotModified:
        return await asyncio.to_thread(self.changed_since, since, names, limit)

    @property
    def cache_key(self) -> Hashable:
        """Which cached persona this is: equal keys share a cache entry."""
        return (type(self).__qualname__, self.location, getattr(self, "folder", None))

    def read_folder(self, folder: str, limit: int, *, match: Match | None = None) -> Reading:
        """Every regular file below ``folder`` (the topic files), keyed by its path in the home
        (``memory/a.md``), hidden names left out, no symlink followed; with ``match``, only the
        files whose path below ``folder`` it accepts are read. Default: none (no listing)."""
        return Reading(self.location, {})

    def children(self) -> Pages | None:
        """This location's direct children page by page (:mod:`.children`); ``None``: one home."""
        return None

    def writer(self, name: str = "MEMORY.md", *, single_writer: bool = False) -> MemoryStore:
        """How ``name`` is written here; a read-only source raises why (:func:`read_only`)."""
        raise _cannot_write(type(self).__name__)

    def read(self, names: Sequence[str], limit: int) -> Mapping[str, bytes]:
        entries = self.read_entries(names, limit).entries
        return {name: entry.data for name, entry in entries.items() if entry.data is not None}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"


class PlainSource(SourceBase):
    """A plain :class:`BootstrapSource` as a :class:`SourceBase` (:func:`as_source`)."""

    def __init__(self, source: BootstrapSource) -> None:
        self.source = source
        self.location = source.location

    def read_entries(self, names: Sequence[str], limit: int, *, exact_sizes: bool = False) -> Reading:
        result: dict[str, Entry] = {}
        for name, data in self.source.read(names, limit).items():
            if not isinstance(data, bytes | bytearray | memoryview):
                kind = type(data).__name__
                raise TypeError(f"{self.source.location}: read() returned {kind} for {name}, not bytes")
            result[name] = Entry(bytes(data[: limit + 1]))
        return Reading(self.source.location, result)

    @property
    def cache_key(self) -> Hashable:
        source = self.source
        fs = getattr(source, "fs", None)
        if fs is not None:
            return (type(source).__name__, source.location, fs_token(fs))
        return (type(source).__qualname__, source.location, getattr(source, "folder", None))

    def writer(self, name: str = "MEMORY.md", *, single_writer: bool = False) -> MemoryStore:
        writer: Any = getattr(self.source, "writer", None)
        if writer is None:
            raise _cannot_write(type(self.source).__name__)
        store: MemoryStore = writer(name, single_writer=single_writer)
        return store


def as_source(source: BootstrapSource) -> SourceBase:
    """The resolving step for a source object: a :class:`SourceBase` as it is, else wrapped."""
    return source if isinstance(source, SourceBase) else PlainSource(source)
