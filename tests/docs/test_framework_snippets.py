"""docs/integrations.md's blocks (marked ``framework``), as written, through each framework's real
package: their ``http://localhost:11434/v1`` is swapped for a loopback OpenAI-compatible server's,
which saves the user's move with the memory tool when told of it and otherwise echoes. Every print
of these blocks claims its line; a block that tells of the move must leave the note in its copy's
USER.md and in the system prompt of every later run, not of the run that saved it."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import pytest

from tests.support.providers import Calls, ProviderRequest, Reply, Text, provider_server
from tests.support.snippets import ROOT, Snippet, claims, snippets

BLOCKS = [s for s in snippets() if s.marker == "framework"]
MOVE = "I'm Mira. I moved to Hamburg last week."
NOTE = "- Mira moved to Hamburg"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(ROOT / "examples" / "aster", tmp_path / "examples" / "aster")
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def respond(request: ProviderRequest) -> Reply:
    said = request.last_user_text
    if said == MOVE and not request.tool_results:
        return Calls([("memory", {"command": "append", "target": "user", "content": NOTE})])
    return Text(f"re: {said}")


def test_every_framework_has_its_block() -> None:
    assert {block.code.split("from toolnexus.integrations.", 1)[1].split()[0] for block in BLOCKS} == {
        "pydantic_ai",
        "openai_agents",
        "langchain",
        "claude_agent_sdk",
    }


@pytest.mark.parametrize("block", BLOCKS, ids=[s.id for s in BLOCKS])
def test_a_framework_block(block: Snippet, workdir: Path) -> None:
    checked, expected = claims(block.code, every_print_claims=False)
    output = io.StringIO()
    with provider_server("openai", respond) as server, contextlib.redirect_stdout(output):
        exec(
            block.compiled(checked.replace("http://localhost:11434/v1", server.base_url)),
            {"__name__": "docs"},
        )
    printed = output.getvalue().splitlines()
    assert printed == (expected or [f"re: {MOVE}", "re: Where do I live now?"])
    assert (workdir / "examples" / "aster" / "USER.md").read_bytes() == (
        ROOT / "examples/aster/USER.md"
    ).read_bytes()
    if MOVE not in block.code:
        assert server.requests == []
        return
    assert (workdir / "personas" / "aster" / "USER.md").read_text().endswith(NOTE + "\n")
    saved = next(i for i, request in enumerate(server.requests) if request.tool_results)
    assert all(NOTE not in (request.system or "") for request in server.requests[: saved + 1])
    assert server.requests[saved + 1 :]
    assert all(NOTE in (request.system or "") for request in server.requests[saved + 1 :])
    assert {request.body["model"] for request in server.requests} == {"llama3.2"}
