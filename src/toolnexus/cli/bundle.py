"""``toolnexus bundle HOME [HOME ...] OUT``: a reproducible zip or tar bundle of a persona home."""

from __future__ import annotations

import argparse

from toolnexus.agents import write_bundle
from toolnexus.cli._support import Subparsers, add_command, emit, emit_json, location, location_kwargs, plural
from toolnexus.cli.persona import LOCATION_HELP, home
from toolnexus.soul.bundling import BUNDLE_FORMATS, format_for

_EXAMPLES = """examples:
  toolnexus bundle examples/aster aster.zip
  toolnexus bundle examples/aster aster.tar.gz
  toolnexus bundle team-base examples/aster s3://bucket/aster.tgz -o profile=prod
"""


def _bundle(args: argparse.Namespace) -> int:
    kind = format_for(args.out, args.format)  # a contradiction fails before anything is read
    names = write_bundle(home(args.home), args.out, force=args.force, format=kind, **location_kwargs(args))
    if args.json:
        emit_json({"out": args.out, "format": kind, "files": names})
    else:
        emit(f"wrote {args.out}: {plural(len(names), 'file')} ({', '.join(names) or 'empty home'})\n")
    return 0


def register(subparsers: Subparsers) -> None:
    summary = "write the home's bootstrap files to a reproducible zip or tar bundle"
    parser = add_command(subparsers, "bundle", summary, _EXAMPLES, _bundle)
    parser.add_argument(
        "home", type=location, metavar="HOME", nargs="+", help=LOCATION_HELP + "; layers are flattened"
    )
    parser.add_argument(
        "out",
        type=location,
        metavar="OUT",
        help="the bundle to write: a path or an fsspec URL; its ending says the format "
        "(.tar, .tar.gz/.tgz, .tar.bz2/.tbz2, .tar.xz/.txz a tar, anything else a zip)",
    )
    parser.add_argument(
        "--format",
        choices=tuple(BUNDLE_FORMATS),
        metavar="FORMAT",
        help="the archive to write when OUT's name does not say: zip, tar, tar.gz (tgz), "
        "tar.bz2 (tbz2) or tar.xz (txz); it may not contradict the name",
    )
    parser.add_argument("--force", action="store_true", help="replace OUT if it exists")
    parser.add_argument(
        "--json", action="store_true", help='print {"out": …, "format": …, "files": […]} when written'
    )
