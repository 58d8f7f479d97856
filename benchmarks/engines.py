"""The obstore engine next to fsspec's (s3fs) on the same S3 (moto in its own process).

- client CPU per composition of the typical persona, both engines (≤ 0.3x), and the compositions
  per second one client core sustains;
- a fleet with ``asyncio.gather`` through obstore against bare obstore GETs of the same objects in
  the same rounds (≤ 1.05x: what toolnexus adds), the server's floor beside it, and the client CPU
  per composition against s3fs's (≤ 0.3x);
- memory edits through obstore: 4 processes appending on moto, Azurite and fake-gcs-server
  (expected / found / duplicated), and a server that ignores conditions (moto behind the proxy,
  condition headers dropped): every writer refused.

Client CPU here is the whole client process (``time.process_time``: the calling thread, fsspec's
I/O thread, obstore's Rust runtime threads), since obstore's work happens outside Python threads;
moto and the proxy run in processes of their own.
"""

from __future__ import annotations

import asyncio
import collections
import multiprocessing
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
from tests.support import obstore as engine
from tests.support.store_workers import exit_codes

from benchmarks.harness import Row, fmt_time, process_cpu_seconds
from benchmarks.personas import typical_files
from benchmarks.remote import POOL
from benchmarks.servers import BUCKET, S3
from toolnexus.agents import (
    BOOTSTRAP_ORDER,
    MAX_BOOTSTRAP_FILE_BYTES,
    BootstrapError,
    compose_soul,
    compose_soul_async,
    memory_tool,
)
from toolnexus.stores.probe import forget_verdicts

TARGET = "obstore"
#: A writer's exit status when it was refused as the row expects (1 is any other error).
REFUSED = 3


def _kw(s3: S3) -> dict[str, dict[str, Any]]:
    return {
        "s3fs": {"storage_options": s3.options(**POOL)},
        "obstore": {"storage_options": engine.s3_options(s3.proxy.endpoint_url), "engine": "obstore"},
    }


def _cpu(function: Callable[[], object], number: int) -> float:
    start = time.process_time()
    for _ in range(number):
        function()
    return (time.process_time() - start) / number


def target_cpu(s3: S3, rounds: int, number: int) -> list[Row]:
    """CPU per composition of the typical persona, both engines, interleaved rounds."""
    s3.put({f"typical/{name}": data for name, data in typical_files().items()})
    s3.proxy.latency = 0.0
    home = f"s3://{BUCKET}/typical"
    calls = {name: (lambda kw=kw: compose_soul(home, **kw)) for name, kw in _kw(s3).items()}
    assert calls["obstore"]() == calls["s3fs"]()
    for call in calls.values():
        _cpu(call, 3)  # warm: clients, connections
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            cpu[name].append(_cpu(call, number))
    ratio = statistics.median(o / s for o, s in zip(cpu["obstore"], cpu["s3fs"], strict=True))
    per = {name: statistics.median(values) for name, values in cpu.items()}
    rate = {name: 1 / seconds for name, seconds in per.items()}
    return [
        Row(
            TARGET,
            "typical persona on S3, client CPU per composition",
            f"obstore {fmt_time(per['obstore'])}",
            f"s3fs {fmt_time(per['s3fs'])}",
            ratio,
            "7 GET each",
            limit="≤ 0.3×",
            details={"process_cpu_seconds": cpu},
            on_time=ratio <= 0.3,
            bound=0.3,
            key="obstore-cpu",
        ),
        Row(
            TARGET,
            "compositions per second per client core (1 ÷ CPU)",
            f"obstore {rate['obstore']:.0f}/s",
            f"s3fs {rate['s3fs']:.0f}/s",
            rate["obstore"] / rate["s3fs"],
            limit="report",
            details={"per_second": rate},
        ),
    ]


def _bare_obstore(s3: S3, keys: list[str]) -> Callable[[], None]:
    """The same GETs straight through obstore, no toolnexus: what the rig allows any obstore client
    (one ranged GET of cap + 1 bytes per bootstrap name, the absent seventh a 404)."""
    import obstore  # noqa: PLC0415  (the obstore extra)

    store = engine.s3_store(s3.proxy.endpoint_url, BUCKET)

    async def get(key: str) -> object:
        try:
            return bytes(await obstore.get_range_async(store, key, start=0, end=MAX_BOOTSTRAP_FILE_BYTES + 1))
        except FileNotFoundError as missing:
            return missing

    async def gather() -> None:
        await asyncio.gather(*(get(key) for key in keys))

    return lambda: asyncio.run(gather())


def target_fleet(s3: S3, rounds: int, latency: float, n: int = 50) -> list[Row]:
    """50 personas with asyncio.gather through each engine; wall time against moto's floor and
    against bare obstore GETs of the same objects (what the rig allows any client)."""
    s3.put({f"fleet/p{i:03d}/{name}": data for i in range(n) for name, data in typical_files().items()})
    homes = [f"s3://{BUCKET}/fleet/p{i:03d}" for i in range(n)]
    engines = _kw(s3)
    bare = _bare_obstore(s3, [f"fleet/p{i:03d}/{name}" for i in range(n) for name in BOOTSTRAP_ORDER])

    def fleet(kw: dict[str, Any]) -> None:
        async def gather() -> None:
            souls = await asyncio.gather(*(compose_soul_async(home, **kw) for home in homes))
            assert all(found == list(BOOTSTRAP_ORDER[:6]) for _, found in souls)

        asyncio.run(gather())

    for kw in engines.values():
        fleet(kw)  # warm
    bare()
    bare_trips: list[float] = []
    cpu: dict[str, list[float]] = {name: [] for name in engines}
    trips: dict[str, list[float]] = {name: [] for name in engines}
    floors: dict[str, list[float]] = {name: [] for name in engines}
    moto: list[float] = []
    relay: list[float] = []
    for _ in range(rounds):
        for name, kw in engines.items():
            before = time.process_time(), process_cpu_seconds(s3.pid), process_cpu_seconds(s3.proxy.pid)
            elapsed, _ = s3.observe(lambda kw=kw: fleet(kw), latency)
            served = process_cpu_seconds(s3.pid) - before[1]
            cpu[name].append((time.process_time() - before[0]) / n)
            trips[name].append(elapsed / latency)
            floors[name].append(1 + served / latency)  # no client finishes before moto does
            if name == "obstore":
                moto.append(served)
                relay.append(process_cpu_seconds(s3.proxy.pid) - before[2])
        bare_trips.append(s3.observe(bare, latency)[0] / latency)
    versus_bare = statistics.median(o / b for o, b in zip(trips["obstore"], bare_trips, strict=True))
    wall = statistics.median(t / f for t, f in zip(trips["obstore"], floors["obstore"], strict=True))
    ratio = statistics.median(o / s for o, s in zip(cpu["obstore"], cpu["s3fs"], strict=True))
    rt = {name: statistics.median(values) for name, values in trips.items()}
    floor, served = statistics.median(floors["obstore"]), statistics.median(moto)
    per = {name: statistics.median(values) for name, values in cpu.items()}
    return [
        Row(
            "fleet",
            f"{n} personas through obstore, asyncio.gather, {fmt_time(latency)}/request",
            f"{rt['obstore']:.2f} RT (s3fs {rt['s3fs']:.2f} RT)",
            f"bare obstore.get_range_async of the {7 * n} objects {statistics.median(bare_trips):.2f} RT; "
            f"server floor {floor:.2f} RT (1 RT + moto CPU {fmt_time(served)}, served serially; "
            f"proxy CPU {fmt_time(statistics.median(relay))})",
            versus_bare,
            f"{7 * n} GET each",
            round_trips=rt["obstore"],
            limit="≤ 1.05× bare obstore",
            details={
                "round_trips": trips,
                "bare_round_trips": bare_trips,
                "floors": floors,
                "versus_floor": wall,
                "moto_cpu_seconds": moto,
                "proxy_cpu_seconds": relay,
            },
            on_time=versus_bare <= 1.05,
            bound=1.05,
        ),
        Row(
            TARGET,
            f"{n} personas: client CPU per composition",
            f"obstore {fmt_time(per['obstore'])}",
            f"s3fs {fmt_time(per['s3fs'])}",
            ratio,
            limit="≤ 0.3×",
            details={"process_cpu_seconds": cpu},
            on_time=ratio <= 0.3,
            bound=0.3,
        ),
    ]


def target_memory_edits(s3: S3, writers: int = 4, count: int = 25, *, emulators: bool = True) -> Row:
    """``writers`` processes x ``count`` appends through obstore on moto (and, with ``emulators``,
    Azurite and fake-gcs-server); then a server ignoring conditions."""
    moto = ("s3", {**s3.options(), "skip_instance_cache": True}, engine.s3_options(s3.endpoint))
    found = {"moto": _appends(*moto, writers, count)}
    if emulators:
        found |= _on_emulators(writers, count)
    refused = _refused_on_an_ignoring_server(s3, writers)
    expected = f"{writers * count} / {writers * count} / 0"
    return Row(
        "memory",
        f"edits through obstore, {writers} processes × {count} appends: expected / found / duplicated",
        "; ".join(f"{label} {figures}" for label, figures in found.items()),
        f"server ignoring conditions: {refused} of {writers} writers refused",
        limit=f"{expected} on each; ignoring server: refused",
        ok=all(figures == expected for figures in found.values()) and refused == writers,
        details={"found": found, "refused": refused},
    )


def _on_emulators(writers: int, count: int) -> dict[str, str]:
    from tests.support.azure import start_azurite  # noqa: PLC0415  (started for this row only)
    from tests.support.gcs import start_fake_gcs_server  # noqa: PLC0415
    from tests.support.gcs_xml import GcsXmlGateway  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="toolnexus-azurite-") as workspace:
        azurite, fake = start_azurite(Path(workspace)), start_fake_gcs_server()
        try:
            with GcsXmlGateway(fake.endpoint_url) as gateway:
                azure = ("az", azurite.storage_options, engine.azure_options(azurite.connection_string))
                gcs = ("gs", fake.storage_options, engine.gcs_options(gateway.url))
                return {
                    "Azurite": _appends(*azure, writers, count),
                    "fake-gcs-server": _appends(*gcs, writers, count),
                }
        finally:
            azurite.stop()
            fake.stop()


def _appends(protocol: str, raw: dict[str, Any], options: dict[str, Any], writers: int, count: int) -> str:
    fs = fsspec.filesystem(protocol, **raw)
    bucket = BUCKET if protocol == "s3" else f"toolnexus-{uuid.uuid4().hex[:12]}"
    if protocol != "s3":
        fs.mkdir(bucket)
    prefix = f"{bucket}/memory-{uuid.uuid4().hex[:8]}"
    fs.pipe_file(f"{prefix}/SOUL.md", b"You are Aster.")
    codes = _append_from_processes(f"{protocol}://{prefix}", options, writers, count)
    fs.invalidate_cache()
    notes = bytes(fs.cat_file(f"{prefix}/MEMORY.md")).decode().splitlines() if codes == [0] * writers else []
    duplicated = sum(1 for count in collections.Counter(notes).values() if count > 1)
    expected = {f"note {w}-{i}" for w in range(writers) for i in range(count)}
    lost = "" if set(notes) == expected else f" ({len(expected - set(notes))} lost)"
    return f"{len(expected)} / {len(notes)} / {duplicated}{lost}"


def _refused_on_an_ignoring_server(s3: S3, writers: int) -> int:
    """moto behind a proxy that drops ``If-Match`` / ``If-None-Match``: each writer must stop."""
    from tests.support import S3Proxy  # noqa: PLC0415

    forget_verdicts()
    prefix = f"memory-ignoring-{uuid.uuid4().hex[:8]}"
    s3.put({f"{prefix}/SOUL.md": b"You are Aster."})
    with S3Proxy(s3.endpoint) as ignoring:
        ignoring.drop_request_headers = frozenset({"if-match", "if-none-match"})
        options = engine.s3_options(ignoring.endpoint_url)
        codes = _append_from_processes(f"s3://{BUCKET}/{prefix}", options, writers, 25, refusal_expected=True)
    return sum(1 for code in codes if code == REFUSED)


def _append_from_processes(
    location: str, options: dict[str, Any], writers: int, count: int, *, refusal_expected: bool = False
) -> list[int]:
    """Writers started at one barrier, each appending ``count`` notes; their exit codes.

    Each writer is a process of its own, forked from a forkserver that imported this module once
    (a spawned writer spends most of a second of CPU importing it); the server itself starts no
    thread or event loop, so obstore's runtime is created in each writer, never forked.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    start = context.Barrier(writers)
    processes = [
        context.Process(target=_writer, args=((location, index, count, refusal_expected), options, start))
        for index in range(writers)
    ]
    return exit_codes(processes)


def _writer(job: tuple[str, int, int, bool], options: dict[str, Any], start: Any) -> None:
    """One writer process. A refusal the row expects is one line and exit status ``REFUSED``;
    anything else propagates, so multiprocessing prints its whole traceback."""
    location, index, count, refusal = job
    tool = memory_tool(location, storage_options=options, engine="obstore")
    start.wait()
    try:
        for note in range(count):
            reply = tool.tool(command="append", content=f"note {index}-{note}")
            if not reply.startswith("ok:"):
                raise AssertionError(reply)
    except BootstrapError as refused:
        if not (refusal and "does not enforce conditional writes" in str(refused)):
            raise
        # One write per line: writers share stderr, and print() writes the newline separately.
        sys.stderr.write(f"writer {index}: refused, as expected: {str(refused).split(' (')[0]}\n")
        sys.exit(REFUSED)
