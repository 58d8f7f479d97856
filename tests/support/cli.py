"""The installed ``toolnexus`` command, run the way a user runs it (a subprocess)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["EXAMPLE", "TOOLNEXUS", "run"]

TOOLNEXUS = Path(sys.executable).parent / "toolnexus"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "aster"


def run(
    *args: str, cwd: Path | None = None, stdin: str | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``toolnexus ARGS``; its exit status is for the test to check. ``env`` replaces the environment."""
    return subprocess.run(
        [str(TOOLNEXUS), *args],
        check=False,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=180,  # a hang guard: a loaded machine makes imports take many seconds
        cwd=cwd,
        input=stdin,
        env=env,
    )
