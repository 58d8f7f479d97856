"""The specification's composition rules, each written once (:func:`_sections`), free of I/O, and
their reports. Every backend hands in the first ``limit + 1`` bytes of each present file, so every
backend composes byte-identical souls (and the Hypothesis properties need no filesystem)."""

from __future__ import annotations

import codecs
import logging
import sys
from array import array
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from toolnexus.composer.budget import Budget
from toolnexus.composer.fitting import Fitted, fit, fitted_sections
from toolnexus.composer.parts import BOOTSTRAP_ORDER, SECTION_SEPARATOR, SoulPart, joined_parts

__all__ = [
    "BOOTSTRAP_ORDER",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "TRUNCATION_NOTICE",
    "FileReport",
    "SoulReport",
    "compose",
    "compose_report",
    "compose_sections",
    "normalise_body",
]

Encoding = Literal["utf-8", "utf-16-le", "utf-16-be"]

#: ``error``: present but unreadable — only in reports asked to go on past such a file
#: (``inspect_soul(..., on_error="report")``); a soul never silently lacks a section.
FileStatus = Literal["present", "absent", "skipped", "error"]


class FileReport(NamedTuple):
    """What happened to one bootstrap name: the diagnostics behind a soul's section."""

    name: str
    status: FileStatus
    #: Size on the source in bytes; ``None`` when absent/skipped or the source cannot tell.
    size: int | None = None
    #: Bytes of the file that made it into the body (after the cap and a dropped cut character).
    kept_bytes: int = 0
    truncated: bool = False
    #: How the bytes were decoded (UTF-16 only after its BOM); ``None`` when absent/skipped.
    encoding: Encoding | None = None
    bom_stripped: bool = False
    #: How many CRLF or lone CR line endings became LF.
    line_endings_normalised: int = 0
    #: How many U+FFFD characters stand in for invalid input — bytes that are not UTF-8, or in a
    #: UTF-16 file a lone surrogate or odd last byte (literal U+FFFD not counted).
    invalid_bytes_replaced: int = 0
    #: For a layered persona, the layer (its location) that supplied the file; ``None`` when the
    #: file is absent or the persona has a single home (so reports compare equal across backends).
    layer: str | None = None
    #: Why a name was skipped (``"folder"``, ``"fifo"``, …) or could not be read (the error's
    #: message); ``None`` for present and absent files.
    reason: str | None = None
    #: Set only under a budget: the body's characters after the rules, its tokens (with a
    #: tokenizer), the units kept in the soul, whether the budget cut it or left it out.
    chars: int | None = None
    tokens: int | None = None
    kept: int | None = None
    budget_truncated: bool = False
    omitted: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, keys in declaration order; the budget's keys only under a budget."""
        return dict(zip(self._fields if self.chars is not None else self._fields[:11], self, strict=False))

    def with_budget(self, body: str, fitted: Fitted, budget: Budget) -> FileReport:
        """This report with what ``budget`` did to the file's ``body`` (see :func:`.fitting.fit`)."""
        tokens = fitted.size if budget.unit == "tokens" else budget.count_tokens(body)
        return self._replace(
            chars=len(body),
            tokens=tokens,
            kept=fitted.kept,
            budget_truncated=fitted.truncated,
            omitted=fitted.body is None,
        )


class SoulReport(NamedTuple):
    """A composed soul together with how each bootstrap name contributed to it."""

    location: str
    soul: str
    found: list[str]
    files: tuple[FileReport, ...] = ()
    #: The budget the soul was fitted to, if any.
    budget: Budget | None = None
    #: The soul as ``(text, stable)`` parts whose concatenation is ``soul`` (see
    #: :mod:`toolnexus.composer.parts`), for prompt-cache breakpoints; not in :meth:`to_dict`.
    parts: tuple[SoulPart, ...] = ()
    #: The home's Agent Skills (a ``toolnexus.SkillSet``), read beside the soul, never in it;
    #: ``None`` where they were not read (a profile's or named files' report).
    skills: Any = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``{"location", "soul", "found", "files"}`` (and ``"budget"`` under one,
        ``"skills"`` when the home has skills or skill warnings)."""
        budget = {} if self.budget is None else {"budget": self.budget.to_dict()}
        has_skills = self.skills is not None and (len(self.skills) or self.skills.warnings)
        return {
            "location": self.location,
            "soul": self.soul,
            "found": list(self.found),
            "files": [report.to_dict() for report in self.files],
            **budget,
            **({"skills": self.skills.to_dict()} if has_skills else {}),
        }


#: Hard per-file cap in bytes; a longer file is cut here and gets :data:`TRUNCATION_NOTICE`.
MAX_BOOTSTRAP_FILE_BYTES: int = 2 * 1024 * 1024

#: Appended to the body of a file longer than the cap, so truncation is visible to the model too.
TRUNCATION_NOTICE = "\n\n[truncated: exceeds 2 MB bootstrap cap]"

_UTF8_BOM = b"\xef\xbb\xbf"
_LITERAL_REPLACEMENT_CHAR = "\ufffd".encode()

#: A file starting with one of these BOMs is UTF-16 (Notepad's "Unicode"), never UTF-8 text.
_UTF16_BOMS: dict[bytes, Encoding] = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}

#: First bytes of every byte-order mark: a file starting with none, within the cap, is decoded as is.
_BOM_LEADS = frozenset({b"\xef", b"\xff", b"\xfe"})

logger = logging.getLogger("toolnexus.agents")

#: How a file decoded: its text before line endings were normalised, the span
#: ``prefix[start:stop]`` decoded, whether it was over the cap, the encoding.
_Decoded = tuple[str, int, int, bool, Encoding]

#: Looked up once: the lookup costs more than decoding a typical file.
_Utf8Decoder = codecs.getincrementaldecoder("utf-8")


def _sections(
    location: str | None,
    prefixes: Mapping[str, bytes],
    names: tuple[str, ...],
    limit: int,
    sizes: Mapping[str, int],
    *,
    layers: Mapping[str, str] | None = None,
    missing: Mapping[str, FileReport] | None = None,
) -> tuple[list[str], list[str], list[str], list[FileReport]]:
    """The rules, once: ``(found, sections, bodies, reports)`` of the present files among ``names``
    (a cut file logged unless ``location`` is ``None``). With ``missing`` (the report of a name not
    read), every name's :class:`FileReport` instead of the sections. One loop, no call per file."""
    found: list[str] = []
    sections: list[str] = []
    bodies: list[str] = []
    reports: list[FileReport] = []
    for name in names:
        prefix = prefixes.get(name)
        if prefix is None:
            if missing is not None:
                reports.append(missing[name])
            continue
        encoding: Encoding = "utf-8"
        if len(prefix) <= limit and prefix[:1] not in _BOM_LEADS:  # most files
            text, start, stop, truncated = prefix.decode("utf-8", "replace"), 0, len(prefix), False
        else:
            text, start, stop, truncated, encoding = _decode(prefix, limit)
        endings = 0
        if "\r" in text:
            endings = text.count("\r")  # a CRLF and a lone CR are one line ending each
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        body = text.rstrip()
        size = sizes.get(name)
        if truncated:
            body += TRUNCATION_NOTICE
            if location is not None:
                logger.warning(
                    "%s: %s is %s bytes, over the %d-byte bootstrap cap; truncated",
                    location,
                    name,
                    "more than " + str(limit) if size is None else size,
                    limit,
                )
        found.append(name)
        bodies.append(body)
        if missing is None:
            sections.append(f"## {name}\n\n{body}")
            continue
        replaced = 0
        if "\ufffd" in body:  # O(1) for ASCII text: CPython compares the strings' widths first
            replaced = body.count("\ufffd") - _literal_replacement_chars(prefix[start:stop], encoding)
        if size is None and not truncated:
            size = len(prefix)
        layer = layers.get(name) if layers else None
        reports.append(
            FileReport(name, "present", size, stop, truncated, encoding, start > 0, endings, replaced, layer)
        )
    return found, sections, bodies, reports


def _decode(prefix: bytes, limit: int) -> _Decoded:
    """How a file with a BOM or over the cap decodes (a 2 MiB prefix is never copied first): a
    character the cap cuts is dropped (in UTF-16 also a code unit or the first half of a surrogate
    pair); an odd byte or lone surrogate the cap did not cut becomes U+FFFD."""
    truncated = len(prefix) > limit
    end = stop = limit if truncated else len(prefix)
    encoding = _UTF16_BOMS.get(prefix[:2])
    if encoding is not None:
        start, stop = (2, end) if end >= 2 else (0, 0)
        if truncated and end >= 2:
            stop -= (stop - 2) % 2
            last = int.from_bytes(prefix[stop - 2 : stop], "little" if encoding == "utf-16-le" else "big")
            if 0xD800 <= last <= 0xDBFF:  # a high surrogate whose low half is past the cap (never the BOM)
                stop -= 2
        return str(memoryview(prefix)[start:stop], encoding, "replace"), start, stop, truncated, encoding
    start = len(_UTF8_BOM) if end >= len(_UTF8_BOM) and prefix.startswith(_UTF8_BOM) else 0
    if truncated:
        # A character cut by the cap starts with a lead byte in the last three bytes, and UTF-8
        # resynchronises at every lead byte: an incremental decoder fed just the tail holds back
        # exactly what it would hold back after decoding everything. Dropped, never U+FFFD.
        decoder = _Utf8Decoder("replace")
        decoder.decode(prefix[max(start, end - 4) : end], final=False)
        stop -= len(decoder.getstate()[0])
    return str(memoryview(prefix)[start:stop], "utf-8", "replace"), start, stop, truncated, "utf-8"


def _literal_replacement_chars(data: bytes, encoding: Encoding) -> int:
    """How many U+FFFD the file itself spells out (so they are not counted as invalid input)."""
    if encoding == "utf-8":
        return data.count(_LITERAL_REPLACEMENT_CHAR)
    units = array("H")  # 2-byte code units, aligned as the decoder saw them
    units.frombytes(data[: len(data) // 2 * 2])
    if (encoding == "utf-16-le") != (sys.byteorder == "little"):
        units.byteswap()
    return units.count(0xFFFD)


def normalise_body(
    prefix: bytes,
    *,
    limit: int = MAX_BOOTSTRAP_FILE_BYTES,
    size: int | None = None,
    name: str = "",
    layer: str | None = None,
) -> tuple[str, FileReport]:
    """The section body of a file's first ``limit + 1`` bytes, and a report of what changed."""
    sizes = {} if size is None else {name: size}
    layers = {} if layer is None else {name: layer}
    _, _, (body,), (report,) = _sections(
        None, {name: prefix}, (name,), limit, sizes, layers=layers, missing=_ABSENT
    )
    return body, report


#: An absent name's report is the same every time (and immutable): built once.
_ABSENT = {name: FileReport(name, "absent") for name in BOOTSTRAP_ORDER}


def compose_sections(
    location: str,
    prefixes: Mapping[str, bytes],
    *,
    limit: int = MAX_BOOTSTRAP_FILE_BYTES,
    sizes: Mapping[str, int] | None = None,
    budget: Budget | None = None,
) -> tuple[list[str], list[str]]:
    """``(sections, found)``: ``sections[i]`` (its ``## NAME`` header included) is ``found[i]``'s."""
    found, sections, texts, _ = _sections(location, prefixes, BOOTSTRAP_ORDER, limit, sizes or {})
    if budget is None:
        return sections, found
    return fitted_sections(location, found, sections, texts, budget)


def compose(
    location: str,
    prefixes: Mapping[str, bytes],
    *,
    limit: int = MAX_BOOTSTRAP_FILE_BYTES,
    sizes: Mapping[str, int] | None = None,
    budget: Budget | None = None,
) -> tuple[str, list[str]]:
    """``(soul, found)``: :func:`compose_report` without per-file reports (``compose_soul``'s path)."""
    sections, found = compose_sections(location, prefixes, limit=limit, sizes=sizes, budget=budget)
    return SECTION_SEPARATOR.join(sections), found


def compose_report(
    location: str,
    prefixes: Mapping[str, bytes],
    *,
    limit: int = MAX_BOOTSTRAP_FILE_BYTES,
    sizes: Mapping[str, int] | None = None,
    skipped: Mapping[str, str | None] | None = None,
    layers: Mapping[str, str] | None = None,
    names: tuple[str, ...] = BOOTSTRAP_ORDER,
    budget: Budget | None = None,
    errors: Mapping[str, str] | None = None,
) -> SoulReport:
    """The soul of the present files among ``names``, with a report for every name: ``skipped``
    ones are not regular files (a mapping says why: ``"folder"``), ``errors`` maps unreadable ones
    to why, ``layers`` says which layer supplied each file."""
    missing = _ABSENT
    if errors or skipped:
        skipped = skipped or {}
        missing = _ABSENT | {name: FileReport(name, "skipped", reason=why) for name, why in skipped.items()}
        for name, message in (errors or {}).items():
            missing[name] = FileReport(name, "error", reason=message or skipped.get(name))
    found, _, texts, files = _sections(
        location, prefixes, names, limit, sizes or {}, layers=layers, missing=missing
    )
    if budget is not None:
        fitted = {
            file.name: (body, file)
            for body, file in zip(texts, fit(location, found, texts, budget), strict=True)
        }
        files = [
            report.with_budget(*fitted[report.name], budget) if report.name in fitted else report
            for report in files
        ]
        found = [name for name, (_, file) in fitted.items() if file.body is not None]
        texts = [file.body for _, file in fitted.values() if file.body is not None]
    soul, parts = joined_parts(found, texts)  # names come in BOOTSTRAP_ORDER (select_names)
    return SoulReport(location, soul, found, tuple(files), budget, parts)
