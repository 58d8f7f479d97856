"""``audit``: every persona under a prefix, checked the way ``inspect_soul`` checks one."""

from __future__ import annotations

import os
from collections.abc import Generator, Mapping
from typing import Any

from toolnexus.composer.budget import Budget, checked_budget, select_names
from toolnexus.composer.parts import BOOTSTRAP_ORDER
from toolnexus.fleet.executors import Target, list_prefix, on_executor, prefix_path, refuse_fork
from toolnexus.fleet.results import PersonaAudit
from toolnexus.sources import DEFAULT_ENGINE, resolve


def audit(
    prefix: str | os.PathLike[str] | Any,
    *,
    storage_options: Mapping[str, Any] | None = None,
    fs: Any = None,
    budget: Budget | None = None,
    profile: str | None = None,
    executor: Any = None,
    concurrency: int = 64,
    follow_external_symlinks: bool = False,
    engine: str = DEFAULT_ENGINE,
    skills: bool = False,
) -> Generator[PersonaAudit, None, None]:
    """Audit every persona under ``prefix``: one :class:`PersonaAudit` each, in listing order.

    A persona is a direct child folder holding a bootstrap file, a direct child zip or tar bundle
    (by name), or the prefix itself when it holds a bootstrap file or is a bundle; each is reported
    like :func:`inspect_soul` (under a ``profile`` every child folder is a persona), a failure as a
    result with ``error``; a missing ``prefix`` raises :class:`FileNotFoundError` here. Streamed, at
    most ``concurrency`` personas held at once; ``executor``: ``None`` (asyncio here), a
    ``concurrent.futures.Executor`` or a ``dask.distributed.Client`` (batches, retried there);
    ``close()`` stops early. ``skills=True`` also reads each persona's Agent Skills (one listing per
    skills folder more): their warnings are the ``skills`` issue and each line's ``skill_warnings``.
    """
    names, budget = select_names(profile=profile), checked_budget(budget)  # bad ones fail here, named
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number of personas ≥ 1, got {concurrency!r}")
    run = on_executor(executor, concurrency)
    fs, path = prefix_path(prefix, fs)
    follow, reads = follow_external_symlinks, len(BOOTSTRAP_ORDER) * concurrency  # a GET per name at once
    options = {"storage_options": storage_options, "fs": fs, "follow_external_symlinks": follow}
    source = resolve(path, **options, engine=engine, reads=reads)
    listing = list_prefix(source, path, Target(fs, follow, budget, names, profile, skills=skills))
    refuse_fork(executor, listing.target)
    return run(listing)
