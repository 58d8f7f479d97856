"""Every error of the core contract, with its message; and the local source's file-type rules."""

from __future__ import annotations

import errno
import importlib
import io
import os
import socket
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import pytest
import s3fs

from tests.support import MotoServer, put_objects
from tests.support.files import DictSource, make_home
from toolnexus.agents import BootstrapError, compose_soul, inspect_soul
from toolnexus.sources import local as local_source

# --- the home itself -------------------------------------------------------------------------


def test_missing_local_home_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match=f"{missing}: no such persona home"):
        compose_soul(missing)


def test_missing_memory_home_names_it() -> None:
    fs = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)
    with pytest.raises(FileNotFoundError, match="memory:///nowhere: no such persona home"):
        compose_soul("/nowhere", fs=fs)


def test_missing_s3_home_names_it(s3_options: dict[str, Any], new_bucket: Callable[[], str]) -> None:
    bucket = new_bucket()
    with pytest.raises(FileNotFoundError, match=f"s3://{bucket}/nowhere: no such persona home"):
        compose_soul(f"s3://{bucket}/nowhere", storage_options=s3_options)


def test_regular_file_that_is_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "aster.zip"
    path.write_text("just text")
    message = "aster.zip: is a file, neither a directory nor a zip bundle"
    with pytest.raises(NotADirectoryError, match=message):
        compose_soul(path)


def test_regular_file_that_is_not_a_zip_in_memory() -> None:
    fs = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)
    fs.pipe_file("/notes.txt", b"hello")
    with pytest.raises(NotADirectoryError, match="memory:///notes.txt"):
        compose_soul("/notes.txt", fs=fs)


def test_corrupt_bundle_is_a_bootstrap_error(tmp_path: Path) -> None:
    path = tmp_path / "aster.zip"
    path.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    with pytest.raises(BootstrapError, match="aster.zip: corrupt zip bundle"):
        compose_soul(path)


def test_bundle_with_a_name_twice_is_ambiguous(tmp_path: Path) -> None:
    path = tmp_path / "aster.zip"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("SOUL.md", b"one")
        with pytest.warns(UserWarning, match="Duplicate name"):
            archive.writestr("SOUL.md", b"two")
    path.write_bytes(buffer.getvalue())
    with pytest.raises(BootstrapError, match="SOUL.md in .*aster.zip: the bundle holds this member twice"):
        compose_soul(path)


def test_bundle_member_names_are_matched_literally(tmp_path: Path) -> None:
    path = tmp_path / "aster.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("../AGENTS.md", b"escape")
        archive.writestr("/SOUL.md", b"absolute")
        archive.writestr("USER.md", b"Mira")
    assert compose_soul(path) == ("## USER.md\n\nMira", ["USER.md"])


# --- options ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "kwargs", "message"),
    [
        ("/x", {"storage_options": {"a": 1}, "fs": fsspec.filesystem("memory")}, "not both"),
        (DictSource(location="tiny://"), {"storage_options": {"a": 1}}, "cannot apply to a BootstrapSource"),
        (
            DictSource(location="tiny://"),
            {"follow_external_symlinks": True},
            "cannot apply to a BootstrapSource",
        ),
        ("relative/home", {"storage_options": {"a": 1}}, "cannot apply to the local path"),
        (42, {}, "expected a path, an fsspec URL, a UPath or a BootstrapSource, not int"),
        ("zip://a::memory://b.zip", {"storage_options": {"zip": {"x": 1}}}, "zip:// hop takes no storage"),
    ],
)
def test_options_that_cannot_apply_are_type_errors(
    location: Any, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        compose_soul(location, **kwargs)


def test_upath_with_storage_options_is_a_type_error() -> None:
    from upath import UPath  # noqa: PLC0415

    with pytest.raises(TypeError, match="UPath carries its own"):
        compose_soul(UPath("memory://x"), storage_options={"a": 1})


def test_missing_backend_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    registry_module = importlib.import_module("fsspec.registry")  # `fsspec.registry` is a mapping
    monkeypatch.setitem(sys.modules, "s3fs", None)  # makes `import s3fs` fail
    monkeypatch.delitem(registry_module._registry, "s3", raising=False)
    with pytest.raises(ImportError, match=r"s3://bucket/aster: .*pip install 'toolnexus\[s3\]'"):
        compose_soul("s3://bucket/aster")


@pytest.mark.parametrize(
    ("url", "packages", "extra"),
    [
        ("gs://bucket/aster", ["gcsfs"], "gcs"),
        ("gcs://bucket/aster", ["gcsfs"], "gcs"),
        ("az://container/aster", ["adlfs"], "azure"),
        ("abfss://container/aster", ["adlfs"], "azure"),
        ("https://personas.example/aster", ["aiohttp", "fsspec.implementations.http"], "http"),
        ("zip://aster::s3a://bucket/aster.zip", ["s3fs"], "s3"),
        ("simplecache::gs://bucket/aster", ["gcsfs"], "gcs"),
    ],
)
def test_every_missing_backend_names_its_extra(
    monkeypatch: pytest.MonkeyPatch, url: str, packages: list[str], extra: str
) -> None:
    """As a machine without the package sees it: the import fails, and fsspec has no class cached."""
    classes = importlib.import_module("fsspec.registry")._registry
    for package in packages:
        monkeypatch.setitem(sys.modules, package, None)
    for protocol in ("gs", "gcs", "az", "abfs", "abfss", "http", "https", "s3", "s3a"):
        monkeypatch.delitem(classes, protocol, raising=False)
    hop = url.rsplit("::", 1)[-1].split("://", maxsplit=1)[0]
    with pytest.raises(ImportError, match=rf"{hop}://.*: the {hop}:// backend is not installed "):
        compose_soul(url)
    with pytest.raises(ImportError, match=rf"\(pip install 'toolnexus\[{extra}\]'\)$"):
        compose_soul(url)


def test_every_extra_in_the_protocol_table_exists() -> None:
    """A hint never names an extra pyproject.toml does not define."""
    import tomllib  # noqa: PLC0415

    from toolnexus.sources import backends  # noqa: PLC0415

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    defined = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    named = {row.protocol: row.extra for row in backends() if row.extra}
    assert {"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "http", "https"} <= set(named)
    assert set(named.values()) <= set(defined)


def test_a_user_source_returning_text_is_a_type_error() -> None:
    class TextSource:
        location = "text://"

        def read(self, names: Any, limit: int) -> dict[str, Any]:
            return {"SOUL.md": "not bytes"}

    with pytest.raises(TypeError, match="text://: read\\(\\) returned str for SOUL.md"):
        compose_soul(TextSource())


# --- files that exist but cannot be read ----------------------------------------------------


def test_unreadable_file_is_a_permission_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = make_home(tmp_path / "home", {"SOUL.md": b"a", "USER.md": b"b"})
    real_open = os.open

    def deny_user(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith("USER.md"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(local_source.os, "open", deny_user)
    with pytest.raises(PermissionError, match=f"cannot read USER.md in {home}: permission denied"):
        compose_soul(home)


def test_failed_read_is_a_bootstrap_error_chained_to_the_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = make_home(tmp_path / "home", {"SOUL.md": b"a"})

    def broken_read(fd: int, n: int) -> bytes:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(local_source.os, "read", broken_read)
    with pytest.raises(BootstrapError, match=f"cannot read SOUL.md in {home}") as caught:
        compose_soul(home)
    assert isinstance(caught.value.__cause__, OSError)
    assert caught.value.errno == errno.EIO


# --- local file types and symlinks -----------------------------------------------------------


def test_names_are_case_sensitive(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", {"soul.md": b"lower", "Agents.md": b"mixed", "USER.md": b"Mira"})
    assert compose_soul(home) == ("## USER.md\n\nMira", ["USER.md"])


def test_directories_fifos_and_sockets_are_skipped_without_blocking(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", {"USER.md": b"Mira"})
    (home / "AGENTS.md").mkdir()
    os.mkfifo(home / "SOUL.md")  # opening this without O_NONBLOCK would block forever
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(home / "TOOLS.md"))
        assert compose_soul(home) == ("## USER.md\n\nMira", ["USER.md"])
        statuses = {f.name: f.status for f in inspect_soul(home).files}
    assert statuses["AGENTS.md"] == statuses["SOUL.md"] == statuses["TOOLS.md"] == "skipped"
    assert statuses["USER.md"] == "present"
    assert statuses["IDENTITY.md"] == "absent"


def test_symlink_inside_the_home_is_followed(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", {})
    (home / "drafts").mkdir()
    (home / "drafts" / "soul-v2.md").write_bytes(b"You are Aster, v2.")
    (home / "SOUL.md").symlink_to("drafts/soul-v2.md")
    assert compose_soul(home) == ("## SOUL.md\n\nYou are Aster, v2.", ["SOUL.md"])


def test_symlink_escaping_the_home_is_refused_without_opening_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"private key")
    home = make_home(tmp_path / "home", {"USER.md": b"Mira"})
    (home / "SOUL.md").symlink_to(secret)
    opened: list[str] = []
    real_open = os.open

    def recording_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        opened.append(str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(local_source.os, "open", recording_open)
    with pytest.raises(BootstrapError, match=f"SOUL.md in {home} is a symlink to {secret}, outside the home"):
        compose_soul(home)
    assert not any("secret" in path for path in opened)


def test_follow_external_symlinks_opts_in(tmp_path: Path) -> None:
    shared = tmp_path / "shared-user.md"
    shared.write_bytes(b"Mira, shared across personas")
    home = make_home(tmp_path / "home", {})
    (home / "USER.md").symlink_to(shared)
    assert compose_soul(home, follow_external_symlinks=True) == (
        "## USER.md\n\nMira, shared across personas",
        ["USER.md"],
    )


def test_dangling_symlink_is_an_error(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", {})
    (home / "SOUL.md").symlink_to(home / "gone.md")
    with pytest.raises(BootstrapError, match=f"SOUL.md in {home} is a dangling symlink"):
        compose_soul(home)


def test_symlink_loop_is_an_error_not_a_hang(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", {})
    (home / "SOUL.md").symlink_to(home / "loop.md")
    (home / "loop.md").symlink_to(home / "SOUL.md")
    with pytest.raises(BootstrapError, match=f"SOUL.md in {home} is a symlink that cannot be resolved"):
        compose_soul(home)


def test_symlink_to_a_directory_inside_is_skipped(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", {"USER.md": b"Mira"})
    (home / "notes").mkdir()
    (home / "SOUL.md").symlink_to(home / "notes")
    assert compose_soul(home) == ("## USER.md\n\nMira", ["USER.md"])


# --- freshness on S3 -------------------------------------------------------------------------


def test_s3_composition_is_never_stale(
    moto_server: MotoServer, s3_options: dict[str, Any], new_bucket: Callable[[], str]
) -> None:
    bucket = new_bucket()
    fs = s3fs.S3FileSystem(**s3_options)
    put_objects(moto_server.endpoint_url, bucket, {"home/README.txt": b"x"})
    assert compose_soul(f"{bucket}/home", fs=fs) == ("", [])
    fs.ls(f"{bucket}/home")  # warm s3fs's listing cache
    put_objects(moto_server.endpoint_url, bucket, {"home/SOUL.md": b"You are Aster."})
    assert compose_soul(f"{bucket}/home", fs=fs) == ("## SOUL.md\n\nYou are Aster.", ["SOUL.md"])
    fs.ls(f"{bucket}/home")
    fs.rm(f"{bucket}/home", recursive=True)
    fs.ls(bucket)  # the cache would still say the prefix exists if it were trusted
    with pytest.raises(FileNotFoundError, match="no such persona home"):
        compose_soul(f"{bucket}/home", fs=fs)
