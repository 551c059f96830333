"""The store on SQLite and on PostgreSQL: migrations, recording attempts exactly once, and
the policy's state across jobs (holds, blacklist, suspect nodes) as the database keeps it."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conftest import ROOT
from failures import examination
from sqlalchemy import MetaData, Table, inspect

from failclass.attempts import Attempt
from failclass.classifier import Examination
from failclass.contracts import Origin, to_json
from failclass.errors import IdempotencyConflict
from failclass.policy.config import PolicyConfig, load_policy
from failclass.store.migrate import HEAD, alembic_config, current, upgrade
from failclass.store.repository import RequestIdentity, Store, make_engine
from failclass.usecases import admit_submission, report_attempt

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def examined() -> dict[str, Examination]:
    """Hand-made classifications (tests/failures.py) of the attempts these tests report."""
    return {name: examination(name) for name in ("nccl_timeout", "missing_input", "cpu_oom", "ecc", "passed")}


@pytest.fixture
def store(database_url: str) -> Store:
    return Store.open(database_url)


@pytest.fixture(scope="module")
def policy() -> PolicyConfig:
    return load_policy()


def report(store: Store, examined: dict[str, Examination], policy: PolicyConfig, log: str, minutes: int = 0, **facts: Any):  # type: ignore[no-untyped-def]
    facts.setdefault("user", "alice")
    facts.setdefault("attempt", 1)
    key = facts.pop("key", None)
    request = RequestIdentity(key, facts.pop("digest", "the first request")) if key else None
    attempt = Attempt(**facts)
    found = examined[log]
    now = T0 + timedelta(minutes=minutes)
    return report_attempt(store, attempt, found, policy, request, now)


def test_migrations_build_the_schema(store: Store) -> None:
    assert current(store.engine) == HEAD
    tables = set(inspect(store.engine).get_table_names())
    assert {
        "attempts",
        "classifications",
        "decisions",
        "blacklist",
        "holds",
        "input_failures",
        "node_failures",
        "labels",
        "notices",
    } <= tables
    assert "request_digest" in {c["name"] for c in inspect(store.engine).get_columns("attempts")}
    assert {"checkpoint_basis", "last_checkpoint_at"} <= {c["name"] for c in inspect(store.engine).get_columns("classifications")}
    upgrade(store.engine)  # a second upgrade is a no-op
    assert current(store.engine) == HEAD


def test_head_is_alembics_newest_revision() -> None:
    from alembic.script import ScriptDirectory

    assert ScriptDirectory.from_config(alembic_config("")).get_current_head() == HEAD


def test_a_store_at_head_opens_without_alembic_and_an_older_one_is_migrated(database_url: str) -> None:
    """Every hook opens the store: Alembic is loaded only when there is something to migrate."""
    engine = make_engine(database_url)
    upgrade(engine, "0001")
    assert current(engine) == "0001"
    engine.dispose()
    assert current(Store.open(database_url).engine) == HEAD
    opens = "import sys; from failclass.store.repository import Store; Store.open(sys.argv[1]); print(sorted(sys.modules))"
    done = subprocess.run([sys.executable, "-c", opens, database_url], capture_output=True, text=True, cwd=ROOT, check=True)
    assert "'alembic'" not in done.stdout and "'failclass.store.repository'" in done.stdout


def test_an_attempt_recorded_before_0005_reads_back_without_rank_facts_or_origin(
    database_url: str, examined: dict[str, Examination]
) -> None:
    """Migrations 0005 and 0006 add where ranks ran to the attempts and where the failure
    started (rank, node, GPU) to the classifications; the rows already there read back with
    neither."""
    engine = make_engine(database_url)
    upgrade(engine, "0004")
    tables = MetaData()
    attempts, classifications = (Table(name, tables, autoload_with=engine) for name in ("attempts", "classifications"))
    found = examined["ecc"].classification
    with engine.begin() as connection:
        (attempt_id,) = connection.execute(
            attempts.insert().returning(attempts.c.id),
            {"job_id": "old-1", "attempt_no": 1, "user": "u", "vc": "default", "status": "failed", "gpus": 8}
            | {"nodes": ["gpu-01", "gpu-02"], "inputs": [], "logs": [], "recorded_at": T0.replace(tzinfo=None)},
        ).one()
        row = {"attempt_id": attempt_id, "reason": found.reason, "source": found.source, "rule_id": found.rule_id}
        connection.execute(
            classifications.insert(), row | {"signature": found.rule_id, "confidence": found.confidence, "body": to_json(found)}
        )
    engine.dispose()
    store = Store.open(database_url)
    assert current(store.engine) == HEAD
    assert {"origin_rank", "origin_node", "origin_gpu"} <= {
        c["name"] for c in inspect(store.engine).get_columns("classifications")
    }
    (recorded,) = store.job("old-1")
    assert (recorded.nodes, recorded.classification) == (("gpu-01", "gpu-02"), found)
    assert (recorded.tasks_per_node, recorded.pods, recorded.origin_rank, recorded.origin_node) == (None, {}, None, None)
    assert recorded.origin_gpu is None


def test_where_the_failure_started_is_kept_to_its_gpu(
    store: Store, examined: dict[str, Examination], policy: PolicyConfig
) -> None:
    """Rank 5's GPU 3 on gpu-02 (a node's Xid named it): the store keeps rank, node and GPU,
    and the decision excludes gpu-02 alone."""
    origin = Origin(5, "gpu-02", 3, "gpu-02.kern.log", 4, "the only log that named a cause in its node's kernel log")
    attempt = Attempt("j-gpu", 1, "u", nodes=("gpu-01", "gpu-02"), tasks_per_node=4, gpus=8)
    recorded = report_attempt(store, attempt, dataclasses.replace(examined["ecc"], origin=origin), policy, now=T0)
    assert recorded.decision is not None and recorded.decision.exclude_nodes == ("gpu-02",)
    (row,) = store.job("j-gpu")
    assert (row.origin_rank, row.origin_node, row.origin_gpu) == (5, "gpu-02", 3)
    (stored,) = [a for a in store.attempt_rows() if a.job_id == "j-gpu"]
    assert (stored.origin_node, stored.origin_gpu) == ("gpu-02", 3)


def test_an_attempt_is_recorded_once(store: Store, examined: dict[str, Examination], policy: PolicyConfig) -> None:
    first = report(store, examined, policy, "nccl_timeout", job_id="job-1", key="k-1", nodes=("gpu-01",))
    assert not first.duplicate and first.decision is not None
    assert first.decision.action == "retry" and first.classification.reason == "mpi_runtime_failure"
    again = report(store, examined, policy, "nccl_timeout", minutes=5, job_id="job-1", key="k-1")
    same_attempt = report(store, examined, policy, "nccl_timeout", minutes=5, job_id="job-1", key="other-key")
    assert again.duplicate and same_attempt.duplicate
    assert again.attempt_id == same_attempt.attempt_id == first.attempt_id
    assert again.decision == first.decision
    (recorded,) = store.job("job-1")
    assert recorded.attempt == 1 and recorded.nodes == ("gpu-01",)
    assert recorded.decision is not None and recorded.decision.action == "retry"


def test_an_idempotency_key_reused_for_another_request_is_refused(
    store: Store, examined: dict[str, Examination], policy: PolicyConfig
) -> None:
    first = report(store, examined, policy, "nccl_timeout", job_id="job-k", key="k", digest="body-1")
    with pytest.raises(IdempotencyConflict, match="another request"):
        report(store, examined, policy, "cpu_oom", job_id="job-other", key="k", digest="body-2")
    assert store.job("job-other") == []  # nothing half-recorded
    assert (
        report(store, examined, policy, "nccl_timeout", job_id="job-k", key="k", digest="body-1").attempt_id == first.attempt_id
    )
    second = report(store, examined, policy, "cpu_oom", job_id="job-other", key="k2", digest="body-2")
    assert not second.duplicate and second.attempt_id != first.attempt_id


def test_a_passed_attempt_gets_no_decision(store: Store, examined: dict[str, Examination], policy: PolicyConfig) -> None:
    recorded = report(store, examined, policy, "passed", job_id="job-ok", status="passed")
    assert recorded.decision is None and recorded.classification.reason == "no_signature"


def test_budget_is_kept_across_reported_attempts(store: Store, examined: dict[str, Examination], policy: PolicyConfig) -> None:
    actions = [report(store, examined, policy, "nccl_timeout", n, job_id="job-2", attempt=n).decision.action for n in range(1, 5)]
    assert actions == ["retry", "retry", "retry", "no_retry"]
    assert [d.action for d in store.decisions(job_id="job-2")] == ["no_retry", "retry", "retry", "retry"]


def test_twentieth_cpu_oom_of_a_user_holds_until_released(
    store: Store, examined: dict[str, Examination], policy: PolicyConfig
) -> None:
    actions = [
        report(store, examined, policy, "cpu_oom", n, job_id=f"oom-{n}", user="carol").decision.action for n in range(1, 21)
    ]
    assert actions[:19] == ["retry_with_more_resources"] * 19 and actions[19] == "hold"
    (hold,) = store.holds()
    assert (hold["user"], hold["reason"], hold["evidence"]["failures"]) == ("carol", "cpu_oom", 20)
    assert report(store, examined, policy, "cpu_oom", 30, job_id="oom-21", user="carol").decision.action == "hold"
    assert admit_submission(store, Attempt("oom-21", 2, "carol"), policy).action == "hold"
    assert admit_submission(store, Attempt("fresh-job", 1, "carol"), policy).action == "admit"  # never failed: nothing to repeat

    assert store.release_hold(hold["id"], by="operator", now=T0 + timedelta(minutes=40))
    assert not store.release_hold(hold["id"], by="operator")
    after = report(store, examined, policy, "cpu_oom", 50, job_id="oom-22", user="carol").decision
    assert after is not None and after.action == "retry_with_more_resources" and after.explanation.counters["user_failures"] == 1
    assert admit_submission(store, Attempt("oom-21", 2, "carol"), policy).action == "admit"


def test_incorrect_inputs_blacklist_a_dataset_and_reject_later_jobs(
    store: Store, examined: dict[str, Examination], policy: PolicyConfig
) -> None:
    dataset = "/nonexistent/data"
    for n, job in enumerate(("a", "a", "b")):
        decision = report(
            store, examined, policy, "missing_input", n, job_id=f"in-{job}", attempt=n + 1, user=f"u{n}", inputs=(dataset,)
        ).decision
        assert decision is not None and decision.action == "no_retry" and store.blacklist() == []
    fourth = report(store, examined, policy, "missing_input", 10, job_id="in-c", user="u9", inputs=(dataset,)).decision
    assert fourth is not None and fourth.action == "reject" and fourth.effects.blacklisted_inputs == (dataset,)
    (entry,) = store.blacklist()
    assert entry["path"] == dataset and entry["evidence"]["failures"] == 4

    rejected = admit_submission(store, Attempt("in-d", 1, "dave", inputs=(dataset, "/data/other")), policy)
    assert rejected.action == "reject"
    assert any(d.kind == "admission" for d in store.decisions(user="dave"))
    assert store.clear_blacklist(entry["id"], by="operator", now=T0 + timedelta(minutes=20))
    assert store.blacklist() == [] and len(store.blacklist(include_cleared=True)) == 1
    assert admit_submission(store, Attempt("in-d", 1, "dave", inputs=(dataset,)), policy).action == "admit"
    # After clearing, the count starts again: one more failure does not blacklist it.
    again = report(store, examined, policy, "missing_input", 30, job_id="in-e", user="erin", inputs=(dataset,)).decision
    assert again is not None and again.action == "no_retry"


def test_ecc_failures_of_two_jobs_make_a_node_suspect(
    store: Store, examined: dict[str, Examination], policy: PolicyConfig
) -> None:
    cluster = tuple(f"gpu-{i:02d}" for i in range(10))
    report(store, examined, policy, "passed", job_id="big-job", status="passed", nodes=cluster)  # the nodes the cluster has
    first = report(store, examined, policy, "ecc", job_id="hw-1", nodes=("gpu-07",)).decision
    assert first is not None and first.action == "retry_elsewhere" and first.exclude_nodes == ("gpu-07",)
    second = report(store, examined, policy, "ecc", 5, job_id="hw-2", nodes=("gpu-07",)).decision
    assert second is not None and second.effects.suspect_nodes == ("gpu-07",)
    (node,) = store.nodes(policy.nodes.window_hours, policy.nodes.min_jobs, now=T0 + timedelta(minutes=10))
    assert node["node"] == "gpu-07" and node["suspect"] and node["jobs"] == ["hw-1", "hw-2"]
    # A third job elsewhere is kept off the suspect node, within the cap (25% of 10 nodes).
    third = report(store, examined, policy, "ecc", 8, job_id="hw-3", nodes=("gpu-09",)).decision
    assert third is not None and third.exclude_nodes == ("gpu-09", "gpu-07")
