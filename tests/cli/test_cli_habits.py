"""The habits of git, ruff and uv that a newcomer expects from ``toolnexus``, so that
nothing surprises a person who knows them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import EXAMPLE, TOOLNEXUS, run
from toolnexus.agents import inspect_soul

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ("soul", "inspect", "check", "bundle", "memory")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))


def test_bare_command_prints_the_full_help_and_exits_2() -> None:
    """Like ruff and uv: the whole help (not just a usage line) on stderr, status 2 (a usage error)."""
    bare = run()
    assert (bare.returncode, bare.stdout) == (2, "")
    helped = run("--help")
    assert helped.returncode == 0
    assert bare.stderr == helped.stdout
    for command in COMMANDS:
        assert f"\n    {command} " in bare.stderr


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["sol", "examples/aster"], "unknown command 'sol'; did you mean 'soul'?"),
        (["inspcet"], "unknown command 'inspcet'; did you mean 'inspect'?"),
        (["bundel"], "unknown command 'bundel'; did you mean 'bundle'?"),
        (["memory", "examples/aster", "vew"], "unknown command 'vew'; did you mean 'view'?"),
    ],
)
def test_a_mistyped_command_gets_a_suggestion(argv: list[str], suggestion: str) -> None:
    result = run(*argv)
    assert (result.returncode, result.stdout) == (2, "")
    assert suggestion in result.stderr.splitlines()[-1]


def test_nothing_close_gets_no_suggestion_but_the_list() -> None:
    result = run("xyzzy")
    last = result.stderr.splitlines()[-1]
    assert result.returncode == 2
    assert "did you mean" not in last
    assert "(choose from soul, inspect, check, bundle, memory" in last  # and any registered later


def test_inspect_json_is_the_report(home: Path) -> None:
    result = run("inspect", "--json", str(home))
    assert (result.returncode, result.stderr) == (0, "")
    assert json.loads(result.stdout) == inspect_soul(home).to_dict()
    assert result.stdout == run("soul", "--json", str(home)).stdout


@pytest.mark.slow
def test_check_quiet_says_it_with_the_exit_status_only(home: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    found = run("check", "-q", str(home))
    assert (found.returncode, found.stdout, found.stderr) == (0, "", "")
    for quiet in ("-q", "--quiet"):
        result = run("check", quiet, str(empty))
        assert (result.returncode, result.stdout, result.stderr) == (1, "", "")
    broken = run("check", "-q", str(tmp_path / "nobody"))  # an error is never silenced
    assert broken.returncode == 2
    assert broken.stderr.startswith("toolnexus: error: ")
    assert str(tmp_path / "nobody") in broken.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["soul", ""],
        ["soul", "--json", ""],
        ["inspect", ""],
        ["check", ""],
        ["bundle", "", "out.zip"],
        ["bundle", "HOME", ""],
        ["memory", "", "view"],
        ["memory", "", "append", "a note"],
        ["ask", "", "Hello", "--model", "m", "--base-url", "http://127.0.0.1:9"],
        ["chat", "", "--model", "m", "--base-url", "http://127.0.0.1:9"],
    ],
)
def test_an_empty_location_is_a_usage_error_on_every_subcommand(argv: list[str], home: Path) -> None:
    """``''`` is a slip (an unset shell variable), never "the current folder": nothing is read or written."""
    argv = [str(home) if arg == "HOME" else arg for arg in argv]
    before = {path.name: path.read_bytes() for path in home.iterdir()}
    result = run(*argv, cwd=home)  # the current folder is a valid persona: it must not be used
    assert (result.returncode, result.stdout) == (2, "")
    assert "empty location" in result.stderr.splitlines()[-1]
    assert {path.name: path.read_bytes() for path in home.iterdir()} == before


def tree_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@pytest.mark.slow
def test_memory_help_examples_leave_the_shipped_example_alone(tmp_path: Path) -> None:
    """Run the local examples of ``memory --help`` as printed (with /tmp/aster moved under tmp_path)."""
    epilog = run("memory", "--help").stdout.split("\nexamples", 1)[1]
    lines = [
        line.strip() for line in epilog.splitlines()[1:] if line.strip().startswith(("cp ", "toolnexus"))
    ]
    local = [line for line in lines if "s3://" not in line]
    assert len(local) >= 2
    assert not any(
        f" examples/aster {action}" in line for line in lines for action in ("append", "replace", "remove")
    )
    before = tree_hash(EXAMPLE)
    env = {**os.environ, "PATH": f"{TOOLNEXUS.parent}{os.pathsep}{os.environ['PATH']}"}
    for line in local:
        command = line.replace("/tmp/aster", shlex.quote(str(tmp_path / "aster")))
        result = subprocess.run(
            command, shell=True, cwd=ROOT, env=env, check=False, capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, (command, result.stderr)
    assert tree_hash(EXAMPLE) == before
    assert (
        (tmp_path / "aster" / "MEMORY.md")
        .read_text()
        .rstrip()
        .endswith("Mira moved to Hamburg (2026-11-30).")
    )


@pytest.mark.parametrize(
    ("memory", "notes"),
    [
        (b"one\r\ntwo", "1 line ending made LF"),
        (b"one\r\ntwo\rthree", "2 line endings made LF"),
        (b"bad \xff byte", "1 invalid byte replaced"),
        (b"bad \xff\xfe bytes", "2 invalid bytes replaced"),
    ],
)
def test_counts_agree_with_their_nouns(tmp_path: Path, memory: bytes, notes: str) -> None:
    (tmp_path / "MEMORY.md").write_bytes(memory)
    table = run("inspect", str(tmp_path)).stdout.splitlines()
    assert table[7].endswith(f"  {notes}"), table[7]
    assert table[8].startswith(f"1 of 7 bootstrap files found in {tmp_path}; soul: ")
