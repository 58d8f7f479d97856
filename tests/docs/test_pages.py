"""The README stays short and in step with the site: its links resolve, and every page of docs/ is
in the site's navigation (mkdocs.yml). Its benchmark figures: tests/performance/test_benchmark_harness.py."""

from __future__ import annotations

import re

from tests.support.snippets import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
MKDOCS = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) <= 150


def test_the_readme_links_resolve() -> None:
    links = re.findall(r"\]\((?!https?://|#)([^)#]+)(?:#[^)]*)?\)", README)
    assert len(links) >= 10
    assert [link for link in links if not (ROOT / link).exists()] == []


def test_every_page_is_in_the_navigation_and_every_entry_is_a_page() -> None:
    pages = {path.name for path in (ROOT / "docs").glob("*.md")}
    navigation = set(re.findall(r"^\s+- .+: (\S+\.md)$", MKDOCS, flags=re.MULTILINE))
    assert pages == navigation
