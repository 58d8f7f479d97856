"""The options that fit a soul to a model (``--per-file``, ``--total``, ``--tokens``, ``--profile``),
shared by ``soul``, ``inspect``, ``check``, ``ask`` and ``chat`` (see :mod:`toolnexus.cli._support`)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from toolnexus._tokens import DEFAULT_ENCODING
from toolnexus.composer.budget import PROFILES, Budget

__all__ = ["budget_kwargs", "budget_options"]


def _units(text: str) -> int:
    """``type=`` for ``--per-file``/``--total``: a whole number of at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


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
    group.add_argument(
        "--per-file",
        type=_units,
        metavar="N",
        help="cut each file's body to N characters (tokens with --tokens): head, one marker line, tail",
    )
    group.add_argument(
        "--total",
        type=_units,
        metavar="N",
        help="fit the whole soul in N characters (tokens with --tokens), shared fairly among the files",
    )
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
    if args.tokens is not None:
        budget = Budget(per_file=args.per_file, total=args.total, unit="tokens", tokenizer=args.tokens)
    elif args.per_file is not None or args.total is not None:
        budget = Budget(per_file=args.per_file, total=args.total)
    return {"budget": budget, "profile": args.profile}
