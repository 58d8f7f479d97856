"""Fleets of S3 personas against the best any s3fs client does with the same objects.

The baseline is one bare concurrent ``cat_ranges`` of the same objects (7 per persona) through
the same s3fs instance, in the same rounds: the least any s3fs client can spend on them. The
server's floor (1 RT + moto's CPU, served serially) is reported beside it: on a 2-core machine
it is the rig's limit, not the library's.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import threading
import tracemalloc

import fsspec

from benchmarks.harness import Row, client_cpu_seconds, fmt_bytes, fmt_time, process_cpu_seconds
from benchmarks.personas import typical_files
from benchmarks.remote import POOL
from benchmarks.servers import BUCKET, S3
from toolnexus.agents import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, compose_soul_async

CAP = MAX_BOOTSTRAP_FILE_BYTES


def _fleet(n: int) -> tuple[list[str], list[str]]:
    homes = [f"s3://{BUCKET}/fleet/p{i:03d}" for i in range(n)]
    paths = [f"{BUCKET}/fleet/p{i:03d}/{name}" for i in range(n) for name in BOOTSTRAP_ORDER]
    return homes, paths


def target_fleet(s3: S3, rounds: int, latency: float, counts: list[int], *, quick: bool = False) -> list[Row]:
    s3.put(
        {f"fleet/p{i:03d}/{name}": data for i in range(max(counts)) for name, data in typical_files().items()}
    )
    options = s3.options(**POOL)
    fs = fsspec.filesystem("s3", **options)  # the instance compose_soul gets for these options
    rows: list[Row] = []
    for n in counts:
        homes, paths = _fleet(n)

        async def gather(homes: list[str] = homes) -> None:
            souls = await asyncio.gather(*(compose_soul_async(h, storage_options=options) for h in homes))
            assert all(found == list(BOOTSTRAP_ORDER[:6]) for _, found in souls)

        def floor(paths: list[str] = paths) -> None:
            fs.cat_ranges(paths, [0] * len(paths), [CAP + 1] * len(paths), on_error="return")

        asyncio.run(gather())
        floor()
        runs: dict[str, list[float]] = {"fleet": [], "floor": []}
        cpu: dict[str, list[float]] = {"fleet": [], "floor": []}
        servers: dict[str, list[float]] = {"moto": [], "proxy": []}
        peak = 0
        for _ in range(rounds):
            for kind, run in (("floor", floor), ("fleet", lambda: asyncio.run(gather()))):
                before = client_cpu_seconds(), process_cpu_seconds(s3.pid), process_cpu_seconds(s3.proxy.pid)
                elapsed, proxy = s3.observe(run, latency)
                cpu[kind].append(client_cpu_seconds() - before[0])
                runs[kind].append(elapsed / latency)
                if kind == "fleet":
                    peak = max(peak, proxy.peak_in_flight)
                    servers["moto"].append(process_cpu_seconds(s3.pid) - before[1])
                    servers["proxy"].append(process_cpu_seconds(s3.proxy.pid) - before[2])
        ratio = statistics.median(f / b for f, b in zip(runs["fleet"], runs["floor"], strict=True))
        trips = {kind: statistics.median(values) for kind, values in runs.items()}
        per = {kind: statistics.median(values) / n for kind, values in cpu.items()}
        moto, relay = (statistics.median(values) for values in servers.values())
        #: moto serves every request in one interpreter, one at a time, and the first reaches it only
        #: after one injected latency: no client, however lean, finishes sooner than this.
        server_bound = 1 + moto / latency
        memory = _memory_per_persona(s3, homes, quick)
        headline = n == counts[0]
        rows.append(
            Row(
                "fleet",
                f"{n} personas, asyncio.gather, {fmt_time(latency)}/request",
                f"{trips['fleet']:.2f} RT",
                f"bare s3fs cat_ranges of the {7 * n} objects {trips['floor']:.2f} RT; "
                f"server floor {server_bound:.2f} RT",
                ratio,
                f"{7 * n} GET, {peak} in flight",
                round_trips=trips["fleet"],
                limit="≤ 1.05× bare cat_ranges" if headline else "report",
                details={
                    "round_trips": runs,
                    "client_cpu_seconds": cpu,
                    "peak_in_flight": peak,
                    "personas": n,
                },
                on_time=ratio <= 1.05 if headline else None,
                bound=1.05 if headline else None,
                key="fleet" if headline else "",
            )
        )
        rows.append(
            Row(
                "fleet",
                f"{n} personas: client CPU and memory",
                f"{fmt_time(per['fleet'])} CPU/composition; {fmt_bytes(memory)}/persona in flight",
                f"floor {fmt_time(per['floor'])} CPU per 7 objects",
                per["fleet"] / per["floor"],
                limit="report",
                details={"cpu_per_composition": per, "memory_per_persona": memory},
            )
        )
        rows.append(
            Row(
                "fleet",
                f"{n} personas: where the time goes ({os.cpu_count()} cores)",
                f"≥ {server_bound:.2f} RT for any client: 1 RT + moto's CPU, served serially",
                f"CPU: client {fmt_time(statistics.median(cpu['fleet']))}, moto {fmt_time(moto)} "
                f"({fmt_time(moto / (7 * n))}/request), proxy {fmt_time(relay)}",
                round_trips=server_bound,
                limit="report",
                details={"moto_cpu_seconds": servers["moto"], "proxy_cpu_seconds": servers["proxy"]},
            )
        )
    return rows


def _memory_per_persona(s3: S3, homes: list[str], quick: bool = False) -> int:
    """Python memory the client holds per persona while all its requests wait at the proxy.

    The proxy and moto run in processes of their own; test-support frames are left out anyway.
    A long latency (and patient timeouts) keep every request in flight while tracemalloc slows
    the client down; 0 if they never were all in flight at once. A quick run holds them for less
    and traces one frame, not twelve (a smoke figure: test-support frames are then counted too).
    """
    config = {"max_pool_connections": 400, "connect_timeout": 60, "read_timeout": 120}
    options = s3.options(config_kwargs=config)

    async def gather() -> None:
        await asyncio.gather(*(compose_soul_async(h, storage_options=options) for h in homes))

    asyncio.run(gather())  # warm: session, connections
    proxy = s3.proxy
    proxy.latency = 1.0 if quick else 3.0
    proxy.reset()
    taken: list[int] = []
    done = threading.Event()
    tracemalloc.start(1 if quick else 12)

    def at_peak() -> None:
        while proxy.peak_in_flight < 7 * len(homes):
            if done.wait(0.05):
                return
        taken.append(_client_bytes(tracemalloc.take_snapshot()))

    try:
        before = _client_bytes(tracemalloc.take_snapshot())
        watcher = threading.Thread(target=at_peak)
        watcher.start()
        asyncio.run(gather())
        done.set()
        watcher.join()
    finally:
        tracemalloc.stop()
        proxy.latency = 0.0
    return max(0, (taken[0] - before) // len(homes)) if taken else 0


def _client_bytes(snapshot: tracemalloc.Snapshot) -> int:
    kept = snapshot.filter_traces(
        [
            tracemalloc.Filter(False, "*/tests/support/*", all_frames=True),
            tracemalloc.Filter(False, tracemalloc.__file__),
        ]
    )
    return sum(stat.size for stat in kept.statistics("filename"))
