"""``--engine obstore`` on the command line: the same output as fsspec's engine, and one error
line for an option obstore does not take."""

from __future__ import annotations

from typing import Any

from tests.support import MotoServer, put_objects
from tests.support.cli import EXAMPLE, run
from tests.support.s3 import DEFAULT_REGION, DUMMY_KEY, DUMMY_SECRET
from toolnexus.agents import BOOTSTRAP_ORDER

OBSTORE = ("--engine", "obstore")


def options(endpoint_url: str) -> list[str]:
    """``-o`` options for moto in fsspec's spellings, which the obstore engine translates."""
    return [
        *("-o", f"endpoint_url={endpoint_url}"),
        *("-o", f"key={DUMMY_KEY}"),
        *("-o", f"secret={DUMMY_SECRET}"),
        *("-o", f"client_kwargs.region_name={DEFAULT_REGION}"),
    ]


def test_soul_bundle_and_memory_through_obstore(moto_server: MotoServer, new_bucket: Any) -> None:
    bucket, endpoint = new_bucket(), moto_server.endpoint_url
    files = {
        f"homes/aster/{n}": (EXAMPLE / n).read_bytes() for n in BOOTSTRAP_ORDER if (EXAMPLE / n).exists()
    }
    put_objects(endpoint, bucket, files)
    home = f"s3://{bucket}/homes/aster"
    expected = run("soul", str(EXAMPLE)).stdout
    assert run("soul", home, *OBSTORE, *options(endpoint)).stdout == expected
    out = f"s3://{bucket}/bundles/aster.zip"
    assert run("bundle", home, out, *OBSTORE, *options(endpoint)).returncode == 0
    assert run("soul", out, *OBSTORE, *options(endpoint)).stdout == expected
    appended = run("memory", home, "append", "- from the shell", *options(endpoint), *OBSTORE)
    assert appended.returncode == 0, appended.stderr
    assert run("memory", home, *OBSTORE, *options(endpoint), "view").stdout.endswith("- from the shell\n")


def test_an_option_obstore_does_not_take_is_one_error_line(moto_server: MotoServer, new_bucket: Any) -> None:
    home = f"s3://{new_bucket()}/aster"
    result = run("soul", home, *OBSTORE, *options(moto_server.endpoint_url), "-o", "skip_instance_cache=true")
    assert result.returncode == 2, result
    assert result.stderr.splitlines() == [
        "toolnexus: error: storage option 'skip_instance_cache' has no obstore equivalent: fsspec's; "
        "the obstore engine keeps one store per URL and options itself"
    ]
