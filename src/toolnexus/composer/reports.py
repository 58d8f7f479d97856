"""What a composition reports per file (:class:`FileReport`) and as a whole (:class:`SoulReport`):
named tuples, cheap enough to build for every file of every audited persona."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:
    from toolnexus.composer.budget import Budget
    from toolnexus.composer.fitting import Fitted
    from toolnexus.composer.parts import SoulPart

__all__ = ["Encoding", "FileReport", "FileStatus", "SoulReport"]

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
