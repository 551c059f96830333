"""The policy file's ``notifications:`` section: the channels, which kinds of notice go
to which, and the limits on sending (de-duplication, a rate per job and kind, retries).
Declared on dataclasses and checked by failclass.schema like the rest of the policy: a
problem is refused as ``file: notifications.key.path: problem``.

Secrets (a Slack URL, a signing secret, an SMTP password) are never in the file: a
channel names the environment variable or the file that holds each (``*_env``,
``*_file``), read when a notice is sent (failclass.notify.channels), so that a secret
missing where the hook runs fails a delivery, which is retried and reported, and never a
decision."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from failclass.contracts import NOTICE_KINDS
from failclass.schema import Invalid, allowed

CHANNEL_TYPES = ("slack", "webhook", "email", "slurm")
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
SECRETS = ("url", "secret", "password")  # each read from <name>_env or <name>_file


class MissingSecret(Exception):
    """A channel's secret is not where the policy says it is."""


@dataclass(frozen=True)
class Channel:
    """Where notices go: a Slack incoming webhook, a generic JSON webhook, e-mail over SMTP,
    or the job itself on Slurm (``scontrol notify``, and its comment)."""

    type: str = allowed(choices=CHANNEL_TYPES)
    url: str | None = allowed(None, fullmatch=r"https?://\S+")  # a generic webhook's; Slack's is a secret: url_env
    url_env: str | None = allowed(None, fullmatch=ENV_NAME)
    url_file: str | None = None
    secret_env: str | None = allowed(None, fullmatch=ENV_NAME)  # signs webhook bodies (HMAC-SHA256)
    secret_file: str | None = None
    smtp_host: str | None = None
    smtp_port: int = allowed(25, ge=1, le=65535)
    starttls: bool = False
    username: str | None = None
    password_env: str | None = allowed(None, fullmatch=ENV_NAME)
    password_file: str | None = None
    sender: str | None = None
    to: tuple[str, ...] = ()
    to_user: str | None = allowed(None, fullmatch=r"[^{}\s]*\{user\}[^{}\s]*")  # "{user}@example.org": the job's owner
    comment: bool = False  # slurm: the notice into the job's comment too
    timeout_seconds: float = allowed(10, gt=0, le=300)

    def __post_init__(self) -> None:
        given = {name for name in ("url", "url_env", "url_file") if getattr(self, name)}
        webhook = self.type in ("slack", "webhook")
        if webhook and len(given) != 1:
            raise Invalid(f"a {self.type} channel needs one of url_env, url_file" + (", url" if self.type == "webhook" else ""))
        if self.type == "slack" and self.url:
            raise Invalid("a Slack webhook URL is its secret: give url_env or url_file, never the URL itself", "url")
        if not webhook and given:
            raise Invalid(f"a {self.type} channel has no URL", sorted(given)[0])
        if self.type == "email":
            if not self.smtp_host or not self.sender:
                raise Invalid("an email channel needs smtp_host and sender")
            if not self.to and not self.to_user:
                raise Invalid("an email channel needs to (addresses) or to_user")
            if (self.password_env or self.password_file) and not self.username:
                raise Invalid("a password needs a username", "username")
        for name in SECRETS:
            if getattr(self, f"{name}_env") and getattr(self, f"{name}_file"):
                raise Invalid(f"give {name}_env or {name}_file, not both", f"{name}_file")

    def secret(self, name: str) -> str | None:
        """The secret ``name`` (url, secret, password) from its variable or file; None
        where the channel names neither (and, for url, the URL the file gives)."""
        variable, file = getattr(self, f"{name}_env"), getattr(self, f"{name}_file")
        if variable:
            value = os.environ.get(variable, "").strip()
            if not value:
                raise MissingSecret(f"the environment variable {variable} (its {name}) is not set")
            return value
        if file:
            try:
                value = Path(file).read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as exc:
                raise MissingSecret(f"cannot read {file} (its {name}): {exc}") from None
            if not value:
                raise MissingSecret(f"{file} (its {name}) is empty")
            return value
        return getattr(self, name, None) if name == "url" else None


@dataclass(frozen=True)
class RateLimit:
    """At most ``per_job_and_kind`` notices of one kind about one job per channel in
    ``window_minutes``; more are dropped (counted, not sent)."""

    per_job_and_kind: int = allowed(3, ge=1)
    window_minutes: float = allowed(60, gt=0)


@dataclass(frozen=True)
class Retry:
    """A failed delivery is tried again after base * factor^(tries-1) seconds, capped,
    until ``max_tries``; then it is given up (status failed, its last error kept)."""

    max_tries: int = allowed(8, ge=1)
    base_seconds: float = allowed(30, ge=0)
    factor: float = allowed(2, ge=1)
    max_seconds: float = allowed(3600, ge=0)

    def delay(self, tries: int) -> float:
        return float(min(self.base_seconds * self.factor ** max(tries - 1, 0), self.max_seconds))


@dataclass(frozen=True)
class Notifications:
    """The ``notifications:`` section. ``routes`` maps a kind of notice to channel names;
    a kind without a route is not sent. ``dedup_hours``: a notice whose key was queued for a
    channel within this window is not queued again. ``hook_seconds``: how long `hook decide`
    spends delivering after its answer is printed (the rest waits for `failclass notify
    flush` or the service); 0 leaves it all queued."""

    channels: dict[str, Channel] = allowed({})
    routes: dict[str, tuple[str, ...]] = allowed({})
    dedup_hours: float = allowed(24, gt=0)
    rate: RateLimit = RateLimit()
    retry: Retry = Retry()
    hook_seconds: float = allowed(2, ge=0, le=60)

    def __post_init__(self) -> None:
        for kind, names in self.routes.items():
            if kind not in NOTICE_KINDS:
                raise Invalid(f"not a kind of notice; known: {list(NOTICE_KINDS)}", f"routes.{kind}")
            for index, name in enumerate(names):
                if name not in self.channels:
                    raise Invalid(f"{name!r} is no channel; channels: {sorted(self.channels)}", f"routes.{kind}[{index}]")

    def channels_for(self, kind: str) -> tuple[str, ...]:
        return self.routes.get(kind, ())
