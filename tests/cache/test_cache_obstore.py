"""SoulCache through the obstore engine: the same revalidation as s3fs's, request by request.

An unchanged folder costs one ``If-None-Match`` GET per name (bodiless 304s, a 404 for the absent
name), an unchanged zip bundle one conditional tail GET; every change is seen on the next call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.support import S3Proxy
from tests.support import obstore as engine
from toolnexus.agents import BOOTSTRAP_ORDER, compose_soul
from toolnexus.soul.bundling import bundle_bytes
from toolnexus.soul.cache import SoulCache

pytestmark = pytest.mark.s3

PERSONA = {name: f"# {name}\n\nText of {name}.\n".encode() * 20 for name in BOOTSTRAP_ORDER[:6]}


@pytest.fixture
def kw(proxy: S3Proxy) -> dict[str, Any]:
    return {"storage_options": engine.s3_options(proxy.endpoint_url), "engine": "obstore"}


def test_unchanged_persona_costs_seven_conditional_gets_and_no_bodies(
    proxy: S3Proxy, kw: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({f"aster/{n}": data for n, data in PERSONA.items()})
    home = f"s3://{name}/aster"
    cache = SoulCache()
    first = cache.compose_soul(home, **kw)
    assert first == compose_soul(home, **kw)
    proxy.reset()
    assert cache.compose_soul(home, **kw) == first
    requests = proxy.requests
    assert [r.method for r in requests] == ["GET"] * 7
    assert sorted(r.response_status or 0 for r in requests) == [304] * 6 + [404]
    assert all(r.headers.get("if-none-match") for r in requests if r.response_status == 304)
    assert proxy.bytes_sent <= 1024


@pytest.mark.parametrize("change", ["same-size rewrite", "add", "remove", "emptied"])
def test_every_change_is_seen_on_the_next_call(
    moto_server: Any, kw: dict[str, Any], bucket: tuple[str, Callable[..., None]], change: str
) -> None:
    import obstore  # noqa: PLC0415

    name, put = bucket
    put({f"aster/{n}": data for n, data in PERSONA.items()})
    home = f"s3://{name}/aster"
    cache = SoulCache()
    cache.compose_soul(home, **kw)
    if change == "same-size rewrite":
        put({"aster/SOUL.md": PERSONA["SOUL.md"].upper()})
    elif change == "add":
        put({"aster/MEMORY.md": b"Remember this."})
    elif change == "emptied":
        put({"aster/SOUL.md": b""})
    else:
        obstore.delete(engine.s3_store(moto_server.endpoint_url, name), "aster/SOUL.md")
    assert cache.compose_soul(home, **kw) == compose_soul(home, **kw)


def test_bundle_revalidates_with_one_conditional_request(
    proxy: S3Proxy, kw: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({"aster.zip": bundle_bytes(PERSONA)})
    for url, options in [
        (f"s3://{name}/aster.zip", kw),
        (f"zip://::s3://{name}/aster.zip", engine.keyed(kw, "s3")),
    ]:
        cache = SoulCache()
        first = cache.compose_soul(url, **options)
        assert first == compose_soul(url, **options)
        proxy.reset()
        assert cache.compose_soul(url, **options) == first
        (request,) = proxy.requests
        assert (request.method, request.response_status, request.response_body_bytes) == ("GET", 304, 0)
        assert request.headers.get("if-none-match")
    put({"aster.zip": bundle_bytes({"SOUL.md": b"Birch."})})
    assert cache.compose_soul(url, **options) == ("## SOUL.md\n\nBirch.", ["SOUL.md"])


def test_async_revalidation_awaits_on_the_callers_loop(
    proxy: S3Proxy,
    kw: dict[str, Any],
    bucket: tuple[str, Callable[..., None]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name, put = bucket
    put({f"aster/{n}": data for n, data in PERSONA.items()})
    home = f"s3://{name}/aster"
    cache = SoulCache()
    expected = compose_soul(home, **kw)

    async def twice() -> list[tuple[str, list[str]]]:
        engine.forbid_worker_threads(monkeypatch)
        first = await cache.compose_soul_async(home, **kw)
        proxy.reset()
        return [first, await cache.compose_soul_async(home, **kw)]

    assert asyncio.run(twice()) == [expected, expected]
    assert sorted(r.response_status or 0 for r in proxy.requests) == [304] * 6 + [404]
