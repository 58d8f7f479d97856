"""``engine="obstore"``'s options and reach: fsspec's spellings translated, anything else refused
by name before any request; the engine applies to object-store URLs only; a missing obstore
names the extra. No server is needed: stores are built, not used."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from toolnexus.agents import compose_soul
from toolnexus.sources import ObstoreSource, resolve


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        (
            {"config_kwargs": {"max_pool_connections": 400}},
            TypeError,
            "storage option 'config_kwargs' has no obstore",
        ),
        ({"skip_instance_cache": True}, TypeError, "storage option 'skip_instance_cache' has no obstore"),
        ({"profile": "prod"}, TypeError, "storage option 'profile' has no obstore equivalent"),
        ({"regoin": "eu-west-1"}, TypeError, "storage option 'regoin' is not an obstore option"),
        ({"client_kwargs": {"proxies": {}}}, TypeError, r"storage option client_kwargs\['proxies'\]"),
        (
            {"client_options": {"timeout": "soon"}},
            ValueError,
            r"storage option client_options\['timeout'\] has a value",
        ),
        (
            {"client_options": {"tiemout": "5s"}},
            TypeError,
            r"storage option client_options\['tiemout'\] is not",
        ),
        ({"anon": "yes"}, TypeError, "storage option 'anon' must be True or False"),
    ],
)
def test_bad_options_are_named_before_any_request(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        resolve("s3://bucket/aster", storage_options={"region": "us-east-1", **options}, engine="obstore")


def test_fsspec_spellings_become_obstore_configuration() -> None:
    source: Any = resolve(
        "s3://bucket/personas/aster",
        storage_options={
            "endpoint_url": "http://127.0.0.1:9",
            "key": "AKIA",
            "secret": "s3cr3t",
            "anon": False,
            "client_kwargs": {"region_name": "eu-west-1", "verify": False},
        },
        engine="obstore",
    )
    assert isinstance(source, ObstoreSource)
    assert (source.location, source.path) == ("s3://bucket/personas/aster", "personas/aster")
    config = source.store.config
    assert (config["endpoint"], config["access_key_id"], config["region"]) == (
        "http://127.0.0.1:9",
        "AKIA",
        "eu-west-1",
    )
    assert source.store.client_options == {"allow_http": "true", "allow_invalid_certificates": "true"}
    gcs: Any = resolve(
        "gs://b/aster", storage_options={"token": "anon", "endpoint_url": "http://h:1"}, engine="obstore"
    )
    assert (gcs.location, gcs.store.config["base_url"], gcs.store.config["skip_signature"]) == (
        "gs://b/aster",
        "http://h:1",
        "true",
    )
    connection = (
        "DefaultEndpointsProtocol=http;AccountName=dev;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:7/dev;"
    )
    azure: Any = resolve(
        "abfs://box@dev.dfs.core.windows.net/aster",
        storage_options={"connection_string": connection},
        engine="obstore",
    )
    assert azure.location == "az://box/aster"
    assert (azure.store.config["account_name"], azure.store.config["endpoint"]) == (
        "dev",
        "http://127.0.0.1:7/dev",
    )


def test_the_engine_is_checked_and_applies_to_object_store_urls_only(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="engine must be one of 'fsspec', 'obstore', not 'boto'"):
        compose_soul("examples/aster", engine="boto")
    assert compose_soul("examples/aster", engine="obstore") == compose_soul(
        "examples/aster"
    )  # local: no client
    with pytest.raises(ValueError, match="memory://aster: the obstore engine reads s3://"):
        compose_soul("memory://aster", engine="obstore")
    with pytest.raises(ValueError, match="other chains are fsspec's"):
        compose_soul("simplecache::s3://bucket/aster", engine="obstore")
    import fsspec  # noqa: PLC0415

    with pytest.raises(TypeError, match="engine='obstore' cannot read through fs=MemoryFileSystem"):
        compose_soul("aster", fs=fsspec.filesystem("memory"), engine="obstore")


def test_a_missing_obstore_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "obstore.store", None)
    with pytest.raises(
        ImportError, match=r"engine='obstore' needs obstore .*pip install 'toolnexus\[obstore\]'"
    ):
        resolve("s3://bucket/aster", storage_options={"region": "eu-north-1"}, engine="obstore")
