"""Command line front end (``toolnexus``): argparse only, the logic lives in :mod:`toolnexus.agents`.

Every subcommand is a ``register(subparsers)`` function listed in :data:`REGISTRARS`; its handler
is set with ``parser.set_defaults(handler=fn)`` (see :mod:`toolnexus.cli_support` for the
convention and the shared options). :func:`main` turns the library's errors into one
``toolnexus: error: …`` line and exit status 2, for every handler alike.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import cast

from toolnexus import __version__
from toolnexus.agents import ModelError, SoulReport, compose_soul, inspect_soul, write_bundle
from toolnexus.cli import agent as agent_cli
from toolnexus.cli import memory as memory_cli
from toolnexus.cli._support import (
    EXIT_ERROR,
    Handler,
    Parser,
    Subparsers,
    budget_kwargs,
    budget_options,
    emit,
    location,
    location_kwargs,
    location_options,
    plural,
)
from toolnexus.cli.table import format_table

__all__ = ["REGISTRARS", "build_parser", "format_table", "main"]

#: Errors the library raises for bad locations and options; anything else is a bug and keeps its traceback.
_USER_ERRORS = (OSError, TypeError, ValueError, ImportError, ModelError)

_FORMATTER = argparse.RawDescriptionHelpFormatter


# -- subcommands ------------------------------------------------------------------------------


def _home(locations: list[str]) -> str | list[str]:
    """One location as itself; several are layers, base first."""
    return locations[0] if len(locations) == 1 else locations


def _report(args: argparse.Namespace) -> SoulReport:
    return inspect_soul(_home(args.location), **location_kwargs(args), **budget_kwargs(args))


def _emit_json(args: argparse.Namespace) -> None:
    report = _report(args)
    emit(json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n")


def _soul(args: argparse.Namespace) -> int:
    if args.json:
        _emit_json(args)
    else:
        soul, _found = compose_soul(_home(args.location), **location_kwargs(args), **budget_kwargs(args))
        emit(soul + "\n" if soul else "")
    return 0


def _inspect(args: argparse.Namespace) -> int:
    if args.json:
        _emit_json(args)
    else:
        emit(format_table(_report(args)))
    return 0


def _check(args: argparse.Namespace) -> int:
    report = _report(args)
    if not report.found:
        if not args.quiet:
            print(f"toolnexus: no bootstrap file in {report.location}", file=sys.stderr)
        return 1
    if not args.quiet:
        emit("".join(f"{name}\n" for name in report.found))
    return 0


def _bundle(args: argparse.Namespace) -> int:
    names = write_bundle(_home(args.home), args.out, force=args.force, **location_kwargs(args))
    emit(f"wrote {args.out}: {plural(len(names), 'file')} ({', '.join(names) or 'empty home'})\n")
    return 0


def _add_command(
    subparsers: Subparsers, name: str, summary: str, example: str, handler: Handler, *, budget: bool = True
) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        name,
        parents=[location_options(), *([budget_options()] if budget else [])],
        help=summary,
        description=summary[0].upper() + summary[1:] + ".",
        epilog=f"example:\n  {example}",
        formatter_class=_FORMATTER,
    )
    parser.set_defaults(handler=handler)
    return parser


_LOCATION_HELP = (
    "persona home: a directory, a zip or tar bundle, an fsspec URL or a chained URL; "
    "several are layers, base first (the topmost layer holding a file wins)"
)
_JSON_HELP = "print the full report as JSON (the same as soul --json and inspect --json)"


def register_soul(subparsers: Subparsers) -> None:
    """``toolnexus soul LOCATION [LOCATION ...] [--json]``."""
    example = "toolnexus soul s3://bucket/personas/aster -o endpoint_url=http://127.0.0.1:9000"
    parser = _add_command(subparsers, "soul", "print the composed soul", example, _soul)
    parser.add_argument("location", type=location, metavar="LOCATION", nargs="+", help=_LOCATION_HELP)
    parser.add_argument("--json", action="store_true", help=_JSON_HELP)


def register_inspect(subparsers: Subparsers) -> None:
    """``toolnexus inspect LOCATION [LOCATION ...]``."""
    summary = "show what each bootstrap file contributed"
    parser = _add_command(subparsers, "inspect", summary, "toolnexus inspect examples/aster", _inspect)
    parser.add_argument("location", type=location, metavar="LOCATION", nargs="+", help=_LOCATION_HELP)
    parser.add_argument("--json", action="store_true", help=_JSON_HELP)


def register_check(subparsers: Subparsers) -> None:
    """``toolnexus check LOCATION [LOCATION ...]``: exit 0 listing the found names, 1 when there are none."""
    summary = "list the bootstrap files found; exit 1 when there are none"
    example = "toolnexus check zip://aster::s3://bucket/aster.zip -o s3.anon=true"
    parser = _add_command(subparsers, "check", summary, example, _check)
    parser.add_argument("location", type=location, metavar="LOCATION", nargs="+", help=_LOCATION_HELP)
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="print nothing; only the exit status tells"
    )


def register_bundle(subparsers: Subparsers) -> None:
    """``toolnexus bundle HOME [HOME ...] OUT [--force]``."""
    summary = "write the home's bootstrap files to a reproducible zip bundle"
    example = "toolnexus bundle examples/aster aster.zip"
    parser = _add_command(subparsers, "bundle", summary, example, _bundle, budget=False)
    parser.add_argument(
        "home", type=location, metavar="HOME", nargs="+", help=_LOCATION_HELP + "; layers are flattened"
    )
    parser.add_argument(
        "out", type=location, metavar="OUT", help="the bundle to write: a path or an fsspec URL"
    )
    parser.add_argument("--force", action="store_true", help="replace OUT if it exists")


#: Every subcommand, in ``--help`` order; another module adds its own ``register`` here.
REGISTRARS: list[Callable[[Subparsers], None]] = [
    register_soul,
    register_inspect,
    register_check,
    register_bundle,
    memory_cli.register,
    agent_cli.register,
]


def build_parser() -> argparse.ArgumentParser:
    """The ``toolnexus`` parser with every registered subcommand."""
    parser = Parser(
        prog="toolnexus",
        description="Compose, inspect, check and bundle AI persona homes, wherever they live.",
        epilog="example:\n  toolnexus soul examples/aster\n\nsee 'toolnexus COMMAND --help' for more",
        formatter_class=_FORMATTER,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    # Subparsers inherit Parser (and its "did you mean"); the cast is for the registrars' type.
    subparsers = cast(Subparsers, parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
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
    """Entry point of the ``toolnexus`` console script and ``python -m toolnexus``.

    Bare ``toolnexus`` prints the full help on stderr and exits 2, as ruff and uv do: it is still a
    usage mistake (a script that lost its arguments fails), and ``--help`` prints it with status 0.
    """
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    args = parser.parse_args(argv)
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
