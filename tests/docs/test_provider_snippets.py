"""The documentation's blocks that run a persona against a model, as written, against loopback
providers speaking each wire format (tests/support/providers.py): blocks marked ``ollama`` have
their ``http://localhost:11434/v1`` swapped for the loopback server's; blocks marked ``anthropic``
reach theirs through ANTHROPIC_BASE_URL. The model's answers are the server's, so a block either
claims its prints (``print(x)  # TEXT``) or prints the answers this module expects.
"""

from __future__ import annotations

import contextlib
import datetime
import io
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
from tests.support.snippets import ROOT, Snippet, claims, snippets
from toolnexus.runtime.agent import HEARTBEAT_PROMPT

ALL = snippets()
OLLAMA = [s for s in ALL if s.marker == "ollama"]
ANTHROPIC = [s for s in ALL if s.marker == "anthropic"]
#: What an unclaimed Ollama block prints: the loopback model echoes, and notes the move once.
OLLAMA_OUTPUT = [
    "re: I'm Mira. I moved to Hamburg last week.",
    f"completed 2 {2 * (INPUT_TOKENS + OUTPUT_TOKENS)}",
    "re: What would be a good first walk there?",
    "re: And if it rains?",
    "re: Good morning!",
    "nothing to report",
]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of examples/aster to run in: the blocks' memory edits must not touch the repository."""
    shutil.copytree(ROOT / "examples" / "aster", tmp_path / "examples" / "aster")
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "examples" / "aster"


def run(block: Snippet, code: str) -> list[str]:
    """Run ``code`` (the block, adapted); the lines it printed."""
    checked, _ = claims(code, every_print_claims=False)
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(block.compiled(checked), {"__name__": "docs"})
    return output.getvalue().splitlines()


def test_the_provider_blocks_are_there() -> None:
    assert len(OLLAMA) >= 2
    assert len(ANTHROPIC) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("block", OLLAMA, ids=[s.id for s in OLLAMA])
def test_an_ollama_block(block: Snippet, workdir: Path) -> None:
    def respond(request: ProviderRequest) -> Reply:
        said = request.last_user_text
        if said.startswith("I'm Mira") and not request.tool_results:
            note = {"command": "append", "target": "user", "content": "- Mira moved to Hamburg"}
            return Calls([("memory", note)])
        return Text("HEARTBEAT_OK" if said == HEARTBEAT_PROMPT else f"re: {said}")

    assert "http://localhost:11434/v1" in block.code
    with provider_server("openai", respond) as server:
        printed = run(block, block.code.replace("http://localhost:11434/v1", server.base_url))

    claimed = claims(block.code, every_print_claims=False)[1]
    assert printed == (claimed or OLLAMA_OUTPUT)
    user = workdir.parent.parent / "personas" / "aster" / "USER.md"
    assert user.read_text().endswith("- Mira moved to Hamburg\n")
    assert (workdir / "USER.md").read_bytes() == (ROOT / "examples" / "aster" / "USER.md").read_bytes()
    first_session, later = server.requests[0], server.requests[2:]
    assert "Mira moved to Hamburg" not in (first_session.system or "")
    assert all("- Mira moved to Hamburg" in (request.system or "") for request in later)
    assert {request.body["model"] for request in server.requests} == {"llama3.2"}


@pytest.mark.slow
@pytest.mark.parametrize("block", ANTHROPIC, ids=[s.id for s in ANTHROPIC])
def test_an_anthropic_block(block: Snippet, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def respond(request: ProviderRequest) -> Reply:
        if not request.tools:  # the librarian runs with memory=False and no tools
            return Text(f"Try 'RAG survey' ({request.last_user_text})")
        if not request.tool_results:
            return Calls([("librarian", {"prompt": "one paper on retrieval"}), ("today", {})])
        return Text("Noted: " + " | ".join(sorted(request.tool_results.values())))

    with provider_server("anthropic", respond) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        printed = run(block, block.code)

    today = datetime.date.today().isoformat()
    assert printed == [f"Noted: {today} | Try 'RAG survey' (one paper on retrieval)"]
    first = server.requests[0]
    assert sorted(first.tool_names) == ["librarian", "memory", "today"]
    assert {"type": "memory_20250818", "name": "memory"} in first.tools
    assert {request.body["max_tokens"] for request in server.requests} == {2048}
