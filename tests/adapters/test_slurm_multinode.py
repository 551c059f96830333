"""End to end against a real three-node Slurm on this one host (three slurmd, as Slurm's
own test setups run them): a GPU fault on one node of a two-node job sends the rerun
away from that node, and only that node, and only that node becomes suspect; a node that
dies under a job is read from Slurm's own record, with nothing in the log."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from conftest import ROOT
from slurm_cluster import Slurm, slurm_for_tests

from failclass.adapters.slurm_jobs import hostnames
from failclass.store.repository import Store
from failclass.store.views import RecordedAttempt

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("slurm")]
# A real log: RuntimeError: CUDA error: uncorrectable ECC error encountered (source in the .url beside it).
ECC = ROOT / "corpora/public/gpu_ecc_error/hpc_node_ecc.log"


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slurm]:
    with slurm_for_tests(tmp_path_factory.mktemp("slurm-3"), nodes=3, port=16917) as cluster:
        yield cluster


def attempts_of(slurm: Slurm, job_id: str, count: int) -> list[RecordedAttempt]:
    store = Store.open(f"sqlite:///{slurm.base / 'failclass.db'}")
    deadline = time.monotonic() + 30
    while len(attempts := store.job(job_id)) < count and time.monotonic() < deadline:
        time.sleep(0.5)
    return attempts


def test_a_gpu_fault_on_one_node_of_several_excludes_that_node(slurm: Slurm) -> None:
    # Every task's output is labelled with its node, as multi-node launchers do (pdsh,
    # mpiexec --label); the second node of the allocation prints the real ECC failure.
    submitted = slurm.sbatch(
        f"""#!/bin/bash
#SBATCH --job-name=ecc-2n --nodes=2 --ntasks-per-node=1
if [ "${{SLURM_RESTART_COUNT:-0}}" -ge 1 ]; then
  srun sh -c 'echo "$SLURMD_NODENAME: epoch 2 done"'; exit 0
fi
export BAD=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 2p)
srun sh -c 'if [ "$SLURMD_NODENAME" = "$BAD" ]; then sed "s/^/$SLURMD_NODENAME: /" {ECC}; exit 1; fi; echo "$SLURMD_NODENAME: epoch 1"'
"""
    )
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    job = slurm.wait_final(job_id, states=("SPECIAL_EXIT",))
    first, second = attempts_of(slurm, job_id, 2)
    bad = first.nodes[1]
    assert len(first.nodes) == 2 and bad in slurm.nodes
    assert first.classification is not None and first.classification.reason == "gpu_ecc_error"
    assert first.decision is not None and first.decision.action == "retry_elsewhere" and first.decision.exclude_nodes == (bad,)
    assert job["JobState"] == "COMPLETED" and job["Restarts"] == "1" and job["ExcNodeList"] == bad, job
    assert job["Comment"].startswith("failclass: retry_elsewhere: gpu_ecc_error"), job
    assert second.status == "passed" and bad not in second.nodes and len(second.nodes) == 2
    assert first.nodes[0] in second.nodes  # the healthy node of the first run was not excluded
    store = Store.open(f"sqlite:///{slurm.base / 'failclass.db'}")
    assert [entry.node if hasattr(entry, "node") else entry["node"] for entry in store.nodes(24, 1)] == [bad]


def test_a_node_that_dies_is_a_node_failure_even_with_nothing_in_the_log(slurm: Slurm) -> None:
    submitted = slurm.sbatch(
        """#!/bin/bash
#SBATCH --job-name=node-dies --nodes=2 --ntasks-per-node=1
if [ "${SLURM_RESTART_COUNT:-0}" -ge 1 ]; then echo "rerun on $SLURM_JOB_NODELIST"; exit 0; fi
sleep 120
"""
    )
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    deadline = time.monotonic() + 60
    while (job := slurm.job(job_id)).get("JobState") != "RUNNING":
        assert time.monotonic() < deadline, job
        time.sleep(0.3)
    dying = hostnames(job["NodeList"])[1]
    slurm.daemons[1 + slurm.nodes.index(dying)].kill()  # its slurmd dies, as a crashed node's would
    slurm.run("scontrol", "update", f"nodename={dying}", "state=down", "reason=failclass test: slurmd killed")
    final = slurm.wait_final(job_id, states=("SPECIAL_EXIT",))
    # Slurm requeued the job itself; the epilog read why from the node's record and said so.
    first, second = attempts_of(slurm, job_id, 2)
    assert (first.attempt, first.status, second.attempt, second.status) == (1, "failed", 2, "passed")
    found = first.classification
    assert found is not None and (found.reason, found.rule_id, found.source) == ("job_preempted", "slurm.node_fail", "scheduler")
    assert any(e.text.startswith(f"NodeName={dying} State=DOWN") for e in found.evidence), found.evidence
    assert first.decision is not None and first.decision.action == "retry"
    assert first.decision.explanation.counters["failure_of_signature"] == 1
    assert final["JobState"] == "COMPLETED" and final["Restarts"] == "1", final
    assert final["Comment"].startswith("failclass: retry: job_preempted (slurm.node_fail)"), final
    assert dying not in second.nodes
