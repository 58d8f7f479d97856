"""obstore's client for one object and for a store's files: the operations the obstore engine's
source (:mod:`.obstore`) builds on — ranged and conditional GETs (and the zip-tail plan's
:class:`~.remote.RemoteObject`), and the few file operations archives and ``write_bundle`` need.
Every obstore error leaves here mapped (:func:`toolnexus._object_store.object_store_error`)."""

from __future__ import annotations

import io
from collections.abc import Callable, Coroutine, Hashable
from typing import IO, TYPE_CHECKING, Any, TypeVar

from toolnexus._aio import run_sync
from toolnexus._fs import is_empty_range_error
from toolnexus._object_store import is_conflict, object_store_error
from toolnexus.errors import BootstrapError
from toolnexus.sources.freshness import NOT_MODIFIED, NotModified
from toolnexus.sources.registry import STREAM_BLOCK_SIZE
from toolnexus.sources.remote import Fetched, ObjectChangedError
from toolnexus.stores.obstore import store_token, store_url

if TYPE_CHECKING:
    from obstore import GetOptions

__all__ = ["STORE_FILES", "ObstoreRemote", "Rebuild", "StoreFiles"]

T = TypeVar("T")


class ObstoreRemote:
    """One object through obstore, as :mod:`.tail_archive` fetches it (and as freshness does)."""

    def __init__(self, store: Any, key: str) -> None:
        self.store = store
        self.key = key
        self.location = store_url(store, key)

    @property
    def token(self) -> Hashable:
        return store_token(self.store)

    def run(self, function: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        return run_sync(function, *args)

    async def get(
        self, byte_range: Any, *, if_none_match: str | None = None, if_match: str | None = None
    ) -> Fetched | NotModified:
        """One GET of ``byte_range`` (obstore's spelling) under the conditions; an empty object
        (whose range cannot be satisfied) is fetched whole. Errors come out mapped."""
        import obstore  # noqa: PLC0415

        options: GetOptions = {"range": byte_range}
        if if_none_match is not None:
            options["if_none_match"] = if_none_match
        if if_match is not None:
            options["if_match"] = if_match
        try:
            try:
                result = await obstore.get_async(self.store, self.key, options=options)
            except Exception as error:
                if not (is_empty_range_error(error) or _ignored_range(error)):
                    raise
                del options["range"]  # an empty object: nothing to range over
                result = await obstore.get_async(self.store, self.key, options=options)
                _refuse_whole(result.meta, byte_range, self.location)
            body = bytes(await result.bytes_async())
        except Exception as error:
            if _not_modified(error):
                return NOT_MODIFIED
            if is_conflict(error):
                raise ObjectChangedError(f"{self.location} changed while it was being read") from error
            raise object_store_error(error) from error
        return Fetched(body, result.meta["e_tag"], int(result.meta["size"]))

    async def tail(self, size: int, *, if_none_match: str | None = None) -> Fetched | NotModified:
        if type(self.store).__name__ != "AzureStore":
            return await self.get({"suffix": size}, if_none_match=if_none_match)
        return await self._tail_without_suffix(size, if_none_match)

    async def _tail_without_suffix(self, size: int, if_none_match: str | None) -> Fetched | NotModified:
        """Azure Blob answers no suffix range: a HEAD for the size and ETag, then a GET pinned
        to that ETag (a bundle replaced in between fails it, and the read starts over)."""
        import obstore  # noqa: PLC0415

        try:
            head = await obstore.head_async(self.store, self.key)
        except Exception as error:
            raise object_store_error(error) from error
        if if_none_match is not None and head["e_tag"] == if_none_match:
            return NOT_MODIFIED
        total = int(head["size"])
        if total == 0:
            return Fetched(b"", head["e_tag"], 0)
        body = await self.piece(max(0, total - size), total, if_match=head["e_tag"])
        return Fetched(body, head["e_tag"], total)

    async def piece(self, start: int, end: int, *, if_match: str | None) -> bytes:
        got = await self.get((start, end), if_match=if_match)
        if isinstance(got, NotModified):  # cannot happen without If-None-Match
            raise BootstrapError(f"{self.location}: unexpected 304")
        return got.body


def _not_modified(error: BaseException) -> bool:
    import obstore.exceptions  # noqa: PLC0415

    return isinstance(error, obstore.exceptions.NotModifiedError)


def _refuse_whole(meta: Any, byte_range: Any, location: str) -> None:
    """After a range went unanswered, the object fetched whole must be no larger than the range
    asked for (an empty or tiny object): never download a large one because a server ignores
    ``Range``."""
    bound = byte_range["suffix"] if isinstance(byte_range, dict) else byte_range[1]
    if int(meta["size"]) > bound:
        raise OSError(f"{location}: the server does not answer byte ranges; not downloading it whole")


def _ignored_range(error: BaseException) -> bool:
    """A server that answered a ranged GET with the whole object (200): moto does for a suffix
    range of an empty object; obstore then refuses the response."""
    return "non-partial response" in str(error)


#: :class:`StoreFiles` as the protocol table names it: ``fs=`` an obstore home's files is read
#: through the engine whatever ``engine=`` says (there is no other way to read it).
STORE_FILES = "toolnexus.sources.obstore_client.StoreFiles"

#: How a store built from a URL's options is made again in another process: ``(factory, args)``.
Rebuild = tuple[Callable[..., Any], tuple[Any, ...]]


class StoreFiles:
    """The few file operations :class:`ArchiveFile` uses (a bundle's leading bytes, a stream for
    tar) and ``write_bundle`` uses (``exists``, ``pipe_file``), over an obstore store: how this
    engine reads bundles other than zip, and writes bundles. It is also the engine's stand-in for
    a filesystem: ``resolve(key, fs=files)`` is the home ``key`` on the same store (how ``audit``
    opens each persona it listed, here or on a worker).

    ``rebuild`` is how the store was built from a URL's options (``(factory, args)``); sent to
    another process, the files are rebuilt by calling it there, which finds that process's own
    store for those options (one HTTP client per worker, as fsspec's instance cache gives s3fs).
    Without it the store object itself is pickled: obstore pickles its S3, GCS and Azure stores
    by their configuration; a ``MemoryStore`` or a Python credential provider does not pickle.
    """

    protocol = "obstore"
    #: obstore's runtime (tokio) keeps threads that ``fork()`` does not copy: a forked process
    #: that uses a store made before the fork hangs. ``audit`` refuses such worker pools.
    fork_safe = False

    def __init__(self, store: Any, rebuild: Rebuild | None = None) -> None:
        self.store = store
        self.rebuild = rebuild

    def __reduce__(self) -> tuple[Any, ...]:
        if self.rebuild is None:
            return (StoreFiles, (self.store,))
        return (_rebuilt, self.rebuild)

    def unstrip_protocol(self, path: str) -> str:
        return store_url(self.store, path)

    def _strip_protocol(self, path: str) -> str:
        """A key in the store (fsspec's name for it: ``resolve`` calls it on any ``fs=``)."""
        return path.strip("/")

    def invalidate_cache(self, path: str | None = None) -> None:
        """obstore caches nothing: nothing to drop."""

    def exists(self, path: str) -> bool:
        import obstore  # noqa: PLC0415

        try:
            obstore.head(self.store, path)
        except Exception as error:
            mapped = object_store_error(error)
            if isinstance(mapped, FileNotFoundError):
                return False
            raise mapped from error
        return True

    def pipe_file(self, path: str, data: bytes) -> None:
        """One PUT (atomic on object stores)."""
        import obstore  # noqa: PLC0415

        try:
            obstore.put(self.store, path, data, use_multipart=False)
        except Exception as error:
            raise object_store_error(error) from error

    def cat_file(self, path: str, start: int = 0, end: int | None = None) -> bytes:
        import obstore  # noqa: PLC0415

        try:
            if end is None:
                return bytes(obstore.get(self.store, path).bytes())
            return bytes(obstore.get_range(self.store, path, start=start, end=end))
        except Exception as error:
            if is_empty_range_error(error):
                return b""
            raise object_store_error(error) from error

    def open(self, path: str, mode: str = "rb", **options: Any) -> IO[bytes]:
        """A sequential reader with a readahead of ``block_size`` (1 MiB by default); for ``"wb"``
        a streamed writer (see :class:`_Writer`)."""
        import obstore  # noqa: PLC0415

        try:
            if "w" in mode:
                return _Writer(obstore.open_writer(self.store, path))  # type: ignore[return-value]
            reader = obstore.open_reader(
                self.store, path, buffer_size=options.get("block_size") or STREAM_BLOCK_SIZE
            )
        except Exception as error:
            raise object_store_error(error) from error
        return io.BufferedReader(_Reader(reader))


def _rebuilt(factory: Callable[..., Any], args: tuple[Any, ...]) -> StoreFiles:
    """:class:`StoreFiles` made again from its recipe (see ``StoreFiles.rebuild``)."""
    return StoreFiles(factory(*args), (factory, args))


class _Reader(io.RawIOBase):
    """obstore's ``ReadableFile`` as a raw binary stream (its reads return ``Bytes``)."""

    def __init__(self, reader: Any) -> None:
        super().__init__()
        self._reader = reader

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self._reader.read(len(buffer))
        except Exception as error:
            raise object_store_error(error) from error
        view = memoryview(data)
        buffer[: len(view)] = view
        return len(view)

    def close(self) -> None:
        self._reader.close()
        super().close()


class _Writer:
    """obstore's ``WritableFile``, its errors mapped: nothing appears until :meth:`close` (a
    small object is one PUT then; past obstore's 10 MiB buffer a multipart upload, completed
    by ``close``); :meth:`discard` drops it unfinished, so the object never appears."""

    def __init__(self, writer: Any) -> None:
        self._writer = writer

    def write(self, data: bytes) -> int:
        try:
            return int(self._writer.write(data))
        except Exception as error:
            raise object_store_error(error) from error

    def close(self) -> None:
        try:
            self._writer.close()
        except Exception as error:
            raise object_store_error(error) from error

    def discard(self) -> None:
        self._writer = None
