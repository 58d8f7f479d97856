"""Files outside a profile are never read: on S3 no request names them, cached or not."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from tests.support import S3Proxy
from toolnexus.agents import (
    BOOTSTRAP_ORDER,
    PROFILES,
    Budget,
    SoulCache,
    compose_soul,
    compose_soul_async,
    inspect_soul,
)

PERSONA = {name: f"# {name}\n\nText of {name}.\n".encode() * 40 for name in BOOTSTRAP_ORDER}


def asked(proxy: S3Proxy) -> list[str]:
    """The object names requested, in order of arrival."""
    return sorted(request.path.rsplit("/", 1)[-1] for request in proxy.requests)


def test_a_profile_on_s3_requests_only_its_files(
    proxy: S3Proxy, via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({f"aster/{file}": data for file, data in PERSONA.items()})
    home = f"s3://{name}/aster"
    _soul, found = compose_soul(home, storage_options=via_proxy, profile="subagent")
    assert found == ["AGENTS.md", "TOOLS.md"]
    assert asked(proxy) == ["AGENTS.md", "TOOLS.md"]
    assert {request.method for request in proxy.requests} == {"GET"}
    proxy.reset()
    report = inspect_soul(home, storage_options=via_proxy, profile="heartbeat", budget=Budget(total=100))
    assert asked(proxy) == ["HEARTBEAT.md"]
    assert report.found == ["HEARTBEAT.md"]
    assert len(report.soul) <= 100
    proxy.reset()
    found = asyncio.run(compose_soul_async(home, storage_options=via_proxy, files=["MEMORY.md"]))[1]
    assert found == asked(proxy) == ["MEMORY.md"]


def test_a_cached_profile_on_s3_revalidates_only_its_files(
    proxy: S3Proxy, via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({f"aster/{file}": data for file, data in PERSONA.items()})
    home, cache = f"s3://{name}/aster", SoulCache()
    group = sorted(PROFILES["group"])
    first = cache.compose_soul(home, storage_options=via_proxy, profile="group")
    assert asked(proxy) == group
    proxy.reset()
    again = cache.compose_soul(home, storage_options=via_proxy, profile="group")
    assert asked(proxy) == group, "no request for MEMORY.md"
    assert [request.response_status for request in proxy.requests] == [304] * len(group)
    assert again == first == compose_soul(home, storage_options=via_proxy, profile="group")
