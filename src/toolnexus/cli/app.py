"""The ``toolnexus`` parser and :func:`main`, which turns the library's errors into one
``toolnexus: error: …`` line (flags, not Python names) and exit status 2, for every command alike."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import cast

from toolnexus import __version__
from toolnexus.agents import ModelError
from toolnexus.cli import agent, audit, completion, memory, persona, skills
from toolnexus.cli._support import EXIT_ERROR, FORMATTER, Handler, Parser, Subparsers, emit, for_people, say

#: Errors the library raises for bad locations and options; anything else is a bug and keeps its traceback.
_USER_ERRORS = (OSError, TypeError, ValueError, ImportError, ModelError)

#: Every subcommand, in ``--help`` order; another module adds its own ``register`` here (``help``
#: and ``completion`` follow them all: they describe the whole parser).
REGISTRARS: list[Callable[[Subparsers], None]] = [
    persona.register,
    memory.register,
    agent.register,
    audit.register,
    skills.register,
]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="toolnexus",
        description="Compose, inspect, check and bundle AI persona homes, wherever they live.",
        epilog="example:\n  toolnexus soul examples/aster\n\nsee 'toolnexus help COMMAND' for more",
        formatter_class=FORMATTER,
    )
    parser.add_argument("-V", "--version", action="version", version=f"%(prog)s {__version__}")
    # Subparsers inherit Parser (and its "did you mean"); the cast is for the registrars' type.
    subparsers = cast(Subparsers, parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    for register in REGISTRARS:
        register(subparsers)
    completion.register(subparsers, parser)
    return parser


class _PeopleFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return for_people(super().format(record))


def main(argv: Sequence[str] | None = None) -> int:
    """The console script. Bare ``toolnexus`` prints the help on stderr and exits 2 (a usage
    mistake, as in ruff and uv); with ``_TOOLNEXUS_COMPLETE`` set it answers a completion."""
    parser = build_parser()
    words = sys.argv[1:] if argv is None else list(argv)
    shell = os.environ.get(completion.COMPLETE_VARIABLE)
    if shell:
        emit(completion.complete(parser, shell, words))
        return 0
    if not words:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    args = parser.parse_args(words)
    # Warnings as ``toolnexus: warning: …`` lines; ``-q`` drops them with a handler (else logging's
    # last resort would print them).
    logger = logging.getLogger("toolnexus")
    warnings = logging.NullHandler() if getattr(args, "quiet", False) else logging.StreamHandler(sys.stderr)
    warnings.setLevel(logging.WARNING)
    warnings.setFormatter(_PeopleFormatter("toolnexus: warning: %(message)s"))
    logger.addHandler(warnings)
    handler: Handler = args.handler
    try:
        return handler(args)
    except _USER_ERRORS as error:
        message = " ".join(str(error).splitlines()) or type(error).__name__
        say(f"error: {for_people(message)}")
        return EXIT_ERROR
    finally:
        logger.removeHandler(warnings)
