"""The installed ``toolnexus`` command, run the way a user runs it (a subprocess)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.support.s3 import DEFAULT_REGION, DUMMY_KEY, DUMMY_SECRET

__all__ = ["EXAMPLE", "TOOLNEXUS", "help_flags", "help_text", "run", "s3_args"]

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


def s3_args(endpoint_url: str, hop: str = "") -> list[str]:
    """``-o`` options for moto, optionally keyed to one hop (``hop="s3."``)."""
    return [
        *("-o", f"{hop}endpoint_url={endpoint_url}"),
        *("-o", f"{hop}key={DUMMY_KEY}"),
        *("-o", f"{hop}secret={DUMMY_SECRET}"),
        *("-o", f"{hop}client_kwargs.region_name={DEFAULT_REGION}"),
        *("-o", f"{hop}client_kwargs.verify=false"),  # plain http: skip loading the CA bundle
        *("-o", f"{hop}skip_instance_cache=true"),
    ]


def help_text(command: str | None = None) -> str:
    """What ``toolnexus [COMMAND] --help`` prints, from the same parser, without a subprocess."""
    from toolnexus.cli.app import build_parser  # noqa: PLC0415  (the command's modules load on demand)

    parser = build_parser()
    if command is None:
        return parser.format_help()
    [commands] = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    return str(commands.choices[command].format_help())


def help_flags(command: str) -> set[str]:
    """Every flag ``toolnexus COMMAND --help`` lists (``-h``/``--help`` included)."""
    pairs = re.findall(r"^  (-\w|--[\w-]+)(?:, (--[\w-]+))?", help_text(command), flags=re.MULTILINE)
    return {flag for pair in pairs for flag in pair if flag}
