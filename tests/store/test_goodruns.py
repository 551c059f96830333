"""A job's last good run kept in the store (failclass.store.goodruns) and `failclass diff`
against it, on SQLite and PostgreSQL. The pair is natural: corpora/produced's
core_dump__native_aborts__0 ran `train_progress.py --style=dict --seed=4 --epochs=2`
before its scenario failed, and corpora/passed/runs/train_progress_dict_4 is that same
command's own passing run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from failclass.attempts import Attempt
from failclass.classifier import Classifier
from failclass.logs.diff import template
from failclass.logs.ranks import read_lines
from failclass.policy.config import PolicyConfig, load_policy
from failclass.store.direct import DirectRecords, open_records
from failclass.store.goodruns import GoodRun
from failclass.store.repository import Store
from failclass.usecases import report_attempt

GOOD = ROOT / "corpora" / "passed" / "runs" / "train_progress_dict_4.log"
FAILED = ROOT / "corpora" / "produced" / "core_dump" / "core_dump__native_aborts__0.log"
TRAINING = 19  # FAILED's lines of the training run; the scenario's output follows


@pytest.fixture(scope="module")
def policy() -> PolicyConfig:
    return load_policy()


def kept(store: Store, job: str) -> GoodRun:
    run = store.good_run(job)
    assert run is not None
    return run


def test_a_passing_attempt_is_kept_and_a_later_failure_shows_only_its_new_lines(
    database_url: str, classifier: Classifier, policy: PolicyConfig
) -> None:
    store = Store.open(database_url)  # SQLAlchemy's, as the service records; migrated
    hook = open_records(database_url)  # the driver's own, as the hook records
    assert isinstance(hook, DirectRecords)
    passed = Attempt("train-4", 1, "ann", status="passed")
    report_attempt(hook, passed, classifier.examine_path(GOOD, templates=True), policy)
    report_attempt(store, Attempt("train-4", 2, "ann"), classifier.examine_path(FAILED, templates=True), policy)
    run = kept(store, "train-4")
    assert (run.attempt, run.status, run.lines) == (1, "passed", len(read_lines(GOOD)))
    assert sum(run.templates.values()) == len(read_lines(GOOD))
    assert template(read_lines(GOOD)[1]) in run.templates  # {'loss': ..., 'learning_rate': ..., 'epoch': ...}
    done = run_cli("diff", str(FAILED), "--job-id", "train-4", "--database-url", database_url, "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)["new"]
    assert found[0] == {"line": TRAINING + 1, "text": "== runtime_error", "count": 1}
    assert found[1]["text"] == "terminate called after throwing an instance of 'std::runtime_error'"
    assert all(new["line"] > TRAINING for new in found)  # the run's own loss, epoch and checkpoint lines are known


def test_a_failed_attempt_that_progressed_is_kept_by_its_lines_up_to_its_last_progress(
    database_url: str, classifier: Classifier, policy: PolicyConfig
) -> None:
    store = Store.open(database_url)
    examined = classifier.examine_path(FAILED, templates=True)
    report_attempt(store, Attempt("train-4", 1, "ann"), examined, policy)
    run = kept(store, "train-4")
    lines = read_lines(FAILED)
    assert lines[TRAINING - 1].endswith("epoch 2: accuracy 0.894, checkpoint saved to /tmp/run-gqvsw1ct/checkpoint-epoch2.pt")
    assert all(template(line) in run.templates for line in lines[:TRAINING])
    assert not any(template(line) in run.templates for line in lines[TRAINING:])  # "== runtime_error", "terminate called ..."
    report_attempt(store, Attempt("train-4", 2, "ann", status="passed"), classifier.examine_path(GOOD, templates=True), policy)
    assert (kept(store, "train-4").attempt, kept(store, "train-4").status) == (2, "passed")


def test_diff_without_a_good_run_says_so_in_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'failclass.db'}"
    Store.open(url)
    done = run_cli("diff", str(FAILED), "--job-id", "never-passed", "--database-url", url)
    assert done.returncode == 1 and not done.stdout
    assert done.stderr.strip().splitlines() == [
        f"error: job 'never-passed' has no good run in the store {url}: no attempt of it passed or progressed"
    ]
    both = run_cli("diff", str(FAILED), str(GOOD), "--job-id", "x")
    assert both.returncode == 2 and "one of the two" in both.stderr
