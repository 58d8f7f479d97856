"""The soul in parts, for provider prompt caches, which keep a request's prefix byte for byte:
AGENTS.md through TOOLS.md are the *stable* part; HEARTBEAT.md and MEMORY.md (rewritten by
heartbeats and memory edits) come after it. The split is taken from the composition's own
sections, never by searching the soul for headers (a body may quote ``## MEMORY.md``)."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import takewhile

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

#: What joins two sections (``## NAME\n\nbody``) in a soul.
SECTION_SEPARATOR = "\n\n"

#: The sections of the stable part: every bootstrap file up to and including TOOLS.md.
STABLE_NAMES: tuple[str, ...] = BOOTSTRAP_ORDER[: BOOTSTRAP_ORDER.index("TOOLS.md") + 1]

#: ``(text, stable)``: a run of consecutive sections and whether they belong to the stable part.
SoulPart = tuple[str, bool]

_STABLE = frozenset(STABLE_NAMES)


def split_sections(sections: Iterable[tuple[str, str]]) -> tuple[SoulPart, ...]:
    """Group ``(name, section)`` pairs, in soul order, into runs of stable and volatile sections.
    Each run after the first begins with the separator joining it to the one before, so a cached
    stable prefix survives MEMORY.md appearing. No sections, no parts (the empty soul)."""
    parts: list[SoulPart] = []
    run: list[str] = []  # the current run's sections; after the first run, led by "" (the separator)
    run_stable = True
    for name, section in sections:
        stable = name in _STABLE
        if stable is not run_stable and run:
            parts.append((SECTION_SEPARATOR.join(run), run_stable))
            run = [""]
        run_stable = stable
        run.append(section)
    if run:
        parts.append((SECTION_SEPARATOR.join(run), run_stable))
    return tuple(parts)


#: Each name's section header, leading the soul and after a separator.
_LEAD = {name: f"## {name}\n\n" for name in BOOTSTRAP_ORDER}
_NEXT = {name: SECTION_SEPARATOR + lead for name, lead in _LEAD.items()}


def joined_parts(found: list[str], bodies: list[str]) -> tuple[str, tuple[SoulPart, ...]]:
    """The soul of ``found[i]``'s ``bodies[i]`` and its :func:`split_sections` parts, joined from
    the bodies (no section strings): names in :data:`BOOTSTRAP_ORDER`, as every composition's
    are, put the stable ones first, so there are at most two parts."""
    pieces: list[str] = []
    for index, name in enumerate(found):
        pieces += ((_NEXT if index else _LEAD)[name], bodies[index])
    stable = 2 * len(_STABLE.intersection(found))
    if stable in {0, len(pieces)}:
        soul = "".join(pieces)
        return soul, ((soul, stable > 0),) if found else ()
    head, tail = "".join(pieces[:stable]), "".join(pieces[stable:])
    return head + tail, ((head, True), (tail, False))


class Soul(str):
    """A composed soul that knows its parts: equal to the soul's text, usable wherever a ``str`` is.

    ``parts`` are ``(text, stable)`` pairs whose concatenation is the soul; ``persona`` names the
    agent whose soul it is. Model adapters read these to place cache breakpoints; string methods
    return plain ``str`` (the parts do not survive slicing or concatenation).
    """

    parts: tuple[SoulPart, ...]
    persona: str | None

    def __new__(cls, parts: Iterable[SoulPart] = (), *, persona: str | None = None) -> Soul:
        kept = tuple((str(text), bool(stable)) for text, stable in parts)
        soul = super().__new__(cls, "".join(text for text, _ in kept))
        soul.parts, soul.persona = kept, persona
        return soul

    @classmethod
    def from_sections(cls, sections: Iterable[tuple[str, str]], *, persona: str | None = None) -> Soul:
        """The soul of ``(name, section)`` pairs in order, split by :func:`split_sections`."""
        return cls(split_sections(sections), persona=persona)

    @property
    def stable(self) -> str:
        """The stable prefix: what a provider can keep cached from one session to the next."""
        return "".join(text for text, _ in takewhile(lambda part: part[1], self.parts))

    def __getnewargs__(self) -> tuple[tuple[SoulPart, ...]]:  # type: ignore[override]
        return (self.parts,)  # pickle and copy rebuild from the parts; persona rides in __dict__
