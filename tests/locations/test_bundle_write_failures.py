"""``write_bundle``'s answer (names in BOOTSTRAP_ORDER) and its failed writes: a
failed write leaves no partial bundle behind.

A full disk is produced for real, never faked: the ``toolnexus`` command runs inside a private
mount namespace (``unshare --user --map-root-user --mount``, which needs no root where unprivileged
user namespaces are allowed: checked here as root and as uid 65534) on a 64 KiB tmpfs filled to
the last byte, so the kernel answers ENOSPC. Where namespaces are not allowed (some containers;
Ubuntu 24.04's AppArmor default) that test is skipped, saying so, and the RLIMIT_FSIZE tests still
prove the same error path everywhere: ``setrlimit`` caps the size of any file the process writes,
for root too, and with SIGXFSZ ignored the kernel fails the write with EFBIG instead of killing it.
"""

from __future__ import annotations

import errno
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.cli import TOOLNEXUS, run
from toolnexus.agents import BOOTSTRAP_ORDER, compose_soul, write_bundle

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "aster"
UNSHARE = shutil.which("unshare")
ALL_NAMES = ", ".join(BOOTSTRAP_ORDER)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLE, tmp_path / "aster"))


def reversed_zip(home: Path, out: Path) -> Path:
    """A bundle whose members are stored in the reverse of BOOTSTRAP_ORDER."""
    with zipfile.ZipFile(out, "w") as archive:
        for name in reversed(BOOTSTRAP_ORDER):
            archive.writestr(f"aster/{name}", (home / name).read_bytes())
    return out


def test_names_come_in_bootstrap_order_from_a_zip_home_in_another_order(home: Path, tmp_path: Path) -> None:
    source = reversed_zip(home, tmp_path / "reversed.zip")
    assert write_bundle(source, tmp_path / "out.zip") == list(BOOTSTRAP_ORDER)
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        assert archive.namelist() == list(BOOTSTRAP_ORDER)
    assert compose_soul(tmp_path / "out.zip") == compose_soul(home)


def test_the_wrote_line_shows_bootstrap_order(home: Path, tmp_path: Path) -> None:
    source = reversed_zip(home, tmp_path / "reversed.zip")
    out = tmp_path / "out.zip"
    result = run("bundle", str(source), str(out))
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == f"wrote {out}: 7 files ({ALL_NAMES})\n"


def test_one_file_is_one_file(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "SOUL.md").write_bytes(b"You are Aster.")
    out = tmp_path / "out.zip"
    result = run("bundle", str(tmp_path / "home"), str(out))
    assert result.stdout == f"wrote {out}: 1 file (SOUL.md)\n"


def assert_names_out(stderr: str, out: Path, reason: str) -> None:
    """One error line that names the bundle being written and the OS's reason."""
    assert stderr.splitlines() == [f"toolnexus: error: {out}: cannot write the bundle ({reason})"], stderr


def user_namespaces_work(scratch: Path) -> bool:
    if UNSHARE is None or not sys.platform.startswith("linux"):
        return False
    probe = subprocess.run(
        [UNSHARE, "--user", "--map-root-user", "--mount", "mount", "-t", "tmpfs", "tmpfs", str(scratch)],
        check=False,
        capture_output=True,
        timeout=30,
    )
    return probe.returncode == 0


#: Inside the namespace: mount a 64 KiB tmpfs, write a first bundle, fill the disk, then try to
#: replace the bundle (--force). Prints the bundle's hash and the directory listing afterwards,
#: because the tmpfs disappears with the namespace.
FULL_DISK_SCRIPT = """
set -u
mount -t tmpfs -o size=64k tmpfs "$1" || exit 99
"$2" bundle "$3" "$1/aster.zip" >/dev/null || exit 98
sha256sum "$1/aster.zip" | cut -d' ' -f1
cat /dev/zero > "$1/fill" 2>/dev/null
"$2" bundle --force "$4" "$1/aster.zip"
echo "exit $?"
sha256sum "$1/aster.zip" | cut -d' ' -f1
ls -A "$1"
"""


@pytest.mark.slow
def test_a_full_disk_names_the_bundle_and_keeps_the_old_one(home: Path, tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    if not user_namespaces_work(disk):
        pytest.skip("unprivileged user and mount namespaces are not available here")
    other = Path(shutil.copytree(home, tmp_path / "other"))
    (other / "SOUL.md").write_text("A different soul, so the new bundle differs.\n")
    result = subprocess.run(
        [
            UNSHARE,
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            FULL_DISK_SCRIPT,
            "sh",
            str(disk),
            str(TOOLNEXUS),
            str(home),
            str(other),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    old_hash, status, new_hash, *listing = result.stdout.splitlines()
    assert status == "exit 2", result
    assert_names_out(result.stderr, disk / "aster.zip", "No space left on device")
    assert new_hash == old_hash  # the bundle that was there is intact
    assert sorted(listing) == ["aster.zip", "fill"]  # and no temporary file is left behind


#: Runs ARGV with the file-size limit set to 1 KiB and SIGXFSZ ignored (so writes fail with EFBIG).
LIMITED = (
    "import os, resource, signal, sys\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n"
)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")
def test_a_failed_write_names_the_bundle_and_leaves_nothing(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "aster.zip"
    out.parent.mkdir()
    command = [sys.executable, "-c", LIMITED, str(TOOLNEXUS), "bundle", str(home), str(out)]
    result = subprocess.run(command, check=False, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result
    assert_names_out(result.stderr, out, "File too large")
    assert list(out.parent.iterdir()) == []


LIBRARY = (
    "import os, resource, signal, sys\n"
    "from toolnexus.agents import write_bundle\n"
    "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
    "resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))\n"
    "try:\n"
    "    write_bundle(sys.argv[1], sys.argv[2])\n"
    "except OSError as error:\n"
    "    print(type(error).__name__, error.errno, error, sep='|')\n"
)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")
def test_the_library_error_keeps_its_errno_and_names_the_bundle(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "aster.zip"
    result = subprocess.run(
        [sys.executable, "-c", LIBRARY, str(home), str(out)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    kind, code, message = result.stdout.strip().split("|")
    assert (kind, int(code)) == ("OSError", errno.EFBIG)
    assert message == f"{out}: cannot write the bundle (File too large)"
    assert not out.exists()
