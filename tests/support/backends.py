"""One persona written into every backend the library reads, and the answer they must all give.

Shared by the conformance tests (tests/locations), the UTF-16 examples (tests/composition) and the
emulator stores (tests/memory): each names a backend by its method here and compares with
:func:`expected`, the soul of the same files given as a plain mapping.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import fsspec
from hypothesis import strategies as st
from upath import UPath

from tests.support import obstore as engine
from tests.support.files import DictSource, tar_bytes, zip_bytes
from tests.support.s3 import MotoServer, put_objects
from toolnexus.agents import BOOTSTRAP_ORDER, compose_soul
from toolnexus.sources import ObstoreSource

__all__ = ["EMULATED", "PERSONAS", "SOURCES", "Backends", "Location", "Persona", "expected", "zip_bytes"]

Persona = Mapping[str, bytes]
Location = tuple[Any, dict[str, Any]]  # (dir argument, keyword arguments for compose_soul)


class Backends:
    """Writes a persona into each backend and says how to point compose_soul at it.

    The ``obstore_*`` methods are the same homes read through the obstore engine (``engine=
    "obstore"``, an ``ObstoreSource`` over a store object, obstore's fsspec adapter); the Azure
    and GCS ones start their emulator through ``request`` on first use.
    """

    def __init__(
        self,
        tmp: Path,
        moto: MotoServer,
        s3_options: dict[str, Any],
        bucket: str,
        request: Any = None,
    ) -> None:
        self.tmp, self.moto, self.s3_options, self.bucket = tmp, moto, s3_options, bucket
        self.request = request
        self._emulated: dict[str, tuple[Any, str]] = {}

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

    # -- the obstore engine ------------------------------------------------------------------

    def _obstore(self) -> dict[str, Any]:
        return {"storage_options": engine.s3_options(self.moto.endpoint_url), "engine": "obstore"}

    def obstore_s3(self, persona: Persona) -> Location:
        return self.s3(persona)[0], self._obstore()

    def obstore_s3_zip(self, persona: Persona) -> Location:
        return self.s3_zip(persona)[0], self._obstore()

    def obstore_zip_chained(self, persona: Persona) -> Location:
        location, _ = self.s3_zip_chained(persona)
        return location, {
            "storage_options": {"s3": engine.s3_options(self.moto.endpoint_url)},
            "engine": "obstore",
        }

    def obstore_tar_chained(self, persona: Persona) -> Location:
        return self.s3_tar_chained(persona)[0], self._obstore()

    def obstore_store(self, persona: Persona) -> Location:
        """An ``ObstoreSource`` over a user's own ``S3Store`` object."""
        url, _ = self.s3(persona)
        prefix = url.split(f"s3://{self.bucket}/", 1)[1]
        return ObstoreSource(engine.s3_store(self.moto.endpoint_url, self.bucket), prefix), {}

    def obstore_fsspec(self, persona: Persona) -> Location:
        """obstore's fsspec adapter as ``fs=``, fsspec's engine over it."""
        url, _ = self.s3(persona)
        return url.removeprefix("s3://"), {"fs": engine.s3_adapter(self.moto.endpoint_url)}

    def obstore_layered(self, persona: Persona) -> Location:
        layers, _ = self.layered(persona)
        return layers, self._obstore()

    def obstore_azure(self, persona: Persona) -> Location:
        fs, container = self._emulator("az", "azurite")
        options = engine.azure_options(self.request.getfixturevalue("azurite").connection_string)
        return self._emulated_home(fs, "az", container, persona), {
            "storage_options": options,
            "engine": "obstore",
        }

    def obstore_gcs(self, persona: Persona) -> Location:
        fs, bucket = self._emulator("gs", "fake_gcs_server")
        options = engine.gcs_options(self.request.getfixturevalue("gcs_xml").url)
        return self._emulated_home(fs, "gs", bucket, persona), {
            "storage_options": options,
            "engine": "obstore",
        }

    def _emulator(self, protocol: str, fixture: str) -> tuple[Any, str]:
        """A filesystem on the emulator and a bucket of this test's own (made on first use)."""
        if protocol not in self._emulated:
            options = self.request.getfixturevalue(fixture).storage_options
            fs = fsspec.filesystem(protocol, skip_instance_cache=True, **options)
            bucket = f"toolnexus-{uuid.uuid4().hex[:12]}"
            fs.mkdir(bucket)
            self._emulated[protocol] = fs, bucket
        return self._emulated[protocol]

    @staticmethod
    def _emulated_home(fs: Any, protocol: str, bucket: str, persona: Persona) -> str:
        prefix = uuid.uuid4().hex
        for name, data in {**persona, "README.txt": b"keeps an empty home existing"}.items():
            fs.pipe_file(f"{bucket}/{prefix}/{name}", data)
        return f"{protocol}://{bucket}/{prefix}"


SOURCES = [name for name in vars(Backends) if not name.startswith("_")]
#: The sources on an emulator (their tests get the ``emulators`` marker).
EMULATED = ["obstore_azure", "obstore_gcs"]


CONTENT = st.one_of(
    st.text(max_size=60).map(str.encode),
    st.binary(max_size=60),
    st.lists(
        st.sampled_from([b"\xef\xbb\xbf", b"\r\n", b"\r", b" ", "é".encode(), b"\xff", b"x"]), max_size=12
    ).map(b"".join),
)
PERSONAS = st.dictionaries(st.sampled_from(BOOTSTRAP_ORDER), CONTENT, max_size=7)


def expected(persona: Persona) -> tuple[str, list[str]]:
    """The soul every backend must give for ``persona``: the plain mapping's."""
    return compose_soul(DictSource(persona))
