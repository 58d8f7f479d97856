"""``toolnexus help [COMMAND]`` and ``completion SHELL``: added last, as they read the whole parser."""

from __future__ import annotations

import argparse

from toolnexus.cli._support import FORMATTER, Subparsers, emit
from toolnexus.cli.completion import SCRIPTS

__all__ = ["register"]

_COMPLETION_EPILOG = """examples:
  eval "$(toolnexus completion bash)"      # in ~/.bashrc
  eval "$(toolnexus completion zsh)"       # in ~/.zshrc, after compinit
  toolnexus completion fish > ~/.config/fish/completions/toolnexus.fish
"""


def register(subparsers: Subparsers, root: argparse.ArgumentParser) -> None:
    """Add ``help`` and ``completion``, which read ``root`` (the ``toolnexus`` parser)."""

    def show_help(args: argparse.Namespace) -> int:
        parser = root if args.topic is None else subparsers.choices[args.topic]
        emit(parser.format_help())
        return 0

    summary = "show the help of toolnexus or of one command (the same as COMMAND --help)"
    helper = subparsers.add_parser(
        "help",
        help=summary,
        description=summary[0].upper() + summary[1:] + ".",
        epilog="example:\n  toolnexus help bundle",
        formatter_class=FORMATTER,
    )
    # The live mapping of commands: one registered after this still counts.
    helper.add_argument("topic", metavar="COMMAND", nargs="?", choices=subparsers.choices)
    helper.set_defaults(handler=show_help)

    def print_script(args: argparse.Namespace) -> int:
        emit(SCRIPTS[args.shell])
        return 0

    summary = "print the shell completion script for bash, zsh or fish"
    completion = subparsers.add_parser(
        "completion",
        help=summary,
        description=summary[0].upper() + summary[1:] + ". It asks toolnexus itself what "
        "completes each word, so it always matches the installed version.",
        epilog=_COMPLETION_EPILOG,
        formatter_class=FORMATTER,
    )
    completion.add_argument("shell", metavar="SHELL", choices=tuple(SCRIPTS), help="bash, zsh or fish")
    completion.set_defaults(handler=print_script)
