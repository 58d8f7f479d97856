"""The README's "Letting a persona remember" example runs as written and prints what it says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _section_code() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Letting a persona remember", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert len(blocks) == 1
    return str(blocks[0])


def test_readme_memory_example_runs_and_prints_what_it_claims() -> None:
    code = _section_code()
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    claimed = [line.split("# ", 1)[1] for line in code.splitlines() if line.startswith("print(")]
    claimed[1] = re.search(r"\n# (error: .*)\n", code).group(1)  # type: ignore[union-attr]
    assert output.getvalue().splitlines() == claimed
