"""Imported once by the forkserver that writer processes fork from (``store_workers.writer_context``).

A spawned writer pays about a second of CPU before its first append: an interpreter, the library
(compiled from source when bytecode is not written), s3fs and botocore's JSON models (S3's service
model, endpoints, partitions: parsed again for every client). The forkserver does that once; each
writer is still a process of its own, forked after this import, racing its siblings from a barrier.
Nothing here starts a thread, an event loop or a connection (obstore's runtime, in particular, is
created by each writer: it does not survive ``fork``).
"""

from __future__ import annotations

import functools

import botocore.loaders
import botocore.session
import s3fs  # noqa: F401  (imported for the writers)

import toolnexus.agents  # noqa: F401  (imported for the writers)
from tests.support import memory_workers, store_workers  # noqa: F401  (the writers' entry points)
from tests.support.s3 import DEFAULT_REGION, DUMMY_KEY, DUMMY_SECRET

# One loader for every botocore session of a writer, as tests/conftest.py shares one per test
# process; one client built here parses the models into it before the writers fork.
botocore.session.create_loader = functools.cache(botocore.loaders.create_loader)
botocore.session.get_session().create_client(
    "s3", region_name=DEFAULT_REGION, aws_access_key_id=DUMMY_KEY, aws_secret_access_key=DUMMY_SECRET
)
