"""The obstore engine (``engine="obstore"``): the object-store plan (:mod:`.objects`) over obstore,
for a fraction of s3fs's CPU. Options are obstore's keys plus the fsspec spellings with an obstore
equivalent, so a call switches engine without new options; any other is refused by name."""

from __future__ import annotations

import asyncio
import io
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, TypeVar

from toolnexus._fs import is_empty_range_error
from toolnexus._object_store import is_conflict, object_store_error
from toolnexus.errors import location_error
from toolnexus.sources.base import Reading, SourceBase, read_errors
from toolnexus.sources.children import Pages, delimited_children, no_such_prefix
from toolnexus.sources.freshness import NOT_MODIFIED, NotModified
from toolnexus.sources.fsspec import FsspecSource
from toolnexus.sources.objects import Fetched, ObjectChangedError, ObjectClient, ObjectHome
from toolnexus.sources.registry import STREAM_BLOCK_SIZE, Engine, archive_hop
from toolnexus.stores.base import MemoryStore
from toolnexus.stores.obstore import (
    PROTOCOLS,
    ObstoreStore,
    SingleWriterObstoreStore,
    store_token,
    store_url,
)

if TYPE_CHECKING:
    from obstore import GetOptions

T = TypeVar("T")

#: obstore's fsspec adapter and :class:`StoreFiles` as the protocol table names them; the protocols
#: the adapter speaks.
ADAPTER = "obstore.fsspec.FsspecStore"
ADAPTER_PROTOCOLS = (
    *("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "azure"),
    *("http", "https", "file", "memory"),
)
STORE_FILES = "toolnexus.sources.obstore.StoreFiles"


def _obstore() -> Any:
    """obstore, imported on first use (the optional engine; a store means it is there)."""
    import obstore  # noqa: PLC0415

    return obstore


def _mapped(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call``, its failure in the vocabulary of every source (:func:`.object_store_error`)."""
    try:
        return call(*args, **kwargs)
    except Exception as error:
        raise object_store_error(error) from error


async def _capped(cat: Callable[..., Coroutine[Any, Any, Any]], path: str, end: int) -> Any:
    """Bytes ``[0, end)`` of ``path``, or its failure as a value (an empty object's 416 kept)."""
    try:
        return await cat(path, start=0, end=end)
    except Exception as error:
        return error if is_empty_range_error(error) else object_store_error(error)


class ObstoreClient(ObjectClient):
    """One object through obstore, for the tail read and revalidation."""

    async def get(
        self,
        start: int,
        end: int | None = None,
        *,
        if_none_match: str | None = None,
        if_match: str | None = None,
    ) -> Fetched | NotModified:
        byte_range: Any = {"suffix": -start} if end is None else (start, end)
        options: GetOptions = {"range": byte_range}
        if if_none_match is not None:
            options["if_none_match"] = if_none_match
        if if_match is not None:
            options["if_match"] = if_match
        try:
            try:
                result = await _obstore().get_async(self.fs.store, self.path, options=options)
            except Exception as error:
                # an empty object has no range to satisfy (moto answers a suffix of one with 200)
                if not (is_empty_range_error(error) or "non-partial response" in str(error)):
                    raise
                del options["range"]
                result = await _obstore().get_async(self.fs.store, self.path, options=options)
                if int(result.meta["size"]) > (-start if end is None else end):  # never a large one whole
                    why = "the server does not answer byte ranges; not downloading it whole"
                    raise OSError(f"{self.location}: {why}") from error
            body = bytes(await result.bytes_async())
        except Exception as error:
            if type(error).__name__ == "NotModifiedError":
                return NOT_MODIFIED
            if is_conflict(error):
                raise ObjectChangedError(f"{self.location} changed while it was being read") from error
            raise object_store_error(error) from error
        return Fetched(body, result.meta["e_tag"], int(result.meta["size"]))

    async def tail(self, size: int, *, if_none_match: str | None = None) -> Fetched | NotModified:
        """Azure Blob answers no suffix range: a HEAD, then a GET pinned to its ETag."""
        if type(self.fs.store).__name__ != "AzureStore":
            return await super().tail(size, if_none_match=if_none_match)
        try:
            head = await _obstore().head_async(self.fs.store, self.path)
        except Exception as error:
            raise object_store_error(error) from error
        if if_none_match is not None and head["e_tag"] == if_none_match:
            return NOT_MODIFIED
        total = int(head["size"])
        if total == 0:
            return Fetched(b"", head["e_tag"], 0)
        body = await self.piece(max(0, total - size), total, if_match=head["e_tag"])
        return Fetched(body, head["e_tag"], total)


class StoreFiles:
    """An obstore store as the few filesystem calls the plan, archives and ``write_bundle`` make;
    pickled (``audit``'s workers), a store built from a URL is rebuilt from ``rebuild``."""

    protocol = "obstore"
    fork_safe = False  # obstore's runtime (tokio) keeps threads that fork() does not copy
    #: Its coroutines are awaited on any loop (the caller's).
    async_impl = asynchronous = True

    def __init__(self, store: Any, rebuild: tuple[Callable[..., Any], tuple[Any, ...]] | None = None) -> None:
        self.store = store
        self.rebuild = rebuild

    def __reduce__(self) -> tuple[Any, ...]:
        return (StoreFiles, (self.store,)) if self.rebuild is None else (_rebuilt, self.rebuild)

    @property
    def _fs_token(self) -> str:  # what tells two stores' servers apart (:func:`.fs_token`)
        return store_token(self.store)

    def unstrip_protocol(self, path: str) -> str:
        return store_url(self.store, path)

    def _strip_protocol(self, path: str) -> str:
        return path.strip("/")

    def invalidate_cache(self, path: str | None = None) -> None:
        """obstore caches nothing."""

    def head(self, path: str) -> int | None:
        """The size of the object ``path`` (one HEAD), ``None`` if there is none."""
        try:
            return int(_mapped(_obstore().head, self.store, path)["size"]) if path else None
        except FileNotFoundError:
            return None

    def isdir(self, path: str) -> bool:
        """One LIST of the prefix: does anything live under it?"""
        listing = _mapped(_obstore().list_with_delimiter, self.store, path or None)
        return bool(listing["objects"] or listing["common_prefixes"])

    def info(self, path: str) -> dict[str, Any]:
        """A HEAD; where no object is, a LIST tells a folder from nothing (as s3fs does)."""
        size = self.head(path)
        if size is None and not self.isdir(path):
            raise FileNotFoundError(path)
        return {"name": path, "type": "directory" if size is None else "file", "size": size or 0}

    def exists(self, path: str) -> bool:
        return self.head(path) is not None

    def find(self, path: str, detail: bool = True) -> dict[str, dict[str, Any]]:
        chunks = _mapped(lambda: list(_obstore().list(self.store, prefix=path.rstrip("/"), chunk_size=1000)))
        metas = (meta for chunk in chunks for meta in chunk)
        return {str(meta["path"]): {"type": "file", "size": int(meta["size"])} for meta in metas}

    @property
    def loop(self) -> Any:
        """fsspec's I/O loop, where sync code runs obstore's coroutines (:func:`.run_on_loop`)."""
        from fsspec.asyn import get_loop  # noqa: PLC0415

        return get_loop()

    async def _cat_file(self, path: str, start: int = 0, end: int | None = None) -> bytes:
        return bytes(await _obstore().get_range_async(self.store, path, start=start, end=end or 0))

    def pipe_file(self, path: str, data: bytes) -> None:
        _mapped(_obstore().put, self.store, path, data, use_multipart=False)

    def cat_file(self, path: str, start: int, end: int) -> bytes:
        try:
            return bytes(_obstore().get_range(self.store, path, start=start, end=end))
        except Exception as error:
            if is_empty_range_error(error):
                return b""
            raise object_store_error(error) from error

    def open(self, path: str, mode: str = "rb", **options: Any) -> IO[bytes]:
        """A reader with a readahead of ``block_size`` (1 MiB), or for ``"wb"`` a streamed writer."""
        if "w" in mode:
            return _Writer(_mapped(_obstore().open_writer, self.store, path))  # type: ignore[return-value]
        buffer_size = options.get("block_size") or STREAM_BLOCK_SIZE
        return io.BufferedReader(
            _Reader(_mapped(_obstore().open_reader, self.store, path, buffer_size=buffer_size))
        )


def _rebuilt(factory: Callable[..., Any], args: tuple[Any, ...]) -> StoreFiles:
    return StoreFiles(factory(*args), (factory, args))


class _Reader(io.RawIOBase):
    """obstore's ``ReadableFile`` as a raw binary stream (its reads return ``Bytes``)."""

    def __init__(self, reader: Any) -> None:
        super().__init__()
        self._reader = reader

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(_mapped(self._reader.read, len(buffer)))
        buffer[: len(view)] = view
        return len(view)

    def close(self) -> None:
        self._reader.close()
        super().close()


class _Writer:
    """obstore's ``WritableFile``, errors mapped: nothing appears until :meth:`close`."""

    def __init__(self, writer: Any) -> None:
        self._writer = writer

    def write(self, data: bytes) -> int:
        return int(_mapped(self._writer.write, data))

    def close(self) -> None:
        _mapped(self._writer.close)

    def discard(self) -> None:
        self._writer = None


class ObstoreFsspecSource(FsspecSource):
    """A home through obstore's fsspec adapter (``fs=FsspecStore("s3", …)``), whose ``cat_ranges``
    ignores ``on_error`` and whose ``pipe`` ignores write modes (writing needs ``single_writer``):
    the batch is one capped ``_cat_file`` per name, gathered."""

    fork_safe = False
    refusal_hint = (
        " For compare-and-swap writes through obstore, pass engine='obstore' (CLI: --engine obstore)."
    )

    async def _fetch_coroutine(self, names: Sequence[str], limit: int) -> list[Any]:
        cat = self.fs._cat_file
        return list(await asyncio.gather(*(_capped(cat, self.path_of(name), limit + 1) for name in names)))


class ObstoreSource(ObjectHome, ObstoreFsspecSource):
    """A persona home on an obstore store: ``ObstoreSource(S3Store("bucket"), "personas/aster")``
    (``prefix`` relative to the store's own); given :class:`StoreFiles`, rebuilt as they are."""

    conditional_store = ObstoreStore

    def __init__(self, store: Any, prefix: str = "") -> None:
        files = store if isinstance(store, StoreFiles) else StoreFiles(store)
        super().__init__(files, prefix.strip("/"))
        self.store = files.store

    def remote(self, path: str) -> ObstoreClient:
        return ObstoreClient(self.fs, path)

    def _nothing_found(self, names: Sequence[str], limit: int, exact_sizes: bool) -> Reading:
        """No name was there: an empty home (one LIST), a bundle (one HEAD), or no home at all."""
        with read_errors(self.location):
            if self.fs.isdir(self.path):
                return Reading(self.location, {})
            size = self.fs.head(self.path)
        if size is None:
            raise location_error(FileNotFoundError, self.location, "no such persona home")
        bundle = self._bundle({"type": "file", "size": size})
        return bundle.read_entries(names, limit, exact_sizes=exact_sizes)

    def children(self) -> Pages | None:
        pages = delimited_children(self.store, self.path, self.location)
        if pages is None and self.fs.head(self.path) is None:
            raise no_such_prefix(self.location)
        return pages

    def writer(self, name: str = "MEMORY.md", *, single_writer: bool = False) -> MemoryStore:
        """``single_writer=True`` skips the probe and checks a rename's version itself (obstore has
        no conditional delete)."""
        if not single_writer:
            return super().writer(name)
        self._require_folder()
        return SingleWriterObstoreStore(self, name, probe=lambda store: None)


def open_url(url: str, storage_options: dict[str, Any]) -> SourceBase:
    """The home ``url`` names, through obstore: a folder or bundle (``s3://b/aster``,
    ``s3://b/aster.zip``), or a bundle's folder by a chained URL (``zip://aster::s3://b/a.zip``)."""
    if "::" not in url:
        return _source(url, storage_options)
    hop = None if "::" in url.partition("::")[2] else archive_hop(url, storage_options)
    if hop is None:
        raise ValueError(
            f"{url}: the obstore engine reads zip:// and tar:// over one object-store URL; "
            "other chains are fsspec's (leave engine='fsspec')"
        )
    kind, folder, rest = hop
    options = storage_options.pop(rest.partition("://")[0], None) or storage_options
    return _source(rest, options).open_bundle(kind, folder)


def open_output(url: str, storage_options: dict[str, Any]) -> tuple[StoreFiles, str]:
    """Where ``write_bundle`` writes ``url``: the store's file operations and the key."""
    source = _source(url, storage_options)
    return source.fs, source.path


def _source(url: str, storage_options: Mapping[str, Any]) -> ObstoreSource:
    protocol, scheme, path = url.partition("://")
    if not scheme or protocol not in PROTOCOLS:
        served = ", ".join(f"{p}://" for p in PROTOCOLS)
        raise ValueError(f"{url}: the obstore engine reads {served} URLs; leave engine='fsspec' for this one")
    bucket, _, key = path.partition("/")
    if not bucket:
        raise ValueError(f"{url}: no bucket named")
    options = dict(storage_options)
    if "@" in bucket:  # abfs://container@account.dfs.core.windows.net/path
        bucket, _, host = bucket.partition("@")
        options.setdefault("account_name", host.split(".", 1)[0])
    recipe = (PROTOCOLS[protocol], bucket, options)
    return ObstoreSource(StoreFiles(store_for(*recipe), (store_for, recipe)), key)


def open_filesystem(fs: Any, path: str) -> SourceBase:
    """``fs=`` with the obstore engine: obstore's fsspec adapter (its store used directly) or
    :class:`StoreFiles`."""
    if isinstance(fs, StoreFiles):
        return ObstoreSource(fs, fs._strip_protocol(path))
    construct = getattr(fs, "_construct_store", None)
    if construct is None or not callable(getattr(fs, "_split_path", None)):
        raise TypeError(
            f"engine='obstore' cannot read through fs={type(fs).__name__}: pass the URL (with "
            "storage_options), an ObstoreSource(store, prefix), or obstore.fsspec.FsspecStore as fs="
        )
    bucket, key = fs._split_path(path)
    return ObstoreSource(construct(bucket), key)


#: Options every store takes besides its configuration keys.
_CLIENT_KEYS = ("client_options", "retry_config", "credential_provider")

#: Hints for fsspec options people are likely to bring along.
_FSSPEC_ONLY = {
    "config_kwargs": "botocore's; obstore's connection pool and timeouts are client_options "
    "(e.g. {'timeout': '30s', 'connect_timeout': '5s'})",
    "profile": "obstore does not read AWS profiles: give the credentials as options or AWS_* "
    "environment variables",
    "project": "gcsfs's; obstore addresses GCS objects by bucket alone: leave it out",
    "skip_instance_cache": "fsspec's; the obstore engine keeps one store per URL and options itself",
}

_stores: OrderedDict[str, Any] = OrderedDict()
_stores_guard = threading.Lock()


def store_for(kind: str, bucket: str, options: Mapping[str, Any]) -> Any:
    """The store for ``bucket`` with these options (one per distinct options, kept)."""
    identity = json.dumps([kind, bucket, options], sort_keys=True, default=repr)
    with _stores_guard:
        if identity in _stores:
            _stores.move_to_end(identity)
            return _stores[identity]
    store = _build(kind, bucket, dict(options))
    with _stores_guard:
        _stores[identity] = store
        while len(_stores) > 64:
            _stores.popitem(last=False)
    return store


def _build(kind: str, bucket: str, options: dict[str, Any]) -> Any:
    try:
        import obstore.store  # noqa: PLC0415  (the optional engine)
    except ImportError as error:
        raise ImportError(
            f"engine='obstore' needs obstore ({error}): pip install 'toolnexus[obstore]'"
        ) from error
    client = {key: options.pop(key) for key in _CLIENT_KEYS if options.get(key) is not None}
    client_options = dict(client.get("client_options") or {})
    translate, flags, renames = _OPTIONS[kind]
    translate(options, client_options)
    for key, target in flags.items():
        if key in options:  # a boolean fsspec option that becomes an obstore flag (only when true)
            value = options.pop(key)
            if not isinstance(value, bool):
                raise TypeError(f"storage option {key!r} must be True or False, not {value!r}")
            if value:
                options[target] = True
    config = {renames.get(key, key): value for key, value in options.items()}
    for key in config:
        if key in _FSSPEC_ONLY:
            raise TypeError(f"storage option {key!r} has no obstore equivalent: {_FSSPEC_ONLY[key]}")
    endpoint = str(config.get("endpoint") or config.get("base_url") or "")
    if endpoint.startswith("http://"):
        client_options.setdefault("allow_http", True)
    if client_options:
        client["client_options"] = client_options
    cls: Any = getattr(obstore.store, kind)
    try:
        return cls(bucket, **config, **client)
    except Exception as error:
        raise _culprit(cls, bucket, config, client, error) from error


def _culprit(
    cls: Any, bucket: str, config: dict[str, Any], client: dict[str, Any], error: Exception
) -> Exception:
    """The option obstore refused, found by trying each alone (obstore does not say which)."""
    candidates = [(repr(key), {key: value}) for key, value in config.items()]
    for key, value in (client.get("client_options") or {}).items():
        candidates.append((f"client_options[{key!r}]", {"client_options": {key: value}}))
    candidates += [(repr(key), {key: client[key]}) for key in client if key != "client_options"]
    for name, alone in candidates:
        try:
            cls(bucket, **alone)
        except Exception as single:
            unknown = "UnknownConfigurationKey" in type(single).__name__ or "Invalid key" in str(single)
            what = "is not an obstore option for this store" if unknown else "has a value obstore cannot use"
            detail = str(single).split("\n", 1)[0]
            return (TypeError if unknown else ValueError)(f"storage option {name} {what} ({detail})")
    return ValueError(f"obstore refused the storage options: {str(error).splitlines()[0]}")


#: Translates fsspec options (the first mapping) in place, some into client options (the second).
_Translate = Callable[[dict[str, Any], dict[str, Any]], None]


def _s3(options: dict[str, Any], client_options: dict[str, Any]) -> None:
    kwargs = options.pop("client_kwargs", None) or {}
    if not isinstance(kwargs, Mapping):
        raise TypeError(f"storage option 'client_kwargs' must be a mapping, not {type(kwargs).__name__}")
    for key, value in kwargs.items():
        if key in ("region_name", "endpoint_url"):
            options.setdefault("region" if key == "region_name" else "endpoint", value)
        elif key == "verify":
            if value is False:
                client_options.setdefault("allow_invalid_certificates", True)
        else:
            raise TypeError(f"storage option client_kwargs[{key!r}] has no obstore equivalent")


def _gcs(options: dict[str, Any], client_options: dict[str, Any]) -> None:
    token = options.pop("token", None)
    if token == "anon":
        options["skip_signature"] = True
    elif isinstance(token, str) and os.path.isfile(token):
        options["application_credentials"] = token
    elif token is not None:
        raise TypeError(
            f"storage option 'token' ({token!r}) has no obstore equivalent: give 'anon', a key file's "
            "path, or obstore's service_account_key / bearer_token; without it obstore finds "
            "application default credentials itself"
        )


def _azure(options: dict[str, Any], client_options: dict[str, Any]) -> None:
    connection = options.pop("connection_string", None)
    if connection is not None:
        parts = dict(part.split("=", 1) for part in str(connection).split(";") if "=" in part)
        if parts.get("UseDevelopmentStorage", "").lower() == "true":
            options.setdefault("use_emulator", True)
        named = {
            "AccountName": "account_name",
            "AccountKey": "account_key",
            "SharedAccessSignature": "sas_key",
        }
        for source, target in named.items():
            if source in parts:
                options.setdefault(target, parts[source])
        if "BlobEndpoint" in parts:
            options.setdefault("endpoint", parts["BlobEndpoint"].rstrip("/"))
    host = options.pop("account_host", None)
    if host is not None:
        options.setdefault("endpoint", f"https://{host}")


#: Per store class: the fsspec options translated by hand, the boolean ones that become obstore
#: flags, and the ones obstore merely spells otherwise.
_OPTIONS: dict[str, tuple[_Translate, dict[str, str], dict[str, str]]] = {
    "S3Store": (
        _s3,
        {"anon": "skip_signature", "requester_pays": "request_payer"},
        {
            "endpoint_url": "endpoint",
            "key": "access_key_id",
            "secret": "secret_access_key",
            "token": "session_token",
        },
    ),
    "GCSStore": (_gcs, {}, {"endpoint_url": "base_url"}),
    "AzureStore": (_azure, {"anon": "skip_signature"}, {"sas_token": "sas_key"}),
}

#: The engine's row: object-store URLs, ``fs=`` and ``write_bundle``'s output through obstore.
ENGINE = Engine("obstore", open_url, open_filesystem, open_output)
