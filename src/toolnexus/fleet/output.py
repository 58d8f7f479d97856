"""Where an audit's lines go when not to stdout, all or nothing: a temporary file renamed at the
end, or a multipart upload completed at the end and aborted on failure."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from toolnexus.errors import location_error
from toolnexus.sources import DEFAULT_ENGINE, resolve_output


def report_file(
    out: str, storage_options: Mapping[str, Any] | None = None, engine: str = DEFAULT_ENGINE
) -> AbstractContextManager[Callable[[str], None]]:
    """A ``write(text)`` function whose text becomes ``out`` when the block ends without error
    (``engine``: the client for an object-store URL). A failure to write is an :class:`OSError`
    naming ``out``; errors of the block pass unchanged."""
    fs, path = resolve_output(out, storage_options, engine)
    return _local(path, out) if fs is None else _remote(fs, path, out)


@contextmanager
def _writing(out: str) -> Iterator[None]:
    """Our own I/O on the report: an error names the file."""
    try:
        yield
    except OSError as error:
        reason = f"cannot write the report ({error.strerror or error})"
        raise location_error(type(error), out, reason, error.errno) from error


@contextmanager
def _local(path: str, out: str) -> Iterator[Callable[[str], None]]:
    directory = os.path.dirname(os.path.abspath(path))
    with _writing(out):
        fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as stream:

            def write(text: str) -> None:
                with _writing(out):
                    stream.write(text)

            yield write
            with _writing(out):
                stream.flush()
                os.fsync(stream.fileno())
        umask = os.umask(0)
        os.umask(umask)
        with _writing(out):
            os.chmod(temp, 0o666 & ~umask)  # what open(path, "w") makes, not mkstemp's 0o600
            os.replace(temp, path)
    finally:
        if os.path.lexists(temp):
            os.unlink(temp)


@contextmanager
def _remote(fs: Any, path: str, out: str) -> Iterator[Callable[[str], None]]:
    with _writing(out):
        stream = fs.open(path, "wb")

    def write(text: str) -> None:
        with _writing(out):
            stream.write(text.encode("utf-8"))

    try:
        yield write
    except BaseException:
        discard = getattr(stream, "discard", None)
        if discard is not None:
            discard()  # abort the upload: nothing appears
        raise
    with _writing(out):
        stream.close()
