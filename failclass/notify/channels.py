"""Sending one notice on one channel: a Slack incoming webhook (its ``text`` and Block Kit
``blocks``), a generic JSON webhook (the Notice contract object), e-mail over SMTP, or the
job itself on Slurm (``scontrol notify``, and the job's comment).

Webhook bodies are signed when the channel has a secret, as Stripe signs its webhooks:
the header ``Failclass-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`` over the bytes
``<t>.<body>``. A receiver recomputes the HMAC with the shared secret, compares it in
constant time, and refuses a ``t`` too far from its clock (a replay); ``verify`` does it."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from failclass.contracts import Notice, to_json
from failclass.limits import LIMITS
from failclass.notify.config import Channel, MissingSecret

if TYPE_CHECKING:
    from email.message import EmailMessage

SIGNATURE_HEADER = "Failclass-Signature"
TITLES = {
    "hold": "user on hold",
    "blacklisted_input": "input blacklisted",
    "suspect_node": "node suspect",
    "idle_warning": "idle GPUs",
    "release": "job released",
    "hung_job": "job hung",
    "repeat_idle": "repeatedly idle",
    "rightsizing": "right-sizing",
}


class DeliveryFailed(Exception):
    """A channel did not take the notice (its words); the delivery is tried again later."""


class Sender(Protocol):
    def send(self, notice: Notice, timeout: float) -> None: ...


def title(notice: Notice) -> str:
    return f"failclass: {TITLES.get(notice.kind, notice.kind)}: job {notice.job_id}"


# -- webhooks ------------------------------------------------------------------------------


def _slack_escaped(text: str) -> str:
    """Slack's mrkdwn takes &, < and > as markup: escaped as its documentation asks."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_body(notice: Notice) -> dict[str, Any]:
    """A Slack incoming webhook's message: ``text`` (what notifications show) and blocks
    (a header, the message, the facts as fields, the evidence as a code block)."""
    facts = [("Job", notice.job_id), ("User", notice.user), ("Reason", notice.reason)]
    facts += [("Nodes", ", ".join(notice.nodes))] if notice.nodes else []
    facts += [("Inputs", ", ".join(notice.inputs))] if notice.inputs else []
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": title(notice)[:150]}},
        {"type": "section", "text": {"type": "mrkdwn", "text": _slack_escaped(notice.message)[:3000]}},
        {"type": "section", "fields": [{"type": "mrkdwn", "text": f"*{k}*\n{_slack_escaped(v)[:1900]}"} for k, v in facts]},
    ]
    if notice.evidence:
        quoted = "\n".join(f"{e.line}: {e.text}" if e.line else e.text for e in notice.evidence)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"```{_slack_escaped(quoted)[:2990]}```"}})
    context = f"{notice.kind} · {notice.created_at.isoformat(timespec='seconds')}" + (
        f" · <{notice.link}>" if notice.link else ""
    )
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": context}]})
    return {"text": f"{title(notice)}: {notice.message}"[:3000], "blocks": blocks}


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The header's value for ``body`` sent at ``timestamp``."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify(secret: str, header: str, body: bytes, now: float, tolerance_s: float = 300) -> bool:
    """Whether ``header`` signs ``body`` with ``secret``, within ``tolerance_s`` of ``now``."""
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    if not parts.get("t", "").isdigit() or abs(now - int(parts["t"])) > tolerance_s:
        return False
    return hmac.compare_digest(signature(secret, int(parts["t"]), body), f"t={parts['t']},v1={parts.get('v1', '')}")


class WebhookSender:
    """POSTs the notice as JSON: Slack's message for a slack channel, the Notice object
    for a generic one (with the standard library's client: it loads in a tenth of the
    time httpx does, which the hook's few seconds for notices count)."""

    def __init__(self, channel: Channel, clock: Callable[[], float] = time.time) -> None:
        self.channel, self.clock = channel, clock

    def send(self, notice: Notice, timeout: float) -> None:
        body = json.dumps(slack_body(notice) if self.channel.type == "slack" else to_json(notice)).encode()
        headers = {"Content-Type": "application/json", "User-Agent": "failclass"}
        try:
            url, secret = self.channel.secret("url"), self.channel.secret("secret")
        except MissingSecret as exc:
            raise DeliveryFailed(str(exc)) from None
        if secret:
            headers[SIGNATURE_HEADER] = signature(secret, int(self.clock()), body)
        if not str(url).startswith(("http://", "https://")):
            raise DeliveryFailed(f"{self.channel.type} URL is not http(s): {str(url)[:40]!r}")
        request = urllib.request.Request(str(url), data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                status, said = answer.status, answer.read(300)
        except urllib.error.HTTPError as exc:
            status, said = exc.code, exc.read(300)
        except (OSError, ValueError) as exc:  # refused, unreachable, timed out; a URL urllib cannot use
            raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from None
        if status >= 300:
            raise DeliveryFailed(f"HTTP {status}: {' '.join(said.decode(errors='replace').split())[:300]}")


# -- e-mail --------------------------------------------------------------------------------


def email_text(notice: Notice) -> str:
    lines = [notice.message, "", f"job: {notice.job_id}", f"user: {notice.user}", f"reason: {notice.reason}"]
    lines += [f"nodes: {', '.join(notice.nodes)}"] if notice.nodes else []
    lines += [f"inputs: {', '.join(notice.inputs)}"] if notice.inputs else []
    if notice.evidence:
        lines += ["", "evidence:", *(f"  line {e.line}: {e.text}" if e.line else f"  {e.text}" for e in notice.evidence)]
    lines += ["", f"more: {notice.link}"] if notice.link else []
    return "\n".join(lines) + "\n"


class EmailSender:
    """One message over SMTP (STARTTLS and a login where the channel asks), to the channel's
    addresses and, with ``to_user``, the job's owner."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    def message(self, notice: Notice) -> EmailMessage:
        from email.message import EmailMessage

        channel = self.channel
        message = EmailMessage()
        message["Subject"] = title(notice)
        message["From"] = str(channel.sender)
        recipients = [*channel.to, *([channel.to_user.format(user=notice.user)] if channel.to_user else [])]
        message["To"] = ", ".join(dict.fromkeys(recipients))
        message["X-Failclass-Notice"] = notice.key
        message.set_content(email_text(notice))
        return message

    def send(self, notice: Notice, timeout: float) -> None:
        import smtplib
        import ssl

        channel = self.channel
        try:
            password = channel.secret("password")
            with smtplib.SMTP(str(channel.smtp_host), channel.smtp_port, timeout=timeout) as smtp:
                if channel.starttls:
                    smtp.starttls(context=ssl.create_default_context())
                if channel.username:
                    smtp.login(channel.username, password or "")
                smtp.send_message(self.message(notice))
        except (MissingSecret, smtplib.SMTPException, OSError) as exc:
            raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from None


# -- Slurm ---------------------------------------------------------------------------------


class SlurmSender:
    """``scontrol notify JOBID MESSAGE`` (the message reaches the job's output, where it
    runs), and with ``comment``, the job's comment, through failclass.adapters.slurm.Scontrol."""

    def __init__(self, channel: Channel, scontrol: Any = None) -> None:
        if scontrol is None:
            from failclass.adapters.slurm import Scontrol

            scontrol = Scontrol()
        self.channel, self.scontrol = channel, scontrol

    def send(self, notice: Notice, timeout: float) -> None:
        """Within scontrol's own limit (failclass.adapters.slurm.Scontrol.run), not ``timeout``."""
        message = f"failclass: {TITLES.get(notice.kind, notice.kind)}: {notice.message}"
        try:
            self.scontrol.run("notify", notice.job_id, message)
            if self.channel.comment:
                comment = message.replace('"', "'")[: LIMITS.slurm_comment_chars]
                self.scontrol.run("update", f"jobid={notice.job_id}", f"comment={comment}")
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            raise DeliveryFailed(str(exc)) from None


def sender_for(channel: Channel, scontrol: Any = None) -> Sender:
    if channel.type in ("slack", "webhook"):
        return WebhookSender(channel)
    if channel.type == "email":
        return EmailSender(channel)
    return SlurmSender(channel, scontrol)
