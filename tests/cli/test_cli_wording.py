"""Every message the CLI prints names flags, never Python parameter names.

``test_every_error_path_speaks_in_flags`` lists the error paths of every subcommand and checks
what a person reads (stdout and stderr together) for Python names; it drives ``main`` in-process
(fifty subprocesses would cost the suite a minute). The issue's own examples run the installed
command in a subprocess, in ``test_the_examples_of_the_issue_name_the_flags``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import EXAMPLE, TOOLNEXUS, run_installed
from tests.support.providers import Failure, provider_server, scripted
from toolnexus.agents import write_bundle
from toolnexus.cli import app as cli
from toolnexus.cli._support import for_people

#: What a person must never have to read: Python arguments, the library's function names.
PYTHON_NAMES = re.compile(
    r"\w=(True|False|None)\b|\b(storage_options|memory_tool|follow_external_symlinks|max_turns|"
    r"single_writer|max_retries|base_url|api_key|auth_token|write_bundle|compose_soul|inspect_soul|"
    r"agent_from_dir|no_memory|memory=|force=|format=)\b|\bfs=|\w+\(\)"
)

#: ``(argv, what the output must mention)``: every error path of every subcommand. Placeholders
#: in braces are filled from the ``scene`` fixture.
ERROR_PATHS: dict[str, tuple[list[str], str]] = {
    # soul, inspect, check: locations and options
    **{
        f"{command}-{case}": (
            [command, *argv],
            mention,
        )
        for command in ("soul", "inspect", "check")
        for case, argv, mention in (
            ("missing", ["{missing}"], "no such persona home"),
            ("options-on-a-path", ["{home}", "-o", "anon=true"], "-o options cannot apply"),
            ("external-symlink", ["{linked}"], "--follow-external-symlinks"),
            ("not-a-bundle", ["{bad_zip}"], "bad.zip"),
            ("corrupt-tar", ["{bad_tgz}"], "bad.tgz"),
            ("empty-location", [""], "empty location"),
            ("unknown-flag", ["{home}", "--jsno"], "unrecognized arguments"),
            ("bad-option", ["{home}", "-o", "novalue"], "expected KEY=VALUE"),
            ("unknown-protocol", ["nosuch://bucket/aster"], "nosuch"),
            ("missing-layer", ["{home}", "{missing}"], "no such persona home"),
        )
    },
    # bundle
    "bundle-exists": (["bundle", "{home}", "{existing}"], "--force"),
    "bundle-options-on-paths": (["bundle", "{home}", "{out}", "-o", "anon=true"], "-o options cannot apply"),
    "bundle-format-contradicts-name": (["bundle", "--format", "tgz", "{home}", "{out}"], "the name says"),
    "bundle-unknown-format": (["bundle", "--format", "rar", "{home}", "{out}"], "invalid choice"),
    "bundle-external-symlink": (["bundle", "{linked}", "{out}"], "--follow-external-symlinks"),
    "bundle-chained-out": (["bundle", "{home}", "zip://aster::{out}"], "not a chained URL"),
    "bundle-missing-home": (["bundle", "{missing}", "{out}"], "no such persona home"),
    "bundle-no-out": (["bundle", "{home}"], "required: OUT"),
    # memory
    "memory-bundle": (["memory", "{bundle}", "append", "x"], "the memory tool cannot write"),
    "memory-symlinked-file": (["memory", "{memlink}", "append", "x"], "the memory tool only edits"),
    "memory-no-conditional-writes": (
        ["memory", "simplecache::file://{home}", "append", "x"],
        "--single-writer",
    ),
    "memory-missing": (["memory", "{missing}", "view"], "no such persona home"),
    "memory-options-on-a-path": (["memory", "{home}", "-o", "anon=true", "view"], "-o options cannot apply"),
    "memory-unknown-action": (["memory", "{home}", "vew"], "did you mean 'view'?"),
    "memory-unknown-flag": (["memory", "{home}", "view", "--jsno"], "did you mean '--json'?"),
    "memory-missing-text": (["memory", "{home}", "append"], "required: TEXT"),
    # ask and chat (each fails before a model is reached, or at a provider that refuses)
    **{
        f"{command}-{case}": ([command, "{home}", *(["Hi"] if command == "ask" else []), *argv], mention)
        for command in ("ask", "chat")
        for case, argv, mention in (
            ("no-model", ["--base-url", "{dead}"], "--model"),
            ("max-turns-0", ["--model", "m", "--max-turns", "0"], "--max-turns"),
            ("url-without-scheme", ["--model", "m", "--base-url", "localhost:11434"], "http://HOST:PORT/v1"),
            ("no-openai-key", ["--model", "m"], "OPENAI_API_KEY"),
            ("no-anthropic-key", ["--model", "m", "--provider", "anthropic"], "ANTHROPIC_API_KEY"),
            ("memory-on-a-bundle", ["--model", "m", "--base-url", "{dead}", "--bundle"], "--no-memory"),
            ("provider-refuses", ["--model", "m", "--base-url", "{refusing}"], "HTTP 401"),
            ("bad-retries", ["--model", "m", "--max-retries", "-1"], "--max-retries"),
            ("bad-timeout", ["--model", "m", "--timeout", "0"], "--timeout"),
            ("options-on-a-path", ["--model", "m", "--base-url", "{dead}", "-o", "a=1"], "-o options"),
            ("unknown-provider", ["--model", "m", "--provider", "opneai"], "did you mean 'openai'?"),
        )
    },
    # audit
    "audit-missing": (["audit", "{missing}"], "no such prefix"),
    "audit-options-on-paths": (["audit", "{home}", "-o", "anon=true"], "-o options cannot apply"),
    "audit-unknown-issue": (["audit", "{home}", "--fail-on", "errors"], "choose from truncated"),
    "audit-concurrency-0": (["audit", "{home}", "--concurrency", "0"], "--concurrency"),
    "audit-unknown-profile": (["audit", "{home}", "--profile", "grup"], "did you mean 'group'?"),
    "audit-external-symlink": (["audit", "{linked}", "--fail-on", "error"], "--follow-external-symlinks"),
    # help and completion
    "help-unknown-command": (["help", "bundel"], "did you mean 'bundle'?"),
    "completion-unknown-shell": (["completion", "csh"], "invalid choice 'csh'"),
    "unknown-command": (["sol"], "did you mean 'soul'?"),
}


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The homes every command refuses to touch (built once: each error path only reads them)."""
    shared = tmp_path_factory.mktemp("refused")
    linked = Path(shutil.copytree(EXAMPLE, shared / "linked"))
    (linked / "USER.md").unlink()
    (shared / "outside.md").write_text("outside")
    (linked / "USER.md").symlink_to(shared / "outside.md")
    memlink = Path(shutil.copytree(EXAMPLE, shared / "memlink"))
    (memlink / "notes.md").write_bytes((memlink / "MEMORY.md").read_bytes())
    (memlink / "MEMORY.md").unlink()
    (memlink / "MEMORY.md").symlink_to("notes.md")
    write_bundle(EXAMPLE, shared / "aster.zip")
    return {"linked": str(linked), "memlink": str(memlink), "bundle": str(shared / "aster.zip")}


@pytest.fixture
def scene(
    tmp_path: Path, refused: dict[str, str], request: pytest.FixtureRequest
) -> Iterator[dict[str, str]]:
    """Everything the error paths need, by placeholder name (for the ``case`` under test)."""
    home = Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))
    (tmp_path / "bad.zip").write_text("not a zip")
    (tmp_path / "bad.tgz").write_bytes(b"\x1f\x8b\x08\x00" + b"garbage" * 10)
    (tmp_path / "existing.zip").write_text("already here")
    with contextlib.ExitStack() as stack:
        # The refusing provider only for the cases that reach it, not a thread and a port for each
        # of the seventy cases that never call it.
        refusing = ""
        if any("{refusing}" in part for part in ERROR_PATHS[request.getfixturevalue("case")][0]):
            server = provider_server("openai", scripted(*[Failure(401, "Incorrect API key provided")] * 4))
            refusing = stack.enter_context(server).base_url
        yield {
            **refused,
            "home": str(home),
            "bad_zip": str(tmp_path / "bad.zip"),
            "bad_tgz": str(tmp_path / "bad.tgz"),
            "missing": str(tmp_path / "nobody"),
            "existing": str(tmp_path / "existing.zip"),
            "out": str(tmp_path / "out.zip"),
            "dead": "http://127.0.0.1:9",
            "refusing": refusing,
        }


def _argv(template: list[str], scene: dict[str, str]) -> list[str]:
    argv = [part.format(**scene) for part in template if part != "--bundle"]
    if "--bundle" in template:  # the same command on the zip bundle instead of the folder
        argv[argv.index(scene["home"])] = scene["bundle"]
    return argv


@pytest.mark.parametrize("case", list(ERROR_PATHS))
def test_every_error_path_speaks_in_flags(
    case: str, scene: dict[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.delenv("TOOLNEXUS_MODEL", raising=False)
    template, mention = ERROR_PATHS[case]
    monkeypatch.setattr("sys.stdin", io.StringIO("Hi\n"))  # what chat reads
    try:
        status = cli.main(_argv(template, scene))
    except SystemExit as exit_info:  # argparse's usage errors
        status = exit_info.code  # type: ignore[assignment]
    out, err = capsys.readouterr()
    read = out + err
    assert status in (1, 2), read
    assert mention in read, read
    assert not PYTHON_NAMES.search(read), read


def test_the_examples_of_the_issue_name_the_flags(tmp_path: Path) -> None:
    """Five messages that once named Python arguments, as a shell session meets them."""
    home = Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))
    (tmp_path / "aster.zip").write_text("here")
    (tmp_path / "outside.md").write_text("outside")
    (home / "USER.md").unlink()
    (home / "USER.md").symlink_to(tmp_path / "outside.md")
    script = " ; ".join(
        [
            "toolnexus bundle --follow-external-symlinks aster aster.zip",
            "toolnexus soul aster",
            "toolnexus ask aster.zip Hi --model m --base-url http://127.0.0.1:9",
            "toolnexus ask aster Hi --model m --max-turns 0",
            "toolnexus check aster -o foo=bar",
        ]
    )
    env = {**os.environ, "PATH": f"{TOOLNEXUS.parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    lines = result.stderr.splitlines()
    assert lines[0] == "toolnexus: error: aster.zip: already exists (pass --force to replace it)"
    assert lines[1].endswith("refusing to follow it (pass --follow-external-symlinks to allow)")
    assert lines[2].endswith("Or pass --no-memory to run without the memory tool.")
    assert lines[-2] == (
        "toolnexus ask: error: argument --max-turns: expected a whole number of at least 1, got '0'"
    )
    assert lines[-1] == f"toolnexus: error: -o options cannot apply to the local path {'aster'!r}"
    assert not PYTHON_NAMES.search(result.stdout + result.stderr)


def test_the_library_keeps_its_python_names_and_the_cli_translates_them() -> None:
    """The messages no test above can reach from a shell (a server that ignores conditional writes)."""
    from toolnexus.stores.probe import refusal  # noqa: PLC0415

    class Store:
        name, location = "MEMORY.md", "s3://bucket/aster"

    library = str(refusal(Store(), "it accepted a stale If-Match"))  # type: ignore[arg-type]
    assert "single_writer=True" in library
    assert for_people(library).endswith("or pass --single-writer if only one process ever writes this home.")
    assert for_people("pass force=True to replace it") == "pass --force to replace it"
    assert for_people("rebuild it with write_bundle, never") == "rebuild it with toolnexus bundle, never"


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from _parsers(sub)


def test_no_help_text_names_a_python_argument() -> None:
    """``--help`` is read by people too: no ``MAX_TURNS`` metavar, no ``storage_options``."""
    helps = {parser.prog: parser.format_help() for parser in _parsers(cli.build_parser())}
    assert "toolnexus memory LOCATION [LOCATION ...] view" in helps
    for prog, text in helps.items():
        assert not PYTHON_NAMES.search(text), prog
        assert not re.search(r"\b(MAX_TURNS|MAX_RETRIES|STORAGE_OPTIONS|BASE_URL)\b", text), prog


@pytest.mark.parametrize(
    ("url", "packages", "extra"),
    [
        ("gs://bucket/aster", ["gcsfs"], "gcs"),
        ("az://container/aster", ["adlfs"], "azure"),
        ("https://personas.example/aster", ["aiohttp", "fsspec.implementations.http"], "http"),
    ],
)
def test_a_missing_backend_names_its_extra_on_the_command_line(
    tmp_path: Path, url: str, packages: list[str], extra: str
) -> None:
    """The bug: the ``gs://`` and ``az://`` hints did not name their extras, and https had none.

    The installed command runs as on a machine without the package: a ``sitecustomize`` on
    ``PYTHONPATH`` makes importing it fail before toolnexus starts.
    """
    (tmp_path / "sitecustomize.py").write_text(
        f"import sys\nsys.modules.update(dict.fromkeys({packages!r}))\n"
    )
    path = os.pathsep.join([str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])
    result = run_installed("soul", url, env={**os.environ, "PYTHONPATH": path})
    protocol = url.split("://", 1)[0]
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"toolnexus: error: {url}: the {protocol}:// backend is not installed "
        f"(pip install 'toolnexus[{extra}]')\n"
    )
