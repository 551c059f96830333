"""`failclass hook`: exit codes per action, local store and remote service, the fallback
when the service is down, and the Slurm adapter's reading of what Slurm really prints."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click
import pytest
from conftest import ROOT, run_cli
from failures import DATASET, examination
from service_server import free_port, running_service

from failclass.attempts import Attempt
from failclass.hook.remote import read_ends
from failclass.policy.config import load_policy
from failclass.store.repository import Store
from failclass.usecases import report_attempt

SYNTAX = ROOT / "corpora/produced/syntax_error/syntax_error__indentation__0.log"
NCCL = ROOT / "corpora/public/mpi_runtime_failure/llamafactory_allreduce_watchdog_8gpu.log"
PREEMPTED = ROOT / "corpora/public/job_preempted/SystemsGenetics_GEMmaker_242.log"
MULTIRANK = ROOT / "corpora/multirank/attempts"
INTERLEAVED = ROOT / "tests/data/ranks/torchrun_interleaved.log"  # rank 2 of 4 failed first; no host on its lines


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


def test_an_attempt_of_ranks_excludes_only_the_node_its_failure_started_on(tmp_path: Path) -> None:
    """Eight ranks on four nodes, a file per srun task (corpora/multirank): rank 7 aborted
    on node4 and the others lost it. With a policy that sends a core dump elsewhere as a
    node's fault, node4 alone is excluded and counted against, and the store keeps the origin."""
    attempt = MULTIRANK / "srun_files__abort_reported__r7of8__0"
    truth = json.loads((attempt / "truth.json").read_text())
    policy = tmp_path / "policy.yaml"
    policy.write_text("reasons:\n  core_dump: {action: retry_elsewhere, suspect_node: true}\n")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({**truth["facts"], "user": "dana", "logs": [str(attempt / f) for f in truth["files"]]}))
    store = f"sqlite:///{tmp_path / 'f.db'}"
    done = run_cli("hook", "decide", "--json", "--database-url", store, "--policy", str(policy), "--facts", str(facts))
    assert done.returncode == 11, done.stderr
    answer = json.loads(done.stdout)
    assert answer["explanation"]["reason"] == truth["reason"] == "core_dump"
    assert answer["exclude_nodes"] == answer["effects"]["implicated_nodes"] == ["node4"]
    (recorded,) = Store.open(store).job(truth["facts"]["job_id"])
    assert [node["node"] for node in Store.open(store).nodes(window_hours=24, min_jobs=2)] == ["node4"]
    assert (recorded.tasks_per_node, recorded.origin_rank, recorded.origin_node) == (2, 7, "node4")


def test_tasks_per_node_and_pods_place_the_ranks(tmp_path: Path) -> None:
    """A torchrun log whose lines name no host: --node and --tasks-per-node place its origin
    rank (2 of 4) on the second node; the pods are recorded as given."""
    store = f"sqlite:///{tmp_path / 'f.db'}"
    nodes = ("--node", "gpu-01", "--node", "gpu-02")
    pods = ("--pod", "train-worker-0=gpu-01", "--pod", "train-worker-1=gpu-02")
    done = decide(store, "--job-id", "tpn", "--user", "u", *nodes, "--tasks-per-node", "2", *pods, "--log", str(INTERLEAVED))
    assert done.returncode == 13, done.stderr
    (recorded,) = Store.open(store).job("tpn")
    assert (recorded.origin_rank, recorded.origin_node, recorded.tasks_per_node) == (2, "gpu-02", 2)
    assert recorded.pods == {"train-worker-0": "gpu-01", "train-worker-1": "gpu-02"}
    assert decide(store, "--job-id", "bad", "--user", "u", "--tasks-per-node", "0", "--log", str(INTERLEAVED)).returncode == 2
    twice = decide(store, "--job-id", "bad", "--user", "u", "--pod", "p=gpu-01", "--pod", "p=gpu-02", "--log", str(INTERLEAVED))
    assert twice.returncode == 2 and "each pod once" in twice.stderr
    facts = json.dumps({"job_id": "bad", "user": "u", "tasks_per_node": 0, "logs": [str(INTERLEAVED)]}).encode()
    refused = run_cli("hook", "decide", "--database-url", store, "--facts", "-", stdin=facts)
    assert refused.returncode == 2 and "tasks_per_node: a node runs at least one rank, got 0" in refused.stderr
    assert Store.open(store).job("bad") == []


def test_admission_rejects_a_blacklisted_input(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'f.db'}"
    store = Store.open(url)
    examined = examination("missing_input")
    for n, job in enumerate(("a", "a", "b", "c")):
        report_attempt(store, Attempt(job, n + 1, "u", inputs=(DATASET,)), examined, load_policy())
    refused = run_cli("hook", "admit", "--json", "--database-url", url, "--job-id", "new", "--user", "v", "--input", DATASET)
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


def test_service_down_and_no_attempt_number_grants_no_retry_it_cannot_count() -> None:
    """Five failures in a row, the service down and no --attempt: the fallback cannot count
    them, so none gets a retry that spends the budget (it would grant them forever); a
    preemption, which spends none, is still retried."""
    down = f"http://127.0.0.1:{free_port()}"
    args = ["hook", "decide", "--json", "--service-url", down, "--timeout", "2", "--job-id", "uncounted", "--user", "u"]
    runs = [run_cli(*args, "--log", str(NCCL)) for _ in range(5)]
    assert [r.returncode for r in runs] == [13] * 5, [r.stderr for r in runs]
    answer = json.loads(runs[-1].stdout)
    assert answer["explanation"]["message"].startswith("attempt number unknown: the retry budget (3) cannot be counted")
    assert answer["explanation"]["counters"]["failure_of_signature"] is None
    assert "the attempt number is unknown" in answer["fallback"]
    preempted = run_cli(*args, "--log", str(PREEMPTED))
    assert preempted.returncode == 10 and json.loads(preempted.stdout)["explanation"]["reason"] == "job_preempted"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real service without tokens, for the module."""
    workdir = tmp_path_factory.mktemp("service")
    with running_service(f"sqlite:///{workdir / 'svc.db'}", workdir) as base:
        yield base


def on_service(service: str, job: str, *args: str) -> Any:
    return run_cli("hook", "decide", "--json", "--service-url", service, "--job-id", job, "--user", "u", *args)


def test_a_gzip_log_reaches_the_service_as_its_text(service: str, tmp_path: Path) -> None:
    packed = tmp_path / "train.log.gz"
    packed.write_bytes(gzip.compress(NCCL.read_bytes()))
    remote = on_service(service, "gz-1", "--log", str(packed))
    local = decide(f"sqlite:///{tmp_path / 'f.db'}", "--job-id", "gz-1", "--user", "u", "--log", str(packed))
    assert remote.returncode == local.returncode == 10, remote.stderr
    found, expected = json.loads(remote.stdout)["classification"], json.loads(local.stdout)["classification"]
    assert (found["rule_id"], found["evidence"]) == (expected["rule_id"], expected["evidence"])
    assert found["rule_id"] == "mpi_runtime_failure.nccl_watchdog_timeout"


def test_the_ends_sent_are_read_as_the_classifier_reads_them(tmp_path: Path) -> None:
    """A plain log (read from its end) and the same log gzipped (streamed) give the same end."""
    text = b"".join(b"step %d loss 0.5\n" % n for n in range(200_000)) + NCCL.read_bytes()
    plain, packed = tmp_path / "a.log", tmp_path / "b.log.gz"
    plain.write_bytes(text)
    packed.write_bytes(gzip.compress(text))
    end = text[-(1 << 10) :].decode()
    assert read_ends([plain], 1 << 10) == read_ends([packed], 1 << 10) == end
    assert read_ends([plain, packed], 2 << 10) == f"{end}\n{end}"


@pytest.mark.parametrize("job", ["team-a/train-resnet", "team-a/run #1?x=%2F&y"])
def test_job_ids_with_slashes_and_url_characters_are_counted(service: str, job: str) -> None:
    """A Kubernetes namespace/name job id: the hook asks the service for the job's attempts
    (GET /v1/jobs/{id}, the id quoted) so that the next failure is attempt 2, not a second
    report of attempt 1 under the same idempotency key."""
    first = on_service(service, job, "--log", str(NCCL))
    second = on_service(service, job, "--log", str(SYNTAX))
    assert (first.returncode, second.returncode) == (10, 13), second.stderr
    import httpx

    for path in (quote(job, safe=""), quote(job, safe="/")):
        attempts = httpx.get(f"{service}/v1/jobs/{path}").json()["attempts"]
        assert [(a["job_id"], a["attempt"]) for a in attempts] == [(job, 1), (job, 2)]


def test_the_service_places_the_origin_of_the_ranks_the_hook_sends(service: str) -> None:
    """The hook sends its facts and the log's end; the service reads the interleaved ranks
    and records the origin on the node the facts place it."""
    nodes = ("--node", "gpu-01", "--node", "gpu-02", "--tasks-per-node", "2")
    done = on_service(service, "ranks-remote", *nodes, "--pod", "worker-1=gpu-02", "--log", str(INTERLEAVED))
    assert done.returncode == 13, done.stderr
    import httpx

    (attempt,) = httpx.get(f"{service}/v1/jobs/ranks-remote").json()["attempts"]
    assert (attempt["origin_rank"], attempt["origin_node"], attempt["tasks_per_node"]) == (2, "gpu-02", 2)
    assert attempt["pods"] == {"worker-1": "gpu-02"}


def test_exit_code_0_is_a_passed_attempt_recorded_without_a_decision(service: str, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'f.db'}"
    passed = decide(store, "--job-id", "ok", "--user", "u", "--exit-code", "0", "--log", str(NCCL))
    assert passed.returncode == 0, passed.stderr
    assert json.loads(passed.stdout)["action"] == "recorded" and "explanation" not in json.loads(passed.stdout)
    (recorded,) = Store.open(store).job("ok")
    assert (recorded.status, recorded.decision) == ("passed", None)
    failed = decide(store, "--job-id", "bad", "--user", "u", "--exit-code", "0", "--status", "failed", "--log", str(NCCL))
    assert failed.returncode == 10 and Store.open(store).job("bad")[0].status == "failed"
    killed = decide(store, "--job-id", "killed", "--user", "u", "--status", "killed", "--log", str(NCCL))
    assert killed.returncode == 10 and Store.open(store).job("killed")[0].status == "killed"
    said_passed = decide(store, "--job-id", "said", "--user", "u", "--exit-code", "1", "--status", "passed", "--log", str(NCCL))
    assert said_passed.returncode == 0 and Store.open(store).job("said")[0].status == "passed"
    remote = on_service(service, "ok-remote", "--exit-code", "0", "--log", str(NCCL))
    assert remote.returncode == 0 and json.loads(remote.stdout)["action"] == "recorded", remote.stderr
    import httpx

    (attempt,) = httpx.get(f"{service}/v1/jobs/ok-remote").json()["attempts"]
    assert (attempt["status"], attempt["decision"]) == ("passed", None)


def test_a_duplicate_says_so_and_shows_the_recorded_attempt(service: str, tmp_path: Path) -> None:
    """The same attempt reported again answers the first answer, says it is a duplicate and
    does not name the new log as if it had spoken."""
    store = f"sqlite:///{tmp_path / 'f.db'}"
    first = json.loads(decide(store, "--job-id", "d", "--attempt", "1", "--user", "u", "--log", str(NCCL)).stdout)
    again = decide(store, "--job-id", "d", "--attempt", "1", "--user", "u", "--log", str(SYNTAX))
    answer = json.loads(again.stdout)
    assert again.returncode == 10 and answer["duplicate"] is True and "log" not in answer
    assert (answer["attempt_id"], answer["classification"]) == (first["attempt_id"], first["classification"])
    assert first["log"] == str(NCCL) and "duplicate" not in first
    text = run_cli(
        "hook", "decide", "--database-url", store, "--job-id", "d", "--attempt", "1", "--user", "u", "--log", str(NCCL)
    )
    assert text.returncode == 10 and "note: duplicate: this attempt was recorded before" in text.stdout
    sent = [on_service(service, "dup-remote", "--attempt", "1", "--log", str(NCCL)) for _ in range(2)]
    assert [s.returncode for s in sent] == [10, 10]
    assert "duplicate" not in json.loads(sent[0].stdout) and json.loads(sent[1].stdout)["duplicate"] is True


# What a decision on a local store must not load: the ORM and migrations (the driver
# records), pydantic (the facts are checked against their cached schema), the service,
# an HTTP client, the model's numpy (for a log a rule explains) and the training stack.
HEAVY = {
    "sqlalchemy",
    "alembic",
    "pydantic",
    "pydantic_core",
    "fastapi",
    "httpx",
    "numpy",
    "sklearn",
    "torch",
}


def test_decide_on_a_local_store_loads_only_what_it_needs(database_url: str, tmp_path: Path) -> None:
    """The hook runs once per finished job: on a store already at the newest schema, with
    the rules and the facts' schema cached by the run before, it loads the database driver
    and Hyperscan and nothing of HEAVY, on SQLite and on PostgreSQL (`python -X importtime`
    lists every module loaded)."""
    env = {**os.environ, "FAILCLASS_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "failclass.cli", "hook", "decide", "--database-url", database_url]
    first = [*command, "--job-id", "j-0", "--user", "alice", "--log", str(SYNTAX)]  # migrates the store, fills the cache
    assert subprocess.run(first, capture_output=True, cwd=ROOT, env=env, check=False).returncode == 13
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *command[1:], "--job-id", "j-1", "--user", "bob", "--log", str(SYNTAX)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
    )
    assert done.returncode == 13 and done.stdout.startswith("no_retry: syntax_error"), done.stderr[-2000:]
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    driver = "psycopg" if database_url.startswith("postgresql") else "sqlite3"
    assert {"failclass.store.direct", driver, "hyperscan"} <= loaded
    assert not loaded & HEAVY, sorted(loaded & HEAVY)
    (recorded,) = Store.open(database_url).job("j-1")
    assert recorded.user == "bob" and recorded.decision is not None and recorded.decision.action == "no_retry"


def test_the_hook_on_a_service_needs_no_home(service: str, tmp_path: Path) -> None:
    """HOME not a folder (nowhere to cache the compiled rules): the hook still decides."""
    home = tmp_path / "home"
    home.write_text("a file")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("FAILCLASS_", "XDG_"))}
    command = [sys.executable, "-m", "failclass.cli", "hook", "decide", "--service-url", service, "--user", "u"]
    command += ["--job-id", "homeless", "--log", str(NCCL)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env={**clean, "HOME": str(home)}, check=False)
    assert done.returncode == 10 and done.stderr == "", done.stderr
    if os.geteuid() == 0:  # and a user without a home at all: no HOME, no passwd entry
        del clean["HOME"]
        command[command.index("homeless")] = "homeless-2"
        as_4242 = ["setpriv", "--reuid=4242", "--regid=4242", "--clear-groups"]
        done = subprocess.run([*as_4242, *command], capture_output=True, text=True, cwd=ROOT, env=clean, check=False)
        assert done.returncode == 10 and done.stderr == "", done.stderr


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


@pytest.fixture(scope="module")
def guarded_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A real service that wants a write token; the token also written to a 0600 file."""
    workdir = tmp_path_factory.mktemp("guarded")
    created = run_cli("token", "create", "scheduler", "--scopes", "read,write", "--file", str(workdir / "tokens.json"))
    assert created.returncode == 0, created.stderr
    token_file = workdir / "token"
    token_file.write_text(created.stdout.strip() + "\n")
    token_file.chmod(0o600)
    with running_service(f"sqlite:///{workdir / 'svc.db'}", workdir, "--tokens-file", str(workdir / "tokens.json")) as base:
        yield {"base": base, "token": created.stdout.strip(), "token_file": token_file}


def remote(service: dict[str, Any], job: str, *args: str, env: dict[str, str] | None = None) -> Any:
    command = [sys.executable, "-m", "failclass.cli", "hook", "decide", "--json", "--service-url", service["base"]]
    command += ["--job-id", job, "--user", "erin", "--log", str(NCCL), *args]
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FAILCLASS_")}
    return subprocess.run(
        command, capture_output=True, text=True, cwd=ROOT, env={**clean, **(env or {})}, timeout=300, check=False
    )


def test_the_token_comes_from_a_file_or_the_environment(guarded_service: dict[str, Any]) -> None:
    refused = remote(guarded_service, "tok-0")
    assert refused.returncode == 2 and "401" in refused.stderr
    from_file = remote(guarded_service, "tok-1", "--token-file", str(guarded_service["token_file"]))
    assert from_file.returncode == 10, from_file.stderr
    assert "fallback" not in json.loads(from_file.stdout)
    from_env = remote(guarded_service, "tok-2", env={"FAILCLASS_TOKEN": guarded_service["token"]})
    assert from_env.returncode == 10 and "fallback" not in json.loads(from_env.stdout), from_env.stderr
    empty = guarded_service["token_file"].with_name("empty")
    empty.write_text("\n")
    unusable = remote(guarded_service, "tok-3", "--token-file", str(empty))
    assert unusable.returncode == 2 and "is empty" in unusable.stderr and "Traceback" not in unusable.stderr


@contextmanager
def dropping_first_connection(target: str) -> Iterator[str]:
    """A TCP relay to ``target`` that closes the first connection unanswered (a service
    restarting), then relays; bounded by the test's lifetime."""
    host, port = target.removeprefix("http://").split(":")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop, accepted = threading.Event(), []

    def pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def serve() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            accepted.append(client)
            if len(accepted) == 1:
                client.recv(65536)
                client.close()
                continue
            upstream = socket.create_connection((host, int(port)))
            for ends in ((client, upstream), (upstream, client)):
                threading.Thread(target=pipe, args=ends, daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def test_a_failed_service_call_is_tried_once_more_before_the_fallback(guarded_service: dict[str, Any]) -> None:
    with dropping_first_connection(guarded_service["base"]) as relay:
        done = remote({**guarded_service, "base": relay}, "flaky-1", "--token-file", str(guarded_service["token_file"]))
    answer = json.loads(done.stdout)
    assert done.returncode == 10 and "fallback" not in answer, done.stderr
    import httpx

    headers = {"Authorization": f"Bearer {guarded_service['token']}"}
    (attempt,) = httpx.get(f"{guarded_service['base']}/v1/jobs/flaky-1", headers=headers).json()["attempts"]
    assert attempt["decision"]["action"] == "retry"  # recorded by the service on the second try


def test_admit_lists_only_its_own_options_and_every_option_says_what_it_is() -> None:
    admit_help = run_cli("hook", "admit", "--help").stdout
    for decide_only in ("--log", "--exit-code", "--status", "--signal", "--attempt", "--node", "--start", "--end"):
        assert decide_only not in admit_help
    assert "--log" in run_cli("hook", "decide", "--help").stdout
    from failclass.cli.main import main

    hook = main.commands["hook"]
    assert isinstance(hook, click.Group)
    silent = [
        f"{name} {option.opts[0]}"
        for name, command in hook.commands.items()
        for option in command.params
        if isinstance(option, click.Option) and not option.help
    ]
    assert silent == []


@pytest.mark.parametrize(
    ("facts", "args", "says"),
    [
        (None, ("--exit-code", "99999999999999999999"), "not in the range"),
        ('{"job_id": "bad-1", "user": "u", "logs": [', (), "--facts: not JSON"),
        ('["not", "an", "object"]', (), "expected a JSON object"),
        ('{"exit_code": "1"}', (), "exit_code: expected an integer, got '1'"),
        ('{"exit_code": 99999999999999999999}', (), "exit_code: Input should be less than or equal to 2147483647"),
        ('{"vc": "a\\u0000b"}', (), "vc: String should match pattern"),
    ],
)
def test_bad_facts_are_usage_errors_and_nothing_is_recorded(
    tmp_path: Path, facts: str | None, args: tuple[str, ...], says: str
) -> None:
    store = f"sqlite:///{tmp_path / 'f.db'}"
    base = ["--facts", "-"] if facts is not None else []
    done = run_cli(
        "hook",
        "decide",
        "--database-url",
        store,
        *base,
        "--job-id",
        "bad-1",
        "--user",
        "u",
        "--log",
        str(NCCL),
        *args,
        stdin=facts.encode() if facts is not None else None,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert says in done.stderr and "Traceback" not in done.stderr
    if (tmp_path / "f.db").exists():
        assert Store.open(store).job("bad-1") == []
