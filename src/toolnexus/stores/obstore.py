"""A file through obstore's own client (the ``obstore`` engine), written with obstore's conditional
put; and how a store object is described (bucket, URL, identity), so that source and store agree."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from toolnexus._fs import is_empty_range_error
from toolnexus._object_store import is_conflict, object_store_error
from toolnexus.stores.base import READ_LIMIT, CompareAndSwapStore
from toolnexus.stores.lineage import AZURE_LINEAGE_KEY, LINEAGE_KEY, Stored, parse_lineage

#: The URL schemes the obstore engine reads, and the obstore store class of each.
PROTOCOLS = {
    **{"s3": "S3Store", "s3a": "S3Store", "gs": "GCSStore", "gcs": "GCSStore"},
    **{"az": "AzureStore", "abfs": "AzureStore", "abfss": "AzureStore"},
}
#: The URL scheme of each store class, for locations and messages (the first scheme of each).
_SCHEMES = {cls: scheme for scheme, cls in reversed(PROTOCOLS.items())}
_SCHEMES |= {"LocalStore": "file", "MemoryStore": "memory"}


def store_bucket(store: Any) -> str:
    """The bucket (or Azure container) a store object addresses; ``""`` for local and memory."""
    config = getattr(store, "config", None) or {}
    return str(config.get("bucket") or config.get("container_name") or "")


def store_url(store: Any, key: str = "") -> str:
    """``s3://bucket/prefix/key``: where ``key`` of ``store`` is, for messages and locations."""
    scheme = _SCHEMES.get(type(store).__name__, type(store).__name__)
    parts = [store_bucket(store), str(getattr(store, "prefix", None) or "").strip("/"), key.strip("/")]
    return f"{scheme}://" + "/".join(part for part in parts if part)


def store_token(store: Any) -> str:
    """What tells two stores' servers apart, as fsspec's ``_fs_token`` does."""
    config = getattr(store, "config", None)
    if config is None:
        return f"{type(store).__name__}:{id(store)}"
    options = getattr(store, "client_options", None) or {}
    described = json.dumps([type(store).__name__, config, options], sort_keys=True, default=str)
    return hashlib.sha256(described.encode()).hexdigest()


def _version(meta: Mapping[str, Any]) -> str:
    """An object's ETag and version (GCS: its generation) as one opaque string."""
    return json.dumps({key: meta[key] for key in ("e_tag", "version") if meta.get(key) is not None})


class ObstoreStore(CompareAndSwapStore):
    """A file written with obstore's conditional puts; ``home`` is an ``ObstoreSource``."""

    conditions = ('put(mode="create")', 'put(mode={"e_tag": …, "version": …})')
    stale_version = json.dumps({"e_tag": '"00000000000000000000000000000000"', "version": "1"})

    @property
    def client(self) -> Any:
        return self.home.store

    def bucket(self) -> str:
        return store_bucket(self.client)

    def server_key(self) -> tuple[str, str, str]:
        return type(self.client).__qualname__, store_token(self.client), self.bucket()

    def _lineage_key(self) -> str:
        """The fsspec stores' name for it, so both engines read each other's lineages."""
        return AZURE_LINEAGE_KEY if type(self.client).__name__ == "AzureStore" else LINEAGE_KEY

    def get(self, path: str) -> Stored:
        import obstore  # noqa: PLC0415  (the optional engine)

        try:
            try:
                result = obstore.get(self.client, path, options={"range": (0, READ_LIMIT)})
            except Exception as error:
                if not is_empty_range_error(error):
                    raise
                result = obstore.get(self.client, path)  # an empty object: no range to satisfy
            data = bytearray()
            for chunk in result.stream(min_chunk_size=READ_LIMIT):
                data += chunk
                if len(data) >= READ_LIMIT:
                    break
        except Exception as error:
            mapped = object_store_error(error)
            if isinstance(mapped, FileNotFoundError):
                return Stored(None, None)
            raise mapped from error
        lineage = parse_lineage(result.attributes.get(self._lineage_key()))
        return Stored(bytes(data[:READ_LIMIT]), _version(result.meta), lineage)

    def put(self, path: str, data: bytes, version: str | None, lineage: str | None = None) -> bool:
        import obstore  # noqa: PLC0415

        attributes = None if lineage is None else {self._lineage_key(): lineage}
        mode: Any = "create" if version is None else json.loads(version)
        try:
            obstore.put(self.client, path, data, mode=mode, attributes=attributes, use_multipart=False)
        except Exception as error:
            if is_conflict(error):
                return False
            raise object_store_error(error) from error
        return True

    put_with_lineage = put

    def delete(self, path: str) -> None:
        import obstore  # noqa: PLC0415

        try:
            obstore.delete(self.client, path)
        except Exception as error:
            raise object_store_error(error) from error

    def delete_if(self, path: str, version: str) -> bool:
        raise NotImplementedError("obstore offers no delete conditional on a version")


class SingleWriterObstoreStore(ObstoreStore):
    """``single_writer=True``: a rename's delete checks the version, then deletes (obstore has
    no conditional delete; with one writer nothing comes between)."""

    def delete_if(self, path: str, version: str) -> bool:
        if self.get(path).version != version:
            return False
        self.delete(path)
        return True
