"""Targets measured against S3 (moto behind a latency-injecting, request-counting proxy).

An S3 home in one round trip (and where the time goes), zip bundles in one or two, and an 8 MiB
object read no further than the cap.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import fsspec

from benchmarks.harness import KIB, MIB, Row, client_cpu_seconds, fmt_bytes, fmt_time, process_cpu_seconds
from benchmarks.personas import bundle_bytes, central_directory_size, member_bytes, text_of, typical_files
from benchmarks.servers import BUCKET, S3, ProxyProcess
from toolnexus.agents import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, compose_soul
from toolnexus.sources.objects import MEMBER_SLACK, TAIL_BYTES

CAP = MAX_BOOTSTRAP_FILE_BYTES
#: What docs/performance.md tells fleet users to pass; also what the baselines get, to be fair.
POOL = {"config_kwargs": {"max_pool_connections": 400}}


def _by_method(proxy: ProxyProcess) -> str:
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
            "S3 home",
            f"warm composition, {fmt_time(latency)}/request",
            f"{trips['compose_soul']:.2f} RT",
            f"list+read {trips['list+read']:.2f} RT; naive {trips['naive']:.2f} RT",
            trips["naive"] / trips["compose_soul"],
            requests["compose_soul"] + f" (list+read: {requests['list+read']}; naive: {requests['naive']})",
            sent,
            trips["compose_soul"],
            "≤ 7 GET, 0 LIST/HEAD, ≤ 1.2 RT",
            gets == total <= 7 and ranges == {f"bytes=0-{CAP}"},
            {"ranges": sorted(r or "" for r in ranges), "round_trips": trips, "gets": gets},
            on_time=trips["compose_soul"] <= 1.2,
            key="s3-home",
        ),
        Row(
            "S3 home",
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
        "bounded",
        "S3 object of 8 MiB",
        f"{fmt_bytes(sent)} sent",
        f"cat() {fmt_bytes(whole.bytes_sent)}",
        sent / whole.bytes_sent,
        requests,
        sent,
        limit="≤ cap + 256 KiB",
        ok=sent <= CAP + 256 * KIB,
    )


def target_where_time_goes(s3: S3, rounds: int, latency: float) -> Row:
    """An S3 home at a short latency: what a composition costs beyond the wait, and on which side."""
    home, options = f"s3://{BUCKET}/typical", s3.options(**POOL)
    compose_soul(home, storage_options=options)
    trips: list[float] = []
    client: list[float] = []
    server: list[float] = []
    for _ in range(rounds):
        cpu, moto = client_cpu_seconds(), process_cpu_seconds(s3.pid)
        elapsed, _ = s3.observe(lambda: compose_soul(home, storage_options=options), latency)
        client.append(client_cpu_seconds() - cpu)
        server.append(process_cpu_seconds(s3.pid) - moto)
        trips.append(elapsed / latency)
    rt, mine, theirs = statistics.median(trips), statistics.median(client), statistics.median(server)
    beyond = max(0.0, rt - 1) * latency
    return Row(
        "S3 home",
        f"warm composition, {fmt_time(latency)}/request: where the time goes",
        f"{rt:.2f} RT = wait + {fmt_time(beyond)}",
        f"client CPU {fmt_time(mine)} ({fmt_time(mine / 7)}/request); moto CPU {fmt_time(theirs)}",
        requests="7 GET",
        round_trips=rt,
        limit="report",
        details={"client_cpu_seconds": client, "moto_cpu_seconds": server, "round_trips": trips},
    )


def target_bundle(s3: S3, asset_size: int, rounds: int, latency: float) -> list[Row]:
    """A small bundle in one request; a large one in two round trips, never its asset."""
    files = typical_files()
    small, large = bundle_bytes(files), bundle_bytes(files, asset_size=asset_size)
    s3.put({"bundles/small.zip": small, "bundles/aster.zip": large})
    options = s3.options()
    urls = {"small": f"s3://{BUCKET}/bundles/small.zip", "large": f"s3://{BUCKET}/bundles/aster.zip"}
    for url in urls.values():
        compose_soul(url, storage_options=options)
    found = compose_soul(urls["large"], storage_options=options)[1]

    def fsspec_zip(url: str) -> None:
        zfs = fsspec.filesystem("zip", fo=url, target_options=options, skip_instance_cache=True)
        for name in found:
            zfs.cat_file(f"aster/{name}")

    trips: dict[str, list[float]] = {"small": [], "large": [], "zip://": []}
    seen: dict[str, tuple[str, int]] = {}
    for _ in range(rounds):
        for kind, url in urls.items():
            elapsed, proxy = s3.observe(lambda url=url: compose_soul(url, storage_options=options), latency)
            trips[kind].append(elapsed / latency)
            seen[kind] = (_by_method(proxy), proxy.bytes_sent)
        elapsed, proxy = s3.observe(lambda: fsspec_zip(urls["small"]), latency)
        trips["zip://"].append(elapsed / latency)
        seen["zip://"] = (_by_method(proxy), proxy.bytes_sent)
    bound = central_directory_size(large) + member_bytes(large, tuple(found)) + TAIL_BYTES + 7 * MEMBER_SLACK
    _, baseline = s3.observe(lambda: fsspec_zip(urls["large"]))
    s3.put({"bundles/aster.zip": bundle_bytes({**files, "SOUL.md": b"A replaced soul."})})
    fresh = "A replaced soul." in compose_soul(urls["large"], storage_options=options)[0]
    rt = {kind: statistics.median(values) for kind, values in trips.items()}
    small_requests, small_sent = seen["small"]
    requests, sent = seen["large"]
    return [
        Row(
            "bundle",
            f"bundle of {fmt_bytes(len(small))} on S3, {fmt_time(latency)}/request",
            f"{rt['small']:.2f} RT",
            f"fsspec zip:// {rt['zip://']:.2f} RT ({seen['zip://'][0]})",
            requests=small_requests,
            bytes=small_sent,
            round_trips=rt["small"],
            limit="1 GET, ≤ 1.3 RT",
            ok=small_requests == "1 GET",
            on_time=rt["small"] <= 1.3,
        ),
        Row(
            "bundle",
            f"bundle with a {fmt_bytes(asset_size)} asset, {fmt_time(latency)}/request",
            f"{rt['large']:.2f} RT, {fmt_bytes(sent)} fetched",
            f"fsspec zip:// {fmt_bytes(baseline.bytes_sent)}",
            sent / baseline.bytes_sent,
            requests,
            sent,
            rt["large"],
            f"≤ 2.3 RT; ≤ CD + members + 64 KiB tail + slack = {fmt_bytes(bound)}",
            sent <= bound,
            {
                "bound": bound,
                "archive_bytes": len(large),
                "asset_bytes": asset_size,
                "round_trips": trips,
                "fetched": sent,
                "zipfs_fetched": baseline.bytes_sent,
            },
            on_time=rt["large"] <= 2.3,
            key="bundle-large",
        ),
        Row(
            "bundle",
            "bundle object replaced by another writer",
            "new soul seen" if fresh else "STALE",
            "",
            limit="next call sees it",
            ok=fresh,
        ),
    ]
