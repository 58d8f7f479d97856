"""Command line front end (``toolnexus``): argparse only, the logic lives in :mod:`toolnexus.agents`.

Adding a subcommand: write a module with ``register(subparsers: Subparsers) -> None`` that calls
``subparsers.add_parser(name, parents=[location_options()], ...)`` (the shared ``-o`` and
``--follow-external-symlinks`` options; omit ``parents`` if they do not apply) and
``parser.set_defaults(handler=fn)`` where ``fn(args: argparse.Namespace) -> int`` returns the exit
code; then append its ``register`` to :data:`REGISTRARS`. :func:`main` turns library errors into
one ``toolnexus: error: …`` line (exit 2) for every handler; print with :func:`emit`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeAlias

from . import __version__
from .agents import FileReport, SoulReport, compose_soul, inspect_soul, write_bundle

__all__ = [
    "REGISTRARS",
    "Handler",
    "Subparsers",
    "build_parser",
    "emit",
    "format_table",
    "location_kwargs",
    "location_options",
    "main",
]

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Handler: TypeAlias = Callable[[argparse.Namespace], int]

#: Exit status when stdout is closed early (``toolnexus soul … | head``): 128 + SIGPIPE, as a shell reports.
EXIT_BROKEN_PIPE = 141
#: Exit status for a location or option the library refused (argparse also uses 2 for usage errors).
EXIT_ERROR = 2

#: Errors the library raises for bad locations and options; anything else is a bug and keeps its traceback.
_USER_ERRORS = (OSError, TypeError, ValueError, ImportError)

_FORMATTER = argparse.RawDescriptionHelpFormatter


# -- shared options ---------------------------------------------------------------------------


def _option_value(raw: str) -> Any:
    """JSON where it parses (``50``, ``true``, ``{"a": 1}``), else the string as typed."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


class _StorageOption(argparse.Action):
    """``-o KEY=VALUE``; dots nest: ``-o s3.endpoint_url=URL`` sets ``{"s3": {"endpoint_url": URL}}``."""

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
        table[path[-1]] = _option_value(raw)
        setattr(namespace, self.dest, options)


def location_options() -> argparse.ArgumentParser:
    """A parent parser with the options every location-reading subcommand shares."""
    parent = argparse.ArgumentParser(add_help=False)
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
        "--follow-external-symlinks",
        action="store_true",
        help="follow bootstrap symlinks in a local home that point outside it",
    )
    return parent


def location_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments ``compose_soul`` and friends take, from the shared options."""
    return {
        "storage_options": args.storage_options,
        "follow_external_symlinks": args.follow_external_symlinks,
    }


# -- output -----------------------------------------------------------------------------------


def emit(text: str) -> None:
    """Write UTF-8 to stdout whatever the locale; a reader that went away ends the program quietly.

    The loop matters: when the reader closes mid-write, ``BufferedWriter.write`` can return a short
    count instead of raising, silently dropping the rest; writing on gets the ``EPIPE``.
    """
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
        raise SystemExit(EXIT_BROKEN_PIPE) from None


def _notes(file: FileReport) -> str:
    notes = ["truncated at the cap"] if file.truncated else []
    if file.bom_stripped:
        notes.append("BOM stripped")
    if file.line_endings_normalised:
        notes.append(f"{file.line_endings_normalised} line endings made LF")
    if file.invalid_bytes_replaced:
        notes.append(f"{file.invalid_bytes_replaced} invalid bytes replaced")
    return ", ".join(notes)


def format_table(report: SoulReport) -> str:
    """Every bootstrap name with status, size, kept bytes and notes, then a one-line summary."""
    rows = [("FILE", "STATUS", "SIZE", "KEPT", "NOTES")]
    for file in report.files:
        present = file.status == "present"
        size = "-" if not present else "?" if file.size is None else str(file.size)
        rows.append((file.name, file.status, size, str(file.kept_bytes) if present else "-", _notes(file)))
    name_w, status_w, size_w, kept_w = (max(len(row[column]) for row in rows) for column in range(4))
    lines = [
        f"{name:<{name_w}}  {status:<{status_w}}  {size:>{size_w}}  {kept:>{kept_w}}  {notes}".rstrip()
        for name, status, size, kept, notes in rows
    ]
    soul_bytes = len(report.soul.encode("utf-8"))
    lines.append(
        f"{len(report.found)} of {len(report.files)} bootstrap files found in {report.location}; "
        f"soul: {len(report.soul)} characters, {soul_bytes} bytes"
    )
    return "\n".join(lines) + "\n"


# -- subcommands ------------------------------------------------------------------------------


def _soul(args: argparse.Namespace) -> int:
    if args.json:
        report = inspect_soul(args.location, **location_kwargs(args))
        emit(json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n")
    else:
        soul, _found = compose_soul(args.location, **location_kwargs(args))
        emit(soul + "\n" if soul else "")
    return 0


def _inspect(args: argparse.Namespace) -> int:
    emit(format_table(inspect_soul(args.location, **location_kwargs(args))))
    return 0


def _check(args: argparse.Namespace) -> int:
    report = inspect_soul(args.location, **location_kwargs(args))
    if not report.found:
        print(f"toolnexus: no bootstrap file in {report.location}", file=sys.stderr)
        return 1
    emit("".join(f"{name}\n" for name in report.found))
    return 0


def _bundle(args: argparse.Namespace) -> int:
    names = write_bundle(args.home, args.out, force=args.force, **location_kwargs(args))
    emit(f"wrote {args.out}: {len(names)} files ({', '.join(names) or 'empty home'})\n")
    return 0


def _add_command(
    subparsers: Subparsers, name: str, summary: str, example: str, handler: Handler
) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        name,
        parents=[location_options()],
        help=summary,
        description=summary[0].upper() + summary[1:] + ".",
        epilog=f"example:\n  {example}",
        formatter_class=_FORMATTER,
    )
    parser.set_defaults(handler=handler)
    return parser


_LOCATION_HELP = "persona home: a directory, a zip bundle, an fsspec URL or a chained URL"


def register_soul(subparsers: Subparsers) -> None:
    """``toolnexus soul LOCATION [--json]``."""
    example = "toolnexus soul s3://bucket/personas/aster -o endpoint_url=http://127.0.0.1:9000"
    parser = _add_command(subparsers, "soul", "print the composed soul", example, _soul)
    parser.add_argument("location", metavar="LOCATION", help=_LOCATION_HELP)
    parser.add_argument("--json", action="store_true", help="print the full report as JSON")


def register_inspect(subparsers: Subparsers) -> None:
    """``toolnexus inspect LOCATION``."""
    summary = "show what each bootstrap file contributed"
    parser = _add_command(subparsers, "inspect", summary, "toolnexus inspect examples/aster", _inspect)
    parser.add_argument("location", metavar="LOCATION", help=_LOCATION_HELP)


def register_check(subparsers: Subparsers) -> None:
    """``toolnexus check LOCATION``: exit 0 listing the found names, 1 when there are none."""
    summary = "list the bootstrap files found; exit 1 when there are none"
    example = "toolnexus check zip://aster::s3://bucket/aster.zip -o s3.anon=true"
    parser = _add_command(subparsers, "check", summary, example, _check)
    parser.add_argument("location", metavar="LOCATION", help=_LOCATION_HELP)


def register_bundle(subparsers: Subparsers) -> None:
    """``toolnexus bundle HOME OUT [--force]``."""
    summary = "write the home's bootstrap files to a reproducible zip bundle"
    parser = _add_command(subparsers, "bundle", summary, "toolnexus bundle examples/aster aster.zip", _bundle)
    parser.add_argument("home", metavar="HOME", help=_LOCATION_HELP)
    parser.add_argument("out", metavar="OUT", help="the bundle to write: a path or an fsspec URL")
    parser.add_argument("--force", action="store_true", help="replace OUT if it exists")


#: Every subcommand, in ``--help`` order; another module adds its own ``register`` here.
REGISTRARS: list[Callable[[Subparsers], None]] = [
    register_soul,
    register_inspect,
    register_check,
    register_bundle,
]


def build_parser() -> argparse.ArgumentParser:
    """The ``toolnexus`` parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="toolnexus",
        description="Compose, inspect, check and bundle AI persona homes, wherever they live.",
        epilog="example:\n  toolnexus soul examples/aster\n\nsee 'toolnexus COMMAND --help' for more",
        formatter_class=_FORMATTER,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in REGISTRARS:
        register(subparsers)
    return parser


@contextmanager
def _warnings_to_stderr() -> Iterator[None]:
    """Show the library's warnings (e.g. truncation) as ``toolnexus: warning: …`` lines."""
    logger = logging.getLogger("toolnexus")
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("toolnexus: warning: %(message)s"))
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolnexus`` console script and ``python -m toolnexus``."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    with _warnings_to_stderr():
        try:
            return handler(args)
        except _USER_ERRORS as error:
            message = " ".join(str(error).splitlines()) or type(error).__name__
            print(f"toolnexus: error: {message}", file=sys.stderr)
            return EXIT_ERROR


if __name__ == "__main__":
    raise SystemExit(main())
