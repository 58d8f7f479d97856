"""``toolnexus memory …`` for a person: in-process through ``cli.main`` for the mechanics, and as
the command for each way it once failed a person: messages
spoke to the model, USER.md could not be edited, ``view`` was refused on read-only homes and
printed UTF-16 as NUL bytes, and an append whose answer was lost could land twice."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import EXAMPLE, run, run_installed
from tests.support.homes import Home, local_home, s3_home
from tests.support.http import serving
from tests.support.lossy import writes_memory
from tests.support.proxy import LoseResponse, Reset, S3Proxy
from tests.support.s3 import s3_storage_options
from toolnexus.agents import write_bundle
from toolnexus.cli import app as cli

CAP = 2097152


@pytest.fixture
def local(tmp_path: Path) -> Home:
    return local_home(tmp_path / "aster")


@pytest.fixture
def aster(tmp_path: Path) -> Path:
    """A copy of the example persona (its MEMORY.md and USER.md mention Mira and Berlin)."""
    return Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))


def _tree(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


def test_every_action(local: Home, capsys: pytest.CaptureFixture[str]) -> None:
    location = local.location
    assert cli.main(["memory", location, "view"]) == 0
    assert capsys.readouterr() == ("", f"toolnexus: no MEMORY.md in {location} (no notes yet)\n")
    assert cli.main(["memory", location, "append", "likes tea"]) == 0
    assert (
        capsys.readouterr().out
        == f"toolnexus: added a note to {location}/MEMORY.md (10 of {CAP} bytes used)\n"
    )
    assert cli.main(["memory", location, "replace", "tea", "green tea"]) == 0
    assert capsys.readouterr().out == (
        f"toolnexus: replaced 'tea' in {location}/MEMORY.md (16 of {CAP} bytes used)\n"
    )
    assert cli.main(["memory", location, "append", "- second"]) == 0
    assert cli.main(["memory", location, "remove", "- second"]) == 0
    assert capsys.readouterr().out.endswith(
        f"toolnexus: removed '- second' from {location}/MEMORY.md (16 of {CAP} bytes used)\n"
    )
    assert cli.main(["memory", location, "replace", "tea", "tea"]) == 0
    assert (
        capsys.readouterr().out
        == f"toolnexus: {location}/MEMORY.md already reads that way; nothing was changed\n"
    )
    assert cli.main(["memory", location, "view"]) == 0
    assert capsys.readouterr() == ("likes green tea\n", "")
    assert local.memory() == b"likes green tea\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["append", " "], "the note is empty; nothing was changed in {home}/MEMORY.md"),
        (
            ["remove", "- "],
            "'- ' occurs 4 times in {home}/MEMORY.md; give more of the text around it so "
            "that it occurs once; nothing was changed",
        ),
        (
            ["append", "x" * CAP],
            "the edit would take {home}/MEMORY.md over its 2097152-byte limit; nothing "
            "was changed. Shorten older notes first (see them with: toolnexus memory {home} view)",
        ),
    ],
)
def test_every_refusal_names_the_file_and_changes_nothing(
    aster: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    before = _tree(aster)
    assert cli.main(["memory", str(aster), *argv]) == 1
    assert capsys.readouterr() == ("", "toolnexus: " + message.format(home=aster) + "\n")
    assert _tree(aster) == before


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


def test_layers_view_merged_and_edits_go_to_the_top(aster: Path, tmp_path: Path) -> None:
    top = tmp_path / "top"
    top.mkdir()
    (top / "USER.md").write_bytes(b"- Name: Mira (top layer)\n")
    before = _tree(aster)
    viewed = run_installed("memory", str(aster), str(top), "view", "--target", "user")
    assert (viewed.returncode, viewed.stdout) == (0, "- Name: Mira (top layer)\n")
    assert (
        viewed.stderr
        == f"toolnexus: USER.md comes from the layer {top} (layers, base first: {aster} + {top})\n"
    )
    added = run("memory", str(aster), str(top), "append", "- from the shell")
    assert (added.returncode, added.stdout) == (
        0,
        f"toolnexus: added a note to {top}/MEMORY.md (17 of {CAP} bytes used)\n",
    )
    assert (top / "MEMORY.md").read_bytes() == b"- from the shell\n"
    assert _tree(aster) == before  # a persona's own notes never land in a shared base


# -- each way the command once failed a person -----------------------------------------------


def test_a_refused_edit_speaks_to_a_person_naming_location_and_file(aster: Path) -> None:
    """Was: ``error: 'old' does not occur in MEMORY.md; call view and copy the text exactly.``"""
    before = _tree(aster)
    done = run("memory", str(aster), "replace", "Berlin", "Hamburg")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"toolnexus: 'Berlin' does not occur in {aster}/MEMORY.md; nothing was changed "
        f"(see it with: toolnexus memory {aster} view)\n"
    )
    assert _tree(aster) == before


def test_target_user_edits_user_md(aster: Path) -> None:
    """Was: the command could not edit USER.md."""
    memory = (aster / "MEMORY.md").read_bytes()
    done = run("memory", str(aster), "--target", "user", "replace", "Berlin", "Hamburg")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(f"toolnexus: replaced 'Berlin' in {aster}/USER.md (")
    assert b"Works in Hamburg (CET/CEST)" in (aster / "USER.md").read_bytes()
    after = run("memory", str(aster), "append", "- Moved in 2026.", "--target", "user")  # after the action
    assert after.returncode == 0
    assert (aster / "USER.md").read_bytes().endswith(b"\n- Moved in 2026.\n")
    assert (aster / "MEMORY.md").read_bytes() == memory


def _bundles(aster: Path, tmp_path: Path) -> dict[str, str]:
    write_bundle(aster, tmp_path / "aster.zip")
    with tarfile.open(tmp_path / "aster.tgz", "w:gz") as archive:
        archive.add(aster, arcname="aster")
    return {"zip": str(tmp_path / "aster.zip"), "tar": str(tmp_path / "aster.tgz")}


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_view_reads_a_bundle(aster: Path, tmp_path: Path, kind: str) -> None:
    """Was: ``view`` refused a zip bundle (read-only) although it writes nothing."""
    bundle = _bundles(aster, tmp_path)[kind]
    done = run("memory", bundle, "view")
    assert (done.returncode, done.stdout, done.stderr) == (0, (aster / "MEMORY.md").read_text(), "")
    refused = run("memory", bundle, "append", "x")
    assert refused.returncode == 2
    assert refused.stderr.endswith(f"; it can be read (toolnexus memory {bundle} view), not edited\n")


def test_view_reads_an_http_home(aster: Path) -> None:
    """Was: ``view`` refused an HTTP home (read-only)."""
    with serving(aster.parent) as server:
        done = run("memory", f"{server.url}/aster", "view")
    assert (done.returncode, done.stdout, done.stderr) == (0, (aster / "MEMORY.md").read_text(), "")


def test_view_shows_the_merged_layers_and_which_layer_each_file_comes_from(
    aster: Path, tmp_path: Path
) -> None:
    """Was: one location only; layers could not be viewed at all."""
    top = tmp_path / "top"
    top.mkdir()
    (top / "MEMORY.md").write_bytes(b"- top note\n")
    memory = run("memory", str(aster), str(top), "view")
    user = run("memory", str(aster), str(top), "view", "--target", "user")
    layers = f"(layers, base first: {aster} + {top})"
    assert (memory.returncode, memory.stdout) == (0, "- top note\n")
    assert memory.stderr == f"toolnexus: MEMORY.md comes from the layer {top} {layers}\n"
    assert (user.returncode, user.stdout) == (0, (aster / "USER.md").read_text())
    assert user.stderr == f"toolnexus: USER.md comes from the layer {aster} {layers}\n"


def test_view_decodes_utf16_as_soul_does_and_edits_refuse_it(tmp_path: Path) -> None:
    """Was: ``view`` of a UTF-16 MEMORY.md printed NUL bytes while ``soul`` decoded it."""
    (tmp_path / "SOUL.md").write_bytes(b"You are Aster.\n")
    stored = "\ufeff- Mira lives in Berlin.\n- Prefers tea.\n".encode("utf-16-le")
    (tmp_path / "MEMORY.md").write_bytes(stored)
    viewed = run("memory", str(tmp_path), "view")
    assert (viewed.returncode, viewed.stdout) == (0, "- Mira lives in Berlin.\n- Prefers tea.\n")
    assert "\0" not in viewed.stdout
    assert viewed.stderr.startswith(f"toolnexus: {tmp_path}/MEMORY.md is UTF-16-LE text, shown decoded")
    assert "- Mira lives in Berlin.\n- Prefers tea." in run("soul", str(tmp_path)).stdout
    refused = run("memory", str(tmp_path), "replace", "Berlin", "Hamburg")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (
        f"toolnexus: {tmp_path}/MEMORY.md is UTF-16 text and toolnexus edits only UTF-8, so nothing "
        "was changed; convert it to UTF-8 first (e.g. with iconv -f UTF-16 -t UTF-8)\n"
    )
    assert (tmp_path / "MEMORY.md").read_bytes() == stored


@pytest.mark.s3
def test_an_append_whose_answer_is_lost_lands_once(proxy: S3Proxy, new_bucket: Any) -> None:
    """Was: the retry met 412 and the compare-and-swap applied the note a second time."""
    bucket = new_bucket()
    home = s3_home(bucket, s3_storage_options(proxy.upstream_url, skip_instance_cache=True))
    home.put("MEMORY.md", b"- old\n")
    options = ["-o", f"endpoint_url={proxy.endpoint_url}"]  # keys and region: the environment's
    rule = proxy.add_fault(writes_memory, LoseResponse(Reset()), times=1)
    done = run("memory", home.location, *options, "append", "- once")
    assert (done.returncode, done.stderr) == (0, "")
    assert home.memory() == b"- old\n- once\n"
    assert rule.hits == 1
    assert [r.response_status for r in proxy.requests if r.method == "PUT" and r.path.endswith("/MEMORY.md")][
        -1
    ] == 412  # the SDK's retry met the note it was repeating


def test_installed_command(local: Home) -> None:
    done = run("memory", local.location, "append", "via a subprocess")
    expected = (0, f"toolnexus: added a note to {local.location}/MEMORY.md (17 of {CAP} bytes used)\n", "")
    assert (done.returncode, done.stdout, done.stderr) == expected
    assert local.memory() == b"via a subprocess\n"
    helped = run("memory", "--help").stdout
    assert "toolnexus memory /tmp/aster view" in helped
    assert "LOCATION [LOCATION ...] {view,append,replace,remove,search}" in helped


def test_options_may_come_anywhere(aster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["memory", "--target", "user", str(aster), "view"]) == 0
    assert capsys.readouterr().out == (aster / "USER.md").read_text()
    assert cli.main(["memory", str(aster), "view", "--target=user"]) == 0
    assert capsys.readouterr().out == (aster / "USER.md").read_text()


def test_options_before_the_action_hold_after_it() -> None:
    """An option before the action keeps its value unless given again after it; ``-o`` on both
    sides is one mapping (a later key wins, hops merge)."""
    words = ["memory", "base", "top", "--engine", "obstore", "-o", "s3.a=1", "-o", "b=2", "--target", "user"]
    args = cli.build_parser().parse_args([*words, "append", "note", "-o", "s3.c=3", "-o", "b=4", "--json"])
    assert (args.lower_layers, args.location, args.action, args.content) == (
        ["base"],
        "top",
        "append",
        "note",
    )
    assert (args.engine, args.target, args.json, args.file) == ("obstore", "user", True, None)
    assert args.storage_options == {"s3": {"a": 1, "c": 3}, "b": 4}
    assert cli.build_parser().parse_args(["memory", "x", "-o", "a=1", "view"]).storage_options == {"a": 1}
    late = cli.build_parser().parse_args(["memory", "x", "--target", "user", "view", "--target", "memory"])
    assert (late.target, late.engine, late.storage_options) == ("memory", "fsspec", None)


def test_file_edits_a_topic_file_before_or_after_the_action(aster: Path) -> None:
    """Was: ``unrecognized arguments: --file``."""
    soul = _tree(aster)
    done = run("memory", str(aster), "--file", "projects/aster.md", "append", "Launch moved to March.")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(f"toolnexus: {aster}/memory/projects/aster.md: ok: note appended (")
    after = run("memory", str(aster), "replace", "March", "April", "--file", "projects/aster.md")
    assert after.returncode == 0
    assert (aster / "memory" / "projects" / "aster.md").read_text() == "Launch moved to April.\n"
    shown = run("memory", str(aster), "view", "--file", "projects/aster.md")
    assert (shown.returncode, shown.stdout) == (0, "Launch moved to April.\n")
    missing = run("memory", str(aster), "--file", "projects/none.md", "remove", "x")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr.startswith(f"toolnexus: {aster}/memory/projects/none.md: projects/none.md does not")
    both = run("memory", str(aster), "--target", "user", "--file", "a.md", "append", "x")
    assert both.returncode == 2
    assert "not both" in both.stderr
    assert _tree(aster) == soul  # MEMORY.md and USER.md untouched
