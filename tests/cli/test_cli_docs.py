"""docs/cli.md agrees with ``--help``; its S3 walk-through runs; what the examples
write is git-ignored; front matter passes through as documented.

(The console blocks of the docs pages are replayed by the documentation harness; this file checks
what a replay cannot: that the page names every command and flag the parser has, and nothing else,
and runs the page's bash walk-through, which needs a server in the background.)
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import COMMANDS, ENV, EXAMPLE, help_flags, help_text, run
from toolnexus.agents import BOOTSTRAP_ORDER, compose_soul

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
FLAG = re.compile(r"(?<![\w-])(--[a-z][\w-]*|-[a-zA-Z])\b")


def commands() -> list[str]:
    """The commands ``toolnexus --help`` lists."""
    listing = help_text().split("\n  COMMAND\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^    (\w+)", listing, flags=re.MULTILINE)


def section(*names: str) -> str:
    """The page's ``### `toolnexus NAME` …`` section for these commands."""
    match = re.search(rf"^### `toolnexus {names[0]}`.*?(?=^##)", PAGE, flags=re.MULTILINE | re.DOTALL)
    assert match, names
    return match[0]


def test_the_page_lists_every_command_of_the_help() -> None:
    listed = commands()
    assert listed == list(COMMANDS)
    table = re.findall(r"^\| `toolnexus (\w+)", PAGE, flags=re.MULTILINE)
    assert table == listed


@pytest.mark.parametrize(
    "commands",
    [("soul",), ("inspect",), ("check",), ("bundle",), ("memory",), ("ask", "chat"), ("audit",), ("skills",)],
)
def test_each_section_names_exactly_its_commands_flags(commands: tuple[str, ...]) -> None:
    flags = set().union(*(help_flags(command) for command in commands)) - {"-h", "--help"}
    ours = "|".join(["toolnexus", *COMMANDS])
    other_tools = re.compile(rf"`(?!(?:{ours})\b)[a-z]+ [^`]*`")  # `unzip -d …`, `tar -C …`
    documented = set(FLAG.findall(other_tools.sub("", section(*commands))))
    assert documented == flags


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
def test_try_it_on_s3_locally_runs_as_written(tmp_path: Path) -> None:
    """The walk-through, from a scratch clone (its examples), on a port of its own."""
    script = re.search(r"## Try it on S3 locally.*?```bash\n(.*?)```", PAGE, flags=re.DOTALL)
    assert script
    (tmp_path / "examples").symlink_to(EXAMPLE.parent, target_is_directory=True)
    port = str(free_port())
    env = {key: value for key, value in ENV.items() if not key.startswith("AWS_")}
    walk = subprocess.Popen(
        ["bash", "-e", "-c", script[1].replace("5055", port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: moto goes with it, whatever happens
    )
    try:
        stdout, stderr = walk.communicate(timeout=300)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(walk.pid, signal.SIGTERM)
    assert walk.returncode == 0, stderr
    lines = stdout.splitlines()
    assert lines[:7] == list(BOOTSTRAP_ORDER)
    assert lines[7] == "wrote s3://personas/aster.tgz: 7 files (" + ", ".join(lines[:7]) + ")"
    assert lines[-2].startswith("7 of 7 bootstrap files found in s3://personas/aster.tgz; soul: ")
    assert lines[-1].startswith("toolnexus: added a note to s3://personas/aster/MEMORY.md")
    assert stderr == ""


def test_what_the_examples_write_is_git_ignored(tmp_path: Path) -> None:
    """Every bundle name and folder the README's and the docs' code blocks write in the current folder."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    code = "".join(
        block
        for page in pages
        for block in re.findall(
            r"```(?:console|python|bash)\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL
        )
    )
    written = set(re.findall(r"(?<![\w/:.-])([\w-]+\.(?:zip|tgz|tar(?:\.(?:gz|bz2|xz))?|txz|tbz2))\b", code))
    written |= {"personas/aster/SOUL.md"} if re.search(r"[\"' ]personas/aster", code) else set()
    assert {"aster.zip", "aster-folder.zip", "aster.tgz", "personas/aster/SOUL.md"} <= written
    result = subprocess.run(
        ["git", "check-ignore", "--no-index", "--verbose", "--non-matching", *sorted(written)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    unignored = [line.split("\t")[1] for line in result.stdout.splitlines() if line.startswith("::")]
    assert unignored == []


def test_front_matter_passes_through_verbatim(tmp_path: Path) -> None:
    """The decision the page documents: bodies are verbatim, YAML front matter included."""
    home = Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))
    body = "---\nname: aster\ntags: [research]\n---\n\nYou are Aster."
    (home / "SOUL.md").write_text(body, encoding="utf-8")
    soul = run("soul", str(home)).stdout
    assert f"## SOUL.md\n\n{body}\n\n## IDENTITY.md" in soul
    assert soul == compose_soul(home)[0] + "\n"


def test_what_the_page_says_the_tests_install_is_what_they_install() -> None:
    """ "Running the tests": Azurite from npm into .ci/node, as .ci/run and the test fixture do it."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    fixture = (ROOT / "tests" / "support" / "azure.py").read_text(encoding="utf-8")
    assert "npm install --no-audit --no-fund --silent --prefix .ci/node azurite" in ci
    assert '"--prefix", str(_NODE_PREFIX), "azurite"' in fixture
    assert '_NODE_PREFIX = _REPO / ".ci" / "node"' in fixture
    running = PAGE.split("## Running the tests", 1)[1]
    assert "`npm install --prefix .ci/node azurite`" in running
    assert "Node.js and npm" in running
    assert ".ci/node" in (ROOT / ".gitignore").read_text(encoding="utf-8")
