"""``toolnexus memory LOCATION view|append|replace|remove``: the memory tool from a shell.

``register`` plugs the subcommand into the main ``toolnexus`` parser; ``main`` runs it alone
(``python -m toolnexus.memory_cli memory …``). Exit status: 0 done, 1 the edit was refused (the
same ``error: …`` text the model would get, on stderr), 2 a storage or usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["main", "parse_storage_options", "register"]


def parse_storage_options(pairs: Sequence[str]) -> dict[str, Any]:
    """``["anon=true", "client_kwargs.region_name=eu-west-1"]`` → nested storage options.

    Values are read as JSON when they parse (``true``, ``3``, ``{"a": 1}``), else kept as text;
    dots in a key nest dictionaries.
    """
    options: dict[str, Any] = {}
    for pair in pairs:
        key, separator, raw = pair.partition("=")
        if not separator or not key:
            raise argparse.ArgumentTypeError(f"storage option {pair!r} is not KEY=VALUE")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        *parents, leaf = key.split(".")
        target = options
        for parent in parents:
            target = target.setdefault(parent, {})
        target[leaf] = value
    return options


def _run(args: argparse.Namespace) -> int:
    from .agents import memory_tool  # noqa: PLC0415  (keep --help fast)

    arguments: dict[str, Any] = {"command": args.action}
    for field in ("content", "old", "new"):
        if getattr(args, field, None) is not None:
            arguments[field] = getattr(args, field)
    try:
        options = parse_storage_options(args.storage_option)
        tool = memory_tool(args.location, storage_options=options or None)
        reply = tool.tool(**arguments)
    except (OSError, TypeError, argparse.ArgumentTypeError) as error:
        sys.stderr.write(f"toolnexus memory: {error}\n")
        return 2
    if reply.startswith("error:"):
        sys.stderr.write(reply + "\n")
        return 1
    sys.stdout.write(reply if reply.endswith("\n") else reply + "\n")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``memory LOCATION {view|append TEXT|replace OLD NEW|remove OLD}`` with ``-o KEY=VALUE``."""
    parser = subparsers.add_parser(
        "memory",
        help="view or edit a persona's MEMORY.md",
        description="View or edit a persona's MEMORY.md with the same rules as the memory tool.",
    )
    parser.add_argument("location", help="persona home: a folder, an fsspec URL (s3://bucket/aster), …")
    parser.add_argument(
        "-o",
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="storage option for the filesystem (repeatable; JSON values; dotted keys nest)",
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``memory …`` on its own parser (what ``toolnexus memory …`` does inside the full CLI)."""
    parser = argparse.ArgumentParser(prog="toolnexus")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    status: int = args.handler(args)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
