"""Put a run's figures into the documentation: ``python -m benchmarks.docs [RESULTS]``.

From a run's directory (``benchmarks/results`` by default) it copies ``latest.json`` to
``benchmarks/reference/`` and the PNGs to ``docs/img/``, then rewrites every block between
``<!-- benchmarks:… -->`` markers in README.md and docs/ (the README's headline figures, the
performance page's table, a group's rows elsewhere), so the documentation quotes one run, unedited.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness import Row, fmt_bytes, table

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "benchmarks" / "reference" / "latest.json"
PNGS = ("headlines.png", "scaling.png")


def load(path: Path) -> tuple[dict[str, Any], list[Row]]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document, [Row(**row) for row in document["rows"]]


def headlines(rows: Sequence[Row]) -> str:
    """The README's figures, each a ratio beside its baseline in words (rows found by ``key``)."""
    by = {row.key: row for row in rows if row.key}
    lines = []
    if (home := by.get("s3-home")) and (bundle := by.get("bundle-large")):
        trips, zipped = home.details["round_trips"], bundle.details
        lines.append(
            f"**An S3 home in one round trip**: {trips['compose_soul']:.2f} RT (wall time ÷ the latency "
            f"of one request), {home.details['gets']} ranged GETs in flight together, against "
            f"{trips['list+read']:.2f} RT for list-then-read and {trips['naive']:.2f} RT for an "
            f"exists-then-read loop; a zip bundle with a {fmt_bytes(zipped['asset_bytes'])} asset in "
            f"{bundle.round_trips:.2f} RT, fetching {fmt_bytes(zipped['fetched'])}, against "
            f"{fmt_bytes(zipped['zipfs_fetched'])} through fsspec's `zip://`."
        )
    if (naive := by.get("local-naive")) and (plain := by.get("local-plain")):
        lines.append(
            f"**A local persona at {naive.ratio:.2f}× the CPU** of the naive exists-read-decode loop, "
            f"and {plain.ratio:.2f}× the plainest bounded loop (the floor)."
        )
    if (fleet := by.get("fleet")) and (cpu := by.get("obstore-cpu")):
        n = fleet.details["personas"]
        lines.append(
            f"**{n} personas with `asyncio.gather`** at {fleet.ratio:.2f}× the time of one bare s3fs "
            f"`cat_ranges` of the same {7 * n} objects; the obstore engine at {cpu.ratio:.2f}× s3fs's "
            f"client CPU per composition."
        )
    if (cold := by.get("cache-cold")) and (warm := by.get("cache-warm")):
        lines.append(
            f"**Prompt caching**: a cold 10-call Anthropic session at {cold.ratio:.2f}× the pricing "
            f"floor ({cold.details['of_uncached']:.3f}× the cost with caching off), the next session "
            f"{warm.ratio:.2f}× of that cost."
        )
    return "\n".join(f"- {line}" for line in lines)


def provenance(document: dict[str, Any]) -> str:
    machine = document["machine"]
    minutes, seconds = divmod(round(document["seconds"]), 60)
    averages = document.get("load_average")
    load = (
        f", load average {averages['start']:.1f} at the start, {averages['end']:.1f} at the end"
        if averages
        else ""
    )
    return (
        f"From `{document['command']}`, finished {document.get('finished', '?')} "
        f"({minutes} min {seconds} s), CPython {machine['python']} on {machine['platform']}, "
        f"{machine['cpus']} CPUs{load}: `benchmarks/reference/latest.json`."
    )


_BLOCK = re.compile(r"(<!-- benchmarks:([\w: -]+?) -->\n)(.*?)(<!-- /benchmarks:\2 -->)", re.DOTALL)


def fill(text: str, document: dict[str, Any], rows: Sequence[Row]) -> str:
    """Rewrite every ``<!-- benchmarks:NAME -->`` … ``<!-- /benchmarks:NAME -->`` block: NAME is
    ``headlines``, ``table`` (every row, and where they come from) or ``table:WHAT`` (the rows of
    one group, e.g. ``table:budget``)."""

    def body(match: re.Match[str]) -> str:
        name = match[2]
        if name == "headlines":
            content = headlines(rows)
        elif name == "table":
            content = f"{table(rows)}\n\n{provenance(document)}"
        elif name.startswith("table:"):
            content = table([row for row in rows if row.target == name.removeprefix("table:")])
        else:
            raise ValueError(f"unknown block benchmarks:{name}")
        return f"{match[1]}{content}\n{match[4]}"

    return _BLOCK.sub(body, text)


def update(results: Path, root: Path = ROOT) -> None:
    document, rows = load(results / "latest.json")
    if document.get("quick"):
        raise SystemExit("a --quick run's figures do not go into the documentation")
    reference = root / REFERENCE.relative_to(ROOT)
    if (results / "latest.json").resolve() != reference.resolve():
        shutil.copyfile(results / "latest.json", reference)
    for name in PNGS:
        if (results / name).exists():
            (root / "docs" / "img").mkdir(exist_ok=True)
            shutil.copyfile(results / name, root / "docs" / "img" / name)
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        text = page.read_text("utf-8")
        if (filled := fill(text, document, rows)) != text:
            page.write_text(filled, "utf-8")


if __name__ == "__main__":
    update(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "benchmarks" / "results")
