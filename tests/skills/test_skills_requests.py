"""What discovery reads: each ``<name>/SKILL.md``'s head and nothing else (a skill's other files
wait for its activation), on S3 one listing per skills folder and then every SKILL.md's ranged
GET in flight together, and a zip bundle's one tail GET shared by the reads asking for it at
once (the soul's, each skills folder's), counted through the proxy on both engines."""

from __future__ import annotations

import io
import multiprocessing
import threading
import zipfile
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from tests.support import Hold, S3Proxy
from tests.support.files import zip_bytes
from toolnexus.agents import DictSource, compose_soul, load_skills
from toolnexus.skills import MAX_SKILLS_PER_ROOT
from toolnexus.skills.frontmatter import MAX_FRONTMATTER_BYTES
from toolnexus.sources import objects
from toolnexus.sources.objects import TAIL_BYTES

COUNT = 20
SCRIPT = b"print('a resource discovery must not read')\n" * 200


def home(count: int = COUNT) -> dict[str, bytes]:
    files = {"SOUL.md": b"You are Aster.", "AGENTS.md": b"Be brief."}
    for index in range(count):
        name = f"skill-{index:02d}"
        files[f"skills/{name}/SKILL.md"] = (
            f"---\nname: {name}\ndescription: Skill {index}.\n---\nBody.\n".encode()
        )
        files[f"skills/{name}/scripts/run.py"] = SCRIPT
    return files


class Recording(Mapping[str, bytes]):
    """A home as a mapping that remembers which files were read."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files, self.read = files, set[str]()

    def __getitem__(self, key: str) -> bytes:
        self.read.add(key)
        return self.files[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)


def test_discovery_reads_each_skill_md_and_no_other_file() -> None:
    files = Recording(home(3))
    skills = load_skills(DictSource(files))
    assert skills.names == ["skill-00", "skill-01", "skill-02"]
    assert files.read == {f"skills/skill-0{i}/SKILL.md" for i in range(3)}
    files.read.clear()
    assert "scripts/run.py" in skills.activate("skill-01")  # activation lists the skill's files
    assert {path.split("/")[1] for path in files.read} == {"skill-01"}
    files.read.clear()
    assert skills.read("skill-02", "scripts/run.py") == SCRIPT.decode()
    assert files.read == {"skills/skill-02/scripts/run.py"}  # a resource alone, on demand


def held_until(proxy: S3Proxy, matcher: Callable[[Any], bool], count: int) -> threading.Event:
    """Hold the requests ``matcher`` accepts until ``count`` of them are in flight at once."""
    release = threading.Event()
    proxy.add_fault(matcher, Hold(release, timeout=60))

    def let_go() -> None:
        try:
            proxy.wait_until(lambda: proxy.in_flight >= count, timeout=30)
        finally:
            release.set()

    threading.Thread(target=let_go, daemon=True).start()
    return release


def is_tail(request: Any) -> bool:
    return bool(request.range_header == f"bytes=-{TAIL_BYTES}")


def waits_counted(monkeypatch: pytest.MonkeyPatch) -> threading.Semaphore:
    """Released each time a read waits for the answer of a tail GET already in flight."""
    waiting = threading.Semaphore(0)

    class Watched(Future[Any]):
        def result(self, timeout: float | None = None) -> Any:
            waiting.release()
            return super().result(timeout)

    monkeypatch.setattr(objects, "Future", Watched)
    return waiting


def tail_shared(proxy: S3Proxy, monkeypatch: pytest.MonkeyPatch, followers: int) -> None:
    """Hold a bundle's tail GET at the proxy until ``followers`` other reads wait for its answer
    (instead of sending their own): the reads overlap whatever the threads' timing."""
    waiting = waits_counted(monkeypatch)
    release = threading.Event()
    proxy.add_fault(is_tail, Hold(release, timeout=60))

    def let_go() -> None:
        try:
            for _ in range(followers):
                waiting.acquire(timeout=30)  # only bounds a failure: a read that sent its own GET
        finally:
            release.set()

    threading.Thread(target=let_go, daemon=True).start()


class HeldClient(objects.ObjectClient):
    """A bundle's client (no server) whose tail GET waits for ``release``, then gives ``answer``."""

    def __init__(self, release: threading.Event, answer: objects.Fetched | Exception) -> None:
        self.path, self.location = "bucket/aster.zip", "s3://bucket/aster.zip"
        self.release, self.answer, self.sending = release, answer, threading.Semaphore(0)

    @property
    def token(self) -> str:
        return "one server"

    def run(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.sending.release()
        self.release.wait(30)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_s3_home_is_one_listing_per_folder_then_every_skill_md_together(
    proxy: S3Proxy, engine_via_proxy: dict[str, Any], bucket: tuple[str, Callable[..., None]]
) -> None:
    name, put = bucket
    put({f"aster/{path}": data for path, data in home().items()})
    location = f"s3://{name}/aster"
    is_skill_md = lambda request: request.method == "GET" and request.path.endswith("/SKILL.md")  # noqa: E731
    held_until(proxy, is_skill_md, COUNT)
    skills = load_skills(location, **engine_via_proxy)
    assert len(skills) == COUNT
    assert not skills.warnings
    gets = [r for r in proxy.requests if r.method == "GET" and not r.query]
    lists = [r for r in proxy.requests if "list-type=2" in r.query]
    assert sorted(r.path.rsplit("/", 3)[-2] for r in gets) == [f"skill-{i:02d}" for i in range(COUNT)]
    assert {r.range_header for r in gets} == {f"bytes=0-{MAX_FRONTMATTER_BYTES}"}
    assert proxy.peak_in_flight >= COUNT  # all in flight at once (held until they were)
    # A listing per skills folder; the empty .agents/skills asks once more whether the home is there.
    assert len(lists) == 3
    assert len(proxy.requests) == COUNT + 3
    # The soul beside it is the same seven GETs as without skills.
    proxy.reset()
    compose_soul(location, **engine_via_proxy)
    assert proxy.count("GET") == len(proxy.requests) == 7


def test_small_zip_bundle_on_s3_is_read_from_its_tail(
    proxy: S3Proxy,
    engine_via_proxy: dict[str, Any],
    bucket: tuple[str, Callable[..., None]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name, put = bucket
    files = {path: data for path, data in home().items() if not path.endswith(".py")}
    data = zip_bytes(files)
    assert len(data) <= TAIL_BYTES
    put({"aster.zip": data})
    tail_shared(proxy, monkeypatch, followers=1)
    skills = load_skills(f"s3://{name}/aster.zip", **engine_via_proxy)
    assert len(skills) == COUNT
    ((method, header),) = {(r.method, r.range_header) for r in proxy.requests}
    assert (method, header) == ("GET", f"bytes=-{TAIL_BYTES}")
    assert len(proxy.requests) == 1  # both skills folders read from the one tail, in place


def test_soul_and_catalog_of_a_small_zip_bundle_are_one_tail_get(
    proxy: S3Proxy,
    engine_via_proxy: dict[str, Any],
    bucket: tuple[str, Callable[..., None]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name, put = bucket
    put({"aster.zip": zip_bytes({path: data for path, data in home().items() if not path.endswith(".py")})})
    location = f"s3://{name}/aster.zip"
    options = engine_via_proxy
    if "engine" not in options:  # the same s3fs client as discovery's (its pool sized for the heads)
        pool = {"config_kwargs": {"max_pool_connections": MAX_SKILLS_PER_ROOT}}
        options = {"storage_options": {**options["storage_options"], **pool}}
    alone = compose_soul(location, **options)
    proxy.reset()
    tail_shared(proxy, monkeypatch, followers=2)  # the soul or one folder sends it, two wait
    with ThreadPoolExecutor(1) as pool:  # as an agent's session starts
        catalog = pool.submit(lambda: load_skills(location, **options))
        soul = compose_soul(location, **options)
        assert len(catalog.result()) == COUNT
    assert soul == alone
    assert [(r.method, r.range_header) for r in proxy.requests] == [("GET", f"bytes=-{TAIL_BYTES}")]
    proxy.reset()  # nothing kept once answered: each later call is its own snapshot
    put({"aster.zip": zip_bytes({"SOUL.md": b"You are Vega."})})
    assert compose_soul(location, **options)[0] != alone[0]
    assert len(proxy.requests) == 1


def test_a_failed_tail_get_fails_every_read_waiting_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    waiting, release = waits_counted(monkeypatch), threading.Event()
    client = HeldClient(release, PermissionError("denied"))
    with ThreadPoolExecutor(3) as pool:
        reads = [pool.submit(objects.open_tail_archive, client, ["SOUL.md"], 100) for _ in range(3)]
        for _ in range(2):
            assert waiting.acquire(timeout=30)
        release.set()
        for read in reads:
            with pytest.raises(PermissionError, match="denied"):
                read.result()
    assert client.sending.acquire(timeout=0)  # one GET for the three reads
    assert not client.sending.acquire(timeout=0)
    assert not objects._TAILS  # nothing kept


def test_a_forked_child_sends_its_own_tail_get() -> None:
    release, answered = threading.Event(), threading.Event()
    answered.set()
    parent = HeldClient(release, objects.Fetched(b"", None, 0))
    child = multiprocessing.get_context("fork").Process(
        target=objects.open_tail_archive, args=(HeldClient(answered, parent.answer), [], 100)
    )
    with ThreadPoolExecutor(1) as pool:
        read = pool.submit(objects.open_tail_archive, parent, [], 100)
        assert parent.sending.acquire(timeout=30)  # the parent's GET is in flight
        try:
            child.start()
            child.join(30)  # not waiting for a GET whose thread the child does not have
            assert child.exitcode == 0
        finally:
            release.set()
            child.kill()
        read.result()


def test_large_zip_bundle_on_s3_is_its_tail_then_every_skill_md_together(
    proxy: S3Proxy,
    engine_via_proxy: dict[str, Any],
    bucket: tuple[str, Callable[..., None]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name, put = bucket
    files = home()
    for index in range(COUNT):  # an incompressible asset after each skill: never fetched
        files[f"skills/skill-{index:02d}/assets/a.bin"] = bytes(range(256)) * 400
    data = zip_bytes(files, compression=zipfile.ZIP_STORED)
    assert len(data) > 10 * TAIL_BYTES
    put({"aster.zip": data})
    tail_shared(proxy, monkeypatch, followers=1)
    is_member = lambda request: not is_tail(request)  # noqa: E731
    held_until(proxy, is_member, COUNT)
    skills = load_skills(f"s3://{name}/aster.zip", **engine_via_proxy)
    assert len(skills) == COUNT
    tails = [r for r in proxy.requests if not is_member(r)]
    members = [r for r in proxy.requests if is_member(r)]
    assert len(tails) == 1  # shared by both skills folders
    assert len(members) == COUNT
    assert proxy.peak_in_flight >= COUNT  # fetched together, not one by one
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        skill_md = {info.header_offset for info in archive.infolist() if info.filename.endswith("/SKILL.md")}
    assert {r.byte_span[0] for r in members} == skill_md  # each range a SKILL.md's, no asset's
    assert sum(r.byte_span[1] - r.byte_span[0] + 1 for r in members) < COUNT * MAX_FRONTMATTER_BYTES
