"""``toolnexus ask --json`` and ``-v``: the cache figures of ``Usage`` from the installed command,
against a loopback OpenAI server that models the provider's cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import cli as support_cli
from tests.support.cache_scenario import make_persona, responder
from tests.support.prompt_cache import OpenAICache
from tests.support.providers import provider_server

pytestmark = pytest.mark.slow  # each test starts the installed command (and the SDK) in a subprocess


def summary(usage: dict[str, Any]) -> str:
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    return (
        f"toolnexus: 1 turn: {usage['prompt_tokens']:,} input tokens ({cached:,} read from the cache, "
        f"0 written to it), {usage['completion_tokens']:,} output tokens"
    )


def test_chat_v_and_ask_json_report_what_the_cache_did(tmp_path: Path) -> None:
    home = str(make_persona(tmp_path))
    options = ["--model", "gpt-test", "--no-memory"]
    with provider_server("openai", responder("openai"), OpenAICache()) as server:
        options += ["--base-url", server.base_url]
        chat = support_cli.run("chat", home, *options, "-v", stdin="Hello\nAnd again\n")
        ask = support_cli.run("ask", home, "One more?", *options, "--json", "-v")

    assert chat.returncode == ask.returncode == 0, (chat.stderr, ask.stderr)
    first, second, third = (request.usage for request in server.requests)
    assert chat.stderr.splitlines() == [summary(first), summary(second)]
    assert first["prompt_tokens_details"]["cached_tokens"] == 0
    assert second["prompt_tokens_details"]["cached_tokens"] > 19_000  # the soul, read from the cache
    assert ask.stderr.splitlines() == [summary(third)]
    assert json.loads(ask.stdout) == {
        "text": "Answer to 'One more?'.",
        "status": "completed",
        "turns": 1,
        "usage": {
            "input_tokens": third["prompt_tokens"],
            "output_tokens": third["completion_tokens"],
            "cache_read_tokens": third["prompt_tokens_details"]["cached_tokens"],
            "cache_write_tokens": 0,
            "total_tokens": third["total_tokens"],
        },
    }
    assert third["prompt_tokens_details"]["cached_tokens"] > 19_000  # another process, the same cache
