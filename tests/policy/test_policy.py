"""The retry policy over realistic histories: the failures are hand-made
(tests/failures.py: their evidence copied from corpus logs), the histories what a
cluster would have seen before. tests/policy/test_from_logs.py runs real logs through the
classifier into the policy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_cli
from failures import DATASET, failure

from failclass.attempts import Attempt
from failclass.contracts import to_json
from failclass.errors import ConfigError
from failclass.history import Blacklisted, Failure, History, PriorAttempt
from failclass.logs.facts import Progress
from failclass.matching.rules import load_rules
from failclass.matching.taxonomy import builtin_taxonomy
from failclass.policy.config import PolicyConfig, load_policy
from failclass.policy.decide import admit, backoff_seconds, decide, failures_counted


@pytest.fixture(scope="module")
def policy() -> PolicyConfig:
    return load_policy()


def attempt(n: int = 1, job: str = "job-1", user: str = "alice", **facts) -> Attempt:  # type: ignore[no-untyped-def]
    return Attempt(job_id=job, attempt=n, user=user, **facts)


def prior(of: Failure, n: int, progress: Progress | None = None) -> PriorAttempt:
    return PriorAttempt(n, of.signature, of.reason, progress)


@pytest.mark.parametrize("number", [1, 2, 5])
def test_a_syntax_error_is_never_retried(policy: PolicyConfig, number: int) -> None:
    syntax = failure("syntax")
    history = History(job_attempts=tuple(prior(syntax, n) for n in range(1, number)))
    decision = decide(attempt(number), syntax, history, policy)
    assert decision.action == "no_retry"
    assert decision.explanation.policy_clause == "reasons.syntax_error.action"
    assert decision.backoff_seconds is None


def test_an_nccl_timeout_is_retried_within_its_budget(policy: PolicyConfig) -> None:
    timeout = failure("nccl_timeout")
    actions, delays = [], []
    for number in range(1, 5):
        history = History(job_attempts=tuple(prior(timeout, n) for n in range(1, number)))
        decision = decide(attempt(number), timeout, history, policy)
        actions.append(decision.action)
        delays.append(decision.backoff_seconds)
    assert actions == ["retry", "retry", "retry", "no_retry"]
    assert delays[0] is not None and delays[1] is not None and delays[2] is not None
    assert 24 <= delays[0] <= 36 and 48 <= delays[1] <= 72 and 96 <= delays[2] <= 144  # 30 s doubling, +-20%
    last = decide(attempt(4), timeout, History(job_attempts=tuple(prior(timeout, n) for n in range(1, 4))), policy)
    assert last.explanation.policy_clause == "reasons.mpi_runtime_failure.max_retries"
    assert last.explanation.counters["failure_of_signature"] == 4 and last.explanation.counters["max_retries"] == 3


def test_preemption_does_not_spend_the_budget(policy: PolicyConfig) -> None:
    preempted, timeout = failure("preempted"), failure("nccl_timeout")
    history = History(job_attempts=tuple(prior(preempted, n) for n in range(1, 11)))
    assert decide(attempt(11), preempted, history, policy).action == "retry"
    # Preemptions between timeouts leave the timeouts' count alone: 2 timeouts before, this is the 3rd.
    mixed = (prior(timeout, 1), prior(preempted, 2), prior(preempted, 3), prior(timeout, 4), prior(preempted, 5))
    decision = decide(attempt(6), timeout, History(job_attempts=mixed), policy)
    assert (decision.action, decision.explanation.counters["failure_of_signature"]) == ("retry", 3)


def test_progress_between_attempts_restarts_the_count(policy: PolicyConfig) -> None:
    timeout = failure("nccl_timeout")
    stuck = tuple(prior(timeout, n, Progress(3, 1200)) for n in range(1, 4))
    assert (
        decide(attempt(4), Failure(timeout.reason, timeout.rule_id, (), Progress(3, 1200)), History(stuck), policy).action
        == "no_retry"
    )
    moved_on = Failure(timeout.reason, timeout.rule_id, (), Progress(7, 400))
    decision = decide(attempt(4), moved_on, History(stuck), policy)
    assert (decision.action, decision.explanation.counters["failure_of_signature"]) == ("retry", 1)
    assert failures_counted((prior(timeout, 1, Progress(1, 5)), prior(timeout, 2, Progress(2, 5))), timeout) == 2


def test_fourth_incorrect_input_failure_from_three_jobs_blacklists_the_path(policy: PolicyConfig) -> None:
    missing = failure("missing_input")
    inputs = (DATASET, "/data/vocab.txt")
    # Three failures so far, from jobs a, a and b.
    history = History(input_failures={DATASET: ("job-a", "job-a", "job-b")})
    decision = decide(attempt(1, job="job-c", inputs=inputs), missing, history, policy)
    assert decision.action == "reject"
    assert decision.effects.blacklisted_inputs == (DATASET,)  # the declared input holding the missing file, not the vocabulary
    assert decision.explanation.counters["input_failures"] == {DATASET: 4}
    # A later job declaring it is rejected before it runs.
    later = attempt(1, job="job-d", user="bob", inputs=(DATASET,))
    rejected = admit(later, History(blacklisted={DATASET: Blacklisted("4 failures, 3 jobs", "permission_error")}), policy)
    assert rejected is not None and rejected.action == "reject" and DATASET in rejected.explanation.message
    assert rejected.explanation.reason == "permission_error"  # the reason that put it there, as recorded
    unrecorded = admit(later, History(blacklisted={DATASET: Blacklisted("4 failures, 3 jobs")}), policy)
    assert unrecorded is not None and unrecorded.explanation.reason == policy.blacklisting_reason() == "incorrect_inputs"


@pytest.mark.parametrize(
    "earlier",
    [("job-a", "job-a", "job-a"), ("job-a", "job-b"), ("job-a", "job-a", "job-a", "job-a", "job-a")],
    ids=["fourth failure, one job", "third failure, three jobs", "sixth failure, one job"],
)
def test_one_bad_job_cannot_blacklist_a_shared_dataset(policy: PolicyConfig, earlier: tuple[str, ...]) -> None:
    job = earlier[-1] if len(set(earlier)) == 1 else "job-c"
    decision = decide(
        attempt(1, job=job, inputs=(DATASET,)), failure("missing_input"), History(input_failures={DATASET: earlier}), policy
    )
    assert decision.action == "no_retry" and decision.effects.blacklisted_inputs == ()


def test_the_same_users_twentieth_cpu_oom_is_held(policy: PolicyConfig) -> None:
    oom = failure("cpu_oom")
    nineteenth = decide(attempt(1, job="job-19"), oom, History(user_failures={"cpu_oom": 18}), policy)
    assert nineteenth.action == "retry_with_more_resources" and nineteenth.memory_factor == 1.5
    twentieth = decide(attempt(1, job="job-20"), oom, History(user_failures={"cpu_oom": 19}), policy)
    assert twentieth.action == "hold" and twentieth.effects.hold == "cpu_oom"
    assert twentieth.explanation.counters["user_failures"] == 20
    # Held: the next failure, and the next submission that would repeat it, are held too.
    held = History(user_failures={"cpu_oom": 20}, held_reasons=frozenset({"cpu_oom"}))
    assert decide(attempt(1, job="job-21"), oom, held, policy).action == "hold"
    submission = admit(attempt(2, job="job-21"), held, policy, expected_reasons=["cpu_oom"])
    assert submission is not None and submission.action == "hold"
    assert admit(attempt(1, job="job-22"), held, policy, expected_reasons=[]) is None


def test_hardware_retries_elsewhere_and_makes_the_node_suspect(policy: PolicyConfig) -> None:
    ecc = failure("ecc")
    history = History(node_jobs={"gpu-07": frozenset({"job-x"}), "gpu-11": frozenset({"job-y", "job-z"})}, nodes_seen=40)
    decision = decide(attempt(1, nodes=("gpu-07",)), ecc, history, policy)
    assert decision.action == "retry_elsewhere"
    assert decision.exclude_nodes == ("gpu-07", "gpu-11")
    assert decision.effects.suspect_nodes == ("gpu-07",)


def test_a_cluster_wide_incident_cannot_exclude_every_node(policy: PolicyConfig) -> None:
    everyone = {f"gpu-{i:02d}": frozenset({"job-a", "job-b"}) for i in range(12)}
    decision = decide(attempt(1, nodes=("gpu-00",)), failure("ecc"), History(node_jobs=everyone, nodes_seen=12), policy)
    assert len(decision.exclude_nodes) == 3  # 25% of the 12 nodes seen
    assert decision.exclude_nodes[0] == "gpu-00"


def test_gpu_oom_is_not_retried_on_the_same_gpu_type(policy: PolicyConfig) -> None:
    decision = decide(attempt(1, gpu_type="V100-16GB", nodes=("gpu-03",)), failure("gpu_oom"), History(), policy)
    assert decision.action == "retry_elsewhere" and decision.avoid_gpu_types == ("V100-16GB",)
    assert (
        decide(attempt(2), failure("gpu_oom"), History(job_attempts=(prior(failure("gpu_oom"), 1),)), policy).action == "no_retry"
    )


def test_overrides_per_rule_and_virtual_cluster(tmp_path: Path) -> None:
    timeout = failure("nccl_timeout")
    override = tmp_path / "policy.yaml"
    override.write_text(
        f"mode: audit\n"
        f"rules:\n  {timeout.rule_id}: {{max_retries: 5}}\n"
        f"virtual_clusters:\n  research:\n    reasons:\n      mpi_runtime_failure: {{action: no_retry}}\n"
    )
    policy = load_policy(override)
    history = History(job_attempts=tuple(prior(timeout, n) for n in range(1, 5)))
    decision = decide(attempt(5), timeout, history, policy)
    assert (decision.action, decision.explanation.policy_clause, decision.mode) == (
        "retry",
        f"rules.{timeout.rule_id}.action",
        "audit",
    )
    assert decision.enforced is False and to_json(decision)["enforced"] is False
    research = decide(attempt(1, vc="research"), timeout, History(), policy)
    assert (research.action, research.explanation.policy_clause) == (
        "no_retry",
        "virtual_clusters.research.reasons.mpi_runtime_failure.action",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("reasons:\n  syntax_error: {action: reboot}\n", "is not one of"),
        ("reasons:\n  syntax_error: {retries: 3}\n", "unknown settings ['retries']"),
        ("reasons:\n  gpu_on_fire: {action: retry}\n", "unknown to the taxonomy"),
        ("blacklist: {min_jobz: 3}\n", "min_jobz"),
        ("mode: yolo\n", "mode must be one of"),
        ("retry: always\n", "unknown keys ['retry']"),
        ("backoff: {base_seconds: abc}\n", "backoff.base_seconds: 'abc' is not a number"),
        ("backoff: {jitter: 5}\n", "backoff.jitter: 5 must be < 1"),
        ("backoff: {base_seconds: -30}\n", "backoff.base_seconds: -30 must be >= 0"),
        ("reasons:\n  cpu_oom: {memory_factor: -2}\n", "reasons.cpu_oom.memory_factor: -2 must be > 0"),
        ("reasons:\n  job_preempted: {spends_budget: 'no'}\n", "reasons.job_preempted.spends_budget: 'no' is not true or false"),
        ("reasons:\n  syntax_error: {max_retries: 2.5}\n", "reasons.syntax_error.max_retries: 2.5 is not a whole number"),
        (
            "rules:\n  mpi_runtime_failure.nccl_watchdog_timeot: {max_retries: 5}\n",
            "rule ids no rule has: ['rules.mpi_runtime_failure.nccl_watchdog_timeot']",
        ),
        (
            "virtual_clusters:\n  research:\n    reasons:\n      gpu_on_fire: {action: retry}\n",
            "unknown to the taxonomy: ['virtual_clusters.research.reasons.gpu_on_fire']",
        ),
        ("nodes: {max_excluded_share: 2}\n", "nodes.max_excluded_share: 2 must be <= 1"),
        ("user_window_hours: soon\n", "user_window_hours: 'soon' must be a number > 0"),
    ],
)
def test_a_bad_policy_file_is_refused_with_its_place(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    rules = set(load_rules().by_id())
    with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}: .*{re.escape(message)}"):
        load_policy(path, known_reasons=set(builtin_taxonomy().reasons), known_rules=rules)


def test_a_policy_file_that_is_not_utf8_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_bytes(b"mode: audit\n# r\xe9seau\n")
    with pytest.raises(ConfigError, match="cannot read the policy"):
        load_policy(path)


def test_the_hook_refuses_a_bad_policy_with_exit_2_and_one_line(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("backoff: {base_seconds: abc}\n")
    log = tmp_path / "x.log"
    log.write_text("RuntimeError: CUDA error: out of memory\n")
    store = f"sqlite:///{tmp_path / 'store.db'}"
    done = run_cli(
        "hook", "decide", "--job-id", "1", "--user", "u", "--log", str(log), "--policy", str(path), "--database-url", store
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines()[-1] == f"Error: {path}: backoff.base_seconds: 'abc' is not a number"


def test_backoff_is_bounded_and_repeatable(policy: PolicyConfig) -> None:
    delays = [backoff_seconds(policy, attempt(1, job=f"job-{i}"), 10) for i in range(50)]
    assert all(1440 <= d <= 2160 for d in delays)  # capped at 1800 s, +-20%
    assert len(set(delays)) > 10  # jitter spreads a herd of retries
    assert backoff_seconds(policy, attempt(3), 2) == backoff_seconds(policy, attempt(3), 2)


def test_policy_check_says_ok_or_the_place_of_the_problem(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("mode: audit\nreasons:\n  cpu_oom: {memory_factor: 2.0}\n")
    bad.write_text("reasons:\n  cpu_oom: {memory_factor: -2}\n")
    done = run_cli("policy", "check", str(good))
    assert (done.returncode, done.stdout) == (0, f"{good}: ok (mode audit, over the built-in policy)\n")
    done = run_cli("policy", "check", str(bad))
    assert done.returncode == 2 and done.stderr.strip() == f"Error: {bad}: reasons.cpu_oom.memory_factor: -2 must be > 0"
