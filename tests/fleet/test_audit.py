"""``audit``: which personas a prefix holds, what each shows, and that nothing is lost or doubled.

Every persona's result is checked against ``inspect_soul`` of that persona alone, on disk and on
moto; executors (threads, processes) must give exactly the in-process results.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from tests.support import MotoServer, S3Proxy, Status, make_bucket
from tests.support.fleet import FLEET, ISSUES_BY_PERSONA, place_local, place_s3, typical_fleet
from toolnexus.agents import Budget, PersonaAudit, audit, inspect_soul
from toolnexus.fleet import executors
from toolnexus.sources import s3 as s3_source

BUCKET = "audit-fleet"


@pytest.fixture(scope="module")
def s3_fleet(moto_server: MotoServer) -> str:
    """The fleet on moto, once for the module (its 2 MiB file is the slow part)."""
    make_bucket(moto_server.endpoint_url, BUCKET)
    place_s3(moto_server.endpoint_url, BUCKET, "personas")
    return f"s3://{BUCKET}/personas"


@pytest.fixture
def local_fleet(tmp_path: Path) -> Path:
    return place_local(tmp_path / "personas")


def by_name(results: list[PersonaAudit]) -> dict[str, PersonaAudit]:
    return {result.location.rstrip("/").rsplit("/", 1)[-1]: result for result in results}


def alone(result: PersonaAudit, **options: Any) -> dict[str, Any]:
    """What inspecting the persona on its own says, in the audit's form."""
    try:
        single = PersonaAudit(result.location, inspect_soul(result.location, **options))
    except Exception as error:
        single = PersonaAudit(result.location, error=error)
    return single.to_dict()


def test_local_fleet_each_persona_as_inspect_soul_sees_it(local_fleet: Path) -> None:
    results = list(audit(local_fleet))
    assert {name: set(r.issues) for name, r in by_name(results).items()} == ISSUES_BY_PERSONA
    for result in results:
        assert result.to_dict() == alone(result)
        assert result.location.startswith(str(local_fleet))


def test_s3_fleet_in_key_order_each_as_inspect_soul_sees_it(
    s3_fleet: str, s3_options: dict[str, Any]
) -> None:
    results = list(audit(s3_fleet, storage_options=s3_options))
    assert [r.location.rsplit("/", 1)[-1] for r in results] == sorted(ISSUES_BY_PERSONA)
    assert {name: set(r.issues) for name, r in by_name(results).items()} == ISSUES_BY_PERSONA
    for result in results:
        assert result.to_dict() == alone(result, storage_options=s3_options)


def test_any_fsspec_filesystem_is_listed_too(local_fleet: Path) -> None:
    memory = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)
    for relative, data in FLEET.items():
        memory.pipe(f"/personas/{relative}", data)
    results = list(audit("/personas", fs=memory))
    assert {name: set(r.issues) for name, r in by_name(results).items()} == ISSUES_BY_PERSONA
    assert [r.to_dict()["files"] for r in results] == [
        r.to_dict()["files"] for r in sorted(audit(local_fleet), key=lambda r: r.location)
    ]


def test_a_failing_persona_is_a_result_and_the_audit_goes_on(local_fleet: Path) -> None:
    os.symlink(local_fleet / "gone", local_fleet / "aster" / "USER.md")  # dangling: the author meant a file
    results = by_name(list(audit(local_fleet)))
    assert set(results) == set(ISSUES_BY_PERSONA)
    failed = results["aster"]
    assert failed.report is None
    assert failed.issues == {"error"}
    assert failed.to_dict()["error"] == {
        "type": "BootstrapError",
        "message": f"USER.md in {local_fleet / 'aster'} is a dangling symlink",
    }


def test_a_denied_persona_on_s3_is_a_result(s3_fleet: str, proxy: S3Proxy, via_proxy: dict[str, Any]) -> None:
    proxy.add_fault("/personas/latin/", Status(403, "AccessDenied"))
    results = by_name(list(audit(s3_fleet, storage_options=via_proxy)))
    assert set(results) == set(ISSUES_BY_PERSONA)
    assert results["latin"].issues == {"error"}
    assert isinstance(results["latin"].error, PermissionError)
    assert "latin" in str(results["latin"].error)
    assert results["aster"].ok


def test_the_prefix_itself_is_a_persona_among_its_children(tmp_path: Path) -> None:
    place_local(tmp_path, {"SOUL.md": b"root", "AGENTS.md": b"a", "child/SOUL.md": b"c", "memory/x.md": b"m"})
    locations = sorted(result.location for result in audit(tmp_path))
    assert locations == [str(tmp_path), str(tmp_path / "child")]


@pytest.mark.parametrize("name", ["bundle.zip", "bundle.tar.gz"])
def test_a_bundle_prefix_is_the_one_persona(local_fleet: Path, name: str) -> None:
    (result,) = audit(local_fleet / name)
    assert result.ok
    assert result.location == str(local_fleet / name)


def test_a_bundle_or_a_home_prefix_on_s3_is_the_one_persona(
    s3_fleet: str, s3_options: dict[str, Any]
) -> None:
    (result,) = audit(f"{s3_fleet}/bundle.zip", storage_options=s3_options)
    assert result.report is not None
    assert result.report.found == ["SOUL.md", "USER.md"]
    (home,) = audit(f"{s3_fleet}/aster/", storage_options=s3_options)
    assert home.location == f"{s3_fleet}/aster"
    assert home.to_dict() == alone(home, storage_options=s3_options)


def test_a_missing_prefix_is_an_error_naming_it_at_the_call(
    tmp_path: Path, s3_fleet: str, s3_options: dict[str, Any]
) -> None:
    with pytest.raises(FileNotFoundError, match=f"^{tmp_path / 'nope'}: no such prefix$"):
        audit(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match=f"^{s3_fleet}-nope: no such prefix$"):
        audit(f"{s3_fleet}-nope", storage_options=s3_options)
    with pytest.raises(FileNotFoundError, match="^s3://no-such-bucket/x: no such prefix$"):
        audit("s3://no-such-bucket/x", storage_options=s3_options)


def test_a_prefix_without_personas_audits_none(tmp_path: Path) -> None:
    place_local(tmp_path, {"README.md": b"x", "empty/notes.md": b"y"})
    assert list(audit(tmp_path)) == []


def test_the_listing_streams_and_at_most_concurrency_personas_are_started(
    moto_server: MotoServer, proxy: S3Proxy, via_proxy: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages are listed as the audit needs them; reads start only as results are taken."""
    make_bucket(moto_server.endpoint_url, "audit-pages")
    place_s3(moto_server.endpoint_url, "audit-pages", "fleet", typical_fleet(10))
    monkeypatch.setattr(s3_source, "LIST_PAGE_SIZE", 3)
    stopped = audit("s3://audit-pages/fleet", storage_options=via_proxy, concurrency=2)
    assert next(stopped).location == "s3://audit-pages/fleet/p000"
    stopped.close()  # the caller stops: the read in flight is cancelled, nothing more is listed
    proxy.wait_until(lambda: proxy.in_flight == 0)
    assert lists(proxy) == 1
    assert proxy.count("GET") - lists(proxy) <= 7 * 2  # 7 GETs a persona, 2 in flight
    proxy.reset()
    results = audit("s3://audit-pages/fleet", storage_options=via_proxy, concurrency=2)
    first = next(results)
    assert lists(proxy) == 1
    rest = list(results)
    assert [r.location[-4:] for r in [first, *rest]] == [f"p{i:03d}" for i in range(10)]
    assert lists(proxy) == 4  # 10 folders, 3 a page
    assert proxy.count("GET") - lists(proxy) == 10 * 7


def lists(proxy: S3Proxy) -> int:
    return sum(1 for record in proxy.requests if "list-type=2" in record.query)


@pytest.fixture
def thread_pool() -> Iterator[concurrent.futures.Executor]:
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        yield pool


@pytest.fixture
def process_pool() -> Iterator[concurrent.futures.Executor]:
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        yield pool


@pytest.mark.parametrize("pool", ["thread_pool", "process_pool"])
def test_executors_give_the_in_process_results(
    pool: str, request: pytest.FixtureRequest, local_fleet: Path, s3_fleet: str, s3_options: dict[str, Any]
) -> None:
    executor = request.getfixturevalue(pool)
    for prefix, options in ((local_fleet, None), (s3_fleet, s3_options)):
        expected = [r.to_dict() for r in audit(prefix, storage_options=options)]
        got = audit(prefix, storage_options=options, executor=executor, concurrency=4)
        assert [r.to_dict() for r in got] == expected


def test_a_batch_that_fails_for_good_reports_each_of_its_personas(
    tmp_path: Path, thread_pool: concurrent.futures.Executor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken pool or a batch past its retries: every persona of it is an error result, in place."""
    place_local(tmp_path, typical_fleet(6))
    healthy = executors.check_batch

    def flaky(target: Any, batch: list[Any]) -> list[Any]:
        if any(path.endswith("p002") for path, _ in batch):
            raise MemoryError("the worker ran out of memory")  # stands for a worker dying for good
        return healthy(target, batch)

    monkeypatch.setattr(executors, "check_batch", flaky)
    results = list(audit(tmp_path, executor=thread_pool, concurrency=4))  # batches of one persona
    assert sorted(r.location[-4:] for r in results) == [f"p{i:03d}" for i in range(6)]
    failed = [r for r in results if r.error is not None]
    assert [(r.location[-4:], str(r.error)) for r in failed] == [("p002", "the worker ran out of memory")]


def test_audit_works_inside_a_running_event_loop(s3_fleet: str, s3_options: dict[str, Any]) -> None:
    async def in_a_notebook() -> list[PersonaAudit]:
        return list(audit(s3_fleet, storage_options=s3_options))

    assert len(asyncio.run(in_a_notebook())) == len(ISSUES_BY_PERSONA)


def test_a_budget_fits_each_persona_as_inspect_soul_does(local_fleet: Path) -> None:
    budget = Budget(total=60)  # the fleet's small souls exceed it only where a file is long
    results = by_name(list(audit(local_fleet, budget=budget)))
    for result in results.values():
        assert result.to_dict() == alone(result, budget=budget)
    over = {name for name, r in results.items() if "over-budget" in r.issues}
    unbudgeted = by_name(list(audit(local_fleet)))
    assert over == {name for name, r in unbudgeted.items() if r.report and len(r.report.soul) > 60}
    assert over >= {"aster", "big"}
    assert "soul_tokens" not in results["aster"].to_dict()  # characters: nothing to count


def test_tokens_are_counted_where_the_persona_is_read(tmp_path: Path) -> None:
    place_local(tmp_path, typical_fleet(3))  # small: a 2 MiB run of one letter is slow to tokenize
    budget = Budget(unit="tokens")  # no limit: only counts, with the bundled offline encoding
    results = list(audit(tmp_path, budget=budget))
    assert len(results) == 3
    for result in results:
        assert result.report is not None
        assert result.soul_tokens == budget.count_tokens(result.report.soul) > 10
        assert result.to_dict()["soul_tokens"] == result.soul_tokens
        assert result.ok


def test_under_a_profile_every_folder_is_a_persona_and_only_its_files_are_read(local_fleet: Path) -> None:
    results = by_name(list(audit(local_fleet, profile="subagent")))
    assert set(results) == set(ISSUES_BY_PERSONA) | {"memory-only"}  # nothing outside the profile is read
    assert results["memory-only"].report is not None
    assert results["memory-only"].report.found == []
    assert results["aster"].report is not None
    assert [f.name for f in results["aster"].report.files] == ["AGENTS.md", "TOOLS.md"]
    assert all("missing-soul" not in r.issues for r in results.values())  # SOUL.md is not in the profile


def test_bad_arguments_are_refused(local_fleet: Path) -> None:
    with pytest.raises(ValueError, match="concurrency must be a whole number"):
        audit(local_fleet, concurrency=0)
    with pytest.raises(TypeError, match="executor must be a concurrent.futures.Executor or a dask"):
        audit(local_fleet, executor="threads")
    with pytest.raises(TypeError, match="storage_options cannot apply to the local path"):
        audit(local_fleet, storage_options={"anon": True})
    with pytest.raises(ValueError, match="empty prefix"):
        audit("")
    with pytest.raises(ValueError, match="profile='nobody' is not a profile; choose from main, subagent"):
        audit(local_fleet, profile="nobody")
    with pytest.raises(TypeError, match="budget must be a Budget"):
        audit(local_fleet, budget=60_000)


def test_the_fleet_files_are_as_the_expectations_say() -> None:
    """Guard the fixture itself: every persona named in the expectations is placed."""
    tops = {path.split("/", 1)[0] for path in FLEET}
    assert set(ISSUES_BY_PERSONA) <= tops
