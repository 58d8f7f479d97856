"""agent_from_dir's API without a provider: plain async callables as models, names, sessions,
read-only homes, layers, the missing-SDK error, and the blocking forms."""

from __future__ import annotations

import asyncio
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.files import text_home
from toolnexus.agents import (
    AnthropicModel,
    ModelReply,
    OpenAIChatModel,
    ToolCall,
    Usage,
    agent_from_dir,
    anthropic_tool,
    memory_tool,
)
from toolnexus.models.openai import parse_arguments


def test_the_async_session_is_the_same_conversation(tmp_path: Path) -> None:
    home = text_home(tmp_path)

    async def model(system: str, messages: Any, tools: Any) -> str:
        return f"{len(messages)} messages under {system.splitlines()[-1]}"

    async def talk() -> list[str]:
        agent = agent_from_dir(home, model=model, memory=False)
        async with agent.session() as chat:
            return [(await chat.send("one")).text, (await chat.send("two")).text]

    assert asyncio.run(talk()) == ["1 messages under You are Aster.", "3 messages under You are Aster."]


def test_a_plain_async_callable_is_a_model(tmp_path: Path) -> None:
    seen: list[tuple[str, list[str]]] = []

    async def model(system: str, messages: Any, tools: Any) -> ModelReply:
        seen.append((system, [tool.name for tool in tools]))
        if len(messages) == 1:
            return ModelReply("", (ToolCall("c1", "memory", {"command": "view", "target": "user"}),))
        return ModelReply(f"the tool said: {messages[-1].text}", usage=Usage(1, 2))

    result = agent_from_dir(text_home(tmp_path), model=model).run_sync("What do you know about me?")
    assert (
        result.text == "the tool said: No memories yet (USER.md does not exist). Use append to save a note."
    )
    assert seen == [("## SOUL.md\n\nYou are Aster.", ["memory"])] * 2
    assert result.usage == Usage(1, 2)


def test_names_and_defaults(tmp_path: Path) -> None:
    async def model(system: str, messages: Any, tools: Any) -> str:
        return "ok"

    agent = agent_from_dir(str(text_home(tmp_path)) + "/", model=model)
    assert agent.name == "aster"
    assert "aster" in agent.description
    assert agent.as_tool().name == "aster"
    assert agent.as_tool("helper", "Helps.").description == "Helps."
    with pytest.raises(ValueError, match="two tools are named 'memory'"):
        agent_from_dir(text_home(tmp_path, "other"), model=model, tools=[agent.memory])  # type: ignore[list-item]


def test_a_read_only_home_needs_memory_false(tmp_path: Path) -> None:
    async def model(system: str, messages: Any, tools: Any) -> str:
        return system

    bundle = tmp_path / "aster.zip"

    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("SOUL.md", "You are Aster.")
    with pytest.raises(OSError, match="pass memory=False"):
        agent_from_dir(bundle, model=model)
    agent = agent_from_dir(bundle, model=model, memory=False)
    assert agent.name == "aster"
    assert agent.run_sync("who?").text == "## SOUL.md\n\nYou are Aster."


@pytest.mark.parametrize(
    ("module", "model_class"), [("openai", OpenAIChatModel), ("anthropic", AnthropicModel)]
)
def test_a_missing_sdk_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, model_class: Any
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # what an uninstalled package looks like to import
    with pytest.raises(ImportError, match=rf"pip install 'toolnexus\[{module}\]'"):
        model_class("m")


def test_blocking_forms_refuse_a_running_loop_and_non_tools_are_refused_up_front(tmp_path: Path) -> None:
    async def model(system: str, messages: Any, tools: Any) -> str:
        return "ok"

    agent = agent_from_dir(text_home(tmp_path), model=model, memory=False)

    async def inside() -> None:
        with pytest.raises(RuntimeError, match=r"Agent\.run_sync\(\) blocks.*await its async form"):
            agent.run_sync("hi")
        assert (await agent.run("hi")).text == "ok"

    asyncio.run(inside())
    with pytest.raises(
        TypeError, match=r"is not a tool: it lacks name, description, .*wrap a function in Tool"
    ):
        agent_from_dir(text_home(tmp_path, "other"), model=model, tools=[print])  # type: ignore[list-item]


def test_a_layered_persona_is_named_by_its_top_layer_and_remembers_there(tmp_path: Path) -> None:
    base = text_home(tmp_path, "team", **{"AGENTS.md": "Be brief."})
    top = text_home(tmp_path, "brio")

    async def model(system: str, messages: Any, tools: Any) -> ModelReply | str:
        if len(messages) == 1:
            return ModelReply("", (ToolCall("c1", "memory", {"command": "append", "content": "- note"}),))
        return system

    agent = agent_from_dir([base, top], model=model)
    assert agent.name == "brio"
    assert agent.run_sync("hi").text == "## AGENTS.md\n\nBe brief.\n\n## SOUL.md\n\nYou are Brio."
    assert (top / "MEMORY.md").read_text() == "- note\n"
    assert not (base / "MEMORY.md").exists()


def test_declarations_of_the_memory_tool(tmp_path: Path) -> None:
    memory = memory_tool(text_home(tmp_path))
    assert anthropic_tool(memory) == {"type": "memory_20250818", "name": "memory"}
    custom = anthropic_tool(memory, native_memory=False)
    assert custom == {
        "name": "memory",
        "description": memory.description,
        "input_schema": memory.input_schema,
    }
    assert custom["input_schema"]["properties"]["target"]["enum"] == ["memory", "user"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"command": "view"}', ({"command": "view"}, None)),
        ("", ({}, None)),
        ("[1]", ({}, "error: the arguments must be a JSON object, not list.")),
        ("{oops", ({}, "error: the arguments are not valid JSON")),
    ],
)
def test_tool_call_arguments_the_model_got_wrong_become_text(raw: str, expected: tuple[Any, Any]) -> None:
    arguments, problem = parse_arguments(raw)
    assert arguments == expected[0]
    assert (problem or "").startswith(expected[1] or "")
    assert (problem is None) == (expected[1] is None)
