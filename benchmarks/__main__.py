"""Every performance target next to its baseline, measured in the same run.

Prints a Markdown table and writes the same figures as JSON to benchmarks/results/ (or --out),
with the `bench` extra (matplotlib) also two PNGs: the headline ratios and the scaling curves.
Exit status: 0 when every target holds, 1 when one misses (a quick run misses only on checks,
never on timings), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from benchmarks import (
    audit,
    budgets,
    cache,
    engines,
    fleet,
    layers,
    local,
    prompt_cache,
    recall,
    remote,
    skills,
)
from benchmarks.harness import MIB, Row, exit_status, table, write_json
from benchmarks.plot import plot_headlines, plot_scaling
from benchmarks.servers import S3, s3_environment


@dataclass(frozen=True)
class Plan:
    rounds: int
    local_calls: int
    huge: int
    bomb: int
    budget_huge: int
    asset: int
    latency: float
    fleet_latency: float
    fleet_rounds: int
    fleet_counts: list[int]
    short_latency: float
    persona_counts: list[int]
    sizes: list[int]
    audit_count: int
    audit_small: int
    engine_calls: int
    engine_fleet: int
    appends: int
    writers: int
    full: bool = True


FULL = Plan(
    rounds=15,
    local_calls=200,
    huge=1024 * MIB,
    bomb=512 * MIB,
    budget_huge=2 * MIB,
    asset=50 * 1000 * 1000,
    latency=0.2,
    fleet_latency=0.5,
    fleet_rounds=3,
    fleet_counts=[50, 100],
    short_latency=0.05,
    persona_counts=[1, 2, 4, 8, 16, 32, 64],
    sizes=[k * 1024 for k in (4, 16, 64, 256, 512, 1024, 1536, 2048, 4096, 16384, 65536)],
    audit_count=2000,
    audit_small=500,
    engine_calls=20,
    engine_fleet=50,
    appends=25,
    writers=4,
)
#: Every row's plumbing in well under a minute: smaller files and fleets, short latencies, one
#: round where rounds are medians, no cluster. Its timings say little, so it never fails on them.
QUICK = Plan(
    rounds=1,
    local_calls=30,
    huge=64 * MIB,
    bomb=64 * MIB,
    budget_huge=256 * 1024,
    asset=4 * MIB,
    latency=0.03,
    fleet_latency=0.06,
    fleet_rounds=1,
    fleet_counts=[10],
    short_latency=0.02,
    persona_counts=[1, 4, 16],
    sizes=[k * 1024 for k in (16, 512, 2048, 8192)],
    audit_count=20,
    audit_small=10,
    engine_calls=5,
    engine_fleet=10,
    appends=3,
    writers=2,
    full=False,
)


_STARTED = time.perf_counter()


def step(label: str) -> None:
    """Progress on stderr: wall time so far, and CPU (this process and its finished children)."""
    cpu = sum(os.times()[:4])
    wall = time.perf_counter() - _STARTED
    print(f"… {wall:5.1f} s (CPU {cpu:5.1f} s)  {label}", file=sys.stderr, flush=True)


def run_audit_local(plan: Plan, work: Path) -> Row:
    step("audit: 100 local personas")
    return audit.target_audit_local(work, plan.rounds)


def run_audit(plan: Plan, work: Path, s3: S3) -> list[Row]:
    rows = [run_audit_local(plan, work)]
    where = "in process and on a LocalCluster" if plan.full else "in process"
    step(f"audit: {plan.audit_count} personas on moto, {where}")
    return rows + audit.target_audit_s3(s3, plan.audit_count, plan.audit_small, plan.full)


def run_engines(plan: Plan, s3: S3) -> list[Row]:
    step("obstore: CPU per composition")
    rows = engines.target_cpu(s3, plan.rounds, plan.engine_calls)
    step("obstore: fleet")
    rows += engines.target_fleet(s3, plan.fleet_rounds, plan.fleet_latency, plan.engine_fleet)
    servers = "moto, Azurite, fake-gcs-server" if plan.full else "moto"
    step(f"memory: edits through obstore on {servers}; a server ignoring conditions")
    rows.append(engines.target_memory_edits(s3, plan.writers, plan.appends, emulators=plan.full))
    return rows


def run_skills(plan: Plan, work: Path, s3: S3) -> list[Row]:
    step("skills: a local catalog; an S3 home and a zip bundle with 20 skills")
    rows = [skills.target_skills_local(work, plan.rounds, plan.local_calls)]
    return rows + skills.target_skills_s3(s3, plan.rounds, plan.latency)


def run_recall(plan: Plan, work: Path, s3: S3) -> list[Row]:
    days = 730 if plan.full else 60
    step(f"recall: {days} daily notes, local and on S3")
    rows = recall.target_recall_local(work, days, 200 if plan.full else 20)
    return [*rows, recall.target_recall_s3(s3, work, days if plan.full else 10)]


def run(plan: Plan, work: Path, only: str | None = None) -> tuple[list[Row], dict[str, object]]:
    if only == "skills":
        with s3_environment() as s3:
            return run_skills(plan, work, s3), {}
    if only == "recall":
        with s3_environment() as s3:
            return run_recall(plan, work, s3), {}
    if only == "budgets":
        step("budgets")
        return budgets.targets(work, plan.rounds, plan.local_calls, huge=plan.budget_huge), {}
    if only == "engines":
        with s3_environment() as s3:
            return run_engines(plan, s3), {}
    if only == "audit":
        with s3_environment() as s3:
            return run_audit(plan, work, s3), {}
    if only == "audit-local":
        return [run_audit_local(plan, work)], {}
    step("prompt cache: a 20,000-token soul against loopback providers")
    rows: list[Row] = prompt_cache.target_prompt_cache(work)
    if only == "prompt-cache":
        return rows, {}
    cached_home = cache.cached_home(work)
    step("local speed")
    rows += local.target_local_speed(work, plan.rounds, plan.local_calls)
    step("bounded bytes: sparse file, zip bomb")
    rows.append(local.target_sparse(work, plan.rounds, plan.huge))
    rows.append(local.target_zip_bomb(work, plan.bomb))
    step("cache: local")
    rows.append(cache.target_cache_local(cached_home, plan.rounds, plan.local_calls))
    step("budgets")
    rows += budgets.targets(work, plan.rounds, plan.local_calls, huge=plan.budget_huge)
    with s3_environment() as s3:
        step("bounded bytes: 8 MiB S3 object")
        rows.append(remote.target_big_object(s3))
        step("S3 home: one round trip")
        rows += remote.target_one_round_trip(s3, plan.rounds, plan.latency)
        rows.append(remote.target_where_time_goes(s3, plan.rounds, plan.short_latency))
        step("bundles on S3")
        rows += remote.target_bundle(s3, plan.asset, plan.rounds, plan.latency)
        step("layers: three on S3")
        rows.append(layers.target_layers(s3, plan.fleet_rounds + 2, plan.fleet_latency))
        step("cache: S3")
        rows += cache.target_cache_s3(s3, plan.rounds, plan.latency)
        rows += run_skills(plan, work, s3)
        rows += run_recall(plan, work, s3)
        step(f"fleet: {', '.join(map(str, plan.fleet_counts))} personas through s3fs")
        rows += fleet.target_fleet(
            s3, plan.fleet_rounds, plan.fleet_latency, plan.fleet_counts, quick=not plan.full
        )
        rows += run_engines(plan, s3)
        rows += run_audit(plan, work, s3)
    step("scaling")
    scaling_rows, curves = local.scaling(work, plan.rounds, plan.persona_counts, plan.sizes)
    rows += scaling_rows
    return rows, curves


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run of every row; never fails on a timing"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"), help="where to write")
    parser.add_argument(
        "--only",
        choices=["budgets", "prompt-cache", "engines", "audit", "audit-local", "skills", "recall"],
        help="run one group: the budget rows, the prompt-cache rows, the obstore engine's rows "
        "(with the memory edits), the audit rows, the local audit row alone, the skills rows "
        "or the recall rows",
    )
    args = parser.parse_args(argv)
    logging.getLogger("toolnexus").setLevel(logging.ERROR)  # truncation warnings are expected here
    plan = QUICK if args.quick else FULL
    started, load = time.perf_counter(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="toolnexus-bench-") as scratch:
        rows, curves = run(plan, Path(scratch), args.only)
    seconds = time.perf_counter() - started
    command = " ".join(["python -m benchmarks", *(argv if argv is not None else sys.argv[1:])])
    print(table(rows, args.quick))
    finished = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_average = {"start": load, "end": os.getloadavg()[0]}  # 1-minute: others' jobs skew timings
    payload = {"command": command, "quick": args.quick, "seconds": seconds, "finished": finished}
    payload["load_average"] = load_average
    write_json(args.out / "latest.json", {**payload, "scaling": curves}, rows)
    written = [args.out / "latest.json"]
    if plot_headlines(rows, args.out / "headlines.png"):
        written.append(args.out / "headlines.png")
    if curves and plot_scaling(curves, args.out / "scaling.png"):
        written.append(args.out / "scaling.png")
    status = exit_status(rows, args.quick)
    print(f"\n{seconds:.0f} s; wrote {', '.join(map(str, written))}; exit status {status}")
    return status


if __name__ == "__main__":
    sys.exit(main())
