"""The README's "Running a persona" examples run as written, against loopback providers
(the Ollama URL swapped for the loopback server's; Anthropic's through ANTHROPIC_BASE_URL)."""

from __future__ import annotations

import datetime
import re
import shutil
from pathlib import Path

import pytest

from tests.support.providers import (
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    Calls,
    ProviderRequest,
    Reply,
    Text,
    provider_server,
)
from toolnexus.runtime.agent import HEARTBEAT_PROMPT

ROOT = Path(__file__).resolve().parent.parent
SECTION = (
    (ROOT / "README.md")
    .read_text(encoding="utf-8")
    .split("## Running a persona\n", 1)[1]
    .split("\n## ", 1)[0]
)
OLLAMA, ANTHROPIC = re.findall(r"```python\n(.*?)```", SECTION, flags=re.DOTALL)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of examples/aster to run in: the examples' memory edits must not touch the repository."""
    shutil.copytree(ROOT / "examples" / "aster", tmp_path / "examples" / "aster")
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "examples" / "aster"


@pytest.mark.slow
def test_the_ollama_example(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def respond(request: ProviderRequest) -> Reply:
        said = request.last_user_text
        if said.startswith("I'm Mira") and not request.tool_results:
            note = {"command": "append", "target": "user", "content": "- Mira moved to Hamburg"}
            return Calls([("memory", note)])
        return Text("HEARTBEAT_OK" if said == HEARTBEAT_PROMPT else f"re: {said}")

    with provider_server("openai", respond) as server:
        code = OLLAMA.replace("http://localhost:11434/v1", server.base_url)
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})

    assert capsys.readouterr().out.splitlines() == [
        "re: I'm Mira. I moved to Hamburg last week.",
        f"completed 2 {2 * (INPUT_TOKENS + OUTPUT_TOKENS)}",
        "re: What would be a good first walk there?",
        "re: And if it rains?",
        "re: Good morning!",
        "nothing to report",
    ]
    assert (
        (workdir.parent.parent / "personas" / "aster" / "USER.md")
        .read_text()
        .endswith("- Mira moved to Hamburg\n")
    )
    assert (workdir / "USER.md").read_bytes() == (ROOT / "examples" / "aster" / "USER.md").read_bytes()
    first_session, later = server.requests[0], server.requests[2:]
    assert "Mira moved to Hamburg" not in (first_session.system or "")
    assert all("- Mira moved to Hamburg" in (request.system or "") for request in later)
    assert {request.body["model"] for request in server.requests} == {"llama3.2"}


@pytest.mark.slow
def test_the_anthropic_example(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def respond(request: ProviderRequest) -> Reply:
        if not request.tools:  # the librarian runs with memory=False and no tools
            return Text(f"Try 'RAG survey' ({request.last_user_text})")
        if not request.tool_results:
            return Calls([("librarian", {"prompt": "one paper on retrieval"}), ("today", {})])
        return Text("Noted: " + " | ".join(sorted(request.tool_results.values())))

    with provider_server("anthropic", respond) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        exec(compile(ANTHROPIC, "README.md", "exec"), {"__name__": "readme"})

    today = datetime.date.today().isoformat()
    assert capsys.readouterr().out == f"Noted: {today} | Try 'RAG survey' (one paper on retrieval)\n"
    first = server.requests[0]
    assert sorted(first.tool_names) == ["librarian", "memory", "today"]
    assert {"type": "memory_20250818", "name": "memory"} in first.tools
    assert {request.body["max_tokens"] for request in server.requests} == {2048}
