"""Persona homes for the framework integrations' tests: a copy of examples/aster, the same with a
skill or with a daily note, and its bundle (read-only); the search index goes to a scratch folder.
The frameworks are imported by the tests themselves, so collecting this folder costs none of their
import time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.integrations.personas import DAILY, DAILY_FILE, SKILL
from tests.support.snippets import ROOT
from toolnexus.agents import write_bundle


@pytest.fixture(autouse=True)
def _index_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``memory_search``'s index goes under the user's cache folder: a scratch one here."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "examples" / "aster", tmp_path / "aster")
    return tmp_path / "aster"


@pytest.fixture
def skilled(home: Path) -> Path:
    (home / "skills" / "brew").mkdir(parents=True)
    (home / "skills" / "brew" / "SKILL.md").write_bytes(SKILL)
    return home


@pytest.fixture
def noted(home: Path) -> Path:
    """The home with today's daily note (today by :data:`~tests.integrations.personas.NOON`)."""
    (home / "memory").mkdir()
    (home / DAILY_FILE).write_text(DAILY + "\n")
    return home


@pytest.fixture
def bundle(home: Path, tmp_path: Path) -> Path:
    write_bundle(home, tmp_path / "aster.zip")
    return tmp_path / "aster.zip"
