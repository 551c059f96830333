"""End to end against a real Slurm on this machine: jobs fail for real, the EpilogSlurmctld
hook decides, and Slurm requeues, leaves failed, or refuses at submission."""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import ROOT
from failures import DATASET, examination
from slurm_cluster import Slurm, slurm_for_tests

from failclass.attempts import Attempt
from failclass.policy.config import load_policy
from failclass.store.repository import Store
from failclass.store.views import RecordedAttempt
from failclass.usecases import report_attempt

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("slurm")]

PYTHON = sys.executable
TRANSIENT = ROOT / "corpora" / "scenarios" / "mpi_runtime_failure__c10d_client_connect_timeout.sh"


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slurm]:
    with slurm_for_tests(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster


def store_of(slurm: Slurm) -> Store:
    return Store.open(f"sqlite:///{slurm.base / 'failclass.db'}")


def recorded_attempts(slurm: Slurm, job_id: str, count: int) -> list[RecordedAttempt]:
    """The job's attempts in the store, once the epilog of the last one has written."""
    deadline = time.monotonic() + 30
    while len(attempts := store_of(slurm).job(job_id)) < count and time.monotonic() < deadline:
        time.sleep(0.5)
    return attempts


def test_a_transient_network_failure_is_requeued_and_runs_again(slurm: Slurm) -> None:
    # The first run is a real failing launch: a rank whose c10d master never came up.
    assert importlib.util.find_spec("torch"), "the real failing launch needs torch (`make test` installs it)"
    submitted = slurm.sbatch(
        f"""#!/bin/bash
#SBATCH --job-name=transient
if [ "${{SLURM_RESTART_COUNT:-0}}" -ge 1 ]; then echo "rerun after requeue: training finished"; exit 0; fi
PY={PYTHON} bash {TRANSIENT}
exit 1
"""
    )
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    job = slurm.wait_final(job_id, states=("SPECIAL_EXIT",))
    assert job["JobState"] == "COMPLETED" and job["Restarts"] == "1", job
    assert job["Comment"].startswith("failclass: retry: mpi_runtime_failure (mpi_runtime_failure.c10d_network_error)"), job
    output = Path(job["StdOut"]).read_text()
    assert "DistNetworkError" in output and "rerun after requeue: training finished" in output
    (first, second) = recorded_attempts(slurm, job_id, 2)
    assert first.decision is not None and first.decision.action == "retry"
    assert first.classification is not None and first.classification.reason == "mpi_runtime_failure"
    assert second.status == "passed" and second.decision is None


def test_a_syntax_error_is_not_requeued(slurm: Slurm) -> None:
    script = slurm.base / "jobs" / "bad_train.py"
    script.write_text("def train(:\n    pass\n")
    submitted = slurm.sbatch(f"#!/bin/bash\n#SBATCH --job-name=syntax\n{PYTHON} {script}\n")
    job_id = submitted.stdout.strip()
    job = slurm.wait_final(job_id, states=("SPECIAL_EXIT",))
    # Held for good in SPECIAL_EXIT (the only way Slurm lets a failed job keep a comment).
    assert job["JobState"] == "SPECIAL_EXIT" and job["ExitCode"] == "1:0", job
    assert job["Comment"].startswith("failclass: no_retry: syntax_error (syntax_error.python_invalid_syntax)"), job
    time.sleep(8)  # longer than the requeue delay (cred_expire 5 s): it must not run again
    assert slurm.job(job_id)["JobState"] == "SPECIAL_EXIT"
    assert Path(job["StdOut"]).read_text().count("SyntaxError") == 1
    (attempt,) = store_of(slurm).job(job_id)
    assert attempt.decision is not None and attempt.decision.explanation.policy_clause == "reasons.syntax_error.action"
    assert attempt.exit_code == 1


def test_a_job_declaring_a_blacklisted_input_is_refused_at_submission(slurm: Slurm) -> None:
    # Four incorrect-input failures from three jobs, reported as the hook would have.
    store = store_of(slurm)
    log = examination("missing_input")
    for n, job in enumerate(("old-1", "old-1", "old-2", "old-3")):
        attempt = Attempt(job, n + 1, "root", inputs=(DATASET,))
        report_attempt(store, attempt, log, load_policy(), now=datetime.now(UTC))
    assert [e["path"] for e in store.blacklist()] == [DATASET]

    refused = slurm.sbatch(
        f"#!/bin/bash\n#SBATCH --job-name=uses-bad-data\n#FAILCLASS inputs {DATASET} /data/vocab\necho never\n"
    )
    assert refused.returncode != 0
    assert f"failclass: reject: input {DATASET} is blacklisted" in refused.stderr
    (admission,) = [d for d in store.decisions(action="reject") if d.kind == "admission"]
    assert admission.job_id == "uses-bad-data"

    admitted = slurm.sbatch("#!/bin/bash\n#SBATCH --job-name=clean-data\n#FAILCLASS inputs /data/clean\necho fine\n")
    assert admitted.returncode == 0, admitted.stderr
    assert slurm.wait_final(admitted.stdout.strip())["JobState"] == "COMPLETED"


def test_hook_log_shows_what_was_done(slurm: Slurm) -> None:
    log = (slurm.base / "etc" / "failclass-hook.log").read_text()
    assert "scontrol requeue" in log and "failclass: no_retry: syntax_error" in log
