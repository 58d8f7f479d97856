"""``audit`` over a fleet — on moto in a process of its own, on a 2-worker LocalCluster, and a
local folder against composing the same personas in a loop.

The in-process audits run in child processes (:mod:`benchmarks.audit_child`), one per fleet size, so that each
peak RSS is that audit's alone: a bounded audit holds the same memory for 500 personas as for
2,000. Requests are counted by the proxy in front of moto, in a run of their own. The cluster
audits the same prefix from this process; its lines must hash to the in-process run's.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support import s3_storage_options

from benchmarks.harness import MIB, Row, fmt_time, interleaved_cpu, median_ratio, process_cpu_seconds
from benchmarks.personas import text_of, typical_files, write_home
from benchmarks.servers import BUCKET, S3
from toolnexus.agents import BOOTSTRAP_ORDER, audit, compose_soul, inspect_soul

#: Seven small files: every bootstrap name present, so each persona is 7 GETs that all hit.
SMALL_FILES = {name: text_of(512, name.removesuffix(".md")) for name in BOOTSTRAP_ORDER}
RSS_LIMIT = 200 * MIB


def _in_child(prefix: str, options: dict[str, Any]) -> dict[str, Any]:
    code = f"from benchmarks.audit_child import measure; measure({prefix!r}, {json.dumps(options)!r})"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode:
        sys.stderr.write(done.stderr)  # an unexpected error: shown whole
        done.check_returncode()
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return figures


def _digest(results: Any) -> tuple[int, str]:
    digest = hashlib.sha256()
    count = 0
    for result in results:
        digest.update(json.dumps(result.to_dict(), ensure_ascii=False).encode() + b"\n")
        count += 1
    return count, digest.hexdigest()


def _lists(s3: S3) -> int:
    return sum(1 for record in s3.proxy.requests if "list-type=2" in record.query)


def target_audit_s3(s3: S3, count: int, small: int, full: bool = True) -> list[Row]:
    """``count`` personas in process (and ``small`` for the memory bound), then on a LocalCluster
    (not in a quick run, whose ``count`` figures are those of the run through the proxy).

    Throughput, CPU and memory are measured straight against moto; the requests in one more run
    through the counting proxy. The proxy keeps every client connection alive, so the client's
    pool fills up to its size (448 connections for 64 personas in flight) and the peak RSS then
    depends on how the proxy happens to schedule them, not on the fleet: measured through it, the
    smaller fleet peaked higher as often as not.
    """
    for size in (small, count):
        s3.put_fleet(f"audit{size}/", size, SMALL_FILES)
    direct = s3_storage_options(s3.endpoint)
    if full:  # warm: moto's first GETs copy each object once
        _in_child(f"s3://{BUCKET}/audit{small}", direct)
    runs: dict[int, dict[str, Any]] = {}
    moto_cpu: dict[int, float] = {}
    # A quick run takes the large fleet's figures from the counted run (one child fewer).
    for size in (small, count) if full else (small,):
        before = process_cpu_seconds(s3.pid)
        runs[size] = _in_child(f"s3://{BUCKET}/audit{size}", direct)
        moto_cpu[size] = process_cpu_seconds(s3.pid) - before
    s3.proxy.reset()
    before = process_cpu_seconds(s3.pid)
    counted = _in_child(f"s3://{BUCKET}/audit{count}", s3.options())
    if not full:
        runs[count], moto_cpu[count] = counted, process_cpu_seconds(s3.pid) - before
    lists = _lists(s3)
    gets = s3.proxy.count("GET") - lists
    main = runs[count]
    rate = main["count"] / main["elapsed"]
    rss_ratio = main["rss"] / runs[small]["rss"]
    rows = [
        Row(
            "audit",
            f"{count} personas (7 files each) on moto, in process",
            f"{rate:.0f} personas/s ({main['elapsed']:.1f} s); CPU: client "
            f"{fmt_time(main['cpu'] / count)}/persona, moto {fmt_time(moto_cpu[count] / (7 * count))}/GET",
            f"{gets / count:.2f} GET/persona, {lists} listing pages (through the proxy)",
            requests=f"{gets} GET + {lists} LIST",
            limit="7 GET/persona + pages",
            ok=gets == 7 * count and main["count"] == counted["count"] == count,
            details={"runs": runs, "counted": counted, "gets": gets, "lists": lists, "moto_cpu": moto_cpu},
        ),
        Row(
            "audit",
            f"peak RSS: {small} vs {count} personas",
            f"{main['rss'] / MIB:.0f} MiB vs {runs[small]['rss'] / MIB:.0f} MiB",
            f"{small} personas",
            rss_ratio,
            limit="within 10 %, ≤ 200 MiB",
            ok=abs(rss_ratio - 1) <= 0.10 and main["rss"] <= RSS_LIMIT,
        ),
    ]
    if full:
        rows.append(_on_cluster(f"s3://{BUCKET}/audit{count}", direct, main, small))
    else:
        rows.append(Row("audit", f"{count} personas on a 2-worker LocalCluster", "not run (--quick)"))
    return rows


def _on_cluster(prefix: str, options: dict[str, Any], alone: dict[str, Any], small: int) -> Row:
    from toolnexus.fleet.cluster import dask_client  # noqa: PLC0415  (dask is the `dask` extra)

    with dask_client("local", workers=2) as client:
        list(audit(f"s3://{BUCKET}/audit{small}", storage_options=options, executor=client))  # warm workers
        start = time.perf_counter()
        count, digest = _digest(audit(prefix, storage_options=options, executor=client))
        elapsed = time.perf_counter() - start
    rate, alone_rate = count / elapsed, alone["count"] / alone["elapsed"]
    same = (count, digest) == (alone["count"], alone["digest"])
    return Row(
        "audit",
        f"{count} personas on a 2-worker LocalCluster",
        f"{rate:.0f} personas/s ({elapsed:.1f} s); results {'identical' if same else 'DIFFER'}",
        f"in process {alone_rate:.0f} personas/s",
        rate / alone_rate,
        limit="report (2 cores, one moto); identical results",
        ok=same,
        details={"elapsed": elapsed, "count": count},
    )


def target_audit_local(work: Path, rounds: int) -> Row:
    """A 100-persona local folder: ``audit`` against ``compose_soul`` (and ``inspect_soul``) in a loop."""
    fleet = work / "audit-fleet"
    homes = [str(write_home(fleet / f"p{i:03d}", typical_files())) for i in range(100)]
    cpu, wall = interleaved_cpu(
        {
            "audit": lambda: sum(1 for _ in audit(fleet)),
            "compose": lambda: [compose_soul(home) for home in homes],
            "inspect": lambda: [inspect_soul(home) for home in homes],
        },
        rounds=rounds,
        number=3,
    )
    ratio = median_ratio(cpu["audit"], cpu["compose"])
    versus_inspect = median_ratio(cpu["audit"], cpu["inspect"])
    wall_ratio = median_ratio(wall["audit"], wall["compose"])
    return Row(
        "audit",
        "100 local personas: audit vs composing them in a loop (CPU)",
        f"{statistics.median(cpu['audit']) * 1e3:.1f} ms; {versus_inspect:.2f}× inspect_soul loop",
        f"compose_soul loop {statistics.median(cpu['compose']) * 1e3:.1f} ms (wall {wall_ratio:.2f}×)",
        ratio,
        limit="≤ 1.2×",
        on_time=ratio <= 1.2,
        bound=1.2,
        details={"cpu": cpu, "wall": wall, "versus_inspect": versus_inspect, "wall_ratio": wall_ratio},
    )
