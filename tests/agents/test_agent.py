"""agent_from_dir end to end: the official SDK clients against loopback provider servers that
speak each wire format (tests/support/providers.py) and check what they receive."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.files import text_home
from tests.support.providers import (
    INPUT_TOKENS,
    OUTPUT_TOKENS,
    Calls,
    Failure,
    ProviderRequest,
    ProviderServer,
    Reply,
    Text,
    provider_server,
    scripted,
)
from toolnexus.agents import (
    HEARTBEAT_OK,
    AnthropicModel,
    ModelError,
    OpenAIChatModel,
    Tool,
    Usage,
    agent_from_dir,
    anthropic_tool,
    compose_soul,
    openai_tool,
)
from toolnexus.runtime.agent import HEARTBEAT_PROMPT

WIRES = ["openai", "anthropic"]


@pytest.fixture(params=WIRES)
def wire(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def model_for(wire: str, server: ProviderServer) -> Any:
    if wire == "openai":
        return OpenAIChatModel("test-model", base_url=server.base_url, api_key="test-key", max_retries=0)
    return AnthropicModel("claude-test", base_url=server.base_url, api_key="test-key", max_retries=0)


def remember(wire: str, note: str) -> dict[str, Any]:
    """The memory call each wire's model makes: portable append, or Anthropic's native insert."""
    if wire == "openai":
        return {"command": "append", "content": note}
    return {"command": "insert", "path": "/memories/MEMORY.md", "insert_line": 0, "insert_text": note}


def test_a_run_calls_the_memory_tool_then_answers(tmp_path: Path, wire: str) -> None:
    home = text_home(tmp_path, **{"MEMORY.md": "- likes tea\n"})
    soul_before = compose_soul(home)[0]
    reply = scripted(Calls([("memory", remember(wire, "- moved to Hamburg"))]), Text("Noted, Hamburg."))
    with provider_server(wire, reply) as server:
        result = agent_from_dir(home, model=model_for(wire, server)).run_sync("I moved to Hamburg.")

    assert (result.text, result.status, result.turns) == ("Noted, Hamburg.", "completed", 2)
    assert result.usage == Usage(2 * INPUT_TOKENS, 2 * OUTPUT_TOKENS)
    first, second = server.requests
    assert first.system == second.system == soul_before
    assert first.last_user_text == "I moved to Hamburg."
    declared = first.tools[0]
    if wire == "openai":
        assert declared["function"]["name"] == "memory"
        assert declared["function"]["parameters"]["properties"]["target"]["enum"] == ["memory", "user"]
    else:
        breakpoint_after_the_tools = {"cache_control": {"type": "ephemeral"}}
        assert declared == {"name": "memory", "type": "memory_20250818", **breakpoint_after_the_tools}
    [tool_reply] = second.tool_results.values()
    expected = "bytes used" if wire == "openai" else "The file /memories/MEMORY.md has been edited."
    assert expected in tool_reply, tool_reply
    assert "Hamburg" in (home / "MEMORY.md").read_text()


def test_a_session_keeps_its_soul_and_the_next_one_sees_the_edit(tmp_path: Path, wire: str) -> None:
    home = text_home(tmp_path)
    reply = scripted(
        Calls([("memory", remember(wire, "- the user's name is Mira"))]),
        Text("Nice to meet you, Mira."),
        Text("You are Mira."),
        Text("Hello again, Mira."),
    )
    with provider_server(wire, reply) as server:
        agent = agent_from_dir(home, model=model_for(wire, server))
        with agent.session() as chat:
            assert chat.send("I'm Mira.").text == "Nice to meet you, Mira."
            assert chat.send("Who am I?").text == "You are Mira."
        second = agent.run_sync("Hi!")

    assert second.text == "Hello again, Mira."
    session_one = server.requests[:3]
    assert all("Mira" not in request.system for request in session_one if request.system is not None)
    assert {request.system for request in session_one} == {"## SOUL.md\n\nYou are Aster."}
    # the second message of session one carries the whole conversation so far
    assert len(session_one[2].body["messages"]) > len(session_one[0].body["messages"])
    assert server.requests[3].system == compose_soul(home)[0]
    assert "- the user's name is Mira" in (server.requests[3].system or "")


def test_agent_b_is_a_tool_of_agent_a(tmp_path: Path, wire: str) -> None:
    alice = text_home(tmp_path, "alice")
    bob = text_home(tmp_path, "bob", **{"AGENTS.md": "Answer with numbers."})

    def respond(request: ProviderRequest) -> Reply:
        if "You are Bob." in (request.system or ""):
            return Text(f"Bob says 42 to {request.last_user_text!r}")
        if not request.tool_results:
            return Calls([("bob", {"prompt": "What is the answer?"})])
        return Text("Bob told me: " + "".join(request.tool_results.values()))

    with provider_server(wire, respond) as server:
        model = model_for(wire, server)
        inner = agent_from_dir(bob, model=model, memory=False)
        outer = agent_from_dir(alice, model=model, tools=[inner.as_tool()])
        result = outer.run_sync("Ask Bob.")

    assert result.text == "Bob told me: Bob says 42 to 'What is the answer?'"
    first, inner_request, last = server.requests
    assert sorted(first.tool_names) == ["bob", "memory"]
    assert first.system == compose_soul(alice)[0]
    assert inner_request.system == compose_soul(bob)[0]
    assert inner_request.tool_names == []
    assert last.system == first.system
    bob_tool = inner.as_tool()
    assert openai_tool(bob_tool)["function"]["parameters"]["required"] == ["prompt"]
    assert anthropic_tool(bob_tool)["name"] == "bob"


def test_tool_calls_of_one_turn_run_concurrently(tmp_path: Path, wire: str) -> None:
    """Each tool waits until the other has started: run one after the other, both would time out."""
    barrier: list[asyncio.Barrier] = []

    async def meet(side: str) -> str:
        if not barrier:
            barrier.append(asyncio.Barrier(2))
        await asyncio.wait_for(barrier[0].wait(), timeout=30)  # bounds a hang; never reached when parallel
        return f"{side} met"

    async def left() -> str:
        return await meet("left")

    async def right() -> str:
        return await meet("right")

    tools = [Tool(left, "Meet on the left."), Tool(right, "Meet on the right.")]
    reply = scripted(Calls([("left", {}), ("right", {})]), Text("both met"))
    with provider_server(wire, reply) as server:
        agent = agent_from_dir(text_home(tmp_path), model=model_for(wire, server), memory=False, tools=tools)
        result = agent.run_sync("Meet.")

    assert result.text == "both met"
    assert sorted(server.requests[1].tool_results.values()) == ["left met", "right met"]


def test_a_tool_that_raises_becomes_an_error_the_model_sees(tmp_path: Path, wire: str) -> None:
    def explode() -> str:
        raise ValueError("the disk is on fire")

    reply = scripted(Calls([("explode", {}), ("nosuch", {})]), Text("I could not do it."))
    with provider_server(wire, reply) as server:
        tools = [Tool(explode, "Explodes.")]
        agent = agent_from_dir(text_home(tmp_path), model=model_for(wire, server), memory=False, tools=tools)
        result = agent.run_sync("Try.")

    assert result.text == "I could not do it."
    texts = sorted(server.requests[1].tool_results.values())
    assert texts == [
        "error: the tool 'explode' failed: ValueError: the disk is on fire",
        "error: there is no tool named 'nosuch' (tools: explode).",
    ]
    if wire == "anthropic":
        blocks = server.requests[1].body["messages"][-1]["content"]
        assert all(block["is_error"] for block in blocks)


def test_max_turns_ends_the_run_with_a_clear_status(tmp_path: Path, wire: str) -> None:
    view = {"command": "view"} if wire == "openai" else {"command": "view", "path": "/memories"}
    with provider_server(wire, lambda request: Calls([("memory", view)], text="thinking")) as server:
        agent = agent_from_dir(text_home(tmp_path), model=model_for(wire, server), max_turns=3)
        result = agent.run_sync("Loop forever.")

    assert (result.status, result.turns, result.completed, result.text) == ("max_turns", 3, False, "thinking")
    assert len(server.requests) == 3
    assert result.usage == Usage(3 * INPUT_TOKENS, 3 * OUTPUT_TOKENS)


@pytest.mark.parametrize(
    ("answer", "expected"), [(f"  {HEARTBEAT_OK}\n", None), ("Mail: 2 letters.", "Mail: 2 letters.")]
)
def test_heartbeat(tmp_path: Path, wire: str, answer: str, expected: str | None) -> None:
    home = text_home(tmp_path, **{"HEARTBEAT.md": "Check the mailbox."})
    with provider_server(wire, scripted(Text(answer))) as server:
        assert agent_from_dir(home, model=model_for(wire, server)).heartbeat_sync() == expected
    [request] = server.requests
    assert request.last_user_text == HEARTBEAT_PROMPT
    assert "Check the mailbox." in (request.system or "")


def test_provider_errors_are_one_line_model_errors(tmp_path: Path, wire: str) -> None:
    with provider_server(wire, scripted(Failure(401, "invalid x-api-key"))) as server:
        agent = agent_from_dir(text_home(tmp_path), model=model_for(wire, server))
        with pytest.raises(
            ModelError, match=r"^\w+ at http://127\.0\.0\.1:\d+\S*: HTTP 401: invalid x-api-key$"
        ):
            agent.run_sync("Hello?")
