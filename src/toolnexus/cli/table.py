"""``toolnexus inspect``'s table: one row per bootstrap name, then a summary (and the budget's)."""

from __future__ import annotations

from toolnexus.agents import Budget, FileReport, SoulReport
from toolnexus.cli._support import plural
from toolnexus.cli._wording import for_people

__all__ = ["format_table"]


def _reason(file: FileReport, location: str) -> str:
    """Why a row is skipped or an error, short: the location is on the summary line already."""
    reason = for_people(file.reason or "").replace(f" in {location}", "")
    return reason.removeprefix(f"{file.name} ")


def _notes(file: FileReport, location: str) -> str:
    if file.status in ("skipped", "error"):
        return _reason(file, location)
    notes = ["truncated at the cap"] if file.truncated else []
    if file.encoding not in (None, "utf-8"):
        notes.append(file.encoding)
    if file.bom_stripped:
        notes.append("BOM stripped")
    if file.line_endings_normalised:
        notes.append(plural(file.line_endings_normalised, "line ending") + " made LF")
    if file.invalid_bytes_replaced:
        notes.append(plural(file.invalid_bytes_replaced, "invalid byte") + " replaced")
    if file.budget_truncated:
        notes.append("cut to the budget")
    if file.omitted:
        notes.append("left out by the budget")
    return ", ".join(notes)


def _number(value: int | None) -> str:
    return "-" if value is None else str(value)


def _row(file: FileReport, budget: Budget | None, layered: bool, location: str) -> list[str]:
    present = file.status == "present"
    size = "-" if not present else "?" if file.size is None else str(file.size)
    row = [file.name, file.status, size, str(file.kept_bytes) if present else "-"]
    if budget is not None:
        row.append(_number(file.chars))
        if budget.token_counter is not None:
            row.append(_number(file.tokens))
        row.append(_number(file.kept))
    return [*row, *([file.layer or "-"] if layered else []), _notes(file, location)]


def _budget_line(report: SoulReport, budget: Budget) -> str:
    limits = [f"per file {budget.per_file}"] * (budget.per_file is not None)
    limits += [f"total {budget.total}"] * (budget.total is not None)
    cut = sum(file.budget_truncated for file in report.files)
    omitted = sum(file.omitted for file in report.files)
    return (
        f"budget: {', '.join(limits) or 'no limit'} {budget.noun}; "
        f"{plural(cut, 'file')} cut, {omitted} left out"
    )


def format_table(report: SoulReport) -> str:
    """Every bootstrap name with status, size, kept bytes and notes (LAYER and the budget's columns
    when they apply), then a summary line."""
    layered = any(file.layer is not None for file in report.files)
    budget = report.budget
    header = ["FILE", "STATUS", "SIZE", "KEPT"]
    if budget is not None:
        header += [
            "CHARS",
            *(["TOKENS"] if budget.token_counter is not None else []),
            f"KEPT {budget.unit.upper()}",
        ]
    header += [*(["LAYER"] if layered else []), "NOTES"]
    rows = [header, *(_row(file, budget, layered, report.location) for file in report.files)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    lines = []
    for row in rows:  # NOTES, last, is free text: neither padded nor aligned
        cells = [
            cell.ljust(width) if name in ("FILE", "STATUS", "LAYER") else cell.rjust(width)
            for name, cell, width in zip(header[:-1], row, widths, strict=False)
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
        lines.append(_budget_line(report, budget))
    return "\n".join(lines) + "\n"
