"""A reader's machine for the documentation's blocks: a scratch folder holding ``examples/``, and
for blocks that talk to S3, AWS configuration files that lead to the session's moto server.

S3 blocks are not edited. They reach moto the way a user's code reaches S3: through the AWS
configuration files, whose ``default`` and ``prod`` profiles name moto's endpoint (botocore honours
``endpoint_url`` in a profile); every other ``AWS_*`` variable is hidden. Before each such block
``my-bucket`` is emptied and filled with what the pages name: ``personas/{aster,basil,cedar}/``
(copies of ``examples/aster``), ``team-base/`` and ``agents/{aster,brio}/`` (its files split into
layers), ``bundles/aster.zip`` (``write_bundle``'s flat form) and ``bundles/aster-folder.zip`` (the
single-folder form, readable anonymously). s3fs's instance cache is cleared after each block.
A block that also mentions ``obstore`` reaches moto the way obstore finds S3: its ``AWS_*``
environment variables (obstore reads no profiles), set by ``aws_obstore``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import MotoServer, make_bucket, put_objects, s3_storage_options
from tests.support.snippets import ROOT
from toolnexus.agents import BOOTSTRAP_ORDER
from toolnexus.soul.bundling import bundle_bytes

EXAMPLES = ROOT / "examples"
PERSONA = {name: (EXAMPLES / "aster" / name).read_bytes() for name in BOOTSTRAP_ORDER}


def tree_hash(folder: Path) -> str:
    """One digest of every file's relative path and bytes under ``folder``."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _objects(scratch: Path) -> dict[str, bytes]:
    personas = ("aster", "basil", "cedar")
    objects = {f"personas/{who}/{name}": data for who in personas for name, data in PERSONA.items()}
    objects["bundles/aster.zip"] = bundle_bytes(PERSONA)
    objects |= {f"team-base/{name}": PERSONA[name] for name in ("AGENTS.md", "TOOLS.md")}
    own = ("SOUL.md", "IDENTITY.md", "MEMORY.md")
    objects |= {f"agents/{who}/{name}": PERSONA[name] for who in ("aster", "brio") for name in own}
    folder_zip = shutil.make_archive(
        str(scratch / "aster-folder"), "zip", root_dir=EXAMPLES, base_dir="aster"
    )
    objects["bundles/aster-folder.zip"] = Path(folder_zip).read_bytes()
    return objects


@pytest.fixture(scope="session")
def aws_files(moto_server: MotoServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """AWS configuration files whose profiles lead to moto, as environment variables."""
    scratch = tmp_path_factory.mktemp("docs-aws")
    profile = f"region = us-east-1\nendpoint_url = {moto_server.endpoint_url}\n"
    (scratch / "config").write_text(f"[default]\n{profile}[profile prod]\n{profile}")
    keys = "aws_access_key_id = testing\naws_secret_access_key = testing\n"
    (scratch / "credentials").write_text(f"[default]\n{keys}[prod]\n{keys}")
    return {
        "AWS_CONFIG_FILE": str(scratch / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(scratch / "credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }


@pytest.fixture
def aws(
    moto_server: MotoServer, aws_files: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """``my-bucket`` as the pages expect it, and the AWS environment pointing at moto (also for
    the subprocesses of console blocks)."""
    import s3fs  # noqa: PLC0415  (only S3 blocks need it)

    fs = s3fs.S3FileSystem(**s3_storage_options(moto_server.endpoint_url, skip_instance_cache=True))
    if fs.exists("my-bucket"):
        fs.rm("my-bucket", recursive=True)
    make_bucket(moto_server.endpoint_url, "my-bucket")
    put_objects(moto_server.endpoint_url, "my-bucket", _objects(tmp_path))
    # `-o s3.anon=true` on the command-line page reads this bundle anonymously, as from a public bucket.
    fs.chmod("my-bucket/bundles/aster-folder.zip", acl="public-read")
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in aws_files.items():
        monkeypatch.setenv(name, value)
    try:
        yield {**aws_files, "endpoint_url": moto_server.endpoint_url}
    finally:
        s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture
def aws_obstore(aws: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """``aws``, plus the environment obstore reads its S3 configuration from, leading to moto."""
    variables = {
        "AWS_ENDPOINT_URL": aws["endpoint_url"],
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
    }
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    return aws


@pytest.fixture
def reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A reader's scratch folder as the current one, holding ``examples`` (a symlink to the
    repository's, checked unchanged afterwards); ``tempfile`` homes land in it too."""
    (tmp_path / "examples").symlink_to(EXAMPLES, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = tree_hash(EXAMPLES)
    yield tmp_path
    assert tree_hash(EXAMPLES) == before, "a block changed the shipped examples/"


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A scratch "clone" for console blocks: ``toolnexus/examples`` is a copy (transcripts touch it)."""
    shutil.copytree(EXAMPLES, tmp_path / "toolnexus" / "examples")
    return tmp_path / "toolnexus"
