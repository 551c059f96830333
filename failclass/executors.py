"""Where work runs: a local process pool whose workers die with the process that made it,
or the workers of a Dask distributed cluster (the batch classifier and the waste analysis
both take either)."""

from __future__ import annotations

import concurrent.futures
import ctypes
import os
import signal
import sys
from collections.abc import Iterator, Sequence
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


def run_all(executor: Executor, fn: Any, tasks: Sequence[tuple[Any, ...]]) -> list[Any]:
    """``fn(*task)`` for every task on ``executor``, in the tasks' order; each result is
    fetched as soon as it is ready, so that no worker holds a finished one while those
    before it run."""
    futures = [executor.submit(fn, *task) for task in tasks]
    place = {id(future): number for number, future in enumerate(futures)}
    results: list[Any] = [None] * len(futures)
    for future in _as_completed(futures):
        results[place[id(future)]] = future.result()
        futures[place[id(future)]] = None  # a Dask worker forgets a result nothing refers to
    return results


def _as_completed(futures: list[Any]) -> Iterator[Any]:
    if futures and type(futures[0]).__module__.startswith("distributed"):
        from distributed import as_completed

        return iter(as_completed(futures))
    return iter(concurrent.futures.as_completed(futures))
