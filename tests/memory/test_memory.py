"""memory_tool: the commands, the model-facing errors, the cap, UTF-8, only-MEMORY.md, snapshots,
and which locations are refused at creation — on local, memory:// and S3 (moto) homes."""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import fsspec
import pytest

from tests.support.files import DictSource
from tests.support.homes import OTHER_FILES, Home, make_home
from toolnexus import agents
from toolnexus.agents import (
    MAX_BOOTSTRAP_FILE_BYTES,
    BootstrapError,
    MemoryTool,
    anthropic_tool,
    memory_tool,
    openai_tool,
)
from toolnexus.memory.portable import DESCRIPTION, INPUT_SCHEMA, daily_description

CAP = MAX_BOOTSTRAP_FILE_BYTES


@pytest.fixture(params=["local", "memory", "s3"])
def home(request: pytest.FixtureRequest) -> Home:
    return make_home(request.param, request)


def test_exported_from_agents() -> None:
    assert agents.memory_tool is memory_tool
    assert agents.MemoryTool is MemoryTool
    assert {"memory_tool", "MemoryTool"} <= set(agents.__all__)


def test_tool_definitions_for_both_tool_calling_formats(tmp_path: Path) -> None:
    tool = memory_tool(tmp_path, clock=lambda: datetime(2026, 12, 1, 23, 30, tzinfo=UTC))
    description = DESCRIPTION + "\n" + daily_description("2026-12-01", "UTC")  # today's date, told
    assert tool.name == "memory"
    for command in ("view", "append", "replace", "remove"):
        assert f"- {command}" in tool.description
    assert tool.input_schema == INPUT_SCHEMA
    assert tool.input_schema["properties"]["command"]["enum"] == ["view", "append", "replace", "remove"]
    assert tool.input_schema["required"] == ["command"]
    assert openai_tool(tool) == {
        "type": "function",
        "function": {"name": "memory", "description": description, "parameters": INPUT_SCHEMA},
    }
    anthropic = {"name": "memory", "description": description, "input_schema": INPUT_SCHEMA}
    assert anthropic_tool(tool, native_memory=False) == anthropic
    anthropic_tool(tool, native_memory=False)["input_schema"]["properties"].clear()  # callers get copies
    assert tool.input_schema == INPUT_SCHEMA


def test_view_without_memory(home: Home) -> None:
    tool = home.tool()
    assert tool.tool(command="view") == (
        "No memories yet (MEMORY.md does not exist). Use append to save a note."
    )
    home.put("MEMORY.md", b"")
    assert tool.tool(command="view") == "No memories yet (MEMORY.md is empty). Use append to save a note."


def test_append_view_replace_remove(home: Home) -> None:
    tool = home.tool()
    assert tool.tool(command="append", content="prefers metric units") == (
        "ok: note appended (21 of 2097152 bytes used)."
    )
    assert tool.tool(command="append", content="last project: rag_go\n\n") == (
        "ok: note appended (42 of 2097152 bytes used)."
    )
    assert home.memory() == b"prefers metric units\nlast project: rag_go\n"
    assert tool.tool(command="view") == "prefers metric units\nlast project: rag_go\n"
    assert tool.tool(command="replace", old="rag_go", new="toolnexus").startswith("ok: replaced")
    assert home.memory() == b"prefers metric units\nlast project: toolnexus\n"
    assert tool.tool(command="remove", old="prefers metric units").startswith("ok: removed")
    assert home.memory() == b"last project: toolnexus\n"  # a whole line goes with its line break


def test_append_starts_a_new_line_and_keeps_multiline_notes(home: Home) -> None:
    home.put("MEMORY.md", b"no final newline")
    home.tool().tool(command="append", content="line one\nline two")
    assert home.memory() == b"no final newline\nline one\nline two\n"


def test_remove_part_of_a_line_keeps_the_rest(home: Home) -> None:
    home.put("MEMORY.md", b"likes tea, hates coffee\n")
    home.tool().tool(command="remove", old=", hates coffee")
    assert home.memory() == b"likes tea\n"


def test_bytes_outside_the_edit_are_kept_exactly(home: Home) -> None:
    before = "\ufeff# Memory\r\n\r\n- café ☕  \r\n- likes tea\t\n- 𝄞 music\n\n\n".encode()
    home.put("MEMORY.md", before)
    home.tool().tool(command="replace", old="likes tea", new="likes green tea")
    assert home.memory() == before.replace(b"likes tea", b"likes green tea")


MISTAKES: Sequence[tuple[dict[str, Any], str]] = [
    ({}, "error: command must be one of view, append, replace, remove (got None)."),
    ({"command": "forget"}, "error: command must be one of view, append, replace, remove (got 'forget')."),
    ({"command": 3}, "error: command must be one of view, append, replace, remove (got 3)."),
    ({"command": "append"}, "error: append needs 'content' as a string ('content' is missing)."),
    (
        {"command": "append", "content": 7},
        ("error: append needs 'content' as a string ('content' is int, not a string)."),
    ),
    ({"command": "append", "content": "  \n"}, "error: 'content' must not be empty."),
    ({"command": "replace", "old": "tea"}, "error: replace needs 'new' as a string ('new' is missing)."),
    ({"command": "remove", "old": ""}, "error: 'old' must not be empty."),
    (
        {"command": "remove", "old": ["tea"]},
        ("error: remove needs 'old' as a string ('old' is list, not a string)."),
    ),
    ({"command": "view", "text": "x"}, "error: unknown field 'text'; view takes no other fields."),
    (
        {"command": "append", "content": "x", "old": "tea"},
        ("error: append takes 'content', not 'old'; leave 'old' out."),
    ),
    (
        {"command": "remove", "old": "coffee"},
        (
            "error: 'old' does not occur in MEMORY.md; call view and copy the text exactly. "
            "Nothing was changed."
        ),
    ),
    (
        {"command": "replace", "old": "tea", "new": "x"},
        (
            "error: 'old' occurs 2 times in MEMORY.md; include more of the surrounding text so it occurs "
            "exactly once. Nothing was changed."
        ),
    ),
]


@pytest.mark.parametrize(("arguments", "expected"), MISTAKES)
def test_model_mistakes_come_back_as_error_text(home: Home, arguments: dict[str, Any], expected: str) -> None:
    home.put("MEMORY.md", b"likes tea\nmore tea\n")
    assert home.tool().tool(**arguments) == expected
    assert home.memory() == b"likes tea\nmore tea\n"


def test_unused_fields_sent_as_null_are_ignored(tmp_path: Path) -> None:
    tool = memory_tool(tmp_path)
    assert tool.tool(command="append", content="x", old=None, new=None).startswith("ok:")
    assert tool.tool(command="view", content=None, old=None, new=None) == "x\n"


def test_a_field_named_self_is_just_an_unknown_field(tmp_path: Path) -> None:
    assert memory_tool(tmp_path).tool(**{"command": "view", "self": 1}) == (
        "error: unknown field 'self'; view takes no other fields."
    )


def test_cap_refuses_growth_past_the_limit(home: Home) -> None:
    tool = home.tool()
    home.put("MEMORY.md", b"a" * (CAP - 10) + b"\n")  # 9 bytes of room left
    refused = tool.tool(command="append", content="123456789")  # needs 10 with its newline
    assert refused == (
        "error: refused — MEMORY.md would grow to 2097153 bytes, over its 2097152-byte limit. Condense "
        "first: merge or shorten older notes with replace, drop stale ones with remove, then try again "
        "with a shorter note."
    )
    assert home.memory() == b"a" * (CAP - 10) + b"\n"
    ok = tool.tool(command="append", content="12345678")
    assert ok == "ok: note appended (2097152 of 2097152 bytes used)."
    assert len(home.memory() or b"") == CAP
    soul, _ = home.soul()
    assert "[truncated" not in soul  # the composer never has to cut what the tool wrote


def test_a_file_already_over_the_cap_is_not_edited(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_bytes(b"x" * (CAP + 5))
    tool = memory_tool(tmp_path)
    assert tool.tool(command="remove", old="xx").startswith(
        "error: MEMORY.md is already larger than the 2097152-byte limit"
    )
    assert (tmp_path / "MEMORY.md").stat().st_size == CAP + 5
    assert tool.tool(command="view").endswith("[…more: MEMORY.md is over the 2097152-byte limit]")


def test_invalid_utf8_is_not_edited(home: Home) -> None:
    broken = b"likes tea\n\xff\xfe broken\n"
    home.put("MEMORY.md", broken)
    tool = home.tool()
    for arguments in ({"command": "append", "content": "x"}, {"command": "remove", "old": "tea"}):
        assert tool.tool(**arguments) == (
            "error: MEMORY.md contains bytes that are not valid UTF-8 (at byte 10), so it is not edited — "
            "no text would survive intact; ask the user to fix the file."
        )
    assert home.memory() == broken
    assert tool.tool(command="view") == "likes tea\n\ufffd\ufffd broken\n"


def test_only_memory_md_is_ever_written(home: Home) -> None:
    before = home.listing()
    tool = home.tool()
    tool.tool(command="append", content="one")
    tool.tool(command="replace", old="one", new="two")
    tool.tool(command="remove", old="two")
    tool.tool(command="append", content="three")
    assert home.listing() == before | {"MEMORY.md"}
    for name, data in OTHER_FILES.items():
        assert home.get(name) == data


def test_soul_is_a_snapshot_and_the_next_compose_shows_the_edit(home: Home) -> None:
    soul, found = home.soul()
    frozen = (soul, list(found))
    home.tool().tool(command="append", content="remember the milk")
    assert (soul, found) == frozen
    assert "remember the milk" not in soul
    new_soul, new_found = home.soul()
    assert new_found == [*found, "MEMORY.md"]
    assert new_soul == soul + "\n\n## MEMORY.md\n\nremember the milk"


# -- locations that cannot be written fail at creation ------------------------------------------


def _bundle(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("aster/SOUL.md", "You are Aster.")
    return path


def test_zip_bundle_path_is_refused(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "aster.zip")
    with pytest.raises(BootstrapError, match=r"aster\.zip: is a zip bundle \(read-only\), which memory_tool"):
        memory_tool(bundle)


def test_zip_url_is_refused(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "aster.zip")
    with pytest.raises(BootstrapError, match="is a zip bundle"):
        memory_tool(f"zip://aster::{bundle}")


def test_zip_bundle_on_s3_is_refused(new_bucket: Any, s3_options: dict[str, Any], tmp_path: Path) -> None:
    bucket = new_bucket()
    fsspec.filesystem("s3", **s3_options).put_file(str(_bundle(tmp_path / "a.zip")), f"{bucket}/aster.zip")
    with pytest.raises(BootstrapError, match=rf"s3://{bucket}/aster\.zip: is a zip bundle"):
        memory_tool(f"s3://{bucket}/aster.zip", storage_options=s3_options)
    with pytest.raises(BootstrapError, match="is a zip bundle"):
        memory_tool(f"zip://::s3://{bucket}/aster.zip", storage_options={"s3": s3_options})


def test_read_only_filesystem_is_refused() -> None:
    with pytest.raises(BootstrapError, match="read-only HTTPFileSystem"):
        memory_tool("http://127.0.0.1:9/aster")


def test_missing_home_plain_file_and_custom_source(
    tmp_path: Path, new_bucket: Any, s3_options: dict[str, Any]
) -> None:
    with pytest.raises(FileNotFoundError, match="no such persona home"):
        memory_tool(tmp_path / "nobody")
    with pytest.raises(FileNotFoundError, match="no such persona home"):
        memory_tool(f"s3://{new_bucket()}/nobody", storage_options=s3_options)
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(NotADirectoryError, match="is a file, not a persona folder"):
        memory_tool(tmp_path / "notes.txt")

    with pytest.raises(TypeError, match="not a DictSource, which can only be read"):
        memory_tool(DictSource())
    with pytest.raises(TypeError, match="storage_options cannot apply"):
        memory_tool(tmp_path, storage_options={"anon": True})


def test_unwritable_local_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The suite may run as root, for whom every folder is writable: simulate the access check.
    monkeypatch.setattr("toolnexus.sources.local.os.access", lambda path, mode: False)
    with pytest.raises(PermissionError, match=r"is not writable: MEMORY\.md cannot be saved"):
        memory_tool(tmp_path)


def test_memory_md_symlink_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "elsewhere.md").write_text("secret\n")
    (tmp_path / "MEMORY.md").symlink_to(tmp_path / "elsewhere.md")
    for call in (
        {"command": "append", "content": "x"},
        {"command": "str_replace", "path": "/memories/MEMORY.md", "old_str": "secret", "new_str": "y"},
    ):
        reply = memory_tool(tmp_path).tool(**call)  # a refusal the model can act on, not a raise
        assert reply.is_error, call
        assert "MEMORY.md in" in reply
        assert "is a symlink; the memory tool only edits a regular file; nothing was changed." in reply
    assert (tmp_path / "elsewhere.md").read_text() == "secret\n"


def test_other_location_forms(tmp_path: Path) -> None:
    """A file:// URL, fs= with fsspec's local filesystem, a memory:// URL and a UPath all work."""
    from upath import UPath  # noqa: PLC0415

    memory_tool(f"file://{tmp_path}").tool(command="append", content="one")
    memory_tool(str(tmp_path), fs=fsspec.filesystem("file")).tool(command="append", content="two")
    assert (tmp_path / "MEMORY.md").read_bytes() == b"one\ntwo\n"
    fsspec.filesystem("memory").pipe_file("/memory-forms-test/SOUL.md", b"You are Aster.")
    memory_tool("memory://memory-forms-test").tool(command="append", content="three")
    assert memory_tool(UPath("memory:///memory-forms-test")).tool(command="view") == "three\n"
