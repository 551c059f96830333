"""Delivering the queued notices (the design: the package's docstring, failclass.notify)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from failclass.notify.channels import DeliveryFailed, Sender, sender_for
from failclass.notify.config import Notifications

if TYPE_CHECKING:
    from failclass.store.outbox import Outbox


@dataclass
class Delivered:
    """What one round of delivery did."""

    sent: int = 0
    retrying: int = 0
    given_up: int = 0
    errors: list[str] = field(default_factory=list)  # "channel: job: error", one per failed try


def deliver(
    store: Outbox,
    settings: Notifications,
    seconds: float | None = None,
    senders: Mapping[str, Sender] | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Delivered:
    """Send the notices due now, one at a time and each once, until none is due or
    ``seconds`` have passed (None: no limit); each try waits at most what is left of them.
    A failed try is due again after the policy's backoff, or given up after its last try."""
    senders = dict(senders or {})
    done = Delivered()
    deadline = None if seconds is None else time.monotonic() + seconds
    tried: list[int] = []  # a notice is tried once a round, however soon its retry is due
    while deadline is None or time.monotonic() < deadline:
        pending = store.claim_notice(clock(), tried)
        if pending is None:
            break
        tried.append(pending.id)
        channel = settings.channels.get(pending.channel)
        left = None if deadline is None else max(deadline - time.monotonic(), 0.1)
        try:
            if channel is None:
                raise DeliveryFailed(f"no channel {pending.channel!r} in the policy now")
            sender = senders.setdefault(pending.channel, sender_for(channel))
            sender.send(pending.notice, channel.timeout_seconds if left is None else min(channel.timeout_seconds, left))
        except DeliveryFailed as exc:
            tries = pending.tries + 1
            retry_at = clock() + timedelta(seconds=settings.retry.delay(tries)) if tries < settings.retry.max_tries else None
            store.notice_failed(pending, str(exc), retry_at)
            done.errors.append(f"{pending.channel}: job {pending.notice.job_id}: {exc}")
            if retry_at is None:
                done.given_up += 1
            else:
                done.retrying += 1
            continue
        store.notice_sent(pending, clock())
        done.sent += 1
    return done


class DeliveryThread:
    """The service's deliverer: a daemon thread that delivers whenever it is woken (after
    a decision queued notices) and every ``interval_s`` (retries that came due)."""

    def __init__(self, store: Outbox, settings: Notifications, interval_s: float = 30) -> None:
        self.store, self.settings, self.interval_s = store, settings, interval_s
        self._wake, self._stop = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._run, name="failclass-notify", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=self.interval_s)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval_s)
            self._wake.clear()
            try:
                deliver(self.store, self.settings, seconds=self.interval_s)
            except Exception as exc:  # a store that is down now: the next round tries again
                print(f"failclass notify: delivery round failed: {type(exc).__name__}: {exc}", file=sys.stderr)


def deliver_after_answer(store: Outbox, settings: Notifications) -> Delivered:
    """After a command's answer: the notices due, sent for at most the policy's
    ``hook_seconds`` (nothing without a route). What is left stays queued for `failclass
    notify flush` or the service."""
    if not settings.routes or not settings.hook_seconds:
        return Delivered()
    return deliver(store, settings, settings.hook_seconds)
