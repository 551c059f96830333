"""Progress of long work (batch, train, evaluate, simulate): a tqdm bar on stderr when
stderr is a terminal, nothing otherwise, so logs, pipes and CI get only the results.
The library reports ``(done, total)``; a total of None is not known in advance."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Advance = Callable[[int, int | None], None]


@contextmanager
def progress(description: str, unit: str) -> Iterator[Advance]:
    """A bar for the duration of the block; the block hands the callable it yields to
    the library, which calls it with (done, total)."""
    from tqdm import tqdm  # every command imports this module; only long work draws a bar

    bar = tqdm(
        desc=description, unit=f" {unit}", file=sys.stderr, disable=not sys.stderr.isatty(), leave=False, dynamic_ncols=True
    )

    def advance(done: int, total: int | None) -> None:
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    try:
        yield advance
    finally:
        bar.close()
