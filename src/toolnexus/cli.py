"""Command line front end (``toolnexus``): argparse only, the logic lives in :mod:`toolnexus.agents`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolnexus`` console script."""
    parser = argparse.ArgumentParser(prog="toolnexus", description="Compose a persona's soul.")
    commands = parser.add_subparsers(dest="command", required=True)
    soul = commands.add_parser("soul", help="print the composed soul")
    soul.add_argument("location")
    args = parser.parse_args(argv)
    from .agents import compose_soul  # noqa: PLC0415  (keep --help fast)

    text, _found = compose_soul(args.location)
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
