"""The obstore engine's requests where they differ from s3fs's, or have no s3fs twin to compare.

The shared plan (a home is seven ranged GETs in flight together; a zip bundle its tail, then its
members) is asserted for both engines in ``test_performance_contract.py`` and
``test_bundle_requests.py``; here: the lookups after a miss, the async path without threads,
and a memory edit's conditional writes.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Any

import pytest

from tests.support import S3Proxy
from tests.support import obstore as engine
from toolnexus.agents import (
    BOOTSTRAP_ORDER,
    MAX_BOOTSTRAP_FILE_BYTES,
    compose_soul,
    compose_soul_async,
    memory_tool,
)
from toolnexus.stores.probe import forget_verdicts

pytestmark = pytest.mark.s3

PERSONA = {name: f"# {name}\n\nText of {name}.\n".encode() * 40 for name in BOOTSTRAP_ORDER[:6]}


@pytest.fixture
def kw(proxy: S3Proxy) -> dict[str, Any]:
    return {"storage_options": engine.s3_options(proxy.endpoint_url), "engine": "obstore"}


def kinds(proxy: S3Proxy) -> dict[str, int]:
    return dict(collections.Counter("LIST" if "list-type" in r.query else r.method for r in proxy.requests))


def test_a_missing_home_costs_seven_gets_one_list_and_one_head(
    proxy: S3Proxy, kw: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, _ = bucket
    with pytest.raises(FileNotFoundError, match="no such persona home"):
        compose_soul(f"s3://{name}/nobody", **kw)
    assert kinds(proxy) == {"GET": 7, "LIST": 1, "HEAD": 1}  # s3fs: 7 GET, 2 LIST, 1 HEAD


def test_async_composition_is_seven_gets_in_flight_without_a_thread(
    proxy: S3Proxy,
    kw: dict[str, Any],
    bucket: tuple[str, Callable[..., None]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name, put = bucket
    put({f"aster/{n}": data for n, data in PERSONA.items()})

    async def compose() -> tuple[str, list[str]]:
        engine.forbid_worker_threads(monkeypatch)
        return await compose_soul_async(f"s3://{name}/aster", **kw)

    with proxy.gathering(7):
        _, found = asyncio.run(compose())
    assert found == list(BOOTSTRAP_ORDER[:6])
    assert {r.range_header for r in proxy.requests} == {f"bytes=0-{MAX_BOOTSTRAP_FILE_BYTES}"}
    assert proxy.peak_in_flight == 7


def test_a_memory_edit_is_a_conditional_put_after_one_probe(
    proxy: S3Proxy, kw: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({"aster/SOUL.md": b"You are Aster."})
    forget_verdicts()
    tool = memory_tool(f"s3://{name}/aster", **kw)
    assert kinds(proxy) == {"HEAD": 2, "LIST": 2}  # MEMORY.md's and USER.md's home: a folder that exists
    proxy.reset()
    assert tool.tool(command="append", content="- first").startswith("ok:")
    puts = [r for r in proxy.requests if r.method == "PUT"]
    probe, edit = puts[:3], puts[3:]
    assert [r.headers.get("if-none-match") for r in probe[:2]] == ["*", "*"]
    assert probe[2].headers.get("if-match")  # a stale ETag: refused, so conditions are enforced
    assert [(r.path.rsplit("/", 1)[-1], r.headers.get("if-none-match")) for r in edit] == [("MEMORY.md", "*")]
    deletes = [r for r in proxy.requests if r.method == "POST" and r.query == "delete"]
    assert len(deletes) == 1  # the probe object's, through S3's bulk delete (obstore's way)
    proxy.reset()
    assert tool.tool(command="append", content="- second").startswith("ok:")
    (get,) = [r for r in proxy.requests if r.method == "GET"]
    (update,) = [r for r in proxy.requests if r.method == "PUT"]
    assert get.range_header == f"bytes=0-{MAX_BOOTSTRAP_FILE_BYTES}"
    assert update.headers.get("if-match")
    assert "if-none-match" not in update.headers
    assert compose_soul(f"s3://{name}/aster", **kw)[0].endswith("- first\n- second")
    forget_verdicts()
