"""Hostile and broken zip bundles: every failure is a BootstrapError naming the bundle (and member),
a non-zip file is a NotADirectoryError, a zip bomb inflates no further than the cap, names that
point outside the archive never match, and arbitrary bytes never hang or raise anything else."""

from __future__ import annotations

import io
import os
import struct
import tracemalloc
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import fsspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.files import zip_bytes
from toolnexus.agents import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, BootstrapError, compose_soul
from toolnexus.sources import BundleSource

NOTICE = "\n\n[truncated: exceeds 2 MB bootstrap cap]"
PERSONA = {"AGENTS.md": b"Be brief.", "SOUL.md": b"You are Aster.", "USER.md": b"Mira"}
EXPECTED = (
    "## AGENTS.md\n\nBe brief.\n\n## SOUL.md\n\nYou are Aster.\n\n## USER.md\n\nMira",
    ["AGENTS.md", "SOUL.md", "USER.md"],
)


def write(tmp_path: Path, data: bytes, name: str = "aster.zip") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def central_entries(data: bytes) -> Iterator[tuple[int, str, int]]:
    """(offset of the central-directory entry, member name, offset of its local header)."""
    eocd = data.rindex(b"PK\x05\x06")
    count, _size, offset = struct.unpack("<HII", data[eocd + 10 : eocd + 20])
    for _ in range(count):
        name_len, extra_len, comment_len = struct.unpack("<HHH", data[offset + 28 : offset + 34])
        (local,) = struct.unpack("<I", data[offset + 42 : offset + 46])
        yield offset, data[offset + 46 : offset + 46 + name_len].decode(), local
        offset += 46 + name_len + extra_len + comment_len


def patch_member(data: bytes, name: str, *, flags: int = 0, method: int | None = None) -> bytes:
    """Set general-purpose flag bits and/or the compression method of ``name`` in both headers."""
    out = bytearray(data)
    for central, member, local in central_entries(data):
        if member != name:
            continue
        for flag_at, method_at in ((central + 8, central + 10), (local + 6, local + 8)):
            (old,) = struct.unpack("<H", out[flag_at : flag_at + 2])
            out[flag_at : flag_at + 2] = struct.pack("<H", old | flags)
            if method is not None:
                out[method_at : method_at + 2] = struct.pack("<H", method)
        return bytes(out)
    raise AssertionError(f"{name} not in the archive")


# --- not a zip at all ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [b"", b"just text", b"\x89PNG\r\n\x1a\n" + bytes(64), b"PK", b"%PDF-1.7\n" + b"x" * 100],
    ids=["empty", "text", "png", "two-bytes", "pdf"],
)
def test_a_file_that_is_not_a_zip_is_not_a_directory(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path, data)
    with pytest.raises(NotADirectoryError, match=f"{path}: is a file, neither a directory nor a zip bundle"):
        compose_soul(path)


def test_an_empty_zip_is_an_empty_home(tmp_path: Path) -> None:
    assert compose_soul(write(tmp_path, zip_bytes({}))) == ("", [])


# --- truncated and corrupt archives ----------------------------------------------------------


@pytest.mark.parametrize("keep", [0.25, 0.5, 0.9, -1, -10, -22])
def test_truncated_zip_is_a_bootstrap_error_naming_the_bundle(tmp_path: Path, keep: float) -> None:
    data = zip_bytes(PERSONA)
    cut = int(len(data) * keep) if keep > 0 else len(data) + int(keep)
    path = write(tmp_path, data[:cut])
    with pytest.raises(BootstrapError, match=f"{path}: corrupt zip bundle"):
        compose_soul(path)


def test_corrupt_central_directory_signature(tmp_path: Path) -> None:
    data = zip_bytes(PERSONA)
    central, _, _ = next(central_entries(data))
    path = write(tmp_path, data[:central] + b"XXXX" + data[central + 4 :])
    with pytest.raises(BootstrapError, match=f"{path}: corrupt zip bundle"):
        compose_soul(path)


def test_central_directory_offset_out_of_range(tmp_path: Path) -> None:
    data = bytearray(zip_bytes(PERSONA))
    eocd = data.rindex(b"PK\x05\x06")
    data[eocd + 16 : eocd + 20] = struct.pack("<I", 0xFFFF_FFF0)
    path = write(tmp_path, bytes(data))
    # zipfile may take the directory and fail at the first member: either way, the bundle is named.
    with pytest.raises(BootstrapError, match=f"({path}: corrupt zip bundle|cannot read AGENTS.md in {path})"):
        compose_soul(path)


def test_central_directory_pointing_at_garbage_names_the_member(tmp_path: Path) -> None:
    data = bytearray(zip_bytes(PERSONA))
    for central, name, _ in central_entries(bytes(data)):
        if name == "SOUL.md":
            data[central + 42 : central + 46] = struct.pack("<I", 5)  # into the first member's header
    path = write(tmp_path, bytes(data))
    with pytest.raises(BootstrapError, match=f"cannot read SOUL.md in {path}: .*file header") as caught:
        compose_soul(path)
    assert isinstance(caught.value.__cause__, zipfile.BadZipFile)


def test_member_with_a_bad_crc_is_never_presented_as_complete(tmp_path: Path) -> None:
    data = bytearray(zip_bytes(PERSONA, compression=zipfile.ZIP_STORED))
    at = data.index(b"You are Aster.")
    data[at : at + 3] = b"Yov"  # same length, different bytes: only the CRC can tell
    path = write(tmp_path, bytes(data))
    with pytest.raises(BootstrapError, match=f"cannot read SOUL.md in {path}: Bad CRC-32"):
        compose_soul(path)


def test_member_whose_data_runs_past_the_archive_names_the_member(tmp_path: Path) -> None:
    data = bytearray(zip_bytes(PERSONA, compression=zipfile.ZIP_STORED))
    for central, name, _ in central_entries(bytes(data)):
        if name == "USER.md":  # the last member claims far more bytes than the archive holds
            data[central + 20 : central + 28] = struct.pack("<II", 1_000_000, 1_000_000)
    path = write(tmp_path, bytes(data))
    with pytest.raises(BootstrapError, match=f"cannot read USER.md in {path}"):
        compose_soul(path)


# --- encryption and compression methods -------------------------------------------------------


@pytest.mark.parametrize("flags", [0x1, 0x1 | 0x40], ids=["zipcrypto", "strong-encryption"])
def test_encrypted_member_is_refused_naming_bundle_and_member(tmp_path: Path, flags: int) -> None:
    path = write(tmp_path, patch_member(zip_bytes(PERSONA), "SOUL.md", flags=flags))
    with pytest.raises(BootstrapError, match=f"cannot read SOUL.md in {path}: the member is encrypted"):
        compose_soul(path)


@pytest.mark.parametrize(
    ("method", "label"),
    [(99, "unknown"), (9, "deflate64"), (97, "wavpack"), (6, "implode"), (93, "unknown|zstd")],
)
def test_unsupported_compression_is_refused(tmp_path: Path, method: int, label: str) -> None:
    path = write(tmp_path, patch_member(zip_bytes(PERSONA), "USER.md", method=method))
    message = f"cannot read USER.md in {path}: unsupported compression method {method} \\(({label})\\)"
    with pytest.raises(BootstrapError, match=message):
        compose_soul(path)


@pytest.mark.parametrize("compression", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA], ids=["bzip2", "lzma"])
def test_bzip2_and_lzma_members_are_refused_because_zipfile_inflates_them_unbounded(
    tmp_path: Path, compression: int
) -> None:
    path = write(tmp_path, zip_bytes(PERSONA, compression=compression))
    with pytest.raises(BootstrapError, match=f"cannot read AGENTS.md in {path}: unsupported compression"):
        compose_soul(path)


def test_a_refused_member_outside_the_home_does_not_matter(tmp_path: Path) -> None:
    data = zip_bytes({**PERSONA, "assets/big.bin": b"x" * 100}, compression=zipfile.ZIP_STORED)
    path = write(tmp_path, patch_member(data, "assets/big.bin", flags=0x1, method=99))
    assert compose_soul(path) == EXPECTED


# --- zip bombs --------------------------------------------------------------------------------

#: 32 times the 2 MiB cap: inflating the member whole would show in both checks below (peak memory,
#: bytes inflated) as surely as 512 MiB would, at an eighth of the cost to build. ``--stress``
#: builds the 512 MiB one.
BOMB_SIZE, STRESS_BOMB_SIZE = 64 * 1024 * 1024, 512 * 1024 * 1024


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory, stress: bool) -> Path:
    """SOUL.md inflating to 64 MiB (512 MiB with --stress) of zeros, written in 1 MiB chunks."""
    size = STRESS_BOMB_SIZE if stress else BOMB_SIZE
    path = tmp_path_factory.mktemp("bomb") / "bomb.zip"
    chunk = bytes(1024 * 1024)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("AGENTS.md", b"Be brief.")
        info = zipfile.ZipInfo("SOUL.md")
        info.compress_type = zipfile.ZIP_DEFLATED
        info.file_size = size
        with archive.open(info, "w") as member:
            for _ in range(size // len(chunk)):
                member.write(chunk)
    assert path.stat().st_size < 4 * 1024 * 1024
    return path


def test_zip_bomb_inflates_at_most_the_cap_with_bounded_memory(bomb: Path) -> None:
    tracemalloc.start()
    try:
        soul, found = compose_soul(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found == ["AGENTS.md", "SOUL.md"]
    assert soul == "## AGENTS.md\n\nBe brief.\n\n## SOUL.md\n\n" + "\0" * MAX_BOOTSTRAP_FILE_BYTES + NOTICE
    # The soul itself is ~2 MiB of text (plus one byte array while composing); the bomb never is.
    assert peak < 24 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB"


def test_zip_bomb_reads_only_about_the_cap_of_the_archive(
    bomb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inflated: list[int] = []
    real_read = zipfile.ZipExtFile.read

    def counting_read(self: zipfile.ZipExtFile, n: int = -1) -> bytes:
        data = real_read(self, n)
        inflated.append(len(data))
        return data

    monkeypatch.setattr(zipfile.ZipExtFile, "read", counting_read)
    compose_soul(bomb)
    assert max(inflated) <= MAX_BOOTSTRAP_FILE_BYTES + 1
    assert sum(inflated) <= 2 * MAX_BOOTSTRAP_FILE_BYTES


def test_header_understating_the_size_cannot_smuggle_more_bytes(tmp_path: Path) -> None:
    data = bytearray(zip_bytes({"SOUL.md": b"A" * 10_000}))
    for central, name, _ in central_entries(bytes(data)):
        if name == "SOUL.md":
            data[central + 24 : central + 28] = struct.pack("<I", 10)  # claims 10 bytes
    path = write(tmp_path, bytes(data))
    with pytest.raises(BootstrapError, match=f"cannot read SOUL.md in {path}: Bad CRC-32"):
        compose_soul(path)


# --- names that point outside the archive, duplicates ----------------------------------------


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in root.rglob("*")
    }


@pytest.mark.parametrize(
    "names",
    [
        ["../AGENTS.md"],
        ["/AGENTS.md"],
        ["./AGENTS.md"],
        ["..\\AGENTS.md"],
        ["../../../../../../etc/passwd", "../AGENTS.md"],
        ["aster/../AGENTS.md", "aster/notes.txt"],
    ],
)
def test_names_pointing_outside_never_match_and_nothing_outside_is_touched(
    tmp_path: Path, names: list[str]
) -> None:
    (tmp_path / "AGENTS.md").write_bytes(b"the file next to the bundle directory")
    inner = tmp_path / "inner"
    inner.mkdir()
    path = write(inner, zip_bytes(dict.fromkeys(names, b"from the bundle")))
    before = _tree(tmp_path)
    assert compose_soul(path) == ("", [])
    assert _tree(tmp_path) == before


def test_escaping_names_next_to_real_ones_are_ignored(tmp_path: Path) -> None:
    files = {"../AGENTS.md": b"escape", "/SOUL.md": b"absolute", **PERSONA}
    assert compose_soul(write(tmp_path, zip_bytes(files))) == EXPECTED


def test_only_a_parent_folder_is_never_taken_as_the_home(tmp_path: Path) -> None:
    path = write(tmp_path, zip_bytes(PERSONA, folder="../"))
    assert compose_soul(path) == ("", [])


def test_a_duplicate_in_the_home_folder_is_ambiguous(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("aster/SOUL.md", b"one")
        with pytest.warns(UserWarning, match="Duplicate name"):
            archive.writestr("aster/SOUL.md", b"two")
    path = write(tmp_path, buffer.getvalue())
    message = f"aster/SOUL.md in {path}: the bundle holds this member twice"
    for _ in range(3):  # deterministic: the same error every time
        with pytest.raises(BootstrapError, match=message):
            compose_soul(path)


@pytest.mark.parametrize("folder_first", [True, False])
def test_a_file_and_a_folder_of_one_name_are_ambiguous_in_either_order(
    tmp_path: Path, folder_first: bool
) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        entries = [("SOUL.md/", b""), ("SOUL.md", b"You are Aster.")]
        for name, data in entries if folder_first else entries[::-1]:
            archive.writestr(name, data)
    path = write(tmp_path, buffer.getvalue())
    with pytest.raises(BootstrapError, match=f"SOUL.md in {path}: the bundle (holds this member twice|also)"):
        compose_soul(path)


def test_duplicates_of_names_that_are_not_bootstrap_files_do_not_matter(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in PERSONA.items():
            archive.writestr(name, data)
        archive.writestr("notes.txt", b"one")
        with pytest.warns(UserWarning, match="Duplicate name"):
            archive.writestr("notes.txt", b"two")
    assert compose_soul(write(tmp_path, buffer.getvalue())) == EXPECTED


# --- arbitrary bytes ---------------------------------------------------------------------------


def _outcome(compose: Callable[[], tuple[str, list[str]]]) -> tuple[str, list[str]] | OSError:
    """The result, or the error if it is one a bundle may raise (anything else propagates)."""
    try:
        return compose()
    except (BootstrapError, NotADirectoryError) as error:
        return error


def _compose_bytes(data: bytes) -> tuple[str, list[str]] | OSError:
    outcome = _outcome(lambda: compose_soul(BundleSource(lambda: io.BytesIO(data), "fuzz.zip")))
    if isinstance(outcome, OSError):
        assert "fuzz.zip" in str(outcome)
    else:
        soul, found = outcome
        assert found == [name for name in BOOTSTRAP_ORDER if name in found]
        assert isinstance(soul, str)
    return outcome


def _compose_bytes_via_fsspec(data: bytes) -> None:
    fs = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)
    fs.pipe_file("/fuzz.zip", data)
    outcome = _outcome(lambda: compose_soul("/fuzz.zip", fs=fs))
    if isinstance(outcome, OSError):
        assert "memory:///fuzz.zip" in str(outcome)


zip_signatures = st.sampled_from([b"", b"PK\x03\x04", b"PK\x05\x06", b"PK\x01\x02", b"PK\x07\x08"])


@pytest.mark.slow
@pytest.mark.timeout(300)  # a hang guard; a loaded machine takes seconds here
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    head=zip_signatures, body=st.binary(max_size=600), tail=zip_signatures, tail_body=st.binary(max_size=40)
)
def test_arbitrary_bytes_give_a_result_or_a_bootstrap_error(
    head: bytes, body: bytes, tail: bytes, tail_body: bytes
) -> None:
    data = head + body + tail + tail_body
    outcome = _compose_bytes(data)
    if not data.startswith((b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")) and isinstance(
        outcome, BootstrapError
    ):
        assert "corrupt zip bundle" not in str(outcome)  # only zip-looking files are "corrupt"


personas = st.dictionaries(
    st.sampled_from([*BOOTSTRAP_ORDER, "notes.txt", "soul.md"]),
    st.binary(max_size=300),
    max_size=6,
)


@st.composite
def mutated_bundles(draw: st.DrawFn) -> bytes:
    files = draw(personas)
    folder = draw(st.sampled_from(["", "aster/"]))
    compression = draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))
    data = bytearray(zip_bytes(files, folder=folder, compression=compression))
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["set", "flip", "int", "cut", "insert"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "set" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "int":
            value = draw(st.sampled_from([0, 1, 0x7FFF, 0xFFFF, 0x7FFF_FFFF, 0xFFFF_FFFF]))
            data[at : at + 4] = struct.pack("<I", value)
        elif kind == "cut":
            del data[at:]
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
    return bytes(data)


@pytest.mark.slow
@pytest.mark.timeout(300)  # a hang guard; a loaded machine takes seconds here
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated_bundles())
def test_mutated_bundles_give_a_result_or_a_bootstrap_error(data: bytes) -> None:
    _compose_bytes(data)


@pytest.mark.slow
@pytest.mark.timeout(300)  # a hang guard; a loaded machine takes seconds here
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated_bundles())
def test_mutated_bundles_through_fsspec_files(data: bytes) -> None:
    _compose_bytes_via_fsspec(data)


def test_unmutated_bundles_compose_like_the_home(tmp_path: Path) -> None:
    """Sanity check for the generator above: without mutations it yields the persona."""
    for folder in ("", "aster/"):
        source = BundleSource(lambda folder=folder: io.BytesIO(zip_bytes(PERSONA, folder=folder)), "x.zip")
        assert compose_soul(source) == EXPECTED


# --- failures of the storage under a bundle ---------------------------------------------------


def test_unopenable_bundle_is_a_permission_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, zip_bytes(PERSONA))
    real_open = open

    def deny(file: object, *args: object, **kwargs: object) -> object:
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", deny)
    with pytest.raises(PermissionError, match=f"cannot read {path}: permission denied"):
        compose_soul(path)


def test_bundle_vanishing_before_it_is_opened_is_file_not_found(tmp_path: Path) -> None:
    path = write(tmp_path, zip_bytes(PERSONA))
    source = BundleSource.from_file(str(path))
    os.remove(path)
    with pytest.raises(FileNotFoundError, match=f"{path}: no such persona bundle"):
        compose_soul(source)


@pytest.mark.parametrize(
    ("fail_on", "error", "expected", "message"),
    [
        ("read", PermissionError(13, "Permission denied"), PermissionError, "cannot read {loc}: permission"),
        ("read", OSError(5, "Input/output error"), BootstrapError, "cannot read {loc}: .*Input/output"),
        ("seek", OSError(5, "Input/output error"), BootstrapError, "cannot read {loc}: .*Input/output"),
    ],
)
def test_storage_failures_while_reading_a_bundle_name_it(
    fail_on: str, error: OSError, expected: type[OSError], message: str
) -> None:
    data = zip_bytes(PERSONA)

    class Failing(io.BytesIO):
        def read(self, n: int | None = -1) -> bytes:
            if fail_on == "read":
                raise error
            return super().read(n)

        def seek(self, offset: int, whence: int = 0) -> int:
            if fail_on == "seek":
                raise error
            return super().seek(offset, whence)

    opener: Callable[[], io.BytesIO] = lambda: Failing(data)  # noqa: E731
    with pytest.raises(expected, match=message.format(loc="flaky.zip")) as caught:
        compose_soul(BundleSource(opener, "flaky.zip"))
    assert caught.value.__cause__ is error
