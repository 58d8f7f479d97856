"""Every ```python and ```console block of README.md and docs/*.md runs as written and shows what
it claims: the one harness for the documentation. Its conventions are in ``tests.support.snippets``
and CONTRIBUTING.md ("Runnable documentation"); provider blocks run in ``test_provider_snippets``.

Python blocks run on their own, as a reader would paste them into a fresh interpreter, in a scratch
folder holding ``examples`` (see ``conftest.py``). Console blocks run in bash in a scratch clone, with
the installed ``toolnexus`` first on PATH (a command list's plain ``toolnexus …`` lines, and a
transcript's ``toolnexus …`` steps with nothing for bash to expand, by the entry function in-process:
its output is still compared whole, stdout and stderr interleaved as a pipe has them); the paths a
page shows under ``/tmp/`` are mapped to the scratch folder (``/tmp/toolnexus`` is the clone). A
``toolnexus bundle HOME s3://…`` line of a command list must write the bundle of HOME's files (the
object is removed first).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import _as_a_process, _exit_status, run
from tests.support.snippets import MARKERS, ROOT, Snippet, claims, commands, snippets, steps
from toolnexus.agents import BOOTSTRAP_ORDER, compose_soul
from toolnexus.soul.bundling import bundle_bytes

ALL = snippets()
#: Blocks that may stay unexecuted: each is marked with its reason on the page. Keep this small.
MAX_NOT_RUN = 4


def _unmarked(lang: str, *, transcript: bool | None = None) -> Any:
    """Parametrize over the unmarked blocks of ``lang`` (console: transcripts or command lists);
    a block that talks to S3 carries the ``s3`` marker and gets moto through the ``aws`` fixture."""
    blocks = [
        s
        for s in ALL
        if s.lang == lang and s.marker is None and (transcript is None or bool(steps_of(s)) == transcript)
    ]
    params = [pytest.param(s, marks=[pytest.mark.s3] if s.needs_s3 else [], id=s.id) for s in blocks]
    return pytest.mark.parametrize("block", params)


def aws_for(block: Snippet, request: pytest.FixtureRequest) -> dict[str, str] | None:
    """The ``aws`` fixture (my-bucket filled, AWS configuration leading to moto) if the block needs
    it; ``aws_obstore`` (obstore's environment too) if it uses obstore."""
    if not block.needs_s3:
        return None
    return request.getfixturevalue("aws_obstore" if "obstore" in block.code else "aws")


def steps_of(block: Snippet) -> list[tuple[str, str]]:
    """A console block's ``$`` steps (none: it is a list of commands)."""
    return steps(block.code) if block.code.startswith("$ ") else []


def _params(blocks: list[Snippet]) -> Any:
    return pytest.mark.parametrize("block", blocks, ids=[block.id for block in blocks])


def run_python(block: Snippet) -> None:
    """Run a python block; its claims must hold and its prints print exactly what they claim."""
    checked, expected_output = claims(block.code)
    block.compiled()  # as written: no top-level await, nothing undefined at parse
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(block.compiled(checked), {"__name__": "docs"})
    assert output.getvalue().splitlines() == expected_output


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command`` in bash with the installed ``toolnexus`` first on PATH; stdout and stderr as one."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", "-c", command],
        check=False,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        timeout=120,  # a hang guard
    )


#: A transcript's step that is ``toolnexus`` with plain or simply quoted words (nothing bash would
#: expand), optionally followed by ``; echo "exit $?"``: run in-process by :func:`in_process`.
_WORD = r"""(?:[^\s|;&<>`$()*?\\'"~\[\]{}!#]+|"[^"$`\\!]*"|'[^']*')"""
TRANSCRIPT_COMMAND = re.compile(rf"(?P<command>toolnexus(?: {_WORD})*)(?P<status>; echo \"exit \$\?\")?")


def in_process(command: str, cwd: Path) -> str | None:
    """What bash would print for a :data:`TRANSCRIPT_COMMAND` step (None for any other step), from
    the entry function in this process. stdout and stderr share one buffer the way a Python process
    writing to a pipe has them (stderr line-buffered, stdout block-buffered until exit), so their
    interleaving is the installed command's: the bash steps still run that end to end."""
    step = TRANSCRIPT_COMMAND.fullmatch(command)
    if step is None:
        return None
    from toolnexus.cli import main  # noqa: PLC0415

    pipe = io.BytesIO()
    out = io.TextIOWrapper(io.BufferedWriter(pipe), encoding="utf-8")
    err = io.TextIOWrapper(
        io.BufferedWriter(pipe),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
    )
    with _as_a_process(cwd, None, None, out, err):
        try:
            status = main(shlex.split(step["command"])[1:])
        except SystemExit as exit_:
            status = _exit_status(exit_.code)
        except Exception:
            traceback.print_exc()  # as the interpreter would, status 1
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
    printed = pipe.getvalue().decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    return printed + (f"exit {status}\n" if step["status"] else "")


def replay(block: Snippet, clone: Path) -> None:
    """Run a transcript: every ``$`` command prints exactly the lines shown below it."""
    scratch = f"{clone.parent}/"
    for written, shown in steps_of(block):
        command = written.replace("/tmp/", scratch)
        printed = in_process(command, clone)
        if printed is None:
            printed = shell(command, clone).stdout
        assert printed == shown.replace("/tmp/", scratch), command


#: A command list's line that is the command alone (no shell syntax): run by its entry function
#: in-process (``tests.support.cli.run``), since only its exit status is checked; transcripts,
#: whose output is compared, and every other line run in bash with the installed command.
PLAIN_COMMAND = re.compile(r"toolnexus(?: [^\s|;&<>`$()*?\\'\"~\[\]{}!#]+)*")


def run_line(line: str, clone: Path) -> subprocess.CompletedProcess[str]:
    """One line of a command list, in ``clone``; stdout and stderr as one (for the message)."""
    if PLAIN_COMMAND.fullmatch(line):
        result = run(*line.split()[1:], cwd=clone)
        return subprocess.CompletedProcess(result.args, result.returncode, result.stdout + result.stderr)
    return shell(line, clone)


def run_commands(block: Snippet, clone: Path, endpoint_url: str | None = None) -> None:
    """Run a command list: every line succeeds; a bundle written to S3 is the bundle of its home."""
    lines = commands(block.code)
    assert lines, f"{block.id}: a console block with no command"
    for line in lines:
        bundle = re.match(r"toolnexus bundle (\S+) s3://(\S+)", line)
        if bundle and endpoint_url:
            import s3fs  # noqa: PLC0415

            fs = s3fs.S3FileSystem(endpoint_url=endpoint_url, skip_instance_cache=True)
            if fs.exists(bundle[2]):
                fs.rm(bundle[2])
        result = run_line(line, clone)
        assert result.returncode == 0, (line, result.stdout)
        if bundle and endpoint_url:
            home = clone / bundle[1]
            files = {name: (home / name).read_bytes() for name in BOOTSTRAP_ORDER if (home / name).is_file()}
            assert fs.cat(bundle[2]) == bundle_bytes(files), line


@_unmarked("python")
def test_python_block(block: Snippet, reader: Path, request: pytest.FixtureRequest) -> None:
    aws_for(block, request)
    run_python(block)


@pytest.mark.slow
@_unmarked("console", transcript=True)
def test_console_transcript(block: Snippet, clone: Path, request: pytest.FixtureRequest) -> None:
    aws_for(block, request)
    replay(block, clone)


@pytest.mark.slow
@_unmarked("console", transcript=False)
def test_console_commands(block: Snippet, clone: Path, request: pytest.FixtureRequest) -> None:
    aws = aws_for(block, request)
    run_commands(block, clone, aws["endpoint_url"] if aws else None)


@_params([s for s in ALL if s.marker == "quickstart"])
def test_quickstart(block: Snippet, reader: Path) -> None:
    """Exactly two commands: the first composes the example persona (its composing part runs with
    the installed command), the second sets up and runs the tests exactly as .ci/run does."""
    compose, test = commands(block.code)
    setup = "python3 -m venv .venv && .venv/bin/pip install -q -e "
    assert compose.startswith(setup)
    assert test.startswith(setup)
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test.split(" && ")[-1] in ci_lines, "the Quickstart's test command is not the one .ci/run calls"
    assert '".[test' in test
    assert any('-e ".[test' in line for line in ci_lines)
    result = shell(compose.split(" && ")[-1].removeprefix(".venv/bin/"), reader)
    assert (result.returncode, result.stdout) == (0, compose_soul("examples/aster")[0] + "\n")


def test_every_block_runs_or_says_why(record_property: Any) -> None:
    """Unknown markers are mistakes; unexecuted blocks are few, each with its reason."""
    assert {s.marker for s in ALL} <= {None, *MARKERS}, "a marker the harness does not know"
    not_run = [s for s in ALL if s.marker == "not-run"]
    assert len(not_run) <= MAX_NOT_RUN, [s.id for s in not_run]
    for block in not_run:
        assert len((block.reason or "").split()) >= 4, f"{block.id}: say why it cannot run"
        if block.lang == "python":
            block.compiled()
    python = [s for s in ALL if s.lang == "python"]
    assert max(len(steps_of(s)) for s in ALL if s.lang == "console") >= 10  # the command-line session
    assert len(python) >= 15
    assert sum(len(claims(s.code, every_print_claims=False)[1]) for s in python) >= 10
    record_property(
        "figures",
        f"documentation blocks: {len(ALL)} in {len({s.page for s in ALL})} pages, "
        f"{len(ALL) - len(not_run)} executed ({len(python)} python, {len(ALL) - len(python)} console), "
        f"{len(not_run)} marked not-run: {', '.join(s.id for s in not_run)}",
    )
