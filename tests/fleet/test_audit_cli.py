"""``toolnexus audit``: JSON lines, the summary, ``--fail-on``, ``--output``, progress, bad input."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import termios
from pathlib import Path
from typing import Any

import pytest

from tests.support import MotoServer, make_bucket
from tests.support.cli import TOOLNEXUS, run, s3_args
from tests.support.fleet import ISSUES_BY_PERSONA, place_local
from toolnexus.agents import Budget, audit


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    return place_local(tmp_path / "personas")


def expected_lines(prefix: Path) -> str:
    return "".join(json.dumps(result.to_dict(), ensure_ascii=False) + "\n" for result in audit(prefix))


def test_one_json_line_per_persona_and_a_summary_on_stderr(fleet: Path) -> None:
    done = run("audit", str(fleet))
    assert done.returncode == 0
    assert done.stdout == expected_lines(fleet)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert {line["location"].rsplit("/", 1)[-1]: set(line["issues"]) for line in lines} == ISSUES_BY_PERSONA
    assert set(lines[0]) == {"location", "found", "files", "soul_chars", "soul_bytes", "issues", "error"}
    (summary,) = done.stderr.splitlines()
    assert summary.startswith(
        "toolnexus: audit: 8 personas: 3 ok, 1 with truncation, 0 over budget, 1 with invalid bytes, "
        "1 not UTF-8, 1 missing SOUL.md, 1 error; "
    )
    assert summary.endswith(" personas/s")


@pytest.mark.parametrize(
    ("fail_on", "status"),
    [("error", 1), ("utf16,truncated", 1), ("over-budget", 0), ("invalid, missing-soul", 1)],
)
def test_fail_on_exits_1_when_a_persona_shows_a_named_issue(fleet: Path, fail_on: str, status: int) -> None:
    done = run("audit", str(fleet), "--fail-on", fail_on)
    assert done.returncode == status
    assert len(done.stdout.splitlines()) == len(ISSUES_BY_PERSONA)  # the whole report, either way


def test_fail_on_nothing_but_errors_passes_a_healthy_fleet(tmp_path: Path) -> None:
    place_local(tmp_path, {"aster/SOUL.md": b"You are Aster.", "mira/SOUL.md": b"You are Mira."})
    done = run("audit", str(tmp_path), "--fail-on", ",".join(["error", "invalid", "truncated", "utf16"]))
    assert done.returncode == 0
    assert "2 personas: 2 ok," in done.stderr


def test_budget_flags_as_on_inspect(fleet: Path) -> None:
    done = run("audit", str(fleet), "--total", "60", "--fail-on", "over-budget")
    assert done.returncode == 1
    lines = {
        json.loads(line)["location"].rsplit("/", 1)[-1]: json.loads(line) for line in done.stdout.splitlines()
    }
    assert "over-budget" in lines["aster"]["issues"]
    assert any(
        f["budget_truncated"] or f["omitted"] for f in lines["aster"]["files"] if f["status"] == "present"
    )
    assert lines["aster"]["soul_chars"] <= 60
    over = sum("over-budget" in line["issues"] for line in lines.values())
    assert f", {over} over budget," in done.stderr


def test_tokens_and_a_profile(tmp_path: Path) -> None:
    place_local(tmp_path, {"aster/AGENTS.md": b"Be brief.", "aster/SOUL.md": b"You are Aster."})
    done = run("audit", str(tmp_path), "--profile", "subagent", "--tokens")
    assert done.returncode == 0, done.stderr
    (line,) = map(json.loads, done.stdout.splitlines())
    assert line["found"] == ["AGENTS.md"]
    assert [f["name"] for f in line["files"]] == ["AGENTS.md", "TOOLS.md"]
    assert line["soul_tokens"] == Budget(unit="tokens").count_tokens("## AGENTS.md\n\nBe brief.")
    assert line["issues"] == []


def test_output_file_gets_the_lines_and_stdout_none(fleet: Path, tmp_path: Path) -> None:
    out = tmp_path / "audit.jsonl"
    out.write_text("an old report\n")
    done = run("audit", str(fleet), "--output", str(out))
    assert (done.returncode, done.stdout) == (0, "")
    assert out.read_text(encoding="utf-8") == expected_lines(fleet)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.jsonl", "personas"]  # no temp file left


@pytest.mark.slow
def test_output_on_s3_with_the_o_options(fleet: Path, moto_server: MotoServer) -> None:
    make_bucket(moto_server.endpoint_url, "audit-reports")
    flags = [f"-oendpoint_url={moto_server.endpoint_url}", "-okey=testing", "-osecret=testing"]
    done = run("audit", str(fleet), "--output", "s3://audit-reports/ci/audit.jsonl", *flags)
    assert done.returncode == 0, done.stderr
    report = fsspec_s3(moto_server).cat_file("audit-reports/ci/audit.jsonl").decode("utf-8")
    assert report == expected_lines(fleet)
    failed = run("audit", str(fleet / "nope"), "--output", "s3://audit-reports/ci/failed.jsonl", *flags)
    assert failed.returncode == 2
    assert not fsspec_s3(moto_server).exists("audit-reports/ci/failed.jsonl")  # nothing half-written


def fsspec_s3(moto_server: MotoServer) -> Any:
    import fsspec  # noqa: PLC0415

    from tests.support import s3_storage_options  # noqa: PLC0415

    return fsspec.filesystem("s3", **s3_storage_options(moto_server.endpoint_url, skip_instance_cache=True))


def test_a_missing_prefix_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    done = run("audit", str(tmp_path / "nope"))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"toolnexus: error: {tmp_path / 'nope'}: no such prefix\n"


def test_an_unreachable_dask_scheduler_is_one_error_line_naming_it(fleet: Path) -> None:
    done = run("audit", str(fleet), "--dask", "tcp://127.0.0.1:9", "--dask-timeout", "1")
    assert (done.returncode, done.stdout) == (2, "")
    (line,) = done.stderr.splitlines()
    assert line.startswith("toolnexus: error: cannot reach the Dask scheduler at tcp://127.0.0.1:9: ")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--fail-on", "errors"], "unknown issue 'errors' (choose from truncated, over-budget"),
        (["--concurrency", "0"], "expected a whole number of at least 1, got '0'"),
        (["-oanon=true"], "-o options cannot apply: neither"),
        (["--profile", "nobody"], "invalid choice 'nobody'"),
        (["--total", "0"], "expected a whole number of at least 1, got '0'"),
    ],
)
def test_usage_mistakes_exit_2(fleet: Path, arguments: list[str], message: str) -> None:
    done = run("audit", str(fleet), *arguments)
    assert done.returncode == 2
    assert message in done.stderr


def on_a_terminal(*arguments: str) -> tuple[str, str]:
    """Run with stderr on a pseudo-terminal; returns (stdout, what the terminal showed)."""
    main, replica = pty.openpty()
    fcntl.ioctl(replica, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 24 rows, 100 columns
    with subprocess.Popen(
        [str(TOOLNEXUS), *arguments], stdout=subprocess.PIPE, stderr=replica, text=True
    ) as process:
        os.close(replica)
        shown = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # EIO: the command closed its end
                break
            if not chunk:
                break
            shown += chunk
        stdout = process.stdout.read() if process.stdout else ""
        process.wait(timeout=120)
    os.close(main)
    return stdout, shown.decode("utf-8", "replace")


def test_a_progress_bar_only_when_stderr_is_a_terminal(fleet: Path) -> None:
    stdout, shown = on_a_terminal("audit", str(fleet))
    assert stdout == expected_lines(fleet)
    assert "audit: 8 personas [" in shown  # tqdm's counter, with its elapsed time and rate
    assert "\r" in shown
    assert "toolnexus: audit: 8 personas: 3 ok" in shown
    piped = run("audit", str(fleet))
    assert "\r" not in piped.stderr
    assert "[" not in piped.stderr


def test_engine_obstore_prints_the_fsspec_engine_s_lines(moto_server: MotoServer) -> None:
    """``--engine obstore`` is honoured, not parsed and ignored: one delimiter listing through
    obstore, the same lines and counts as fsspec's engine."""
    from tests.support.fleet import place_s3  # noqa: PLC0415

    make_bucket(moto_server.endpoint_url, "audit-engine-cli")
    place_s3(moto_server.endpoint_url, "audit-engine-cli", "personas")
    prefix, flags = "s3://audit-engine-cli/personas", s3_args(moto_server.endpoint_url)
    by_fsspec = run("audit", prefix, *flags, "--fail-on", "error")
    obstore_flags = flags[:8]  # endpoint, key, secret, region: fsspec's spellings, translated
    by_obstore = run("audit", prefix, "--engine", "obstore", *obstore_flags, "--fail-on", "error")
    assert (by_obstore.returncode, by_fsspec.returncode) == (1, 1), by_obstore.stderr  # broken.zip
    assert by_obstore.stdout == by_fsspec.stdout
    assert len(by_obstore.stdout.splitlines()) == len(ISSUES_BY_PERSONA)
    assert by_obstore.stderr.split(";")[0] == by_fsspec.stderr.split(";")[0]  # the counts; not the timing
    # --output goes through the engine too, with obstore's own spellings of the options.
    own = [f"-oendpoint={moto_server.endpoint_url}", "-oaccess_key_id=testing", "-osecret_access_key=testing"]
    report = "s3://audit-engine-cli/reports/audit.jsonl"
    written = run("audit", prefix, "--engine", "obstore", *own, "--output", report)
    assert (written.returncode, written.stdout) == (0, ""), written.stderr
    assert fsspec_s3(moto_server).cat_file(report).decode("utf-8") == by_fsspec.stdout
    missing = run("audit", f"{prefix}-nope", "--engine", "obstore", *own, "--output", f"{report}.failed")
    assert missing.returncode == 2
    assert not fsspec_s3(moto_server).exists(f"{report}.failed")  # nothing half-written
    refused = run("audit", prefix, "--engine", "obstore", *flags)
    assert refused.returncode == 2
    assert refused.stderr.startswith("toolnexus: error: storage option ")
    assert "has no obstore equivalent" in refused.stderr
