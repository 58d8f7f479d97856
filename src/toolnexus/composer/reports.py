"""What a composition reports per file (:class:`FileReport`) and as a whole (:class:`SoulReport`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from toolnexus._slots import draft_class

if TYPE_CHECKING:
    from toolnexus.composer.budget import Budget
    from toolnexus.composer.fitting import Fitted
    from toolnexus.composer.parts import SoulPart

__all__ = ["Encoding", "FileReport", "FileStatus", "SoulReport", "present_file", "soul_report"]

#: The encodings a :class:`FileReport` can name.
Encoding = Literal["utf-8", "utf-16-le", "utf-16-be"]

#: ``error``: present but unreadable — only in reports asked to go on past such a file
#: (``inspect_soul(..., on_error="report")``); a soul never silently lacks a section.
FileStatus = Literal["present", "absent", "skipped", "error"]


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
    #: How the bytes were decoded: ``"utf-8"``, or ``"utf-16-le"``/``"utf-16-be"`` after a UTF-16
    #: BOM; ``None`` when absent/skipped.
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
    #: Set only under a budget (see :mod:`.budget`): the body's characters after the rules,
    #: its tokens (when the budget has a tokenizer), the units of it kept in the soul, whether
    #: the budget cut it, and whether it was left out of the soul.
    chars: int | None = None
    tokens: int | None = None
    kept: int | None = None
    budget_truncated: bool = False
    omitted: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, keys in declaration order; the budget's keys only under a budget."""
        budgeted = {} if self.chars is None else {
            "chars": self.chars,
            "tokens": self.tokens,
            "kept": self.kept,
            "budget_truncated": self.budget_truncated,
            "omitted": self.omitted,
        }  # fmt: skip
        return {
            "name": self.name,
            "status": self.status,
            "size": self.size,
            "kept_bytes": self.kept_bytes,
            "truncated": self.truncated,
            "encoding": self.encoding,
            "bom_stripped": self.bom_stripped,
            "line_endings_normalised": self.line_endings_normalised,
            "invalid_bytes_replaced": self.invalid_bytes_replaced,
            "layer": self.layer,
            "reason": self.reason,
            **budgeted,
        }

    def with_budget(self, body: str, fitted: Fitted, budget: Budget) -> FileReport:
        """This report with what ``budget`` did to the file's ``body`` (see :func:`.budget.fit`)."""
        tokens = fitted.size if budget.unit == "tokens" else budget.count_tokens(body)
        omitted = fitted.body is None
        return replace(
            self,
            chars=len(body),
            tokens=tokens,
            kept=fitted.kept,
            budget_truncated=fitted.truncated,
            omitted=omitted,
        )


#: Filled by :func:`present_file`, then made a :class:`FileReport` (see :mod:`toolnexus._slots`).
_FileDraft = draft_class(FileReport)


def present_file(
    name: str,
    size: int | None,
    kept_bytes: int,
    layer: str | None,
    *,
    truncated: bool = False,
    encoding: Encoding = "utf-8",
    bom_stripped: bool = False,
    line_endings_normalised: int = 0,
    invalid_bytes_replaced: int = 0,
) -> FileReport:
    """``FileReport(name, "present", …)`` (no budget yet) at a seventh of the constructor's cost:
    ``inspect_soul`` and ``audit`` build one per present file, and the constructor's 16
    ``object.__setattr__`` calls made reports a quarter of an audited persona's CPU."""
    draft: Any = _FileDraft()
    draft.name = name
    draft.status = "present"
    draft.size = size
    draft.kept_bytes = kept_bytes
    draft.truncated = truncated
    draft.encoding = encoding
    draft.bom_stripped = bom_stripped
    draft.line_endings_normalised = line_endings_normalised
    draft.invalid_bytes_replaced = invalid_bytes_replaced
    draft.layer = layer
    draft.reason = draft.chars = draft.tokens = draft.kept = None  # the budget's, and a skip's
    draft.budget_truncated = draft.omitted = False
    draft.__class__ = FileReport
    return draft  # type: ignore[no-any-return]  # (typing.cast is a call: a tenth of this function)


@dataclass(frozen=True, slots=True)
class SoulReport:
    """A composed soul together with how each bootstrap name contributed to it."""

    location: str
    soul: str
    found: list[str] = field(default_factory=list)
    files: tuple[FileReport, ...] = ()
    #: The budget the soul was fitted to, if any.
    budget: Budget | None = None
    #: The soul as ``(text, stable)`` parts whose concatenation is ``soul``: the sections through
    #: TOOLS.md, then HEARTBEAT.md and MEMORY.md (see :mod:`toolnexus.composer.parts`), for
    #: placing prompt-cache breakpoints. Not in :meth:`to_dict` (it repeats the soul).
    parts: tuple[SoulPart, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``{"location", "soul", "found", "files"}`` (and ``"budget"`` under one)."""
        budget = {} if self.budget is None else {"budget": self.budget.to_dict()}
        return {
            "location": self.location,
            "soul": self.soul,
            "found": list(self.found),
            "files": [report.to_dict() for report in self.files],
            **budget,
        }


_SoulDraft = draft_class(SoulReport)


def soul_report(
    location: str,
    soul: str,
    found: list[str],
    files: tuple[FileReport, ...],
    *,
    budget: Budget | None,
    parts: tuple[SoulPart, ...],
) -> SoulReport:
    """``SoulReport(location, soul, found, files, budget, parts)`` without the frozen
    constructor's ``object.__setattr__`` per field (one report per ``inspect_soul``/audited persona)."""
    draft: Any = _SoulDraft()
    draft.location = location
    draft.soul = soul
    draft.found = found
    draft.files = files
    draft.budget = budget
    draft.parts = parts
    draft.__class__ = SoulReport
    return draft  # type: ignore[no-any-return]
