"""The attempt model is the one check of attempt facts: an attempt that ends before it
starts is refused by the library, by the hook (exit 2, naming the field) and by the
service (422 naming body.end_time: tests/service/test_api_contract.py). The hook checks
the rest as the service does, with AttemptIn's schema cached and pydantic where that
schema does not plainly accept them (failclass.hook.facts)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from failclass.attempts import Attempt, InvalidAttempt
from failclass.hook.facts import ATTEMPT_FIELDS, InvalidFacts, attempt_of, plainly_valid

NCCL = ROOT / "corpora/public/mpi_runtime_failure/llamafactory_allreduce_watchdog_8gpu.log"


def test_the_model_refuses_an_end_before_the_start() -> None:
    start = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    with pytest.raises(InvalidAttempt) as refused:
        Attempt("j", 1, "u", start_time=start, end_time=start - timedelta(seconds=1))
    assert refused.value.field == "end_time" and "before start_time" in str(refused.value)
    assert Attempt("j", 1, "u", start_time=start, end_time=start).runtime_minutes == 0
    local = datetime(2026, 11, 2, 9, 0)  # no zone: local time, as the hook reads one
    assert Attempt("j", 1, "u", start_time=local.astimezone(UTC), end_time=local + timedelta(minutes=5)).runtime_minutes == 5


def test_the_hook_refuses_an_end_before_the_start(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'f.db'}"
    times = ("--start", "2026-11-02T10:00:00+00:00", "--end", "2026-11-02T09:00:00+00:00")
    done = run_cli("hook", "decide", "--database-url", store, "--job-id", "j", "--user", "u", *times, "--log", str(NCCL))
    assert done.returncode == 2, done.stderr
    assert "end_time: 2026-11-02T09:00:00+00:00 is before start_time 2026-11-02T10:00:00+00:00" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_facts_say_where_the_ranks_ran() -> None:
    """Ranks per node and pod -> node: read alike by the hook and the service, refused alike
    where they place nothing, kept as a database row holds them."""
    facts = {"job_id": "j", "attempt": 1, "user": "u", "nodes": ["gpu-01", "gpu-02"], "tasks_per_node": 4}
    facts["pods"] = {"train-worker-0": "gpu-01", "train-worker-1": "gpu-02"}
    attempt = the_hooks_answer(facts)
    assert attempt == the_services_answer(facts)
    assert isinstance(attempt, Attempt) and (attempt.tasks_per_node, attempt.pods) == (4, facts["pods"])
    assert attempt.facts()["pods"] == facts["pods"] and Attempt.from_facts(attempt.facts()) == attempt
    assert hash(attempt) == hash(Attempt("j", 1, "u", nodes=("gpu-01", "gpu-02"), tasks_per_node=4))  # the policy caches by it
    for wrong in (
        {"tasks_per_node": 0},
        {"tasks_per_node": True},
        {"pods": {"": "gpu-01"}},
        {"pods": {"p": ""}},
        {"pods": ["p"]},
    ):
        refused = the_hooks_answer({**facts, **wrong})
        assert isinstance(refused, str) and refused == the_services_answer({**facts, **wrong})
        assert refused.startswith(next(iter(wrong))), refused
    with pytest.raises(InvalidAttempt, match="tasks_per_node: a node runs at least one rank, got 0"):
        Attempt("j", 1, "u", tasks_per_node=0)


PLAIN = [  # what AttemptIn's schema plainly accepts
    {"job_id": "j", "attempt": 1, "user": "u"},
    {
        "job_id": "4711",
        "attempt": 2,
        "user": "alice",
        "vc": "a100",
        "status": "killed",
        "gpus": 8,
        "gpu_type": "A100",
        "nodes": ["gpu-07", "gpu-08"],
        "exit_code": 137,
        "signal": 9,
        "inputs": ["/data/imagenet"],
        "logs": ["slurm-4711.out"],
        "start_time": "2026-11-02T09:00:00Z",
        "end_time": "2026-11-02T11:30:00.250+02:00",
        "log": "ignored by the hook",
    },
    {"job_id": "j", "attempt": 1, "user": "u", "start_time": datetime(2026, 11, 2, 9, 0), "submit_time": None},
    {"job_id": "j", "attempt": 1, "user": "u", "start_time": "2026-11-02T10:00:00Z", "end_time": "2026-11-02T09:00:00Z"},
]
OTHERS = [  # what pydantic reads, or refuses
    {"job_id": "j", "attempt": 1, "user": "u", "start_time": "2026-11-02 09:00"},
    {"job_id": "j", "attempt": 1, "user": "u", "exit_code": 2**31},
    {"job_id": "j", "attempt": 1, "user": "u", "vc": "a\x00b"},
    {"job_id": "j", "attempt": 1, "user": "u", "gpus": True},
    {"job_id": "j", "attempt": 1, "user": "u", "nodes": ["gpu-01", ""]},
    {"job_id": "j", "attempt": 1, "user": "u", "status": "lost"},
    {"job_id": "j", "attempt": 1, "user": "u", "start_time": "yesterday"},
    {"job_id": "j" * 201, "attempt": 1, "user": "u"},
    {"job_id": "j", "attempt": 1, "user": "u", "partition": "gpu"},
]


def the_services_answer(facts: dict[str, Any]) -> Attempt | str:
    """What AttemptIn (the service's check) makes of ``facts``: the attempt, or the words
    the hook prints after "invalid attempt facts: "."""
    from pydantic import ValidationError

    from failclass.service.schemas import AttemptIn

    try:
        return AttemptIn.model_validate(facts).to_attempt()
    except ValidationError as exc:
        return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
    except InvalidAttempt as exc:
        return str(exc)


def the_hooks_answer(facts: dict[str, Any]) -> Attempt | str:
    try:
        return attempt_of(facts)
    except (InvalidFacts, InvalidAttempt) as exc:
        return str(exc)


@pytest.fixture
def cached_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """AttemptIn's JSON Schema, as the first hook keeps it in the cache."""
    monkeypatch.setenv("FAILCLASS_CACHE_DIR", str(tmp_path))
    attempt_of(PLAIN[0])
    (kept,) = tmp_path.glob("facts-*.json")
    schema: dict[str, Any] = json.loads(kept.read_bytes()[32:])
    return schema


@pytest.mark.parametrize(("facts", "plain"), [*((f, True) for f in PLAIN), *((f, False) for f in OTHERS)])
def test_the_hook_reads_the_facts_as_the_service_does(cached_schema: dict[str, Any], facts: dict[str, Any], plain: bool) -> None:
    """With the schema cached, the same attempt or the same words, whether the hook needed
    pydantic or not; the plain facts need it not."""
    assert the_hooks_answer(facts) == the_services_answer(facts)
    assert (plainly_valid(cached_schema, facts) is not None) == plain


TEXT = st.text(st.sampled_from("ab\x00\n:-Z09 "), max_size=5) | st.sampled_from(["", "x" * 200, "x" * 201, "x" * 2001])
TIMES = st.builds(
    "{}-{}-{}{}{}:{}:{}{}{}".format,
    st.sampled_from(["2026", "26", "0000"]),
    st.sampled_from(["11", "13", "1"]),
    st.sampled_from(["02", "31", "00"]),
    st.sampled_from(["T", "t", " "]),
    st.sampled_from(["09", "24", "23"]),
    st.sampled_from(["00", "60"]),
    st.sampled_from(["00", "59", "60"]),
    st.sampled_from(["", ".5", ".123456", ".1234567"]),
    st.sampled_from(["", "Z", "+02:00", "-00:30", "+24:00", "+0200"]),
)
INTEGERS = st.sampled_from([-(2**31) - 1, -(2**31), -1, 0, 1, 8, 2**31 - 1, 2**31]) | st.booleans()
VALUES = (
    TEXT | TIMES | INTEGERS | st.none() | st.lists(TEXT, max_size=3) | st.dictionaries(TEXT, TEXT, max_size=2) | st.datetimes()
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extra=st.dictionaries(st.sampled_from([*ATTEMPT_FIELDS, "log", "idempotency_key", "partition"]), VALUES, max_size=2))
def test_what_the_schema_plainly_accepts_the_service_accepts_alike(cached_schema: dict[str, Any], extra: dict[str, Any]) -> None:
    facts = {"job_id": "j", "attempt": 1, "user": "u", **extra}
    if plainly_valid(cached_schema, facts) is not None:
        assert the_hooks_answer(facts) == the_services_answer(facts)
