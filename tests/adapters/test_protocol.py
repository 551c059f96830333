"""A scheduler adapter is two methods: a toy one, written here the way a newcomer would
add a scheduler, gets real decisions from the hook's local backend and acts on them."""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT

from failclass.adapters.protocol import Answer, Finished, SchedulerAdapter, handle_finished
from failclass.attempts import Attempt, SchedulerEvidence
from failclass.hook.backends import LocalBackend
from failclass.options import ClassifierOptions
from failclass.policy.config import load_policy

SYNTAX = ROOT / "corpora/produced/syntax_error/syntax_error__indentation__0.log"
NCCL = ROOT / "corpora/public/mpi_runtime_failure/llamafactory_allreduce_watchdog_8gpu.log"


class ToyQueue:
    """A scheduler that keeps its finished jobs in a list and its actions in another."""

    def __init__(self, ended: list[tuple[str, Path, str]]) -> None:
        self.ended = ended
        self.actions: list[str] = []

    def finished(self, workdir: Path) -> list[Finished]:
        return [Finished(Attempt(job, 1, "toy", status=status, nodes=("n1",)), [log], job) for job, log, status in self.ended]

    def act(self, finished: Finished, answer: Answer) -> list[str]:
        line = f"{finished.handle}: {answer.action}"
        self.actions.append(line)
        return [line]


def test_a_toy_adapter_gets_decisions_and_acts(tmp_path: Path) -> None:
    queue = ToyQueue([("j-syntax", SYNTAX, "failed"), ("j-nccl", NCCL, "failed"), ("j-ok", SYNTAX, "passed")])
    adapter: SchedulerAdapter = queue
    backend = LocalBackend(f"sqlite:///{tmp_path / 's.db'}", ClassifierOptions(no_model=True).build(print), load_policy())
    handled = list(handle_finished(adapter, backend.decide, tmp_path))
    assert [h.finished.handle for h in handled] == ["j-syntax", "j-nccl", "j-ok"]
    assert queue.actions == ["j-syntax: no_retry", "j-nccl: retry"]  # the passed one is recorded, not acted on
    assert handled[2].done == [] and handled[2].answer.action == "recorded"
    assert handled[2].answer.classification is not None and handled[2].answer.classification.reason == "syntax_error"
    assert [a.attempt for a in backend.store.job("j-ok")] == [1]


def test_the_schedulers_own_evidence_outweighs_an_empty_log(tmp_path: Path) -> None:
    """A node that died leaves no log line; Slurm's record (tests/data/slurm) says it."""
    empty = tmp_path / "empty.out"
    empty.write_text("")
    lines = (
        "JobId=3 JobState=COMPLETING Reason=NodeDown ExitCode=0:15 PreemptTime=None",
        "NodeName=node3 State=DOWN+NOT_RESPONDING Reason=Not responding",
    )
    attempt = Attempt("j-node", 1, "toy", nodes=("node2", "node3"), exit_code=0, signal=15)
    backend = LocalBackend(f"sqlite:///{tmp_path / 's.db'}", ClassifierOptions(no_model=True).build(print), load_policy())
    plain = backend.decide(Attempt("j-plain", 1, "toy"), [empty])
    answer = backend.decide(attempt, [empty], SchedulerEvidence("job_preempted", "slurm.node_fail", lines))
    assert plain.decided is not None and plain.decided.explanation.reason == "no_signature"
    assert answer.decided is not None and (answer.decided.explanation.reason, answer.decided.explanation.rule_id) == (
        "job_preempted",
        "slurm.node_fail",
    )
    assert answer.action == "retry" and answer.classification is not None
    assert answer.classification.source == "scheduler" and [e.text for e in answer.classification.evidence] == list(lines)
