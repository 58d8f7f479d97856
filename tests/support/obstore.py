"""The obstore engine against the test servers: storage options, store objects, adapters.

Options are written the way users switching engines write them (fsspec's spellings: the engine
translates ``endpoint_url``, ``key``, ``secret``, ``client_kwargs``, ``connection_string``);
GCS goes through :class:`~tests.support.gcs_xml.GcsXmlGateway`, because obstore speaks GCS's
XML API and fake-gcs-server implements its JSON uploads.
"""

from __future__ import annotations

from typing import Any

from tests.support.s3 import DEFAULT_REGION, DUMMY_KEY, DUMMY_SECRET

__all__ = [
    "azure_options",
    "forbid_worker_threads",
    "gcs_options",
    "keyed",
    "s3_adapter",
    "s3_options",
    "s3_store",
]


def s3_options(endpoint_url: str) -> dict[str, Any]:
    """``storage_options`` for ``engine="obstore"`` on moto (or a proxy in front of it)."""
    return {
        "endpoint_url": endpoint_url,
        "key": DUMMY_KEY,
        "secret": DUMMY_SECRET,
        "client_kwargs": {"region_name": DEFAULT_REGION},
    }


def s3_store(endpoint_url: str, bucket: str) -> Any:
    """An ``obstore.store.S3Store`` for ``bucket`` on moto, as a user builds one."""
    from obstore.store import S3Store  # noqa: PLC0415

    return S3Store(
        bucket,
        endpoint=endpoint_url,
        region=DEFAULT_REGION,
        access_key_id=DUMMY_KEY,
        secret_access_key=DUMMY_SECRET,
        client_options={"allow_http": True},
    )


def s3_adapter(endpoint_url: str) -> Any:
    """obstore's fsspec adapter on moto, for ``fs=``."""
    from obstore.fsspec import FsspecStore  # noqa: PLC0415

    return FsspecStore(
        "s3",
        endpoint=endpoint_url,
        region=DEFAULT_REGION,
        access_key_id=DUMMY_KEY,
        secret_access_key=DUMMY_SECRET,
        client_options={"allow_http": True},
        skip_instance_cache=True,
    )


def azure_options(connection_string: str) -> dict[str, Any]:
    """``storage_options`` for Azurite: adlfs's connection string, translated by the engine."""
    return {"connection_string": connection_string}


def gcs_options(gateway_url: str) -> dict[str, Any]:
    """``storage_options`` for fake-gcs-server through the XML gateway (a static bearer token:
    obstore's GCS client fetches a token for writes even with ``skip_signature``)."""
    return {"endpoint_url": gateway_url, "bearer_token": "toolnexus-tests"}


def keyed(kwargs: dict[str, Any], protocol: str) -> dict[str, Any]:
    """``kwargs`` with their storage options keyed by ``protocol`` (for a chained URL's inner hop)."""
    return {**kwargs, "storage_options": {protocol: kwargs["storage_options"]}}


def forbid_worker_threads(monkeypatch: Any) -> None:
    """From now on, ``asyncio.to_thread`` fails the test: the engine's async path awaits its
    requests on the caller's loop, never in a thread per persona."""
    import asyncio  # noqa: PLC0415

    def no_threads(*args: object, **kwargs: object) -> None:
        raise AssertionError("a worker thread was used for an obstore home")

    monkeypatch.setattr(asyncio, "to_thread", no_threads)
