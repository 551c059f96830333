"""`failclass hook ...`: the scheduler's side (exit codes in failclass.hook.backends)."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import signal
import socket
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from failclass.attempts import STATUSES, Attempt, InvalidAttempt
from failclass.cli.common import classifier as build_classifier
from failclass.cli.extras import needs
from failclass.errors import ConfigError, InputError, ServiceRefused
from failclass.hook.answer import HookAnswer
from failclass.hook.backends import LocalBackend, exit_code
from failclass.hook.facts import InvalidFacts, attempt_of
from failclass.inbound import UnreadableJson, encodable, read_json
from failclass.limits import LIMITS
from failclass.policy.config import load_policy

if TYPE_CHECKING:
    from failclass.hook.remote import RemoteBackend

    Backend = LocalBackend | RemoteBackend

INTEGER_FACTS = ("attempt", "gpus", "tasks_per_node", "exit_code", "signal")  # JSON numbers, never strings

TOKEN_ENV = ("FAILCLASS_TOKEN", "FAILCLASS_SERVICE_TOKEN")  # the second: the name slurm-install wrote before
TIMES = click.DateTime(["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S"])
INT32 = click.IntRange(LIMITS.int32_min, LIMITS.int32_max)  # what the store's INTEGER columns hold

backend_options = [
    click.option("--service-url", envvar="FAILCLASS_SERVICE_URL", help="A failclass service; default: the local store."),
    click.option(
        "--token-file",
        envvar="FAILCLASS_TOKEN_FILE",
        type=click.Path(dir_okay=False, path_type=Path),
        help="File holding the service's API token (write scope; read too to number attempts). Or set FAILCLASS_TOKEN.",
    ),
    click.option(
        "--token",
        envvar=list(TOKEN_ENV),
        help="The API token itself (FAILCLASS_TOKEN). Prefer --token-file or the variable: a command line shows in ps.",
    ),
    click.option("--timeout", default=10.0, show_default=True, help="Seconds to wait for the service (per try; one retry)."),
    click.option("--database-url", envvar="FAILCLASS_DATABASE_URL", help="The local store (default: the service's SQLite file)."),
    click.option(
        "--policy",
        "policy_file",
        envvar="FAILCLASS_POLICY",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="An operator's policy file (default: the built-in policy).",
    ),
]
submission_options = [
    click.option("--facts", type=click.File("rb"), help="The facts as a JSON object ('-' for stdin); options override."),
    click.option("--job-id", help="The scheduler's job id."),
    click.option("--user", help="The job's user."),
    click.option("--vc", help="Virtual cluster or partition (default: default)."),
    click.option("--gpus", type=click.IntRange(0, LIMITS.int32_max), help="GPUs the job holds."),
    click.option("--gpu-type", help="GPU model, as the scheduler names it."),
    click.option("--input", "inputs", multiple=True, help="A declared input path (repeatable)."),
]


def read_pods(ctx: click.Context, param: click.Parameter, pairs: tuple[str, ...]) -> dict[str, str]:
    """--pod NAME=NODE (repeated) as pod -> node, each pod once."""
    pods: dict[str, str] = {}
    for pair in pairs:
        name, equals, node = pair.partition("=")
        if not (name and equals and node) or name in pods:
            raise click.BadParameter(f"{pair!r}: expected NAME=NODE, each pod once", param_hint="--pod")
        pods[name] = node
    return pods


attempt_options = [
    click.option("--attempt", "attempt_no", type=click.IntRange(1, LIMITS.int32_max), help="Attempt number (default: the next)."),
    click.option("--node", "nodes", multiple=True, help="A node of the attempt's allocation, in rank order (repeatable)."),
    click.option(
        "--tasks-per-node",
        type=click.IntRange(1, LIMITS.int32_max),
        help="Ranks per node: ranks 0 to N-1 ran on the first --node, N to 2N-1 on the second...",
    ),
    click.option(
        "--pod", "pods", multiple=True, metavar="NAME=NODE", callback=read_pods, help="A pod and its node (repeatable)."
    ),
    click.option("--exit-code", type=INT32, help="The attempt's exit status."),
    click.option(
        "--status", type=click.Choice(STATUSES), help="How the attempt ended (default: passed for --exit-code 0, else failed)."
    ),
    click.option("--signal", type=INT32, help="The signal that ended it, if any."),
    click.option("--start", "start_time", type=TIMES, help="When it started (ISO 8601)."),
    click.option("--end", "end_time", type=TIMES, help="When it ended (ISO 8601)."),
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


def read_facts(facts: Any) -> dict[str, Any]:
    """The --facts JSON object (read as failclass.inbound reads JSON); anything else is a
    usage error (exit 2) that says why."""
    if facts is None:
        return {}
    try:
        loaded = read_json(facts.read())
    except json.JSONDecodeError as exc:
        raise click.UsageError(f"--facts: not JSON: {exc}") from None
    except UnreadableJson as exc:
        raise click.UsageError(f"--facts: {exc}") from None
    if not isinstance(loaded, dict):
        raise click.UsageError(f"--facts: expected a JSON object, got {type(loaded).__name__}")
    return loaded


def attempt_from(facts: dict[str, Any], options: dict[str, Any], chosen: Backend) -> Attempt:
    """The facts and the options (which win), checked as the service checks a request
    (failclass.service.schemas.AttemptIn: types, ranges the store holds, no NUL; see
    failclass.hook.facts); every problem is a usage error (exit 2)."""
    merged = {**facts, **{k: v for k, v in options.items() if v not in (None, (), {})}}
    if "attempt_no" in merged:
        merged["attempt"] = merged.pop("attempt_no")
    for key in ("nodes", "inputs", "logs"):
        merged[key] = [str(v) for v in merged.get(key, ())] if isinstance(merged.get(key, ()), list | tuple) else merged[key]
    # Text UTF-8 cannot hold (an argument's undecodable bytes) as U+FFFD; log paths are opened, so used as given.
    merged = {key: value if key == "logs" else encodable(value) for key, value in merged.items()}
    wrong = [k for k in INTEGER_FACTS if merged.get(k) is not None and type(merged[k]) is not int]
    if wrong:
        raise click.UsageError(
            "invalid attempt facts: " + "; ".join(f"{k}: expected an integer, got {merged[k]!r}" for k in wrong)
        )
    if "status" not in merged and merged.get("exit_code") == 0:
        merged["status"] = "passed"
    if not merged.get("job_id") or not merged.get("user"):
        raise click.UsageError("the attempt needs --job-id and --user (or both in --facts)")
    if not merged.get("attempt"):
        merged["attempt"] = chosen.next_attempt(str(merged["job_id"]))
    try:
        attempt = attempt_of(merged)
    except (InvalidFacts, InvalidAttempt) as exc:
        raise click.UsageError(f"invalid attempt facts: {exc}") from None
    return dataclasses.replace(
        attempt,
        submit_time=_aware(attempt.submit_time),
        start_time=_aware(attempt.start_time),
        end_time=_aware(attempt.end_time),
    )


def _aware(moment: datetime | None) -> datetime | None:
    return moment if moment is None or moment.tzinfo else moment.astimezone()


@dataclass(frozen=True)
class BackendChoice:
    """Where decisions are made: a failclass service, else the local store."""

    service_url: str | None
    token_file: Path | None
    token: str | None
    timeout: float
    database_url: str | None
    policy_file: Path | None

    def api_token(self) -> str | None:
        """From --token-file, else --token / FAILCLASS_TOKEN."""
        if self.token_file is None:
            return self.token
        try:
            token = self.token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise click.UsageError(f"--token-file: cannot read {self.token_file}: {exc}") from None
        if not token:
            raise click.UsageError(f"--token-file: {self.token_file} is empty")
        return token

    def open(self, ctx: click.Context) -> Backend:
        classifier = build_classifier(ctx, with_model=True)
        try:
            policy = load_policy(self.policy_file, set(classifier.ruleset.taxonomy.reasons), set(classifier.rules))
        except ConfigError as exc:
            raise click.UsageError(str(exc)) from None
        if self.service_url:
            from failclass.hook.remote import RemoteBackend  # httpx loads only for a remote service

            return RemoteBackend(self.service_url, self.api_token(), self.timeout, classifier, policy)
        from failclass.store.reach import default_database_url

        return LocalBackend(self.database_url or default_database_url(), classifier, policy)


def with_backend(function: Any) -> Any:
    """The backend options, handed to the command as one ``choice`` argument."""

    @functools.wraps(function)
    def command(
        *args: Any,
        service_url: str | None,
        token_file: Path | None,
        token: str | None,
        timeout: float,
        database_url: str | None,
        policy_file: Path | None,
        **kwargs: Any,
    ) -> Any:
        choice = BackendChoice(service_url, token_file, token, timeout, database_url, policy_file)
        return function(*args, choice=choice, **kwargs)

    return with_options(backend_options)(command)


@click.group()
def hook() -> None:
    """What a scheduler calls: after a failed attempt (decide), at submission (admit), and
    every few minutes over running jobs (idle-watch, the same as `failclass waste watch`)."""


@hook.command("decide")
@with_backend
@with_options([*submission_options, *attempt_options])
@click.option("--json", "as_json", is_flag=True, help="Print the decision as JSON.")
@click.pass_context
@needs(reaches=("postgres",))
def decide_command(ctx: click.Context, facts: Any, as_json: bool, choice: BackendChoice, **options: Any) -> None:
    """Classify the attempt's logs, record, decide; the exit status names the action:
    retry 10, retry_elsewhere 11, retry_with_more_resources 12, no_retry 13, hold 14,
    reject 15 (0 when the policy is in audit mode or the attempt passed: --status passed,
    or --exit-code 0 without --status); 1 unreadable log; 2 usage error or invalid facts;
    3 the store cannot be opened or used."""
    given = read_facts(facts)
    chosen = choice.open(ctx)
    try:
        attempt = attempt_from(given, options, chosen)
        logs = [Path(p) for p in attempt.logs]
        if not logs:
            raise click.UsageError('give the attempt\'s logs (--log, or "logs" in --facts)')
        answer = chosen.decide(attempt, logs)
    except InputError as exc:
        click.echo(f"error: {exc}", err=True)
        ctx.exit(1)
    except ServiceRefused as exc:
        raise click.UsageError(str(exc)) from None
    _print(answer, as_json)
    if isinstance(chosen, LocalBackend):
        sys.stdout.flush()  # the answer is out before any notice is sent
        chosen.deliver_notices()
    ctx.exit(exit_code(answer))


@hook.command("admit")
@with_backend
@with_options(submission_options)
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.pass_context
@needs(reaches=("postgres",))
def admit_command(ctx: click.Context, facts: Any, as_json: bool, choice: BackendChoice, **options: Any) -> None:
    """May this submission run? Exit 0 (admit), 14 (hold) or 15 (reject); 2 usage error;
    3 the store cannot be opened or used."""
    given = read_facts(facts)
    chosen = choice.open(ctx)
    try:
        answer = chosen.admit(attempt_from(given, options, chosen))
    except ServiceRefused as exc:
        raise click.UsageError(str(exc)) from None
    _print(answer, as_json)
    ctx.exit(exit_code(answer))


@hook.command("slurm-epilog")
@with_backend
@click.pass_context
@needs(reaches=("postgres",))
def slurm_epilog(ctx: click.Context, choice: BackendChoice) -> None:
    """Run by Slurm's EpilogSlurmctld (see `slurm-install`): decide and act with scontrol."""
    from failclass.adapters.slurm import epilog

    chosen = choice.open(ctx)
    status = epilog(chosen.decide)
    if isinstance(chosen, LocalBackend):
        chosen.deliver_notices()
    ctx.exit(status)


@hook.command("k8s-controller")
@with_backend
@click.option("--namespace", envvar="FAILCLASS_WATCH_NAMESPACE", help="Watch one namespace (default: all; needs a ClusterRole).")
@click.option("--selector", default="job-name", show_default=True, help="Label selector of the pods watched.")
@click.option("--lease-namespace", envvar="POD_NAMESPACE", default="default", show_default=True, help="Namespace of the Lease.")
@click.option(
    "--lease-name", default="failclass-k8s-controller", show_default=True, help="Name of the Lease replicas elect with."
)
@click.option(
    "--identity", envvar="POD_NAME", default=socket.gethostname, help="This replica's name in the Lease [$POD_NAME or the host]."
)
@click.pass_context
@needs("kubernetes", reaches=("postgres",))
def k8s_controller(
    ctx: click.Context,
    namespace: str | None,
    selector: str,
    lease_namespace: str,
    lease_name: str,
    identity: str,
    choice: BackendChoice,
) -> None:
    """Watch failed pods of Jobs (the Kubernetes API, in-cluster or $KUBECONFIG), decide each once
    across replicas (a Lease elects the one that acts), and patch their Jobs."""
    from failclass.adapters.kubernetes.cluster import Cluster, connect
    from failclass.adapters.kubernetes.controller import run_controller
    from failclass.adapters.kubernetes.lease import LeaderLease, LeaseSettings

    chosen = choice.open(ctx)
    cluster = Cluster(connect(), namespace, selector)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    run_controller(chosen.decide, cluster, LeaderLease(cluster, LeaseSettings(lease_namespace, lease_name), identity))


@hook.command("slurm-install")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--slurm-conf",
    type=click.Path(dir_okay=False, path_type=Path),
    default=lambda: os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf"),
    show_default="$SLURM_CONF or /etc/slurm/slurm.conf",
    help="The cluster's slurm.conf (the hook's scontrol calls use it).",
)
@click.option("--database-url", help="The store the hook records in (default: the service's SQLite file).")
@click.option("--service-url", help="A failclass service instead of a local store.")
@click.option(
    "--token-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="File holding the service token (copied into failclass.env, 0600).",
)
@click.option(
    "--policy",
    "policy_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="An operator's policy file for the hook's decisions.",
)
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
        "FAILCLASS_TOKEN": token_file.read_text().strip() if token_file else None,
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


def _print(answer: HookAnswer, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(answer.to_json(), default=str))
        return
    line = answer.summary()
    if answer.duplicate:
        line += (
            f"\n  note: duplicate: this attempt was recorded before (attempt id {answer.attempt_id});"
            " the answer recorded then, from the logs given then"
        )
    if answer.fallback:
        line += f"\n  note: {answer.fallback}"
    click.echo(line, file=sys.stdout)
