"""``read_bootstrap_file``: one file as the soul reads it, from every backend the library reads —
read-only ones included — with the soul's decoding and the file's own line endings."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given

from tests.support import backends as conformance
from tests.support.files import DictSource
from toolnexus.agents import (
    MAX_BOOTSTRAP_FILE_BYTES,
    TRUNCATION_NOTICE,
    BootstrapFile,
    compose_soul,
    read_bootstrap_file,
)

PERSONA = {
    "SOUL.md": b"You are Aster.\n",
    "USER.md": b"\xef\xbb\xbf- Mira\r\n- bad \xff byte  \r\n",
    "MEMORY.md": b"\xff\xfe" + "- prefers tea\r\n".encode("utf-16-le"),
}
TEXTS = {
    "SOUL.md": "You are Aster.\n",
    "USER.md": "- Mira\r\n- bad \ufffd byte  \r\n",
    "MEMORY.md": "- prefers tea\r\n",
}


@pytest.mark.parametrize("source", conformance.SOURCES)
def test_every_backend_gives_the_same_text(backends: conformance.Backends, source: str) -> None:
    location, kwargs = getattr(backends, source)(PERSONA)
    for name, text in TEXTS.items():
        found = read_bootstrap_file(location, name, **kwargs)
        assert isinstance(found, BootstrapFile)
        assert found.text == text, name
        assert found.report.encoding == ("utf-16-le" if name == "MEMORY.md" else "utf-8")
        assert (found.report.layer is not None) == source.endswith("layered")
    assert read_bootstrap_file(location, "TOOLS.md", **kwargs) is None


@given(persona=conformance.PERSONAS)
def test_the_text_normalised_is_the_soul_s_body(persona: conformance.Persona) -> None:
    soul, found = compose_soul(DictSource(persona))
    sections = []
    for name in found:
        read = read_bootstrap_file(DictSource(persona), name)
        assert read is not None
        body = read.text.replace("\r\n", "\n").replace("\r", "\n").rstrip()
        sections.append(f"## {name}\n\n{body}{TRUNCATION_NOTICE if read.report.truncated else ''}")
    assert "\n\n".join(sections) == soul


def test_over_the_cap_the_text_stops_at_the_cap(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").write_bytes(b"x" * (MAX_BOOTSTRAP_FILE_BYTES + 10))
    found = read_bootstrap_file(tmp_path, "MEMORY.md")
    assert found is not None
    assert (len(found.text), found.report.truncated, found.report.size) == (
        MAX_BOOTSTRAP_FILE_BYTES,
        True,
        MAX_BOOTSTRAP_FILE_BYTES + 10,
    )


def test_a_name_that_is_not_a_file_is_skipped_and_other_names_are_refused(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").mkdir()
    (tmp_path / "SOUL.md").write_bytes(b"x")
    found = read_bootstrap_file(tmp_path, "MEMORY.md")
    assert found is not None
    assert (found.text, found.report.status, found.location) == ("", "skipped", str(tmp_path))
    with pytest.raises(ValueError, match="'notes.md' is not a bootstrap file name"):
        read_bootstrap_file(tmp_path, "notes.md")
    with pytest.raises(FileNotFoundError, match="no such persona home"):
        read_bootstrap_file(tmp_path / "nobody", "MEMORY.md")
