"""Zip bundles on S3, request by request: one suffix-range GET for a small bundle; the tail, then
every needed member concurrently for a larger one; ``If-Match`` pins the version.

Everything goes through the counting proxy: exact requests, ranges and conditional headers —
on both engines (``engine_via_proxy``): s3fs's and obstore's clients follow the same plan.
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Callable
from typing import Any

import pytest

from tests.support import MotoServer, ProxyRequest, S3Proxy, Status, put_objects
from tests.support.obstore import keyed
from toolnexus.agents import BOOTSTRAP_ORDER, compose_soul
from toolnexus.soul.bundling import bundle_bytes
from toolnexus.sources.objects import MEMBER_SLACK, TAIL_BYTES

PERSONA = {name: f"# {name}\n\nText of {name}.\n".encode() * 40 for name in BOOTSTRAP_ORDER[:6]}
KIB, MIB = 1024, 1024 * 1024
TAIL = f"bytes=-{TAIL_BYTES}"


def scattered(files: dict[str, bytes], assets: int, asset_size: int) -> bytes:
    """``zip -r``-style bundle: members in a folder, incompressible assets between them."""
    buffer = io.BytesIO()
    names = sorted(files)
    groups = [names[i :: assets + 1] for i in range(assets + 1)]
    with zipfile.ZipFile(buffer, "w") as archive:
        for index, group in enumerate(groups):
            for name in group:
                archive.writestr(f"aster/{name}", files[name], zipfile.ZIP_DEFLATED)
            if index < assets:
                archive.writestr(f"aster/assets/a{index}.bin", os.urandom(asset_size), zipfile.ZIP_STORED)
    return buffer.getvalue()


def local_soul(data: bytes, tmp_path: Any) -> tuple[str, list[str]]:
    path = tmp_path / "copy.zip"
    path.write_bytes(data)
    return compose_soul(path)


def test_small_bundle_is_one_suffix_range_get(
    proxy: S3Proxy, engine_via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]], tmp_path: Any
) -> None:
    name, put = bucket
    data = bundle_bytes(PERSONA)
    assert len(data) <= TAIL_BYTES
    put({"aster.zip": data})
    soul, found = compose_soul(f"s3://{name}/aster.zip", **engine_via_proxy)
    assert (soul, found) == local_soul(data, tmp_path)
    (request,) = proxy.requests
    assert (request.method, request.range_header, request.response_status) == ("GET", TAIL, 206)
    assert proxy.bytes_sent == len(data)


def test_chained_url_to_a_small_bundle_is_one_request(
    proxy: S3Proxy, engine_via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({"a.zip": scattered(PERSONA, 0, 0)})
    _, found = compose_soul(f"zip://aster::s3://{name}/a.zip", **keyed(engine_via_proxy, "s3"))
    assert found == list(BOOTSTRAP_ORDER[:6])
    assert [(r.method, r.range_header) for r in proxy.requests] == [("GET", TAIL)]


def test_large_bundle_is_the_tail_then_the_members_together_never_the_assets(
    proxy: S3Proxy, engine_via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]], tmp_path: Any
) -> None:
    name, put = bucket
    data = scattered(PERSONA, assets=2, asset_size=1 * MIB)
    put({"aster.zip": data})
    proxy.latency = 0.3  # long enough that requests issued together are seen together
    soul, found = compose_soul(f"s3://{name}/aster.zip", **engine_via_proxy)
    assert (soul, found) == local_soul(data, tmp_path)
    tail, *members = proxy.requests
    assert (tail.method, tail.range_header) == ("GET", TAIL)
    etag = tail.headers.get("if-match")
    assert etag is None
    # Two groups of members lie before the two assets; the third is inside the tail.
    assert len(members) == 2
    assert {r.method for r in members} == {"GET"}
    assert all(r.headers.get("if-match") for r in members)
    assert proxy.peak_in_flight == 2
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
        directory = len(data) - archive.start_dir
    wanted = sum(
        30 + len(i.filename) + len(i.extra) + i.compress_size for i in infos if "/assets/" not in i.filename
    )
    for request in members:
        start, end = request.byte_span
        for asset in (i for i in infos if "/assets/" in i.filename):
            assert end < asset.header_offset or start > asset.header_offset + asset.compress_size
    assert proxy.bytes_sent <= directory + wanted + TAIL_BYTES + 6 * MEMBER_SLACK


def test_bundle_replaced_between_tail_and_members_is_read_again_never_mixed(
    proxy: S3Proxy,
    engine_via_proxy: dict[str, Any],
    bucket: tuple[str, Callable[..., None]],
    moto_server: MotoServer,
    tmp_path: Any,
) -> None:
    name, put = bucket
    put({"aster.zip": scattered(PERSONA, assets=1, asset_size=256 * KIB)})
    replacement = scattered({**PERSONA, "SOUL.md": b"A replaced soul."}, assets=1, asset_size=128 * KIB)
    replaced: list[bool] = []

    def replace_before_members(request: ProxyRequest) -> bool:
        if "if-match" in request.headers and not replaced:
            put_objects(moto_server.endpoint_url, name, {"aster.zip": replacement})
            replaced.append(True)
        return False  # never a fault: the request goes on to meet the new object

    proxy.add_fault(replace_before_members, Status(500))
    soul, found = compose_soul(f"s3://{name}/aster.zip", **engine_via_proxy)
    assert (soul, found) == local_soul(replacement, tmp_path)
    statuses = [(r.range_header == TAIL, r.response_status) for r in proxy.requests]
    assert statuses[:3] == [(True, 206), (False, 412), (True, 206)]
    assert all(status == 206 for _, status in statuses[3:])


def test_missing_bundle_is_no_such_home(
    engine_via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, _ = bucket
    with pytest.raises(FileNotFoundError, match="no such persona home"):
        compose_soul(f"s3://{name}/nobody.zip", **engine_via_proxy)


def test_empty_object_named_zip_is_not_a_bundle(
    engine_via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({"empty.zip": b""})
    with pytest.raises(NotADirectoryError):
        compose_soul(f"s3://{name}/empty.zip", **engine_via_proxy)


def test_folder_named_zip_is_still_a_home(
    engine_via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({"odd.zip/SOUL.md": b"A folder, not a bundle."})
    assert compose_soul(f"s3://{name}/odd.zip", **engine_via_proxy)[1] == ["SOUL.md"]
