"""The :class:`BootstrapSource` protocol and the richer read result the built-in sources give."""

from __future__ import annotations

import asyncio
import errno
import hashlib
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from toolnexus.errors import BootstrapError
from toolnexus.sources.freshness import Changes, FreshFile, NotModified, Validators

if TYPE_CHECKING:
    from toolnexus.sources.children import Pages
    from toolnexus.stores import MemoryStore

__all__ = [
    "BootstrapSource",
    "Entry",
    "EntrySourceBase",
    "Reading",
    "SourceBase",
    "by_content",
    "cache_key",
    "changed_since",
    "changed_since_async",
    "read_entries",
    "read_entries_async",
    "read_folder",
    "read_only",
    "read_prefixes",
    "writer_of",
]


@runtime_checkable
class BootstrapSource(Protocol):
    """Where a persona's bootstrap files come from. Implement it to compose from anywhere.

    A source is asked once per composition for all the names it might hold, so a remote source
    can issue its reads concurrently (one round trip). It returns, for each requested name that
    exists as a regular file, **at most** ``limit + 1`` bytes from the start of that file — the
    extra byte is how the composer learns the file was over the cap. Names that do not exist are
    left out. A name that exists but cannot be read must raise (never be left out): a missing
    section would silently change the persona. The composer does everything else — ordering,
    the cap, decoding, section format — so a source never formats text.

    ``location`` is a human-readable name used in error messages and reports.

    Example — a source over rows of a database table (here a dict; for a ready-made one see
    :class:`DictSource`), checked by the test suite as a doctest::

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
        """Human-readable location, used in messages (``"s3://bucket/aster"``)."""
        ...

    def read(self, names: Sequence[str], limit: int) -> Mapping[str, bytes]:
        """Return ``{name: first ≤ limit + 1 bytes}`` for every name present as a regular file."""
        ...


class Entry(NamedTuple):
    """One name as a built-in source found it.

    ``data`` is ``None`` for a name that exists but is not a regular file (a directory, FIFO,
    socket or device): skipped, never read. ``size`` is the full size on the source when known.
    ``origin`` is the location that supplied it when that is not the reading's own (the layer of
    a layered persona). ``why`` says what a skipped name is instead (``"folder"``, ``"fifo"``).
    A named tuple, not a frozen dataclass: one is built per file per composition, and a frozen
    dataclass's ``__init__`` costs as much as a local file's ``fstat``.
    """

    data: bytes | None
    size: int | None = None
    origin: str | None = None
    why: str | None = None


class Reading(NamedTuple):
    """What one batch read found, and where the home turned out to be (e.g. a folder in a bundle).

    A named tuple for the same reason as :class:`Entry`: one is built per composition.
    """

    location: str
    entries: dict[str, Entry]


def _entries_from_read(source: BootstrapSource, names: Sequence[str], limit: int) -> Reading:
    """Adapt a plain user source: every returned name is a present file, capped here again."""
    result: dict[str, Entry] = {}
    for name, data in source.read(names, limit).items():
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"{source.location}: read() returned {type(data).__name__} for {name}, not bytes")
        result[name] = Entry(bytes(data[: limit + 1]))
    return Reading(source.location, result)


def read_entries(
    source: BootstrapSource, names: Sequence[str], limit: int, *, exact_sizes: bool = False
) -> Reading:
    """Read ``names`` from any source, using the richer built-in path where there is one."""
    if isinstance(source, SourceBase):
        return source.read_entries(names, limit, exact_sizes=exact_sizes)
    return _entries_from_read(source, names, limit)


async def read_entries_async(
    source: BootstrapSource, names: Sequence[str], limit: int, *, exact_sizes: bool = False
) -> Reading:
    """Async :func:`read_entries`: built-in sources decide how; a user source runs in a thread."""
    if isinstance(source, SourceBase):
        return await source.read_entries_async(names, limit, exact_sizes=exact_sizes)
    return await asyncio.to_thread(_entries_from_read, source, names, limit)


def read_folder(source: BootstrapSource, folder: str, limit: int) -> Reading:
    """The files below ``folder`` of any source (see :meth:`SourceBase.read_folder`); a plain
    :class:`BootstrapSource` cannot list, so it has none."""
    if isinstance(source, SourceBase):
        return source.read_folder(folder, limit)
    return Reading(source.location, {})


def by_content(reading: Reading, since: Validators | None, tag: Hashable | None = None) -> Changes:
    """The proof every source has: a full reading, in which a file whose bytes hash the same as
    last time is ``kept``. Present regular files only; ``tag`` is passed through."""
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


def read_prefixes(
    source: BootstrapSource, names: Sequence[str], limit: int, *, exact_sizes: bool = False
) -> Mapping[str, bytes] | Reading:
    """What ``compose_soul`` needs: plain prefixes where the source can give just those cheaply
    (see :meth:`SourceBase.read_fast`), else a :class:`Reading`."""
    if isinstance(source, SourceBase):
        return source.read_fast(names, limit, exact_sizes=exact_sizes)
    return _entries_from_read(source, names, limit)


def changed_since(
    source: BootstrapSource, since: Validators | None, names: Sequence[str], limit: int
) -> Changes | NotModified:
    """What changed in ``source`` since the validators ``since`` (``None``: a first read); a user
    source without :meth:`SourceBase.changed_since` is read and compared by content."""
    if isinstance(source, SourceBase):
        return source.changed_since(since, names, limit)
    return by_content(_entries_from_read(source, names, limit), since)


async def changed_since_async(
    source: BootstrapSource, since: Validators | None, names: Sequence[str], limit: int
) -> Changes | NotModified:
    """Async :func:`changed_since`: built-in sources decide how; a user source runs in a thread."""
    if isinstance(source, SourceBase):
        return await source.changed_since_async(since, names, limit)
    return await asyncio.to_thread(changed_since, source, since, names, limit)


def cache_key(source: BootstrapSource) -> Hashable:
    """Which cached persona ``source`` is (see :attr:`SourceBase.cache_key`)."""
    if isinstance(source, SourceBase):
        return source.cache_key
    fs = getattr(source, "fs", None)
    if fs is not None:
        return (type(source).__name__, source.location, fs_token(fs))
    return (type(source).__qualname__, source.location, getattr(source, "folder", None))


def fs_token(fs: Any) -> Hashable:
    """What tells two fsspec filesystems apart (endpoint, credentials): fsspec's own token."""
    token: Hashable = getattr(fs, "_fs_token", None) or id(fs)
    return token


class SourceBase:
    """Base of the built-in sources, public for sources that want the same richer read path.

    Implement :meth:`read_entries`; ``read`` and the async path derive from it. Over the plain
    protocol it adds sizes (for ``inspect_soul``), names that exist but are not regular files
    (skipped, never read) and the location where the home turned out to be (e.g. a folder
    inside a bundle). A source that can be written also defines ``writer`` (see
    :func:`writer_of`). A source with a cheaper proof of freshness than reading everything
    again overrides :meth:`changed_since` (see :mod:`.freshness`).
    """

    location: str

    def read_entries(self, names: Sequence[str], limit: int, *, exact_sizes: bool = False) -> Reading:
        """Everything :meth:`read` gives, as :class:`Entry` objects; see the protocol's rules."""
        raise NotImplementedError

    async def read_entries_async(
        self, names: Sequence[str], limit: int, *, exact_sizes: bool = False
    ) -> Reading:
        """Default: run the blocking read in a worker thread so the event loop stays free."""
        return await asyncio.to_thread(self.read_entries, names, limit, exact_sizes=exact_sizes)

    def read_fast(
        self, names: Sequence[str], limit: int, *, exact_sizes: bool = False
    ) -> Mapping[str, bytes] | Reading:
        """:meth:`read_entries`, or just ``{name: bytes}`` when every present name is a regular
        file within the cap (so each size is its length) and the source can tell that cheaply
        (the local hot path does)."""
        return self.read_entries(names, limit, exact_sizes=exact_sizes)

    def changed_since(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | NotModified:
        """What changed since the validators ``since`` (``None``: everything is new).

        The default reads everything and keeps the files whose bytes hash the same
        (:func:`.freshness.by_content`): always correct. A backend with a cheaper proof (a stat,
        an ETag) overrides it, and answers :data:`.freshness.NOT_MODIFIED` when it can prove the
        whole home unchanged; it never answers that to ``since=None``.
        """
        return by_content(self.read_entries(names, limit), since)

    async def changed_since_async(
        self, since: Validators | None, names: Sequence[str], limit: int
    ) -> Changes | NotModified:
        """Default: :meth:`changed_since` in a worker thread so the event loop stays free."""
        return await asyncio.to_thread(self.changed_since, since, names, limit)

    @property
    def cache_key(self) -> Hashable:
        """Which cached persona this source is. Two sources with equal keys share a cache entry,
        so a key names what identifies the bytes (the location, and the filesystem's token where
        there is one); a key shared by two different sources must only cost re-reading, which
        holds for sources whose validators are content digests (the default)."""
        return (type(self).__qualname__, self.location, getattr(self, "folder", None))

    def read_folder(self, folder: str, limit: int) -> Reading:
        """Every regular file below ``folder`` (``memory``, the topic files), at most ``limit + 1``
        bytes each, keyed by its path relative to the home (``memory/projects/aster.md``).

        Hidden names are left out and no symlink is followed. The default finds nothing: a
        source that cannot list (HTTP, a plain :class:`BootstrapSource`) has no folders.
        """
        return Reading(self.location, {})

    def children(self) -> Pages | None:
        """This location's direct children, page by page (see :mod:`.children`), or ``None``
        when it is one home that holds no others (a bundle, layers, a mapping): the default.
        A location that does not exist is a :class:`FileNotFoundError` naming it."""
        return None

    def read(self, names: Sequence[str], limit: int) -> Mapping[str, bytes]:
        """The :class:`BootstrapSource` view: present regular files only."""
        entries = self.read_entries(names, limit).entries
        return {name: entry.data for name, entry in entries.items() if entry.data is not None}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"


#: The name the built-in sources' base had before it was public; kept so old imports work.
EntrySourceBase = SourceBase


def read_only(location: str, what: str, why: str) -> BootstrapError:
    """The error a read-only source's ``writer`` raises: what it is, and why it cannot be written.
    Its ``errno`` is ``EROFS``, so a caller can tell "read-only" from other failures."""
    error = BootstrapError(
        f"{location}: is {what}, which memory_tool cannot write ({why}); "
        "point it at a writable persona folder"
    )
    error.errno = errno.EROFS
    return error


def writer_of(source: BootstrapSource, name: str, *, single_writer: bool = False) -> MemoryStore:
    """How ``name`` (MEMORY.md) in ``source`` is written: the source's own ``writer``, or why not.

    A source that can be written has ``writer(name="MEMORY.md", *, single_writer=False)`` returning a
    store; a read-only one raises :class:`BootstrapError` from it, saying why. A source without a
    ``writer`` (a plain :class:`BootstrapSource`) is a :class:`TypeError`: it can only be read.
    """
    writer: Any = getattr(source, "writer", None)
    if writer is None:
        raise TypeError(
            f"memory_tool needs a location it can write (a path, URL, fs= or UPath), "
            f"not a {type(source).__name__}, which can only be read"
        )
    store: MemoryStore = writer(name, single_writer=single_writer)
    return store
