"""``write_bundle``: reproducible archives, whole-file copies, refusal, every kind of OUT."""

from __future__ import annotations

import os
import shutil
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from toolnexus.agents import (
    BOOTSTRAP_ORDER,
    MAX_BOOTSTRAP_FILE_BYTES,
    BootstrapError,
    compose_soul,
    inspect_soul,
    write_bundle,
)
from toolnexus.soul import bundling

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "aster"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))


@pytest.fixture
def memory_url() -> Iterator[str]:
    """A fresh ``memory://`` path (the URL form uses fsspec's global memory store), cleaned up after."""
    url = f"memory://bundles-{uuid.uuid4().hex}/aster.zip"
    yield url
    memory = fsspec.filesystem("memory")
    if memory.exists(url):
        memory.rm(url)


def test_archive_metadata_is_fixed(home: Path, tmp_path: Path) -> None:
    (home / "IDENTITY.md").unlink()
    out = tmp_path / "aster.zip"
    names = write_bundle(home, out)
    expected = [name for name in BOOTSTRAP_ORDER if name != "IDENTITY.md"]
    assert names == expected
    with zipfile.ZipFile(out) as archive:
        assert archive.comment == b""
        members = archive.infolist()
        assert [member.filename for member in members] == expected
        for member in members:
            assert member.date_time == (1980, 1, 1, 0, 0, 0)
            assert member.external_attr == 0o100644 << 16
            assert member.create_system == 3
            assert member.compress_type == zipfile.ZIP_DEFLATED
            assert member.extra == b""
            assert archive.read(member) == (home / member.filename).read_bytes()


def test_archive_bytes_depend_only_on_names_and_contents() -> None:
    files = {name: f"# {name}\n".encode() for name in BOOTSTRAP_ORDER}
    backwards = dict(reversed(files.items()))
    assert bundling.bundle_bytes(files) == bundling.bundle_bytes(backwards)
    changed = {**files, "SOUL.md": b"# SOUL.md!\n"}
    assert bundling.bundle_bytes(files) != bundling.bundle_bytes(changed)


def test_oversized_files_are_copied_whole(home: Path, tmp_path: Path) -> None:
    big = b"a" * MAX_BOOTSTRAP_FILE_BYTES + "é".encode() + b"tail"
    (home / "MEMORY.md").write_bytes(big)
    out = tmp_path / "aster.zip"
    write_bundle(home, out)
    with zipfile.ZipFile(out) as archive:
        assert archive.read("MEMORY.md") == big
    assert compose_soul(out) == compose_soul(home)
    assert inspect_soul(out).files == inspect_soul(home).files


def test_files_over_the_bundle_limit_are_refused(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bundling, "MAX_BUNDLE_MEMBER_BYTES", 100)
    with pytest.raises(BootstrapError, match=r"AGENTS\.md in .*aster is over 100 bytes, too large to bundle"):
        write_bundle(home, tmp_path / "aster.zip")
    assert not (tmp_path / "aster.zip").exists()


def test_what_compose_skips_the_bundle_skips(home: Path, tmp_path: Path) -> None:
    (home / "TOOLS.md").unlink()
    (home / "TOOLS.md").mkdir()
    (home / "soul.md").write_text("wrong case: not a bootstrap file")
    (home / "notes.txt").write_text("not a bootstrap file")
    out = tmp_path / "aster.zip"
    names = write_bundle(home, out)
    assert "TOOLS.md" not in names
    with zipfile.ZipFile(out) as archive:
        assert archive.namelist() == names
    assert compose_soul(out) == compose_soul(home)


def test_external_symlinks_follow_the_compose_rule(home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "shared-user.md"
    outside.write_text("Name: Ada")
    (home / "USER.md").unlink()
    (home / "USER.md").symlink_to(outside)
    with pytest.raises(BootstrapError, match=r"USER\.md .* outside the home"):
        write_bundle(home, tmp_path / "refused.zip")
    out = tmp_path / "aster.zip"
    write_bundle(home, out, follow_external_symlinks=True)
    assert compose_soul(out) == compose_soul(home, follow_external_symlinks=True)


def test_empty_home_gives_an_empty_bundle(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    out = tmp_path / "empty.zip"
    assert write_bundle(tmp_path / "empty", out) == []
    assert zipfile.ZipFile(out).namelist() == []
    assert compose_soul(out) == ("", [])


def test_a_bundle_can_be_rebundled_flat(home: Path, tmp_path: Path) -> None:
    nested = tmp_path / "nested.zip"
    with zipfile.ZipFile(nested, "w") as archive:
        for name in BOOTSTRAP_ORDER:
            archive.write(home / name, f"aster/{name}")
    flat = tmp_path / "flat.zip"
    write_bundle(nested, flat)
    assert compose_soul(flat) == compose_soul(home)
    assert flat.read_bytes() == bundling.bundle_bytes({n: (home / n).read_bytes() for n in BOOTSTRAP_ORDER})


def test_local_out_is_refused_then_replaced_with_normal_permissions(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "aster.zip"
    out.write_bytes(b"precious")
    with pytest.raises(FileExistsError, match=f"{out}: already exists"):
        write_bundle(home, out)
    assert out.read_bytes() == b"precious"
    write_bundle(home, out, force=True)
    assert compose_soul(out) == compose_soul(home)
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask
    assert sorted(path.name for path in tmp_path.iterdir()) == ["aster", "aster.zip"]


def test_write_failure_names_out_and_leaves_nothing(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "missing-dir" / "aster.zip"
    with pytest.raises(FileNotFoundError, match=f"{out}: cannot write the bundle"):
        write_bundle(home, out)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["aster"]


def test_memory_url_out(home: Path, memory_url: str) -> None:
    write_bundle(home, memory_url)
    assert compose_soul(memory_url) == compose_soul(home)
    with pytest.raises(FileExistsError, match=f"{memory_url}: already exists"):
        write_bundle(home, memory_url)


def test_file_url_out_is_written_locally(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "aster.zip"
    write_bundle(home, f"file://{out}")
    assert compose_soul(out) == compose_soul(home)


def test_s3_out_and_s3_home(home: Path, s3_options: dict[str, Any], new_bucket: Any) -> None:
    bucket = new_bucket()
    out = f"s3://{bucket}/bundles/aster.zip"
    write_bundle(home, out, storage_options=s3_options)
    assert compose_soul(out, storage_options=s3_options) == compose_soul(home)
    with pytest.raises(FileExistsError, match=f"{out}: already exists"):
        write_bundle(home, out, storage_options=s3_options)
    # The options go to the S3 home only; OUT is local.
    local_copy = home.parent / "copy.zip"
    write_bundle(out, local_copy, storage_options=s3_options)
    assert local_copy.read_bytes() == fsspec.filesystem("s3", **s3_options).cat_file(out)


def test_options_that_cannot_apply_are_refused(home: Path, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="storage_options cannot apply"):
        write_bundle(home, tmp_path / "aster.zip", storage_options={"anon": True})
    with pytest.raises(ValueError, match="not a chained URL"):
        write_bundle(home, f"zip://aster::{tmp_path / 'aster.zip'}")
