"""Notices: telling people what failclass decided, without ever holding a decision up.

A decision that changes the cluster's memory (a user put on hold, an input blacklisted, a
node made suspect; later the idle watch's warnings and releases, hung jobs) gives notices
(failclass.contracts.Notice; failclass.notify.notices). The policy file's
``notifications:`` section (failclass.notify.config) routes each kind to channels:
Slack and generic webhooks (signed), e-mail over SMTP, Slurm's ``scontrol notify`` and
the job's comment (failclass.notify.channels).

The design is an outbox in the store (failclass.store.outbox):

1. the use case (failclass.usecases.report_attempt), after the store has recorded the
   decision, queues the notices in the store: one row per notice and channel, dropped
   when its key was queued within ``dedup_hours`` or the job had ``rate.per_job_and_kind``
   of that kind within ``rate.window_minutes``. Nothing is sent yet; no network is touched
   before the answer exists;
2. whoever answered delivers what is due, afterwards: `hook decide` and `slurm-epilog`
   after the answer is printed, for at most ``hook_seconds`` (each try bounded by what is
   left), the service in a background thread woken after each decision;
3. what is left, and every failed try (due again after the ``retry`` backoff, given up
   after ``retry.max_tries`` with its last error kept), `failclass notify flush` sends
   (from cron or a systemd timer beside the hook; the service's thread does it itself).

Delivery is at least once: a deliverer that dies after sending, before marking the row
sent, leaves it due again when its claim's lease ends.
"""
