"""The ``toolnexus`` command: in-process through ``cli.main``, and end to end (``run_installed``)
where the console script itself is the subject."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.support import MotoServer, put_objects
from tests.support.cli import EXAMPLE, TOOLNEXUS, run, run_installed, s3_args
from toolnexus.agents import BOOTSTRAP_ORDER, compose_soul, inspect_soul
from toolnexus.cli import app as cli
from toolnexus.cli._support import Subparsers, emit, location_options
from toolnexus.cli.app import build_parser


def assert_error_line(result: subprocess.CompletedProcess[str], *mentions: str) -> None:
    """Exit 2, nothing on stdout, exactly one ``toolnexus: error:`` line naming each mention."""
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("toolnexus: error: ")
    for mention in mentions:
        assert mention in lines[0]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A copy of the example persona that a test may change."""
    return Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))


# -- soul, inspect, check ---------------------------------------------------------------------


def test_soul_prints_what_compose_soul_returns() -> None:
    result = run_installed("soul", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    assert result.stdout == compose_soul(EXAMPLE)[0] + "\n"
    assert result.stderr == ""


def test_python_dash_m_is_the_same_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "toolnexus", "soul", str(EXAMPLE)],
        check=False,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == run("soul", str(EXAMPLE)).stdout


def test_soul_json_is_the_python_report(home: Path) -> None:
    (home / "USER.md").write_bytes(b"\xef\xbb\xbfName: Ada\r\nLikes: \xff tea\r\n")
    result = run("soul", "--json", str(home))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data == inspect_soul(home).to_dict()
    assert set(data) == {"soul", "found", "files", "location"}
    user = next(entry for entry in data["files"] if entry["name"] == "USER.md")
    assert user["bom_stripped"] is True
    assert user["line_endings_normalised"] == 2
    assert user["invalid_bytes_replaced"] == 1


def test_inspect_prints_a_row_per_name_and_a_summary(home: Path) -> None:
    (home / "TOOLS.md").unlink()
    (home / "HEARTBEAT.md").unlink()
    (home / "HEARTBEAT.md").mkdir()
    (home / "MEMORY.md").write_bytes(b"\xef\xbb\xbfa\r\nb\rc \xff")
    result = run("inspect", str(home))
    assert result.returncode == 0, result.stderr
    *rows, summary = result.stdout.splitlines()
    assert rows[0].split() == ["FILE", "STATUS", "SIZE", "KEPT", "NOTES"]
    table = {row.split()[0]: row for row in rows[1:]}
    assert list(table) == list(BOOTSTRAP_ORDER)
    assert table["SOUL.md"].split() == ["SOUL.md", "present", "418", "418"]
    assert table["TOOLS.md"].split() == ["TOOLS.md", "absent", "-", "-"]
    assert table["HEARTBEAT.md"].split() == ["HEARTBEAT.md", "skipped", "-", "-", "folder"]
    assert table["MEMORY.md"].endswith("BOM stripped, 2 line endings made LF, 1 invalid byte replaced"), (
        table["MEMORY.md"]
    )
    soul = compose_soul(home)[0]
    assert summary == (
        f"5 of 7 bootstrap files found in {home}; soul: {len(soul)} characters, {len(soul.encode())} bytes"
    )


def test_inspect_and_soul_report_truncation(home: Path) -> None:
    size = 2 * 1024 * 1024 + 10
    (home / "MEMORY.md").write_bytes(b"m" * size)
    result = run("inspect", str(home))
    assert result.returncode == 0
    memory_row = next(line for line in result.stdout.splitlines() if line.startswith("MEMORY.md"))
    assert memory_row.split() == [
        "MEMORY.md",
        "present",
        str(size),
        str(2 * 1024 * 1024),
        "truncated",
        "at",
        "the",
        "cap",
    ]
    soul = run("soul", str(home))
    assert soul.stdout.endswith("[truncated: exceeds 2 MB bootstrap cap]\n")
    warning = soul.stderr.splitlines()
    assert len(warning) == 1
    assert warning[0].startswith("toolnexus: warning: ")
    assert "MEMORY.md" in warning[0]
    assert str(size) in warning[0]


def test_check_lists_found_names_and_exits_0(home: Path) -> None:
    (home / "IDENTITY.md").unlink()
    result = run("check", str(home))
    assert result.returncode == 0
    assert result.stdout.splitlines() == [name for name in BOOTSTRAP_ORDER if name != "IDENTITY.md"]


def test_check_exits_1_when_nothing_is_there(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a bootstrap file")
    result = run("check", str(tmp_path))
    assert result.returncode == 1
    assert result.stdout == ""
    assert str(tmp_path) in result.stderr


# -- errors, help, pipes ----------------------------------------------------------------------


@pytest.mark.parametrize("command", ["soul", "inspect", "check"])
def test_missing_home_is_one_error_line(tmp_path: Path, command: str) -> None:
    missing = tmp_path / "nobody"
    assert_error_line(run(command, str(missing)), str(missing), "no such persona home")


def test_file_that_is_not_a_zip_is_one_error_line(tmp_path: Path) -> None:
    not_zip = tmp_path / "aster.zip"
    not_zip.write_text("hello")
    assert_error_line(run("soul", str(not_zip)), str(not_zip))


def test_options_on_a_local_path_are_one_error_line() -> None:
    assert_error_line(run("soul", str(EXAMPLE), "-o", "anon=true"), str(EXAMPLE), "-o options cannot apply")


def test_malformed_option_is_an_argparse_usage_error() -> None:
    result = run("soul", str(EXAMPLE), "-o", "no-equals-sign")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: toolnexus soul")
    assert "argument -o: expected KEY=VALUE" in result.stderr


@pytest.mark.parametrize("command", ["soul", "inspect", "check", "bundle"])
def test_every_subcommand_has_help_with_an_example(command: str) -> None:
    # One end to end through the console script; the others from the same parser, in-process.
    result = (run_installed if command == "soul" else run)(command, "--help")
    assert result.returncode == 0
    assert f"usage: toolnexus {command}" in result.stdout
    assert re.search(f"examples?:\n  toolnexus {command} ", result.stdout)
    assert "-o KEY=VALUE" in result.stdout


def test_early_closed_pipe_exits_quietly(home: Path) -> None:
    (home / "MEMORY.md").write_text("remember\n" * 100_000)  # far more than a pipe buffer holds
    process = subprocess.Popen(
        [str(TOOLNEXUS), "soul", str(home)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None
    assert process.stderr is not None
    assert process.stdout.read(10) == b"## AGENTS."
    process.stdout.close()  # what `| head -c 10` does
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=180) == 141
    assert stderr == ""


# -- bundle -----------------------------------------------------------------------------------


def test_bundle_is_reproducible_and_round_trips(home: Path, tmp_path: Path) -> None:
    first = run_installed("bundle", str(home), str(tmp_path / "first.zip"))
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"wrote {tmp_path / 'first.zip'}: 7 files ({', '.join(BOOTSTRAP_ORDER)})\n"
    # Same content, other timestamps and another creation (so listing) order.
    again = tmp_path / "again"
    again.mkdir()
    for number, name in enumerate(reversed(BOOTSTRAP_ORDER)):
        (again / name).write_bytes((home / name).read_bytes())
        os.utime(again / name, (1_000_000_000 + number, 1_500_000_000 + 7 * number))
    second = run("bundle", str(again), str(tmp_path / "second.zip"))
    assert second.returncode == 0, second.stderr
    assert (tmp_path / "first.zip").read_bytes() == (tmp_path / "second.zip").read_bytes()
    assert compose_soul(tmp_path / "first.zip") == compose_soul(home)
    assert inspect_soul(tmp_path / "first.zip").files == inspect_soul(home).files


def test_bundle_refuses_existing_out_unless_forced(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "aster.zip"
    assert run("bundle", str(home), str(out)).returncode == 0
    before = out.read_bytes()
    (home / "SOUL.md").write_text("You are Aster, renewed.")
    assert_error_line(run("bundle", str(home), str(out)), str(out), "already exists")
    assert out.read_bytes() == before
    assert run("bundle", str(home), str(out), "--force").returncode == 0
    assert compose_soul(out) == compose_soul(home)
    assert "renewed" in compose_soul(out)[0]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["aster", "aster.zip"]  # no temp files


# -- S3 through -o options --------------------------------------------------------------------


def folder_bundle(folder: str, files: dict[str, bytes]) -> bytes:
    """What ``zip -r aster.zip aster/`` makes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(f"{folder}/{name}", data)
    return buffer.getvalue()


def test_s3_home_bundle_and_chained_url(moto_server: MotoServer, new_bucket: Any) -> None:
    endpoint = moto_server.endpoint_url
    bucket = new_bucket()
    files = {name: (EXAMPLE / name).read_bytes() for name in BOOTSTRAP_ORDER}
    put_objects(endpoint, bucket, {f"homes/aster/{name}": data for name, data in files.items()})
    put_objects(endpoint, bucket, {"bundles/folder.zip": folder_bundle("aster", files)})
    expected = compose_soul(EXAMPLE)[0] + "\n"

    soul = run("soul", f"s3://{bucket}/homes/aster", *s3_args(endpoint))
    assert soul.returncode == 0, soul.stderr
    assert soul.stdout == expected

    out = f"s3://{bucket}/bundles/written.zip"
    bundled = run("bundle", str(EXAMPLE), out, *s3_args(endpoint))
    assert bundled.returncode == 0, bundled.stderr
    assert run("soul", out, *s3_args(endpoint)).stdout == expected

    chained = f"zip://aster::s3://{bucket}/bundles/folder.zip"
    assert run("soul", chained, *s3_args(endpoint, hop="s3.")).stdout == expected


def test_s3_missing_home_is_one_error_line(moto_server: MotoServer, new_bucket: Any) -> None:
    location = f"s3://{new_bucket()}/nobody"
    assert_error_line(run("soul", location, *s3_args(moto_server.endpoint_url)), location)


# -- in-process: option parsing and the subcommand convention ---------------------------------


def parse_options(*options: str) -> Any:
    arguments = [part for option in options for part in ("-o", option)]
    return build_parser().parse_args(["soul", "somewhere", *arguments]).storage_options


def test_option_values_are_json_where_they_parse() -> None:
    assert parse_options("anon=true", "max=50", "ratio=0.5", "key=AKIA123", "empty=", "null=null") == {
        "anon": True,
        "max": 50,
        "ratio": 0.5,
        "key": "AKIA123",
        "empty": "",
        "null": None,
    }
    assert parse_options('secret="123"', "url=http://h:1/x=y") == {"secret": "123", "url": "http://h:1/x=y"}


def test_dotted_keys_nest_and_merge() -> None:
    assert parse_options(
        "s3.endpoint_url=http://127.0.0.1:9",
        "s3.config_kwargs.max_pool_connections=50",
        'client_kwargs={"region_name": "eu-west-1"}',
        "client_kwargs.verify=false",
    ) == {
        "s3": {"endpoint_url": "http://127.0.0.1:9", "config_kwargs": {"max_pool_connections": 50}},
        "client_kwargs": {"region_name": "eu-west-1", "verify": False},
    }
    assert build_parser().parse_args(["soul", "x"]).storage_options is None


@pytest.mark.parametrize("bad", [["a=1", "a.b=2"], ["=1"], ["a..b=1"], ["a."]])
def test_bad_options_are_usage_errors(bad: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_options(*bad)
    assert exit_info.value.code == 2
    assert "argument -o" in capsys.readouterr().err


def test_an_extra_module_registers_a_subcommand(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The convention ``memory_cli.register`` follows: add_parser + set_defaults(handler=...)."""

    def handler(args: argparse.Namespace) -> int:
        if args.fail:
            raise PermissionError(f"{args.location}: permission denied")
        emit(f"hello {args.location} {args.storage_options}\n")
        return 3

    def register(subparsers: Subparsers) -> None:
        parser = subparsers.add_parser("hello", parents=[location_options()])
        parser.add_argument("location")
        parser.add_argument("--fail", action="store_true")
        parser.set_defaults(handler=handler)

    monkeypatch.setattr(cli, "REGISTRARS", [*cli.REGISTRARS, register])
    assert cli.main(["hello", "there", "-o", "a.b=1"]) == 3
    assert capsys.readouterr().out == "hello there {'a': {'b': 1}}\n"
    assert cli.main(["hello", "there", "--fail"]) == 2
    assert capsys.readouterr().err == "toolnexus: error: there: permission denied\n"
