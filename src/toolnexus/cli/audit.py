"""``toolnexus audit PREFIX``: one JSON line per persona, for CI gates; the summary goes to stderr.
Exit status: 0 done; 1 a persona matched ``--fail-on``; 2 an error."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Callable
from typing import Any

from toolnexus.agents import AUDIT_ISSUES, AuditSummary, audit, dask_client
from toolnexus.cli._support import (
    Subparsers,
    add_command,
    budget_kwargs,
    emit,
    for_people,
    location,
    say,
    seconds,
    whole,
)
from toolnexus.fleet.cluster import DEFAULT_CONNECT_TIMEOUT
from toolnexus.fleet.results import report_file
from toolnexus.sources import is_url

_EXAMPLES = """examples:
  toolnexus audit personas/
  toolnexus audit s3://bucket/personas/ --fail-on error,invalid --total 60000 --output audit.jsonl
  toolnexus audit s3://bucket/personas/ --dask tcp://scheduler:8786 -o profile=prod
"""


def _issues(value: str) -> frozenset[str]:
    """``type=`` for ``--fail-on``: comma-separated names from :data:`AUDIT_ISSUES`."""
    names = frozenset(name.strip() for name in value.split(",") if name.strip())
    unknown = sorted(names - set(AUDIT_ISSUES))
    if unknown or not names:
        named = ", ".join(map(repr, unknown)) or repr(value)
        raise argparse.ArgumentTypeError(f"unknown issue {named} (choose from {', '.join(AUDIT_ISSUES)})")
    return names


def _bar(args: argparse.Namespace) -> Any:
    """tqdm's counter of personas audited, with their rate (the listing streams: no total up front),
    when stderr is a terminal or ``--progress`` insists; else a context that gives ``None``."""
    if not (sys.stderr.isatty() if args.progress is None else args.progress):
        return contextlib.nullcontext()
    try:
        import tqdm  # noqa: PLC0415
    except ImportError as error:
        if args.progress:
            raise ImportError("--progress needs tqdm: pip install 'toolnexus[progress]'") from error
        return contextlib.nullcontext()
    return tqdm.tqdm(desc="audit", unit=" personas", file=sys.stderr, dynamic_ncols=True)


def _run(args: argparse.Namespace) -> int:
    options = args.storage_options
    if options and not (is_url(args.prefix) or (args.output and is_url(args.output))):
        raise TypeError(f"-o options cannot apply: neither {args.prefix!r} nor --output is a URL")
    summary = AuditSummary()
    matched = 0
    with contextlib.ExitStack() as stack:
        # Each persona's truncation is in its line and the summary: no warning per file on stderr.
        logger = logging.getLogger("toolnexus")
        stack.callback(logger.setLevel, logger.level)
        logger.setLevel(logging.ERROR)
        executor = None
        write: Callable[[str], None] = emit
        if args.dask is not None:
            executor = stack.enter_context(dask_client(args.dask, timeout=args.dask_timeout))
        if args.output is not None:
            output = options if is_url(args.output) else None
            write = stack.enter_context(report_file(args.output, output, args.engine))
        bar = stack.enter_context(_bar(args))
        results = audit(
            args.prefix,
            storage_options=options if is_url(args.prefix) else None,
            follow_external_symlinks=args.follow_external_symlinks,
            engine=args.engine,
            executor=executor,
            concurrency=args.concurrency,
            skills=args.skills,
            **budget_kwargs(args),
        )
        stack.callback(results.close)
        for result in results:
            matched += bool(summary.add(result) & args.fail_on)
            line = result.to_dict()
            if line["error"] is not None:  # its message names flags, not Python names
                line["error"]["message"] = for_people(line["error"]["message"])
            write(json.dumps(line, ensure_ascii=False) + "\n")
            if bar is not None:
                bar.update()
    say(f"audit: {summary.line()}")
    return 1 if matched else 0


def register(subparsers: Subparsers) -> None:
    summary = "check every persona under a prefix, one JSON line each"
    parser = add_command(subparsers, "audit", summary, _EXAMPLES, _run, budget=True)
    parser.add_argument(
        "prefix",
        type=location,
        metavar="PREFIX",
        help="a folder or URL whose direct children are persona folders or bundles "
        "(itself one persona if it holds a bootstrap file or is a bundle)",
    )
    parser.add_argument(
        "--skills", action="store_true", help="also check each persona's Agent Skills (issue: skills)"
    )
    parser.add_argument(
        "--fail-on",
        type=_issues,
        default=frozenset(),
        metavar="ISSUES",
        help=f"exit 1 when any persona shows one of these (comma-separated): {', '.join(AUDIT_ISSUES)}",
    )
    parser.add_argument(
        "--output",
        metavar="FILE",
        help="write the JSON lines to FILE (a path or URL, e.g. s3://bucket/audit.jsonl; -o options "
        "apply to a URL) instead of stdout; written whole at the end, or not at all",
    )
    parser.add_argument(
        "--concurrency",
        type=whole(1),
        default=64,
        metavar="N",
        help="personas in flight at once, and at most held in memory (default 64)",
    )
    parser.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run on the Dask scheduler at ADDRESS (tcp://host:8786), or 'local' to start a "
        "LocalCluster here; needs pip install 'toolnexus[dask]'",
    )
    parser.add_argument(
        "--dask-timeout",
        type=seconds("a number of seconds above 0", finite=False),
        default=DEFAULT_CONNECT_TIMEOUT,
        metavar="SECONDS",
        help=f"give up on an unreachable scheduler after SECONDS (default {DEFAULT_CONNECT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        help="show a progress counter on stderr (default: when stderr is a terminal; needs tqdm)",
    )
