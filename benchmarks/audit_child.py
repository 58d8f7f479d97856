"""The child process of an in-process audit: imports toolnexus alone, so that its start and its
peak RSS are the audit's, not the benchmark suite's (moto, the proxy, the test support)."""

from __future__ import annotations

import hashlib
import json
import resource
import time

from toolnexus.agents import audit


def measure(prefix: str, options_json: str) -> None:
    """The child: audit ``prefix`` once, print elapsed, count, peak RSS and the lines' hash."""
    options = json.loads(options_json)
    digest = hashlib.sha256()
    count = 0
    start, start_cpu = time.perf_counter(), time.process_time()
    for result in audit(prefix, storage_options=options):
        digest.update(json.dumps(result.to_dict(), ensure_ascii=False).encode() + b"\n")
        count += 1
    elapsed, cpu = time.perf_counter() - start, time.process_time() - start_cpu  # all threads: fsspec's too
    rss = _peak_rss()
    figures = {"elapsed": elapsed, "cpu": cpu, "count": count, "rss": rss, "digest": digest.hexdigest()}
    print(json.dumps(figures))


def _peak_rss() -> int:
    """This process's peak resident set, in bytes. ``VmHWM`` is this process image's own;
    ``ru_maxrss`` is not: Linux carries it over ``fork`` and ``exec``, so a child started by a
    large parent reports the parent's peak (a whole benchmark run's, 411 MiB, instead of the
    audit's)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            line = next(line for line in status if line.startswith("VmHWM:"))
        return int(line.split()[1]) * 1024  # kB
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
