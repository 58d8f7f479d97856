"""``toolnexus memory LOCATION view|append|replace|remove``: the memory tool from a shell.

Exit status: 0 done; 1 the edit was refused (the same ``error: …`` text the model would get, on
stderr); 2 a storage or usage error (reported by :func:`toolnexus.cli.main` like every command's).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .agents import memory_tool
from .cli_support import Subparsers, emit, location, location_options

__all__ = ["EXIT_REFUSED", "register"]

#: Exit status when the tool refused the edit (the model would have been told to try again).
EXIT_REFUSED = 1

_EXAMPLES = """examples (on a copy: append and friends edit MEMORY.md in place):
  cp -r examples/aster /tmp/aster && toolnexus memory /tmp/aster view
  toolnexus memory /tmp/aster append "Mira moved to Hamburg (2026-11-30)."
  toolnexus memory s3://bucket/aster -o profile=prod replace "Berlin" "Hamburg"
"""


def _run(args: argparse.Namespace) -> int:
    arguments: dict[str, Any] = {"command": args.action}
    for field in ("content", "old", "new"):
        if getattr(args, field, None) is not None:
            arguments[field] = getattr(args, field)
    reply = memory_tool(args.location, storage_options=args.storage_options).tool(**arguments)
    if reply.startswith("error:"):
        sys.stderr.write(reply + "\n")
        return EXIT_REFUSED
    emit(reply if reply.endswith("\n") else reply + "\n")
    return 0


def register(subparsers: Subparsers) -> None:
    """Add ``memory LOCATION {view|append TEXT|replace OLD NEW|remove OLD}``."""
    parser = subparsers.add_parser(
        "memory",
        parents=[location_options(symlinks=False)],
        help="view or edit a persona's MEMORY.md",
        description="View or edit a persona's MEMORY.md with the same rules as the memory tool.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "location", type=location, help="persona home: a folder, an fsspec URL (s3://bucket/aster), …"
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="{view,append,replace,remove}")
    actions.add_parser("view", help="print MEMORY.md")
    actions.add_parser("append", help="add a note at the end").add_argument("content", metavar="TEXT")
    replace = actions.add_parser("replace", help="replace text that occurs exactly once")
    replace.add_argument("old", metavar="OLD")
    replace.add_argument("new", metavar="NEW")
    remove = actions.add_parser("remove", help="delete text that occurs exactly once")
    remove.add_argument("old", metavar="OLD")
    parser.set_defaults(handler=_run)
