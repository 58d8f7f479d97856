"""Side by side with Anthropic's reference memory tool (``BetaLocalFilesystemMemoryTool`` in the
``anthropic`` SDK): the same steps on both, the same leading sentence wherever toolnexus supports
the operation, and only the differences docs/memory.md lists.

Each step runs on the reference (in its own ``/memories`` folder) and on a persona home through
``memory_tool``; then the files are compared (MEMORY.md and USER.md at the home's root, topic files
under ``memory/``). How each step's replies must compare:

- ``SAME``: the whole reply, and ``is_error``;
- ``LEAD``: the first line (the reference's sentence) and ``is_error``; toolnexus adds advice on
  the lines after it, or cuts a long view;
- ``LISTING``: a folder listing — the header, and every entry with its size, except the size of a
  folder (the reference shows the size of the directory entry itself, an object store has none);
- a documented difference (:data:`DIFFERENCES`): the replies must differ as described (so that
  the list shrinks when a difference goes away); the reference's files are brought back in line
  where the step changed them.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from toolnexus.agents import memory_tool

SAME, LEAD, LISTING = "same", "lead", "listing"

#: The documented differences (docs/memory.md, "Differences from the reference"), by key.
DIFFERENCES = {
    "special": "MEMORY.md and USER.md always exist (an absent one is empty): delete empties them, "
    "rename is refused, view of an emptied one shows it empty",
    "limits": "topic-file names: [A-Za-z0-9._-] segments ending in .md, at most 3 deep, not hidden, "
    "no '.' or '..' segments; a file where a folder is needed is refused",
    "view_range": "a view_range whose first line is past the end is an error (the reference shows nothing)",
    "empty_old_str": "an empty old_str is refused (the reference lists every position as a match)",
    "new_str": "new_str is optional and deletes old_str, as the tool's documentation says "
    "(the reference raises TypeError)",
    "empty_folders": "a folder exists while it holds a file, as on object stores (the reference keeps "
    "empty folders)",
}

MEMORY = "- likes tea\n- works remotely\n"
USER = "Name: Mira\nCity: Berlin\n"
BIG = "".join(f"line {n}: {'x' * 40}\n" for n in range(1, 1001))  # ~50 KB: over the 16,000-char view


@dataclass(frozen=True)
class Step:
    arguments: dict[str, Any]
    expect: str = SAME
    #: Run on the reference only, after the step, to bring its files back in line.
    realign: tuple[dict[str, Any], ...] = ()


def view(path: str, view_range: list[int] | None = None, expect: str = SAME) -> Step:
    arguments: dict[str, Any] = {"command": "view", "path": path}
    if view_range is not None:
        arguments["view_range"] = view_range
    return Step(arguments, expect)


def create(path: str, text: str, expect: str = SAME, *realign: dict[str, Any]) -> Step:
    return Step({"command": "create", "path": path, "file_text": text}, expect, realign)


def replace(path: str, old: str, new: str | None, expect: str = SAME) -> Step:
    arguments = {"command": "str_replace", "path": path, "old_str": old}
    if new is not None:
        arguments["new_str"] = new
    return Step(arguments, expect)


def insert(path: str, line: int, text: str, expect: str = SAME) -> Step:
    return Step({"command": "insert", "path": path, "insert_line": line, "insert_text": text}, expect)


def delete(path: str, expect: str = SAME) -> Step:
    return Step({"command": "delete", "path": path}, expect)


def rename(old: str, new: str, expect: str = SAME, *realign: dict[str, Any]) -> Step:
    return Step({"command": "rename", "old_path": old, "new_path": new}, expect, realign)


def undo_create(path: str) -> dict[str, Any]:
    return {"command": "delete", "path": path}


M, P = "/memories", "/memories/projects"
STEPS = [
    view(M, expect=LISTING),
    view(f"{M}/", expect=LISTING),
    view(f"{M}/MEMORY.md"),
    view(f"{M}/MEMORY.md", [1, 1]),
    view(f"{M}/MEMORY.md", [2, -1]),
    view(f"{M}/MEMORY.md", [0, 2]),
    view(f"{M}/MEMORY.md", [2]),
    view(f"{M}/MEMORY.md", [1, 99]),
    view(f"{M}/MEMORY.md", [3, 3]),
    view(f"{M}/MEMORY.md", [9, 10], expect="view_range"),
    view(f"{M}/MEMORY.md", [2, 1]),
    view(f"{M}//MEMORY.md"),
    view(f"{M}/nothing.md"),
    create(f"{P}/aster.md", "# Aster\n- started 2026-11\n- owner: Mira\n"),
    create(f"{P}/aster.md", "overwrite?\n"),
    view(M, expect=LISTING),
    view(P, expect=LISTING),
    view(f"{P}/aster.md"),
    replace(f"{P}/aster.md", "owner: Mira", "owner: Mira Weiss"),
    replace(f"{P}/aster.md", "Berlin", "Hamburg"),
    replace(f"{P}/aster.md", "- ", "* "),
    replace(f"{P}/aster.md", "- started 2026-11\n", None, expect="new_str"),
    insert(f"{P}/aster.md", 1, "- tags: writing"),
    insert(f"{P}/aster.md", 0, "<!-- topic -->\n"),
    insert(f"{P}/aster.md", 99, "x"),
    insert(f"{P}/aster.md", -1, "x"),
    insert(P, 0, "x"),
    insert(f"{M}/nothing.md", 0, "x"),
    replace(P, "a", "b"),
    replace(f"{M}/nothing.md", "a", "b"),
    create(f"{P}/2026/q4/plan.md", "deep\n", "limits", undo_create(f"{P}/2026")),
    create(f"{P}/2026/plan.md", "- ship the beta\n"),
    view(M, expect=LISTING),
    create(f"{M}/notes.txt", "x\n", "limits", undo_create(f"{M}/notes.txt")),
    create(f"{M}/My Notes.md", "x\n", "limits", undo_create(f"{M}/My Notes.md")),
    create(f"{M}/.hidden.md", "x\n", "limits", undo_create(f"{M}/.hidden.md")),
    create(f"{M}/a/../b.md", "x\n", "limits", undo_create(f"{M}/b.md")),
    create(f"{P}/aster.md/x.md", "x\n", "limits"),
    create(f"{M}X.md", "x\n", "limits", undo_create(f"{M}/X.md")),
    view(f"{M}X", expect=LEAD),
    rename(f"{P}/aster.md", f"{P}/aster-2026.md"),
    rename(f"{P}/aster.md", f"{P}/aster-2027.md"),
    rename(f"{P}/aster-2026.md", f"{P}/2026/plan.md"),
    rename(f"{P}/2026", f"{M}/archive/2026"),
    view(M, expect=LISTING),
    view(f"{M}/archive/2026", expect=LISTING),
    rename(M, f"{M}/elsewhere"),
    rename(f"{M}/MEMORY.md", f"{M}/core.md", "special", rename(f"{M}/core.md", f"{M}/MEMORY.md").arguments),
    rename(f"{M}/archive/2026/plan.md", f"{M}/MEMORY.md", LEAD),
    delete(f"{M}/archive"),
    delete(f"{M}/archive"),
    delete(M),
    view(f"{M}/../etc/passwd"),
    view("/etc/passwd"),
    replace(f"{M}/MEMORY.md", "likes tea", "likes green tea"),
    insert(f"{M}/MEMORY.md", 2, "- plays chess"),
    view(f"{M}/MEMORY.md"),
    create(f"{M}/MEMORY.md", "- start over\n", LEAD),
    replace(f"{M}/USER.md", "Berlin", "Hamburg"),
    delete(f"{M}/USER.md", LEAD),
    view(f"{M}/USER.md", expect="special"),
    create(f"{M}/USER.md", "Name: Mira\n"),
    view(f"{M}/USER.md"),
    create(f"{M}/crlf.md", "a\r\nb\r\n"),
    insert(f"{M}/crlf.md", 1, "c"),
    view(f"{M}/crlf.md"),
    create(f"{M}/empty.md", ""),
    view(f"{M}/empty.md"),
    insert(f"{M}/empty.md", 0, "first"),
    replace(f"{M}/empty.md", "", "x", expect="empty_old_str"),
    create(f"{M}/notes.md", "Grüße aus Hamburg\n"),
    replace(f"{M}/notes.md", "Grüße", "Hallo"),
    view(f"{M}/notes.md", [1, -1]),
    create(f"{M}/big.md", BIG),
    view(f"{M}/big.md", expect=LEAD),
    view(f"{M}/big.md", [990, -1]),
    replace(f"{M}/big.md", "line 500:", "line five hundred:"),
    rename(f"{M}/notes.md", f"{M}/people/mira.md"),
    view(f"{M}/people", expect=LISTING),
    delete(f"{M}/people/mira.md"),
    view(M, expect="empty_folders"),
    delete(f"{M}/nothing.md"),
    create(P, "x\n"),
    delete(f"{M}/MEMORY.md", LEAD),
    delete(f"{M}/MEMORY.md", "special"),
    create(f"{M}/MEMORY.md", "- fresh start\n"),
    view(M, expect="empty_folders"),
]


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]


def _entries(listing: str) -> tuple[str, dict[str, str]]:
    """A listing's header and ``{path: size}``, folders (``…/``) without their size."""
    header, *lines = listing.split("\n")
    entries = {}
    for number, line in enumerate(lines):
        size, path = line.split("\t")
        entries[path] = "" if number == 0 or path.endswith("/") else size  # the folder itself first
    return header, entries


class Reference:
    def __init__(self, base: Path) -> None:
        # The SDK (seconds of imports) is loaded by the tests that run, not at collection.
        from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool  # noqa: PLC0415
        from anthropic.lib.tools._beta_functions import ToolError  # noqa: PLC0415

        self.tool = BetaLocalFilesystemMemoryTool(base_path=str(base))
        self.tool_error = ToolError
        self.root = base / "memories"

    def call(self, arguments: dict[str, Any]) -> tuple[str, bool]:
        try:
            return str(self.tool.call(arguments)), False
        except self.tool_error as error:
            return str(error), True
        except Exception as error:  # what the SDK's tool runner reports as an error
            return f"<{type(error).__name__}: {error}>", True

    def files(self) -> dict[str, bytes]:
        return {str(p.relative_to(self.root)): p.read_bytes() for p in self.root.rglob("*") if p.is_file()}


def _our_files(home: Path) -> dict[str, bytes]:
    files = {name: (home / name).read_bytes() for name in ("MEMORY.md", "USER.md") if (home / name).exists()}
    notes = home / "memory"
    if notes.exists():
        files.update({str(p.relative_to(notes)): p.read_bytes() for p in notes.rglob("*") if p.is_file()})
    return files


def _comparable(files: dict[str, bytes]) -> dict[str, bytes]:
    """An empty MEMORY.md / USER.md stands for the reference's deleted one (``special``)."""
    return {name: data for name, data in files.items() if data or name not in ("MEMORY.md", "USER.md")}


@dataclass
class Figures:
    steps: int = 0
    same: int = 0
    lead: int = 0
    listing: int = 0
    documented: int = 0


def _run(tmp_path: Path) -> Iterator[tuple[Step, tuple[str, bool], tuple[str, bool]]]:
    reference = Reference(tmp_path / "reference")
    home = tmp_path / "aster"
    home.mkdir()
    (home / "SOUL.md").write_text("You are Aster.\n")
    for name, text in (("MEMORY.md", MEMORY), ("USER.md", USER)):
        (home / name).write_text(text)
        (reference.root / name).write_text(text)
    ours = memory_tool(home)
    for step in STEPS:
        theirs = reference.call(step.arguments)
        reply = ours.tool(**step.arguments)
        for arguments in step.realign:
            reference.call(arguments)
        if step.expect == "new_str":  # do on the reference what toolnexus did
            reference.call({**step.arguments, "new_str": ""})
        yield step, theirs, (str(reply), reply.is_error)
        assert _comparable(_our_files(home)) == _comparable(reference.files()), step
    shutil.rmtree(tmp_path / "reference")


def test_side_by_side_with_the_reference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    figures = Figures()
    for step, (their_text, their_error), (our_text, our_error) in _run(tmp_path):
        figures.steps += 1
        where = f"{step.arguments}\nreference: {their_text!r}\ntoolnexus: {our_text!r}"
        if step.expect in DIFFERENCES:
            figures.documented += 1
            assert (our_text, our_error) != (their_text, their_error), f"no longer differs: {where}"
            continue
        assert our_error == their_error, where
        if step.expect == LISTING:
            assert _entries(our_text) == _entries(their_text), where
            figures.listing += 1
        elif step.expect == LEAD:
            assert _first_line(our_text) == _first_line(their_text), where
            assert our_text != their_text, f"now identical, make it SAME: {where}"
            figures.lead += 1
        else:
            assert our_text == their_text, where
            figures.same += 1
    assert figures.steps == len(STEPS) == figures.same + figures.lead + figures.listing + figures.documented
    with capsys.disabled():
        print(
            f"\nside by side with the reference: {figures.steps} steps; {figures.same} identical replies, "
            f"{figures.lead} with the same leading sentence and advice after it, {figures.listing} "
            f"listings with the same entries, {figures.documented} documented differences"
        )


def test_every_documented_difference_is_exercised_and_documented() -> None:
    used = {step.expect for step in STEPS} & set(DIFFERENCES)
    assert used == set(DIFFERENCES)
    page = (Path(__file__).resolve().parents[2] / "docs" / "memory.md").read_text(encoding="utf-8")
    section = page.split("### Differences from the reference", 1)[1].split("\n## ", 1)[0]
    assert len(re.findall(r"^- \*\*", section, flags=re.MULTILINE)) == len(DIFFERENCES)
    assert f"on the same {len(STEPS)} steps" in section
