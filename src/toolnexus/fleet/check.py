"""Auditing one persona, and one batch of personas (what an executor's worker runs).

A persona's failure is its result, never the end of the audit: whatever its read raises becomes
a :class:`PersonaAudit` with ``error``. A folder that turned out to hold no bootstrap file is not
a persona and gives ``None``.
"""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Sequence

from toolnexus.composer.rules import SoulReport
from toolnexus.fleet.listing import Candidate, Target
from toolnexus.fleet.results import PersonaAudit
from toolnexus.soul.compose import inspect_source, inspect_source_async

__all__ = ["check", "check_async", "check_batch", "failed"]


def _result(target: Target, candidate: Candidate, report: SoulReport) -> PersonaAudit | None:
    """``None`` for a folder without any bootstrap file: not a persona. Under a profile every
    folder is one, since files outside the profile are never read (an empty soul is reported)."""
    path, always = candidate
    if not (always or target.profile or report.found) and all(f.status == "absent" for f in report.files):
        return None
    tokens = target.budget.count_tokens(report.soul) if target.budget is not None else None
    return PersonaAudit(target.location(path), report, None, tokens)


def failed(target: Target, path: str, error: Exception) -> PersonaAudit:
    """The result of a persona whose audit raised ``error``."""
    return PersonaAudit(target.location(path), error=error)


def check(target: Target, candidate: Candidate) -> PersonaAudit | None:
    """Audit one persona in this thread (names and budget were checked once, by ``audit``)."""
    try:
        call = target.call
        report = inspect_source(call.source(candidate[0]), budget=call.budget, names=call.names)
    except Exception as error:
        return failed(target, candidate[0], error)
    return _result(target, candidate, report)


async def check_async(target: Target, candidate: Candidate) -> PersonaAudit | None:
    """Audit one persona on the running event loop (remote reads are awaited, not threaded)."""
    try:
        call = target.call
        report = await inspect_source_async(call.source(candidate[0]), budget=call.budget, names=call.names)
    except Exception as error:
        return failed(target, candidate[0], error)
    return _result(target, candidate, report)


async def _gather(target: Target, candidates: Sequence[Candidate]) -> list[PersonaAudit | None]:
    return list(await asyncio.gather(*(check_async(target, candidate) for candidate in candidates)))


def check_batch(target: Target, candidates: Sequence[Candidate]) -> list[PersonaAudit | None]:
    """A batch, as a worker runs it: local personas in order, remote ones all in flight at once.

    Errors are made picklable here, so a worker can always send its results back: one that is
    not becomes an :class:`OSError` with the same message, its type named.
    """
    if target.local:
        results = [check(target, candidate) for candidate in candidates]
    else:
        results = asyncio.run(_gather(target, candidates))
    return [_picklable(result) for result in results]


def _picklable(result: PersonaAudit | None) -> PersonaAudit | None:
    if result is None or result.error is None:
        return result
    try:
        pickle.dumps(result.error)
    except Exception:
        error = OSError(f"{type(result.error).__name__}: {result.error}")
        return PersonaAudit(result.location, error=error)
    return result
