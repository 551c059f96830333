"""What a scheduler adapter is: it finds attempts that ended (with their facts and
logs) and carries out the hook's answer about each. The Slurm epilog and the Kubernetes
controller are two of them; ``handle_finished`` is the loop both run. A new scheduler is
a new class with these two methods (tests/adapters/test_protocol.py adds a toy one)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from failclass.attempts import Attempt, SchedulerEvidence
from failclass.hook.answer import HookAnswer

Answer = HookAnswer  # the hook's answer (failclass.hook.answer); JSON only at the edges
Decide = Callable[[Attempt, list[Path], SchedulerEvidence | None], Answer]


@dataclass(frozen=True)
class Finished:
    """An attempt that ended, as the scheduler tells it: the facts, the logs, the
    adapter's own name for it (a Slurm job id, a namespace/pod), and the scheduler's own
    evidence of the cause when it has one (a Slurm NODE_FAIL, OUT_OF_MEMORY, PREEMPTED)."""

    attempt: Attempt
    logs: list[Path]
    handle: str
    scheduler: SchedulerEvidence | None = None


@dataclass(frozen=True)
class Handled:
    """What became of one finished attempt: the hook's answer and what the adapter did."""

    finished: Finished
    answer: Answer
    done: list[str]


class SchedulerAdapter(Protocol):
    def finished(self, workdir: Path) -> Iterable[Finished]:
        """Attempts that ended and are not handled yet (logs may be written to ``workdir``)."""
        ...

    def act(self, finished: Finished, answer: Answer) -> list[str]:
        """Carry out the answer; returns what was done, one line each (nothing in audit mode)."""
        ...


def handle_finished(adapter: SchedulerAdapter, decide: Decide, workdir: Path) -> Iterator[Handled]:
    """Ask the hook about every finished attempt and let the adapter act on the answer;
    a passed attempt is only recorded."""
    for finished in adapter.finished(workdir):
        answer = decide(finished.attempt, finished.logs, finished.scheduler)
        done = [] if finished.attempt.status == "passed" else adapter.act(finished, answer)
        yield Handled(finished, answer, done)
