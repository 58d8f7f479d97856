"""Anthropic's built-in memory commands (memory_20250818) on every backend memory_tool writes:
local disk, memory://, S3 (moto). The replies are the reference's (test_memory_reference.py runs
them side by side); here: MEMORY.md and USER.md on each store, their rules, and the bounds."""

from __future__ import annotations

import collections
import threading
from typing import Any

import pytest

from tests.support.homes import OTHER_FILES, Home, make_home
from toolnexus.agents import MAX_BOOTSTRAP_FILE_BYTES, MemoryTool, anthropic_tool, memory_tool

BACKENDS = ["local", "memory", "s3"]
USER_SEED = OTHER_FILES["USER.md"]
M = "/memories/MEMORY.md"
HEADER = f"Here's the content of {M} with line numbers:"


@pytest.fixture(params=BACKENDS)
def home(request: pytest.FixtureRequest) -> Home:
    return make_home(str(request.param), request)


def untouched(home: Home) -> None:
    """The five files that are not memory are byte for byte as seeded; no other file appeared."""
    for name, data in OTHER_FILES.items():
        if name != "USER.md":
            assert home.get(name) == data, name
    assert set(home.tree()) <= {*OTHER_FILES, "MEMORY.md"}


def test_the_declaration(home: Home) -> None:
    assert anthropic_tool(home.tool()) == {"type": "memory_20250818", "name": "memory"}


def test_view_lists_the_memory_files_in_the_reference_format(home: Home) -> None:
    tool = home.tool()
    listing = tool.tool(command="view", path="/memories")
    assert not listing.is_error
    assert listing.splitlines() == [
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:",
        f"{len(USER_SEED)}B\t/memories",
        "0B\t/memories/MEMORY.md",
        f"{len(USER_SEED)}B\t/memories/USER.md",
    ]
    home.put("MEMORY.md", b"x" * 1536)
    assert tool.tool(command="view", path="/memories").splitlines()[2] == "1.5K\t/memories/MEMORY.md"
    only_memory = memory_tool(home.location, **home.options, user=False)
    assert only_memory.tool(command="view", path="/memories").splitlines()[-1] == "1.5K\t/memories/MEMORY.md"


def test_create_view_and_a_lenient_view_range(home: Home) -> None:
    tool = home.tool()
    assert tool.tool(command="view", path=M) == f"{HEADER}\n     1\t"  # absent: empty, as listed
    created = tool.tool(command="create", path=M, file_text="- one\n- two\n- three\n")
    assert (created, created.is_error) == (f"File created successfully at: {M}", False)
    assert home.memory() == b"- one\n- two\n- three\n"
    again = tool.tool(command="create", path=M, file_text="- wiped\n")
    assert again.is_error
    assert again.splitlines() == [
        f"File {M} already exists",
        "It holds notes: view it, then edit it with str_replace or insert.",
    ]
    assert home.memory() == b"- one\n- two\n- three\n"
    numbered = ["     1\t- one", "     2\t- two", "     3\t- three", "     4\t"]
    assert tool.tool(command="view", path=M) == "\n".join([HEADER, *numbered])
    for view_range, shown in (
        ([2, -1], numbered[1:]),
        ([2, 2], numbered[1:2]),
        ([0, 2], numbered[:2]),  # first below 1: from the top
        ([2, 99], numbered[1:]),  # last past the end: to the end
        ([2], numbered),  # not a pair: the whole file, as the reference
        ([3, 2], []),
    ):
        reply = tool.tool(command="view", path=M, view_range=view_range)
        assert reply == "\n".join([HEADER, *shown]) if shown else reply == f"{HEADER}\n", view_range
    past = tool.tool(command="view", path=M, view_range=[5, 9])
    assert past.is_error
    assert past == (
        "Invalid `view_range` parameter: [5, 9]. Its first element `5` should be within the range "
        "of lines of the file: [1, 4]."
    )
    assert tool.tool(command="view", path=M, view_range="1-2").startswith("Invalid `view_range` parameter")
    untouched(home)


def test_str_replace_shows_the_changed_lines_and_new_str_is_optional(home: Home) -> None:
    tool = home.tool()
    path = "/memories/USER.md"
    replaced = tool.tool(command="str_replace", path=path, old_str="content of USER.md", new_str="Mira")
    assert replaced.splitlines() == [
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):",
        "     1\t# USER.md",
        "     2\t",
        "     3\tMira",
        "     4\t",
    ]
    assert home.get("USER.md") == b"# USER.md\n\nMira\n"
    missing = tool.tool(command="str_replace", path=path, old_str="Berlin", new_str="x")
    assert (missing, missing.is_error) == (
        f"No replacement was performed, old_str `Berlin` did not appear verbatim in {path}.",
        True,
    )
    several = tool.tool(command="str_replace", path=path, old_str="\n", new_str="")
    assert several == (
        "No replacement was performed. Multiple occurrences of old_str `\n` in lines: 1, 2, 3. "
        "Please ensure it is unique"
    )
    tool.tool(command="str_replace", path=path, old_str="\n\n")  # no new_str: old_str goes
    assert home.get("USER.md") == b"# USER.mdMira\n"
    untouched(home)


def test_insert_as_the_reference_and_its_range_error(home: Home) -> None:
    tool = home.tool()
    path = "/memories/USER.md"
    done = tool.tool(command="insert", path=path, insert_line=1, insert_text="- prefers tea\n")
    assert (done, done.is_error) == (f"The file {path} has been edited.", False)
    tool.tool(command="insert", path=path, insert_line=0, insert_text="<!-- top -->")
    tool.tool(command="insert", path=path, insert_line=5, insert_text="- the end")
    assert home.get("USER.md") == b"<!-- top -->\n# USER.md\n- prefers tea\n\ncontent of USER.md\n- the end\n"
    out_of_range = tool.tool(command="insert", path=path, insert_line=7, insert_text="x")
    assert (out_of_range, out_of_range.is_error) == (
        "Invalid `insert_line` parameter: 7. It should be within the range [0, 6].",
        True,
    )
    assert tool.tool(command="insert", path=path, insert_line="2", insert_text="x") == (
        "insert needs 'insert_line' as an integer (got str)."
    )
    untouched(home)


def test_delete_empties_memory_md_and_leaves_an_absent_one_absent(home: Home) -> None:
    tool = home.tool()
    path = "/memories/USER.md"
    deleted = tool.tool(command="delete", path=path)
    assert deleted.splitlines() == [
        f"Successfully deleted {path}",
        "USER.md stays in /memories, now empty: it is part of your memory.",
    ]
    assert home.get("USER.md") == b""
    assert tool.tool(command="delete", path=path) == f"Successfully deleted {path}"
    quiet = tool.tool(command="delete", path=M)  # absent, listed as 0B: deleted quietly
    assert (quiet, quiet.is_error) == (f"Successfully deleted {M}", False)
    assert home.memory() is None
    refused = tool.tool(command="rename", old_path=path, new_path="/memories/people.md")
    assert refused.is_error
    assert refused.startswith(f"Cannot rename {path}: USER.md keeps its name")
    untouched(home)


def test_insert_after_a_last_line_without_a_break_keeps_every_byte(home: Home) -> None:
    home.put("MEMORY.md", b"\xef\xbb\xbf- first\r\n- last")
    home.tool().tool(command="insert", path=M, insert_line=2, insert_text="- new")
    assert home.memory() == b"\xef\xbb\xbf- first\r\n- last\n- new\n"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"command": "view", "path": "/memories/notes.txt"}, "The path /memories/notes.txt does not exist."),
        ({"command": "view", "path": "/memories/../SOUL.md"}, "Path /memories/../SOUL.md would escape"),
        (
            {"command": "create", "path": "/memories/./MEMORY.md", "file_text": "x"},
            "Path /memories/./MEMORY.md is not",
        ),
        ({"command": "view", "path": "/etc/passwd"}, "Path must start with /memories, got: /etc/passwd"),
        (
            {"command": "view", "path": "/memoriesX/MEMORY.md"},
            "The path /memoriesX/MEMORY.md does not exist.",
        ),
        ({"command": "delete", "path": "/memories"}, "Cannot delete the /memories directory itself"),
        ({"command": "create", "path": "/memories", "file_text": "x"}, "File /memories already exists"),
        (
            {"command": "insert", "path": "/memories", "insert_line": 0, "insert_text": "x"},
            "The path /memories is not a file.",
        ),
        (
            {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"},
            "Cannot rename the /memories",
        ),
        ({"command": "create", "path": "/memories/MEMORY.md"}, "create needs 'file_text' as a string"),
        ({"command": "insert", "path": "/memories/MEMORY.md", "text": "x"}, "insert takes path, insert_line"),
        ({"command": "move", "path": "/memories/MEMORY.md"}, "The command must be one of view, create"),
    ],
)
@pytest.mark.parametrize("backend", ["local", "memory"])  # refused before any write
def test_mistakes_come_back_as_errors_the_model_can_act_on(
    request: pytest.FixtureRequest, backend: str, arguments: dict[str, Any], expected: str
) -> None:
    home = make_home(backend, request)
    before = home.tree()
    reply = home.tool().tool(**arguments)
    assert reply.startswith(expected), reply
    assert reply.is_error
    assert home.tree() == before


def test_user_false_hides_user_md(home: Home) -> None:
    tool = memory_tool(home.location, **home.options, user=False)
    path = "/memories/USER.md"
    assert (
        tool.tool(command="view", path=path)
        == f"The path {path} does not exist. Please provide a valid path."
    )
    assert tool.tool(command="create", path=path, file_text="x").startswith(
        f"Cannot create {path}: USER.md is not part of this memory"
    )
    assert tool.tool(command="delete", path=path) == f"The path {path} does not exist"
    assert home.get("USER.md") == USER_SEED
    untouched(home)


def test_the_cap_holds_and_the_advice_names_this_tools_commands(home: Home) -> None:
    big = "x" * MAX_BOOTSTRAP_FILE_BYTES
    reply = home.tool().tool(command="create", path=M, file_text=big + "y")
    assert reply.is_error
    assert reply.startswith(f"refused — {M} would grow to {MAX_BOOTSTRAP_FILE_BYTES + 1} bytes")
    assert "with str_replace" in reply
    assert " replace," not in reply  # the portable tool's commands
    assert "remove" not in reply
    assert home.memory() is None


def test_a_long_view_is_cut_and_says_how_to_page(home: Home) -> None:
    home.put("MEMORY.md", "".join(f"note {n:04}\n" for n in range(1, 3001)).encode())
    whole = home.tool().tool(command="view", path=M)
    lines = whole.splitlines()
    assert len("\n".join(lines[1:-1])) <= 16_000  # the numbered lines; the header and the last line add ~160
    assert lines[-1] == (
        "[cut at 16000 characters: lines 1-941 of 1-3001 are shown; "
        "view the rest with view_range [942, 3001]]"
    )
    assert lines[-2] == "   941\tnote 0941"
    small = memory_tool(home.location, **home.options, max_view_chars=100)
    paged = small.tool(command="view", path=M, view_range=[1017, 3001]).splitlines()
    assert paged[1:] == [
        "  1017\tnote 1017",
        "  1018\tnote 1018",
        "  1019\tnote 1019",
        "  1020\tnote 1020",
        "  1021\tnote 1021",
        "[cut at 100 characters: lines 1017-1021 of 1017-3001 are shown; "
        "view the rest with view_range [1022, 3001]]",
    ]
    home.put("MEMORY.md", b"y" * 500)
    assert small.tool(command="view", path=M).splitlines()[-1] == (
        "[cut at 100 characters: line 1 is longer than 100 characters; its start is shown]"
    )


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
