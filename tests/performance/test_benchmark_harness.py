"""The benchmark suite's own plumbing, without running a benchmark: what ``--help`` says, its exit
status, and that the documentation quotes the reference run as ``benchmarks.docs`` writes it."""

from __future__ import annotations

import json
import re

import pytest
from benchmarks.docs import REFERENCE, fill, load
from benchmarks.harness import Row, exit_status, verdict

from tests.support.snippets import ROOT

ISSUE_NUMBER = re.compile(r"\bissues?\s*#?\d|(?:^|[\s(])#\d+\b|\btargets?\s+\d", re.IGNORECASE)


def test_help_names_what_is_measured_and_no_issue_number(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.__main__ import main  # noqa: PLC0415  (imports every benchmark: not at collection)

    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    assert "Exit status" in text
    assert not ISSUE_NUMBER.search(text)


def test_no_issue_number_in_the_suite() -> None:
    found = [
        f"{path.name}:{number}"
        for path in sorted((ROOT / "benchmarks").glob("*.py"))
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if ISSUE_NUMBER.search(line)
    ]
    assert found == []


def test_a_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.__main__ import main  # noqa: PLC0415  (imports every benchmark: not at collection)

    with pytest.raises(SystemExit) as exited:
        main(["--only", "everything"])
    assert exited.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_a_quick_run_fails_on_a_check_never_on_a_timing() -> None:
    held = Row("local", "m", "r", ok=True, on_time=True)
    slow = Row("local", "m", "r", on_time=False)
    wrong = Row("S3 home", "m", "r", ok=False, on_time=True)
    report = Row("fleet", "m", "r")
    assert [verdict(row) for row in (held, slow, wrong, report)] == ["yes", "**NO**", "**NO**", ""]
    assert verdict(slow, quick=True) == "missed (quick)"
    assert exit_status([held, report]) == exit_status([held, slow], quick=True) == 0
    assert exit_status([held, slow]) == exit_status([wrong], quick=True) == 1


def test_the_documentation_quotes_the_reference_run() -> None:
    """README's headlines and every ``<!-- benchmarks:… -->`` table are what ``python -m
    benchmarks.docs`` writes from ``benchmarks/reference/latest.json``: rerun it after a run."""
    document, rows = load(REFERENCE)
    assert not document["quick"]
    assert json.loads(REFERENCE.read_text("utf-8"))["rows"]
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    blocks = {page.name for page in pages if "<!-- benchmarks:" in page.read_text("utf-8")}
    assert {"README.md", "performance.md"} <= blocks
    stale = [page.name for page in pages if fill(text := page.read_text("utf-8"), document, rows) != text]
    assert stale == []
