"""``audit``: every persona under a prefix, checked the way ``inspect_soul`` checks one."""

from __future__ import annotations

import os
from collections.abc import Generator, Mapping
from functools import partial
from typing import Any

from toolnexus.composer.budget import Budget, checked_budget
from toolnexus.composer.profiles import select_names
from toolnexus.fleet.executors import in_process, on_executor, refuse_fork
from toolnexus.fleet.listing import Target, list_prefix, prefix_path
from toolnexus.fleet.results import PersonaAudit
from toolnexus.sources import DEFAULT_ENGINE, resolve

__all__ = ["audit"]

#: GETs one persona's read plan issues at once (one per bootstrap name).
_READS_PER_PERSONA = 7


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
) -> Generator[PersonaAudit, None, None]:
    """Audit every persona under ``prefix``: one :class:`PersonaAudit` each, in listing order.

    A persona is a direct child folder holding a bootstrap file, a direct child zip or tar
    bundle (by name), or the prefix itself when it holds a bootstrap file or is a bundle. Each
    is read with its usual plan (on S3: 7 ranged GETs at once) and reported like
    :func:`inspect_soul`; one that fails is a result with ``error``, never the end of the audit.

    ``prefix`` is a local folder, an fsspec URL, a path on ``fs`` or a UPath; a missing one is a
    :class:`FileNotFoundError` naming it, raised by this call. The listing is streamed page by
    page and at most ``concurrency`` personas are held at once (in flight or waiting to be
    yielded), so memory does not grow with the fleet. ``executor``: ``None`` (asyncio in this
    process), any ``concurrent.futures.Executor``, or a ``dask.distributed.Client`` — batches of
    personas run there, Dask retrying a batch whose worker died, and results still come back in
    listing order, each persona exactly once. ``close()`` the iterator to stop early: reads
    in flight are cancelled.

    ``budget`` and ``profile`` fit each persona as :func:`inspect_soul` does; a persona cut to
    its budget shows the issue ``over-budget``, and with a tokenizer ``soul_tokens`` counts its
    soul. Under a ``profile`` every child folder is a persona, even one without the profile's
    files (the others are never read, so an empty soul is reported rather than guessed away).

    ``engine`` is the client for ``s3://``, ``gs://`` and ``az://`` prefixes, as for
    :func:`compose_soul`: ``"fsspec"`` (the default) or ``"obstore"``, which lists the prefix
    with obstore's delimiter listing and reads each persona with its plan (on a worker too: the
    store is rebuilt there from the URL's options); the results are the same. A prefix that is
    an :class:`~toolnexus.sources.ObstoreSource` is listed and read through obstore whatever
    ``engine`` says. An unknown engine is a :class:`ValueError` naming the choices.
    """
    names, budget = select_names(profile=profile), checked_budget(budget)  # bad ones fail here, named
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number of personas ≥ 1, got {concurrency!r}")
    run = (
        partial(in_process, concurrency=concurrency)
        if executor is None
        else on_executor(executor, concurrency)
    )
    fs, path = prefix_path(prefix, fs)
    follow, reads = follow_external_symlinks, _READS_PER_PERSONA * concurrency
    options = {"storage_options": storage_options, "fs": fs, "follow_external_symlinks": follow}
    source = resolve(path, **options, engine=engine, reads=reads)
    listing = list_prefix(source, path, Target(fs, follow, budget, names, profile))
    refuse_fork(executor, listing.target)
    return run(listing)
