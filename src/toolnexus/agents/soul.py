"""The composition rules of SPEC §7E, written once and free of I/O.

Every backend hands this module the same thing — the first ``limit + 1`` bytes of each present
bootstrap file — so every backend composes byte-identical souls. Keeping it pure is also what
makes the Hypothesis properties cheap: they drive it with tiny caps and no filesystem.
"""

from __future__ import annotations

import codecs
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "BOOTSTRAP_ORDER",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "TRUNCATION_NOTICE",
    "FileReport",
    "SoulReport",
    "compose_report",
    "normalise_body",
]

#: The bootstrap files, in the order their sections appear in a soul.
BOOTSTRAP_ORDER: tuple[str, ...] = (
    "AGENTS.md",
    "SOUL.md",
    "IDENTITY.md",
    "USER.md",
    "TOOLS.md",
    "HEARTBEAT.md",
    "MEMORY.md",
)

#: Hard per-file cap in bytes; a longer file is cut here and gets :data:`TRUNCATION_NOTICE`.
MAX_BOOTSTRAP_FILE_BYTES: int = 2 * 1024 * 1024

#: Appended to the body of a file longer than the cap, so truncation is visible to the model too.
TRUNCATION_NOTICE = "\n\n[truncated: exceeds 2 MB bootstrap cap]"

_UTF8_BOM = b"\xef\xbb\xbf"
_LITERAL_REPLACEMENT_CHAR = "\ufffd".encode()

FileStatus = Literal["present", "absent", "skipped"]

logger = logging.getLogger("toolnexus.agents")


@dataclass(frozen=True, slots=True)
class FileReport:
    """What happened to one bootstrap name: the diagnostics behind a soul's section."""

    name: str
    status: FileStatus
    #: Size on the source in bytes; ``None`` when absent/skipped or the source cannot tell.
    size: int | None = None
    #: Bytes of the file that made it into the body (after the cap and a dropped cut character).
    kept_bytes: int = 0
    truncated: bool = False
    bom_stripped: bool = False
    #: How many CRLF or lone CR line endings became LF.
    line_endings_normalised: int = 0
    #: How many U+FFFD characters stand in for invalid UTF-8 (literal U+FFFD not counted).
    invalid_bytes_replaced: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, keys in declaration order."""
        return {
            "name": self.name,
            "status": self.status,
            "size": self.size,
            "kept_bytes": self.kept_bytes,
            "truncated": self.truncated,
            "bom_stripped": self.bom_stripped,
            "line_endings_normalised": self.line_endings_normalised,
            "invalid_bytes_replaced": self.invalid_bytes_replaced,
        }


@dataclass(frozen=True, slots=True)
class SoulReport:
    """A composed soul together with how each bootstrap name contributed to it."""

    location: str
    soul: str
    found: list[str] = field(default_factory=list)
    files: tuple[FileReport, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``{"location", "soul", "found", "files"}``."""
        return {
            "location": self.location,
            "soul": self.soul,
            "found": list(self.found),
            "files": [report.to_dict() for report in self.files],
        }


def normalise_body(
    prefix: bytes, *, limit: int = MAX_BOOTSTRAP_FILE_BYTES, size: int | None = None, name: str = ""
) -> tuple[str, FileReport]:
    """Turn the first ``limit + 1`` bytes of a file into its section body.

    ``prefix`` longer than ``limit`` means the file was longer than the cap. The cut can split a
    multi-byte character; an incremental decoder holds such an incomplete tail back instead of
    replacing it, so a cut never produces U+FFFD while genuinely invalid bytes still do.
    """
    truncated = len(prefix) > limit
    kept = prefix[:limit] if truncated else prefix
    bom_stripped = kept.startswith(_UTF8_BOM)
    if bom_stripped:
        kept = kept[len(_UTF8_BOM) :]
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text = decoder.decode(kept, final=not truncated)
    held_back = len(decoder.getstate()[0])
    replaced = text.count("\ufffd") - kept.count(_LITERAL_REPLACEMENT_CHAR)
    crlf = text.count("\r\n")
    lone_cr = text.count("\r") - crlf
    if crlf or lone_cr:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    body = text.rstrip()
    if truncated:
        body += TRUNCATION_NOTICE
    report = FileReport(
        name=name,
        status="present",
        size=size if size is not None else (None if truncated else len(prefix)),
        kept_bytes=len(kept) - held_back + (len(_UTF8_BOM) if bom_stripped else 0),
        truncated=truncated,
        bom_stripped=bom_stripped,
        line_endings_normalised=crlf + lone_cr,
        invalid_bytes_replaced=replaced,
    )
    return body, report


def compose_report(
    location: str,
    prefixes: Mapping[str, bytes],
    *,
    limit: int = MAX_BOOTSTRAP_FILE_BYTES,
    sizes: Mapping[str, int] | None = None,
    skipped: frozenset[str] = frozenset(),
) -> SoulReport:
    """Fold the present files into ``## <name>`` sections in :data:`BOOTSTRAP_ORDER`.

    ``prefixes`` maps each present name to its first ``limit + 1`` bytes; names outside
    :data:`BOOTSTRAP_ORDER` are ignored. ``skipped`` names exist but are not regular files.
    """
    sizes = sizes or {}
    sections: list[str] = []
    found: list[str] = []
    files: list[FileReport] = []
    for name in BOOTSTRAP_ORDER:
        prefix = prefixes.get(name)
        if prefix is None:
            files.append(FileReport(name, "skipped" if name in skipped else "absent"))
            continue
        body, report = normalise_body(prefix, limit=limit, size=sizes.get(name), name=name)
        if report.truncated:
            logger.warning(
                "%s: %s is %s bytes, over the %d-byte bootstrap cap; truncated",
                location,
                name,
                "more than " + str(limit) if report.size is None else report.size,
                limit,
            )
        found.append(name)
        files.append(report)
        sections.append(f"## {name}\n\n{body}")
    return SoulReport(location=location, soul="\n\n".join(sections), found=found, files=tuple(files))
