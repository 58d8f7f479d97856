"""Anthropic's built-in memory commands (memory_20250818) on every backend memory_tool writes:
local disk, memory://, S3 (moto). Only MEMORY.md and USER.md are ever written."""

from __future__ import annotations

import collections
import threading
from typing import Any

import pytest

from tests.support.homes import OTHER_FILES, Home, make_home
from toolnexus.agents import MAX_BOOTSTRAP_FILE_BYTES, MemoryTool, memory_tool

BACKENDS = ["local", "memory", "s3"]
USER_SEED = OTHER_FILES["USER.md"]


@pytest.fixture(params=BACKENDS)
def home(request: pytest.FixtureRequest) -> Home:
    return make_home(str(request.param), request)


def untouched(home: Home) -> None:
    """The five files that are not memory are byte for byte as seeded; no other file appeared."""
    for name, data in OTHER_FILES.items():
        if name != "USER.md":
            assert home.get(name) == data, name
    assert home.listing() <= {*OTHER_FILES, "MEMORY.md"}


def test_the_declaration(home: Home) -> None:
    assert home.tool().anthropic_memory_tool() == {"type": "memory_20250818", "name": "memory"}


def test_view_lists_exactly_the_memory_files(home: Home) -> None:
    tool = home.tool()
    listing = tool.tool(command="view", path="/memories")
    assert listing.splitlines()[1:] == [
        f"{len(USER_SEED)}B\t/memories",
        "0B\t/memories/MEMORY.md",
        f"{len(USER_SEED)}B\t/memories/USER.md",
    ]
    assert tool.tool(command="view", path="/memories/") == listing
    only_memory = memory_tool(home.location, **home.options, user=False)
    assert only_memory.tool(command="view", path="/memories").splitlines()[-1] == "0B\t/memories/MEMORY.md"


def test_create_view_and_view_range(home: Home) -> None:
    tool = home.tool()
    path = "/memories/MEMORY.md"
    assert (
        tool.tool(command="view", path=path)
        == f"{path} is empty. Use create to write it, or insert to add lines."
    )
    created = tool.tool(command="create", path=path, file_text="- one\n- two\n- three\n")
    assert created == f"File created successfully at: {path} (20 of {MAX_BOOTSTRAP_FILE_BYTES} bytes used)."
    assert home.memory() == b"- one\n- two\n- three\n"
    again = tool.tool(command="create", path=path, file_text="- wiped\n")
    assert again.startswith(f"error: {path} already exists and holds notes; view it")
    assert home.memory() == b"- one\n- two\n- three\n"
    assert tool.tool(command="view", path=path) == (
        f"Here's the content of {path} with line numbers:\n     1\t- one\n     2\t- two\n     3\t- three"
    )
    assert tool.tool(command="view", path=path, view_range=[2, -1]).splitlines()[1:] == [
        "     2\t- two",
        "     3\t- three",
    ]
    assert tool.tool(command="view", path=path, view_range=[2, 2]).splitlines()[1:] == ["     2\t- two"]
    for bad in ([0, 1], [3, 2], [1, 4], [1], "1-2"):
        assert tool.tool(command="view", path=path, view_range=bad).startswith("error: view_range must be"), (
            bad
        )
    untouched(home)


def test_str_replace_insert_and_delete(home: Home) -> None:
    tool = home.tool()
    path = "/memories/USER.md"
    replaced = tool.tool(
        command="str_replace", path=path, old_str="content of USER.md", new_str="Mira, in Hamburg"
    )
    assert replaced.startswith("The memory file has been edited (")
    assert home.get("USER.md") == b"# USER.md\n\nMira, in Hamburg\n"
    assert tool.tool(command="str_replace", path=path, old_str="Berlin", new_str="x") == (
        f"error: 'old_str' does not occur in {path}; view the file and copy the text exactly. "
        "Nothing was changed."
    )
    assert "occurs 2 times" in tool.tool(command="str_replace", path=path, old_str="a", new_str="A")
    assert (
        tool.tool(command="str_replace", path=path, old_str="", new_str="x")
        == "error: 'old_str' must not be empty."
    )

    assert tool.tool(command="insert", path=path, insert_line=1, insert_text="- prefers tea\n").startswith(
        f"The file {path} has been edited"
    )
    tool.tool(command="insert", path=path, insert_line=0, insert_text="<!-- top -->")
    tool.tool(command="insert", path=path, insert_line=5, insert_text="- the end")
    assert home.get("USER.md") == b"<!-- top -->\n# USER.md\n- prefers tea\n\nMira, in Hamburg\n- the end\n"
    assert tool.tool(command="insert", path=path, insert_line=7, insert_text="x") == (
        f"error: insert_line must be between 0 and 6 for {path} (got 7)."
    )
    assert tool.tool(command="insert", path=path, insert_line="2", insert_text="x") == (
        "error: insert needs 'insert_line' as an integer (got str)."
    )

    assert tool.tool(command="delete", path=path).startswith(
        f"Successfully deleted {path} (the file is now empty)"
    )
    assert home.get("USER.md") == b""
    assert tool.tool(command="delete", path="/memories/MEMORY.md") == (
        "error: /memories/MEMORY.md does not exist; nothing to delete."
    )
    assert home.memory() is None
    untouched(home)


def test_insert_after_a_last_line_without_a_break_keeps_every_byte(home: Home) -> None:
    home.put("MEMORY.md", b"\xef\xbb\xbf- first\r\n- last")
    home.tool().tool(command="insert", path="/memories/MEMORY.md", insert_line=2, insert_text="- new")
    assert home.memory() == b"\xef\xbb\xbf- first\r\n- last\n- new\n"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            {"command": "rename", "old_path": "/memories/MEMORY.md", "new_path": "/memories/notes.md"},
            "error: rename is not supported",
        ),
        ({"command": "view", "path": "/memories/notes.txt"}, "error: /memories/notes.txt does not exist."),
        (
            {"command": "create", "path": "/memories/a/b.md", "file_text": "x"},
            "error: /memories/a/b.md does not exist.",
        ),
        ({"command": "view", "path": "/memories/../SOUL.md"}, "error: '/memories/../SOUL.md': '.' and '..'"),
        (
            {"command": "create", "path": "/memories/./MEMORY.md", "file_text": "x"},
            "error: '/memories/./MEMORY.md'",
        ),
        ({"command": "view", "path": "/etc/passwd"}, "error: memory paths start with /memories/"),
        ({"command": "view", "path": "/memoriesX/MEMORY.md"}, "error: memory paths start with /memories/"),
        ({"command": "view", "path": "/memories/memory.md"}, "error: /memories/memory.md does not exist."),
        ({"command": "delete", "path": "/memories"}, "error: /memories is the memory directory"),
        ({"command": "create", "path": "/memories/MEMORY.md"}, "error: create needs 'file_text' as a string"),
        (
            {"command": "insert", "path": "/memories/MEMORY.md", "text": "x"},
            "error: insert takes path, insert_line",
        ),
    ],
)
@pytest.mark.parametrize("backend", ["local", "memory"])  # refused before any storage access
def test_mistakes_come_back_as_text_the_model_can_act_on(
    request: pytest.FixtureRequest, backend: str, arguments: dict[str, Any], expected: str
) -> None:
    home = make_home(backend, request)
    before = {name: home.get(name) for name in home.listing()}
    reply = home.tool().tool(**arguments)
    assert reply.startswith(expected), reply
    assert {name: home.get(name) for name in home.listing()} == before


def test_user_false_hides_user_md(home: Home) -> None:
    tool = memory_tool(home.location, **home.options, user=False)
    assert tool.tool(command="view", path="/memories/USER.md").startswith(
        "error: /memories/USER.md does not exist. /memories holds exactly /memories/MEMORY.md"
    )
    assert home.get("USER.md") == USER_SEED


def test_the_cap_holds(home: Home) -> None:
    big = "x" * MAX_BOOTSTRAP_FILE_BYTES
    reply = home.tool().tool(command="create", path="/memories/MEMORY.md", file_text=big + "y")
    assert reply.startswith(f"error: refused — MEMORY.md would grow to {MAX_BOOTSTRAP_FILE_BYTES + 1} bytes")
    assert home.memory() is None


WRITERS, INSERTS = 4, 8


@pytest.mark.slow
@pytest.mark.s3
@pytest.mark.usefixtures("linearizable_moto")
def test_concurrent_native_edits_on_s3_lose_nothing(request: pytest.FixtureRequest) -> None:
    """Each writer has its own client (no shared lock): only compare-and-swap keeps every note."""
    home = make_home("s3", request)
    home.put("MEMORY.md", b"")
    home.put("USER.md", b"")
    start = threading.Barrier(WRITERS)
    failures: list[BaseException] = []

    def write(writer: int) -> None:
        tool: MemoryTool = home.tool()
        start.wait()
        try:
            for index in range(INSERTS):
                path = f"/memories/{'USER' if index % 2 else 'MEMORY'}.md"
                reply = tool.tool(
                    command="insert", path=path, insert_line=0, insert_text=f"note {writer}-{index}"
                )
                assert reply.startswith("The file"), reply
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=write, args=(writer,)) for writer in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[0]
    for name, parity in (("MEMORY.md", 0), ("USER.md", 1)):
        notes = collections.Counter((home.get(name) or b"").decode().splitlines())
        expected = {f"note {w}-{i}" for w in range(WRITERS) for i in range(INSERTS) if i % 2 == parity}
        assert set(notes) == expected, name
        assert set(notes.values()) == {1}, name
    untouched(home)
