"""Every performance target (issues 3, 12, 22, 23) against its baseline, in one run: ``python -m benchmarks``.

Prints a Markdown table and writes the same figures as JSON (and, with matplotlib, a PNG of the
scaling curves) to ``benchmarks/results/`` — or to ``--out``. ``--quick`` is a smoke run.
Issue 20's prompt-cache figures (token counts, not timings) come first; ``--only prompt-cache``
runs them alone, ``--only engines`` issue 22's rows, ``--only audit`` issue 23's (``--only
audit-local`` its local-folder row alone: no moto, no cluster).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks import audit, budgets, cache, engines, fleet, layers, local, prompt_cache, remote
from benchmarks.harness import MIB, Row, table, write_json
from benchmarks.plot import plot_scaling
from benchmarks.servers import s3_environment


@dataclass(frozen=True)
class Plan:
    rounds: int
    local_calls: int
    huge: int
    bomb: int
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
    engine_calls: int = 20


FULL = Plan(
    rounds=15,
    local_calls=200,
    huge=1024 * MIB,
    bomb=512 * MIB,
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
)
QUICK = Plan(
    rounds=5,
    local_calls=50,
    huge=64 * MIB,
    bomb=64 * MIB,
    asset=8 * MIB,
    latency=0.2,
    fleet_latency=0.5,
    fleet_rounds=1,
    fleet_counts=[50],
    short_latency=0.05,
    persona_counts=[1, 4, 16],
    sizes=[k * 1024 for k in (16, 512, 2048, 8192)],
    audit_count=200,
    audit_small=50,
)


def step(label: str) -> None:
    print(f"… {label}", file=sys.stderr, flush=True)


def run_audit_local(plan: Plan, work: Path) -> Row:
    """Issue 23's local row: 100 personas audited against composing them in a loop."""
    step("audit: local folder")
    return audit.target_audit_local(work, plan.rounds)


def run_audit(plan: Plan, work: Path) -> list[Row]:
    """Issue 23's rows: a local folder, then fleets on moto in process and on a LocalCluster."""
    rows = [run_audit_local(plan, work)]
    with s3_environment() as s3:
        step(f"audit: {plan.audit_count} personas on moto, in process and on a LocalCluster")
        rows += audit.target_audit_s3(s3, plan.audit_count, plan.audit_small)
    return rows


def run(plan: Plan, work: Path, only: str | None = None) -> tuple[list[Row], dict[str, object]]:
    if only == "budgets":
        step("budgets")
        return budgets.targets(work, plan.rounds, plan.local_calls), {}
    if only == "engines":  # issue 22's rows alone (moto and the proxy as for every S3 row)
        with s3_environment() as s3:
            step("engines: CPU per composition")
            engine_rows = engines.target_cpu(s3, plan.rounds, plan.engine_calls)
            step("engines: fleet")
            engine_rows += engines.target_fleet(s3, plan.fleet_rounds, plan.fleet_latency)
            step("engines: memory edits")
            engine_rows.append(engines.target_memory_edits(s3))
        return engine_rows, {}
    if only == "audit":
        return run_audit(plan, work), {}
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
    rows += budgets.targets(work, plan.rounds, plan.local_calls)
    with s3_environment() as s3:
        step("S3: 8 MiB object")
        rows.append(remote.target_big_object(s3))
        step("S3: one round trip")
        rows += remote.target_one_round_trip(s3, plan.rounds, plan.latency)
        rows.append(remote.target_where_time_goes(s3, plan.rounds, plan.short_latency))
        step("S3: bundles")
        rows += remote.target_bundle(s3, plan.asset, plan.rounds, plan.latency)
        step("S3: three layers")
        rows.append(layers.target_layers(s3, plan.fleet_rounds + 2, plan.fleet_latency))
        step("S3: cache")
        rows += cache.target_cache_s3(s3, plan.rounds, plan.latency)
        step("S3: fleets")
        rows += fleet.target_fleet(s3, plan.fleet_rounds, plan.fleet_latency, plan.fleet_counts)
        step("S3: engines")
        rows += engines.target_cpu(s3, plan.rounds, plan.engine_calls)
        rows += engines.target_fleet(s3, plan.fleet_rounds, plan.fleet_latency)
        rows.append(engines.target_memory_edits(s3))
    rows += run_audit(plan, work)
    step("scaling")
    scaling_rows, curves = local.scaling(work, plan.rounds, plan.persona_counts, plan.sizes)
    rows += scaling_rows
    return rows, curves


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, smaller files: a smoke run")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"), help="where to write")
    parser.add_argument(
        "--only",
        choices=["budgets", "prompt-cache", "engines", "audit", "audit-local"],
        help="run one group of targets (issue 19's budgets, 20's prompt cache, 22's engines, 23's audit; "
        "audit-local: its local-folder row alone)",
    )
    args = parser.parse_args(argv)
    logging.getLogger("toolnexus").setLevel(logging.ERROR)  # truncation warnings are expected here
    plan = QUICK if args.quick else FULL
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="toolnexus-bench-") as scratch:
        rows, curves = run(plan, Path(scratch), args.only)
    command = (
        "python -m benchmarks"
        + (" --quick" if args.quick else "")
        + (f" --only {args.only}" if args.only else "")
    )
    print(table(rows))
    payload = {"command": command, "quick": args.quick, "seconds": time.perf_counter() - started}
    write_json(args.out / "latest.json", {**payload, "scaling": curves}, rows)
    plotted = bool(curves) and plot_scaling(curves, args.out / "scaling.png")
    print(f"\nwrote {args.out / 'latest.json'}" + (f" and {args.out / 'scaling.png'}" if plotted else ""))
    return 0 if all(row.ok is not False for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
