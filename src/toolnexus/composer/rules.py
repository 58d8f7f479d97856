"""The composition rules of SPEC §7E (and issue 13's UTF-16 rule), written once and free of I/O.

Every backend hands this module the same thing — the first ``limit + 1`` bytes of each present
bootstrap file — so every backend composes byte-identical souls. Keeping it pure is also what
makes the Hypothesis properties cheap: they drive it with tiny caps and no filesystem.
"""

from __future__ import annotations

import codecs
import logging
import sys
from array import array
from collections.abc import Mapping

from toolnexus.composer.budget import Budget
from toolnexus.composer.fitting import fit, fits_as_is, fitted_sections
from toolnexus.composer.parts import BOOTSTRAP_ORDER, SECTION_SEPARATOR, ordered_parts
from toolnexus.composer.reports import Encoding, FileReport, FileStatus, SoulReport, present_file, soul_report

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

#: First bytes of every byte-order mark (UTF-8 ``EF``, UTF-16 ``FF FE``/``FE FF``): a file
#: starting with none of them takes :func:`compose`'s fast path.
_BOM_LEADS = frozenset({b"\xef", b"\xff", b"\xfe"})

logger = logging.getLogger("toolnexus.agents")


#: One file's body (without the truncation notice: the caller appends it, saving a copy), the
#: decoded text before line endings were normalised, the decoded span ``prefix[start:stop]``
#: (after a BOM, before the cap and a cut character), whether the file was over the cap, and
#: the encoding. A plain tuple: this is built for every file of every composition.
_Body = tuple[str, str, int, int, bool, Encoding]


#: Cached once: looking the codec up costs more than decoding a typical file.
_Utf8Decoder = codecs.getincrementaldecoder("utf-8")


def _body(prefix: bytes, limit: int) -> _Body:
    """The rules, once: cap, BOM, decode (a cut character is dropped), line endings, trailing space.

    This is the hot path of every composition, so nothing is done that does not apply and a
    2 MiB prefix is never copied before decoding (large copies cost page faults, not just memcpy).
    """
    truncated = len(prefix) > limit
    end = limit if truncated else len(prefix)
    encoding = _UTF16_BOMS.get(prefix[:2])
    if encoding is not None:
        start, stop = _utf16_span(prefix, end, truncated, encoding)
        text = str(memoryview(prefix)[start:stop], encoding, "replace")
        return _finish(text, start, stop, truncated, encoding)
    start = len(_UTF8_BOM) if end >= len(_UTF8_BOM) and prefix.startswith(_UTF8_BOM) else 0
    stop = end
    if truncated:
        # A character cut by the cap starts with a lead byte in the last three bytes, and UTF-8
        # resynchronises at every lead byte: an incremental decoder fed just the tail holds back
        # exactly what it would hold back after decoding everything. Dropped, never U+FFFD.
        decoder = _Utf8Decoder("replace")
        decoder.decode(prefix[max(start, end - 4) : end], final=False)
        stop -= len(decoder.getstate()[0])
    if start or stop < len(prefix):
        text = str(memoryview(prefix)[start:stop], "utf-8", "replace")
    else:
        text = prefix.decode("utf-8", "replace")
    return _finish(text, start, stop, truncated, "utf-8")


def _finish(text: str, start: int, stop: int, truncated: bool, encoding: Encoding) -> _Body:
    body = text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    return body.rstrip(), text, start, stop, truncated, encoding


def _utf16_span(prefix: bytes, end: int, truncated: bool, encoding: str) -> tuple[int, int]:
    """``(start, stop)`` of the UTF-16 text to decode: after the BOM, never ending mid-character.

    The cap counts bytes, so a cut can fall inside a 2-byte code unit or between the two halves
    of a surrogate pair; either is dropped, like a cut UTF-8 character. A cap inside the BOM
    keeps nothing. An odd byte or lone surrogate that the cap did not cut is invalid input and
    becomes U+FFFD, as invalid UTF-8 does.
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
    """Turn the first ``limit + 1`` bytes of a file into its section body, and say what changed.

    ``prefix`` longer than ``limit`` means the file was longer than the cap.
    """
    if len(prefix) <= limit and prefix[:1] not in _BOM_LEADS:
        return _plain_body(prefix, size, name, layer)
    return _careful_body(prefix, limit, size, name, layer)


def _careful_body(
    prefix: bytes, limit: int, size: int | None, name: str, layer: str | None
) -> tuple[str, FileReport]:
    """:func:`normalise_body` by the general rule: BOMs, UTF-16, the cap and a cut character."""
    body, text, start, stop, truncated, encoding = _body(prefix, limit)
    replaced = 0
    if "\ufffd" in text:  # O(1) for ASCII text: CPython compares the strings' widths first
        replaced = text.count("\ufffd") - _literal_replacement_chars(prefix[start:stop], encoding)
    crlf = lone_cr = 0
    if "\r" in text:
        crlf = text.count("\r\n")
        lone_cr = text.count("\r") - crlf
    report = present_file(
        name,
        size if size is not None else (None if truncated else len(prefix)),
        stop,
        layer,
        truncated=truncated,
        encoding=encoding,
        bom_stripped=start > 0,
        line_endings_normalised=crlf + lone_cr,
        invalid_bytes_replaced=replaced,
    )
    return body + (TRUNCATION_NOTICE if truncated else ""), report


def _plain_body(prefix: bytes, size: int | None, name: str, layer: str | None) -> tuple[str, FileReport]:
    """:func:`normalise_body` for the common case, as :func:`compose` inlines it: under the cap
    and no byte-order mark, the rules reduce to decode, newlines, rstrip. ``inspect_soul`` and
    ``audit`` run this for every file; a Hypothesis property keeps it equal to :func:`_careful_body`."""
    text = prefix.decode("utf-8", "replace")
    endings = replaced = 0
    if "\r" in text:
        crlf = text.count("\r\n")
        endings = crlf + (text.count("\r") - crlf)
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\ufffd" in text:
        replaced = text.count("\ufffd") - prefix.count(_LITERAL_REPLACEMENT_CHAR)
    size = len(prefix) if size is None else size
    report = present_file(
        name, size, len(prefix), layer, line_endings_normalised=endings, invalid_bytes_replaced=replaced
    )
    return text.rstrip(), report


#: An absent name's report is the same every time (and immutable): built once.
_ABSENT = {name: FileReport(name, "absent") for name in BOOTSTRAP_ORDER}


def _warn_truncated(location: str, name: str, size: int | None, limit: int) -> None:
    logger.warning(
        "%s: %s is %s bytes, over the %d-byte bootstrap cap; truncated",
        location,
        name,
        "more than " + str(limit) if size is None else size,
        limit,
    )


def _capped_body(location: str, name: str, prefix: bytes, limit: int, sizes: Mapping[str, int] | None) -> str:
    """The careful path of one body (a BOM, or over the cap: warned about, notice appended)."""
    body, _, _, _, truncated, _ = _body(prefix, limit)
    if truncated:
        _warn_truncated(location, name, (sizes or {}).get(name), limit)
        return body + TRUNCATION_NOTICE
    return body


def bodies(
    location: str,
    prefixes: Mapping[str, bytes],
    *,
    limit: int = MAX_BOOTSTRAP_FILE_BYTES,
    sizes: Mapping[str, int] | None = None,
) -> list[tuple[str, str]]:
    """``(name, body)`` of every present file in order: :func:`compose`'s sections, unformatted.

    :func:`compose` keeps its own inlined loop for the unbudgeted hot path: building these pairs
    and formatting them afterwards cost it ~18 % (measured on the typical persona).
    """
    present: list[tuple[str, str]] = []
    for name in BOOTSTRAP_ORDER:
        prefix = prefixes.get(name)
        if prefix is None:
            continue
        if len(prefix) > limit or prefix[:1] in _BOM_LEADS:
            present.append((name, _capped_body(location, name, prefix, limit, sizes)))
            continue
        text = prefix.decode("utf-8", "replace")
        present.append(
            (name, (text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text).rstrip())
        )
    return present


def compose(
    location: str,
    prefixes: Mapping[str, bytes],
    *,
    limit: int = MAX_BOOTSTRAP_FILE_BYTES,
    sizes: Mapping[str, int] | None = None,
    budget: Budget | None = None,
) -> tuple[str, list[str]]:
    """``(soul, found)`` from the present files: :func:`compose_report` without the report.

    ``compose_soul`` runs this on every call, so it builds no per-file diagnostics. With a
    ``budget`` the bodies are fitted to it (:func:`.budget.fit`); ``found`` names the sections.
    """
    sections, found = compose_sections(location, prefixes, limit=limit, sizes=sizes, budget=budget)
    return SECTION_SEPARATOR.join(sections), found


def compose_sections(
    location: str,
    prefixes: Mapping[str, bytes],
    *,
    limit: int = MAX_BOOTSTRAP_FILE_BYTES,
    sizes: Mapping[str, int] | None = None,
    budget: Budget | None = None,
) -> tuple[list[str], list[str]]:
    """``(sections, found)``: :func:`compose`'s soul before its sections are joined, budget
    applied; ``sections[i]`` is the section (``## NAME`` header included) of the file ``found[i]``."""
    if budget is not None and not fits_as_is(prefixes, budget, limit):
        return fitted_sections(location, bodies(location, prefixes, limit=limit, sizes=sizes), budget)
    found: list[str] = []
    sections: list[str] = []
    for name in BOOTSTRAP_ORDER:
        prefix = prefixes.get(name)
        if prefix is None:
            continue
        found.append(name)
        if len(prefix) <= limit and prefix[:1] not in _BOM_LEADS:
            # The common case, inlined (this loop is most of a local composition's CPU): not
            # over the cap, no byte-order mark — the rules reduce to decode, newlines, rstrip.
            text = prefix.decode("utf-8", "replace")
            if "\r" in text:
                text = text.replace("\r\n", "\n").replace("\r", "\n")
            sections.append(f"## {name}\n\n{text.rstrip()}")
            continue
        body, _, _, _, truncated, _ = _body(prefix, limit)
        if truncated:
            _warn_truncated(location, name, (sizes or {}).get(name), limit)
            sections.append(f"## {name}\n\n{body}{TRUNCATION_NOTICE}")
        else:
            sections.append(f"## {name}\n\n{body}")
    return sections, found


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
    """Fold the present files into ``## <name>`` sections in :data:`BOOTSTRAP_ORDER`.

    ``prefixes`` maps each present name to its first ``limit + 1`` bytes; names outside
    ``names`` (a profile's; all of :data:`BOOTSTRAP_ORDER` by default) are ignored. ``skipped``
    names exist but are not regular files (a mapping gives why: ``"folder"``). ``layers`` says
    which layer supplied each present file (layered personas only). ``errors`` maps names that
    could not be read to why. A ``budget`` is applied after the rules (:func:`.budget.fit`).
    """
    sizes = sizes or {}
    layers = layers or {}
    errors = errors or {}
    why = dict.fromkeys(skipped) if isinstance(skipped, frozenset) else skipped  # not an ABC check: cheaper
    found: list[str] = []
    bodies: list[str] = []
    files: list[FileReport] = []
    for name in names:
        prefix = prefixes.get(name)
        if prefix is None:
            if name in errors or name in why:
                status: FileStatus = "error" if name in errors else "skipped"
                files.append(FileReport(name, status, reason=errors.get(name) or why.get(name)))
            else:
                files.append(_ABSENT[name])
            continue
        if len(prefix) <= limit and prefix[:1] not in _BOM_LEADS:  # normalise_body's common case
            body, report = _plain_body(prefix, sizes.get(name), name, layers.get(name))
        else:
            body, report = _careful_body(prefix, limit, sizes.get(name), name, layers.get(name))
            if report.truncated:
                _warn_truncated(location, name, report.size, limit)
        files.append(report)
        found.append(name)
        bodies.append(body)
    if budget is not None:
        fitted = {file.name: file for file in fit(location, list(zip(found, bodies, strict=True)), budget)}
        texts = dict(zip(found, bodies, strict=True))
        files = [
            report.with_budget(texts[report.name], fitted[report.name], budget)
            if report.name in fitted
            else report
            for report in files
        ]
        kept = [(file.name, file.body) for file in fitted.values() if file.body is not None]
        found, bodies = [name for name, _ in kept], [body for _, body in kept]
    parts = ordered_parts(found, bodies)  # names come in BOOTSTRAP_ORDER (select_names)
    soul = "".join([text for text, _ in parts])  # one part: that very string, not a copy
    return soul_report(location, soul, found, tuple(files), budget=budget, parts=parts)
