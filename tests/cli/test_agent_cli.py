"""``toolnexus ask`` and ``toolnexus chat``: the command against loopback providers."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support import cli as support_cli
from tests.support.homes import s3_home
from tests.support.providers import Calls, Failure, ProviderRequest, Reply, Text, provider_server, scripted
from toolnexus.agents import compose_soul


def run(
    *argv: str, stdin: str = "", env: dict[str, str] | None = None, installed: bool = False
) -> subprocess.CompletedProcess[str]:
    """The command with no provider key from the caller's environment, plus ``env``
    (``installed``: the console script in a subprocess, end to end)."""
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    runner = support_cli.run_installed if installed else support_cli.run
    return runner(*argv, stdin=stdin, env={**clean, **(env or {})})


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "aster"
    home.mkdir()
    (home / "SOUL.md").write_text("You are Aster.", encoding="utf-8")
    return home


def test_ask_on_an_openai_compatible_server_without_a_key(home: Path) -> None:
    append = {"command": "append", "content": "- lives in Hamburg"}
    with provider_server("openai", scripted(Calls([("memory", append)]), Text("Noted."))) as server:
        result = run(
            "ask",
            str(home),
            "I live in Hamburg.",
            *("--model", "llama3.2", "--base-url", server.base_url),
            installed=True,
        )
    assert (result.returncode, result.stdout, result.stderr) == (0, "Noted.\n", "")
    first = server.requests[0]
    assert first.system == "## SOUL.md\n\nYou are Aster."
    assert first.body["model"] == "llama3.2"
    assert first.headers["authorization"] == "Bearer unused"
    assert (home / "MEMORY.md").read_text() == "- lives in Hamburg\n"


def test_ask_anthropic_takes_the_key_from_its_usual_variable(home: Path) -> None:
    with provider_server("anthropic", scripted(Text("Hello from Claude."))) as server:
        result = run(
            "ask",
            str(home),
            "Hi",
            "--provider",
            "anthropic",
            "--model",
            "claude-test",
            "--base-url",
            server.base_url,
            env={"ANTHROPIC_API_KEY": "sk-ant-test"},
        )
    assert (result.returncode, result.stdout) == (0, "Hello from Claude.\n"), result.stderr
    [request] = server.requests
    # the SDK sends the key as x-api-key or as a bearer token, depending on its version
    sent = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix(
        "Bearer "
    )
    assert sent == "sk-ant-test"
    breakpoint_after_the_tools = {"cache_control": {"type": "ephemeral"}}
    assert request.tools == [{"name": "memory", "type": "memory_20250818", **breakpoint_after_the_tools}]


def test_chat_keeps_one_soul_per_session_and_new_recomposes(home: Path) -> None:
    def respond(request: ProviderRequest) -> Reply:
        said = request.last_user_text
        if said == "I'm Mira." and not request.tool_results:
            return Calls([("memory", {"command": "append", "target": "user", "content": "- name: Mira"})])
        knows = "Mira" in (request.system or "")
        return Text(f"[{said}] soul knows Mira: {knows}")

    stdin = "I'm Mira.\n\nWho am I?\n/new\nWho am I?\n/exit\nnever sent\n"
    with provider_server("openai", respond) as server:
        result = run("chat", str(home), "--model", "m", "--base-url", server.base_url, stdin=stdin)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "[I'm Mira.] soul knows Mira: False",
        "[Who am I?] soul knows Mira: False",
        "[Who am I?] soul knows Mira: True",
    ]
    assert "new session" in result.stderr
    assert (home / "USER.md").read_text() == "- name: Mira\n"
    assert server.requests[-1].system == compose_soul(home)[0]
    assert len(server.requests) == 4


def test_provider_errors_are_one_line_and_exit_2(home: Path) -> None:
    with provider_server("openai", scripted(Failure(401, "Incorrect API key provided"))) as server:
        result = run("ask", str(home), "Hi", "--model", "m", "--base-url", server.base_url)
    assert result.returncode == 2
    assert result.stdout == ""
    assert (
        result.stderr
        == f"toolnexus: error: openai at {server.base_url}: HTTP 401: Incorrect API key provided\n"
    )


def test_unreachable_provider_is_one_line_and_a_missing_key_names_its_variable(home: Path) -> None:
    with provider_server("anthropic", scripted()) as server:
        url = server.base_url
    ask = ("ask", str(home), "Hi", "--provider", "anthropic", "--model", "m", "--base-url", url)
    ask += ("--max-retries", "0")  # a refused connection fails at once, not after the SDK's backoffs
    unreachable = run(*ask, env={"ANTHROPIC_API_KEY": "sk-ant-test"})  # nothing listens
    assert unreachable.returncode == 2
    assert unreachable.stderr.startswith(f"toolnexus: error: anthropic at {url}: ")
    assert unreachable.stderr.count("\n") == 1
    no_key = run(*ask)  # before anything is sent: the variable to set, not the SDK's argument names
    assert (no_key.returncode, no_key.stdout) == (2, "")
    assert no_key.stderr == (
        f"toolnexus: error: no API key for anthropic: set ANTHROPIC_API_KEY (any value, if the server "
        f"at {url} ignores it)\n"
    )


def test_max_turns_exits_1_and_a_missing_model_exits_2(home: Path) -> None:
    with provider_server("openai", lambda request: Calls([("memory", {"command": "view"})])) as server:
        result = run(
            "ask", str(home), "Loop", "--model", "m", "--base-url", server.base_url, "--max-turns", "2"
        )
    assert result.returncode == 1
    assert result.stderr == "toolnexus: warning: no final answer after 2 turns (--max-turns)\n"
    assert len(server.requests) == 2
    missing = run("ask", str(home), "Hi", env={"TOOLNEXUS_MODEL": ""})
    assert (missing.returncode, missing.stderr) == (
        2,
        "toolnexus: error: no model: pass --model NAME (or set TOOLNEXUS_MODEL)\n",
    )


def test_ask_a_home_on_s3_with_storage_options(new_bucket: Any, s3_options: dict[str, Any]) -> None:
    home = s3_home(new_bucket(), s3_options)
    options = ["-o", f"endpoint_url={s3_options['endpoint_url']}", "-o", f"key={s3_options['key']}"]
    options += ["-o", f"secret={s3_options['secret']}", "-o", "client_kwargs.region_name=us-east-1"]
    append = {"command": "append", "content": "- from the cloud"}
    soul_before = compose_soul(home.location, **home.options)[0]
    with provider_server("openai", scripted(Calls([("memory", append)]), Text("Saved."))) as server:
        result = run(
            "ask", home.location, "Remember.", *options, "--model", "m", "--base-url", server.base_url
        )
    assert (result.returncode, result.stdout) == (0, "Saved.\n"), result.stderr
    assert server.requests[0].system == soul_before
    assert home.memory() == b"- from the cloud\n"


def test_max_retries_is_the_number_of_retries_the_server_sees(home: Path) -> None:
    for retries in (0, 1):
        with provider_server("openai", scripted(*[Failure(500, "overloaded")] * 3)) as server:
            ask = ("ask", str(home), "Hi", "--model", "m", "--base-url", server.base_url)
            result = run(*ask, "--max-retries", str(retries))
        assert result.returncode == 2
        assert result.stderr.startswith(f"toolnexus: error: openai at {server.base_url}: ")
        assert len(server.requests) == 1 + retries


def test_timeout_gives_up_on_a_provider_that_does_not_answer(home: Path) -> None:
    answer = threading.Event()

    def never_in_time(_request: ProviderRequest) -> Reply:
        answer.wait(timeout=120)  # released below, once the command has given up
        return Text("too late")

    with provider_server("openai", never_in_time) as server:
        try:
            limits = ["--max-retries", "0", "--timeout", "0.5"]
            result = run("ask", str(home), "Hi", "--model", "m", "--base-url", server.base_url, *limits)
        finally:
            answer.set()
    assert result.returncode == 2
    assert result.stderr.startswith(f"toolnexus: error: openai at {server.base_url}: ")
    assert "timed out" in result.stderr.lower()
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--max-retries", "-1", "expected a whole number of at least 0, got '-1'"),
        ("--timeout", "0", "expected a positive number of seconds, got '0'"),
        ("--timeout", "soon", "expected a positive number of seconds, got 'soon'"),
    ],
)
def test_model_call_limits_are_checked(home: Path, option: str, value: str, message: str) -> None:
    result = run("ask", str(home), "Hi", "--model", "m", option, value)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == f"toolnexus ask: error: argument {option}: {message}"
