"""``bundle``/``write_bundle`` write the archive OUT's name asks for (or ``--format``).

Every format keeps the zip's guarantees: fixed metadata (the gzip header's too), byte-identical
output for the same content, and ``compose_soul(out) == compose_soul(home)`` — on local disk and
on S3 (moto). The command is run installed, in a subprocess.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import shutil
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import fsspec
import pytest

from tests.support import MotoServer
from tests.support.cli import EXAMPLE, run, s3_args
from toolnexus.agents import BOOTSTRAP_ORDER, compose_soul, write_bundle
from toolnexus.soul.bundling import BUNDLE_MTIME, bundle_bytes, format_for

#: OUT names and the archive each must be: (tar compression or "zip").
NAMES = {
    "aster.zip": "zip",
    "aster.tar": "",
    "aster.tgz": "gz",
    "aster.tar.gz": "gz",
    "aster.tar.bz2": "bz2",
    "aster.tbz2": "bz2",
    "aster.tar.xz": "xz",
    "aster.txz": "xz",
    "aster.bundle": "zip",
}
_DECOMPRESS = {"": lambda data: data, "gz": gzip.decompress, "bz2": bz2.decompress, "xz": lzma.decompress}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))


def files_of(home: Path) -> list[tuple[str, bytes]]:
    """``(name, bytes)`` of the home's bootstrap files, in bootstrap order: what a bundle must hold."""
    return [(file, (home / file).read_bytes()) for file in BOOTSTRAP_ORDER]


def members(data: bytes, kind: str) -> list[tuple[str, bytes]]:
    """``(name, bytes)`` of each member, in archive order, read the way the name says."""
    if kind == "zip":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return [(info.filename, archive.read(info)) for info in archive.infolist()]
    with tarfile.open(fileobj=io.BytesIO(_DECOMPRESS[kind](data)), mode="r:") as archive:
        return [(info.name, archive.extractfile(info).read()) for info in archive]  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["aster.tgz", "aster.tar.bz2", "aster.txz", "aster.tar", "aster.zip"])
def test_the_command_writes_what_the_name_asks_and_check_reads_it(
    home: Path, tmp_path: Path, name: str
) -> None:
    """The bug: ``bundle aster aster.tgz`` wrote a zip, and ``check aster.tgz`` then failed."""
    out = tmp_path / name
    written = run("bundle", str(home), str(out))
    assert (written.returncode, written.stderr) == (0, ""), written.stderr
    assert members(out.read_bytes(), NAMES[name]) == files_of(home)
    checked = run("check", str(out))
    assert (checked.returncode, checked.stdout) == (0, "".join(f"{file}\n" for file in BOOTSTRAP_ORDER))
    assert compose_soul(out) == compose_soul(home)


@pytest.mark.parametrize("name", list(NAMES))
def test_write_bundle_writes_what_the_name_asks(home: Path, tmp_path: Path, name: str) -> None:
    """``write_bundle(..., "api.tar.gz")`` wrote a zip too; every name, from Python."""
    out = tmp_path / name.replace("aster", "api")
    assert write_bundle(home, out) == list(BOOTSTRAP_ORDER)
    assert members(out.read_bytes(), NAMES[name]) == files_of(home)
    assert compose_soul(out) == compose_soul(home)


@pytest.mark.parametrize("kind", ["tar", "tar.gz", "tar.bz2", "tar.xz"])
def test_tar_metadata_is_fixed(home: Path, kind: str) -> None:
    os.utime(home / "SOUL.md", (1_700_000_000, 1_700_000_000))
    (home / "USER.md").chmod(0o600)
    files = {name: (home / name).read_bytes() for name in reversed(BOOTSTRAP_ORDER)}
    data = bundle_bytes(files, kind)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        infos = archive.getmembers()
    assert [info.name for info in infos] == list(BOOTSTRAP_ORDER)
    for info in infos:
        assert (info.mtime, info.mode, info.uid, info.gid, info.uname, info.gname) == (
            BUNDLE_MTIME,
            0o644,
            0,
            0,
            "",
            "",
        )
        assert info.isreg()
    assert BUNDLE_MTIME == 315_532_800  # 1980-01-01, the zip members' date


def test_the_gzip_header_is_fixed_too(home: Path, tmp_path: Path) -> None:
    """No mtime, no file name, OS "unknown": the bytes cannot depend on when or where."""
    out = tmp_path / "aster.tgz"
    write_bundle(home, out)
    header = out.read_bytes()[:10]
    assert header[:4] == b"\x1f\x8b\x08\x00"  # gzip, deflate, no flags (so no FNAME)
    assert header[4:8] == b"\x00\x00\x00\x00"  # mtime
    assert header[9] == 255


@pytest.mark.parametrize("name", [name for name in NAMES if name != "aster.bundle"])
def test_same_content_gives_the_same_bytes(home: Path, tmp_path: Path, name: str) -> None:
    first = tmp_path / "first" / name
    first.parent.mkdir()
    write_bundle(home, first)
    for path in home.iterdir():
        os.utime(path, (2_000_000_000, 2_000_000_000))
    (home / "TOOLS.md").chmod(0o600)
    copy = Path(shutil.copytree(home, tmp_path / "renamed-home"))
    second = tmp_path / "second" / name
    second.parent.mkdir()
    forced = run("bundle", "--force", str(copy), str(second))
    assert forced.returncode == 0, forced.stderr
    assert second.read_bytes() == first.read_bytes()
    (copy / "SOUL.md").write_bytes(b"changed")
    write_bundle(copy, second, force=True)
    assert second.read_bytes() != first.read_bytes()


def test_format_names_the_archive_for_an_unnamed_out(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "aster.bundle"
    result = run("bundle", "--format", "tgz", "--json", str(home), str(out))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"out": str(out), "format": "tar.gz", "files": list(BOOTSTRAP_ORDER)}
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    assert compose_soul(out) == compose_soul(home)  # read back by its leading bytes


def test_a_format_that_contradicts_the_name_is_refused_before_anything_is_written(
    home: Path, tmp_path: Path
) -> None:
    out = tmp_path / "aster.zip"
    result = run("bundle", "--format", "tgz", str(home), str(out))
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"toolnexus: error: {out}: the name says a zip bundle but the format asked is tgz; "
        "name the file for its format, or leave the format out\n"
    )
    assert not out.exists()
    with pytest.raises(ValueError, match="unknown bundle format 'rar'"):
        format_for("aster.bundle", "rar")
    unknown = run("bundle", "--format", "rar", str(home), str(out))
    assert unknown.returncode == 2
    assert "argument --format: invalid choice 'rar'" in unknown.stderr


@pytest.mark.s3
@pytest.mark.parametrize("name", ["b.tgz", "b.tar.xz", "b.zip"])
def test_s3_out_is_the_named_format(
    home: Path, name: str, moto_server: MotoServer, new_bucket: Any, s3_options: dict[str, Any]
) -> None:
    out = f"s3://{new_bucket()}/bundles/{name}"
    result = run("bundle", str(home), out, *s3_args(moto_server.endpoint_url))
    assert result.returncode == 0, result.stderr
    data = fsspec.filesystem("s3", **s3_options).cat_file(out)
    kind = NAMES["aster" + name.removeprefix("b")]
    assert members(data, kind) == files_of(home)
    assert data == bundle_bytes(dict(files_of(home)), format_for(name))
    assert compose_soul(out, storage_options=s3_options) == compose_soul(home)
    checked = run("check", out, *s3_args(moto_server.endpoint_url))
    assert checked.returncode == 0, checked.stderr
