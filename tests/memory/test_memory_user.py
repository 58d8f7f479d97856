"""memory_tool's ``target``: USER.md gets every guarantee MEMORY.md has; ``user=False`` hides it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.homes import OTHER_FILES, Home, make_home
from toolnexus.agents import MAX_BOOTSTRAP_FILE_BYTES, compose_soul, memory_tool, openai_tool
from toolnexus.memory.portable import DESCRIPTION, INPUT_SCHEMA, MEMORY_ONLY_DESCRIPTION, MEMORY_ONLY_SCHEMA

USER_SEED = OTHER_FILES["USER.md"]


@pytest.mark.parametrize("backend", ["local", "memory", "s3"])
def test_target_user_edits_user_md_only(request: pytest.FixtureRequest, backend: str) -> None:
    home: Home = make_home(backend, request)
    tool = home.tool()
    assert tool.tool(command="view", target="user") == USER_SEED.decode()
    assert tool.tool(command="append", target="user", content="- Mira, prefers tea").startswith(
        "ok: note appended"
    )
    assert tool.tool(command="replace", target="user", old="tea", new="green tea").startswith("ok: replaced")
    assert tool.tool(command="remove", target="user", old="content of USER.md\n").startswith("ok: removed")
    assert home.get("USER.md") == b"# USER.md\n\n- Mira, prefers green tea\n"
    assert tool.tool(command="append", target="memory", content="- met Mira").startswith("ok: note appended")
    assert home.memory() == b"- met Mira\n"
    for name, data in OTHER_FILES.items():
        if name != "USER.md":
            assert home.get(name) == data
    assert home.listing() == {*OTHER_FILES, "MEMORY.md"}
    soul = compose_soul(home.location, **home.options)[0]
    assert "- Mira, prefers green tea" in soul
    assert "- met Mira" in soul


def test_errors_name_the_file_they_are_about(request: pytest.FixtureRequest) -> None:
    home = make_home("local", request)
    tool = home.tool()
    assert tool.tool(command="remove", target="user", old="Berlin") == (
        "error: 'old' does not occur in USER.md; call view and copy the text exactly. Nothing was changed."
    )
    room = MAX_BOOTSTRAP_FILE_BYTES - len(USER_SEED)
    assert tool.tool(command="append", target="user", content="x" * room).startswith(
        f"error: refused — USER.md would grow to {MAX_BOOTSTRAP_FILE_BYTES + 1} bytes"
    )
    assert home.get("USER.md") == USER_SEED
    home.put("USER.md", b"\xff\xfe broken")
    assert tool.tool(command="append", target="user", content="x").startswith(
        "error: USER.md contains bytes that are not valid UTF-8"
    )
    assert tool.tool(command="view", target="friend") == (
        "error: target must be one of 'memory', 'user' (got 'friend')."
    )


def test_user_md_is_replaced_atomically_with_its_mode_kept(request: pytest.FixtureRequest) -> None:
    home = make_home("local", request)
    path = Path(home.location) / "USER.md"
    os.chmod(path, 0o640)
    home.tool().tool(command="append", target="user", content="- note")
    assert oct(path.stat().st_mode & 0o777) == "0o640"
    assert sorted(os.listdir(home.location)) == sorted({*OTHER_FILES})  # no temp file left, no MEMORY.md


def test_user_false_restricts_the_tool_to_memory_md(request: pytest.FixtureRequest) -> None:
    home = make_home("local", request)
    tool = memory_tool(home.location, user=False)
    assert "target" not in tool.input_schema["properties"]
    assert tool.input_schema == MEMORY_ONLY_SCHEMA
    assert tool.description.startswith(MEMORY_ONLY_DESCRIPTION + "\nDaily notes: today is ")
    assert openai_tool(tool)["function"]["parameters"] == MEMORY_ONLY_SCHEMA
    assert tool.tool(command="append", target="user", content="x") == (
        "error: this memory tool only edits MEMORY.md; leave 'target' out."
    )
    assert tool.tool(command="append", target="memory", content="- fine").startswith("ok: note appended")
    assert home.get("USER.md") == USER_SEED
    full = memory_tool(home.location)
    assert full.input_schema == INPUT_SCHEMA
    assert full.description.startswith(DESCRIPTION + "\nDaily notes: today is ")
    assert INPUT_SCHEMA["properties"]["target"]["enum"] == ["memory", "user"]
