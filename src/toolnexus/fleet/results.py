"""What an audit says about one persona, which problems it shows, and the counts over a fleet:
here, not in the command, so ``toolnexus audit --fail-on`` and a Python caller agree."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from toolnexus.composer.rules import SoulReport

#: Every problem an audit can find, as ``--fail-on`` spells it: a file cut at the 2 MiB cap, a
#: soul cut to a budget, invalid bytes replaced, a UTF-16 file, no SOUL.md, a persona that failed.
AUDIT_ISSUES: tuple[str, ...] = ("truncated", "over-budget", "invalid", "utf16", "missing-soul", "error")


class PersonaAudit(NamedTuple):
    """One persona of an audit: its :class:`SoulReport`, or the error that stopped it (exactly one
    is set). ``location`` is where the listing found it (``report.location``: where its home
    turned out to be, e.g. a folder inside a bundle)."""

    location: str
    report: SoulReport | None = None
    error: Exception | None = None
    #: The soul's tokens, counted by the budget's tokenizer (``None`` without one).
    soul_tokens: int | None = None

    @property
    def issues(self) -> frozenset[str]:
        """The :data:`AUDIT_ISSUES` this persona shows (empty when it is fine)."""
        if self.report is None:
            return frozenset({"error"})
        found: set[str] = set()
        for file in self.report.files:
            if file.truncated:
                found.add("truncated")
            if file.invalid_bytes_replaced:
                found.add("invalid")
            if file.encoding is not None and file.encoding != "utf-8":
                found.add("utf16")
            if file.name == "SOUL.md" and file.status != "present":
                found.add("missing-soul")
            if file.budget_truncated or file.omitted:
                found.add("over-budget")
        return frozenset(found)

    @property
    def ok(self) -> bool:
        """No issue at all."""
        return not self.issues

    def to_dict(self) -> dict[str, Any]:
        """One JSON line of ``toolnexus audit``: the same keys for every persona, failed or not;
        ``soul_tokens`` only when the budget counts tokens (``--tokens``)."""
        report, error = self.report, self.error
        tokens = {} if self.soul_tokens is None else {"soul_tokens": self.soul_tokens}
        return {
            "location": self.location,
            "found": list(report.found) if report is not None else [],
            "files": [file.to_dict() for file in report.files] if report is not None else [],
            "soul_chars": len(report.soul) if report is not None else None,
            "soul_bytes": len(report.soul.encode("utf-8")) if report is not None else None,
            **tokens,
            "issues": [issue for issue in AUDIT_ISSUES if issue in self.issues],
            "error": None if error is None else {"type": type(error).__name__, "message": str(error)},
        }


#: How :meth:`AuditSummary.line` names each count, in the order it prints them.
_LABELS = (
    ("truncated", "with truncation"),
    ("over-budget", "over budget"),
    ("invalid", "with invalid bytes"),
    ("utf16", "not UTF-8"),
    ("missing-soul", "missing SOUL.md"),
    ("error", "error"),
)


@dataclass
class AuditSummary:
    """Counts over an audit as it streams: personas, ok, and personas per issue."""

    personas: int = 0
    ok: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(AUDIT_ISSUES, 0))
    started: float = field(default_factory=time.perf_counter)
    elapsed: float = 0.0

    def add(self, result: PersonaAudit) -> frozenset[str]:
        """Count one persona; returns its issues."""
        issues = result.issues
        self.personas += 1
        self.ok += not issues
        for issue in issues:
            self.counts[issue] += 1
        self.elapsed = time.perf_counter() - self.started
        return issues

    def extend(self, results: Iterable[PersonaAudit]) -> AuditSummary:
        for result in results:
            self.add(result)
        return self

    @property
    def rate(self) -> float:
        """Personas per second so far."""
        return self.personas / self.elapsed if self.elapsed > 0 else 0.0

    def line(self) -> str:
        """``"3 personas: 1 ok, 1 with truncation, …, 1 error; 0.21 s, 14.3 personas/s"``."""
        counts = ", ".join(
            f"{self.counts[issue]} {label}{'s' if issue == 'error' and self.counts[issue] != 1 else ''}"
            for issue, label in _LABELS
        )
        noun = "persona" if self.personas == 1 else "personas"
        return (
            f"{self.personas} {noun}: {self.ok} ok, {counts}; "
            f"{self.elapsed:.2f} s, {self.rate:.1f} personas/s"
        )
