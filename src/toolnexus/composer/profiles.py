"""Session profiles: which bootstrap files a kind of session sees, decided before any I/O (the
files a profile leaves out are never requested)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from toolnexus.composer.rules import BOOTSTRAP_ORDER

#: Named profiles (read-only): ``main`` is every file; ``subagent`` gets its working rules and
#: tools; ``cron`` runs unattended, without heartbeat and memory; ``group`` is a shared channel,
#: which must not see the persona's private MEMORY.md; ``heartbeat`` is the light heartbeat.
PROFILES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "main": BOOTSTRAP_ORDER,
        "subagent": ("AGENTS.md", "TOOLS.md"),
        "cron": ("AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md"),
        "group": tuple(name for name in BOOTSTRAP_ORDER if name != "MEMORY.md"),
        "heartbeat": ("HEARTBEAT.md",),
    }
)


def select_names(files: Iterable[str] | None = None, profile: str | None = None) -> tuple[str, ...]:
    """The bootstrap names to read, in :data:`BOOTSTRAP_ORDER` (that very tuple when nothing
    narrows it); a :class:`ValueError` for an unknown name or profile, or both arguments."""
    if files is not None and profile is not None:
        raise ValueError("pass files= or profile=, not both")
    if profile is not None:
        if not isinstance(profile, str) or profile not in PROFILES:
            raise ValueError(f"profile={profile!r} is not a profile; choose from {', '.join(PROFILES)}")
        return PROFILES[profile]
    if files is None:
        return BOOTSTRAP_ORDER
    if isinstance(files, str | bytes):
        raise ValueError(f"files= takes a sequence of names, not the single string {files!r}")
    wanted = list(files)
    unknown = [name for name in wanted if name not in BOOTSTRAP_ORDER]
    if unknown:
        raise ValueError(
            f"files= names {', '.join(map(repr, unknown))}, not bootstrap files; "
            f"choose from {', '.join(BOOTSTRAP_ORDER)}"
        )
    return tuple(name for name in BOOTSTRAP_ORDER if name in wanted)
