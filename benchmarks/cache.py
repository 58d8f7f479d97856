"""Repeat compositions through SoulCache, revalidated on every call: local and on S3."""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

from benchmarks.harness import KIB, Row, fmt_bytes, fmt_time, interleaved_cpu, median_ratio
from benchmarks.personas import bundle_bytes, typical_files, write_home
from benchmarks.remote import _by_method
from benchmarks.servers import BUCKET, S3
from toolnexus.agents import SoulCache, compose_soul
from toolnexus.sources.local import RACY_SECONDS


def cached_home(work: Path) -> Path:
    """Write the home early: the cache trusts a file's stat only once it is RACY_SECONDS old."""
    return write_home(work / "cached", typical_files())


def target_cache_local(home: Path, rounds: int, number: int) -> Row:
    newest = max(os.stat(entry.path).st_ctime for entry in os.scandir(home))
    time.sleep(max(0.0, newest + RACY_SECONDS + 0.1 - time.time()))
    cache = SoulCache()
    assert cache.compose_soul(home) == compose_soul(home)
    times, wall = interleaved_cpu(
        {"cached": lambda: cache.compose_soul(home), "uncached": lambda: compose_soul(home)},
        rounds=rounds,
        number=number,
    )
    ratio = median_ratio(times["cached"], times["uncached"])
    wall_ratio = median_ratio(wall["cached"], wall["uncached"])
    return Row(
        "cache",
        "unchanged local persona (6 × 3 KB), revalidated, CPU",
        fmt_time(statistics.median(times["cached"])),
        f"compose_soul {fmt_time(statistics.median(times['uncached']))} (wall {wall_ratio:.2f}×)",
        ratio,
        requests="1 fstat of the folder + 6 fstatat, no read",
        limit="≤ 0.5×",
        on_time=ratio <= 0.5,
        bound=0.5,
    )


def target_cache_s3(s3: S3, rounds: int, latency: float) -> list[Row]:
    s3.put({f"cached/{name}": data for name, data in typical_files().items()})
    s3.put({"cached.zip": bundle_bytes(typical_files())})
    options = s3.options()
    rows: list[Row] = []
    for label, url in (("persona", f"s3://{BUCKET}/cached"), ("zip bundle", f"s3://{BUCKET}/cached.zip")):
        cache = SoulCache()
        _, plain = s3.observe(lambda url=url: compose_soul(url, storage_options=options))
        plain_bytes = plain.bytes_sent
        cache.compose_soul(url, storage_options=options)
        trips: list[float] = []

        def again(cache: SoulCache = cache, url: str = url) -> object:
            return cache.compose_soul(url, storage_options=options)

        for _ in range(rounds):
            elapsed, proxy = s3.observe(again, latency)
            trips.append(elapsed / latency)
        statuses = sorted(str(r.response_status) for r in proxy.requests)
        conditional = all(r.headers.get("if-none-match") for r in proxy.requests if r.response_status == 304)
        sent = proxy.bytes_sent
        rows.append(
            Row(
                "cache",
                f"unchanged S3 {label}, revalidated, {fmt_time(latency)}/request",
                f"{fmt_bytes(sent)} of bodies; statuses {' '.join(statuses)}",
                f"compose_soul {fmt_bytes(plain_bytes)}",
                sent / plain_bytes,
                _by_method(proxy) + " (If-None-Match)",
                sent,
                statistics.median(trips),
                "≤ 1 KiB of bodies",
                sent <= KIB and conditional,
            )
        )
    return rows
