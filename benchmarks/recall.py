"""Recall over two years of daily notes: the index's build, a search's CPU, how often the note
holding a fact is in the first five hits (beside ranking files by how many query words they hold),
whether the newest note on a changed fact ranks first, and an unchanged S3 home's refresh bytes."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import toolnexus.recall.index as recall_index
from benchmarks.harness import KIB, Row, fmt_time
from benchmarks.remote import _by_method
from benchmarks.servers import BUCKET, S3
from toolnexus.agents import memory_tool
from toolnexus.recall import memory_index
from toolnexus.recall.chunking import WORD
from toolnexus.sources.local import RACY_SECONDS

TODAY = date(2026, 12, 1)
ATTRIBUTES = ["locker code", "favourite tea", "dentist", "bike lock", "gym slot"]
ATTRIBUTES += ["train seat", "allergy", "book club", "parking spot", "wifi password"]
_SYLLABLES = ["ka", "lo", "mi", "ra", "ven", "tu", "sel", "dor", "ni", "bas", "que", "zan", "fio", "wer"]
_FILLER = [
    "Walked to the market, the weather grey and cold.",
    "Long call about the quarterly plan; nothing decided.",
    "Read two chapters before bed.",
    "Cooked lentils, too much salt again.",
    "Cleaned the kitchen and sorted the post.",
    "Meeting moved to Thursday, room three.",
]


class Fact:
    """One thing a note says about a person, the notes that said it, newest last."""

    def __init__(self, person: str, attribute: str) -> None:
        self.person, self.attribute = person, attribute
        self.notes: list[str] = []

    @property
    def question(self) -> str:
        return f"{self.person} {self.attribute}"


def generate(home: Path, days: int, seed: int = 7) -> list[Fact]:
    """``days`` daily notes ending on :data:`TODAY`, about 3.7 facts each (one in seven a later
    change of an earlier fact), among filler lines that name other people."""
    rng = random.Random(seed)
    people = sorted({(rng.choice(_SYLLABLES) + rng.choice(_SYLLABLES)).title() for _ in range(days)})
    people = sorted({*people, *(f"{p}{s}" for p in people for s in ("a", "o"))})[: max(days // 2, 8)]
    facts: list[Fact] = []
    (home / "memory").mkdir(parents=True, exist_ok=True)
    (home / "MEMORY.md").write_text("# Memory\n\nDaily notes live in memory/.\n")
    for offset in range(days):
        day = TODAY - timedelta(days=days - 1 - offset)
        name = f"memory/{day}.md"
        lines = [f"# {day}", ""]
        for _ in range(rng.choice((3, 4, 4))):
            old = [fact for fact in facts if fact.notes[-1] < name]
            if old and rng.random() < 1 / 7:
                fact = rng.choice(old)
                value = rng.randrange(1000, 9999)
                lines.append(f"- Update: {fact.person}'s {fact.attribute} changed, it is now {value}.")
            else:
                fact = Fact(rng.choice(people), rng.choice(ATTRIBUTES))
                if any(f.question == fact.question for f in facts):
                    continue
                facts.append(fact)
                lines.append(f"- {fact.person}'s {fact.attribute} is {rng.randrange(1000, 9999)}.")
            fact.notes.append(name)
            lines.append(f"- {rng.choice(_FILLER)} Saw {rng.choice(people)} there.")
        (home / name).write_text("\n".join(lines) + "\n")
    return facts


def keyword_count(vocabulary: dict[str, set[str]], query: str, k: int) -> list[str]:
    """The baseline: files ranked by how many distinct query words they hold (ties by name)."""
    words = {word.lower() for word in WORD.findall(query)}
    counts = {path: len(words & held) for path, held in vocabulary.items()}
    return sorted((path for path, count in counts.items() if count), key=lambda p: (-counts[p], p))[:k]


def quality(rank: Callable[[str], Sequence[str]], facts: list[Fact]) -> tuple[float, float, int]:
    """recall@5 (the newest note on the fact in the first five files) and, over changed facts,
    how often the newest note ranks above every older one; the changed facts' count."""
    found = newest_first = changed = 0
    for fact in facts:
        ranked = list(dict.fromkeys(rank(fact.question)))
        found += fact.notes[-1] in ranked[:5]
        if len(fact.notes) > 1:
            changed += 1
            position = ranked.index(fact.notes[-1]) if fact.notes[-1] in ranked else len(ranked)
            older = [ranked.index(n) for n in fact.notes[:-1] if n in ranked]
            newest_first += all(position < other for other in older) and position < len(ranked)
    return found / len(facts), newest_first / max(changed, 1), changed


def target_recall_local(work: Path, days: int, searches: int) -> list[Row]:
    home = work / "recall-home"
    facts = generate(home, days)
    vocabulary = {
        str(p.relative_to(home)): set(WORD.findall(p.read_text().lower())) for p in home.rglob("*.md")
    }
    real_now = recall_index._now
    recall_index._now = lambda: real_now() + RACY_SECONDS + 1  # as if the notes were written a while ago
    try:
        start = time.thread_time()
        index = memory_index(home, today=TODAY, index_path=":memory:")
        index.refresh()
        build = time.thread_time() - start
        recall_5, newest, changed = quality(lambda q: [h.path for h in index.search(q, 10)], facts)
        questions = [fact.question for fact in facts][:searches]
        cpu = []  # the calling thread's CPU, as every local row's: a local search runs on it alone
        for question in questions:
            start = time.thread_time()
            index.search(question)
            cpu.append(time.thread_time() - start)
        p50 = statistics.median(cpu)
        reads = _count_reads(index, questions[0])
        index.close()
    finally:
        recall_index._now = real_now
    base_5, base_newest, _ = quality(lambda q: keyword_count(vocabulary, q, 10), facts)
    label = f"{days} daily notes, {len(facts)} facts ({changed} changed)"
    full = days >= 730
    return [
        Row(
            "recall",
            f"{label}: index build, CPU",
            fmt_time(build),
            limit="≤ 2 s",
            on_time=build <= 2.0 or not full,
        ),
        Row(
            "recall",
            f"{label}: one search, CPU p50 of {len(cpu)} (an unchanged home: stats, no reads)",
            fmt_time(p50),
            f"files read by a search {reads}",
            limit="≤ 5 ms; no file read",
            ok=reads == 0,
            on_time=p50 <= 0.005 or not full,
        ),
        Row(
            "recall",
            f"{label}: recall@5 on keyword questions",
            f"{recall_5:.2f}",
            f"files by query words held {base_5:.2f}",
            limit="≥ 0.9",
            ok=recall_5 >= 0.9,
        ),
        Row(
            "recall",
            f"{label}: a changed fact's newest note ranked above the older ones",
            f"{newest:.2f}",
            f"files by query words held {base_newest:.2f}",
            limit="≥ 0.9",
            ok=newest >= 0.9,
        ),
    ]


def _count_reads(index: Any, question: str) -> int:
    """Files a search reads from the home (a wrapped ``read_folder``/``read_entries``)."""
    source, reads = index.source, [0]
    folder, entries = source.read_folder, source.read_entries

    def read_folder(*args: Any, **kwargs: Any) -> Any:
        found = folder(*args, **kwargs)
        reads[0] += len(found.entries)
        return found

    def read_entries(*args: Any, **kwargs: Any) -> Any:
        found = entries(*args, **kwargs)
        reads[0] += len(found.entries)
        return found

    source.read_folder, source.read_entries = read_folder, read_entries
    try:
        index.search(question)
    finally:
        del source.read_folder, source.read_entries
    return reads[0]


def target_recall_s3(s3: S3, work: Path, days: int) -> Row:
    """The memory tool's index on S3: a refresh of an unchanged home is a listing and 304s."""
    facts = generate(work / "recall-s3", days, seed=11)
    files = {
        str(p.relative_to(work / "recall-s3")): p.read_bytes() for p in (work / "recall-s3").rglob("*.md")
    }
    s3.put({f"recall/{name}": data for name, data in files.items()})
    tool = memory_tool(f"s3://{BUCKET}/recall", storage_options=s3.options())
    search = tool.tools()[1]
    assert facts[0].notes[-1] in search.tool(query=facts[0].question)
    _, proxy = s3.observe(lambda: search.tool(query=facts[1].question))
    gets = [r for r in proxy.requests if r.method == "GET" and "list-type" not in r.query]
    body = sum(r.response_body_bytes for r in gets)
    total = sum(len(data) for data in files.values())
    return Row(
        "recall",
        f"an unchanged S3 home of {days} notes ({total // KIB} KiB): a search's refresh, object bodies",
        f"{body} B",
        f"reading the notes whole {total // KIB} KiB",
        requests=_by_method(proxy),
        bytes=body,
        limit="≤ 1 KiB (listings aside)",
        ok=body <= KIB and {r.response_status for r in gets} <= {304, 404},
    )
