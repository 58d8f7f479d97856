"""One persona, every source, byte-identical ``(soul, found)``.

Each source below stores the same files its own way; Hypothesis generates the personas. The
expected answer is the local directory's, which the spec examples and properties pin down.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import fsspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from upath import UPath

from tests.support import MotoServer, put_objects
from tests.support.files import DictSource, tar_bytes, zip_bytes
from toolnexus.agents import BOOTSTRAP_ORDER, MAX_BOOTSTRAP_FILE_BYTES, compose_soul, compose_soul_async

Persona = Mapping[str, bytes]
Location = tuple[Any, dict[str, Any]]  # (dir argument, keyword arguments for compose_soul)


class Backends:
    """Writes a persona into each backend and says how to point compose_soul at it."""

    def __init__(self, tmp: Path, moto: MotoServer, s3_options: dict[str, Any], bucket: str) -> None:
        self.tmp, self.moto, self.s3_options, self.bucket = tmp, moto, s3_options, bucket

    def local(self, persona: Persona) -> Location:
        home = self.tmp / uuid.uuid4().hex
        home.mkdir()
        for name, data in persona.items():
            (home / name).write_bytes(data)
        return str(home), {}

    def memory(self, persona: Persona) -> Location:
        fs = fsspec.filesystem("memory", global_store=False, skip_instance_cache=True)
        fs.mkdir("/home")
        for name, data in persona.items():
            fs.pipe_file(f"/home/{name}", data)
        return "/home", {"fs": fs}

    def memory_upath(self, persona: Persona) -> Location:
        home = f"memory://{uuid.uuid4().hex}"
        fs = fsspec.filesystem("memory")
        fs.mkdir(home)
        for name, data in persona.items():
            fs.pipe_file(f"{home}/{name}", data)
        return UPath(home), {}

    def zip_flat(self, persona: Persona) -> Location:
        path = self.tmp / f"{uuid.uuid4().hex}.zip"
        path.write_bytes(zip_bytes(persona))
        return path, {}

    def zip_folder(self, persona: Persona) -> Location:
        path = self.tmp / f"{uuid.uuid4().hex}.zip"
        path.write_bytes(zip_bytes(persona, folder="aster/", folder_entry=True))
        return str(path), {}

    def zip_chained(self, persona: Persona) -> Location:
        path = self.tmp / f"{uuid.uuid4().hex}.zip"
        path.write_bytes(zip_bytes(persona, folder="aster/", folder_entry=True))
        return f"zip://aster::file://{path}", {}

    def s3(self, persona: Persona) -> Location:
        prefix = uuid.uuid4().hex
        objects = {f"{prefix}/{name}": data for name, data in persona.items()}
        objects[f"{prefix}/README.txt"] = b"not a bootstrap file; keeps an empty home existing"
        put_objects(self.moto.endpoint_url, self.bucket, objects)
        return f"s3://{self.bucket}/{prefix}", {"storage_options": self.s3_options}

    def s3_zip(self, persona: Persona) -> Location:
        key = f"{uuid.uuid4().hex}.zip"
        put_objects(
            self.moto.endpoint_url, self.bucket, {key: zip_bytes(persona, folder="aster/", folder_entry=True)}
        )
        return f"s3://{self.bucket}/{key}", {"storage_options": self.s3_options}

    def s3_zip_chained(self, persona: Persona) -> Location:
        key = f"{uuid.uuid4().hex}.zip"
        put_objects(self.moto.endpoint_url, self.bucket, {key: zip_bytes(persona)})
        return f"zip://::s3://{self.bucket}/{key}", {"storage_options": {"s3": self.s3_options}}

    def custom(self, persona: Persona) -> Location:
        return DictSource(persona), {}

    def tar_folder(self, persona: Persona) -> Location:
        path = self.tmp / f"{uuid.uuid4().hex}.tgz"
        path.write_bytes(tar_bytes(persona, "aster/", "w:gz"))
        return str(path), {}

    def s3_tar_chained(self, persona: Persona) -> Location:
        key = f"{uuid.uuid4().hex}.tar.xz"
        put_objects(self.moto.endpoint_url, self.bucket, {key: tar_bytes(persona, "aster/", "w:xz")})
        return f"tar://aster::s3://{self.bucket}/{key}", {"storage_options": {"s3": self.s3_options}}

    def layered(self, persona: Persona) -> Location:
        """Local base, zip middle, S3 top, whose flattening is exactly ``persona``; the base also
        holds decoys of the names the layers above supply, which must never show."""
        names = list(persona)
        groups = [{n: persona[n] for n in names[k::3]} for k in range(3)]
        decoys = dict.fromkeys([*groups[1], *groups[2]], b"decoy from the base")
        base, _ = self.local({**decoys, **groups[0]})
        middle, _ = self.zip_folder(groups[1])
        top, options = self.s3(groups[2])
        return [base, middle, top], options


SOURCES = [name for name in vars(Backends) if not name.startswith("_")]


@pytest.fixture
def backends(
    tmp_path_factory: pytest.TempPathFactory,
    moto_server: MotoServer,
    s3_options: dict[str, Any],
    new_bucket: Callable[[], str],
) -> Backends:
    return Backends(tmp_path_factory.mktemp("homes"), moto_server, s3_options, new_bucket())


@pytest.fixture
def backends_sharing_clients(backends: Backends) -> Backends:
    """The same backends, but the S3 ones reuse one client across a property's examples
    (fsspec's instance cache, as users get by default): creating a client per example was most of
    the cost, and each example writes its own prefix, so nothing cached can go stale. Every other
    test here, and every other S3 test, builds a fresh client per call."""
    options = {**backends.s3_options, "skip_instance_cache": False}
    return Backends(backends.tmp, backends.moto, options, backends.bucket)


CONTENT = st.one_of(
    st.text(max_size=60).map(str.encode),
    st.binary(max_size=60),
    st.lists(
        st.sampled_from([b"\xef\xbb\xbf", b"\r\n", b"\r", b" ", "é".encode(), b"\xff", b"x"]), max_size=12
    ).map(b"".join),
)
PERSONAS = st.dictionaries(st.sampled_from(BOOTSTRAP_ORDER), CONTENT, max_size=7)


def expected(persona: Persona) -> tuple[str, list[str]]:
    return compose_soul(DictSource(persona))


@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(persona=PERSONAS)
@pytest.mark.parametrize("source", SOURCES)
def test_every_source_composes_the_same_soul(
    backends_sharing_clients: Backends, source: str, persona: Persona
) -> None:
    location, kwargs = getattr(backends_sharing_clients, source)(persona)
    assert compose_soul(location, **kwargs) == expected(persona)


@pytest.mark.parametrize("source", SOURCES)
def test_oversized_and_multibyte_cut_compose_the_same_everywhere(backends: Backends, source: str) -> None:
    cut = b"a" * (MAX_BOOTSTRAP_FILE_BYTES - 1) + "€".encode() + b"tail"
    persona = {"AGENTS.md": cut, "SOUL.md": b"\xef\xbb\xbfYou are Aster.\r\n", "MEMORY.md": b""}
    location, kwargs = getattr(backends, source)(persona)
    soul, found = compose_soul(location, **kwargs)
    assert (soul, found) == expected(persona)
    assert found == ["AGENTS.md", "SOUL.md", "MEMORY.md"]
    assert "\ufffd" not in soul
    assert soul.count("[truncated: exceeds 2 MB bootstrap cap]") == 1


@pytest.mark.parametrize("source", SOURCES)
def test_async_composes_the_same_soul(backends: Backends, source: str) -> None:
    persona = {"SOUL.md": b"You are Aster.", "USER.md": b"Mira", "HEARTBEAT.md": b"ping\r\n"}
    location, kwargs = getattr(backends, source)(persona)
    assert asyncio.run(compose_soul_async(location, **kwargs)) == expected(persona)


@pytest.mark.parametrize("source", [s for s in SOURCES if s != "custom"])
def test_empty_home_composes_empty(backends: Backends, source: str) -> None:
    location, kwargs = getattr(backends, source)({})
    assert compose_soul(location, **kwargs) == ("", [])


def test_found_is_a_new_list_every_call(backends: Backends) -> None:
    location, kwargs = backends.local({"SOUL.md": b"x"})
    first = compose_soul(location, **kwargs)[1]
    first.append("mutated")
    assert compose_soul(location, **kwargs)[1] == ["SOUL.md"]
