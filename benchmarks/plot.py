"""The run's two PNGs (with the ``bench`` extra, matplotlib): headline ratios, scaling curves."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness import MIB, Row


def _pyplot() -> Any:
    try:
        import matplotlib  # noqa: PLC0415  (optional dependency)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return None
    return plt


def plot_headlines(rows: Sequence[Row], path: Path) -> bool:
    """One bar pair per ratio target: the baseline (1) and toolnexus (the ratio), the limit a line.

    ``False`` (and no file) without matplotlib or without a ratio target among ``rows``.
    """
    targets = [row for row in rows if row.ratio is not None and row.bound is not None]
    plt = _pyplot()
    if plt is None or not targets:
        return False
    figure, axes = plt.subplots(figsize=(9, 0.45 * len(targets) + 1.2), layout="constrained")
    for y, row in enumerate(targets):
        ratio, bound = float(row.ratio or 0), float(row.bound or 0)
        missed = row.ok is False or row.on_time is False
        axes.barh(y + 0.2, 1.0, height=0.4, color="#c8c8c8", label="baseline" if y == 0 else None)
        axes.barh(y - 0.2, ratio, height=0.4, color="#c0392b" if missed else "#2e86c1")
        axes.vlines(bound, y - 0.45, y + 0.45, color="black", linewidth=2)
        axes.text(max(ratio, 1.0, bound) * 1.04, y, f"{ratio:.2f}× (≤ {bound:g}×)", va="center")
    axes.barh([], [], color="#2e86c1", label="toolnexus")
    axes.vlines([], 0, 0, color="black", linewidth=2, label="target")
    axes.set_yticks(range(len(targets)), [_label(row) for row in targets])
    axes.invert_yaxis()
    axes.set_xlim(0, max(max(r.ratio or 0, r.bound or 0, 1.0) for r in targets) * 1.4)
    axes.set_xlabel("× the baseline measured in the same run (lower is better; red: missed)")
    figure.legend(loc="outside upper center", ncols=3)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


def _label(row: Row) -> str:
    text = f"{row.target}: {row.measure.removesuffix(': billed input cost').removesuffix(', CPU')}"
    return text if len(text) <= 52 else text[:51] + "…"


def plot_scaling(curves: dict[str, Any], path: Path) -> bool:
    """Time against personas and against file size; ``False`` (and no file) without matplotlib."""
    plt = _pyplot()
    if plt is None:
        return False
    personas, sizes = curves["personas"], curves["file_size"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    left.plot(personas["x"], [s * 1e3 for s in personas["seconds"]], "o-")
    left.set(xlabel="personas composed (local, typical)", ylabel="ms", title="Linear in personas")
    right.plot([x / MIB for x in sizes["x"]], [s * 1e3 for s in sizes["seconds"]], "o-")
    right.axvline(sizes["cap"] / MIB, color="grey", linestyle="--", label="2 MiB cap")
    right.set(xscale="log", xlabel="AGENTS.md size (MiB, log)", ylabel="ms")
    right.set_title("Linear to the cap, flat above")
    right.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True
