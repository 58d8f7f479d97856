"""``toolnexus memory … view``: only reads (the read ``soul`` makes), so bundles, HTTP and layers
work too; the file goes to stdout, notes about it to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from toolnexus.agents import MAX_BOOTSTRAP_FILE_BYTES, FileReport, read_bootstrap_file
from toolnexus.cli._memory_messages import file_in
from toolnexus.cli._support import EXIT_ERROR, emit

__all__ = ["view"]


def _say(text: str) -> None:
    print(f"toolnexus: {text}", file=sys.stderr)


def _notes(where: str, report: FileReport) -> list[str]:
    notes = []
    if report.encoding not in (None, "utf-8"):
        notes.append(
            f"{where} is {report.encoding.upper()} text, shown decoded as the soul reads it; append, "
            "replace and remove leave it alone until it is converted to UTF-8"
        )
    if report.truncated:
        cap = MAX_BOOTSTRAP_FILE_BYTES
        notes.append(f"{where} is over the {cap}-byte limit: shown up to the limit, as the soul has it")
    if report.invalid_bytes_replaced:
        count = report.invalid_bytes_replaced
        notes.append(f"{where} has {count} invalid byte{'s' if count > 1 else ''}, shown as U+FFFD")
    return notes


def view(
    homes: Sequence[str], name: str, storage_options: dict[str, Any] | None, engine: str = "fsspec"
) -> int:
    """Print ``name`` from the home (several: layers, base first); exit status 0 when readable."""
    home = homes[0] if len(homes) == 1 else list(homes)
    found = read_bootstrap_file(home, name, storage_options=storage_options, engine=engine)
    if found is None:
        where = " + ".join(homes) if isinstance(home, list) else homes[0]
        _say(f"no {name} in {where} (no notes yet)")
        return 0
    where = file_in(found.location, name)
    if found.report.status == "skipped":
        _say(f"error: {where} is not a regular file, so it is not read")
        return EXIT_ERROR
    if found.report.layer is not None:
        _say(f"{name} comes from the layer {found.report.layer} (layers, base first: {found.home})")
    for note in _notes(where, found.report):
        _say(note)
    if not found.text:
        _say(f"{where} is empty (no notes yet)")
        return 0
    emit(found.text if found.text.endswith("\n") else found.text + "\n")
    return 0
