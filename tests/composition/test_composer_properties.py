"""Hypothesis properties of the pure composer (soul.py), driven with small caps."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.agents import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, TRUNCATION_NOTICE
from toolnexus.composer.rules import compose, compose_report, normalise_body

CAPS = st.integers(min_value=1, max_value=24)

# Bytes that exercise the rules: BOM, CR/LF, multi-byte characters, invalid bytes, whitespace.
INTERESTING = st.sampled_from(
    [
        b"\xef\xbb\xbf",
        b"\r\n",
        b"\r",
        b"\n",
        b" ",
        b"\t",
        "é".encode(),
        "€".encode(),
        "😀".encode(),
        b"\xff",
        b"\xe2\x82",
        b"\xf0\x9f",
        "\ufffd".encode(),
        b"a",
        b"Z",
        b"\xff\xfe",
        b"\xfe\xff",
        b"\x00",
        b"\xd8",
    ]
)
UTF16_CODECS = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}
#: Text as Windows Notepad saves it as "Unicode": a UTF-16 BOM, then UTF-16 code units.
UTF16_TEXT = st.builds(
    lambda bom, text: bom + text.encode(UTF16_CODECS[bom]),
    st.sampled_from(list(UTF16_CODECS)),
    st.text(max_size=12),
)
CONTENT = st.one_of(
    st.binary(max_size=40),
    st.lists(INTERESTING, max_size=16).map(b"".join),
    st.text(max_size=20).map(str.encode),
    UTF16_TEXT,
)
PERSONAS = st.dictionaries(st.sampled_from(BOOTSTRAP_ORDER), CONTENT)


def completes_to_a_character(tail: bytes, need: int) -> bool:
    """Whether some continuation bytes would turn ``tail`` into one valid UTF-8 character."""
    missing = need - len(tail)
    for second in (0x80, 0x90, 0xA0, 0xBF):
        completion = bytes([second] + [0x80] * (missing - 1)) if len(tail) == 1 else bytes([0x80] * missing)
        try:
            (tail + completion).decode("utf-8")
        except UnicodeDecodeError:
            continue
        return True
    return False


def drop_cut_character(head: bytes) -> bytes:
    """Remove a character that the cap cut in half (and nothing else)."""
    for back in range(1, min(3, len(head)) + 1):
        byte = head[-back]
        if byte & 0xC0 == 0x80:  # a continuation byte: keep looking for the lead byte
            continue
        need = 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4 if byte >> 3 == 0b11110 else 1
        if need > back and completes_to_a_character(head[-back:], need):
            return head[:-back]
        return head
    return head


def drop_cut_code_unit(units: bytes, codec: str) -> bytes:
    """Remove half a UTF-16 code unit, and a high surrogate whose low half was cut off."""
    units = units[: len(units) // 2 * 2]
    if len(units) >= 2:
        last = int.from_bytes(units[-2:], "little" if codec == "utf-16-le" else "big")
        if 0xD800 <= last < 0xDC00:
            units = units[:-2]
    return units


def reference_text(data: bytes, cap: int) -> str:
    """The decoded kept text: UTF-16 after its BOM, else UTF-8."""
    head = data[:cap]
    codec = UTF16_CODECS.get(data[:2])
    if codec is not None:
        units = head[2:]
        return (drop_cut_code_unit(units, codec) if len(data) > cap else units).decode(codec, "replace")
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    if len(data) > cap:
        head = drop_cut_character(head)
    return head.decode("utf-8", "replace")


def reference_body(data: bytes, cap: int) -> str:
    """The cap, decoding and UTF-16 rules, restated independently of the implementation."""
    body = reference_text(data, cap).replace("\r\n", "\n").replace("\r", "\n").rstrip()
    return body + (TRUNCATION_NOTICE if len(data) > cap else "")


@given(PERSONAS, CAPS)
def test_found_is_present_names_in_bootstrap_order(persona: dict[str, bytes], cap: int) -> None:
    report = compose_report("mem", {n: d[: cap + 1] for n, d in persona.items()}, limit=cap)
    assert report.found == [name for name in BOOTSTRAP_ORDER if name in persona]


@given(PERSONAS, CAPS)
def test_soul_is_sections_in_order_joined_by_blank_lines(persona: dict[str, bytes], cap: int) -> None:
    report = compose_report("mem", {n: d[: cap + 1] for n, d in persona.items()}, limit=cap)
    expected = "\n\n".join(f"## {n}\n\n{reference_body(persona[n], cap)}" for n in report.found)
    assert report.soul == expected


@given(CONTENT, CAPS)
def test_notice_iff_file_exceeds_cap(data: bytes, cap: int) -> None:
    body, report = normalise_body(data[: cap + 1], limit=cap)
    assert body.endswith(TRUNCATION_NOTICE) == (len(data) > cap)
    assert report.truncated == (len(data) > cap)


@given(CONTENT, CAPS)
def test_kept_text_is_normalised_decoding_of_a_prefix_of_at_most_cap_bytes(data: bytes, cap: int) -> None:
    body, report = normalise_body(data[: cap + 1], limit=cap)
    text = body.removesuffix(TRUNCATION_NOTICE) if report.truncated else body
    assert report.kept_bytes <= cap
    prefix = data[: report.kept_bytes]
    if report.encoding == "utf-8" and prefix.startswith(b"\xef\xbb\xbf"):
        prefix = prefix[3:]
    elif report.encoding != "utf-8":
        prefix = prefix[2:]
    decoded = prefix.decode(report.encoding, "replace")
    assert text == decoded.replace("\r\n", "\n").replace("\r", "\n").rstrip()


@given(st.text(min_size=1, max_size=30), CAPS)
def test_a_cut_never_produces_a_replacement_character(text: str, cap: int) -> None:
    clean = text.replace("\ufffd", "")
    body, _ = normalise_body(clean.encode()[: cap + 1], limit=cap)
    assert "\ufffd" not in body


@settings(max_examples=300)
@given(st.binary(max_size=64), CAPS)
def test_arbitrary_bytes_never_raise(data: bytes, cap: int) -> None:
    body, report = normalise_body(data[: cap + 1], limit=cap)
    assert isinstance(body, str)
    assert report.invalid_bytes_replaced >= 0


def test_invalid_bytes_not_at_the_cut_are_replaced_and_counted() -> None:
    body, report = normalise_body(b"ok \xff then \xe2\x28 fine", limit=100)
    assert body == "ok \ufffd then \ufffd( fine"
    assert report.invalid_bytes_replaced == 2


def test_literal_replacement_character_is_not_counted_as_invalid() -> None:
    body, report = normalise_body("a\ufffdb".encode(), limit=100)
    assert body == "a\ufffdb"
    assert report.invalid_bytes_replaced == 0


def test_cut_inside_a_multibyte_character_drops_it() -> None:
    data = "ab€".encode()  # € is three bytes: cap 4 cuts it after its second byte
    body, report = normalise_body(data[:5], limit=4)
    assert body == "ab" + TRUNCATION_NOTICE
    assert report.kept_bytes == 2


def test_default_cap_is_two_mebibytes() -> None:
    assert MAX_BOOTSTRAP_FILE_BYTES == 2 * 1024 * 1024
    assert isinstance(BOOTSTRAP_ORDER, tuple)


def test_empty_file_is_present_with_empty_body() -> None:
    report = compose_report("mem", {"SOUL.md": b""})
    assert report.soul == "## SOUL.md\n\n"
    assert report.found == ["SOUL.md"]


def test_empty_home() -> None:
    report = compose_report("mem", {})
    assert (report.soul, report.found) == ("", [])


@given(PERSONAS, CAPS)
def test_compose_fast_path_equals_the_report(persona: dict[str, bytes], cap: int) -> None:
    """compose_soul's hot path (no per-file reports) composes exactly what inspect_soul reports."""
    prefixes = {n: d[: cap + 1] for n, d in persona.items()}
    report = compose_report("mem", prefixes, limit=cap)
    assert compose("mem", prefixes, limit=cap) == (report.soul, report.found)


# -- UTF-16: a file starting with a UTF-16 BOM is UTF-16 --------------------------

UTF16_EXAMPLES = settings(max_examples=60)


@UTF16_EXAMPLES
@given(st.sampled_from(list(UTF16_CODECS)), st.text(max_size=20))
def test_utf16_file_composes_like_its_utf8_twin(bom: bytes, text: str) -> None:
    """Under the cap, a UTF-16 file gives the body its UTF-8 spelling gives; the report says which."""
    body, report = normalise_body(bom + text.encode(UTF16_CODECS[bom]), limit=1000)
    assert body == normalise_body(text.encode(), limit=1000)[0]
    assert (report.encoding, report.bom_stripped) == (UTF16_CODECS[bom], True)
    assert report.invalid_bytes_replaced == 0


@UTF16_EXAMPLES
@given(UTF16_TEXT, CAPS)
def test_utf16_cut_never_splits_a_code_unit_or_a_surrogate_pair(data: bytes, cap: int) -> None:
    """The cap counts bytes; the kept bytes are whole characters, so no U+FFFD and no half pair."""
    clean = data[:2] + data[2:].decode(UTF16_CODECS[data[:2]]).replace("\ufffd", "").encode(
        UTF16_CODECS[data[:2]]
    )
    body, report = normalise_body(clean[: cap + 1], limit=cap)
    assert report.truncated == (len(clean) > cap)
    assert report.kept_bytes <= cap
    assert report.kept_bytes == 0 or report.kept_bytes % 2 == 0
    kept = clean[2 : report.kept_bytes]
    kept.decode(report.encoding)  # strict: a split code unit or surrogate pair would raise
    assert "\ufffd" not in body
    assert report.invalid_bytes_replaced == 0


@UTF16_EXAMPLES
@given(st.sampled_from(list(UTF16_CODECS)), st.binary(max_size=30), CAPS)
def test_utf16_invalid_units_are_replaced_and_counted(bom: bytes, units: bytes, cap: int) -> None:
    """Lone surrogates and an odd last byte become U+FFFD and are counted, as invalid UTF-8 is."""
    data = bom + units
    body, report = normalise_body(data[: cap + 1], limit=cap)
    assert report.encoding == UTF16_CODECS[bom]
    assert body == reference_body(data, cap)
    literal = reference_text(data, cap).count("\ufffd")
    strict_kept = data[2 : report.kept_bytes]
    try:
        strict_kept.decode(report.encoding)
    except UnicodeDecodeError:
        assert report.invalid_bytes_replaced >= 1
    else:
        assert report.invalid_bytes_replaced == 0
    assert report.invalid_bytes_replaced <= literal
