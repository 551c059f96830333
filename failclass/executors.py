"""Where work runs: a local process pool whose workers die with the process that made it,
or the workers of a Dask distributed cluster (the batch classifier and the waste analysis
both take either)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, Protocol

PR_SET_PDEATHSIG = 1  # prctl(2)


class Executor(Protocol):
    """submit(fn, *args) returns something with .result()."""

    def submit(self, fn: Any, /, *args: Any) -> Any: ...


def _die_with_parent() -> None:
    """A pool worker asks Linux for SIGTERM when the runner dies, even by SIGKILL (no orphans)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() == 1:  # the runner died before the request took effect
            os._exit(1)


@contextmanager
def local_executor(processes: int) -> Iterator[Executor]:
    with ProcessPoolExecutor(max(processes, 1), initializer=_die_with_parent) as pool:
        yield pool


@contextmanager
def dask_executor(scheduler: str) -> Iterator[Executor]:
    """A Dask distributed cluster: its workers classify, this process reads and writes."""
    from distributed import Client

    with Client(scheduler) as client:
        yield client
