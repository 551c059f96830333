"""`failclass policy check`: an operator's policy file checked as the hook and the service
load it (every key, type and bound, every reason and rule id), before it is deployed."""

from __future__ import annotations

from pathlib import Path

import click

from failclass.cli.common import configured, ruleset
from failclass.policy.config import load_policy


@click.group()
def policy() -> None:
    """The retry policy (failclass/data/policy/default.yaml and an operator's file over it)."""


@policy.command("check")
@click.argument("policy_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_context
def policy_check(ctx: click.Context, policy_file: Path) -> None:
    """Check POLICY_FILE. Exit status 0: it loads (one line says so); 2: one line
    `FILE: key.path: problem`."""
    rules = ruleset(ctx)
    loaded = configured(lambda: load_policy(policy_file, set(rules.taxonomy.reasons), {rule.id for rule in rules.rules}))
    click.echo(f"{policy_file}: ok (mode {loaded.mode}, over the built-in policy)")
