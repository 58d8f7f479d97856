"""``inspect_soul`` on oversized files, and the truncation warning: never silent, sizes exact."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fsspec
import pytest

from tests.support import MotoServer, put_objects
from tests.support.files import zip_bytes
from toolnexus.agents import MAX_BOOTSTRAP_FILE_BYTES, compose_soul, inspect_soul

SIZE = MAX_BOOTSTRAP_FILE_BYTES + 1234
FILES = {"SOUL.md": b"You are Aster.", "MEMORY.md": b"m" * SIZE}

#: Each places FILES somewhere and returns the arguments ``compose_soul`` takes for it.
Placer = Callable[..., tuple[Any, dict[str, Any]]]


def local_home(tmp_path: Path, **_: Any) -> tuple[Any, dict[str, Any]]:
    for name, data in FILES.items():
        (tmp_path / name).write_bytes(data)
    return tmp_path, {}


def memory_home(**_: Any) -> tuple[Any, dict[str, Any]]:
    memory = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)
    for name, data in FILES.items():
        memory.pipe(f"/aster/{name}", data)
    return "/aster", {"fs": memory}


def bundle_home(tmp_path: Path, **_: Any) -> tuple[Any, dict[str, Any]]:
    (tmp_path / "aster.zip").write_bytes(zip_bytes(FILES, folder="aster/"))
    return tmp_path / "aster.zip", {}


def s3_home(moto: MotoServer, bucket: str, options: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
    put_objects(moto.endpoint_url, bucket, {f"aster/{name}": data for name, data in FILES.items()})
    return f"s3://{bucket}/aster", {"storage_options": options}


def s3_bundle_home(
    moto: MotoServer, bucket: str, options: dict[str, Any], **_: Any
) -> tuple[Any, dict[str, Any]]:
    put_objects(moto.endpoint_url, bucket, {"aster.zip": zip_bytes(FILES, folder="aster/")})
    return f"s3://{bucket}/aster.zip", {"storage_options": options}


@pytest.mark.parametrize("place", [local_home, memory_home, bundle_home, s3_home, s3_bundle_home])
def test_oversized_file_reports_exact_size_on_every_backend(
    place: Placer,
    tmp_path: Path,
    moto_server: MotoServer,
    new_bucket: Callable[[], str],
    s3_options: dict[str, Any],
) -> None:
    home, kwargs = place(tmp_path=tmp_path, moto=moto_server, bucket=new_bucket(), options=s3_options)
    report = inspect_soul(home, **kwargs)
    memory = next(file for file in report.files if file.name == "MEMORY.md")
    assert memory.status == "present"
    assert memory.size == SIZE
    assert memory.truncated is True
    assert memory.kept_bytes == MAX_BOOTSTRAP_FILE_BYTES
    soul = next(file for file in report.files if file.name == "SOUL.md")
    assert (soul.size, soul.kept_bytes, soul.truncated) == (14, 14, False)
    assert (report.soul, report.found) == compose_soul(home, **kwargs)


def test_truncation_logs_a_warning_naming_file_size_and_cap(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home, _ = local_home(tmp_path)
    with caplog.at_level(logging.WARNING, logger="toolnexus.agents"):
        compose_soul(home)
    (record,) = caplog.records
    assert record.name == "toolnexus.agents"
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert "MEMORY.md" in message
    assert str(SIZE) in message
    assert str(MAX_BOOTSTRAP_FILE_BYTES) in message
    assert str(tmp_path) in message


def test_no_warning_without_truncation(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "SOUL.md").write_bytes(b"s" * MAX_BOOTSTRAP_FILE_BYTES)  # exactly the cap: kept whole
    with caplog.at_level(logging.WARNING, logger="toolnexus.agents"):
        report = inspect_soul(tmp_path)
    assert caplog.records == []
    assert report.files[1].truncated is False
    assert report.files[1].kept_bytes == MAX_BOOTSTRAP_FILE_BYTES
