"""``toolnexus help [COMMAND]`` and ``completion SHELL``: added last, as they read the whole parser."""

from __future__ import annotations

import argparse

from toolnexus.cli._support import Subparsers, add_command, emit
from toolnexus.cli.completion import SCRIPTS

__all__ = ["register"]

_COMPLETION_EPILOG = """examples:
  eval "$(toolnexus completion bash)"      # in ~/.bashrc
  eval "$(toolnexus completion zsh)"       # in ~/.zshrc, after compinit
  toolnexus completion fish > ~/.config/fish/completions/toolnexus.fish
"""
_COMPLETION_DESCRIPTION = (
    "Print the shell completion script for bash, zsh or fish. It asks toolnexus itself what "
    "completes each word, so it always matches the installed version."
)


def register(subparsers: Subparsers, root: argparse.ArgumentParser) -> None:
    """Add ``help`` and ``completion``, which read ``root`` (the ``toolnexus`` parser)."""

    def show_help(args: argparse.Namespace) -> int:
        emit((root if args.topic is None else subparsers.choices[args.topic]).format_help())
        return 0

    def print_script(args: argparse.Namespace) -> int:
        emit(SCRIPTS[args.shell])
        return 0

    summary = "show the help of toolnexus or of one command (the same as COMMAND --help)"
    helper = add_command(subparsers, "help", summary, "toolnexus help bundle", show_help, located=False)
    # The live mapping of commands: one registered after this still counts.
    helper.add_argument("topic", metavar="COMMAND", nargs="?", choices=subparsers.choices)
    summary = "print the shell completion script for bash, zsh or fish"
    completion = add_command(
        subparsers,
        "completion",
        summary,
        _COMPLETION_EPILOG,
        print_script,
        located=False,
        description=_COMPLETION_DESCRIPTION,
    )
    completion.add_argument("shell", metavar="SHELL", choices=tuple(SCRIPTS), help="bash, zsh or fish")
