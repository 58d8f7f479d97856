"""A model of memory, tested as one: Hypothesis drives random sequences of native and portable
commands — bad paths, ranges and clashes included — against a plain Python model of ``/memories``
on a local folder, memory:// and S3 (moto), and checks each answer's leading sentence, its
``is_error``, and every memory file's bytes after each step."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from tests.support.homes import OTHER_FILES, Home, local_home, memory_home, s3_home
from toolnexus.agents import MemoryTool

CAP, FILES, TOTAL = 2 * 1024 * 1024, 200, 16 * 1024 * 1024
SPECIAL = ("MEMORY.md", "USER.md")
PATHS = [
    "/memories",
    "/memories/MEMORY.md",
    "/memories/USER.md",
    "/memories/a.md",
    "/memories/b.md",
    "/memories/n",
    "/memories/n/c.md",
    "/memories/a.md/d.md",
    "/memories/n/c.md/d.md",
    "/memories/n/m/o/p.md",
    "/memories/a b.md",
    "/memories/../x.md",
    "/etc/x.md",
]
TEXT = st.text(alphabet="ab\n", max_size=6)
FILE_ARGUMENT = st.sampled_from(["a.md", "n/c.md", "n", "MEMORY.md", "USER.md"])


class Reply(NamedTuple):
    """What an answer must be: its leading sentence (the model may give more) and ``is_error``."""

    lead: str
    is_error: bool


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def fail(lead: str) -> Reply:
    return Reply(lead.split("\n", 1)[0], True)


def done(lead: str) -> Reply:
    return Reply(lead.split("\n", 1)[0], False)


Parts = tuple[str, ...]


class Memory:
    """The plain model: MEMORY.md / USER.md (bytes or absent) and topic files by path below memory/."""

    def __init__(self) -> None:
        self.special: dict[str, bytes | None] = {"MEMORY.md": None, "USER.md": OTHER_FILES["USER.md"]}
        self.topics: dict[str, bytes] = {}

    def files(self) -> dict[str, bytes]:
        found = {name: data for name, data in self.special.items() if data is not None}
        return {**found, **{f"memory/{path}": data for path, data in self.topics.items()}}

    def is_folder(self, relative: str) -> bool:
        return any(path.startswith(f"{relative}/") for path in self.topics)

    def below(self, relative: str) -> list[str]:
        return [path for path in self.topics if path == relative or path.startswith(f"{relative}/")]

    # -- the native commands ------------------------------------------------------------------
    def parse(self, path: str) -> Parts | Reply:
        if not path.startswith("/memories"):
            return fail(f"Path must start with /memories, got: {path}")
        if ".." in path.split("/"):
            return fail(f"Path {path} would escape /memories directory")
        return tuple(part for part in path[len("/memories") :].split("/") if part)

    def name_problem(self, parts: Parts) -> str | None:
        if len(parts) > 3:
            return "memory paths are at most 3 levels deep (like /memories/projects/2026/aster.md)"
        for part in parts:
            if " " in part:
                return (
                    f"{part!r} is not a memory name: use letters, digits, '.', '_' and '-' only, "
                    "not starting with '.'"
                )
        if not parts[-1].endswith(".md"):
            return "memory files are markdown: end the name in .md (like /memories/projects/aster.md)"
        for depth in range(1, len(parts)):
            if "/".join(parts[:depth]) in self.topics:
                return f"{'/'.join(parts[:depth])} is a file, not a folder"
        return None

    def text_of(self, parts: Parts) -> str | None:
        """The file's text, or None when it is no file (absent, a folder, the root)."""
        if len(parts) == 1 and parts[0] in SPECIAL:
            return (self.special[parts[0]] or b"").decode()
        data = self.topics.get("/".join(parts)) if parts else None
        return None if data is None else data.decode()

    def write(self, parts: Parts, text: str) -> None:
        if len(parts) == 1 and parts[0] in SPECIAL:
            self.special[parts[0]] = text.encode()
        else:
            self.topics["/".join(parts)] = text.encode()

    def view(self, path: str, view_range: list[int] | None) -> Reply:
        parts = self.parse(path)
        if isinstance(parts, Reply):
            return parts
        text = self.text_of(parts)
        if text is None:
            if not parts or self.is_folder("/".join(parts)):
                listing = f"Here're the files and directories up to 2 levels deep in {path}"
                return done(f"{listing}, excluding hidden items:")
            return fail(f"The path {path} does not exist. Please provide a valid path.")
        count = len(text.split("\n"))
        if view_range and len(view_range) == 2 and max(1, view_range[0]) > count:
            return fail(
                f"Invalid `view_range` parameter: {view_range}. Its first element `{view_range[0]}` "
                f"should be within the range of lines of the file: [1, {count}]."
            )
        return done(f"Here's the content of {path} with line numbers:")

    def create(self, path: str, text: str) -> Reply:
        parts = self.parse(path)
        if isinstance(parts, Reply):
            return parts
        relative = "/".join(parts)
        if not parts or relative in self.topics or self.is_folder(relative):
            return fail(f"File {path} already exists")
        if len(parts) == 1 and parts[0] in SPECIAL:
            if self.special[parts[0]]:
                return fail(f"File {path} already exists")
        elif (problem := self.name_problem(parts)) is not None:
            return fail(f"Cannot create {path}: {problem}.")
        self.write(parts, text)
        return done(f"File created successfully at: {path}")

    def _file(self, path: str) -> tuple[Parts, str] | Reply:
        parts = self.parse(path)
        if isinstance(parts, Reply):
            return parts
        text = self.text_of(parts)
        if text is not None:
            return parts, text
        if not parts or self.is_folder("/".join(parts)):
            return fail(f"The path {path} is not a file.")
        return fail(f"The path {path} does not exist. Please provide a valid path.")

    def str_replace(self, path: str, old: str, new: str) -> Reply:
        found = self._file(path)
        if isinstance(found, Reply):
            return found
        parts, text = found
        if not old:
            return fail("No replacement was performed, old_str is empty.")
        if text.count(old) == 0:
            return fail(f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}.")
        if text.count(old) > 1:
            lines = [text[:at].count("\n") + 1 for at in range(len(text)) if text.startswith(old, at)]
            return fail(
                f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
                f"{', '.join(map(str, lines))}. Please ensure it is unique"
            )
        self.write(parts, text.replace(old, new, 1))
        return done(
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):"
        )

    def insert(self, path: str, line: int, insert_text: str) -> Reply:
        found = self._file(path)
        if isinstance(found, Reply):
            return found
        parts, text = found
        lines = _lines(text)
        if not 0 <= line <= len(lines):
            return fail(
                f"Invalid `insert_line` parameter: {line}. It should be within the range [0, {len(lines)}]."
            )
        lines.insert(line, insert_text.rstrip("\n"))
        new_text = "\n".join(lines)
        self.write(parts, new_text if new_text.endswith("\n") else new_text + "\n")
        return done(f"The file {path} has been edited.")

    def delete(self, path: str) -> Reply:
        parts = self.parse(path)
        if isinstance(parts, Reply):
            return parts
        if not parts:
            return fail("Cannot delete the /memories directory itself")
        if len(parts) == 1 and parts[0] in SPECIAL:
            if self.special[parts[0]]:
                self.special[parts[0]] = b""  # emptied: it stays
            return done(f"Successfully deleted {path}")
        doomed = self.below("/".join(parts))
        for doomed_path in doomed:
            del self.topics[doomed_path]
        return done(f"Successfully deleted {path}") if doomed else fail(f"The path {path} does not exist")

    def rename(self, old_path: str, new_path: str) -> Reply:
        old, new = self.parse(old_path), self.parse(new_path)
        if isinstance(old, Reply):
            return old
        if isinstance(new, Reply):
            return new
        old_relative, new_relative = "/".join(old), "/".join(new)
        if not old:
            return fail("Cannot rename the /memories directory itself")
        if not new or new_relative in (*SPECIAL, *self.topics) or self.is_folder(new_relative):
            return fail(f"The destination {new_path} already exists")
        if old_relative in SPECIAL:
            return fail(
                f"Cannot rename {old_path}: {old_relative} keeps its name (it is part of your memory)."
            )
        moves = self.below(old_relative)
        if not moves:
            return fail(f"The path {old_path} does not exist")
        if new_relative.startswith(f"{old_relative}/"):
            return fail(f"Cannot rename {old_path} to {new_path}: {new_path} is inside {old_path}.")
        for moved in moves:
            problem = self.name_problem(tuple((new_relative + moved[len(old_relative) :]).split("/")))
            if problem is not None:
                return fail(f"Cannot rename {old_path} to {new_path}: {problem}.")
        for moved in sorted(moves):
            self.topics[new_relative + moved[len(old_relative) :]] = self.topics.pop(moved)
        return done(f"Successfully renamed {old_path} to {new_path}")

    # -- the portable commands (file= a topic file, or MEMORY.md / USER.md) ----------------------
    def _target(self, file: str) -> bytes | Reply | None:
        if file in SPECIAL:
            return self.special[file]
        if self.is_folder(file):
            return fail(
                f"error: {file!r} is a folder; 'file' names a topic file in it, like projects/aster.md."
            )
        return self.topics.get(file)

    def portable_view(self, file: str) -> Reply:
        if file not in SPECIAL and self.is_folder(file):
            below = [self.topics[path] for path in self.below(file)]
            total = sum(len(data) for data in below)
            return done(f"Topic files in {file} ({len(below)} of {FILES} files, {total} of {TOTAL} bytes):")
        data = self._target(file)
        assert not isinstance(data, Reply)
        if data is None:
            return done(f"No memories yet ({file} does not exist). Use append to save a note.")
        if not data.decode().strip():
            return done(f"No memories yet ({file} is empty). Use append to save a note.")
        return done(data.decode())

    def append(self, file: str, content: str) -> Reply:
        if not content.strip():
            return fail("error: 'content' must not be empty.")
        data = self._target(file)
        if isinstance(data, Reply):
            return data
        if data is None and file not in SPECIAL and (problem := self.name_problem(tuple(file.split("/")))):
            return fail(f"error: Cannot create {file}: {problem}.")
        text = (data or b"").decode()
        separator = "" if not text or text.endswith("\n") else "\n"
        new = f"{text}{separator}{content.rstrip(chr(13) + chr(10))}\n"
        self.write(tuple(file.split("/")), new)
        return done(f"ok: note appended ({len(new.encode())} of {CAP} bytes used).")

    def portable_replace(self, file: str, old: str, new: str) -> Reply:
        if not old.strip():
            return fail("error: 'old' must not be empty.")
        data = self._target(file)
        if isinstance(data, Reply):
            return data
        if data is None and file not in SPECIAL:
            return fail(
                f'error: {file} does not exist; view with file "/" lists your topic files, '
                "and append creates one."
            )
        text = (data or b"").decode()
        if text.count(old) != 1:
            where = "does not occur" if text.count(old) == 0 else f"occurs {text.count(old)} times"
            return fail(f"error: 'old' {where} in {file}")
        result = text.replace(old, new, 1)
        self.write(tuple(file.split("/")), result)
        used = f"{len(result.encode())} of {CAP} bytes used"
        return done(f"ok: replaced (no change; {used})." if result == text else f"ok: replaced ({used}).")


def _compare(reply: Any, expected: Reply, command: str) -> None:
    lead = str(reply).split("\n", 1)[0]
    if expected.lead.startswith("error: 'old' "):  # what follows names the fix
        lead = lead.split(";")[0]
    assert Reply(lead, reply.is_error) == expected, command


class MemoryMachine(RuleBasedStateMachine):
    make_home: Callable[[], Home]

    @initialize()
    def start(self) -> None:
        self.home = type(self).make_home()
        self.tool: MemoryTool = self.home.tool()
        self.model = Memory()

    @rule(path=st.sampled_from(PATHS), view_range=st.none() | st.lists(st.integers(-1, 6), max_size=3))
    def view(self, path: str, view_range: list[int] | None) -> None:
        arguments: dict[str, Any] = {"command": "view", "path": path}
        if view_range is not None:
            arguments["view_range"] = view_range
        _compare(self.tool.tool(**arguments), self.model.view(path, view_range), f"{arguments}")

    @rule(path=st.sampled_from(PATHS), text=TEXT)
    def create(self, path: str, text: str) -> None:
        reply = self.tool.tool(command="create", path=path, file_text=text)
        _compare(reply, self.model.create(path, text), f"create {path} {text!r}")

    @rule(path=st.sampled_from(PATHS), old=TEXT, new=TEXT)
    def str_replace(self, path: str, old: str, new: str) -> None:
        reply = self.tool.tool(command="str_replace", path=path, old_str=old, new_str=new)
        _compare(reply, self.model.str_replace(path, old, new), f"str_replace {path} {old!r} {new!r}")

    @rule(path=st.sampled_from(PATHS), line=st.integers(-1, 5), text=TEXT)
    def insert(self, path: str, line: int, text: str) -> None:
        reply = self.tool.tool(command="insert", path=path, insert_line=line, insert_text=text)
        _compare(reply, self.model.insert(path, line, text), f"insert {path} {line} {text!r}")

    @rule(path=st.sampled_from(PATHS))
    def delete(self, path: str) -> None:
        _compare(self.tool.tool(command="delete", path=path), self.model.delete(path), f"delete {path}")

    @rule(old=st.sampled_from(PATHS), new=st.sampled_from(PATHS))
    def rename(self, old: str, new: str) -> None:
        reply = self.tool.tool(command="rename", old_path=old, new_path=new)
        _compare(reply, self.model.rename(old, new), f"rename {old} {new}")

    @rule(file=FILE_ARGUMENT)
    def portable_view(self, file: str) -> None:
        _compare(self.tool.tool(command="view", file=file), self.model.portable_view(file), f"view {file}")

    @rule(file=FILE_ARGUMENT, content=TEXT)
    def append(self, file: str, content: str) -> None:
        reply = self.tool.tool(command="append", file=file, content=content)
        _compare(reply, self.model.append(file, content), f"append {file} {content!r}")

    @rule(file=FILE_ARGUMENT, old=TEXT, new=TEXT)
    def portable_replace(self, file: str, old: str, new: str) -> None:
        reply = self.tool.tool(command="replace", file=file, old=old, new=new)
        _compare(reply, self.model.portable_replace(file, old, new), f"replace {file} {old!r} {new!r}")

    @invariant()
    def the_bytes_are_the_models(self) -> None:
        if hasattr(self, "home"):
            tree = self.home.tree()
            memory = {
                path: data for path, data in tree.items() if path in SPECIAL or path.startswith("memory/")
            }
            assert memory == self.model.files()
            assert {path: tree[path] for path in OTHER_FILES if path != "USER.md"} == {
                path: data for path, data in OTHER_FILES.items() if path != "USER.md"
            }


def _run(make_home: Callable[[], Home], examples: int) -> None:
    machine = type("Machine", (MemoryMachine,), {"make_home": staticmethod(make_home)})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=15,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        ),
    )


def test_local_folder(tmp_path: Path) -> None:
    numbers = itertools.count()
    _run(lambda: local_home(tmp_path / f"home-{next(numbers)}"), examples=60)


def test_memory_filesystem() -> None:
    _run(memory_home, examples=60)


@pytest.mark.s3
@pytest.mark.slow
def test_s3(request: pytest.FixtureRequest, stress: bool) -> None:
    """The same machine on moto: 4 runs of up to 15 steps, each on a new bucket (8 with ``--stress``);
    the rules themselves are explored by the local and in-memory runs above."""
    new_bucket, options = request.getfixturevalue("new_bucket"), request.getfixturevalue("s3_options")
    _run(lambda: s3_home(new_bucket(), options), examples=8 if stress else 4)
