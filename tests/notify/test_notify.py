"""Notices: the policy's notifications section, each channel against a real receiver (an
HTTP server, an SMTP server, scontrol as recorded), the outbox's de-duplication, rate
limit and retries on SQLite and PostgreSQL, and `hook decide` not held up by a receiver
that never answers."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli
from receivers import free_port, receiver
from service_server import running_service

from failclass.adapters.slurm import Scontrol
from failclass.attempts import Attempt
from failclass.classifier import Classifier
from failclass.contracts import Evidence, Notice, from_json, to_json
from failclass.notify.channels import SIGNATURE_HEADER, DeliveryFailed, EmailSender, SlurmSender, WebhookSender, verify
from failclass.notify.config import Channel, Notifications, RateLimit, Retry
from failclass.notify.delivery import deliver
from failclass.notify.notices import enqueue, notice_key
from failclass.policy.config import PolicyConfig, load_policy
from failclass.store.outbox import LEASE
from failclass.store.repository import Store
from failclass.usecases import report_attempt

CPU_OOM = ROOT / "corpora/produced/cpu_oom/cpu_oom__python_memoryerror__0.log"
T0 = datetime(2026, 11, 28, 9, 0, tzinfo=UTC)
EVIDENCE = (Evidence(12, "MemoryError"),)


def a_notice(job: str = "job-1", kind: Any = "hold", key: str | None = None) -> Notice:
    return Notice(
        kind, job, "alice", "cpu_oom", f"alice is on hold after job {job}", T0, key or notice_key(kind, job), evidence=EVIDENCE
    )


@contextmanager
def silent_receiver() -> Iterator[str]:
    """A port that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
    finally:
        listener.close()


def test_a_generic_webhook_gets_the_notice_signed_in_stripes_scheme(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOK_SECRET", "s3cret")
    with receiver() as got:
        channel = Channel("webhook", url=got.url, secret_env="HOOK_SECRET")
        WebhookSender(channel, clock=lambda: 1_764_320_000).send(a_notice(), timeout=5)
    ((headers, body),) = got.requests
    assert json.loads(body) == to_json(a_notice()) and from_json(Notice, json.loads(body)) == a_notice()
    expected = hmac.new(b"s3cret", b"1764320000." + body, hashlib.sha256).hexdigest()
    assert headers[SIGNATURE_HEADER.lower()] == f"t=1764320000,v1={expected}"
    assert verify("s3cret", headers[SIGNATURE_HEADER.lower()], body, now=1_764_320_100)
    assert not verify("other", headers[SIGNATURE_HEADER.lower()], body, now=1_764_320_100)
    assert not verify("s3cret", headers[SIGNATURE_HEADER.lower()], body + b" ", now=1_764_320_100)
    assert not verify("s3cret", headers[SIGNATURE_HEADER.lower()], body, now=1_764_320_000 + 301)  # a replay


def test_a_slack_webhook_gets_text_and_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    with receiver() as got:
        monkeypatch.setenv("SLACK_URL", got.url)
        notice = replace(a_notice(), message="a < b & c", nodes=("gpu-07",))
        WebhookSender(Channel("slack", url_env="SLACK_URL")).send(notice, timeout=5)
    ((headers, body),) = got.requests
    message = json.loads(body)
    assert SIGNATURE_HEADER.lower() not in headers  # no secret, no signature
    assert message["text"] == "failclass: user on hold: job job-1: a < b & c"
    assert [block["type"] for block in message["blocks"]] == ["header", "section", "section", "section", "context"]
    assert message["blocks"][1]["text"] == {"type": "mrkdwn", "text": "a &lt; b &amp; c"}
    assert {"type": "mrkdwn", "text": "*Nodes*\ngpu-07"} in message["blocks"][2]["fields"]
    assert message["blocks"][3]["text"]["text"] == "```12: MemoryError```"


def test_a_refusal_or_a_missing_secret_is_a_failed_delivery(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_SET", raising=False)
    with receiver() as got:
        got.statuses = [503]
        with pytest.raises(DeliveryFailed, match="HTTP 503: receiver says no"):
            WebhookSender(Channel("webhook", url=got.url)).send(a_notice(), timeout=5)
        with pytest.raises(DeliveryFailed, match=r"NOT_SET .* is not set"):
            WebhookSender(Channel("webhook", url=got.url, secret_env="NOT_SET")).send(a_notice(), timeout=5)


# -- a real SMTP server -----------------------------------------------------------------------


def test_email_reaches_a_local_smtp_server_with_login(tmp_path: Path) -> None:
    controller_module = pytest.importorskip("aiosmtpd.controller", reason="aiosmtpd (the dev extra) is not installed")
    from aiosmtpd.smtp import AuthResult

    received: list[Any] = []

    class Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            received.append((session.authenticated, envelope))
            return "250 Message accepted for delivery"

    def authenticator(server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
        return AuthResult(success=auth_data.login == b"failclass" and auth_data.password == b"pw")

    port = free_port()
    controller = controller_module.Controller(
        Handler(), hostname="127.0.0.1", port=port, authenticator=authenticator, auth_require_tls=False
    )
    controller.start()
    try:
        (tmp_path / "pw").write_text("pw\n")
        channel = Channel(
            "email", smtp_host="127.0.0.1", smtp_port=port, sender="failclass@cluster", to=("ops@cluster",),
            to_user="{user}@example.org", username="failclass", password_file=str(tmp_path / "pw"),
        )  # fmt: skip
        EmailSender(channel).send(a_notice(), timeout=5)
    finally:
        controller.stop()
    ((authenticated, envelope),) = received
    assert authenticated and envelope.mail_from == "failclass@cluster"
    assert envelope.rcpt_tos == ["ops@cluster", "alice@example.org"]
    text = envelope.content.decode()
    assert "Subject: failclass: user on hold: job job-1" in text and "X-Failclass-Notice: hold:job-1" in text
    assert "alice is on hold after job job-1" in text and "  line 12: MemoryError" in text


# -- Slurm ---------------------------------------------------------------------------------------


class RecordingScontrol(Scontrol):
    def __init__(self, fails: str | None = None) -> None:
        super().__init__()
        self.ran: list[tuple[str, ...]] = []
        self.fails = fails

    def run(self, *args: str) -> str:
        self.ran.append(args)
        if self.fails:
            raise RuntimeError(f"scontrol {' '.join(args)}: {self.fails}")
        return ""


def test_slurm_notifies_the_job_and_writes_its_comment() -> None:
    scontrol = RecordingScontrol()
    notice = replace(a_notice("4242", "idle_warning"), message='idle for 30 min "notebook"')
    SlurmSender(Channel("slurm", comment=True), scontrol).send(notice, timeout=5)
    assert scontrol.ran == [
        ("notify", "4242", 'failclass: idle GPUs: idle for 30 min "notebook"'),
        ("update", "jobid=4242", "comment=failclass: idle GPUs: idle for 30 min 'notebook'"),
    ]
    failing = RecordingScontrol(fails="Invalid job id specified")
    with pytest.raises(DeliveryFailed, match="Invalid job id specified"):
        SlurmSender(Channel("slurm"), failing).send(notice, timeout=5)
    assert len(failing.ran) == 1


# -- configuration -------------------------------------------------------------------------------


def write_policy(path: Path, section: str) -> Path:
    path.write_text(section)
    return path


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        (
            "notifications: {channels: {ops: {type: webhook, url: 'http://x/h', secret: abc}}}",
            "notifications.channels.ops: unknown keys ['secret']",
        ),
        (
            "notifications: {channels: {ops: {type: slack, url: 'https://hooks.slack.com/services/T/B/x'}}}",
            "notifications.channels.ops.url: a Slack webhook URL is its secret",
        ),
        (
            "notifications: {channels: {ops: {type: webhook, url: 'http://x/h'}}, routes: {hold: [mail]}}",
            "notifications.routes.hold[0]: 'mail' is no channel",
        ),
        ("notifications: {channels: {}, routes: {holds: []}}", "notifications.routes.holds: not a kind of notice"),
        (
            "notifications: {channels: {m: {type: email, smtp_host: h, sender: s}}}",
            "notifications.channels.m: an email channel needs to",
        ),
        ("notifications: {rate: {per_job_and_kind: 0}}", "notifications.rate.per_job_and_kind: 0 must be >= 1"),
        (
            "notifications: {channels: {w: {type: webhook, url_env: 'A-B'}}}",
            "notifications.channels.w.url_env: 'A-B' does not match",
        ),
    ],
)
def test_a_wrong_section_is_refused_with_its_key_path(tmp_path: Path, section: str, problem: str) -> None:
    policy = write_policy(tmp_path / "policy.yaml", section)
    checked = run_cli("policy", "check", str(policy))
    assert checked.returncode == 2 and f"{policy}: {problem}" in checked.stderr, checked.stderr


def test_a_section_loads_and_routes(tmp_path: Path) -> None:
    policy = write_policy(
        tmp_path / "p.yaml",
        "notifications:\n  channels:\n    ops: {type: slack, url_env: SLACK_URL, secret_file: /etc/failclass/slack}\n"
        "    job: {type: slurm, comment: true}\n  routes: {hold: [ops, job], suspect_node: [ops]}\n"
        "  rate: {per_job_and_kind: 2, window_minutes: 30}\n",
    )
    loaded = load_policy(policy).notifications
    assert loaded.channels_for("hold") == ("ops", "job") and loaded.channels_for("idle_warning") == ()
    assert loaded.rate == RateLimit(2, 30) and loaded.channels["job"] == Channel("slurm", comment=True)
    assert run_cli("policy", "check", str(policy)).returncode == 0
    assert load_policy().notifications == Notifications()  # the built-in policy sends nothing


# -- the outbox: de-duplication, rate limit, retries (SQLite and PostgreSQL) --------------------


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def store(database_url: str) -> Store:
    return Store.open(database_url)


def routed(url: str, **settings: Any) -> Notifications:
    channels = {"ops": Channel("webhook", url=url, timeout_seconds=5)}
    return Notifications(channels, {"hold": ("ops",), "idle_warning": ("ops",)}, **settings)


def test_a_key_is_queued_once_and_a_job_gets_its_share_of_a_kind(store: Store) -> None:
    settings = routed("http://127.0.0.1:9/h", rate=RateLimit(per_job_and_kind=2, window_minutes=60))
    assert enqueue(store, [a_notice()], settings, T0) == ["queued"]
    assert enqueue(store, [a_notice()], settings, T0 + timedelta(hours=23)) == ["duplicate"]
    warnings = [a_notice("job-1", "idle_warning", key=f"idle_warning:job-1:{n}") for n in range(3)]
    assert enqueue(store, warnings, settings, T0) == ["queued", "queued", "rate_limited"]
    assert enqueue(store, [warnings[2]], settings, T0 + timedelta(minutes=61)) == ["queued"]  # a new window
    assert enqueue(store, [a_notice("job-2", "suspect_node")], settings, T0) == []  # no route, nothing stored
    assert enqueue(store, [a_notice()], settings, T0 + timedelta(hours=24, seconds=1)) == ["queued"]
    assert [row["key"] for row in store.notices()] == [
        "hold:job-1", "idle_warning:job-1:0", "idle_warning:job-1:1", "idle_warning:job-1:2", "hold:job-1"
    ]  # fmt: skip


def test_a_failed_delivery_is_retried_with_backoff_then_given_up(store: Store) -> None:
    clock = Clock()
    with receiver() as got:
        got.statuses = [500, 502]
        settings = routed(got.url, retry=Retry(max_tries=3, base_seconds=30, factor=2, max_seconds=3600))
        enqueue(store, [a_notice("job-1"), a_notice("job-2")], settings, T0)
        first = deliver(store, settings, clock=clock)
        assert (first.sent, first.retrying) == (0, 2) and "HTTP 500: receiver says no" in first.errors[0]
        assert [row["next_try_at"] for row in store.notices()] == [T0 + timedelta(seconds=30)] * 2
        assert deliver(store, settings, clock=clock).sent == 0  # not due yet
        clock.now = T0 + timedelta(seconds=30)
        assert deliver(store, settings, clock=clock).sent == 2
    assert [(row["status"], row["tries"]) for row in store.notices()] == [("sent", 2), ("sent", 2)]
    assert len(got.requests) == 4

    with silent_receiver() as url:
        settings = replace(
            routed(url, retry=Retry(max_tries=2, base_seconds=0)),
            channels={"ops": Channel("webhook", url=url, timeout_seconds=0.3)},
        )
        enqueue(store, [a_notice("job-3")], settings, T0)
        assert deliver(store, settings, clock=clock).retrying == 1  # due again at once, but tried once a round
        gave_up = deliver(store, settings, clock=clock)
    assert gave_up.given_up == 1 and "TimeoutError" in gave_up.errors[0]
    (row,) = store.notices("failed")
    assert (row["job_id"], row["tries"]) == ("job-3", 2) and "TimeoutError" in row["last_error"]


def test_two_deliverers_never_send_one_notice_twice(store: Store) -> None:
    with receiver() as got:
        settings = routed(got.url)
        enqueue(store, [a_notice(f"job-{n}") for n in range(12)], settings, T0)
        rounds = [threading.Thread(target=deliver, args=(store, settings)) for _ in range(3)]
        for each in rounds:
            each.start()
        for each in rounds:
            each.join()
    sent = sorted(json.loads(body)["job_id"] for _, body in got.requests)
    assert sent == sorted(f"job-{n}" for n in range(12))
    assert {row["status"] for row in store.notices()} == {"sent"}


def test_a_hold_decided_in_the_store_queues_its_notice(store: Store, classifier: Classifier) -> None:
    held = load_policy()
    policy: PolicyConfig = replace(
        held,
        reasons={**held.reasons, "cpu_oom": {**held.reasons["cpu_oom"], "hold_after": 1}},
        notifications=routed("http://127.0.0.1:9/h"),
    )
    examined = classifier.examine_path(CPU_OOM)
    recorded = report_attempt(store, Attempt("oom-1", 1, "carol", nodes=("gpu-01",)), examined, policy, now=T0)
    assert recorded.decision is not None and recorded.decision.effects.hold == "cpu_oom"
    again = report_attempt(store, Attempt("oom-1", 1, "carol"), examined, policy, now=T0)  # the same attempt reported again
    assert again.duplicate
    (row,) = store.notices()
    assert (row["kind"], row["job_id"], row["user"], row["status"]) == ("hold", "oom-1", "carol", "queued")
    pending = store.claim_notice(T0)
    assert pending is not None and pending.notice.attempt_id == recorded.attempt_id
    assert pending.notice.message.startswith("carol is on hold for cpu_oom after job oom-1: ")
    assert pending.notice.evidence == recorded.decision.explanation.evidence[:5]
    assert store.claim_notice(T0) is None  # claimed: nobody else gets it while its lease runs
    taken_over = store.claim_notice(T0 + LEASE)  # its deliverer died: due again when the lease ends
    assert taken_over is not None and taken_over.id == pending.id


# -- hook decide is not held up ------------------------------------------------------------------


def test_hook_decide_answers_before_an_unanswering_receiver_and_flush_sends_later(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'f.db'}"
    decide = ["hook", "decide", "--json", "--database-url", store, "--log", str(CPU_OOM)]
    holding = "reasons: {cpu_oom: {hold_after: 1}}\n"
    plain = write_policy(tmp_path / "plain.yaml", holding)
    for user in ("bob", "carol"):  # the second, with the store made and the rules cached, is the baseline
        started = time.monotonic()
        baseline = run_cli(*decide, "--user", user, "--job-id", f"j-{user}", "--policy", str(plain))
        baseline_s = time.monotonic() - started
        assert baseline.returncode == 14, baseline.stderr

    with silent_receiver() as url:
        section = (
            f"notifications:\n  channels: {{ops: {{type: webhook, url: '{url}', timeout_seconds: 30}}}}\n"
            "  routes: {hold: [ops]}\n  hook_seconds: 1\n  retry: {base_seconds: 0}\n"
        )
        policy = write_policy(tmp_path / "notify.yaml", holding + section)
        started = time.monotonic()
        held = run_cli(*decide, "--user", "dave", "--job-id", "j1", "--policy", str(policy))
        held_s = time.monotonic() - started
    assert held.returncode == 14 and json.loads(held.stdout)["action"] == "hold", held.stderr
    assert "failclass notify: ops: job j1: TimeoutError" in held.stderr and "(queued again)" in held.stderr
    assert held_s < baseline_s + 1 + 1.5, (held_s, baseline_s)  # the receiver's 30 s never waited for

    with receiver() as got:
        section = section.replace(url, got.url)
        policy = write_policy(tmp_path / "notify.yaml", holding + section)
        flushed = run_cli("notify", "flush", "--database-url", store, "--policy", str(policy))
        again = run_cli("notify", "flush", "--database-url", store, "--policy", str(policy))
    assert flushed.returncode == 0 and flushed.stdout.strip() == "sent 1, to retry 0, given up 0", flushed.stderr
    assert again.stdout.strip() == "sent 0, to retry 0, given up 0"
    ((_, body),) = got.requests
    assert (json.loads(body)["kind"], json.loads(body)["job_id"]) == ("hold", "j1")


def test_notify_test_sends_a_sample_on_one_channel(tmp_path: Path) -> None:
    with receiver() as got:
        policy = write_policy(tmp_path / "p.yaml", f"notifications: {{channels: {{ops: {{type: webhook, url: '{got.url}'}}}}}}\n")
        sent = run_cli("notify", "test", "--channel", "ops", "--policy", str(policy))
        got.statuses = [500]
        refused = run_cli("notify", "test", "--channel", "ops", "--policy", str(policy))
    unknown = run_cli("notify", "test", "--channel", "nope", "--policy", str(policy))
    assert sent.returncode == 0 and sent.stdout.strip() == "ops: sent a sample notice (webhook)"
    assert json.loads(got.requests[0][1])["job_id"] == "test"
    assert refused.returncode == 1 and "error: ops: HTTP 500" in refused.stderr
    assert unknown.returncode == 2 and "no channel 'nope' in the policy; channels: ['ops']" in unknown.stderr


def test_the_readmes_example_section_loads(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    example = readme.split("### Notices", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    loaded = load_policy(write_policy(tmp_path / "readme.yaml", example)).notifications
    assert sorted(loaded.channels) == ["job", "mail", "ops-hook", "ops-slack"] and loaded.channels_for("hold") == (
        "ops-slack",
        "mail",
    )


@pytest.mark.e2e  # a real uvicorn
def test_the_service_answers_then_its_thread_sends_the_notice(tmp_path: Path) -> None:
    import httpx

    with receiver() as got:
        section = f"notifications: {{channels: {{ops: {{type: webhook, url: '{got.url}'}}}}, routes: {{hold: [ops]}}}}\n"
        policy = write_policy(tmp_path / "p.yaml", "reasons: {cpu_oom: {hold_after: 1}}\n" + section)
        with running_service(f"sqlite:///{tmp_path / 'f.db'}", tmp_path, "--policy", str(policy)) as base:
            facts = {"job_id": "svc-1", "attempt": 1, "user": "erin", "log": CPU_OOM.read_text()}
            answer = httpx.post(f"{base}/v1/attempts", json=facts, timeout=30)
            assert answer.status_code == 201 and answer.json()["decision"]["action"] == "hold", answer.text
            deadline = time.monotonic() + 20
            while not got.requests and time.monotonic() < deadline:
                time.sleep(0.1)
    ((_, body),) = got.requests
    sent = json.loads(body)
    assert (sent["kind"], sent["job_id"], sent["user"], sent["attempt_id"]) == (
        "hold",
        "svc-1",
        "erin",
        answer.json()["attempt_id"],
    )
