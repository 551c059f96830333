"""The attempt model is the one check of attempt facts: an attempt that ends before it
starts is refused by the library, by the hook (exit 2, naming the field) and by the
service (422 naming body.end_time: tests/service/test_api_contract.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from failclass.attempts import Attempt, InvalidAttempt

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
