"""``engine="obstore"``: a URL and its storage options become an obstore store and a home in it.

Options are obstore's own configuration keys (``S3Config``, ``GCSConfig``, ``AzureConfig``, plus
``client_options``, ``retry_config`` and ``credential_provider``), and the fsspec spellings with
an obstore equivalent are translated, so a call switches engine without new options:

- S3 (``s3://``, ``s3a://``): ``endpoint_url`` → ``endpoint``, ``key`` / ``secret`` / ``token`` →
  ``access_key_id`` / ``secret_access_key`` / ``session_token``, ``anon`` → ``skip_signature``,
  ``requester_pays`` → ``request_payer``, ``client_kwargs`` ``region_name`` → ``region`` and
  ``verify=False`` → ``client_options={"allow_invalid_certificates": True}``;
- GCS (``gs://``, ``gcs://``): ``endpoint_url`` → ``base_url``, ``token="anon"`` →
  ``skip_signature``, ``token=<path of a JSON key file>`` → ``application_credentials``;
- Azure (``az://``, ``abfs://``, ``abfss://``): ``connection_string`` → ``account_name``,
  ``account_key``, ``sas_key`` and ``endpoint`` (``UseDevelopmentStorage=true`` → ``use_emulator``),
  ``sas_token`` → ``sas_key``, ``account_host`` → ``endpoint``, ``anon`` → ``skip_signature``.

An ``http://`` endpoint turns on ``client_options={"allow_http": True}`` (naming it is consent).
Credentials not given are found in the environment by obstore itself (``AWS_*``, ``GOOGLE_*``,
``AZURE_*`` variables, instance metadata). An option that is neither obstore's nor translated
(``config_kwargs``, ``skip_instance_cache``, ``profile``, gcsfs's ``project``, …) is a
:class:`TypeError` naming it; a value obstore cannot parse a :class:`ValueError` naming it.

Stores are kept per (protocol, bucket, options), like fsspec's instance cache, so repeated calls
reuse one HTTP client and its connections.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from toolnexus.sources.base import SourceBase
from toolnexus.sources.obstore import ObstoreSource
from toolnexus.sources.obstore_client import StoreFiles
from toolnexus.sources.registry import archive_kind

__all__ = ["PROTOCOLS", "open_filesystem", "open_output", "open_url", "store_for"]

#: URL scheme → the kind of store.
PROTOCOLS = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "az": "azure",
    "abfs": "azure",
    "abfss": "azure",
}

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

_MAX_STORES = 64
_stores: OrderedDict[str, Any] = OrderedDict()
_stores_guard = threading.Lock()


def open_url(url: str, storage_options: dict[str, Any]) -> SourceBase:
    """The home ``url`` names, through obstore: a folder or bundle (``s3://b/aster``,
    ``s3://b/aster.zip``), or a bundle's folder by a chained URL (``zip://aster::s3://b/a.zip``)."""
    head, _, rest = url.partition("::")
    if rest:
        protocol, _, folder = head.partition("://")
        kind = archive_kind(protocol)
        if kind is None or "::" in rest:
            raise ValueError(
                f"{url}: the obstore engine reads zip:// and tar:// over one object-store URL; "
                "other chains are fsspec's (leave engine='fsspec')"
            )
        if storage_options.pop(protocol, None):
            raise TypeError(
                f"the {protocol}:// hop takes no storage options; key options by the inner protocol"
            )
        inner = rest.partition("://")[0]
        options = storage_options.pop(inner, None) or storage_options
        source = _source(rest, options)
        return source.open_bundle(kind, folder)
    return _source(url, storage_options)


def open_output(url: str, storage_options: dict[str, Any]) -> tuple[StoreFiles, str]:
    """Where ``write_bundle`` writes ``url`` through obstore: the store's file operations, the key."""
    if "::" in url:
        raise ValueError(f"{url}: a bundle is written to one location, not a chained URL")
    source = _source(url, storage_options)
    return StoreFiles(source.store), source.path


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
    return ObstoreSource.on_files(StoreFiles(store_for(*recipe), (store_for, recipe)), key)


def open_filesystem(fs: Any, path: str) -> SourceBase:
    """``fs=`` with the obstore engine: obstore's own fsspec adapter, whose store for the bucket
    (built from the adapter's configuration) is used directly, or the engine's own
    :class:`StoreFiles` (an obstore home's ``fs``)."""
    if isinstance(fs, StoreFiles):
        return ObstoreSource.on_files(fs, fs._strip_protocol(path))
    construct = getattr(fs, "_construct_store", None)
    if construct is None or not callable(getattr(fs, "_split_path", None)):
        raise TypeError(
            f"engine='obstore' cannot read through fs={type(fs).__name__}: pass the URL (with "
            "storage_options), an ObstoreSource(store, prefix), or obstore.fsspec.FsspecStore as fs="
        )
    bucket, key = fs._split_path(path)
    return ObstoreSource(construct(bucket), key)


def store_for(kind: str, bucket: str, options: Mapping[str, Any]) -> Any:
    """The store for ``bucket`` with these options (one per distinct options, kept)."""
    identity = json.dumps([kind, bucket, options], sort_keys=True, default=repr)
    with _stores_guard:
        store = _stores.get(identity)
        if store is not None:
            _stores.move_to_end(identity)
            return store
    store = _build(kind, bucket, dict(options))
    with _stores_guard:
        _stores[identity] = store
        while len(_stores) > _MAX_STORES:
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
    config = _TRANSLATE[kind](options, client_options)
    unsupported = next((key for key in config if key in _FSSPEC_ONLY), None)
    if unsupported is not None:
        raise TypeError(
            f"storage option {unsupported!r} has no obstore equivalent: {_FSSPEC_ONLY[unsupported]}"
        )
    endpoint = str(config.get("endpoint") or config.get("base_url") or "")
    if endpoint.startswith("http://"):
        client_options.setdefault("allow_http", True)
    if client_options:
        client["client_options"] = client_options
    stores = {"s3": obstore.store.S3Store, "gcs": obstore.store.GCSStore, "azure": obstore.store.AzureStore}
    cls: Any = stores[kind]
    try:
        return cls(bucket, **config, **client)
    except Exception as error:
        raise _culprit(cls, bucket, config, client, error) from error


def _culprit(
    cls: Any, bucket: str, config: dict[str, Any], client: dict[str, Any], error: Exception
) -> Exception:
    """The option obstore refused, found by trying each alone: an unknown key is a
    :class:`TypeError`, a value obstore cannot use a :class:`ValueError`, each naming it."""
    candidates: list[tuple[str, dict[str, Any], dict[str, Any]]]
    candidates = [(repr(key), {key: value}, {}) for key, value in config.items()]
    for key, value in (client.get("client_options") or {}).items():
        candidates.append((f"client_options[{key!r}]", {}, {"client_options": {key: value}}))
    candidates += [(repr(key), {}, {key: client[key]}) for key in client if key != "client_options"]
    for name, alone, extra in candidates:
        try:
            cls(bucket, **alone, **extra)
        except Exception as single:
            unknown = "UnknownConfigurationKey" in type(single).__name__ or "Invalid key" in str(single)
            what = "is not an obstore option for this store" if unknown else "has a value obstore cannot use"
            detail = str(single).split("\n", 1)[0]
            return (TypeError if unknown else ValueError)(f"storage option {name} {what} ({detail})")
    return ValueError(f"obstore refused the storage options: {str(error).splitlines()[0]}")


def _rename(options: dict[str, Any], renames: Mapping[str, str]) -> dict[str, Any]:
    return {renames.get(key, key): value for key, value in options.items()}


def _flag(options: dict[str, Any], key: str, target: str) -> None:
    """A boolean fsspec option that becomes an obstore flag (only when true)."""
    value = options.pop(key)
    if not isinstance(value, bool):
        raise TypeError(f"storage option {key!r} must be True or False, not {value!r}")
    if value:
        options[target] = True


def _s3(options: dict[str, Any], client_options: dict[str, Any]) -> dict[str, Any]:
    kwargs = options.pop("client_kwargs", None) or {}
    if not isinstance(kwargs, Mapping):
        raise TypeError(f"storage option 'client_kwargs' must be a mapping, not {type(kwargs).__name__}")
    for key, value in kwargs.items():
        if key == "region_name":
            options.setdefault("region", value)
        elif key == "endpoint_url":
            options.setdefault("endpoint", value)
        elif key == "verify":
            if value is False:
                client_options.setdefault("allow_invalid_certificates", True)
        else:
            raise TypeError(f"storage option client_kwargs[{key!r}] has no obstore equivalent")
    for key, target in (("anon", "skip_signature"), ("requester_pays", "request_payer")):
        if key in options:
            _flag(options, key, target)
    names = {"endpoint_url": "endpoint", "key": "access_key_id", "secret": "secret_access_key"}
    return _rename(options, {**names, "token": "session_token"})


def _gcs(options: dict[str, Any], client_options: dict[str, Any]) -> dict[str, Any]:
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
    return _rename(options, {"endpoint_url": "base_url"})


def _azure(options: dict[str, Any], client_options: dict[str, Any]) -> dict[str, Any]:
    connection = options.pop("connection_string", None)
    if connection is not None:
        parts = dict(part.split("=", 1) for part in str(connection).split(";") if "=" in part)
        if parts.get("UseDevelopmentStorage", "").lower() == "true":
            options.setdefault("use_emulator", True)
        for source, target in (("AccountName", "account_name"), ("AccountKey", "account_key")):
            if source in parts:
                options.setdefault(target, parts[source])
        if "SharedAccessSignature" in parts:
            options.setdefault("sas_key", parts["SharedAccessSignature"])
        if "BlobEndpoint" in parts:
            options.setdefault("endpoint", parts["BlobEndpoint"].rstrip("/"))
    if "anon" in options:
        _flag(options, "anon", "skip_signature")
    host = options.pop("account_host", None)
    if host is not None:
        options.setdefault("endpoint", f"https://{host}")
    return _rename(options, {"sas_token": "sas_key"})


_TRANSLATE: dict[str, Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]] = {
    "s3": _s3,
    "gcs": _gcs,
    "azure": _azure,
}
