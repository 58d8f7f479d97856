"""Measurement kit: interleaved rounds, medians, one result row type, the table and the JSON."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

KIB = 1024
MIB = 1024 * KIB


@dataclass
class Row:
    """One figure next to its baseline, as printed and as written to JSON.

    ``ok`` is the verdict of exact checks (requests, bytes, identical results); ``on_time`` that of
    a timing target, which ``--quick`` prints but never fails on. ``bound`` is the ratio's limit
    (what the headline plot draws); ``key`` names the rows the README's headlines quote.
    """

    target: str
    measure: str
    result: str
    baseline: str = ""
    ratio: float | None = None
    requests: str = ""
    bytes: int | None = None
    round_trips: float | None = None
    limit: str = ""
    ok: bool | None = None
    details: dict[str, Any] = field(default_factory=dict)
    on_time: bool | None = None
    bound: float | None = None
    key: str = ""


def verdict(row: Row, quick: bool = False) -> str:
    """The OK column: a failed check or a missed timing is **NO**; in a quick run a missed timing
    is only noted, since fewer rounds and smaller fleets do not measure what the target says."""
    if row.ok is False or (row.on_time is False and not quick):
        return "**NO**"
    if row.on_time is False:
        return "missed (quick)"
    return "" if row.ok is None and row.on_time is None else "yes"


def exit_status(rows: Sequence[Row], quick: bool = False) -> int:
    """0 when every check and (in a full run) every timing target holds, else 1."""
    return 1 if any(verdict(row, quick) == "**NO**" for row in rows) else 0


def client_cpu_seconds() -> float:
    """CPU time of this thread plus fsspec's I/O thread (where s3fs's coroutines run).

    That is the client's CPU; the proxy and moto run in processes of their own.
    """
    total = time.thread_time()
    import fsspec.asyn  # noqa: PLC0415

    io_thread = fsspec.asyn.iothread[0]
    if io_thread is not None and io_thread.ident is not None and io_thread.is_alive():
        total += time.clock_gettime(time.pthread_getcpuclockid(io_thread.ident))
    return total


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU of another process (Linux ``/proc``), e.g. the moto server's."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def per_call(function: Callable[[], object], number: int) -> float:
    """Seconds per call over ``number`` back-to-back calls."""
    start = time.perf_counter()
    for _ in range(number):
        function()
    return (time.perf_counter() - start) / number


def interleaved(
    candidates: dict[str, Callable[[], object]], *, rounds: int, number: int
) -> dict[str, list[float]]:
    """Time every candidate once per round, in turn, so load on a shared machine hits all alike."""
    for function in candidates.values():
        function()  # warm caches and imports before any round counts
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, function in candidates.items():
            times[name].append(per_call(function, number))
    return times


def interleaved_cpu(
    candidates: dict[str, Callable[[], object]], *, rounds: int, number: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """:func:`interleaved`, timing each batch by this thread's CPU (user + system) and by the wall.

    On a machine shared with other jobs the wall clock also measures the scheduler; for local,
    CPU-bound work the thread's CPU time is what the code costs. Both are kept.
    """
    for function in candidates.values():
        function()
    cpu: dict[str, list[float]] = {name: [] for name in candidates}
    wall: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, function in candidates.items():
            start_cpu, start_wall = time.thread_time(), time.perf_counter()
            for _ in range(number):
                function()
            cpu[name].append((time.thread_time() - start_cpu) / number)
            wall[name].append((time.perf_counter() - start_wall) / number)
    return cpu, wall


def median_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float:
    """Median of per-round ratios: robust to drift in machine load between rounds."""
    return statistics.median(n / d for n, d in zip(numerators, denominators, strict=True))


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def fmt_bytes(count: int | None) -> str:
    if count is None:
        return ""
    if count >= MIB:
        return f"{count / MIB:.2f} MiB"
    if count >= KIB:
        return f"{count / KIB:.1f} KiB"
    return f"{count} B"


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Least-squares ``y = a + b·x``; returns ``(a, b, r²)``."""
    slope, intercept = statistics.linear_regression(xs, ys)
    mean = statistics.fmean(ys)
    total = sum((y - mean) ** 2 for y in ys)
    residual = sum((y - (intercept + slope * x)) ** 2 for x, y in zip(xs, ys, strict=True))
    return intercept, slope, 1.0 - residual / total if total else 1.0


_COLUMNS = ("What", "Measure", "Result", "Baseline", "Ratio", "Requests", "Bytes", "RTs", "Limit", "OK")


def table(rows: Sequence[Row], quick: bool = False) -> str:
    """A Markdown table, as docs/performance.md carries it."""
    cells = [
        [
            row.target,
            row.measure,
            row.result,
            row.baseline,
            "" if row.ratio is None else f"{row.ratio:.2f}×",
            row.requests,
            fmt_bytes(row.bytes),
            "" if row.round_trips is None else f"{row.round_trips:.2f}",
            row.limit,
            verdict(row, quick),
        ]
        for row in rows
    ]
    widths = [max(len(c[i]) for c in [list(_COLUMNS), *cells]) for i in range(len(_COLUMNS))]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(_COLUMNS, widths, strict=True)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in cells]
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    """Enough to tell two runs' machines apart."""
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
    }


def write_json(path: Path, payload: dict[str, Any], rows: Sequence[Row]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {**payload, "machine": machine(), "rows": [asdict(row) for row in rows]}
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
