"""``audit(engine="obstore")``: the same lines as fsspec's engine, listed and read through obstore.

On moto, Azurite and fake-gcs-server each persona's line must equal the fsspec engine's; a store
object with a prefix (:class:`ObstoreSource`) is a prefix too; the listing is one delimiter
listing and each persona its 7 ranged GETs; worker processes rebuild the store from the URL's
options.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import uuid
from collections.abc import Iterator
from typing import Any

import fsspec
import obstore
import pytest
from obstore.store import MemoryStore

from tests.support import MotoServer, S3Proxy, make_bucket, s3_storage_options
from tests.support import obstore as engine
from tests.support.fleet import FLEET, ISSUES_BY_PERSONA, place_s3, typical_fleet
from toolnexus.agents import PersonaAudit, audit
from toolnexus.sources import ObstoreSource

BUCKET = "audit-engine"
FORKSERVER = multiprocessing.get_context("forkserver")


def lines(results: Iterator[PersonaAudit]) -> list[dict[str, Any]]:
    return [result.to_dict() for result in results]


@pytest.fixture(scope="module")
def s3_fleet(moto_server: MotoServer) -> str:
    make_bucket(moto_server.endpoint_url, BUCKET)
    place_s3(moto_server.endpoint_url, BUCKET, "personas")
    place_s3(moto_server.endpoint_url, BUCKET, "many", typical_fleet(10))
    place_s3(moto_server.endpoint_url, BUCKET, "marked", {"": b""})  # a console's folder marker alone
    return f"s3://{BUCKET}/personas"


@pytest.fixture(scope="module")
def fsspec_lines(s3_fleet: str, moto_server: MotoServer) -> list[dict[str, Any]]:
    """The fsspec engine's lines: what every obstore audit must print."""
    found = lines(audit(s3_fleet, storage_options=s3_storage_options(moto_server.endpoint_url)))
    assert {line["location"].rsplit("/", 1)[-1]: set(line["issues"]) for line in found} == ISSUES_BY_PERSONA
    return found


def obstore_kwargs(moto_server: MotoServer) -> dict[str, Any]:
    return {"storage_options": engine.s3_options(moto_server.endpoint_url), "engine": "obstore"}


def test_s3_lines_equal_the_fsspec_engine_s(
    s3_fleet: str, fsspec_lines: list[dict[str, Any]], moto_server: MotoServer
) -> None:
    assert lines(audit(s3_fleet, **obstore_kwargs(moto_server))) == fsspec_lines
    assert lines(audit(f"{s3_fleet}/", concurrency=2, **obstore_kwargs(moto_server))) == fsspec_lines


def test_a_store_object_with_a_prefix_is_a_prefix(
    s3_fleet: str, fsspec_lines: list[dict[str, Any]], moto_server: MotoServer
) -> None:
    store = engine.s3_store(moto_server.endpoint_url, BUCKET)
    assert lines(audit(ObstoreSource(store, "personas"))) == fsspec_lines
    assert lines(audit(ObstoreSource(store, "personas"), engine="obstore")) == fsspec_lines
    (bundle,) = audit(ObstoreSource(store, "personas/bundle.zip"))
    assert bundle.to_dict() == next(line for line in fsspec_lines if line["location"].endswith("bundle.zip"))


def test_one_delimiter_listing_and_seven_gets_a_persona(
    s3_fleet: str, proxy: S3Proxy, moto_server: MotoServer
) -> None:
    """The engine's usual plan: no HEAD, no per-persona listing, 7 ranged GETs each."""
    results = lines(
        audit(f"s3://{BUCKET}/many", storage_options=engine.s3_options(proxy.endpoint_url), engine="obstore")
    )
    assert [line["location"][-4:] for line in results] == [f"p{i:03d}" for i in range(10)]
    listings = [r for r in proxy.requests if "list-type=2" in r.query]
    assert len(listings) == 1
    assert "delimiter=%2F" in listings[0].query
    assert proxy.count("GET") - len(listings) == 10 * 7
    assert proxy.count() == proxy.count("GET")


def test_process_workers_rebuild_the_store_from_the_url_s_options(
    s3_fleet: str, fsspec_lines: list[dict[str, Any]], moto_server: MotoServer
) -> None:
    store = engine.s3_store(moto_server.endpoint_url, BUCKET)
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=FORKSERVER) as pool:
        got = audit(s3_fleet, executor=pool, concurrency=4, **obstore_kwargs(moto_server))
        assert lines(got) == fsspec_lines
        # A store object of the user's own pickles by its configuration (obstore's own pickling).
        assert lines(audit(ObstoreSource(store, "personas"), executor=pool, concurrency=4)) == fsspec_lines


def test_a_pool_that_forks_its_workers_is_refused_at_the_call(s3_fleet: str, moto_server: MotoServer) -> None:
    """obstore's runtime does not survive fork(): a forked worker would hang for ever."""
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        with pytest.raises(
            ValueError, match=r"^executor: the client reading these personas does not survive fork\(\)"
        ):
            audit(s3_fleet, executor=pool, **obstore_kwargs(moto_server))
        store = engine.s3_store(moto_server.endpoint_url, BUCKET)
        with pytest.raises(ValueError, match="mp_context=multiprocessing.get_context\\('forkserver'\\)"):
            audit(ObstoreSource(store, "personas"), executor=pool)
        # obstore's fsspec adapter runs on the same runtime, under the fsspec engine too.
        with pytest.raises(ValueError, match="does not survive fork"):
            audit(f"{BUCKET}/personas", fs=engine.s3_adapter(moto_server.endpoint_url), executor=pool)


def test_a_store_that_does_not_pickle_audits_in_process() -> None:
    memory = MemoryStore()
    for relative, data in FLEET.items():
        obstore.put(memory, f"personas/{relative}", data)
    results = lines(audit(ObstoreSource(memory, "personas")))
    assert {line["location"].rsplit("/", 1)[-1]: set(line["issues"]) for line in results} == ISSUES_BY_PERSONA
    assert results[0]["location"] == "memory://personas/aster"
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        assert lines(audit(ObstoreSource(memory, "personas"), executor=pool, concurrency=4)) == results


def test_missing_prefixes_and_empty_ones(s3_fleet: str, moto_server: MotoServer) -> None:
    kwargs = obstore_kwargs(moto_server)
    with pytest.raises(FileNotFoundError, match=f"^{s3_fleet}-nope: no such prefix$"):
        audit(f"{s3_fleet}-nope", **kwargs)
    with pytest.raises(FileNotFoundError, match="^s3://no-such-bucket/x: no such prefix$"):
        audit("s3://no-such-bucket/x", **kwargs)
    assert list(audit(f"s3://{BUCKET}/marked", **kwargs)) == []
    options = s3_storage_options(moto_server.endpoint_url)
    assert list(audit(f"s3://{BUCKET}/marked", storage_options=options)) == []  # as fsspec says


def test_a_bad_engine_is_a_value_error_naming_the_option(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="^engine must be one of 'fsspec', 'obstore', not 'boto'$"):
        audit(tmp_path, engine="boto")
    with pytest.raises(ValueError, match="^engine must be one of 'fsspec', 'obstore', not None$"):
        audit("s3://bucket/personas", engine=None)  # type: ignore[arg-type]


def place_emulated(protocol: str, options: dict[str, Any]) -> str:
    """The fleet in a fresh bucket on an emulator, written through fsspec; its URL."""
    fs = fsspec.filesystem(protocol, skip_instance_cache=True, **options)
    bucket = f"toolnexus-{uuid.uuid4().hex[:12]}"
    fs.mkdir(bucket)
    for relative, data in FLEET.items():
        fs.pipe_file(f"{bucket}/personas/{relative}", data)
    return f"{protocol}://{bucket}/personas"


def test_azure_lines_equal_the_fsspec_engine_s(azurite: Any) -> None:
    """Up to the scheme: adlfs names every Azure location ``abfs://``, obstore ``az://``."""
    prefix = place_emulated("az", azurite.storage_options)
    expected = json.dumps(lines(audit(prefix, storage_options=azurite.storage_options)))
    options = engine.azure_options(azurite.connection_string)
    got = lines(audit(prefix, storage_options=options, engine="obstore"))
    assert "abfs://" not in json.dumps(got)
    assert got == json.loads(expected.replace('"abfs://', '"az://').replace(" abfs://", " az://"))
    assert len(got) == len(ISSUES_BY_PERSONA)


def test_gcs_lines_equal_the_fsspec_engine_s(fake_gcs_server: Any, gcs_xml: Any) -> None:
    prefix = place_emulated("gs", fake_gcs_server.storage_options)
    expected = lines(audit(prefix, storage_options=fake_gcs_server.storage_options))
    assert len(expected) == len(ISSUES_BY_PERSONA)
    assert lines(audit(prefix, storage_options=engine.gcs_options(gcs_xml.url), engine="obstore")) == expected
