"""The ``toolnexus`` command: argparse only, one module per command group; the work is the library's."""

from toolnexus.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
