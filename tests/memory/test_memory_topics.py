"""Topic files: ``/memories/<path>.md`` lives in the home's ``memory/`` folder, on local disk,
memory:// and S3 (moto); not in the soul; every limit refused with advice; nothing else written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.folders import exercise_compare_and_swap_rename, exercise_folder_store
from tests.support.homes import OTHER_FILES, Home, make_home
from toolnexus.agents import BootstrapError, DictSource, compose_soul, memory_tool, write_bundle
from toolnexus.memory import topics
from toolnexus.memory.portable import MemoryTool
from toolnexus.stores.base import Change, Plan
from toolnexus.stores.fsspec import S3Store
from toolnexus.stores.probe import forget_verdicts

BACKENDS = ["local", "memory", "s3"]
ASTER = "/memories/projects/aster.md"


@pytest.fixture(params=BACKENDS)
def home(request: pytest.FixtureRequest) -> Home:
    return make_home(str(request.param), request)


def notes(home: Home) -> dict[str, bytes]:
    """The files of the home that are not the seeded bootstrap files."""
    return {path: data for path, data in home.tree().items() if path not in OTHER_FILES}


def test_a_topic_file_lives_in_memory_and_not_in_the_soul(home: Home) -> None:
    tool = home.tool()
    soul = home.soul()
    assert tool.tool(command="create", path=ASTER, file_text="# Aster\n- owner: Mira\n") == (
        f"File created successfully at: {ASTER}"
    )
    assert notes(home) == {"memory/projects/aster.md": b"# Aster\n- owner: Mira\n"}
    assert home.soul() == soul
    assert tool.tool(command="view", path="/memories").splitlines()[1:] == [
        f"{22 + len(OTHER_FILES['USER.md'])}B\t/memories",
        "0B\t/memories/MEMORY.md",
        f"{len(OTHER_FILES['USER.md'])}B\t/memories/USER.md",
        "22B\t/memories/projects/",
        "22B\t/memories/projects/aster.md",
    ]
    assert tool.tool(command="view", path="/memories/projects").splitlines()[1:] == [
        "22B\t/memories/projects",
        "22B\t/memories/projects/aster.md",
    ]
    tool.tool(command="str_replace", path=ASTER, old_str="Mira", new_str="Mira Weiss")
    tool.tool(command="insert", path=ASTER, insert_line=1, insert_text="- started 2026-11")
    assert notes(home) == {"memory/projects/aster.md": b"# Aster\n- started 2026-11\n- owner: Mira Weiss\n"}
    assert tool.tool(command="view", path=ASTER).splitlines()[1] == "     1\t# Aster"


def test_every_store_reaches_the_files_of_its_home(home: Home) -> None:
    store = home.tool().store
    exercise_folder_store(store, home.put)
    if home.backend == "s3":
        exercise_compare_and_swap_rename(store, home.put)


def test_rename_and_delete_files_and_folders(home: Home) -> None:
    tool = home.tool()
    tool.tool(command="create", path=ASTER, file_text="aster\n")
    tool.tool(command="create", path="/memories/projects/birch.md", file_text="birch\n")
    assert tool.tool(command="rename", old_path=ASTER, new_path="/memories/people/aster.md") == (
        f"Successfully renamed {ASTER} to /memories/people/aster.md"
    )
    moved = tool.tool(command="rename", old_path="/memories/projects", new_path="/memories/archive/2026")
    assert not moved.is_error
    assert notes(home) == {"memory/people/aster.md": b"aster\n", "memory/archive/2026/birch.md": b"birch\n"}
    clash = tool.tool(command="rename", old_path="/memories/people/aster.md", new_path="/memories/archive")
    assert (clash, clash.is_error) == ("The destination /memories/archive already exists", True)
    inside = tool.tool(command="rename", old_path="/memories/archive", new_path="/memories/archive/old")
    assert inside.startswith("Cannot rename /memories/archive to /memories/archive/old: ")
    assert tool.tool(command="delete", path="/memories/archive") == "Successfully deleted /memories/archive"
    assert tool.tool(command="delete", path="/memories/people/aster.md") == (
        "Successfully deleted /memories/people/aster.md"
    )
    assert notes(home) == {}
    if home.backend == "local":  # a folder exists while it holds a file, as on object stores
        assert not os.path.exists(os.path.join(home.location, "memory"))
    gone = tool.tool(command="delete", path="/memories/people")
    assert (gone, gone.is_error) == ("The path /memories/people does not exist", True)


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/memories/notes.txt", "memory files are markdown: end the name in .md"),
        ("/memories/My Notes.md", "'My Notes.md' is not a memory name"),
        ("/memories/.hidden.md", "'.hidden.md' is not a memory name"),
        ("/memories/café.md", "'café.md' is not a memory name"),
        ("/memories/a/b/c/d.md", "memory paths are at most 3 levels deep"),
        ("/memories/.md", "'.md' is not a memory name"),
    ],
)
@pytest.mark.parametrize("backend", ["local", "memory"])
def test_names_outside_the_rules_are_refused_with_advice(
    request: pytest.FixtureRequest, backend: str, path: str, why: str
) -> None:
    home = make_home(backend, request)
    reply = home.tool().tool(command="create", path=path, file_text="x")
    assert reply.is_error
    assert reply.startswith(f"Cannot create {path}: {why}"), reply
    assert notes(home) == {}


def test_a_file_and_a_folder_never_share_a_name(home: Home) -> None:
    tool = home.tool()
    tool.tool(command="create", path=ASTER, file_text="x\n")
    assert tool.tool(command="create", path=f"{ASTER}/inner.md", file_text="y") == (
        f"Cannot create {ASTER}/inner.md: projects/aster.md is a file, not a folder."
    )
    assert tool.tool(command="create", path="/memories/projects", file_text="y") == (
        "File /memories/projects already exists"
    )
    assert tool.tool(command="str_replace", path="/memories/projects", old_str="x", new_str="y") == (
        "The path /memories/projects is not a file."
    )
    assert notes(home) == {"memory/projects/aster.md": b"x\n"}


def test_the_file_count_and_total_size_limits(home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topics, "MAX_FILES", 2)
    monkeypatch.setattr(topics, "MAX_TOTAL_BYTES", 10)
    tool = home.tool()
    assert not tool.tool(command="create", path="/memories/a.md", file_text="12345").is_error
    assert not tool.tool(command="create", path="/memories/b.md", file_text="1234").is_error
    third = tool.tool(command="create", path="/memories/c.md", file_text="")
    assert third.splitlines() == [
        "Cannot create /memories/c.md: memory already holds 2 topic files, the limit.",
        "Merge related notes into fewer files, delete the ones you no longer need, then try again.",
    ]
    portable = tool.tool(command="append", file="c.md", content="x")  # its advice: its own commands
    assert portable.splitlines() == [
        "error: Cannot create c.md: memory already holds 2 topic files, the limit.",
        "Keep further notes in an existing topic file, or ask the user to remove the ones no longer needed.",
    ]
    grown = tool.tool(command="insert", path="/memories/b.md", insert_line=0, insert_text="abc")
    assert grown.is_error
    assert grown.startswith(
        "refused — all topic files together would grow to 14 bytes, over their 10-byte limit"
    )
    assert notes(home) == {"memory/a.md": b"12345", "memory/b.md": b"1234"}
    tool.tool(command="delete", path="/memories/a.md")
    assert not tool.tool(command="create", path="/memories/c.md", file_text="").is_error


def test_the_portable_tool_reaches_topic_files_with_file(home: Home) -> None:
    tool = home.tool()
    assert tool.tool(command="view", file="/") == (
        'No topic files yet. Use append with a file (e.g. "projects/aster.md") to start one.'
    )
    assert tool.tool(command="append", file="projects/aster.md", content="- owner: Mira") == (
        "ok: note appended (14 of 2097152 bytes used)."
    )
    tool.tool(command="replace", file="projects/aster.md", old="Mira", new="Mira Weiss")
    assert tool.tool(command="view", file="projects/aster.md") == "- owner: Mira Weiss\n"
    assert tool.tool(command="view", file="projects") == (
        "Topic files in projects (1 of 200 files, 20 of 16777216 bytes):\nprojects/aster.md (20 bytes)"
    )
    missing = tool.tool(command="remove", file="projects/birch.md", old="x")
    assert missing.is_error
    assert missing.startswith("error: projects/birch.md does not exist")
    bad = tool.tool(command="append", file="../SOUL.md", content="x")
    assert bad.startswith("error: 'file' is a path like projects/aster.md")
    assert tool.tool(command="append", file="notes.txt", content="x").startswith(
        "error: Cannot create notes.txt: memory files are markdown"
    )
    both = tool.tool(command="view", file="a.md", target="user")
    assert both == "error: give 'target' (MEMORY.md or USER.md) or 'file' (a topic file), not both."
    assert tool.tool(command="append", file="MEMORY.md", content="- core").startswith("ok: note appended")
    assert home.memory() == b"- core\n"
    assert notes(home) == {"MEMORY.md": b"- core\n", "memory/projects/aster.md": b"- owner: Mira Weiss\n"}
    assert "file" in tool.input_schema["properties"]


def test_a_home_of_a_mapping_keeps_topic_files_under_memory() -> None:
    files: dict[str, bytes | str] = {"SOUL.md": "You are Aster."}
    tool = memory_tool(DictSource(files))
    tool.tool(command="create", path=ASTER, file_text="x\n")
    tool.tool(command="rename", old_path=ASTER, new_path="/memories/aster.md")
    assert files == {"SOUL.md": "You are Aster.", "memory/aster.md": b"x\n"}


class OneFileStore:
    """A store of one's own: read and update only (no other files of the home)."""

    location, name = "custom://aster", "MEMORY.md"

    def __init__(self) -> None:
        self.data: bytes | None = None

    def read(self) -> bytes | None:
        return self.data

    def update(self, plan: Plan) -> Change:
        change = plan(self.data)
        if change.data is not None:
            self.data = change.data
        return change


def test_a_store_without_other_files_keeps_memory_md_only() -> None:
    tool = MemoryTool(OneFileStore())
    assert not tool.tool(
        command="insert", path="/memories/MEMORY.md", insert_line=0, insert_text="x"
    ).is_error
    refused = tool.tool(command="create", path=ASTER, file_text="x")
    assert refused.startswith(f"Cannot create {ASTER}: this home's store keeps only MEMORY.md and USER.md")
    assert tool.tool(command="view", path="/memories").splitlines()[-1] == "2B\t/memories/MEMORY.md"


def test_symlinks_are_never_followed(tmp_path: Path) -> None:
    home, outside = tmp_path / "aster", tmp_path / "outside"
    home.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n")
    (home / "memory").symlink_to(outside)
    tool = memory_tool(home)
    refused = tool.tool(command="create", path="/memories/secret2.md", file_text="x")
    assert refused.is_error  # a refusal the model can act on, not an exception ending the loop
    assert "memory is a symlink or a file, not a folder" in refused
    assert "nothing was changed. Use a path outside it." in refused
    assert tool.tool(command="view", path="/memories").is_error
    (home / "memory").unlink()
    (home / "memory").mkdir()
    (home / "memory" / "linked").symlink_to(outside)
    for call in (
        {"command": "create", "path": "/memories/linked/new.md", "file_text": "x"},
        {"command": "append", "file": "linked/new.md", "content": "x"},
    ):
        reply = tool.tool(**call)
        assert reply.is_error, call
        assert "memory/linked is a symlink or a file, not a folder" in reply
    (home / "memory" / "linked.md").symlink_to(outside / "secret.md")
    listing = tool.tool(command="view", path="/memories")
    assert "linked.md" not in listing  # a symlink is no topic file
    assert tool.tool(command="view", path="/memories/linked.md").startswith(
        "The path /memories/linked.md does not"
    )
    assert sorted(os.listdir(outside)) == ["secret.md"]
    assert (outside / "secret.md").read_text() == "secret\n"


def test_a_bundle_carries_the_topic_files_and_the_same_soul(home: Home, tmp_path: Path) -> None:
    tool = home.tool()
    tool.tool(command="create", path=ASTER, file_text="# Aster\n")
    tool.tool(command="create", path="/memories/people/mira.md", file_text="# Mira\n")
    out = tmp_path / "aster.zip"
    names = write_bundle(home.location, out, **home.options)
    assert names[-2:] == ["memory/people/mira.md", "memory/projects/aster.md"]
    assert compose_soul(out) == home.soul()
    again = tmp_path / "again.zip"
    assert write_bundle(out, again) == names  # a bundle of a bundle carries them too
    assert again.read_bytes() == out.read_bytes()
    if home.backend == "s3":  # a zip on S3 is read from its tail: the notes come along
        remote = f"s3://{home.extra['bucket']}/aster.zip"
        write_bundle(home.location, remote, **home.options)
        assert write_bundle(remote, tmp_path / "from-s3.zip", **home.options) == names
        assert (tmp_path / "from-s3.zip").read_bytes() == out.read_bytes()


@pytest.mark.s3
def test_a_store_without_conditional_deletes_refuses_renames_only(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compare-and-swap store of one's own without ``delete_if`` (docs/extending.md): renames are
    refused with the reason, everything else works."""
    home = make_home("s3", request)

    def no_delete_if(self: S3Store, path: str, version: str) -> bool:
        raise NotImplementedError

    monkeypatch.setattr(S3Store, "delete_if", no_delete_if)
    forget_verdicts()
    tool = home.tool()
    tool.tool(command="create", path=ASTER, file_text="x\n")
    with pytest.raises(BootstrapError, match=r"conditional deletes \(S3Store has no delete_if\)"):
        tool.tool(command="rename", old_path=ASTER, new_path="/memories/aster.md")
    assert notes(home) == {"memory/projects/aster.md": b"x\n"}
    forget_verdicts()
