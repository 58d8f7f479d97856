"""A command on a pseudo-terminal: what ``readline`` sees when a person types at a shell."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from collections.abc import Mapping, Sequence

__all__ = ["Terminal"]


class Terminal:
    """``argv`` with stdin, stdout and stderr on one pseudo-terminal; :meth:`expect` waits for output.

    A timeout only bounds a hang (the output is the event waited on), far above what a loaded
    machine needs.
    """

    def __init__(self, argv: Sequence[str], env: Mapping[str, str]) -> None:
        self.master, replica = pty.openpty()
        self.process = subprocess.Popen(
            list(argv), stdin=replica, stdout=replica, stderr=replica, env=dict(env), close_fds=True
        )
        os.close(replica)
        self.output = b""
        self._seen = 0

    def send(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def expect(self, text: bytes, timeout: float = 180) -> bytes:
        """Wait until ``text`` shows after what the previous call matched; the output up to it."""
        deadline = time.monotonic() + timeout
        while (found := self.output.find(text, self._seen)) < 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no {text!r} in {self.output[self._seen :]!r}")
            if select.select([self.master], [], [], remaining)[0]:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # EIO: the command ended and closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"the command ended without {text!r}: {self.output[self._seen :]!r}")
                self.output += chunk
        shown, self._seen = self.output[self._seen : found], found + len(text)
        return shown

    def close(self, timeout: float = 180) -> int:
        """Wait for the command to end; its exit status."""
        try:
            return self.process.wait(timeout=timeout)
        finally:
            os.close(self.master)
