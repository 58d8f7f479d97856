"""Targets measured against S3 (moto behind a latency-injecting, request-counting proxy): 2, 3, 4, 5."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import fsspec
from tests.support import S3Proxy, make_bucket, put_objects, s3_storage_options, start_moto_server

from benchmarks.harness import KIB, MIB, Row, fmt_bytes, fmt_time
from benchmarks.personas import bundle_bytes, central_directory_size, member_bytes, text_of, typical_files
from toolnexus.agents import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, compose_soul, compose_soul_async

CAP = MAX_BOOTSTRAP_FILE_BYTES
BUCKET = "toolnexus-bench"
FLEET = 20
#: What the README tells fleet users to pass; also what the baselines get, to be fair.
POOL = {"config_kwargs": {"max_pool_connections": 400}}


@dataclass
class S3:
    """The moto server, the proxy in front of it, and storage options that go through the proxy."""

    endpoint: str
    proxy: S3Proxy

    def options(self, **extra: Any) -> dict[str, Any]:
        return s3_storage_options(self.proxy.endpoint_url, **extra)

    def put(self, objects: dict[str, bytes]) -> None:
        put_objects(self.endpoint, BUCKET, objects)

    def observe(self, function: Callable[[], object], latency: float = 0.0) -> tuple[float, S3Proxy]:
        """Run once with a fresh request log; returns the wall time."""
        self.proxy.latency = latency
        self.proxy.reset()
        start = time.perf_counter()
        function()
        return time.perf_counter() - start, self.proxy


@contextmanager
def s3_environment() -> Iterator[S3]:
    server = start_moto_server()
    proxy = S3Proxy(server.endpoint_url).start()
    try:
        make_bucket(server.endpoint_url, BUCKET)
        yield S3(server.endpoint_url, proxy)
    finally:
        proxy.stop()
        server.stop()


def _by_method(proxy: S3Proxy) -> str:
    counts: dict[str, int] = {}
    for record in proxy.requests:
        kind = "LIST" if record.method == "GET" and "list-type" in record.query else record.method
        counts[kind] = counts.get(kind, 0) + 1
    return " ".join(f"{count} {kind}" for kind, count in sorted(counts.items()))


def naive(fs: Any, home: str) -> dict[str, bytes]:
    """exists() then cat() per name, one after another, as most code does it."""
    fs.invalidate_cache()
    paths = {name: f"{home}/{name}" for name in BOOTSTRAP_ORDER}
    return {name: fs.cat_file(path, start=0, end=CAP + 1) for name, path in paths.items() if fs.exists(path)}


def list_then_read(fs: Any, home: str) -> list[Any]:
    """A listing, then concurrent capped reads of what it showed: 2 round trips plus a LIST."""
    fs.invalidate_cache()
    present = {path.rsplit("/", 1)[-1] for path in fs.ls(home, detail=False)}
    paths = [f"{home}/{n}" for n in BOOTSTRAP_ORDER if n in present]
    return list(fs.cat_ranges(paths, [0] * len(paths), [CAP + 1] * len(paths)))


def target_one_round_trip(s3: S3, rounds: int, latency: float) -> list[Row]:
    s3.put({f"typical/{name}": data for name, data in typical_files().items()})
    s3.put({"empty-home/notes.txt": b"not a bootstrap file"})
    home, options = f"s3://{BUCKET}/typical", s3.options(**POOL)
    fs = fsspec.filesystem("s3", **options)
    compose_soul(home, storage_options=options)  # warm: session, connections
    candidates: dict[str, Callable[[], object]] = {
        "compose_soul": lambda: compose_soul(home, storage_options=options),
        "list+read": lambda: list_then_read(fs, home),
        "naive": lambda: naive(fs, home),
    }
    observed: dict[str, list[float]] = {name: [] for name in candidates}
    requests: dict[str, str] = {}
    for _ in range(rounds):
        for name, function in candidates.items():
            elapsed, proxy = s3.observe(function, latency)
            observed[name].append(elapsed / latency)
            requests[name] = _by_method(proxy)
    _, proxy = s3.observe(lambda: compose_soul(home, storage_options=options))
    ranges = {record.range_header for record in proxy.requests}
    gets, total, sent = proxy.count("GET"), proxy.count(), proxy.bytes_sent
    trips = {name: statistics.median(values) for name, values in observed.items()}
    _, missing = s3.observe(lambda: compose_soul(f"s3://{BUCKET}/empty-home", storage_options=options))
    missing_requests = _by_method(missing)
    return [
        Row(
            "3 S3",
            f"warm composition, {fmt_time(latency)}/request",
            f"{trips['compose_soul']:.2f} RT",
            f"list+read {trips['list+read']:.2f} RT; naive {trips['naive']:.2f} RT",
            trips["naive"] / trips["compose_soul"],
            requests["compose_soul"] + f" (list+read: {requests['list+read']}; naive: {requests['naive']})",
            sent,
            trips["compose_soul"],
            "≤ 7 GET, 0 LIST/HEAD, ≤ 1.5 RT",
            trips["compose_soul"] <= 1.5 and gets == total <= 7 and ranges == {f"bytes=0-{CAP}"},
            {"ranges": sorted(r or "" for r in ranges), "round_trips": trips},
        ),
        Row(
            "3 S3",
            "home with no bootstrap file",
            missing_requests,
            "",
            requests=missing_requests,
            limit="7 GET + 1 LIST",
            ok=missing_requests == "7 GET 1 LIST",
        ),
    ]


def target_big_object(s3: S3) -> Row:
    s3.put({"big/AGENTS.md": text_of(8 * MIB)})
    home, options = f"s3://{BUCKET}/big", s3.options()
    _, proxy = s3.observe(lambda: compose_soul(home, storage_options=options))
    sent, requests = proxy.bytes_sent, _by_method(proxy)
    fs = fsspec.filesystem("s3", **options)
    _, whole = s3.observe(lambda: fs.cat_file(f"{BUCKET}/big/AGENTS.md"))
    return Row(
        "2 bounded",
        "S3 object of 8 MiB",
        f"{fmt_bytes(sent)} sent",
        f"cat() {fmt_bytes(whole.bytes_sent)}",
        sent / whole.bytes_sent,
        requests,
        sent,
        limit="≤ cap + 256 KiB",
        ok=sent <= CAP + 256 * KIB,
    )


def target_bundle(s3: S3, asset_size: int, latency: float) -> list[Row]:
    files = typical_files()
    data = bundle_bytes(files, asset_size=asset_size)
    s3.put({"bundles/aster.zip": data})
    url, options = f"s3://{BUCKET}/bundles/aster.zip", s3.options()
    soul, found = compose_soul(url, storage_options=options)
    elapsed, proxy = s3.observe(lambda: compose_soul(url, storage_options=options), latency)
    sent, requests = proxy.bytes_sent, _by_method(proxy)
    bound = central_directory_size(data) + member_bytes(data, tuple(found)) + 256 * KIB

    def fsspec_zip() -> None:
        zfs = fsspec.filesystem("zip", fo=url, target_options=options)
        for name in found:
            zfs.cat_file(f"aster/{name}")

    _, baseline = s3.observe(fsspec_zip)
    s3.put({"bundles/aster.zip": bundle_bytes({**files, "SOUL.md": b"A replaced soul."})})
    fresh = "A replaced soul." in compose_soul(url, storage_options=options)[0]
    return [
        Row(
            "4 bundle",
            f"bundle on S3 with a {fmt_bytes(asset_size)} asset",
            f"{fmt_bytes(sent)} fetched",
            f"fsspec zip:// {fmt_bytes(baseline.bytes_sent)}",
            sent / baseline.bytes_sent,
            requests,
            sent,
            elapsed / latency,
            f"≤ CD + members + 256 KiB = {fmt_bytes(bound)}",
            sent <= bound and len(soul) > 0,
            {"bound": bound, "archive_bytes": len(data)},
        ),
        Row(
            "4 bundle",
            "bundle object replaced by another writer",
            "new soul seen" if fresh else "STALE",
            "",
            limit="next call sees it",
            ok=fresh,
        ),
    ]


def target_fleet(s3: S3, rounds: int, latency: float, with_default_pool: bool) -> Row:
    s3.put({f"fleet/p{i:02d}/{name}": data for i in range(FLEET) for name, data in typical_files().items()})
    homes = [f"s3://{BUCKET}/fleet/p{i:02d}" for i in range(FLEET)]
    options, default = s3.options(**POOL), s3.options()

    async def gather() -> None:
        await asyncio.gather(*(compose_soul_async(home, storage_options=options) for home in homes))

    def threads(opts: dict[str, Any]) -> None:
        with ThreadPoolExecutor(6) as pool:
            list(pool.map(lambda home: compose_soul(home, storage_options=opts), homes))

    asyncio.run(gather())
    threads(default)
    runs: dict[str, list[float]] = {"async": [], "threads": []}
    peak = 0
    for _ in range(rounds):
        elapsed, proxy = s3.observe(lambda: asyncio.run(gather()), latency)
        runs["async"].append(elapsed / latency)
        peak = max(peak, proxy.peak_in_flight)
        runs["threads"].append(s3.observe(lambda: threads(options), latency)[0] / latency)
    trips = {name: statistics.median(values) for name, values in runs.items()}
    baseline = f"6 threads {trips['threads']:.2f} RT"
    if with_default_pool:
        trips["threads_default_pool"] = s3.observe(lambda: threads(default), latency)[0] / latency
        baseline += f" ({trips['threads_default_pool']:.2f} RT with the default pool of 10)"
    return Row(
        "5 async",
        f"{FLEET} personas, asyncio.gather, {fmt_time(latency)}/request",
        f"{trips['async']:.2f} RT",
        baseline,
        trips["threads"] / trips["async"],
        f"{FLEET * 7} GET, {peak} in flight",
        round_trips=trips["async"],
        limit="≤ 4 RT",
        ok=trips["async"] <= 4,
        details={"round_trips": trips, "peak_in_flight": peak},
    )
