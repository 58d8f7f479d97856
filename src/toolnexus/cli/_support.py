"""The kit for ``toolnexus`` subcommands (shared options, stdout, the types), apart from ``app`` so
that command modules import it while ``app`` imports them: no import cycle."""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeAlias

from toolnexus._tokens import DEFAULT_ENCODING
from toolnexus.composer.budget import PROFILES, Budget

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Handler: TypeAlias = Callable[[argparse.Namespace], int]

#: Exit status for a location or option the library refused (argparse also uses 2 for usage errors).
EXIT_ERROR = 2

#: Help keeps the line breaks of descriptions and epilogs (examples are laid out by hand).
FORMATTER = argparse.RawDescriptionHelpFormatter


class Parser(argparse.ArgumentParser):
    """argparse with the habits of git, ruff and uv, in every subparser: "did you mean …?" for a
    mistyped choice or flag (3.14's ``suggest_on_error`` does only choices), and an unknown flag
    reported with its own subcommand's usage."""

    #: Rewrites a command's words where argparse alone cannot split them (``memory BASE TOP append``).
    prepare: Callable[[Parser, list[str]], list[str]] | None = None

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Leftovers are this parser's error: ``toolnexus``'s usage would not show the flag meant."""
        if self.prepare is not None:
            args = self.prepare(self, list(sys.argv[1:] if args is None else args))
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            flags = [flag for action in self._actions for flag in action.option_strings]
            hints = ""
            for extra in extras:
                close = difflib.get_close_matches(extra.partition("=")[0], flags, n=1)
                hints += f"; did you mean {close[0]!r}?" if close and extra.startswith("-") else ""
            self.error(f"unrecognized arguments: {' '.join(extras)}{hints}")
        return parsed, extras

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is None or value in action.choices:
            return
        choices = [str(choice) for choice in action.choices]
        close = difflib.get_close_matches(str(value), choices, n=1)
        what = "unknown command" if isinstance(action, argparse._SubParsersAction) else "invalid choice"
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise argparse.ArgumentError(action, f"{what} {value!r}{hint} (choose from {', '.join(choices)})")


def location(value: str) -> str:
    """``type=`` for location arguments: an empty string is a mistake, never "the current folder"."""
    if not value:
        raise argparse.ArgumentTypeError(
            "empty location; name a folder ('.' for this one), a bundle or a URL"
        )
    return value


def whole(least: int) -> Callable[[str], int]:
    """``type=`` for a whole number of at least ``least``, written in digits."""

    def parse(text: str) -> int:
        if not text.isdigit() or int(text) < least:
            raise argparse.ArgumentTypeError(f"expected a whole number of at least {least}, got {text!r}")
        return int(text)

    return parse


def seconds(wording: str, *, finite: bool = True) -> Callable[[str], float]:
    """``type=`` for a number of seconds above 0 (``finite``: and not ``inf``), refused in ``wording``."""

    def parse(text: str) -> float:
        try:
            number = float(text)
        except ValueError:
            number = float("nan")
        if not number > 0 or (finite and number == float("inf")):
            raise argparse.ArgumentTypeError(f"expected {wording}, got {text!r}")
        return number

    return parse


def plural(count: int, singular: str) -> str:
    """``"1 line ending"``, ``"2 line endings"``: every count the commands print goes through here."""
    return f"{count} {singular if count == 1 else singular + 's'}"


def home(locations: Sequence[str]) -> str | list[str]:
    """One location as itself; several are layers, base first."""
    return locations[0] if len(locations) == 1 else list(locations)


def add_command(
    subparsers: Subparsers,
    name: str,
    summary: str,
    example: str,
    handler: Handler,
    *,
    symlinks: bool = True,
    budget: bool = False,
    located: bool = True,
    **settings: Any,
) -> argparse.ArgumentParser:
    """A subcommand whose summary is its help and description, and whose example (one line, or an
    epilog laid out by hand) follows the options: every command's help reads alike."""
    parents = [location_options(symlinks=symlinks)] if located else []
    settings = {"description": summary[0].upper() + summary[1:] + ".", **settings}
    parser = subparsers.add_parser(
        name,
        parents=parents + ([budget_options()] if budget else []),
        help=summary,
        epilog=example if "\n" in example else f"example:\n  {example}",
        formatter_class=FORMATTER,
        **settings,
    )
    parser.set_defaults(handler=handler)
    return parser


class _StorageOption(argparse.Action):
    """``-o KEY=VALUE``; dots nest: ``-o s3.endpoint_url=URL`` sets ``{"s3": {"endpoint_url": URL}}``.
    VALUE is JSON where it parses (``50``, ``true``, ``{"a": 1}``), else the string as typed."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        key, equals, raw = str(values).partition("=")
        path = key.split(".")
        if not equals or not all(path):
            raise argparse.ArgumentError(self, f"expected KEY=VALUE or HOP.KEY=VALUE, got {values!r}")
        options: dict[str, Any] = getattr(namespace, self.dest) or {}
        table = options
        for part in path[:-1]:
            table = table.setdefault(part, {})
            if not isinstance(table, dict):
                raise argparse.ArgumentError(self, f"{key}: {part!r} already holds a value, not options")
        try:
            table[path[-1]] = json.loads(raw)
        except ValueError:
            table[path[-1]] = raw
        setattr(namespace, self.dest, options)


def location_options(*, symlinks: bool = True) -> Parser:
    """A parent parser with the options location subcommands share (``symlinks``: reading ones)."""
    parent = Parser(add_help=False)
    group = parent.add_argument_group("location options")
    group.add_argument(
        "-o",
        dest="storage_options",
        action=_StorageOption,
        metavar="KEY=VALUE",
        help="storage option for fsspec (repeatable); dots nest: -o s3.KEY=VALUE keys it to the s3 hop "
        "of a chained URL; VALUE is parsed as JSON where it parses, else kept as a string",
    )
    group.add_argument(
        "--engine",
        choices=("fsspec", "obstore"),
        metavar="NAME",
        default="fsspec",
        help="client for s3://, gs:// and az:// URLs: fsspec (the default) or obstore (less CPU; "
        "pip install 'toolnexus[obstore]'); -o then takes obstore's options",
    )
    if symlinks:
        group.add_argument(
            "--follow-external-symlinks",
            action="store_true",
            help="follow bootstrap symlinks in a local home that point outside it",
        )
    return parent


def location_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments ``compose_soul`` and friends take, from the location options given."""
    names = ("storage_options", "follow_external_symlinks", "engine")
    return {name: getattr(args, name) for name in names if hasattr(args, name)}


def _encoding(text: str) -> str:
    """``type=`` for ``--tokens``: an encoding name, not the location it swallowed by mistake."""
    if not text or any(mark in text for mark in "/\\.:") or os.path.exists(text):
        raise argparse.ArgumentTypeError(
            f"expected a tiktoken encoding name, got {text!r}; put the location before --tokens, "
            f"or write --tokens={DEFAULT_ENCODING}"
        )
    return text


def budget_options() -> argparse.ArgumentParser:
    """A parent parser with the options that fit a soul to a model: budget and profile."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("budget options")
    limits = {
        "--per-file": "cut each file's body to N characters (tokens with --tokens): "
        "head, one marker line, tail",
        "--total": "fit the whole soul in N characters (tokens with --tokens), shared fairly among the files",
    }
    for flag, text in limits.items():
        group.add_argument(flag, type=whole(1), metavar="N", help=text)
    group.add_argument(
        "--tokens",
        nargs="?",
        const=DEFAULT_ENCODING,
        type=_encoding,
        metavar="ENCODING",
        help=f"count tokens instead of characters with this tiktoken encoding (default {DEFAULT_ENCODING}, "
        "bundled; needs pip install 'toolnexus[tokens]')",
    )
    group.add_argument(
        "--profile",
        choices=list(PROFILES),
        help="compose only this session profile's files (group: all but MEMORY.md; "
        "subagent: AGENTS.md and TOOLS.md; heartbeat: HEARTBEAT.md; cron; main: all)",
    )
    return parent


def budget_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """``budget`` and ``profile`` for ``compose_soul`` and friends, from :func:`budget_options`."""
    budget = None
    if args.tokens is not None or args.per_file is not None or args.total is not None:
        unit: Literal["chars", "tokens"] = "chars" if args.tokens is None else "tokens"
        budget = Budget(per_file=args.per_file, total=args.total, unit=unit, tokenizer=args.tokens)
    return {"budget": budget, "profile": args.profile}


def emit(text: str) -> None:
    """Write UTF-8 to stdout whatever the locale; a reader that went away ends the program quietly
    (the loop: a reader closing mid-write can make ``write`` return a short count, not raise)."""
    try:
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is None:
            sys.stdout.write(text)
        else:
            pending = memoryview(text.encode("utf-8"))
            while pending:
                pending = pending[buffer.write(pending) :]
        sys.stdout.flush()
    except BrokenPipeError:
        # Point stdout at devnull so the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        raise SystemExit(141) from None  # 128 + SIGPIPE, as a shell reports a closed pipe


def emit_json(value: Any) -> None:
    """``--json`` output: one object, indented, non-ASCII as is, then a newline."""
    emit(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def warn(message: str) -> None:
    """A ``toolnexus: warning: …`` line on stderr, through ``main``'s handler as the library's are
    (``-q`` silences them all)."""
    logging.getLogger("toolnexus.cli").warning(message)


def say(text: str) -> None:
    """A ``toolnexus: …`` line on stderr: what a person reads beside the output."""
    print(f"toolnexus: {text}", file=sys.stderr)


#: ``NAME=VALUE`` a message tells the caller to pass, and the flag that does it.
_ARGUMENTS = {
    "force=True": "--force",
    "follow_external_symlinks=True": "--follow-external-symlinks",
    "single_writer=True": "--single-writer",
    "memory=False": "--no-memory",
}

#: ``pass single_writer=True (CLI: --single-writer)``: the library's own hint for the CLI goes too.
_PASS = re.compile(r"\b(?P<argument>\w+=\w+)(?: \(CLI: --[\w-]+\))?")

#: Python names the library uses as nouns, and what they are called on the command line.
_NOUNS = (
    ("storage_options", "-o options"),
    ("memory_tool", "the memory tool"),
    ("write_bundle", "toolnexus bundle"),
)


def for_people(message: str) -> str:
    """``message`` with each Python argument and name it mentions as the CLI's flag or noun."""
    message = _PASS.sub(lambda match: _ARGUMENTS.get(match["argument"], match[0]), message)
    for python, cli in _NOUNS:
        message = message.replace(python, cli)
    return message
