"""``toolnexus memory LOCATION [LOCATION ...] view|append|replace|remove|search``: a persona's
memory for a person. Edits go through the memory tool (the model's rules); ``view`` only reads, so it works on
any readable home. Exit status: 0 done; 1 the edit was refused (nothing changed); 2 an error.
"""

from __future__ import annotations

import argparse
import errno
import sys
from collections.abc import Sequence
from typing import Any, cast

from toolnexus.agents import BootstrapError, memory_index, memory_tool, read_bootstrap_file
from toolnexus.cli._memory_messages import Recorder, file_in, outcome, refusal, shell_command
from toolnexus.cli._memory_view import view
from toolnexus.cli._support import Parser, Subparsers, emit, emit_json, location, location_options

__all__ = ["EXIT_REFUSED", "register"]

#: Exit status when the tool refused the edit (nothing was changed).
EXIT_REFUSED = 1

_ACTIONS = ("view", "append", "replace", "remove", "search")

_EXAMPLES = """examples (on a copy: append and friends edit the file in place):
  cp -r examples/aster /tmp/aster && toolnexus memory /tmp/aster view
  toolnexus memory /tmp/aster append "Mira moved to Hamburg (2026-11-30)."
  toolnexus memory /tmp/aster --target user replace "Berlin" "Hamburg"
  toolnexus memory /tmp/aster --file projects/aster.md append "Launch moved to March."
  toolnexus memory /tmp/aster search "launch date" --json
  toolnexus bundle /tmp/aster /tmp/aster.zip --force && toolnexus memory /tmp/aster.zip view
  toolnexus memory examples/aster /tmp/aster view    # layers, base first: the merged view
  toolnexus memory s3://bucket/aster -o profile=prod append "Prefers short answers."
"""

#: Where ``-o`` given after the action collects (merged over the ones before it, key by key).
_LATE_OPTIONS = "late_storage_options"
#: Where the locations below the top one go (see :class:`_MemoryParser`).
_LOWER_LAYERS = "lower_layers"
#: ``--target`` → the file it works on (the memory tool's ``target``).
TARGETS = {"memory": "MEMORY.md", "user": "USER.md"}
#: Options of ``memory`` that take a value, for finding where the locations end.
_VALUED = ("-o", "--target", "--file", "--engine")


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


class _MemoryParser(Parser):
    """argparse matches positionals greedily, so ``memory BASE TOP append TEXT`` would take
    ``append`` for a third location. The locations end at the first action name: all but the
    last are handed over as hidden ``--lower-layer`` options, leaving one location positional."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        words = list(sys.argv[1:] if args is None else args)
        locations: list[int] = []
        index = 0
        while index < len(words) and words[index] not in _ACTIONS:
            word = words[index]
            if word == "--":
                break
            if word in _VALUED:
                index += 1
            elif not word.startswith("-") or word == "-":
                locations.append(index)
            index += 1
        if index >= len(words) or words[index] not in _ACTIONS:
            return super().parse_known_args(words, namespace)  # no action: argparse says what is wrong
        lower = set(locations[:-1])
        moved = [part for i in sorted(lower) for part in ("--lower-layer", words[i])]
        rest = [word for i, word in enumerate(words) if i not in lower]
        return super().parse_known_args(moved + rest, namespace)


_SINGLE_WRITER_HELP = (
    "only one process ever writes this home: write without conditional writes (needed on a "
    "filesystem or server that cannot enforce them)"
)
_TARGET_HELP = "which file: memory (MEMORY.md, the default) or user (USER.md)"
_FILE_HELP = "a topic file below memory/ instead, like projects/aster.md (view, append, replace, remove)"
_JSON_HELP = 'print {"action", "ok", "reply"} as one object on stdout (exit status as without)'


def _tool(args: argparse.Namespace, homes: list[str], options: dict[str, Any] | None) -> Any:
    home = homes[0] if len(homes) == 1 else homes
    try:
        return memory_tool(
            home, storage_options=options, single_writer=args.single_writer, engine=args.engine
        )
    except OSError as error:
        if error.errno != errno.EROFS:
            raise
        hint = f"it can be read ({shell_command(homes, 'view')}), not edited"
        raise BootstrapError(f"{error}; {hint}") from error


def _topic(args: argparse.Namespace, homes: list[str], options: dict[str, Any] | None) -> int:
    """``--file PATH``: the portable tool's command on a topic file below ``memory/``; its reply
    is what a person reads (the tool's own words name the file and what to do)."""
    arguments: dict[str, Any] = {"command": args.action, "file": args.file}
    for field in ("content", "old", "new"):
        if getattr(args, field, None) is not None:
            arguments[field] = getattr(args, field)
    reply = _tool(args, homes, options).tool(**arguments)
    refused = bool(getattr(reply, "is_error", str(reply).startswith("error:")))
    if args.json:
        emit_json({"action": args.action, "ok": not refused, "reply": str(reply)})
    elif args.action == "view" and not refused:
        emit(str(reply).rstrip("\n") + "\n")
    else:
        where = file_in(homes[-1], f"memory/{args.file.strip('/')}")
        said = str(reply).removeprefix("error:").strip()
        (sys.stderr.write if refused else emit)(f"toolnexus: {where}: {said}\n")
    return EXIT_REFUSED if refused else 0


def _edit(args: argparse.Namespace, homes: list[str], options: dict[str, Any] | None) -> int:
    name = TARGETS[args.target]
    tool = _tool(args, homes, options)
    recorder = tool.stores[name] = Recorder(tool.stores[name])
    arguments: dict[str, Any] = {"command": args.action, "target": args.target}
    for field in ("content", "old", "new"):
        if getattr(args, field, None) is not None:
            arguments[field] = getattr(args, field)
    reply = tool.tool(**arguments)
    refused = bool(getattr(reply, "is_error", str(reply).startswith("error:")))
    if args.json:
        emit_json({"action": args.action, "ok": not refused, "reply": str(reply)})
        return EXIT_REFUSED if refused else 0
    if refused:
        sys.stderr.write(refusal(args.action, arguments, recorder, homes, str(reply)) + "\n")
        return EXIT_REFUSED
    emit(outcome(args.action, arguments, recorder) + "\n")
    return 0


def _search(args: argparse.Namespace, homes: list[str], options: dict[str, Any] | None) -> int:
    """``search QUERY``: the hits of ``memory_index`` (read only, any readable home); exit 1 for none."""
    home = homes[0] if len(homes) == 1 else homes
    with memory_index(home, storage_options=options, engine=args.engine) as index:
        hits = index.search(args.query)
    if args.json:
        emit_json([dict(vars(hit)) for hit in hits])
    elif hits:
        emit(
            "".join(
                f"{h.path}:{h.start_line}-{h.end_line} ({h.score:.2f})\n  {_indent(h.snippet)}\n"
                for h in hits
            )
        )
    else:
        sys.stderr.write(f"toolnexus: no memory matches {args.query!r} in {homes[-1]}\n")
    return 0 if hits else EXIT_REFUSED


def _indent(snippet: str) -> str:
    return "\n  ".join(snippet.rstrip("\n").splitlines())


def _run(args: argparse.Namespace) -> int:
    homes = [*(getattr(args, _LOWER_LAYERS, None) or []), args.location]
    options = _merged(args.storage_options, getattr(args, _LATE_OPTIONS, None))
    if args.action == "search":
        return _search(args, homes, options)
    if getattr(args, "file", None) is not None:
        if args.target != "memory":
            raise BootstrapError("give --target (MEMORY.md or USER.md) or --file (a topic file), not both")
        return _topic(args, homes, options)
    if args.action == "view" and args.json:
        home = homes[0] if len(homes) == 1 else homes
        found = read_bootstrap_file(home, TARGETS[args.target], storage_options=options, engine=args.engine)
        emit_json({"action": "view", "ok": True, "reply": "" if found is None else found.text})
        return 0
    if args.action == "view":
        return view(homes, TARGETS[args.target], options, args.engine)
    return _edit(args, homes, options)


def _shared_options(parser: argparse.ArgumentParser, *, late: bool) -> None:
    """``--target``, ``--file`` and ``--single-writer``, before the action or (``late``) after it."""
    target: Any = argparse.SUPPRESS if late else "memory"
    single_writer: Any = argparse.SUPPRESS if late else False
    parser.add_argument("--target", choices=list(TARGETS), default=target, help=_TARGET_HELP)
    file: Any = argparse.SUPPRESS if late else None
    parser.add_argument("--file", metavar="PATH", default=file, help=_FILE_HELP)
    parser.add_argument(
        "--single-writer", action="store_true", default=single_writer, help=_SINGLE_WRITER_HELP
    )
    parser.add_argument("--json", action="store_true", default=single_writer, help=_JSON_HELP)


def register(subparsers: Subparsers) -> None:
    """Add ``memory LOCATION [LOCATION ...] {view|append TEXT|replace OLD NEW|remove OLD}``."""
    parser = subparsers.add_parser(
        "memory",
        parents=[location_options(symlinks=False)],
        help="view or edit a persona's MEMORY.md or USER.md",
        description="View or edit a persona's MEMORY.md (or USER.md) with the memory tool's rules.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="%(prog)s [options] LOCATION [LOCATION ...] {view,append,replace,remove,search} ...",
    )
    parser.__class__ = _MemoryParser  # add_parser builds the parent's class; this one only adds a step
    parser.add_argument(
        "location",
        type=location,
        metavar="LOCATION",
        help="persona home: a folder, a zip or tar bundle, an fsspec URL (s3://bucket/aster); several "
        "are layers, base first (view shows the merged files; edits go to the top layer)",
    )
    parser.add_argument(
        "--lower-layer", dest=_LOWER_LAYERS, action="append", type=location, help=argparse.SUPPRESS
    )
    _shared_options(parser, late=False)
    actions = cast(
        Subparsers,
        parser.add_subparsers(
            dest="action",
            required=True,
            metavar="{view,append,replace,remove,search}",
            parser_class=Parser,
            prog=f"{parser.prog} LOCATION [LOCATION ...]",  # not the whole usage line above
        ),
    )
    # The options are accepted after the action too: its parser must not reset the ones before.
    late = [location_options(symlinks=False, dest=_LATE_OPTIONS)]
    view_parser = actions.add_parser("view", parents=late, help="print the file (any readable home)")
    append = actions.add_parser("append", parents=late, help="add a note at the end")
    append.add_argument("content", metavar="TEXT")
    replace = actions.add_parser("replace", parents=late, help="replace text that occurs exactly once")
    replace.add_argument("old", metavar="OLD")
    replace.add_argument("new", metavar="NEW")
    remove = actions.add_parser("remove", parents=late, help="delete text that occurs exactly once")
    remove.add_argument("old", metavar="OLD")
    search = actions.add_parser(
        "search", parents=late, help="search MEMORY.md, USER.md, topic and daily files"
    )
    search.add_argument("query", metavar="QUERY")
    for action in (view_parser, append, replace, remove, search):
        _shared_options(action, late=True)
    parser.set_defaults(handler=_run)
