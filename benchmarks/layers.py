"""A persona of three S3 layers costs about one round trip, not three."""

from __future__ import annotations

import statistics

from benchmarks.harness import Row
from benchmarks.personas import typical_files
from benchmarks.remote import BUCKET, POOL, S3
from toolnexus.agents import compose_soul

LAYERS = ("team-base", "team", "agent")


def target_layers(s3: S3, rounds: int, latency: float) -> Row:
    """``compose_soul([base, team, agent])`` vs composing the three homes one after another.

    Run at the fleet's latency: moto and the proxy share this process's CPU, and 21 requests'
    server-side work (~20 ms each on a loaded 2-core machine) would otherwise swamp the latency.
    """
    files = typical_files()
    for layer in LAYERS:
        s3.put({f"layers/{layer}/{name}": data for name, data in files.items()})
    layers, options = [f"s3://{BUCKET}/layers/{layer}" for layer in LAYERS], s3.options(**POOL)
    compose_soul(layers, storage_options=options)  # warm: session, connections

    def one_after_another() -> None:
        for layer in layers:
            compose_soul(layer, storage_options=options)

    layered: list[float] = []
    sequential: list[float] = []
    for _ in range(rounds):
        elapsed, proxy = s3.observe(lambda: compose_soul(layers, storage_options=options), latency)
        layered.append(elapsed / latency)
        gets, total = proxy.count("GET"), proxy.count()
        sequential.append(s3.observe(one_after_another, latency)[0] / latency)
    trips, baseline = statistics.median(layered), statistics.median(sequential)
    return Row(
        "layers",
        f"3 S3 layers, warm, {latency * 1000:.0f} ms/request",
        f"{trips:.2f} RT",
        f"one after another {baseline:.2f} RT",
        baseline / trips,
        f"{gets} GET ({total} requests)",
        round_trips=trips,
        limit="≤ 21 GET, ≤ 1.5 RT",
        ok=gets == total <= 21,
        on_time=trips <= 1.5,
    )
