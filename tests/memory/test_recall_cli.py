"""The memory command as a person runs it (the installed ``toolnexus``): ``search``, ``--file``
before or after the action, and a symlinked folder refused with exit status 1, not a traceback."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.support.cli import EXAMPLE, run_installed


@pytest.fixture
def aster(tmp_path: Path) -> Path:
    home = tmp_path / "aster"
    shutil.copytree(EXAMPLE, home)
    return home


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}


def test_search_and_file_through_the_installed_command(aster: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    before = run_installed(
        "memory", str(aster), "--file", "2026-11-30.md", "append", "Mira lives in Hamburg.", env=env
    )
    assert (before.returncode, before.stderr) == (0, "")
    after = run_installed(
        "memory", str(aster), "append", "Launch moved to May.", "--file", "projects/aster.md", env=env
    )
    assert (after.returncode, after.stderr) == (0, "")
    found = run_installed("memory", str(aster), "search", "where does Mira live", "--json", env=env)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert hits[0] == {
        "path": "memory/2026-11-30.md",
        "start_line": 1,
        "end_line": 1,
        "score": hits[0]["score"],
        "snippet": "Mira lives in Hamburg.",
    }
    none = run_installed("memory", str(aster), "search", "zeppelin", env=env)
    assert (none.returncode, none.stdout) == (1, "")
    assert none.stderr == f"toolnexus: no memory matches 'zeppelin' in {aster}\n"
    assert not (aster / "memory" / "index.sqlite").exists()
    assert list((tmp_path / "cache" / "toolnexus" / "recall").glob("*.sqlite"))  # the index: a cache


def test_a_symlinked_folder_is_a_refusal_not_a_crash(aster: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (aster / "memory").mkdir(exist_ok=True)
    (aster / "memory" / "linked").symlink_to(outside)
    refused = run_installed(
        "memory", str(aster), "--file", "linked/new.md", "append", "x", env=_env(tmp_path)
    )
    assert refused.returncode == 1
    assert "memory/linked is a symlink or a file, not a folder" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert list(outside.iterdir()) == []
