"""The README's Python examples: every block compiles, and the local ones run and print what they claim.

A line ``print(EXPR)  # TEXT`` must print TEXT; a bare ``EXPR  # LITERAL`` must equal LITERAL.
Blocks that need remote storage (S3, a bucket that does not exist here) are only compiled; the
memory section's example has its own test (test_memory_readme.py).
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = [textwrap.dedent(block) for block in re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)]
NEEDS_REMOTE = ("s3://", "my-bucket", "aster.zip", "await ", "UPath(", "memory_tool")
CLAIM = re.compile(r"^(?P<code>\S.*?)\s+# (?P<claim>.+)$")


def checked(code: str) -> str:
    """The block with each claimed result turned into an assertion."""
    lines = []
    for line in code.splitlines():
        match = CLAIM.match(line)
        if match and match["code"].startswith("print(") and match["code"].endswith(")"):
            lines.append(f"assert str({match['code'][6:-1]}) == {match['claim']!r}, {match['claim']!r}")
            continue
        if match:
            try:
                expected = ast.literal_eval(match["claim"])
                ast.parse(match["code"], mode="eval")
            except (ValueError, SyntaxError):
                pass
            else:
                lines.append(f"assert ({match['code']}) == {expected!r}")
                continue
        lines.append(line)
    return "\n".join(lines)


def test_the_readme_has_examples() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_every_example_compiles(code: str) -> None:
    compile(code, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


LOCAL = [code for code in BLOCKS if not any(marker in code for marker in NEEDS_REMOTE)]


@pytest.mark.parametrize("code", LOCAL, ids=[f"local{i}" for i in range(len(LOCAL))])
def test_local_examples_run_and_print_what_they_claim(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the examples use paths relative to the repository root
    transformed = checked(code)
    assert "assert " in transformed, "an example that claims nothing proves nothing"
    exec(compile(transformed, "README.md", "exec"), {"__name__": "readme"})
