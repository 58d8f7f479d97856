"""Auditing one persona, and one batch (an executor's unit): a failure is the persona's result
(``error``); a folder holding no bootstrap file is no persona (``None``)."""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Sequence

from toolnexus.composer.rules import SoulReport
from toolnexus.fleet.listing import Candidate, Target
from toolnexus.fleet.results import PersonaAudit
from toolnexus.skills import skills_beside
from toolnexus.soul.compose import inspect_source, inspect_source_async

__all__ = ["check", "check_async", "check_batch", "failed"]


def _result(target: Target, candidate: Candidate, report: SoulReport) -> PersonaAudit | None:
    path, always = candidate
    if not (always or target.profile or report.found) and all(f.status == "absent" for f in report.files):
        return None
    tokens = target.budget.count_tokens(report.soul) if target.budget is not None else None
    return PersonaAudit(target.location(path), report, None, tokens)


def failed(target: Target, path: str, error: Exception) -> PersonaAudit:
    return PersonaAudit(target.location(path), error=error)


def check(target: Target, candidate: Candidate) -> PersonaAudit | None:
    try:
        source = target.source(candidate[0])
        report = inspect_source(source, budget=target.budget, names=target.names)
        if target.skills:
            report = report._replace(skills=skills_beside(source))
    except Exception as error:
        return failed(target, candidate[0], error)
    return _result(target, candidate, report)


async def check_async(target: Target, candidate: Candidate) -> PersonaAudit | None:
    try:
        source = target.source(candidate[0])
        report = await inspect_source_async(source, budget=target.budget, names=target.names)
        if target.skills:
            report = report._replace(skills=await asyncio.to_thread(skills_beside, source))
    except Exception as error:
        return failed(target, candidate[0], error)
    return _result(target, candidate, report)


async def _gather(target: Target, candidates: Sequence[Candidate]) -> list[PersonaAudit | None]:
    return list(await asyncio.gather(*(check_async(target, candidate) for candidate in candidates)))


def check_batch(target: Target, candidates: Sequence[Candidate]) -> list[PersonaAudit | None]:
    """Local personas in order, remote ones all in flight; an error that does not pickle
    becomes an :class:`OSError` naming its type, so a worker can always send its results."""
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
