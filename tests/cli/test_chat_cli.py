"""``ask``/``chat`` as a person meets them — keys, URLs, errors, commands, readline.

The command runs in-process (``chat``'s line editing: installed, on a pseudo-terminal) against
loopback providers speaking the real wire formats.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import cli as support_cli
from tests.support.cli import EXAMPLE, TOOLNEXUS
from tests.support.providers import (
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    Failure,
    ProviderRequest,
    Reply,
    Text,
    provider_server,
)
from tests.support.terminal import Terminal

pytestmark = pytest.mark.slow  # each test starts the installed command (and an SDK) in a subprocess

_KEYS = ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "TOOLNEXUS_MODEL")
CLEAN = {name: value for name, value in os.environ.items() if name not in _KEYS}


def run(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return support_cli.run(*argv, stdin=stdin, env=CLEAN)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A copy of the example (``chat`` may edit its memory)."""
    return Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))


def echo(request: ProviderRequest) -> Reply:
    """Answer ``[what was said]``; a message saying ``fail`` gets an HTTP 400."""
    said = request.last_user_text
    return Failure(400, "the model refused") if said == "fail" else Text(f"[{said}]")


def user_texts(request: ProviderRequest) -> list[str]:
    return [message["content"] for message in request.body["messages"] if message["role"] == "user"]


def test_a_missing_key_names_the_variable_to_set(home: Path) -> None:
    """The bug: ``Could not resolve authentication method. Expected one of api_key, auth_token…``."""
    openai = run("ask", str(home), "Hi", "--model", "m")
    assert (openai.returncode, openai.stdout) == (2, "")
    assert openai.stderr == (
        "toolnexus: error: no API key for openai: set OPENAI_API_KEY "
        "(or pass --base-url for a local server that needs none)\n"
    )
    anthropic = run("chat", str(home), "--model", "m", "--provider", "anthropic")
    assert anthropic.stderr == "toolnexus: error: no API key for anthropic: set ANTHROPIC_API_KEY\n"


def test_a_base_url_without_a_scheme_is_a_usage_error(home: Path) -> None:
    """The bug: ``--base-url localhost:11434`` gave ``Connection error.`` and no hint."""
    result = run("ask", str(home), "Hi", "--model", "m", "--base-url", "localhost:11434")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("usage: toolnexus ask ")
    assert result.stderr.splitlines()[-1] == (
        "toolnexus ask: error: argument --base-url: expected a URL with its scheme, like "
        "http://HOST:PORT/v1, got 'localhost:11434'"
    )


def test_ask_json_is_the_answer_and_its_usage(home: Path) -> None:
    with provider_server("openai", echo) as server:
        result = run("ask", str(home), "Hi", "--model", "m", "--base-url", server.base_url, "--json")
    assert (result.returncode, result.stderr) == (0, "")
    answer = json.loads(result.stdout)
    assert {key: answer[key] for key in ("text", "status", "turns")} == {
        "text": "[Hi]",
        "status": "completed",
        "turns": 1,
    }
    assert (answer["usage"]["input_tokens"], answer["usage"]["output_tokens"]) == (
        INPUT_TOKENS,
        OUTPUT_TOKENS,
    )


def test_chat_survives_a_provider_error_and_knows_its_commands(home: Path) -> None:
    """The bugs: the first provider error ended the chat (exit 2); ``/help`` went to the model."""
    typed = "fail\n/help\nsecond\n/bogus\n//usr\n/reset\nthird\n/exit\nnever sent\n"
    with provider_server("openai", echo) as server:
        argv = ("chat", str(home), "--model", "m", "--base-url", server.base_url, "--max-retries", "0")
        result = run(*argv, stdin=typed)
    assert result.returncode == 2  # a message failed; the chat went on
    assert result.stdout == "[second]\n[/usr]\n[third]\n"
    errors = [line for line in result.stderr.splitlines() if line.startswith("toolnexus: ")]
    assert errors == [
        f"toolnexus: error: openai at {server.base_url}: HTTP 400: the model refused",
        "toolnexus: unknown command /bogus; /help lists them",
        "toolnexus: new session (soul recomposed)",
    ]
    assert "  /reset  start a new session" in result.stderr
    assert [user_texts(request) for request in server.requests] == [
        ["fail"],
        ["second"],  # the failed turn is not kept
        ["second", "/usr"],
        ["third"],  # /reset: a new session
    ]


def test_chat_edits_and_recalls_lines_on_a_terminal(home: Path) -> None:
    """The bug: ``chat`` read stdin directly — no line editing, no history."""
    with provider_server("openai", echo) as server:
        env = {**CLEAN, "TERM": "xterm"}
        terminal = Terminal(
            [str(TOOLNEXUS), "chat", str(home), "--model", "m", "--base-url", server.base_url], env
        )
        terminal.expect(b"aster> ")
        terminal.send(b"helo\x1b[Dl\r")  # a typo fixed: left arrow, then the missing letter
        terminal.expect(b"[hello]")
        terminal.expect(b"aster> ")
        terminal.send(b"\x1b[A\r")  # up arrow: the previous line again
        terminal.expect(b"[hello]")
        terminal.expect(b"aster> ")
        terminal.send(b"/exit\r")
        assert terminal.close() == 0
    assert [request.last_user_text for request in server.requests] == ["hello", "hello"]
