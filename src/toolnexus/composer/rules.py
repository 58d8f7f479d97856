"""The specification's composition rules, each written once and free of I/O.

Every backend hands this module the same thing — the first ``limit + 1`` bytes of each present
bootstrap file — so every backend composes byte-identical souls, and the Hypothesis properties
drive it with tiny caps and no filesystem. :func:`compose` (the hot path) and
:func:`compose_report` (``inspect_soul``, ``audit``) both take each section from :func:`_sections`.
"""

from __future__ import annotations

import codecs
import logging
import sys
from array import array
from collections.abc import Mapping

from toolnexus.composer.budget import Budget
from toolnexus.composer.fitting import fit, fitted_sections
from toolnexus.composer.parts import BOOTSTRAP_ORDER, SECTION_SEPARATOR, ordered_parts
from toolnexus.composer.reports import Encoding, FileReport, FileStatus, SoulReport

__all__ = [
    "BOOTSTRAP_ORDER",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "TRUNCATION_NOTICE",
    "FileReport",
    "SoulReport",
    "bodies",
    "compose",
    "compose_report",
    "compose_sections",
    "normalise_body",
]

#: Hard per-file cap in bytes; a longer file is cut here and gets :data:`TRUNCATION_NOTICE`.
MAX_BOOTSTRAP_FILE_BYTES: int = 2 * 1024 * 1024

#: Appended to the body of a file longer than the cap, so truncation is visible to the model too.
TRUNCATION_NOTICE = "\n\n[truncated: exceeds 2 MB bootstrap cap]"

_UTF8_BOM = b"\xef\xbb\xbf"
_LITERAL_REPLACEMENT_CHAR = "\ufffd".encode()

#: A file starting with one of these byte-order marks is UTF-16 (what Windows Notepad calls
#: "Unicode"); every other file is UTF-8. ``FF FE`` and ``FE FF`` never occur in UTF-8 text.
_UTF16_BOMS: dict[bytes, Encoding] = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}

#: First bytes of every byte-order mark: a file starting with none of them, within the cap, is
#: decoded as it is.
_BOM_LEADS = frozenset({b"\xef", b"\xff", b"\xfe"})

logger = logging.getLogger("toolnexus.agents")

#: How a file with a BOM or over the cap was decoded: the text before line endings were
#: normalised, the span ``prefix[start:stop]`` decoded, whether it was over the cap, the encoding.
_Decoded = tuple[str, int, int, bool, Encoding]

#: Looked up once: the lookup costs more than decoding a typical file.
_Utf8Decoder = codecs.getincrementaldecoder("utf-8")


def _sections(
    location: str | None,
    prefixes: Mapping[str, bytes],
    names: tuple[str, ...],
    limit: int,
    sizes: Mapping[str, int] | None,
) -> tuple[list[str], list[str], list[str], dict[str, _Decoded]]:
    """The rules, once: ``(found, sections, bodies, careful)`` of the present files among ``names``.

    Cap, BOM, decode (a cut character is dropped), line endings, trailing space; a cut file is
    logged (unless ``location`` is ``None``). ``careful`` says how each file with a BOM or over
    the cap was decoded; any other file is its prefix, decoded. One loop, no call per common
    file: this is most of a local composition's CPU.
    """
    found: list[str] = []
    sections: list[str] = []
    bodies: list[str] = []
    careful: dict[str, _Decoded] = {}
    for name in names:
        prefix = prefixes.get(name)
        if prefix is None:
            continue
        if len(prefix) <= limit and prefix[:1] not in _BOM_LEADS:  # most files
            text, truncated = prefix.decode("utf-8", "replace"), False
        else:
            decoded = careful[name] = _decode(prefix, limit)
            text, truncated = decoded[0], decoded[3]
        body = (text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text).rstrip()
        if truncated:
            body += TRUNCATION_NOTICE
            if location is not None:
                size = (sizes or {}).get(name)
                logger.warning(
                    "%s: %s is %s bytes, over the %d-byte bootstrap cap; truncated",
                    location,
                    name,
                    "more than " + str(limit) if size is None else size,
                    limit,
                )
        found.append(name)
        sections.append(f"## {name}\n\n{body}")
        bodies.append(body)
    return found, sections, bodies, careful


def _decode(prefix: bytes, limit: int) -> _Decoded:
    """How a file with a BOM or over the cap decodes (a 2 MiB prefix is never copied first)."""
    truncated = len(prefix) > limit
    end = limit if truncated else len(prefix)
    encoding = _UTF16_BOMS.get(prefix[:2])
    if encoding is not None:
        start, stop = _utf16_span(prefix, end, truncated, encoding)
        return str(memoryview(prefix)[start:stop], encoding, "replace"), start, stop, truncated, encoding
    start = len(_UTF8_BOM) if end >= len(_UTF8_BOM) and prefix.startswith(_UTF8_BOM) else 0
    stop = end
    if truncated:
        # A character cut by the cap starts with a lead byte in the last three bytes, and UTF-8
        # resynchronises at every lead byte: an incremental decoder fed just the tail holds back
        # exactly what it would hold back after decoding everything. Dropped, never U+FFFD.
        decoder = _Utf8Decoder("replace")
        decoder.decode(prefix[max(start, end - 4) : end], final=False)
        stop -= len(decoder.getstate()[0])
    return str(memoryview(prefix)[start:stop], "utf-8", "replace"), start, stop, truncated, "utf-8"


def _utf16_span(prefix: bytes, end: int, truncated: bool, encoding: str) -> tuple[int, int]:
    """``(start, stop)`` of the UTF-16 text: after the BOM, never ending mid-character.

    A cut inside a code unit or between the halves of a surrogate pair drops it, like a cut
    UTF-8 character; an odd byte or lone surrogate the cap did not cut becomes U+FFFD.
    """
    if end < 2:
        return 0, 0
    stop = end
    if truncated:
        stop -= (stop - 2) % 2
        if stop > 2:
            last = int.from_bytes(prefix[stop - 2 : stop], "little" if encoding == "utf-16-le" else "big")
            if 0xD800 <= last <= 0xDBFF:  # a high surrogate whose low half is past the cap
                stop -= 2
    return 2, stop


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
    _, _, (body,), careful = _sections(None, {name: prefix}, (name,), limit, None)
    return body, _report(name, body, prefix, careful.get(name), size=size, layer=layer)


def _report(
    name: str, body: str, prefix: bytes, decoded: _Decoded | None, *, size: int | None, layer: str | None
) -> FileReport:
    """What the rules did to one file (``decoded``: how :func:`_sections` decoded it, if carefully)."""
    encoding: Encoding = "utf-8"
    if decoded is None:  # the prefix, decoded as it is: a CR byte is a CR character
        endings = prefix.count(b"\r") if b"\r" in prefix else 0  # ``in`` is a memchr, ``count`` is not
        start, stop, truncated = 0, len(prefix), False
    else:
        text, start, stop, truncated, encoding = decoded
        endings = text.count("\r")  # a CRLF and a lone CR are one line ending each
    replaced = 0
    if "\ufffd" in body:  # O(1) for ASCII text: CPython compares the strings' widths first
        replaced = body.count("\ufffd") - _literal_replacement_chars(prefix[start:stop], encoding)
    if size is None and not truncated:
        size = len(prefix)
    return FileReport(name, "present", size, stop, truncated, encoding, start > 0, endings, replaced, layer)


#: An absent name's report is the same every time (and immutable): built once.
_ABSENT = {name: FileReport(name, "absent") for name in BOOTSTRAP_ORDER}


def bodies(
    location: str,
    prefixes: Mapping[str, bytes],
    *,
    limit: int = MAX_BOOTSTRAP_FILE_BYTES,
    sizes: Mapping[str, int] | None = None,
) -> list[tuple[str, str]]:
    """``(name, body)`` of every present file in :data:`BOOTSTRAP_ORDER`."""
    found, _, texts, _ = _sections(location, prefixes, BOOTSTRAP_ORDER, limit, sizes)
    return list(zip(found, texts, strict=True))


def compose_sections(
    location: str,
    prefixes: Mapping[str, bytes],
    *,
    limit: int = MAX_BOOTSTRAP_FILE_BYTES,
    sizes: Mapping[str, int] | None = None,
    budget: Budget | None = None,
) -> tuple[list[str], list[str]]:
    """``(sections, found)``: ``sections[i]`` (its ``## NAME`` header included) is ``found[i]``'s."""
    found, sections, texts, _ = _sections(location, prefixes, BOOTSTRAP_ORDER, limit, sizes)
    if budget is not None:
        return fitted_sections(location, list(zip(found, texts, strict=True)), budget)
    return sections, found


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
    skipped: Mapping[str, str | None] | frozenset[str] = frozenset(),
    layers: Mapping[str, str] | None = None,
    names: tuple[str, ...] = BOOTSTRAP_ORDER,
    budget: Budget | None = None,
    errors: Mapping[str, str] | None = None,
) -> SoulReport:
    """The soul of the present files among ``names``, with a report for every name.

    ``skipped`` names exist but are not regular files (a mapping says why: ``"folder"``);
    ``layers`` says which layer supplied each file; ``errors`` maps unreadable names to why.
    """
    sizes = sizes or {}
    layers = layers or {}
    errors = errors or {}
    why = dict.fromkeys(skipped) if isinstance(skipped, frozenset) else skipped
    found, sections, texts, careful = _sections(location, prefixes, names, limit, sizes)
    reports = {
        name: _report(
            name, body, prefixes[name], careful.get(name), size=sizes.get(name), layer=layers.get(name)
        )
        for name, body in zip(found, texts, strict=True)
    }
    files: list[FileReport] = []
    for name in names:
        report = reports.get(name)
        if report is None:
            if name in errors or name in why:
                status: FileStatus = "error" if name in errors else "skipped"
                report = FileReport(name, status, reason=errors.get(name) or why.get(name))
            else:
                report = _ABSENT[name]
        files.append(report)
    if budget is not None:
        plain = dict(zip(found, texts, strict=True))
        fitted = {file.name: file for file in fit(location, list(plain.items()), budget)}
        files = [
            report.with_budget(plain[report.name], fitted[report.name], budget)
            if report.name in fitted
            else report
            for report in files
        ]
        found = [file.name for file in fitted.values() if file.body is not None]
        sections = [f"## {file.name}\n\n{file.body}" for file in fitted.values() if file.body is not None]
    parts = ordered_parts(found, sections)  # names come in BOOTSTRAP_ORDER (select_names)
    soul = "".join([text for text, _ in parts])  # one part: that very string, not a copy
    return SoulReport(location, soul, found, tuple(files), budget, parts)
