"""The code blocks of README.md and docs/*.md, and the claims they make (tests/docs runs them).

Conventions (CONTRIBUTING.md, "Runnable documentation"):

* Every ```python and ```console block is executed; other languages (```text, ```toml …) are not.
* In a python block, ``print(EXPR)  # TEXT`` must print the line TEXT (a TEXT ending in ``:``
  introduces the claim on the comment line right below, ``# error: …``), and a bare
  ``EXPR  # LITERAL`` must equal the Python literal LITERAL. Every top-level ``print`` claims,
  except in provider blocks, whose output the harness knows.
* A console block with ``$ COMMAND`` lines is a transcript: each command runs in bash and must
  print exactly the lines below it (stdout and stderr as one stream). A console block without
  ``$`` lines is a list of commands, each of which must succeed (comment lines are skipped).
* The line right above a fence may carry a marker, ``<!-- snippet: KIND -->`` or
  ``<!-- snippet: not-run: REASON -->``; KIND names how the harness runs it (see ``MARKERS``).
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MARKERS", "PAGES", "ROOT", "Snippet", "claims", "commands", "snippets", "steps"]

ROOT = Path(__file__).resolve().parents[2]
#: Every page whose blocks run: the README and every page of the site (new pages join by themselves).
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Markers the harness knows, and what each means.
MARKERS = {
    "quickstart": "the Quickstart: its composing command runs; its test command is the one .ci/run calls",
    "ollama": "runs against a loopback OpenAI-compatible server standing in for Ollama",
    "anthropic": "runs against a loopback Anthropic server (ANTHROPIC_BASE_URL)",
    "framework": "a framework integration's block, its Ollama URL swapped for a loopback server's",
    "not-run": "not executed; the marker says why (kept few: tests/docs counts them)",
}

_FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>python|console)\n(?P<code>.*?)^(?P=indent)```\s*$",
    flags=re.DOTALL | re.MULTILINE,
)
_MARKER = re.compile(r"^\s*<!-- snippet: (?P<kind>[a-z-]+)(?::\s*(?P<reason>.+?))? -->\s*$")
_CLAIM = re.compile(r"^(?P<code>\S.*?)\s+# (?P<claim>.+)$")


@dataclass(frozen=True)
class Snippet:
    """One fenced block: where it is, its language, its (dedented) code and its marker."""

    page: str  # relative to the repository root, e.g. "docs/cli.md"
    line: int  # 1-based line of the opening fence
    lang: str  # "python" or "console"
    code: str
    marker: str | None = None
    reason: str | None = None

    @property
    def id(self) -> str:
        """``page:line``, readable in a test report."""
        return f"{self.page}:{self.line}"

    @property
    def needs_s3(self) -> bool:
        """Whether the block talks to S3 (the harness then points the AWS configuration at moto)."""
        return "s3" in self.code.lower()

    def compiled(self, code: str | None = None) -> object:
        """``code`` (default: the block's own) compiled so that tracebacks name the page and line."""
        return compile("\n" * self.line + (self.code if code is None else code), self.page, "exec")


def snippets(pages: list[Path] = PAGES) -> list[Snippet]:
    """Every python and console block of ``pages``, in page order."""
    found = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        lines = text.splitlines()
        for fence in _FENCE.finditer(text):
            line = text.count("\n", 0, fence.start()) + 1
            above = _MARKER.match(lines[line - 2]) if line >= 2 else None
            found.append(
                Snippet(
                    page=page.relative_to(ROOT).as_posix(),
                    line=line,
                    lang=fence["lang"],
                    code=textwrap.dedent(fence["code"]),
                    marker=above["kind"] if above else None,
                    reason=above["reason"] if above else None,
                )
            )
    return found


def claims(code: str, *, every_print_claims: bool = True) -> tuple[str, list[str]]:
    """The block with each ``EXPR  # LITERAL`` turned into an assertion, and the lines it must print."""
    lines, printed = [], []
    source = code.splitlines()
    for index, line in enumerate(source):
        match = _CLAIM.match(line)
        if line.startswith("print("):
            assert match or not every_print_claims, f"a print without a claimed output: {line}"
            if match:
                claim = match["claim"]
                if claim.endswith(":"):
                    claim = source[index + 1].removeprefix("# ")
                printed.append(claim)
        elif match:
            try:
                expected = ast.literal_eval(match["claim"])
                ast.parse(match["code"], mode="eval")
            except (ValueError, SyntaxError):
                pass
            else:
                lines.append(f"assert ({match['code']}) == {expected!r}, {match['claim']!r}")
                continue
        lines.append(line)
    return "\n".join(lines), printed


def steps(transcript: str) -> list[tuple[str, str]]:
    """``(command, expected output)`` for each ``$ `` line of a transcript."""
    result: list[tuple[str, str]] = []
    for line in transcript.splitlines(keepends=True):
        if line.startswith("$ "):
            result.append((line[2:].rstrip("\n"), ""))
        else:
            assert result, f"output before the first command: {line!r}"
            command, output = result[-1]
            result[-1] = (command, output + line)
    return result


def commands(block: str) -> list[str]:
    """The command lines of a console block without ``$`` prompts (comments and blanks skipped)."""
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
