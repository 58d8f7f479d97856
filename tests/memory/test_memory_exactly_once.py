"""Exactly once: an edit whose answer is lost — the connection reset, a 5xx or no answer at all
*after the server stored it* — is neither applied twice nor lost, on S3 (moto), Azure Blob
(Azurite) and GCS (fake-gcs-server), through the fault-injecting proxy (the SDKs' own retries
then meet the version the first attempt wrote). Also: a lost request (never applied) still lands
once; an edit applied and built upon before its answer comes back is recognised by its lineage;
and when nobody can tell, the edit is not repeated and the caller is told. The decision itself
is a pure function, checked with Hypothesis against a model of a write history.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.lossy import PATIENT, READ_TIMEOUT, LossyStore, lossy_store, writes_memory
from tests.support.proxy import FaultAction, LoseResponse, ProxyRequest, Reset, S3Proxy, Stall, Status
from tests.support.s3 import s3_storage_options
from tests.support.store_workers import report_figure
from toolnexus.agents import BootstrapError, memory_tool
from toolnexus.stores import lineage
from toolnexus.stores.fsspec import S3Store
from toolnexus.stores.lineage import CREATED, Stored, applied, lineage_after

BACKENDS = ["s3", "azure", "gcs"]

#: How an answer goes missing. "lost request" never reaches the server (it must still land once).
FAULTS: dict[str, FaultAction] = {
    "reset after the write": LoseResponse(Reset()),
    "500 after the write": LoseResponse(Status(500)),
    "no answer after the write": LoseResponse(Stall(60)),
    "lost request": Reset(),
}

OLD = b"- old note\n"


@pytest.fixture
def proxies() -> Iterator[Callable[[str], S3Proxy]]:
    started: list[S3Proxy] = []

    def start(upstream: str) -> S3Proxy:
        started.append(S3Proxy(upstream).start())
        return started[-1]

    yield start
    for proxy in started:
        proxy.stop()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, proxies: Callable[[str], S3Proxy]) -> LossyStore:
    return lossy_store(request, request.param, proxies)


def _retry_met_our_write(proxy: S3Proxy, first: int) -> bool:
    """After the faulted write, a retried write was refused as a conflict (412 / 409): the
    server had stored the first attempt, so re-applying would have written the note twice."""
    later = proxy.requests[first:]
    return any(writes_memory_record(r) and r.response_status in (409, 412) for r in later)


def writes_memory_record(record: Any) -> bool:
    return record.method in ("PUT", "POST") and record.fault is None


@pytest.mark.slow
@pytest.mark.timeout(900)  # a hang guard: 100 edits with --stress on a loaded machine
def test_an_edit_whose_answer_is_lost_lands_exactly_once(
    store: LossyStore, stress: bool, capsys: Any, record_property: Any
) -> None:
    runs = 100 if stress else 10
    # The first edit of a bucket probes the server's conditions (writes answered 412 on purpose):
    # done here, so every 412 counted below is a retry meeting its own first attempt.
    store.tool_for(store.home(None), True).tool(command="append", content="- probed")
    counts: collections.Counter[str] = collections.Counter()
    refused_retries = 0
    for run in range(runs):
        kind = list(FAULTS)[run % len(FAULTS)]
        seeded = (run // len(FAULTS)) % 2 == 1  # creating the file and editing it, for every kind
        home = store.home(OLD if seeded else None)
        tool = store.tool_for(home, True)
        tool.tool(command="view")  # the probe and the first read happen before the fault is armed
        first = len(store.proxy.requests)
        rule = store.proxy.add_fault(writes_memory, FAULTS[kind], times=1)
        note = f"- note {run} ({kind})"
        reply = tool.tool(command="append", content=note)
        store.proxy.remove_fault(rule)
        found = store.memory(home).decode().splitlines().count(note)
        counts["ok" if str(reply).startswith("ok: note appended") else "error"] += 1
        counts["duplicated" if found > 1 else "lost" if found == 0 else "once"] += 1
        assert rule.hits == 1, f"run {run}: the fault never fired"
        if kind != "lost request":
            refused_retries += _retry_met_our_write(store.proxy, first)
        assert store.memory(home) == (OLD if seeded else b"") + f"{note}\n".encode(), f"run {run} ({kind})"
    report_figure(
        record_property,
        capsys,
        f"{store.backend}: {runs} edits whose answer was lost ({', '.join(FAULTS)} in turn): "
        f"{counts['duplicated']} duplicated, {counts['lost']} lost, {counts['error']} errors; "
        f"{refused_retries} SDK retries met the write they repeated",
    )
    assert counts == {"ok": runs, "once": runs}
    # The case that used to duplicate really happened: retries found their own first attempt.
    assert refused_retries >= runs // 2


@contextlib.contextmanager
def _answer_held(store: LossyStore, home: str) -> Iterator[list[Any]]:
    """Our append of "- ours" goes through the proxy and lands; its answer is held while the
    block runs, then lost. Yields the list that receives the tool's reply (or its error)."""
    tool = store.tool_for(home, True, PATIENT)  # it must not give up while the block runs
    tool.tool(command="view")
    landed, resume = threading.Event(), threading.Event()
    store.proxy.add_fault(writes_memory, LoseResponse(Reset(), applied=landed, resume=resume), times=1)
    outcome: list[Any] = []

    def edit() -> None:
        try:
            outcome.append(tool.tool(command="append", content="- ours"))
        except BootstrapError as error:
            outcome.append(error)

    ours = threading.Thread(target=edit)
    ours.start()
    try:
        assert landed.wait(60), "our write never reached the server"
        yield outcome
    finally:
        resume.set()
        ours.join(120)


def test_an_edit_built_upon_before_its_answer_is_lost_is_not_repeated(store: LossyStore) -> None:
    """Our write lands, another writer appends on top, then our answer is lost: the bytes are no
    longer ours (so comparing them would re-apply the note), but the lineage still names us."""
    home = store.home(OLD)
    with _answer_held(store, home) as outcome:
        other = store.tool_for(home, False).tool(command="append", content="- theirs")
        assert str(other).startswith("ok: note appended")
    assert str(outcome[0]).startswith("ok: note appended")
    assert store.memory(home) == OLD + b"- ours\n- theirs\n"


def test_when_nobody_can_tell_the_edit_is_not_repeated_and_the_caller_is_told(
    store: LossyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More writes than a lineage holds land between ours and its lost answer: unknown, said so."""
    monkeypatch.setattr(lineage, "LINEAGE_LENGTH", 3)
    home = store.home(OLD)
    with _answer_held(store, home) as outcome:
        other = store.tool_for(home, False)
        for index in range(3):
            other.tool(command="append", content=f"- theirs {index}")
    assert [getattr(error, "errno", None) for error in outcome] == [errno.EIO]
    assert str(outcome[0]).startswith("cannot tell whether the edit of MEMORY.md in ")
    assert str(outcome[0]).endswith("It was not repeated; view MEMORY.md before trying again.")
    assert store.memory(home) == OLD + b"- ours\n- theirs 0\n- theirs 1\n- theirs 2\n"


@pytest.mark.s3
@pytest.mark.slow  # botocore backs off between its retries
def test_every_answer_lost_still_lands_once(request: pytest.FixtureRequest, proxies: Any) -> None:
    """The SDK gives up (every attempt's answer lost): the write raised, the read-back settles it.
    One retry is enough to show it; botocore's default four would add seconds of back-off."""
    store = lossy_store(request, "s3", proxies)
    home = store.home(OLD)
    config = {"read_timeout": READ_TIMEOUT, "retries": {"total_max_attempts": 2}}
    options = s3_storage_options(store.proxy.endpoint_url, config_kwargs=config, skip_instance_cache=True)
    tool = memory_tool(f"s3://{home}", storage_options=options)
    tool.tool(command="view")
    rule = store.proxy.add_fault(writes_memory, LoseResponse(Reset()))
    assert str(tool.tool(command="append", content="- once")).startswith("ok: note appended")
    assert rule.hits > 1  # the SDK retried, and every retry's answer was lost too
    assert store.memory(home) == OLD + b"- once\n"


def writes_the_probe(request: ProxyRequest) -> bool:
    """A write of the conditional-write probe's object (``.toolnexus-probe-…``)."""
    named = ".toolnexus-probe-" in urllib.parse.unquote(request.path)
    return request.method in ("PUT", "POST") and (named or b".toolnexus-probe-" in request.body[:4096])


def test_a_probe_whose_create_lost_its_answer_still_passes(store: LossyStore) -> None:
    """The probe's create is a conditional write too: its answer lost, the SDK's retry meets
    ``If-None-Match`` on the object the first attempt created — the probe's own, not a stranger's."""
    home = store.home(OLD)
    tool = store.tool_for(home, True)
    rule = store.proxy.add_fault(writes_the_probe, LoseResponse(Reset()), times=1)
    assert str(tool.tool(command="append", content="- once")).startswith("ok: note appended")
    assert rule.hits == 1
    assert store.memory(home) == OLD + b"- once\n"


@pytest.mark.s3
def test_a_store_keeping_no_lineage_settles_a_lost_answer_by_the_bytes(
    request: pytest.FixtureRequest, proxies: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store of one's own may leave the lineage out (``put_with_lineage`` defaults to ``put``):
    with one writer, the bytes still tell that the lost write landed."""
    monkeypatch.setattr(
        S3Store, "put_with_lineage", lambda self, path, data, version, _: self.put(path, data, version)
    )
    store = lossy_store(request, "s3", proxies)
    home = store.home(OLD)
    tool = store.tool_for(home, True)
    tool.tool(command="view")
    rule = store.proxy.add_fault(writes_memory, LoseResponse(Reset()), times=1)
    assert str(tool.tool(command="append", content="- once")).startswith("ok: note appended")
    assert rule.hits == 1
    assert store.memory(home) == OLD + b"- once\n"
    assert store.direct.metadata(f"{home}/MEMORY.md") == {}  # no lineage was kept


@pytest.mark.s3
def test_a_write_that_never_lands_is_an_error_and_changes_nothing(
    request: pytest.FixtureRequest, proxies: Any
) -> None:
    store = lossy_store(request, "s3", proxies)
    home = store.home(OLD)
    tool = store.tool_for(home, True)
    tool.tool(command="view")
    store.proxy.add_fault(writes_memory, Status(400))  # refused outright: no SDK retries either
    with pytest.raises(BootstrapError, match=r"^cannot write MEMORY\.md in s3://"):
        tool.tool(command="append", content="- never")
    assert store.memory(home) == OLD


# -- the decision, as a pure function, against a model of a write history ----------------------

#: One write after ours: by toolnexus (a lineage) or by another program (none), with its bytes.
WRITES = st.lists(st.tuples(st.booleans(), st.sampled_from([b"a\n", b"b\n", b"mine\n"])), max_size=70)


def _written(over: Stored, data: bytes, by_toolnexus: bool, number: int) -> Stored:
    edit = f"w{number}"
    value = lineage.parse_lineage(lineage_after(over, edit)) if by_toolnexus else None
    return Stored(data, f"v{number}", value)


@given(
    start=st.sampled_from(["absent", "plain", "toolnexus"]),
    first=st.sampled_from(["ours", "theirs, the same bytes", "theirs", "nobody"]),
    later=WRITES,
)
def test_applied_never_guesses_wrong_while_toolnexus_writes(
    start: str, first: str, later: list[tuple[bool, bytes]]
) -> None:
    """With every later write made by toolnexus, the answer is right or "cannot tell" — and
    "cannot tell" only once more writes followed than a lineage holds. Identical bytes (another
    writer appending the same note to the same version) never fool it."""
    over = {
        "absent": Stored(None, None),
        "plain": Stored(b"old\n", "v-old"),
        "toolnexus": Stored(b"old\n", "v-old", ("w-old", CREATED)),
    }[start]
    mine = b"mine\n"
    now = {
        "ours": _written(over, mine, True, 0),
        "theirs, the same bytes": _written(over, mine, True, 1),
        "theirs": _written(over, b"theirs\n", True, 1),
        "nobody": over,
    }[first]
    for number, (_, data) in enumerate(later, start=2):
        now = _written(now, data, True, number)
    answer = applied(now, "w0", over, mine)
    if answer is None:
        assert len(later) + 1 >= lineage.LINEAGE_LENGTH
    else:
        assert answer == (first == "ours")


@given(later=WRITES, ours_landed=st.booleans())
def test_without_a_lineage_the_bytes_decide(later: list[tuple[bool, bytes]], ours_landed: bool) -> None:
    """When the object was last written by another program, only its bytes are left to compare."""
    over = Stored(b"old\n", "v-old")
    now = _written(over, b"mine\n" if ours_landed else b"theirs\n", True, 0 if ours_landed else 1)
    for number, (by_toolnexus, data) in enumerate(later, start=2):
        now = _written(now, data, by_toolnexus, number)
    if now.lineage is None:
        assert applied(now, "w0", over, b"mine\n") == (now.data == b"mine\n")
