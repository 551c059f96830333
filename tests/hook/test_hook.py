"""`failclass hook`: exit codes per action, local store and remote service, the fallback
when the service is down, and the Slurm adapter's reading of what Slurm really prints."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli
from service_server import free_port, running_service

from failclass.adapters.slurm import Scontrol, attempt_from_job, comment_for, declared_inputs, parse_show_job
from failclass.attempts import Attempt
from failclass.classifier import Classifier
from failclass.policy.config import load_policy
from failclass.store.repository import Store
from failclass.usecases import report_attempt

SLURM = ROOT / "tests" / "data" / "slurm"
SYNTAX = ROOT / "corpora/produced/syntax_error/syntax_error__indentation__0.log"
NCCL = ROOT / "corpora/public/mpi_runtime_failure/llamafactory_allreduce_watchdog_8gpu.log"
MISSING = ROOT / "corpora/produced/incorrect_inputs/incorrect_inputs__missing_data_file__0.log"


def decide(store: str, *args: str) -> Any:
    return run_cli("hook", "decide", "--json", "--database-url", store, *args)


def test_exit_status_names_the_action(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'f.db'}"
    syntax = decide(store, "--job-id", "j-syntax", "--user", "alice", "--log", str(SYNTAX))
    assert syntax.returncode == 13, syntax.stderr
    assert json.loads(syntax.stdout)["explanation"]["reason"] == "syntax_error"
    codes = [
        decide(store, "--job-id", "j-nccl", "--attempt", str(n), "--user", "bob", "--log", str(NCCL)).returncode
        for n in range(1, 5)
    ]
    assert codes == [10, 10, 10, 13]
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"job_id": "j-facts", "attempt": 1, "user": "carol", "logs": [str(NCCL)], "nodes": ["gpu-3"]}))
    from_stdin = run_cli("hook", "decide", "--database-url", store, "--facts", "-", stdin=facts.read_bytes())
    assert from_stdin.returncode == 10 and from_stdin.stdout.startswith("retry: mpi_runtime_failure")


def test_usage_and_input_errors(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'f.db'}"
    assert decide(store, "--job-id", "j", "--user", "u").returncode == 2  # no log
    assert decide(store, "--user", "u", "--log", str(NCCL)).returncode == 2  # no job id
    missing = decide(store, "--job-id", "j", "--user", "u", "--log", str(tmp_path / "absent.log"))
    assert missing.returncode == 1 and "no such file" in missing.stderr


def test_admission_rejects_a_blacklisted_input(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'f.db'}"
    store = Store.open(url)
    examined = Classifier().examine_path(MISSING)
    for n, job in enumerate(("a", "a", "b", "c")):
        report_attempt(store, Attempt(job, n + 1, "u", inputs=("/nonexistent/data",)), examined, load_policy())
    refused = run_cli(
        "hook", "admit", "--json", "--database-url", url, "--job-id", "new", "--user", "v", "--input", "/nonexistent/data"
    )
    assert refused.returncode == 15 and json.loads(refused.stdout)["action"] == "reject"
    admitted = run_cli("hook", "admit", "--database-url", url, "--job-id", "new", "--user", "v", "--input", "/data/clean")
    assert admitted.returncode == 0 and admitted.stdout.strip() == "admit"


def test_remote_service_records_the_decision(tmp_path: Path) -> None:
    with running_service(f"sqlite:///{tmp_path / 'svc.db'}", tmp_path) as base:
        done = run_cli(
            "hook", "decide", "--json", "--service-url", base, "--job-id", "remote-1", "--user", "dana", "--log", str(NCCL)
        )
        assert done.returncode == 10, done.stderr
        assert "fallback" not in json.loads(done.stdout)
        import httpx

        (attempt,) = httpx.get(f"{base}/v1/jobs/remote-1").json()["attempts"]
        assert attempt["decision"]["action"] == "retry"


def test_service_down_falls_back_to_local_rules_without_endless_retries() -> None:
    down = f"http://127.0.0.1:{free_port()}"
    args = [
        "hook",
        "decide",
        "--json",
        "--service-url",
        down,
        "--timeout",
        "2",
        "--job-id",
        "x",
        "--user",
        "u",
        "--log",
        str(NCCL),
    ]
    first = run_cli(*args, "--attempt", "1")
    answer = json.loads(first.stdout)
    assert first.returncode == 10 and answer["fallback"].startswith("service unreachable")
    fourth = run_cli(*args, "--attempt", "4")  # the earlier three count as the same failure
    assert fourth.returncode == 13 and "budget" in json.loads(fourth.stdout)["explanation"]["message"]
    admitted = run_cli("hook", "admit", "--json", "--service-url", down, "--timeout", "2", "--job-id", "y", "--user", "u")
    assert admitted.returncode == 0 and "admitted unchecked" in json.loads(admitted.stdout)["fallback"]


def test_slurm_adapter_reads_what_slurm_prints() -> None:
    job = parse_show_job((SLURM / "show_job_in_epilog.txt").read_text())
    assert (job["JobState"], job["ExitCode"], job["Reason"], job["BatchHost"]) == ("COMPLETING", "1:0", "NonZeroExitCode", "vm")
    env = dict(line.split("=", 1) for line in (SLURM / "epilog_env.txt").read_text().splitlines())
    attempt = attempt_from_job(job, env, declared_inputs((SLURM / "batch_script.txt").read_text()))
    assert (attempt.job_id, attempt.attempt, attempt.user, attempt.vc, attempt.status) == ("1", 1, "root", "debug", "failed")
    assert (attempt.exit_code, attempt.signal, attempt.nodes, attempt.gpus) == (1, None, ("vm",), 0)
    assert attempt.inputs == ("/data/imagenet",)
    assert attempt.logs == ("/tmp/fc/slx/b/jobs/train-resnet-1.out",)
    assert attempt.start_time is not None and attempt.start_time.tzinfo is not None


class RecordingScontrol(Scontrol):
    def __init__(self) -> None:
        super().__init__()
        self.ran: list[tuple[str, ...]] = []

    def run(self, *args: str) -> str:
        self.ran.append(args)
        return ""


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"action": "retry", "backoff_seconds": 31.6}, [("requeue", "7"), ("update", "jobid=7", "StartTime=now+31")]),
        (
            {"action": "retry_elsewhere", "exclude_nodes": ["gpu-1", "gpu-2"]},
            [("requeue", "7"), ("update", "jobid=7", "ExcNodeList=gpu-1,gpu-2")],
        ),
        ({"action": "hold"}, [("requeuehold", "7")]),
        ({"action": "no_retry"}, [("requeuehold", "State=SpecialExit", "7")]),
    ],
)
def test_each_decision_becomes_scontrol_commands(answer: dict[str, Any], expected: list[tuple[str, ...]]) -> None:
    answer = {**answer, "explanation": {"reason": "r", "rule_id": "r.x", "message": "m"}}
    scontrol = RecordingScontrol()
    scontrol.act("7", answer)
    assert scontrol.ran[:-1] == expected
    assert scontrol.ran[-1] == ("update", "jobid=7", f"comment={comment_for(answer)}")
    audit = RecordingScontrol()
    assert audit.act("7", {**answer, "enforced": False}) == [] and audit.ran == []
    left = RecordingScontrol()
    left.act("7", {**answer, "action": "no_retry"}, no_retry="leave-failed")
    assert left.ran == []


def test_slurm_install_writes_what_slurm_runs(tmp_path: Path) -> None:
    done = run_cli(
        "hook",
        "slurm-install",
        str(tmp_path),
        "--slurm-conf",
        str(tmp_path / "slurm.conf"),
        "--database-url",
        "sqlite:////var/lib/failclass/f.db",
    )
    assert done.returncode == 0, done.stderr
    env = (tmp_path / "failclass.env").read_text()
    assert "FAILCLASS_DATABASE_URL=sqlite:////var/lib/failclass/f.db" in env and f"SLURM_CONF={tmp_path / 'slurm.conf'}" in env
    assert stat.S_IMODE((tmp_path / "failclass.env").stat().st_mode) == 0o600
    epilog = (tmp_path / "failclass-epilog.sh").read_text()
    assert "hook slurm-epilog" in epilog and (tmp_path / "failclass-epilog.sh").stat().st_mode & stat.S_IXUSR
    assert "function slurm_job_submit" in (tmp_path / "job_submit.lua").read_text()
    assert "EpilogSlurmctld=" in done.stdout and "JobSubmitPlugins=lua" in done.stdout
