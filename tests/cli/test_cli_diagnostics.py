"""``inspect`` shows every row, ``soul`` warns on an empty home, ``-q`` is quiet: a person sees
why a soul came out as it did, and a script can ask for silence.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.support.cli import EXAMPLE, run
from toolnexus.agents import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, inspect_soul


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))


def rows(table: str) -> dict[str, list[str]]:
    """``{name: [status, size, kept, notes]}`` from an inspect table (notes as one string)."""
    lines = table.splitlines()[1:-1]
    return {line.split()[0]: [*line.split(maxsplit=4)[1:4], *line.split(maxsplit=4)[4:]] for line in lines}


def test_inspect_shows_every_row_and_marks_the_unreadable_one(home: Path, tmp_path: Path) -> None:
    """The bug: one external symlink stopped ``inspect`` with exit 2 and no table at all."""
    (tmp_path / "elsewhere.md").write_text("not the persona's")
    (home / "USER.md").unlink()
    (home / "USER.md").symlink_to(tmp_path / "elsewhere.md")
    result = run("inspect", str(home))
    assert result.returncode == 2
    table = rows(result.stdout)
    assert list(table) == list(BOOTSTRAP_ORDER)
    assert table["SOUL.md"] == ["present", "418", "418"]
    assert table["USER.md"] == [
        "error",
        "-",
        "-",
        f"is a symlink to {tmp_path / 'elsewhere.md'}, outside the home; refusing to follow it "
        "(pass --follow-external-symlinks to allow)",
    ]
    assert result.stdout.splitlines()[-1].startswith(
        f"6 of 7 bootstrap files found in {home}; 1 file could not be read; soul: "
    )
    assert result.stderr == (
        f"toolnexus: error: USER.md in {home} is a symlink to {tmp_path / 'elsewhere.md'}, outside the "
        "home; refusing to follow it (pass --follow-external-symlinks to allow)\n"
    )
    followed = run("inspect", "--follow-external-symlinks", str(home))
    assert followed.returncode == 0
    assert rows(followed.stdout)["USER.md"][0] == "present"


def test_skipped_rows_say_why_in_the_table_and_the_json(home: Path) -> None:
    (home / "SOUL.md").unlink()
    (home / "SOUL.md").mkdir()
    (home / "TOOLS.md").unlink()
    os.mkfifo(home / "TOOLS.md")
    (home / "MEMORY.md").unlink()
    (home / "MEMORY.md").symlink_to("SOUL.md")  # inside the home, but a folder
    result = run("inspect", str(home))
    assert (result.returncode, result.stderr) == (0, "")
    table = rows(result.stdout)
    assert table["SOUL.md"] == ["skipped", "-", "-", "folder"]
    assert table["TOOLS.md"] == ["skipped", "-", "-", "fifo"]
    assert table["MEMORY.md"] == ["skipped", "-", "-", "symlink to a folder"]
    report = json.loads(run("inspect", "--json", str(home)).stdout)
    reasons = {file["name"]: file["reason"] for file in report["files"]}
    assert reasons == {
        **dict.fromkeys(BOOTSTRAP_ORDER),
        "SOUL.md": "folder",
        "TOOLS.md": "fifo",
        "MEMORY.md": "symlink to a folder",
    }
    assert report == inspect_soul(home).to_dict()


def test_inspect_json_marks_the_error_too(home: Path) -> None:
    (home / "IDENTITY.md").unlink()
    (home / "IDENTITY.md").symlink_to("/no/such/file")
    result = run("inspect", "--json", str(home))
    assert result.returncode == 2
    identity = json.loads(result.stdout)["files"][2]
    assert (identity["name"], identity["status"]) == ("IDENTITY.md", "error")
    assert identity["reason"] == f"IDENTITY.md in {home} is a dangling symlink"
    assert result.stderr == f"toolnexus: error: IDENTITY.md in {home} is a dangling symlink\n"


def test_a_home_that_cannot_be_read_at_all_is_still_one_error_line(tmp_path: Path) -> None:
    result = run("inspect", str(tmp_path / "nobody"))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"toolnexus: error: {tmp_path / 'nobody'}: no such persona home\n"


def test_soul_on_a_home_without_bootstrap_files_warns(tmp_path: Path) -> None:
    """The bug: ``toolnexus soul examples`` printed nothing and exited 0, with no hint."""
    (tmp_path / "README.txt").write_text("not a persona")
    result = run("soul", str(tmp_path))
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr == f"toolnexus: warning: no bootstrap file in {tmp_path}\n"
    as_json = run("soul", "--json", str(tmp_path))
    assert (as_json.returncode, json.loads(as_json.stdout)["found"]) == (0, [])
    assert as_json.stderr == result.stderr


def test_check_quiet_silences_warnings_too(home: Path) -> None:
    """The bug: ``check -q`` still printed the truncation warning."""
    (home / "MEMORY.md").write_bytes(b"x" * (MAX_BOOTSTRAP_FILE_BYTES + 10))
    loud = run("check", str(home))
    assert loud.returncode == 0
    assert loud.stderr == (
        f"toolnexus: warning: {home}: MEMORY.md is {MAX_BOOTSTRAP_FILE_BYTES + 10} bytes, over the "
        f"{MAX_BOOTSTRAP_FILE_BYTES}-byte bootstrap cap; truncated\n"
    )
    quiet = run("check", "-q", str(home))
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
