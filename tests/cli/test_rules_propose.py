"""`failclass rules propose`: two jobs of two users fail, on two GPUs, printing a line no
rule knows; the store groups them into one rule skeleton that, given its reason, loads
and passes `failclass rules test`. Two more jobs, cut off mid-training, share lines that
say no failure: no proposal.

Real text only: each job's good run is a passing run of corpora/passed/runs; its failure
is that run's first lines followed by one line of an AMD GPU's hardware-error report,
copied from https://github.com/ROCm/legacy-rocm-build/issues/4021
(corpora/public/gpu_ecc_error/ROCm_legacy-rocm-build_4021.log, which no rule names yet:
corpora/public/KNOWN_MISSES.md)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from conftest import ROOT, run_cli

from failclass.attempts import Attempt
from failclass.classifier import Classifier
from failclass.matching.propose import PLACEHOLDER
from failclass.policy.config import load_policy
from failclass.store.repository import Store
from failclass.usecases import report_attempt

RUNS = ROOT / "corpora" / "passed" / "runs"
ROCM = ROOT / "corpora" / "public" / "gpu_ecc_error" / "ROCm_legacy-rocm-build_4021.log"


def test_two_jobs_of_two_users_with_one_unknown_line_make_one_proposal(
    database_url: str, tmp_path: Path, classifier: Classifier
) -> None:
    store, policy = Store.open(database_url), load_policy()
    status = [line for line in ROCM.read_text().split("\n") if ".STATUS=" in line]
    assert status[0].startswith("[13850.927941] amdgpu 0000:42:00.0:") and status[1].startswith(
        "[13850.935975] amdgpu 0000:55:00.0:"
    )
    for job, user, good, line in (
        ("job-a", "ann", "train_progress_dict_4.log", status[0]),
        ("job-b", "bob", "train_progress_logging_2.log", status[1]),
    ):
        report_attempt(
            store, Attempt(job, 1, user, status="passed"), classifier.examine_path(RUNS / good, templates=True), policy
        )
        failed = "\n".join([*(RUNS / good).read_text().split("\n")[:5], line]) + "\n"
        examined = classifier.examine_bytes(failed, templates=True)
        assert examined.classification.reason == "no_signature"
        report_attempt(store, Attempt(job, 2, user), examined, policy)
    cut_off = "\n".join((RUNS / "train_progress_dict_4.log").read_text().split("\n")[:5]) + "\n"
    for job, user in (("job-c", "carl"), ("job-d", "dana")):  # no good run: their last lines, which say no failure
        report_attempt(store, Attempt(job, 1, user, status="killed"), classifier.examine_bytes(cut_off, templates=True), policy)

    done = run_cli("rules", "propose", "--database-url", database_url, "--min-jobs", "2")
    assert done.returncode == 0, done.stderr
    rules = yaml.safe_load(done.stdout)
    assert len(rules) == 1
    pattern = rules[0]["patterns"][0]
    assert all(re.search(pattern, line) for line in status[:2])
    assert [e["source"] for e in rules[0]["examples"]["positive"]] == ["job:job-a", "job:job-b"]
    assert [e["text"] for e in rules[0]["examples"]["positive"]] == [status[0] + "\n", status[1] + "\n"]

    folder = tmp_path / "rules"
    folder.mkdir()
    accepted = done.stdout.replace(f"{PLACEHOLDER}.", "gpu_ecc_error.").replace(
        'description: ""', "description: amdgpu ACA error"
    )
    (folder / "gpu_ecc_error.yaml").write_text("reason: gpu_ecc_error\nrules:\n" + accepted)
    tested = run_cli("--rules-dir", str(folder), "rules", "test")
    assert tested.returncode == 0 and tested.stdout.strip().endswith(" 0 failures"), tested.stdout + tested.stderr
    assert run_cli("rules", "propose", "--database-url", database_url, "--min-jobs", "3").stdout.count("- id:") == 0
    refused = run_cli(
        "--rules-dir", str(folder), "rules", "propose", "--database-url", database_url, "--out", str(folder / "new.yaml")
    )
    assert refused.returncode == 2 and "is in a rules folder" in refused.stderr and not (folder / "new.yaml").exists()
