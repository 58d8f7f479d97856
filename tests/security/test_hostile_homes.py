"""Hostile or broken local homes: files swapped for symlinks (or FIFOs) between the scan and the
open, devices, odd symlink targets, unreadable files and directories, read-only homes.

Races are made deterministic by running the swap inside the library's own calls (a wrapped
``os.scandir`` / ``os.path.realpath``), exactly between the check and the open.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.files import make_home
from toolnexus.agents import BootstrapError, compose_soul, inspect_soul
from toolnexus.sources import local as local_source

SECRET = b"-----BEGIN PRIVATE KEY----- do not leak"
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "soul.md"
    path.write_bytes(SECRET)
    return path


def home_with_linked_soul(path: Path, files: dict[str, bytes]) -> Path:
    """A home whose SOUL.md is a symlink to ``drafts/soul.md`` inside it (legitimate, until swapped)."""
    home = make_home(path, files)
    (home / "drafts").mkdir()
    (home / "drafts" / "soul.md").write_bytes(b"You are Aster.")
    (home / "SOUL.md").symlink_to("drafts/soul.md")
    return home


class IoLog:
    """Every path/flags given to ``os.open`` and every byte string ``os.read`` returned."""

    def __init__(self) -> None:
        self.opened: list[tuple[str, int]] = []
        self.read: list[bytes] = []

    def saw_secret(self) -> bool:
        return any(SECRET in data for data in self.read)


@pytest.fixture
def io_log(monkeypatch: pytest.MonkeyPatch) -> IoLog:
    log = IoLog()
    real_open, real_read = os.open, os.read

    def logging_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        log.opened.append((str(path), flags))
        return real_open(path, flags, *args, **kwargs)

    def logging_read(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        log.read.append(data)
        return data

    monkeypatch.setattr(local_source.os, "open", logging_open)
    monkeypatch.setattr(local_source.os, "read", logging_read)
    return log


def swap_after_scan(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> None:
    """Run ``swap`` right after the library's scandir of the home, before it opens anything."""
    real_scandir = os.scandir

    def scandir_then_swap(target: Any) -> contextlib.AbstractContextManager[Iterator[os.DirEntry[str]]]:
        with real_scandir(target) as scan:
            entries = list(scan)  # DirEntry keeps the type it saw: a regular file
        swap()
        return contextlib.nullcontext(iter(entries))

    monkeypatch.setattr(local_source.os, "scandir", scandir_then_swap)


def swap_after_resolving(monkeypatch: pytest.MonkeyPatch, link: Path, swap: Callable[[], None]) -> None:
    """Run ``swap`` right after the library resolved (and will check) the symlink ``link``."""
    real_realpath = os.path.realpath
    done: list[bool] = []

    def realpath_then_swap(path: Any, *args: Any, **kwargs: Any) -> str:
        resolved = real_realpath(path, *args, **kwargs)
        if str(path) == str(link) and not done:
            done.append(True)
            swap()
        return resolved

    monkeypatch.setattr(local_source.os.path, "realpath", realpath_then_swap)


# --- a file swapped between the scan and the open -------------------------------------------


def test_file_swapped_for_an_escaping_symlink_after_the_scan_is_not_followed(
    tmp_path: Path, secret: Path, monkeypatch: pytest.MonkeyPatch, io_log: IoLog
) -> None:
    home = make_home(tmp_path / "home", {"SOUL.md": b"You are Aster.", "USER.md": b"Mira"})

    def swap() -> None:
        (home / "SOUL.md").unlink()
        (home / "SOUL.md").symlink_to(secret)

    swap_after_scan(monkeypatch, swap)
    with pytest.raises(BootstrapError, match=f"SOUL.md in {home} became a symlink after it was scanned"):
        compose_soul(home)
    assert not io_log.saw_secret()
    assert all(path != str(secret) for path, _ in io_log.opened)


def test_file_swapped_for_an_inner_symlink_after_the_scan_is_not_followed_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = make_home(tmp_path / "home", {"SOUL.md": b"v1", "draft.md": b"v2"})

    def swap() -> None:
        (home / "SOUL.md").unlink()
        (home / "SOUL.md").symlink_to("draft.md")

    swap_after_scan(monkeypatch, swap)
    with pytest.raises(BootstrapError, match="SOUL.md .* became a symlink"):
        compose_soul(home)


@pytest.mark.timeout(60)  # a hang guard (a FIFO opened for reading blocks forever)
@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_file_swapped_for_a_fifo_or_directory_after_the_scan_is_skipped_without_blocking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    home = make_home(tmp_path / "home", {"SOUL.md": b"You are Aster.", "USER.md": b"Mira"})

    def swap() -> None:
        (home / "SOUL.md").unlink()
        if kind == "fifo":
            os.mkfifo(home / "SOUL.md")  # a blocking open would wait for a writer forever
        else:
            (home / "SOUL.md").mkdir()

    swap_after_scan(monkeypatch, swap)
    assert compose_soul(home) == ("## USER.md\n\nMira", ["USER.md"])


def test_file_removed_after_the_scan_is_absent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = make_home(tmp_path / "home", {"SOUL.md": b"You are Aster.", "USER.md": b"Mira"})
    swap_after_scan(monkeypatch, (home / "SOUL.md").unlink)
    assert compose_soul(home) == ("## USER.md\n\nMira", ["USER.md"])


# --- a symlink retargeted between resolving and opening -------------------------------------


def test_symlink_target_swapped_for_an_escaping_symlink_after_the_check(
    tmp_path: Path, secret: Path, monkeypatch: pytest.MonkeyPatch, io_log: IoLog
) -> None:
    home = home_with_linked_soul(tmp_path / "home", {})

    def swap() -> None:
        (home / "drafts" / "soul.md").unlink()
        (home / "drafts" / "soul.md").symlink_to(secret)

    swap_after_resolving(monkeypatch, home / "SOUL.md", swap)
    with pytest.raises(BootstrapError, match=f"SOUL.md in {home}"):
        compose_soul(home)
    assert not io_log.saw_secret()


@pytest.mark.skipif(local_source._PROC_FD is None, reason="needs /proc/self/fd to re-check the open file")
def test_symlink_whose_folder_is_swapped_after_the_check_is_caught_after_opening(
    tmp_path: Path, secret: Path, monkeypatch: pytest.MonkeyPatch, io_log: IoLog
) -> None:
    home = home_with_linked_soul(tmp_path / "home", {})

    def swap() -> None:  # O_NOFOLLOW guards only the last component: swap a folder on the way
        (home / "drafts").rename(home / "drafts.old")
        (home / "drafts").symlink_to(secret.parent)

    swap_after_resolving(monkeypatch, home / "SOUL.md", swap)
    message = f"SOUL.md in {home} is a symlink to {secret}, outside the home"
    with pytest.raises(BootstrapError, match=message):
        compose_soul(home)
    assert not io_log.saw_secret()  # opened to learn where it leads, never read


# --- devices, and symlinks to odd places -----------------------------------------------------


@pytest.mark.timeout(60)  # a hang guard (a FIFO opened for reading blocks forever)
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_symlink_to_a_device_is_skipped_even_when_following_external_links(
    tmp_path: Path, device: str
) -> None:
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    home = make_home(tmp_path / "home", {"USER.md": b"Mira"})
    (home / "SOUL.md").symlink_to(device)
    assert compose_soul(home, follow_external_symlinks=True) == ("## USER.md\n\nMira", ["USER.md"])
    report = inspect_soul(home, follow_external_symlinks=True)
    assert {f.name: f.status for f in report.files}["SOUL.md"] == "skipped"
    with pytest.raises(BootstrapError, match=f"SOUL.md in {home} is a symlink to {device}, outside the home"):
        compose_soul(home)


@pytest.mark.timeout(60)  # a hang guard (a FIFO opened for reading blocks forever)
def test_device_node_in_the_home_is_skipped(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", {"USER.md": b"Mira"})
    try:
        os.mknod(home / "SOUL.md", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # what /dev/zero is
    except (PermissionError, OSError) as error:
        pytest.skip(f"cannot create a device node here: {error}")
    assert compose_soul(home) == ("## USER.md\n\nMira", ["USER.md"])


@pytest.mark.timeout(60)  # a hang guard (a FIFO opened for reading blocks forever)
@pytest.mark.parametrize("outside", [False, True])
def test_symlink_to_a_fifo_is_skipped_without_blocking(tmp_path: Path, outside: bool) -> None:
    home = make_home(tmp_path / "home", {"USER.md": b"Mira"})
    fifo = (tmp_path if outside else home) / "pipe"
    os.mkfifo(fifo)
    (home / "SOUL.md").symlink_to(fifo)
    assert compose_soul(home, follow_external_symlinks=outside) == ("## USER.md\n\nMira", ["USER.md"])


@pytest.mark.timeout(60)  # a hang guard (a FIFO opened for reading blocks forever)
@pytest.mark.parametrize(
    ("target", "outcome"),
    [
        (".", "skipped"),  # the home itself: a directory
        ("..", "outside"),
        ("/", "outside"),
        ("SOUL.md", "unresolvable"),  # points at itself
        ("nowhere/SOUL.md", "dangling"),
    ],
)
def test_odd_symlink_targets_are_skipped_or_errors_never_hangs(
    tmp_path: Path, target: str, outcome: str
) -> None:
    home = make_home(tmp_path / "home", {"USER.md": b"Mira"})
    os.symlink(target, home / "SOUL.md")
    messages = {
        "outside": "is a symlink to .*, outside the home",
        "unresolvable": "is a symlink that cannot be resolved",
        "dangling": "is a dangling symlink",
    }
    if outcome == "skipped":
        assert compose_soul(home) == ("## USER.md\n\nMira", ["USER.md"])
    else:
        with pytest.raises(BootstrapError, match=f"SOUL.md in {home} {messages[outcome]}"):
            compose_soul(home)


def test_a_long_chain_of_inner_symlinks_is_followed(tmp_path: Path) -> None:
    home = make_home(tmp_path / "home", {"link-0": b"You are Aster."})
    for n in range(1, 60):  # longer than the kernel's 40-link limit: resolved hop by hop
        (home / f"link-{n}").symlink_to(f"link-{n - 1}")
    (home / "SOUL.md").symlink_to("link-59")
    assert compose_soul(home) == ("## SOUL.md\n\nYou are Aster.", ["SOUL.md"])


# --- unreadable files and homes (injected: chmod means nothing to root) ----------------------


def deny(monkeypatch: pytest.MonkeyPatch, matches: Callable[[str], bool], function: str = "open") -> None:
    real = getattr(os, function)

    def denying(path: Any, *args: Any, **kwargs: Any) -> Any:
        if matches(str(path)):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(local_source.os, function, denying)


def test_unreadable_symlink_target_is_a_permission_error_naming_the_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = home_with_linked_soul(tmp_path / "home", {"USER.md": b"Mira"})
    deny(monkeypatch, lambda path: path.endswith("drafts/soul.md"))
    with pytest.raises(PermissionError, match=f"cannot read SOUL.md in {home}: permission denied"):
        compose_soul(home)


def test_unreadable_home_is_a_permission_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = make_home(tmp_path / "home", {"USER.md": b"Mira"})
    deny(monkeypatch, lambda path: path == str(home))
    with pytest.raises(PermissionError, match=f"cannot read {home}: permission denied"):
        compose_soul(home)


def test_every_unreadable_file_is_an_error_never_a_missing_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = ["AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "MEMORY.md"]
    home = make_home(tmp_path / "home", {name: name.encode() for name in names})
    for denied in names:
        with monkeypatch.context() as patch:
            deny(patch, lambda path, denied=denied: path == denied)  # opened by name, relative to the home
            with pytest.raises(PermissionError, match=f"cannot read {denied} in {home}"):
                compose_soul(home)


# --- read-only homes -------------------------------------------------------------------------


def snapshot(root: Path) -> dict[str, tuple[bytes | None, int, int]]:
    """Bytes, mtime and mode of everything under ``root`` (and of root itself)."""
    result = {".": (None, root.stat().st_mtime_ns, root.stat().st_mode)}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        data = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
        result[str(path.relative_to(root))] = (data, info.st_mtime_ns, info.st_mode)
    return result


@pytest.fixture
def read_only_home(tmp_path: Path) -> Iterator[Path]:
    home = make_home(
        tmp_path / "home",
        {"AGENTS.md": b"Be brief.\r\n", "SOUL.md": b"\xef\xbb\xbfYou are Aster.", "USER.md": b"Mira"},
    )
    with zipfile.ZipFile(tmp_path / "aster.zip", "w") as archive:
        for path in sorted(home.iterdir()):
            archive.write(path, path.name)
    for path in [*home.iterdir(), tmp_path / "aster.zip"]:
        path.chmod(0o444)
    home.chmod(0o555)
    yield home
    home.chmod(0o755)


def test_read_only_home_composes_and_is_left_exactly_as_it_was(read_only_home: Path, io_log: IoLog) -> None:
    home = read_only_home
    before = snapshot(home.parent)
    expected = (
        "## AGENTS.md\n\nBe brief.\n\n## SOUL.md\n\nYou are Aster.\n\n## USER.md\n\nMira",
        ["AGENTS.md", "SOUL.md", "USER.md"],
    )
    assert compose_soul(home) == expected
    assert inspect_soul(home).found == expected[1]
    assert compose_soul(home.parent / "aster.zip") == expected
    assert snapshot(home.parent) == before
    assert io_log.opened, "the local source opens files with os.open"
    assert not [path for path, flags in io_log.opened if flags & WRITE_FLAGS]
