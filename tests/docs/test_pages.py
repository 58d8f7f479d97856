"""The README stays short and in step with the site: its links resolve, its benchmark table is the
Performance page's, and every page of docs/ is in the site's navigation (mkdocs.yml)."""

from __future__ import annotations

import re

from tests.support.snippets import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
MKDOCS = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
PERFORMANCE = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")


def table(text: str, header: str) -> list[str]:
    """The Markdown table whose first line starts with ``header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return lines[start:end]


def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) <= 200


def test_the_readme_carries_the_latest_benchmark_table() -> None:
    """CONTRIBUTING ("Benchmarks"): the table is pasted into both; this keeps them one table."""
    readme_table = table(README, "| Target ")
    assert len(readme_table) >= 20
    assert readme_table == table(PERFORMANCE, "| Target ")


def test_the_readme_links_resolve() -> None:
    links = re.findall(r"\]\((?!https?://|#)([^)#]+)(?:#[^)]*)?\)", README)
    assert len(links) >= 10
    assert [link for link in links if not (ROOT / link).exists()] == []


def test_every_page_is_in_the_navigation_and_every_entry_is_a_page() -> None:
    pages = {path.name for path in (ROOT / "docs").glob("*.md")}
    navigation = set(re.findall(r"^\s+- .+: (\S+\.md)$", MKDOCS, flags=re.MULTILINE))
    assert pages == navigation
