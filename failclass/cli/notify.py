"""`failclass notify ...`: try a channel of the policy's ``notifications:``, and send the
notices the hook left queued (failclass.notify)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from failclass.cli.common import configured, database_option, records_at
from failclass.policy.config import load_policy

policy_option = click.option(
    "--policy",
    "policy_file",
    envvar="FAILCLASS_POLICY",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The policy file (default: the built-in policy): its notifications: section names the channels.",
)


@click.group()
def notify() -> None:
    """Notices of holds, blacklisted inputs and suspect nodes, sent to the channels the policy names."""


@notify.command("test")
@click.option("--channel", "name", required=True, help="A channel of the policy's notifications.channels.")
@policy_option
@click.pass_context
def notify_test(ctx: click.Context, name: str, policy_file: Path | None) -> None:
    """Send a sample notice on one channel, now, without the store. Exit status 0: sent;
    1: the channel refused it (its words on stderr); 2: no such channel, or a policy problem."""
    from failclass.notify.channels import DeliveryFailed, sender_for
    from failclass.notify.notices import sample_notice

    settings = configured(lambda: load_policy(policy_file)).notifications
    channel = settings.channels.get(name)
    if channel is None:
        raise click.UsageError(f"--channel: no channel {name!r} in the policy; channels: {sorted(settings.channels)}")
    try:
        sender_for(channel).send(sample_notice(datetime.now(UTC)), channel.timeout_seconds)
    except DeliveryFailed as exc:
        click.echo(f"error: {name}: {exc}", err=True)
        ctx.exit(1)
    click.echo(f"{name}: sent a sample notice ({channel.type})")


@notify.command("flush")
@database_option()
@policy_option
@click.option("--seconds", type=click.FloatRange(min=0, min_open=True), help="Stop after this long (default: when none is due).")
@click.pass_context
def notify_flush(ctx: click.Context, database_url: str | None, policy_file: Path | None, seconds: float | None) -> None:
    """Send every queued notice that is due (retries whose backoff has passed included).
    Exit status 0: all sent; 1: some try failed (each on stderr; queued again, or given up
    after the policy's retry.max_tries); 3: the store cannot be opened."""
    from failclass.notify.delivery import deliver

    settings = configured(lambda: load_policy(policy_file)).notifications
    with records_at(database_url) as store:
        done = deliver(store, settings, seconds)
    for error in done.errors:
        click.echo(f"error: {error}", err=True)
    click.echo(f"sent {done.sent}, to retry {done.retrying}, given up {done.given_up}")
    if done.errors:
        ctx.exit(1)
