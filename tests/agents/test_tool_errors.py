"""``is_error`` end to end: a tool's reply says whether it is an error (``ToolReply``), the agent
loop carries it, Anthropic's ``tool_result`` blocks get ``is_error: true`` (through the real SDK
against a loopback server), and ``anthropic_tool_result`` builds the block for your own loop."""

from __future__ import annotations

import asyncio
import copy
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support.providers import Calls, Text, provider_server, scripted
from toolnexus.agents import (
    AnthropicModel,
    OpenAIChatModel,
    Tool,
    ToolReply,
    agent_from_dir,
    anthropic_tool_result,
    memory_tool,
)
from toolnexus.runtime.loop import run_loop
from toolnexus.runtime.messages import Message, ModelReply, ToolCall, ToolResult, ToolSpec


def test_a_reply_is_its_text_and_says_whether_it_is_an_error() -> None:
    reply = ToolReply("The path /memories/x.md does not exist", is_error=True)
    assert reply == "The path /memories/x.md does not exist"
    assert isinstance(reply, str)
    assert reply.is_error
    assert type(str(reply)) is str
    assert repr(reply) == "ToolReply('The path /memories/x.md does not exist', is_error=True)"
    for twin in (pickle.loads(pickle.dumps(reply)), copy.deepcopy(reply)):
        assert (twin, twin.is_error) == (reply, True)
    assert not ToolReply("done").is_error
    assert ToolReply.of(reply) is reply
    assert not ToolReply.of("plain").is_error


def test_anthropic_tool_result_from_a_dict_or_an_sdk_block(tmp_path: Path) -> None:
    memory = memory_tool(tmp_path)
    block = {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "memory",
        "input": {"command": "view", "path": "/nope"},
    }
    failed = anthropic_tool_result(block, memory.tool(**block["input"]))
    assert failed == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "Path must start with /memories, got: /nope",
        "is_error": True,
    }
    from anthropic.types import ToolUseBlock  # noqa: PLC0415  (the SDK: only this test needs it)

    sdk_block = ToolUseBlock(
        type="tool_use", id="toolu_2", name="memory", input={"command": "view", "path": "/memories"}
    )
    ok = anthropic_tool_result(sdk_block, memory.tool(**sdk_block.input))
    assert ok["tool_use_id"] == "toolu_2"
    assert "is_error" not in ok  # left out on success, as the SDK's tool runner does
    assert isinstance(ok["content"], str)
    assert type(ok["content"]) is str  # a plain str on the wire
    legacy = anthropic_tool_result(block, "error: something a plain tool said")
    assert legacy["is_error"] is True
    with pytest.raises(TypeError, match="needs a tool_use block with an id"):
        anthropic_tool_result({"type": "tool_use"}, "x")


def test_the_loop_carries_is_error_from_the_tool() -> None:
    def refuse(city: str) -> ToolReply:
        return ToolReply(f"No forecast for {city}.", is_error=True)  # no "error:" prefix needed

    def answer(city: str) -> str:
        return f"sunny in {city}"

    calls = (ToolCall("1", "refuse", {"city": "Atlantis"}), ToolCall("2", "answer", {"city": "Hamburg"}))
    seen: list[Sequence[Message]] = []

    async def model(system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelReply | str:
        seen.append(messages)
        return ModelReply(tool_calls=calls) if len(seen) == 1 else "done"

    tools = [Tool(refuse, "Refuses."), Tool(answer, "Answers.")]
    result = asyncio.run(run_loop(model, "", (), "Weather?", tools))
    results = [message for message in result.messages if isinstance(message, ToolResult)]
    assert [(r.text, r.is_error) for r in results] == [
        ("No forecast for Atlantis.", True),
        ("sunny in Hamburg", False),
    ]


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
def test_memory_errors_reach_the_model_marked(tmp_path: Path, wire: str) -> None:
    home = tmp_path / "aster"
    home.mkdir()
    (home / "SOUL.md").write_text("You are Aster.")
    if wire == "anthropic":
        bad: dict[str, Any] = {"command": "str_replace", "path": "/memories/MEMORY.md", "old_str": "Berlin"}
        good: dict[str, Any] = {
            "command": "create",
            "path": "/memories/projects/aster.md",
            "file_text": "x\n",
        }
    else:
        bad, good = {"command": "remove", "old": "Berlin"}, {"command": "append", "content": "- x"}
    reply = scripted(Calls([("memory", bad), ("memory", good)]), Text("ok"))
    with provider_server(wire, reply) as server:
        if wire == "anthropic":
            model: Any = AnthropicModel("claude-test", base_url=server.base_url, api_key="k", max_retries=0)
        else:
            model = OpenAIChatModel("test-model", base_url=server.base_url, api_key="k", max_retries=0)
        agent_from_dir(home, model=model).run_sync("Remember.")
    messages = server.requests[1].body["messages"]
    if wire == "anthropic":
        blocks = messages[-1]["content"]
        assert [block.get("is_error", False) for block in blocks] == [True, False]
        assert blocks[0]["content"] == (
            "No replacement was performed, old_str `Berlin` did not appear verbatim in /memories/MEMORY.md."
        )
        assert (home / "memory" / "projects" / "aster.md").read_text() == "x\n"
    else:  # Chat Completions has no error flag: the portable tool's text says "error:"
        texts = [message["content"] for message in messages if message["role"] == "tool"]
        assert texts[0].startswith("error: 'old' does not occur in MEMORY.md")
        assert texts[1].startswith("ok: note appended")
