"""``toolnexus memory LOCATION view|append|replace|remove``: the memory tool from a shell.

Exit status: 0 done; 1 the edit was refused (the same ``error: …`` text the model would get, on
stderr); 2 a storage or usage error (reported by :func:`toolnexus.cli.app.main` like every command's).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from toolnexus.agents import memory_tool
from toolnexus.cli._support import Subparsers, emit, emit_json, location, location_options

__all__ = ["EXIT_REFUSED", "register"]

#: Exit status when the tool refused the edit (the model would have been told to try again).
EXIT_REFUSED = 1

_EXAMPLES = """examples (on a copy: append and friends edit MEMORY.md in place):
  cp -r examples/aster /tmp/aster && toolnexus memory /tmp/aster view
  toolnexus memory /tmp/aster append "Mira moved to Hamburg (2026-11-30)."
  toolnexus memory s3://bucket/aster -o profile=prod replace "Berlin" "Hamburg"
"""


#: Where ``-o`` given after the action collects (merged over the ones before it, key by key).
_LATE_OPTIONS = "late_storage_options"


def _merged(base: dict[str, Any] | None, late: dict[str, Any] | None) -> dict[str, Any] | None:
    """``-o`` before and after the action as one mapping; a later key wins, nested hops merge."""
    if not late:
        return base
    merged = dict(base or {})
    for key, value in late.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = value
    return merged


_SINGLE_WRITER_HELP = (
    "only one process ever writes this home: write without conditional writes (needed on a "
    "filesystem or server that cannot enforce them)"
)


_JSON_HELP = 'print {"action", "ok", "reply"} as one object on stdout (exit status as without)'


def _run(args: argparse.Namespace) -> int:
    arguments: dict[str, Any] = {"command": args.action}
    for field in ("content", "old", "new"):
        if getattr(args, field, None) is not None:
            arguments[field] = getattr(args, field)
    options = _merged(args.storage_options, getattr(args, _LATE_OPTIONS, None))
    tool = memory_tool(args.location, storage_options=options, single_writer=args.single_writer)
    reply = tool.tool(**arguments)
    refused = reply.startswith("error:")
    if getattr(args, "json", False):
        emit_json({"action": args.action, "ok": not refused, "reply": reply})
        return EXIT_REFUSED if refused else 0
    if refused:
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
        "location",
        type=location,
        metavar="LOCATION",
        help="persona home: a folder, an fsspec URL (s3://bucket/aster), …",
    )
    parser.add_argument("--single-writer", action="store_true", help=_SINGLE_WRITER_HELP)
    parser.add_argument("--json", action="store_true", help=_JSON_HELP)
    actions = parser.add_subparsers(dest="action", required=True, metavar="{view,append,replace,remove}")
    # The options are accepted after the action too: its parser must not reset the ones before.
    late = [location_options(symlinks=False, dest=_LATE_OPTIONS)]
    view = actions.add_parser("view", parents=late, help="print MEMORY.md")
    append = actions.add_parser("append", parents=late, help="add a note at the end")
    append.add_argument("content", metavar="TEXT")
    replace = actions.add_parser("replace", parents=late, help="replace text that occurs exactly once")
    replace.add_argument("old", metavar="OLD")
    replace.add_argument("new", metavar="NEW")
    remove = actions.add_parser("remove", parents=late, help="delete text that occurs exactly once")
    remove.add_argument("old", metavar="OLD")
    for action in (view, append, replace, remove):
        action.add_argument(
            "--single-writer", action="store_true", default=argparse.SUPPRESS, help=_SINGLE_WRITER_HELP
        )
        action.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=_JSON_HELP)
    parser.set_defaults(handler=_run)
