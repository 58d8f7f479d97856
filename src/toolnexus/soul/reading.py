"""``read_bootstrap_file``: one bootstrap file of any readable home, decoded as the soul does but
keeping its line endings, so a piece of it can be given to the memory tool's ``replace``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolnexus.composer.rules import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, FileReport, normalise_body
from toolnexus.sources import DEFAULT_ENGINE, Location, resolve


@dataclass(frozen=True, slots=True)
class BootstrapFile:
    """A bootstrap file's text and its report (``"present"``, or ``"skipped"`` with no text)."""

    text: str
    report: FileReport
    #: Where the home turned out to be (a folder inside a bundle; layers joined by ``" + "``).
    home: str

    @property
    def location(self) -> str:
        """Where the file itself is: its layer, else the home."""
        return self.report.layer or self.home


def read_bootstrap_file(
    dir: Location,
    name: str,
    *,
    storage_options: Mapping[str, Any] | None = None,
    fs: Any = None,
    follow_external_symlinks: bool = False,
    engine: str = DEFAULT_ENGINE,
) -> BootstrapFile | None:
    """``name`` (one of ``BOOTSTRAP_ORDER``) from the home, or ``None`` when the home has none.

    Takes every location ``compose_soul`` takes and raises what it raises (a missing home, an
    unreadable file); it only reads, so read-only homes work. The text is decoded as the soul
    decodes it, line endings as stored; a file over the cap is cut there (``report.truncated``).
    """
    if name not in BOOTSTRAP_ORDER:
        raise ValueError(f"{name!r} is not a bootstrap file name (one of {', '.join(BOOTSTRAP_ORDER)})")
    follow = follow_external_symlinks
    source = resolve(
        dir, storage_options=storage_options, fs=fs, follow_external_symlinks=follow, engine=engine
    )
    reading = source.read_entries([name], MAX_BOOTSTRAP_FILE_BYTES, exact_sizes=True)
    entry = reading.entries.get(name)
    if entry is None:
        return None
    if entry.data is None:
        return BootstrapFile("", FileReport(name, "skipped", layer=entry.origin), reading.location)
    _, report = normalise_body(entry.data, size=entry.size, name=name, layer=entry.origin)
    encoding = report.encoding or "utf-8"
    start = (3 if encoding == "utf-8" else 2) if report.bom_stripped else 0  # the BOM's length
    text = entry.data[start : report.kept_bytes].decode(encoding, "replace")
    return BootstrapFile(text, report, reading.location)
