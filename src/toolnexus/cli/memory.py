"""``toolnexus memory LOCATION [LOCATION ...] ACTION``: a persona's memory, edited through the memory
tool (the model's rules); ``view`` and ``search`` only read, so any readable home works.
Exit status: 0 done; 1 the edit was refused or nothing matched (nothing changed); 2 an error."""

from __future__ import annotations

import argparse
import errno
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import Any, cast

from toolnexus.agents import MAX_BOOTSTRAP_FILE_BYTES, memory_index, memory_tool, read_bootstrap_file
from toolnexus.cli._support import (
    EXIT_ERROR,
    Parser,
    Subparsers,
    add_command,
    emit,
    emit_json,
    home,
    location,
    location_kwargs,
    location_options,
    plural,
    say,
)

#: The actions, in ``--help`` order: their help and positionals (``dest``, ``metavar``).
_ACTIONS = {
    "view": ("print the file (any readable home)", ()),
    "append": ("add a note at the end", (("content", "TEXT"),)),
    "replace": ("replace text that occurs exactly once", (("old", "OLD"), ("new", "NEW"))),
    "remove": ("delete text that occurs exactly once", (("old", "OLD"),)),
    "search": ("search MEMORY.md, USER.md, topic and daily files", (("query", "QUERY"),)),
}
_CHOICES = "{" + ",".join(_ACTIONS) + "}"

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

#: ``--target`` → the file it works on (the memory tool's ``target``).
TARGETS = {"memory": "MEMORY.md", "user": "USER.md"}


def _layers_as_options(parser: Parser, words: list[str]) -> list[str]:
    """argparse would take ``append`` in ``memory BASE TOP append TEXT`` for a third location: the
    locations end at the first action name, all but the last handed over as hidden ``--lower-layer``s."""
    locations: list[int] = []
    index = 0
    while index < len(words) and words[index] not in _ACTIONS and words[index] != "--":
        option = parser._option_string_actions.get(words[index])
        if option is not None and option.nargs != 0:
            index += 1  # its value
        elif not words[index].startswith("-") or words[index] == "-":
            locations.append(index)
        index += 1
    if index >= len(words) or words[index] not in _ACTIONS:
        return words  # no action: argparse says what is wrong
    lower = set(locations[:-1])
    moved = [part for i in sorted(lower) for part in ("--lower-layer", words[i])]
    return moved + [word for i, word in enumerate(words) if i not in lower]


class _Actions(argparse._SubParsersAction):  # type: ignore[type-arg]
    """The action's words are parsed into the namespace so far (argparse starts a fresh one): an
    option given before the action keeps its value unless given again, and ``-o`` adds to it."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        name, *words = cast(Sequence[str], values)
        setattr(namespace, self.dest, name)
        self.choices[name].parse_known_args(words, namespace)  # leftovers are its own error


def file_in(location: str, name: str) -> str:
    """``/tmp/aster/MEMORY.md``; ``MEMORY.md in zip://aster::…`` where a path would mislead."""
    if "::" in location or " + " in location:
        return f"{name} in {location}"
    return f"{location.rstrip('/')}/{name}"


def shell_command(homes: Sequence[str], *words: str) -> str:
    """A ``toolnexus memory …`` line a person can paste (their locations, quoted for a shell)."""
    return shlex.join(["toolnexus", "memory", *homes, *words])


class Recorder:
    """A memory tool's store that remembers what the last edit saw and decided, so that the
    command can word the outcome for a person (the tool's reply is worded for a model)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.seen: bytes | None = None
        self.change: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def update(self, plan: Callable[[bytes | None], Any]) -> Any:
        def recorded(current: bytes | None) -> Any:
            self.seen, self.change = current, plan(current)
            return self.change

        return self.store.update(recorded)

    def outcome(self, action: str, arguments: dict[str, Any]) -> str:
        """The line for an edit the tool accepted (written, or nothing to change)."""
        where, change = file_in(self.location, self.name), self.change
        if change is None or change.data is None:
            return f"toolnexus: {where} already reads that way; nothing was changed"
        done = _DONE[action].format(where=where, old=_quoted(arguments.get("old", "")))
        return f"toolnexus: {done} ({len(change.data)} of {MAX_BOOTSTRAP_FILE_BYTES} bytes used)"

    def refusal(self, action: str, arguments: dict[str, Any], homes: Sequence[str], said: str) -> str:
        """Why the tool refused, for a person: from the very bytes it refused to edit."""
        where, seen = file_in(self.location, self.name), self.seen
        view = shell_command(homes, "view", *(("--target", "user") if self.name == "USER.md" else ()))
        content, old, new = (str(arguments.get(field, "")) for field in ("content", "old", "new"))
        for field in ("content", "old"):
            if field in arguments and not str(arguments[field]).strip():
                what = "the note" if field == "content" else "the text to find"
                return f"toolnexus: {what} is empty; nothing was changed in {where}"
        problem = None if seen is None else _unreadable(seen, where)
        if problem is not None:
            return problem
        count = None if seen is None or action == "append" else seen.decode("utf-8").count(old)
        shown = _quoted(old)
        if count == 0:
            return f"toolnexus: {shown} does not occur in {where}; nothing was changed (see it with: {view})"
        if count is not None and count > 1:
            return (
                f"toolnexus: {shown} occurs {count} times in {where}; give more of the text "
                "around it so that it occurs once; nothing was changed"
            )
        # The edit would take the file over the cap (give or take an append's two line breaks).
        growth = {"append": len(content.encode()) + 2, "replace": len(new.encode()) - len(old.encode())}
        if len(seen or b"") + growth.get(action, 0) > MAX_BOOTSTRAP_FILE_BYTES:
            return (
                f"toolnexus: the edit would take {where} over its {MAX_BOOTSTRAP_FILE_BYTES}-byte limit; "
                f"nothing was changed. Shorten older notes first (see them with: {view})"
            )
        return f"toolnexus: {where} was not changed: {said.removeprefix('error:').strip()}"


_DONE = {
    "append": "added a note to {where}",
    "replace": "replaced {old} in {where}",
    "remove": "removed {old} from {where}",
}


def _unreadable(seen: bytes, where: str) -> str | None:
    """Why a file cannot be edited safely at all (over the cap, UTF-16, not UTF-8), or ``None``."""
    if len(seen) > MAX_BOOTSTRAP_FILE_BYTES:
        return (
            f"toolnexus: {where} is over the {MAX_BOOTSTRAP_FILE_BYTES}-byte limit (it was written outside "
            "toolnexus), so it is not edited; shorten it in an editor first. Nothing was changed"
        )
    if seen[:2] in (b"\xff\xfe", b"\xfe\xff"):  # a UTF-16 byte order mark
        return (
            f"toolnexus: {where} is UTF-16 text and toolnexus edits only UTF-8, so nothing was "
            "changed; convert it to UTF-8 first (e.g. with iconv -f UTF-16 -t UTF-8)"
        )
    try:
        seen.decode("utf-8")
    except UnicodeDecodeError as error:
        return (
            f"toolnexus: {where} is not valid UTF-8 text (byte {error.start}), so it is not edited; "
            "fix it in an editor first. Nothing was changed"
        )
    return None


def _quoted(text: str) -> str:
    """A piece of text as the person typed it, shortened when long."""
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _view(args: argparse.Namespace, homes: list[str]) -> int:
    """Print the file as the soul reads it (layers merged); notes about it go to stderr."""
    name = TARGETS[args.target]
    found = read_bootstrap_file(home(homes), name, **location_kwargs(args))
    if args.json:
        emit_json({"action": "view", "ok": True, "reply": "" if found is None else found.text})
        return 0
    if found is None:
        say(f"no {name} in {' + '.join(homes)} (no notes yet)")
        return 0
    where, report = file_in(found.location, name), found.report
    if report.status == "skipped":
        say(f"error: {where} is not a regular file, so it is not read")
        return EXIT_ERROR
    if report.layer is not None:
        say(f"{name} comes from the layer {report.layer} (layers, base first: {found.home})")
    if report.encoding not in (None, "utf-8"):
        say(
            f"{where} is {report.encoding.upper()} text, shown decoded as the soul reads it; append, "
            "replace and remove leave it alone until it is converted to UTF-8"
        )
    if report.truncated:
        cap = MAX_BOOTSTRAP_FILE_BYTES
        say(f"{where} is over the {cap}-byte limit: shown up to the limit, as the soul has it")
    if report.invalid_bytes_replaced:
        say(f"{where} has {plural(report.invalid_bytes_replaced, 'invalid byte')}, shown as U+FFFD")
    if not found.text:
        say(f"{where} is empty (no notes yet)")
        return 0
    emit(found.text if found.text.endswith("\n") else found.text + "\n")
    return 0


def _edit(args: argparse.Namespace, homes: list[str]) -> int:
    """An edit (or ``--file``'s view) through the memory tool; a topic file's reply is shown as is,
    as its words already name the file and what to do."""
    try:
        tool = memory_tool(home(homes), single_writer=args.single_writer, **location_kwargs(args))
    except OSError as error:
        if error.errno != errno.EROFS:
            raise
        hint = f"it can be read ({shell_command(homes, 'view')}), not edited"
        raise OSError(f"{error}; {hint}") from error
    arguments: dict[str, Any] = {"command": args.action}
    if args.file is None:
        arguments["target"] = args.target
        name = TARGETS[args.target]
        recorder = tool.stores[name] = Recorder(tool.stores[name])
    else:
        arguments["file"] = args.file
    fields = ("content", "old", "new")  # the action's positionals
    arguments.update({field: getattr(args, field) for field in fields if hasattr(args, field)})
    reply = tool.tool(**arguments)
    refused = bool(getattr(reply, "is_error", str(reply).startswith("error:")))
    if args.json:
        emit_json({"action": args.action, "ok": not refused, "reply": str(reply)})
    elif args.file is None and refused:
        sys.stderr.write(recorder.refusal(args.action, arguments, homes, str(reply)) + "\n")
    elif args.file is None:
        emit(recorder.outcome(args.action, arguments) + "\n")
    elif args.action == "view" and not refused:
        emit(str(reply).rstrip("\n") + "\n")
    else:
        where = file_in(homes[-1], f"memory/{args.file.strip('/')}")
        said = str(reply).removeprefix("error:").strip()
        (sys.stderr.write if refused else emit)(f"toolnexus: {where}: {said}\n")
    return 1 if refused else 0


def _search(args: argparse.Namespace, homes: list[str]) -> int:
    """``search QUERY``: the hits of ``memory_index`` (read only, any readable home); exit 1 for none."""
    with memory_index(home(homes), **location_kwargs(args)) as index:
        hits = index.search(args.query)
    if args.json:
        emit_json([dict(vars(hit)) for hit in hits])
    elif hits:
        for h in hits:
            snippet = "\n  ".join(h.snippet.rstrip("\n").splitlines())
            emit(f"{h.path}:{h.start_line}-{h.end_line} ({h.score:.2f})\n  {snippet}\n")
    else:
        say(f"no memory matches {args.query!r} in {homes[-1]}")
    return 0 if hits else 1


def _run(args: argparse.Namespace) -> int:
    homes = [*(args.lower_layers or []), args.location]
    if args.action == "search":
        return _search(args, homes)
    if args.file is not None and args.target != "memory":
        raise ValueError("give --target (MEMORY.md or USER.md) or --file (a topic file), not both")
    if args.action == "view" and args.file is None:
        return _view(args, homes)
    return _edit(args, homes)


def _shared_options(parser: argparse.ArgumentParser) -> None:
    """Options accepted before the action and after it (as ``-o`` and ``--engine`` are)."""
    target = "which file: memory (MEMORY.md, the default) or user (USER.md)"
    parser.add_argument("--target", choices=list(TARGETS), default="memory", help=target)
    topic = "a topic file below memory/ instead, like projects/aster.md (view, append, replace, remove)"
    parser.add_argument("--file", metavar="PATH", help=topic)
    single = "only one process ever writes this home: write without conditional writes (needed on a "
    single += "filesystem or server that cannot enforce them)"
    parser.add_argument("--single-writer", action="store_true", help=single)
    json = 'print {"action", "ok", "reply"} as one object on stdout (exit status as without)'
    parser.add_argument("--json", action="store_true", help=json)


def register(subparsers: Subparsers) -> None:
    summary = "view or edit a persona's MEMORY.md or USER.md"
    description = "View or edit a persona's MEMORY.md (or USER.md) with the memory tool's rules."
    usage = f"%(prog)s [options] LOCATION [LOCATION ...] {_CHOICES} ..."
    parser = add_command(
        subparsers, "memory", summary, _EXAMPLES, _run, symlinks=False, description=description, usage=usage
    )
    cast(Parser, parser).prepare = _layers_as_options
    parser.add_argument(
        "location",
        type=location,
        metavar="LOCATION",
        help="persona home: a folder, a zip or tar bundle, an fsspec URL (s3://bucket/aster); several "
        "are layers, base first (view shows the merged files; edits go to the top layer)",
    )
    parser.add_argument(
        "--lower-layer", dest="lower_layers", action="append", type=location, help=argparse.SUPPRESS
    )
    _shared_options(parser)
    actions = parser.add_subparsers(
        action=_Actions,
        dest="action",
        required=True,
        metavar=_CHOICES,
        parser_class=Parser,
        prog=f"{parser.prog} LOCATION [LOCATION ...]",  # not the whole usage line above
    )
    late = location_options(symlinks=False)
    _shared_options(late)
    for name, (summary, fields) in _ACTIONS.items():
        action = actions.add_parser(name, parents=[late], help=summary)
        for dest, metavar in fields:
            action.add_argument(dest, metavar=metavar)
