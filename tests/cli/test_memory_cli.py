"""``toolnexus memory …``: in-process through ``cli.main``, and as the installed command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run
from tests.support.homes import Home, local_home, s3_home
from toolnexus.cli import app as cli


@pytest.fixture
def local(tmp_path: Path) -> Home:
    return local_home(tmp_path / "aster")


def test_every_action(local: Home, capsys: pytest.CaptureFixture[str]) -> None:
    location = local.location
    assert cli.main(["memory", location, "view"]) == 0
    assert capsys.readouterr().out.startswith("No memories yet (MEMORY.md does not exist).")
    assert cli.main(["memory", location, "append", "likes tea"]) == 0
    assert capsys.readouterr().out == "ok: note appended (10 of 2097152 bytes used).\n"
    assert cli.main(["memory", location, "replace", "tea", "green tea"]) == 0
    assert cli.main(["memory", location, "append", "- second"]) == 0
    assert cli.main(["memory", location, "remove", "- second"]) == 0
    capsys.readouterr()
    assert cli.main(["memory", location, "view"]) == 0
    assert capsys.readouterr().out == "likes green tea\n"
    assert local.memory() == b"likes green tea\n"


def test_refused_edit_exits_1_with_the_error_on_stderr(
    local: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["memory", local.location, "remove", "nothing like this"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "error: 'old' does not occur in MEMORY.md; call view and copy the text exactly. "
        "Nothing was changed.\n"
    )


def test_storage_error_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["memory", str(tmp_path / "nobody"), "view"]) == 2
    assert capsys.readouterr().err == f"toolnexus: error: {tmp_path / 'nobody'}: no such persona home\n"


def test_storage_options_on_s3(new_bucket: Any, s3_options: dict[str, Any]) -> None:
    home = s3_home(new_bucket(), s3_options)
    options = [
        "-o",
        f"endpoint_url={s3_options['endpoint_url']}",
        "-o",
        f"key={s3_options['key']}",
        "-o",
        f"secret={s3_options['secret']}",
        "-o",
        "client_kwargs.region_name=us-east-1",
        "-o",
        "skip_instance_cache=true",
    ]
    assert cli.main(["memory", home.location, *options, "append", "from the shell"]) == 0
    assert home.memory() == b"from the shell\n"


def test_installed_command(local: Home) -> None:
    done = run("memory", local.location, "append", "via a subprocess")
    expected = (0, "ok: note appended (17 of 2097152 bytes used).\n", "")
    assert (done.returncode, done.stdout, done.stderr) == expected
    refused = run("memory", local.location, "replace", "absent", "x")
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: 'old' does not occur in MEMORY.md")
    assert local.memory() == b"via a subprocess\n"
    assert "toolnexus memory /tmp/aster view" in run("memory", "--help").stdout
