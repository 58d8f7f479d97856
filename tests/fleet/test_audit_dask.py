"""``audit`` on a real Dask cluster: a ``LocalCluster`` of 2 worker processes, one per module.

Results must equal the in-process audit's, on moto and on a local folder, and a worker killed in
the middle of a batch must cost a re-run of that batch, never a persona lost or reported twice.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import Hold, MotoServer, ProxyRequest, S3Proxy, make_bucket, s3_storage_options
from tests.support.cli import run
from tests.support.fleet import FLEET, ISSUES_BY_PERSONA, place_local, place_s3, typical_fleet
from toolnexus.agents import Budget, PersonaAudit, audit

pytestmark = pytest.mark.slow  # a cluster of worker processes: seconds, not milliseconds

BUCKET = "audit-dask"


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """Two single-threaded worker processes: as small as a real cluster gets."""
    import distributed  # noqa: PLC0415  (the test extra installs it: never skipped; not at collection)

    with (
        distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None, memory_limit="1GiB"
        ) as cluster,
        distributed.Client(cluster) as dask_client,
    ):
        yield dask_client


@pytest.fixture(scope="module")
def bucket(moto_server: MotoServer) -> str:
    make_bucket(moto_server.endpoint_url, BUCKET)
    place_s3(moto_server.endpoint_url, BUCKET, "personas", FLEET)
    place_s3(moto_server.endpoint_url, BUCKET, "many", typical_fleet(12))
    return BUCKET


def dicts(results: Iterator[PersonaAudit]) -> list[dict[str, Any]]:
    return [result.to_dict() for result in results]


def test_results_equal_the_in_process_audit_on_moto_and_on_disk(
    client: Any, bucket: str, moto_server: MotoServer, tmp_path: Path
) -> None:
    # No skip_instance_cache: each worker process keeps one s3fs instance for every batch.
    options = s3_storage_options(moto_server.endpoint_url)
    expected = dicts(audit(f"s3://{bucket}/personas", storage_options=options))
    assert len(expected) == len(ISSUES_BY_PERSONA)
    assert dicts(audit(f"s3://{bucket}/personas", storage_options=options, executor=client)) == expected
    local = place_local(tmp_path / "personas")
    assert dicts(audit(local, executor=client, concurrency=4)) == dicts(audit(local))
    # A budget travels to the workers by its arguments (the encoding is loaded there).
    budget = Budget(total=40, unit="tokens")
    small = f"s3://{bucket}/many"
    fitted = dicts(audit(small, storage_options=options, budget=budget, executor=client))
    assert fitted == dicts(audit(small, storage_options=options, budget=budget))
    assert all("soul_tokens" in line for line in fitted)


def test_the_obstore_engine_on_the_cluster_gives_the_fsspec_engine_s_lines(
    client: Any, bucket: str, moto_server: MotoServer
) -> None:
    """Each worker rebuilds the store from the URL's options (obstore stores made here are not
    sent); Dask's workers are spawned, so obstore's runtime is never forked."""
    from tests.support.obstore import s3_options  # noqa: PLC0415

    expected = dicts(
        audit(f"s3://{bucket}/personas", storage_options=s3_storage_options(moto_server.endpoint_url))
    )
    options = s3_options(moto_server.endpoint_url)
    got = audit(f"s3://{bucket}/personas", storage_options=options, engine="obstore", executor=client)
    assert dicts(got) == expected


def test_the_command_on_the_cluster_prints_the_library_s_lines(
    client: Any, bucket: str, moto_server: MotoServer
) -> None:
    options = s3_storage_options(moto_server.endpoint_url)
    expected = "".join(
        json.dumps(r.to_dict(), ensure_ascii=False) + "\n"
        for r in audit(f"s3://{bucket}/many", storage_options=options)
    )
    flags = [f"-oendpoint_url={moto_server.endpoint_url}", "-okey=testing", "-osecret=testing"]
    done = run("audit", f"s3://{bucket}/many", *flags, "--dask", client.scheduler.address)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
    assert done.stderr.startswith("toolnexus: audit: 12 personas: 12 ok,")


def _reads(request: ProxyRequest) -> bool:
    return request.method == "GET" and "list-type" not in request.query


def test_a_worker_killed_mid_batch_loses_no_persona_and_doubles_none(
    client: Any, bucket: str, proxy: S3Proxy
) -> None:
    options = s3_storage_options(proxy.endpoint_url)
    prefix = f"s3://{bucket}/many"
    expected = dicts(audit(prefix, storage_options=options))
    assert len(expected) == 12
    client.wait_for_workers(2)
    pids = client.run(os.getpid)
    proxy.reset()
    release = threading.Event()
    held = proxy.add_fault(_reads, Hold(release))
    got: list[dict[str, Any]] = []
    # concurrency 4 on 2 single-threaded workers: batches of one persona, two per worker.
    results = audit(prefix, storage_options=options, executor=client, concurrency=4)
    auditing = threading.Thread(target=lambda: got.extend(dicts(results)))
    auditing.start()
    try:
        proxy.wait_until(lambda: held.hits >= 2 * 7)  # both workers are mid-batch, every read held
        busy = client.run(lambda dask_worker: len(dask_worker.state.executing))
        victim = next(address for address, executing in busy.items() if executing)
        os.kill(pids[victim], signal.SIGKILL)
    finally:
        release.set()
        proxy.remove_fault(held)
    auditing.join(timeout=120)
    assert not auditing.is_alive()
    assert got == expected  # every persona once, in listing order
    reads = sum(1 for record in proxy.requests if record.method == "GET" and "list-type" not in record.query)
    assert reads >= 7 * 13  # the killed worker's batch was read again
