"""UTF-16 bootstrap files: a file starting with a UTF-16 BOM is decoded as UTF-16.

What Windows Notepad saves as "Unicode" (UTF-16 LE with a BOM) must compose to the text the
author sees, on every backend alike; ``inspect`` says which encoding was used. The rule itself is
property-tested in test_composer_properties.py; here are the examples, every source, and the CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import backends as conformance
from tests.support.cli import run
from toolnexus.agents import MAX_BOOTSTRAP_FILE_BYTES, TRUNCATION_NOTICE, compose_soul, inspect_soul

HEARTBEAT = "Check the calendar at 09:00.\r\nSay «hello» 😀\r\n"
#: As Notepad's "Unicode" and "Unicode big endian" save it.
NOTEPAD_LE = b"\xff\xfe" + HEARTBEAT.encode("utf-16-le")
NOTEPAD_BE = b"\xfe\xff" + HEARTBEAT.encode("utf-16-be")
EXPECTED_BODY = "Check the calendar at 09:00.\nSay «hello» 😀"


@pytest.mark.parametrize(("data", "encoding"), [(NOTEPAD_LE, "utf-16-le"), (NOTEPAD_BE, "utf-16-be")])
def test_a_notepad_unicode_file_composes_to_its_text(tmp_path: Path, data: bytes, encoding: str) -> None:
    (tmp_path / "HEARTBEAT.md").write_bytes(data)
    assert compose_soul(tmp_path) == (f"## HEARTBEAT.md\n\n{EXPECTED_BODY}", ["HEARTBEAT.md"])
    report = inspect_soul(tmp_path).files[5]
    assert (report.name, report.encoding, report.bom_stripped) == ("HEARTBEAT.md", encoding, True)
    assert (report.size, report.kept_bytes, report.line_endings_normalised) == (len(data), len(data), 2)
    assert report.invalid_bytes_replaced == 0


def test_utf8_files_say_utf8(tmp_path: Path) -> None:
    (tmp_path / "SOUL.md").write_bytes(b"\xef\xbb\xbfYou are Aster.")
    assert inspect_soul(tmp_path).files[1].to_dict()["encoding"] == "utf-8"


def test_the_cap_counts_bytes_and_never_splits_a_surrogate_pair(tmp_path: Path) -> None:
    # BOM + 'a' * (cap/2 - 2) units leaves 2 bytes before the cap: half of the emoji's pair.
    units = MAX_BOOTSTRAP_FILE_BYTES // 2 - 2
    data = b"\xff\xfe" + ("a" * units + "😀 after the cap").encode("utf-16-le")
    (tmp_path / "MEMORY.md").write_bytes(data)
    soul, _ = compose_soul(tmp_path)
    assert soul == "## MEMORY.md\n\n" + "a" * units + TRUNCATION_NOTICE
    report = inspect_soul(tmp_path).files[6]
    assert (report.truncated, report.kept_bytes, report.size) == (True, 2 + 2 * units, len(data))


@pytest.mark.slow
@pytest.mark.parametrize("source", conformance.SOURCES)
def test_every_source_decodes_utf16_the_same(backends: conformance.Backends, source: str) -> None:
    persona = {"HEARTBEAT.md": NOTEPAD_LE, "USER.md": NOTEPAD_BE, "SOUL.md": b"You are Aster."}
    location, kwargs = getattr(backends, source)(persona)
    soul, found = compose_soul(location, **kwargs)
    assert (soul, found) == conformance.expected(persona)
    assert soul.count(EXPECTED_BODY) == 2
    assert "\x00" not in soul


def test_inspect_names_the_encoding(tmp_path: Path) -> None:
    (tmp_path / "HEARTBEAT.md").write_bytes(NOTEPAD_LE)
    (tmp_path / "SOUL.md").write_bytes(b"You are Aster.")
    inspected = run("inspect", str(tmp_path))
    assert inspected.returncode == 0, inspected.stderr
    table = inspected.stdout
    row = next(line for line in table.splitlines() if line.startswith("HEARTBEAT.md"))
    assert row.endswith("utf-16-le, BOM stripped, 2 line endings made LF"), row
    soul_row = next(line for line in table.splitlines() if line.startswith("SOUL.md"))
    assert "utf-8" not in soul_row  # the usual encoding goes without saying in the table …
    reported = run("inspect", "--json", str(tmp_path))
    assert reported.returncode == 0, reported.stderr
    report = reported.stdout
    encodings = {file["name"]: file.get("encoding") for file in json.loads(report)["files"]}
    assert encodings["HEARTBEAT.md"] == "utf-16-le"  # … and is spelled out in the JSON
    assert encodings["SOUL.md"] == "utf-8"
