"""What the budget tests share: personas worth cutting, budgets, a plain tokenizer, soul parsing."""

from __future__ import annotations

import re

from hypothesis import strategies as st

from toolnexus.agents import BOOTSTRAP_ORDER, PROFILES, Budget

#: One marker line: what was kept of how much, in which unit, of which file.
MARKER = re.compile(r"\[… truncated: kept (\d+) of (\d+) (characters|tokens) of (\S+) …\]")


def quarter_tokens(text: str) -> int:
    """A plain ``str -> int`` tokenizer: a token per started 4 bytes of UTF-8 (not additive)."""
    return (len(text.encode("utf-8")) + 3) // 4


#: Text with line breaks, spaces, multi-byte and astral characters, and no "." or "[" (so a body
#: can never spell a section header or a marker); repeated, so that budgets have work to do.
PIECES = st.sampled_from(["a", "Z", " ", "\n", "é", "€", "😀", "#", "\r\n", "word "])
TEXT = st.builds(
    lambda pieces, times: "".join(pieces) * times, st.lists(PIECES, max_size=40), st.integers(0, 60)
)
PERSONAS = st.dictionaries(st.sampled_from(BOOTSTRAP_ORDER), TEXT.map(str.encode), max_size=7)
LIMITS = st.one_of(st.none(), st.integers(min_value=1, max_value=3000))
BUDGETS = st.builds(
    lambda per_file, total, tokens: (
        Budget(per_file, total, "tokens", quarter_tokens) if tokens else Budget(per_file, total)
    ),
    LIMITS,
    LIMITS,
    st.booleans(),
)
PROFILE_NAMES = st.one_of(st.none(), st.sampled_from(sorted(PROFILES)))


def split_soul(soul: str, found: list[str]) -> dict[str, str]:
    """``{name: body}`` of every section, checking that the soul is exactly those sections."""
    bodies: dict[str, str] = {}
    rest = soul
    for index, name in enumerate(found):
        header = f"## {name}\n\n"
        assert rest.startswith(header), (name, rest[:80])
        rest = rest[len(header) :]
        if index + 1 < len(found):
            at = rest.index(f"\n\n## {found[index + 1]}\n\n")
            bodies[name], rest = rest[:at], rest[at + 2 :]
        else:
            bodies[name], rest = rest, ""
    assert rest == ""
    return bodies


def head_and_tail(body: str) -> tuple[str, re.Match[str], str]:
    """A cut body's head, its one marker and its tail (each separated by one line break)."""
    (found,) = list(MARKER.finditer(body))
    before, after = body[: found.start()], body[found.end() :]
    assert not before or before.endswith("\n"), "the marker is a line of its own"
    assert not after or after.startswith("\n"), "the marker is a line of its own"
    return before[:-1], found, after[1:]
