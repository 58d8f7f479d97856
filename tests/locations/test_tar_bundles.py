"""Tar bundles, and zip layouts people make with real tools, compose like the folder they came from.

Archives are built with the real ``tar`` and ``zip`` commands where installed (else Python writers
producing the same layouts); every error names the bundle.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import pytest

from tests.support import MotoServer, put_objects
from tests.support.files import make_home
from toolnexus.agents import (
    BOOTSTRAP_ORDER,
    BootstrapError,
    compose_soul,
    inspect_soul,
    memory_tool,
    write_bundle,
)
from toolnexus.sources import tar as tar_module

FILES = {
    "AGENTS.md": b"# Rules\n\nBe kind.\n",
    "SOUL.md": b"You are Aster.\r\n",
    "USER.md": "Mira, who likes t\u00e9a.\n".encode(),
}
COMPRESSIONS = {"": ".tar", "z": ".tgz", "j": ".tar.bz2", "J": ".tar.xz"}
_TARFILE_MODES = {"": "w", "z": "w:gz", "j": "w:bz2", "J": "w:xz"}


def make_tar(home: Path, out: Path, flag: str, *, contents: bool = False) -> Path:
    """``tar c{flag}f out -C parent home`` (``contents``: ``-C home .``), as a user types it."""
    directory, member = (home, ".") if contents else (home.parent, home.name)
    if shutil.which("tar"):
        subprocess.run(["tar", f"c{flag}f", str(out), "-C", str(directory), member], check=True)
    else:  # pragma: no cover - machines without tar
        with tarfile.open(out, _TARFILE_MODES[flag]) as archive:
            archive.add(directory / member, arcname=member)
    return out


def make_zip(home: Path, out: Path) -> Path:
    if shutil.which("zip"):
        subprocess.run(["zip", "-qr", str(out), home.name], cwd=home.parent, check=True)
    else:  # pragma: no cover - machines without zip
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(home.rglob("*")):
                archive.write(path, path.relative_to(home.parent).as_posix())
    return out


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return make_home(tmp_path / "aster", FILES)


@pytest.mark.parametrize("flag", list(COMPRESSIONS))
def test_tar_bundles_compose_like_their_folder(home: Path, tmp_path: Path, flag: str) -> None:
    expected = compose_soul(home)
    bundle = make_tar(home, tmp_path / f"aster{COMPRESSIONS[flag]}", flag)
    assert compose_soul(bundle) == expected
    report = inspect_soul(bundle)
    assert report.location == f"tar://aster::{bundle}"
    assert report.files == inspect_soul(home).files
    assert compose_soul(f"tar://aster::{bundle}") == expected
    dotted = make_tar(home, tmp_path / f"dotted{COMPRESSIONS[flag]}", flag, contents=True)
    assert compose_soul(dotted) == expected


def test_a_renamed_tar_gives_the_same_answer_from_every_entry_point(home: Path, tmp_path: Path) -> None:
    expected = compose_soul(home)
    bundle = make_tar(home, tmp_path / "aster.tgz", "z").rename(tmp_path / "aster.data")
    assert compose_soul(bundle) == expected
    assert inspect_soul(bundle).soul == expected[0]
    assert write_bundle(bundle, tmp_path / "flat.zip") == expected[1]
    assert compose_soul(tmp_path / "flat.zip") == expected
    with pytest.raises(BootstrapError, match=r"aster\.data: is a tar bundle \(read-only\)"):
        memory_tool(bundle)
    fs = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)
    fs.pipe_file("/aster.data", bundle.read_bytes())
    assert compose_soul("/aster.data", fs=fs) == expected
    with pytest.raises(BootstrapError, match=r"memory:///aster\.data: is a tar bundle \(read-only\)"):
        memory_tool("/aster.data", fs=fs)


@pytest.mark.slow
@pytest.mark.s3
def test_tar_bundles_on_s3_by_url_and_chained(
    home: Path,
    tmp_path: Path,
    moto_server: MotoServer,
    new_bucket: Callable[[], str],
    s3_options: dict[str, Any],
) -> None:
    bucket = new_bucket()
    data = make_tar(home, tmp_path / "aster.tar.xz", "J").read_bytes()
    put_objects(moto_server.endpoint_url, bucket, {"aster.tar.xz": data, "renamed": data})
    expected = compose_soul(home)
    assert compose_soul(f"s3://{bucket}/aster.tar.xz", storage_options=s3_options) == expected
    assert compose_soul(f"s3://{bucket}/renamed", storage_options=s3_options) == expected
    chained = f"tar://aster::s3://{bucket}/aster.tar.xz"
    assert compose_soul(chained, storage_options={"s3": s3_options}) == expected


def test_several_top_folders_name_them_and_show_the_chained_form(tmp_path: Path) -> None:
    make_home(tmp_path / "src" / "aster", FILES)
    make_home(tmp_path / "src" / "brio", FILES)
    tgz = make_tar(tmp_path / "src", tmp_path / "team.tgz", "z", contents=True)
    with pytest.raises(BootstrapError, match=rf"'aster', 'brio'.*tar://aster::{tgz}"):
        compose_soul(tgz)
    assert compose_soul(f"tar://brio::{tgz}")[1] == list(FILES)
    archive = tmp_path / "team.zip"
    subprocess.run(["zip", "-qr", str(archive), "aster", "brio"], cwd=tmp_path / "src", check=True)
    with pytest.raises(BootstrapError, match=rf"'aster', 'brio'.*zip://aster::{archive}"):
        compose_soul(archive)
    assert compose_soul(f"zip://aster::{archive}")[1] == list(FILES)


def test_zips_with_windows_backslash_names_compose_like_the_folder(home: Path, tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in FILES.items():
            info = zipfile.ZipInfo(f"aster\\{name}")
            info.create_system = 0  # MS-DOS/Windows, as Compress-Archive and 7-Zip on Windows write
            archive.writestr(info, data)
    bundle = tmp_path / "windows.zip"
    bundle.write_bytes(buffer.getvalue())
    assert compose_soul(bundle) == compose_soul(home)
    assert compose_soul(f"zip://aster::{bundle}") == compose_soul(home)


def test_the_real_zip_tool_layout_composes(home: Path, tmp_path: Path) -> None:
    assert compose_soul(make_zip(home, tmp_path / "aster.zip")) == compose_soul(home)


def _tar_bytes(members: list[tuple[str, bytes]], mode: str = "w:gz") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_scanning_past_the_bound_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tar_module, "MAX_TAR_SCAN_BYTES", 256 * 1024)
    bomb = tmp_path / "bomb.tgz"
    bomb.write_bytes(_tar_bytes([("aster/padding.bin", bytes(1024 * 1024)), ("aster/SOUL.md", b"late")]))
    with pytest.raises(BootstrapError, match=rf"{bomb}: the tar bundle holds over 262144 bytes"):
        compose_soul(bomb)


def test_the_scan_stops_at_the_last_bootstrap_member(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tar_module, "MAX_TAR_SCAN_BYTES", 256 * 1024)
    persona = [(f"aster/{name}", f"{name} text".encode()) for name in BOOTSTRAP_ORDER]
    first = tmp_path / "first.tgz"
    first.write_bytes(_tar_bytes([*persona, ("aster/assets.bin", bytes(4 * 1024 * 1024))]))
    assert compose_soul(f"tar://aster::{first}")[1] == list(BOOTSTRAP_ORDER)
    root = tmp_path / "root.tar"
    root.write_bytes(_tar_bytes([(n.split("/")[1], d) for n, d in persona] + [("x", bytes(1 << 20))], "w"))
    assert compose_soul(root)[1] == list(BOOTSTRAP_ORDER)


def test_links_are_skipped_and_duplicates_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        soul = tarfile.TarInfo("SOUL.md")
        soul.size = 4
        archive.addfile(soul, io.BytesIO(b"soul"))
        link = tarfile.TarInfo("AGENTS.md")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
    linked = tmp_path / "linked.tar"
    linked.write_bytes(buffer.getvalue())
    report = inspect_soul(linked)
    assert report.found == ["SOUL.md"]
    assert report.files[0].status == "skipped"
    twice = tmp_path / "twice.tgz"
    twice.write_bytes(_tar_bytes([("SOUL.md", b"one"), ("SOUL.md", b"two")]))
    with pytest.raises(BootstrapError, match=r"SOUL\.md in .*twice\.tgz: the bundle holds this member twice"):
        compose_soul(twice)


@pytest.mark.parametrize(
    "data",
    [b"\x1f\x8b\x08\x00garbage", b"BZh9" + bytes(40), _tar_bytes([("SOUL.md", b"x" * 2000)], "w")[:1000]],
    ids=["gzip", "bzip2", "truncated"],
)
def test_corrupt_tar_bundles_are_errors_naming_the_bundle(tmp_path: Path, data: bytes) -> None:
    bundle = tmp_path / "broken.tgz"
    bundle.write_bytes(data)
    with pytest.raises(BootstrapError, match=rf"{bundle}: corrupt tar bundle"):
        compose_soul(bundle)


def test_an_empty_tar_is_an_empty_home(tmp_path: Path) -> None:
    bundle = tmp_path / "empty.tar"
    bundle.write_bytes(bytes(10240))
    assert compose_soul(bundle) == ("", [])


def test_a_missing_tar_bundle_names_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nothere\.tgz: no such persona bundle"):
        compose_soul(f"tar://aster::{tmp_path / 'nothere.tgz'}")
