"""Persona homes for the framework integrations' tests: a copy of examples/aster, the same with a
skill, and its bundle (read-only). The frameworks are imported by the tests themselves, so
collecting this folder costs none of their import time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.integrations.personas import SKILL
from tests.support.snippets import ROOT
from toolnexus.agents import write_bundle


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
def bundle(home: Path, tmp_path: Path) -> Path:
    write_bundle(home, tmp_path / "aster.zip")
    return tmp_path / "aster.zip"
