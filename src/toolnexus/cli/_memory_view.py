"""``toolnexus memory … view``: print a memory file from any readable home.

It only reads, through the home's source — the same read ``soul`` makes — so it works where the
memory tool cannot write: zip and tar bundles, HTTP, read-only credentials, several layers (the
merged view: the topmost layer holding the file wins, and the person is told which one). Bytes
are decoded as the soul decodes them (a UTF-8 or UTF-16 byte-order mark is honoured; invalid
bytes become U+FFFD) but line endings are left as stored, so text copied from the output can be
given to ``replace``. The file goes to stdout; notes about it go to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from toolnexus.cli._memory_messages import CAP, file_in
from toolnexus.cli._support import EXIT_ERROR, emit
from toolnexus.composer.rules import FileReport, normalise_body
from toolnexus.sources import read_entries, resolve

__all__ = ["view"]

#: Length of the byte-order mark a report says was stripped, by encoding.
_BOM_LENGTH = {"utf-8": 3, "utf-16-le": 2, "utf-16-be": 2}


def _say(text: str) -> None:
    print(f"toolnexus: {text}", file=sys.stderr)


def _decoded(data: bytes, report: FileReport) -> str:
    """The text as the soul decodes it, line endings as stored."""
    encoding = report.encoding or "utf-8"
    start = _BOM_LENGTH[encoding] if report.bom_stripped else 0
    return data[start : report.kept_bytes].decode(encoding, "replace")


def _notes(where: str, report: FileReport) -> list[str]:
    notes = []
    if report.encoding not in (None, "utf-8"):
        notes.append(
            f"{where} is {report.encoding.upper()} text, shown decoded as the soul reads it; append, "
            "replace and remove leave it alone until it is converted to UTF-8"
        )
    if report.truncated:
        notes.append(f"{where} is over the {CAP}-byte limit: shown up to the limit, as the soul has it")
    if report.invalid_bytes_replaced:
        count = report.invalid_bytes_replaced
        notes.append(f"{where} has {count} invalid byte{'s' if count > 1 else ''}, shown as U+FFFD")
    return notes


def view(homes: Sequence[str], name: str, storage_options: dict[str, Any] | None) -> int:
    """Print ``name`` from the home (several: layers, base first); exit status 0 when readable."""
    source = resolve(homes[0] if len(homes) == 1 else list(homes), storage_options=storage_options)
    reading = read_entries(source, [name], CAP)
    entry = reading.entries.get(name)
    if entry is None:
        _say(f"no {name} in {reading.location} (no notes yet)")
        return 0
    where = file_in(entry.origin or reading.location, name)
    if entry.data is None:
        _say(f"error: {where} is not a regular file, so it is not read")
        return EXIT_ERROR
    if entry.origin is not None:
        _say(f"{name} comes from the layer {entry.origin} (layers, base first: {reading.location})")
    _, report = normalise_body(entry.data, limit=CAP, size=entry.size, name=name)
    for note in _notes(where, report):
        _say(note)
    text = _decoded(entry.data, report)
    if not text:
        _say(f"{where} is empty (no notes yet)")
        return 0
    emit(text if text.endswith("\n") else text + "\n")
    return 0
