"""``toolnexus soul``, ``inspect``, ``check`` and ``bundle``: a persona home's bootstrap files.
Exit status: 0 done; 1 ``check`` found none; 2 an error."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from toolnexus.agents import FileReport, SkillSet, SoulReport, compose_soul, inspect_soul, load_skills
from toolnexus.cli._support import (
    EXIT_ERROR,
    Subparsers,
    add_command,
    budget_kwargs,
    emit,
    emit_json,
    for_people,
    home,
    location,
    location_kwargs,
    plural,
    say,
    warn,
)
from toolnexus.cli.skills import skill_rows
from toolnexus.soul.bundling import BUNDLE_FORMATS, format_for, write_bundle

LOCATION_HELP = (
    "persona home: a directory, a zip or tar bundle, an fsspec URL or a chained URL; "
    "several are layers, base first (the topmost layer holding a file wins)"
)
_JSON_HELP = "print the full report as JSON (the same as soul --json and inspect --json)"

_BUNDLE_EXAMPLES = """examples:
  toolnexus bundle examples/aster aster.zip
  toolnexus bundle examples/aster aster.tar.gz
  toolnexus bundle team-base examples/aster s3://bucket/aster.tgz -o profile=prod
"""


def _report_json(report: SoulReport) -> dict[str, Any]:
    """The report as JSON, its reasons in the command line's words."""
    data = report.to_dict()
    for file in data["files"]:
        if file["reason"] is not None:
            file["reason"] = for_people(file["reason"])
    return data


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {**location_kwargs(args), **budget_kwargs(args)}


def _notes(file: FileReport, location: str) -> str:
    if file.status in ("skipped", "error"):  # why, short: the location is on the summary line
        return for_people(file.reason or "").replace(f" in {location}", "").removeprefix(f"{file.name} ")
    notes = [
        (file.truncated, "truncated at the cap"),
        (file.encoding not in (None, "utf-8"), str(file.encoding)),
        (file.bom_stripped, "BOM stripped"),
        (file.line_endings_normalised, plural(file.line_endings_normalised, "line ending") + " made LF"),
        (file.invalid_bytes_replaced, plural(file.invalid_bytes_replaced, "invalid byte") + " replaced"),
        (file.budget_truncated, "cut to the budget"),
        (file.omitted, "left out by the budget"),
    ]
    return ", ".join(note for wanted, note in notes if wanted)


def format_table(report: SoulReport) -> str:
    """``inspect``'s table: a row per bootstrap name (the layer and budget columns when they apply)."""
    budget = report.budget

    def number(value: int | None) -> str:
        return "-" if value is None else str(value)

    columns: dict[str, Callable[[FileReport], str]] = {
        "FILE": lambda file: file.name,
        "STATUS": lambda file: file.status,
        "SIZE": lambda file: (
            "-" if file.status != "present" else "?" if file.size is None else str(file.size)
        ),
        "KEPT": lambda file: str(file.kept_bytes) if file.status == "present" else "-",
    }
    if budget is not None:
        columns["CHARS"] = lambda file: number(file.chars)
        if budget.token_counter is not None:
            columns["TOKENS"] = lambda file: number(file.tokens)
        columns[f"KEPT {budget.unit.upper()}"] = lambda file: number(file.kept)
    if any(file.layer is not None for file in report.files):
        columns["LAYER"] = lambda file: file.layer or "-"
    columns["NOTES"] = lambda file: _notes(file, report.location)
    rows = [list(columns), *([cell(file) for cell in columns.values()] for file in report.files)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(columns))]
    lines = []
    for row in rows:  # NOTES, last, is free text: neither padded nor aligned
        cells = [
            cell.ljust(width) if name in ("FILE", "STATUS", "LAYER") else cell.rjust(width)
            for name, cell, width in zip(rows[0][:-1], row, widths, strict=False)
        ]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    soul_bytes = len(report.soul.encode("utf-8"))
    failed = sum(file.status == "error" for file in report.files)
    unread = f"; {plural(failed, 'file')} could not be read" if failed else ""
    lines.append(
        f"{len(report.found)} of {plural(len(report.files), 'bootstrap file')} found in {report.location}"
        f"{unread}; soul: {plural(len(report.soul), 'character')}, {plural(soul_bytes, 'byte')}"
    )
    if budget is not None:
        limits = [f"per file {budget.per_file}"] * (budget.per_file is not None)
        limits += [f"total {budget.total}"] * (budget.total is not None)
        cut = plural(sum(file.budget_truncated for file in report.files), "file")
        omitted = sum(file.omitted for file in report.files)
        lines.append(
            f"budget: {', '.join(limits) or 'no limit'} {budget.noun}; {cut} cut, {omitted} left out"
        )
    return "\n".join(lines) + "\n"


def _soul(args: argparse.Namespace) -> int:
    if args.json:
        report = inspect_soul(home(args.location), **_options(args))
        emit_json(_report_json(report))
    else:
        soul, found = compose_soul(home(args.location), **_options(args))
        emit(soul + "\n" if soul else "")
        if found:
            return 0
        report = inspect_soul(home(args.location), **_options(args))  # the rare path: where, and why
    if not any(file.status == "present" for file in report.files):  # an empty soul says so
        of_profile = f" of the {args.profile} profile" if args.profile else ""
        warn(f"no bootstrap file{of_profile} in {report.location}")
    return 0


def _inspect(args: argparse.Namespace) -> int:
    report = inspect_soul(home(args.location), on_error="report", **_options(args))
    if args.json:
        emit_json(_report_json(report))
    else:
        emit(format_table(report))
        skills = report.skills if report.skills is not None else SkillSet()  # none under a profile
        if len(skills):
            emit(f"\nskills ({len(skills)}):\n{skill_rows(skills)}")
        for message in skills.warnings:
            warn(message)
    failed = [file for file in report.files if file.status == "error"]
    for file in failed:
        say(f"error: {for_people(file.reason or file.name)}")
    return EXIT_ERROR if failed else 0


def _check(args: argparse.Namespace) -> int:
    report = inspect_soul(home(args.location), **_options(args))
    if args.json:
        emit_json({"location": report.location, "found": report.found})
    if not report.found:
        if not args.quiet:  # the answer, not a warning: exit 1 says it to a script
            say(f"no bootstrap file in {report.location}")
        return 1
    if not (args.quiet or args.json):
        emit("".join(f"{name}\n" for name in report.found))
    skills = report.skills
    if skills is None:  # a profile's report: the agent's skills all the same
        skills = load_skills(home(args.location), storage_options=args.storage_options, engine=args.engine)
    warnings = skills.warnings
    for message in () if args.quiet else warnings:
        warn(message)
    return 1 if args.strict and warnings else 0


def _bundle(args: argparse.Namespace) -> int:
    kind = format_for(args.out, args.format)  # a contradiction fails before anything is read
    names = write_bundle(home(args.home), args.out, force=args.force, format=kind, **location_kwargs(args))
    if args.json:
        emit_json({"out": args.out, "format": kind, "files": names})
    else:
        emit(f"wrote {args.out}: {plural(len(names), 'file')} ({', '.join(names) or 'empty home'})\n")
    return 0


def _locations(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("location", type=location, metavar="LOCATION", nargs="+", help=LOCATION_HELP)


def register(subparsers: Subparsers) -> None:
    example = "toolnexus soul s3://bucket/personas/aster -o endpoint_url=http://127.0.0.1:9000"
    soul = add_command(subparsers, "soul", "print the composed soul", example, _soul, budget=True)
    _locations(soul)
    soul.add_argument("--json", action="store_true", help=_JSON_HELP)

    summary = "show what each bootstrap file contributed, and why a file was skipped or failed"
    example = "toolnexus inspect examples/aster"
    inspect = add_command(subparsers, "inspect", summary, example, _inspect, budget=True)
    _locations(inspect)
    inspect.add_argument("--json", action="store_true", help=_JSON_HELP)

    summary = "list the bootstrap files found; exit 1 when there are none"
    example = "toolnexus check zip://aster::s3://bucket/aster.zip -o s3.anon=true"
    check = add_command(subparsers, "check", summary, example, _check, budget=True)
    _locations(check)
    output = check.add_mutually_exclusive_group()
    output.add_argument(
        "-q", "--quiet", action="store_true", help="print nothing, warnings included; the exit status tells"
    )
    output.add_argument(
        "--json", action="store_true", help='print {"location": …, "found": […]} (exit status as without)'
    )
    check.add_argument("--strict", action="store_true", help="exit 1 when a skill has a warning")

    summary = "write the home's bootstrap files to a reproducible zip or tar bundle"
    bundle = add_command(subparsers, "bundle", summary, _BUNDLE_EXAMPLES, _bundle)
    bundle.add_argument(
        "home", type=location, metavar="HOME", nargs="+", help=LOCATION_HELP + "; layers are flattened"
    )
    bundle.add_argument(
        "out",
        type=location,
        metavar="OUT",
        help="the bundle to write: a path or an fsspec URL; its ending says the format "
        "(.tar, .tar.gz/.tgz, .tar.bz2/.tbz2, .tar.xz/.txz a tar, anything else a zip)",
    )
    bundle.add_argument(
        "--format",
        choices=tuple(BUNDLE_FORMATS),
        metavar="FORMAT",
        help="the archive to write when OUT's name does not say: zip, tar, tar.gz (tgz), "
        "tar.bz2 (tbz2) or tar.xz (txz); it may not contradict the name",
    )
    bundle.add_argument("--force", action="store_true", help="replace OUT if it exists")
    bundle.add_argument(
        "--json", action="store_true", help='print {"out": …, "format": …, "files": […]} when written'
    )
