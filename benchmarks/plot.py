"""The scaling curves of target 6 as a PNG (needs the ``bench`` extra: matplotlib)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.harness import MIB


def plot_scaling(curves: dict[str, Any], path: Path) -> bool:
    """Write the plot; ``False`` (and no file) when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: PLC0415  (optional dependency)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
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
