"""Agent Skills beside the soul: an S3 home's soul and catalog together in about two round trips,
a small zip bundle's from its tail, and a local catalog near a plain loop over the SKILL.md heads.

The home's row carries, from the same rounds, the floors of the rig: the same requests by hand
through s3fs, and through obstore alone (the fastest client here), with no toolnexus at all.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import fsspec
import yaml
from tests.support.files import zip_bytes
from tests.support.obstore import s3_options, s3_store

from benchmarks.harness import Row, fmt_time, median_ratio
from benchmarks.personas import typical_files
from benchmarks.remote import POOL, _by_method
from benchmarks.servers import BUCKET, S3
from toolnexus.agents import compose_soul, load_skills
from toolnexus.composer.rules import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES
from toolnexus.skills import HOME_FOLDERS
from toolnexus.skills.frontmatter import MAX_FRONTMATTER_BYTES, split_frontmatter

COUNT = 20


def skill_files(count: int = COUNT) -> dict[str, bytes]:
    """``count`` skills of a typical size: a SKILL.md (frontmatter, ~2 KB of instructions) and a script."""
    files: dict[str, bytes] = {}
    for index in range(count):
        name = f"skill-{index:02d}"
        description = f"Use {name} to handle task {index}, when the user asks about it or its files."
        body = f"# {name}\n\n" + "Step: do the next thing carefully.\n" * 60
        files[f"skills/{name}/SKILL.md"] = (
            f"---\nname: {name}\ndescription: {description}\nlicense: MIT\n---\n{body}".encode()
        )
        files[f"skills/{name}/scripts/run.py"] = b"print('run')\n" * 200
    return files


def soul_and_catalog(location: str, options: dict[str, object], **engine: str) -> tuple[str, str]:
    """As an agent's session starts: the soul and the skills read at the same time."""
    with ThreadPoolExecutor(1) as pool:
        catalog = pool.submit(lambda: load_skills(location, storage_options=options, **engine).prompt())
        soul, _ = compose_soul(location, storage_options=options, **engine)
        return soul, catalog.result()


def one_after_another(location: str, options: dict[str, object]) -> tuple[str, str]:
    soul, _ = compose_soul(location, storage_options=options)
    return soul, load_skills(location, storage_options=options).prompt()


def by_hand(fs: Any, prefix: str) -> list[Any]:
    """The floor on this server: one listing of the skills folder, then every SKILL.md's head
    in one concurrent batch (no soul, no validation)."""
    fs.invalidate_cache()
    paths = [path for path in fs.find(f"{prefix}/skills") if path.endswith("/SKILL.md")]
    return list(fs.cat_ranges(paths, [0] * len(paths), [MAX_FRONTMATTER_BYTES + 1] * len(paths)))


def bare_obstore(s3: S3, prefix: str) -> Callable[[], object]:
    """The fastest client's floor: obstore alone, both skills folders listed in flight with the
    soul's seven capped GETs, then every SKILL.md's head at once (no toolnexus, no validation)."""
    import obstore  # noqa: PLC0415  (the obstore extra)

    store = s3_store(s3.proxy.endpoint_url, BUCKET)

    async def head(key: str, size: int) -> object:
        try:
            return bytes(await obstore.get_range_async(store, key, start=0, end=size))
        except FileNotFoundError as missing:
            return missing

    async def folder(name: str) -> list[object]:
        listed = [
            item["path"] async for page in obstore.list(store, prefix=f"{prefix}/{name}/") for item in page
        ]
        heads = (head(key, MAX_FRONTMATTER_BYTES + 1) for key in listed if key.endswith("/SKILL.md"))
        return await asyncio.gather(*heads)

    async def soul_and_catalog() -> object:
        soul = (head(f"{prefix}/{name}", MAX_BOOTSTRAP_FILE_BYTES + 1) for name in BOOTSTRAP_ORDER)
        return await asyncio.gather(*soul, *map(folder, HOME_FOLDERS))

    return lambda: asyncio.run(soul_and_catalog())


def target_skills_s3(s3: S3, rounds: int, latency: float) -> list[Row]:
    files = {**typical_files(), **skill_files()}
    s3.put({f"skilled/{name}": data for name, data in files.items()})
    bundled = {name: data for name, data in files.items() if not name.endswith(".py")}
    s3.put({"skilled.zip": zip_bytes(bundled)})
    options = s3.options(**POOL)
    rows = []
    for label, location, limit in [
        (f"home with {COUNT} skills", f"s3://{BUCKET}/skilled", 2.2),
        (f"small zip bundle with {COUNT} skills", f"s3://{BUCKET}/skilled.zip", 1.3),
    ]:
        expected = one_after_another(location, options)  # warm: session, connections
        beside: dict[str, Callable[[], object]] = {}  # the home's: what the rig allows other clients
        if not location.endswith(".zip"):
            fs, prefix = fsspec.filesystem("s3", **options), location.removeprefix("s3://")
            obstore_options = s3_options(s3.proxy.endpoint_url)
            beside = {
                "s3fs by hand (no soul)": lambda: by_hand(fs, prefix),  # noqa: B023
                "bare obstore": bare_obstore(s3, prefix.partition("/")[2]),
                "toolnexus on obstore": lambda: soul_and_catalog(location, obstore_options, engine="obstore"),  # noqa: B023
            }
        for function in beside.values():
            function()  # warm
        together: list[float] = []
        apart: list[float] = []
        beside_trips: dict[str, list[float]] = {name: [] for name in beside}
        for _ in range(rounds):
            elapsed, proxy = s3.observe(lambda: soul_and_catalog(location, options), latency)  # noqa: B023
            together.append(elapsed / latency)
            requests = _by_method(proxy)
            heads = {r.range_header for r in proxy.requests if r.path.endswith("/SKILL.md")}
            apart.append(s3.observe(lambda: one_after_another(location, options), latency)[0] / latency)  # noqa: B023
            for name, function in beside.items():
                beside_trips[name].append(s3.observe(function, latency)[0] / latency)
        trips, baseline = statistics.median(together), statistics.median(apart)
        medians = {name: statistics.median(values) for name, values in beside_trips.items()}
        hand = "".join(f"; {name} {value:.2f} RT" for name, value in medians.items())
        same = soul_and_catalog(location, options) == expected and expected[1].count("<skill>") == COUNT
        only_heads = heads <= {f"bytes=0-{MAX_FRONTMATTER_BYTES}"}
        one_get = not location.endswith(".zip") or requests == "1 GET"  # the tail, shared by both
        # Where the rig itself cannot reach the goal (moto's CPU on two cores), the target is what
        # any client could do here: within 5 % of bare obstore's same requests in the same rounds.
        floor = medians.get("bare obstore", 0.0)
        reach = max(limit, 1.05 * floor)
        bound = f"≤ {limit} RT" + (f" (rig floor {floor:.2f} RT: ≤ 1.05× it)" if reach > limit else "")
        rows.append(
            Row(
                "skills",
                f"{label}: soul and catalog, {latency * 1000:.0f} ms/request",
                f"{trips:.2f} RT",
                f"one after another {baseline:.2f} RT{hand}",
                baseline / trips,
                requests,
                round_trips=trips,
                limit=f"{bound}; only SKILL.md heads" + ("; one GET" if location.endswith(".zip") else ""),
                ok=same and only_heads and one_get,
                details={"beside_rt": medians, "rounds": rounds},
                on_time=trips <= reach,
            )
        )
    return rows


def plain_catalog_loop(home: Path) -> list[object]:
    """The floor: each SKILL.md's head read and its frontmatter ``yaml.safe_load``-ed."""
    found = []
    for folder in sorted((home / "skills").iterdir()):
        with open(folder / "SKILL.md", "rb") as file:
            head = file.read(MAX_FRONTMATTER_BYTES + 1).decode("utf-8", errors="replace")
        split = split_frontmatter(head)
        if split is not None:
            found.append(yaml.safe_load(split[0]))
    return found


def process_cpu(
    candidates: dict[str, Callable[[], object]], rounds: int, number: int
) -> dict[str, list[float]]:
    """CPU per call of the whole process, interleaved: discovery's threads count too."""
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, function in candidates.items():
            start = time.process_time()
            for _ in range(number):
                function()
            times[name].append((time.process_time() - start) / number)
    return times


def target_skills_local(work: Path, rounds: int, number: int) -> Row:
    home = work / "skilled"
    for name, data in {**typical_files(), **skill_files()}.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_bytes(data)
    assert len(plain_catalog_loop(home)) == len(load_skills(home)) == COUNT
    candidates = {"catalog": lambda: load_skills(home).prompt(), "plain": lambda: plain_catalog_loop(home)}
    for function in candidates.values():
        function()  # warm: imports, the YAML loader
    times = process_cpu(candidates, rounds, number)
    ratio = median_ratio(times["catalog"], times["plain"])
    medians = {name: statistics.median(values) for name, values in times.items()}
    return Row(
        "skills",
        f"local catalog of {COUNT} skills vs a plain head + yaml.safe_load loop, CPU",
        fmt_time(medians["catalog"]),
        f"plain loop {fmt_time(medians['plain'])}",
        ratio,
        limit="≤ 1.2×",
        details={"median_cpu_seconds": medians, "rounds": rounds},
        on_time=ratio <= 1.2,
        bound=1.2,
    )
