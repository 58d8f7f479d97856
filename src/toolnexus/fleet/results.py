"""What an audit says about one persona, which problems it shows, and the counts over a fleet:
here, not in the command, so ``toolnexus audit --fail-on`` and a Python caller agree. Its lines
go to stdout or, all or nothing, to a report file (:func:`report_file`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from toolnexus.composer.rules import SoulReport
from toolnexus.soul.bundling import naming, written_whole
from toolnexus.sources import DEFAULT_ENGINE, resolve_output

#: Every problem an audit can find, as ``--fail-on`` spells it: a file cut at the 2 MiB cap, a
#: soul cut to a budget, invalid bytes replaced, a UTF-16 file, no SOUL.md, a persona that failed.
AUDIT_ISSUES = ("truncated", "over-budget", "invalid", "utf16", "missing-soul", "skills", "error")


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
        if self.report.skills is not None and self.report.skills.warnings:
            found.add("skills")
        return frozenset(found)

    @property
    def ok(self) -> bool:
        """No issue at all."""
        return not self.issues

    def to_dict(self) -> dict[str, Any]:
        """One JSON line of ``toolnexus audit``: the same keys for every persona, failed or not;
        ``soul_tokens`` only when the budget counts tokens (``--tokens``), ``skill_warnings`` when
        the audit read skills (``--skills``) and found any."""
        report, error = self.report, self.error
        tokens = {} if self.soul_tokens is None else {"soul_tokens": self.soul_tokens}
        skills = report.skills if report is not None else None  # read by audit(skills=True) only
        warnings = {"skill_warnings": list(skills.warnings)} if skills is not None and skills.warnings else {}
        return {
            "location": self.location,
            "found": list(report.found) if report is not None else [],
            "files": [file.to_dict() for file in report.files] if report is not None else [],
            "soul_chars": len(report.soul) if report is not None else None,
            "soul_bytes": len(report.soul.encode("utf-8")) if report is not None else None,
            **tokens,
            **warnings,
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
    ("skills", "with skill warnings"),
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
            if issue != "skills" or self.counts[issue]  # only an audit that read skills finds any
        )
        noun = "persona" if self.personas == 1 else "personas"
        return (
            f"{self.personas} {noun}: {self.ok} ok, {counts}; "
            f"{self.elapsed:.2f} s, {self.rate:.1f} personas/s"
        )


def report_file(
    out: str, storage_options: Mapping[str, Any] | None = None, engine: str = DEFAULT_ENGINE
) -> AbstractContextManager[Callable[[str], None]]:
    """A ``write(text)`` function whose text becomes ``out`` when the block ends without error
    (``engine``: the client for an object-store URL). A failure to write is an :class:`OSError`
    naming ``out``; errors of the block pass unchanged."""
    fs, path = resolve_output(out, storage_options, engine)
    return _local(path, out) if fs is None else _remote(fs, path, out)


@contextmanager
def _local(path: str, out: str) -> Iterator[Callable[[str], None]]:
    with written_whole(path, guard=lambda: naming(out, "report")) as write:
        yield lambda text: write(text.encode("utf-8"))


@contextmanager
def _remote(fs: Any, path: str, out: str) -> Iterator[Callable[[str], None]]:
    with naming(out, "report"):
        stream = fs.open(path, "wb")

    def write(text: str) -> None:
        with naming(out, "report"):
            stream.write(text.encode("utf-8"))

    try:
        yield write
    except BaseException:
        discard = getattr(stream, "discard", None)
        if discard is not None:
            discard()  # abort the upload: nothing appears
        raise
    with naming(out, "report"):
        stream.close()
