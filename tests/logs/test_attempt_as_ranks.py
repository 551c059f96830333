"""An attempt's logs examined for a decision (failclass.logs.attempt): read as ranks where
they are several files or one log holds two ranks or more, naming the origin rank and its
node; examined as before where they are one process's log. The attempts are real
(corpora/multirank), each with its truth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from failclass.adapters.slurm import SlurmJob
from failclass.adapters.slurm_state import scheduler_evidence
from failclass.attempts import Attempt
from failclass.classifier import Classifier
from failclass.hook.backends import examine
from failclass.logs.attempt import BODY, examine_files, examine_text
from failclass.policy.decide import implicated_nodes
from failclass.usecases import failure_of

MULTIRANK = ROOT / "corpora/multirank/attempts"


def truth(name: str) -> dict[str, Any]:
    return json.loads((MULTIRANK / name / "truth.json").read_text())  # type: ignore[no-any-return]


def attempt_of(name: str) -> tuple[Attempt, list[Path]]:
    """The attempt as its scheduler knew it (truth.json's facts), and its files."""
    known = truth(name)
    facts = known["facts"]
    attempt = Attempt(facts["job_id"], 1, "u", nodes=tuple(facts["nodes"]), tasks_per_node=facts.get("tasks_per_node"))
    return attempt, [MULTIRANK / name / file for file in known["files"]]


@pytest.mark.parametrize(
    "name",
    [
        "srun_files__abort_reported__r7of8__0",  # one file per task, and srun's own
        "torchrun_logdir__config_key__r2of4__0",  # torchrun's --log-dir: a file per rank and stream
        "srun_label__missing_input__r3of8__0",  # one log, every line labelled with its task
        "torchrun_stream__abort_reported__r3of4__0",  # one log, tracebacks prefixed [rankN]:
    ],
)
def test_the_logs_of_ranks_name_the_origin_and_its_node(classifier: Classifier, name: str) -> None:
    known = truth(name)
    attempt, paths = attempt_of(name)
    log, examined = examine_files(classifier, paths, attempt)
    assert examined.origin is not None and examined.classification.reason == known["reason"]
    assert (examined.origin.rank, examined.origin.node) == (known["origin"]["rank"], known["origin"]["node"])
    assert log == Path(examined.origin.path or "")  # the origin's file speaks for the attempt
    assert examined.progress == classifier.examine_paths(paths)[1].progress  # the furthest any log reached, as before


def test_a_request_body_of_interleaved_ranks_names_the_origin(classifier: Classifier) -> None:
    attempt, (path,) = attempt_of("srun_label__sigsegv_reported__r2of4__0")
    examined = examine_text(classifier, path.read_text(), attempt)
    assert examined.classification.reason == "core_dump"
    assert examined.origin is not None and (examined.origin.rank, examined.origin.node, examined.origin.path) == (
        2,
        "node2",
        BODY,
    )
    assert classifier.examine_bytes(path.read_text()).classification.reason == "mpi_runtime_failure"  # a peer's, read whole


@pytest.mark.parametrize(
    "log",
    [
        "corpora/produced/syntax_error/syntax_error__indentation__0.log",
        "samples/gpu_ecc_error--kohya_ddp_ecc_nccl_watchdog.log",  # c10d records name the one rank
        "corpora/produced/mpi_runtime_failure/mpi_runtime_failure__gloo_peer_killed__0.log",  # the one rank's, a peer killed
    ],
)
def test_one_process_log_is_examined_as_before(classifier: Classifier, log: str) -> None:
    path = ROOT / log
    attempt = Attempt("j", 1, "u", nodes=("gpu-01", "gpu-02"), tasks_per_node=8)
    assert examine_files(classifier, [path], attempt) == (path, classifier.examine_path(path, templates=True))
    assert examine_text(classifier, path.read_text(), attempt) == classifier.examine_bytes(path.read_text(), templates=True)


def test_the_schedulers_record_of_a_node_outweighs_the_origin_the_logs_name(classifier: Classifier) -> None:
    """Slurm records node3 down; the logs show rank 2 failing first on node2: the node to
    implicate is Slurm's."""
    attempt, paths = attempt_of("srun_label__sigsegv_reported__r2of4__0")
    attempt = Attempt(attempt.job_id, 1, "u", nodes=("node2", "node3"), tasks_per_node=2)
    job = SlurmJob.parse((ROOT / "tests/data/slurm/show_job_d_node_fail_in_epilog.txt").read_text())
    down = {"NodeName": "node3", "State": "DOWN+NOT_RESPONDING", "Reason": "Not responding [root@2026-11-26T21:53:20]"}
    _, alone = examine(classifier, attempt, paths, None)
    assert alone.origin is not None and alone.origin.node == "node2"
    _, examined = examine(classifier, attempt, paths, scheduler_evidence(job.fields, [down]))
    assert examined.classification.source == "scheduler" and examined.origin is None
    assert implicated_nodes(attempt, failure_of(examined)) == ("node3",)
