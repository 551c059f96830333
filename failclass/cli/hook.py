"""`failclass hook ...`: the scheduler's side (exit codes in failclass.hook.backends)."""

from __future__ import annotations

import functools
import json
import os
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from failclass.attempts import Attempt
from failclass.cli.common import classifier as build_classifier
from failclass.errors import ConfigError, InputError, ServiceRefused
from failclass.hook.backends import LocalBackend, RemoteBackend, exit_code
from failclass.policy.config import load_policy

backend_options = [
    click.option("--service-url", envvar="FAILCLASS_SERVICE_URL", help="A failclass service; default: the local store."),
    click.option("--token", envvar="FAILCLASS_SERVICE_TOKEN", help="API token for the service (write scope)."),
    click.option("--timeout", default=10.0, show_default=True, help="Seconds to wait for the service."),
    click.option("--database-url", envvar="FAILCLASS_DATABASE_URL", help="The local store (default: the service's SQLite file)."),
    click.option(
        "--policy", "policy_file", envvar="FAILCLASS_POLICY", type=click.Path(exists=True, dir_okay=False, path_type=Path)
    ),
]
fact_options = [
    click.option("--facts", type=click.File("r"), help="Attempt facts as JSON ('-' for stdin); options override."),
    click.option("--job-id"),
    click.option("--attempt", "attempt_no", type=int, help="Attempt number (default: the one after those recorded)."),
    click.option("--user"),
    click.option("--vc"),
    click.option("--gpus", type=int),
    click.option("--gpu-type"),
    click.option("--node", "nodes", multiple=True),
    click.option("--exit-code", type=int),
    click.option("--signal", type=int),
    click.option("--input", "inputs", multiple=True, help="A declared input path (repeatable)."),
    click.option("--start", "start_time", type=click.DateTime(["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S"])),
    click.option("--end", "end_time", type=click.DateTime(["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S"])),
    click.option(
        "--log", "logs", multiple=True, type=click.Path(dir_okay=False, path_type=Path), help="A log file (repeatable)."
    ),
]


def with_options(options: list[Any]) -> Any:
    def apply(function: Any) -> Any:
        for option in reversed(options):
            function = option(function)
        return function

    return apply


def _aware(value: Any) -> datetime | None:
    if value is None:
        return None
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment if moment.tzinfo else moment.astimezone()


def attempt_from(facts: dict[str, Any], options: dict[str, Any], chosen: LocalBackend | RemoteBackend) -> Attempt:
    merged = {**facts, **{k: v for k, v in options.items() if v not in (None, ())}}
    if "attempt_no" in merged:
        merged["attempt"] = merged.pop("attempt_no")
    for key in ("nodes", "inputs", "logs"):
        merged[key] = tuple(str(v) for v in merged.get(key, ()))
    for key in ("submit_time", "start_time", "end_time"):
        merged[key] = _aware(merged.get(key))
    if not merged.get("job_id") or not merged.get("user"):
        raise click.UsageError("the attempt needs --job-id and --user (or both in --facts)")
    if not merged.get("attempt"):
        merged["attempt"] = chosen.next_attempt(str(merged["job_id"]))
    try:
        return Attempt(**merged)
    except (TypeError, ValueError) as exc:
        raise click.UsageError(f"invalid attempt facts: {exc}") from None


@dataclass(frozen=True)
class BackendChoice:
    """Where decisions are made: a failclass service, else the local store."""

    service_url: str | None
    token: str | None
    timeout: float
    database_url: str | None
    policy_file: Path | None

    def open(self, ctx: click.Context) -> LocalBackend | RemoteBackend:
        try:
            policy = load_policy(self.policy_file)
        except ConfigError as exc:
            raise click.UsageError(str(exc)) from None
        classifier = build_classifier(ctx, with_model=True)
        if self.service_url:
            return RemoteBackend(self.service_url, self.token, self.timeout, classifier, policy)
        from failclass.store.repository import default_database_url

        return LocalBackend(self.database_url or default_database_url(), classifier, policy)


def with_backend(function: Any) -> Any:
    """The backend options, handed to the command as one ``choice`` argument."""

    @functools.wraps(function)
    def command(
        *args: Any,
        service_url: str | None,
        token: str | None,
        timeout: float,
        database_url: str | None,
        policy_file: Path | None,
        **kwargs: Any,
    ) -> Any:
        return function(*args, choice=BackendChoice(service_url, token, timeout, database_url, policy_file), **kwargs)

    return with_options(backend_options)(command)


@click.group()
def hook() -> None:
    """What a scheduler calls: after a failed attempt (decide), at submission (admit), and
    every few minutes over running jobs (idle-watch, the same as `failclass waste watch`)."""


@hook.command("decide")
@with_backend
@with_options(fact_options)
@click.option("--json", "as_json", is_flag=True, help="Print the decision as JSON.")
@click.pass_context
def decide_command(ctx: click.Context, facts: Any, as_json: bool, choice: BackendChoice, **options: Any) -> None:
    """Classify the attempt's logs, record, decide; the exit status names the action:
    retry 10, retry_elsewhere 11, retry_with_more_resources 12, no_retry 13, hold 14,
    reject 15 (0 when the policy is in audit mode)."""
    chosen = choice.open(ctx)
    attempt = attempt_from(json.load(facts) if facts else {}, options, chosen)
    logs = [Path(p) for p in attempt.logs]
    if not logs:
        raise click.UsageError('give the attempt\'s logs (--log, or "logs" in --facts)')
    try:
        answer = chosen.decide(attempt, logs)
    except InputError as exc:
        click.echo(f"error: {exc}", err=True)
        ctx.exit(1)
    except ServiceRefused as exc:
        raise click.UsageError(str(exc)) from None
    _print(answer, as_json)
    ctx.exit(exit_code(answer))


@hook.command("admit")
@with_backend
@with_options(fact_options)
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.pass_context
def admit_command(ctx: click.Context, facts: Any, as_json: bool, choice: BackendChoice, **options: Any) -> None:
    """May this submission run? Exit 0 (admit), 14 (hold) or 15 (reject)."""
    chosen = choice.open(ctx)
    attempt = attempt_from(json.load(facts) if facts else {}, options, chosen)
    try:
        answer = chosen.admit(attempt)
    except ServiceRefused as exc:
        raise click.UsageError(str(exc)) from None
    _print(answer, as_json)
    ctx.exit(exit_code(answer))


@hook.command("slurm-epilog")
@with_backend
@click.pass_context
def slurm_epilog(ctx: click.Context, choice: BackendChoice) -> None:
    """Run by Slurm's EpilogSlurmctld (see `slurm-install`): decide and act with scontrol."""
    from failclass.adapters.slurm import epilog

    chosen = choice.open(ctx)
    ctx.exit(epilog(chosen.decide))


@hook.command("k8s-controller")
@with_backend
@click.option("--namespace", help="Watch one namespace (default: all).")
@click.option("--every", default=10.0, show_default=True, help="Seconds between passes.")
@click.pass_context
def k8s_controller(ctx: click.Context, namespace: str | None, every: float, choice: BackendChoice) -> None:
    """Watch failed pods of Jobs (through kubectl), decide, and patch their Jobs."""
    from failclass.adapters.kubernetes import KubectlApi, watch

    chosen = choice.open(ctx)
    watch(KubectlApi(namespace), chosen.decide, every)


@hook.command("slurm-install")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--slurm-conf",
    type=click.Path(dir_okay=False, path_type=Path),
    default=lambda: os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf"),
    show_default="$SLURM_CONF or /etc/slurm/slurm.conf",
)
@click.option("--database-url", help="The store the hook records in (default: the service's SQLite file).")
@click.option("--service-url", help="A failclass service instead of a local store.")
@click.option(
    "--token-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="File holding the service token."
)
@click.option("--policy", "policy_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def slurm_install(
    directory: Path,
    slurm_conf: Path,
    database_url: str | None,
    service_url: str | None,
    token_file: Path | None,
    policy_file: Path | None,
) -> None:
    """Write the epilog script, job_submit.lua and their settings into DIRECTORY."""
    from failclass.adapters.slurm_install import install

    settings = {
        "FAILCLASS_DATABASE_URL": database_url,
        "FAILCLASS_SERVICE_URL": service_url,
        "FAILCLASS_SERVICE_TOKEN": token_file.read_text().strip() if token_file else None,
        "FAILCLASS_POLICY": str(policy_file.resolve()) if policy_file else None,
    }
    written = install(directory.resolve(), {k: v for k, v in settings.items() if v}, slurm_conf.resolve())
    for path in written:
        click.echo(f"wrote {path}")
    click.echo(
        "\nIn slurm.conf:\n"
        f"  EpilogSlurmctld={directory.resolve() / 'failclass-epilog.sh'}\n"
        "  JobSubmitPlugins=lua\n"
        f"and put job_submit.lua beside slurm.conf ({slurm_conf.resolve().parent}), then `scontrol reconfigure`."
    )


def _print(answer: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(answer, default=str))
        return
    explanation = answer.get("explanation", {})
    line = f"{answer['action']}"
    if explanation:
        line += f": {explanation.get('reason')} ({explanation.get('rule_id') or 'no rule'}): {explanation.get('message')}"
    if answer.get("fallback"):
        line += f"\n  note: {answer['fallback']}"
    click.echo(line, file=sys.stdout)
