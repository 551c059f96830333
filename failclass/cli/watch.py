"""`failclass waste watch` (also `hook idle-watch`) and `waste steps`: the idle watch over
running jobs, its steps taken on Slurm or Kubernetes, and the steps kept."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from failclass.cli.common import ConfigProblem, configured, database_option, input_failure, records_at
from failclass.cli.extras import needs
from failclass.cli.notify import policy_option
from failclass.cli.signal_source import signal_source
from failclass.errors import InputError
from failclass.policy.config import load_policy

if TYPE_CHECKING:
    from failclass.policy.config import PolicyConfig
    from failclass.policy.watch import WatchPolicy
    from failclass.waste.allocation import JobAllocation
    from failclass.waste.enforce import Act
    from failclass.waste.formats.prometheus_api import PrometheusQuery
    from failclass.waste.watch import Signal

EXIT_STEP_FAILED = 4  # a step's call to the scheduler failed (kept in the step's done)

F = TypeVar("F", bound=Callable[..., Any])


def minutes_option(name: str, help: str) -> Callable[[F], F]:
    """One of the watch's limits, in minutes (at least 1); not given: the policy's."""
    return click.option(name, type=click.FloatRange(min=1), help=f"{help} (default: the policy's watch: section)")


@click.command("watch")
@click.argument("signals", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--jobs",
    "jobs_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The running jobs (as for report).",
)
@click.option(
    "--jobs-from-slurm",
    is_flag=True,
    help="Read the running jobs and their GPUs from `scontrol show job -d` instead of a jobs file.",
)
@click.option(
    "--jobs-from-kubernetes",
    is_flag=True,
    help="Read the running pods, their GPUs (nvidia.com/gpu limits) and nodes from the Kubernetes API "
    "(in a pod: its service account; elsewhere $KUBECONFIG), as a jobs file of `kubectl get pods -o json` is read.",
)
@click.option(
    "--namespace",
    envvar="FAILCLASS_WATCH_NAMESPACE",
    help="With --jobs-from-kubernetes: the pods of this namespace (default: every namespace; needs a ClusterRole).",
)
@click.option(
    "--now", type=click.DateTime(["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S"]), help="Judge as of this time (default: now)."
)
@minutes_option("--warn-after", "Minutes idle before a warning; with --release-after and --kind: one idle rule for this run.")
@minutes_option("--release-after", "Minutes idle before a release.")
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    help="Minutes after a job's start without an idle step (default: the policy's watch: section).",
)
@minutes_option("--never-used-after", "Minutes into a job before flagging a GPU it never used.")
@minutes_option("--unreleased-grace", "Minutes idle after a finished-training line before a release.")
@minutes_option("--hung-after", "Minutes with every GPU idle and the log unwritten, after GPU work, before a job is called hung.")
@minutes_option("--hung-cancel-after", "Minutes hung before the job is cancelled (its attempt then decided as a failure).")
@minutes_option(
    "--stale-after", "Minutes without a reading after which a job gets no idle signal (a silent exporter is not idle)."
)
@click.option("--kind", "kinds", multiple=True, help="Job kinds whose idle time is watched (repeatable; default: the policy's).")
@click.option(
    "--act",
    type=click.Choice(["print", "slurm", "kubernetes"]),
    default="print",
    show_default=True,
    help="print the signals (nothing recorded), or take each step once, recorded in the store with its notices: "
    "on Slurm (scontrol notify, scancel or requeue) or on Kubernetes (an Event and an annotation; a release scales "
    "the pod's StatefulSet or Deployment to zero, suspends its Job or deletes an ownerless pod; a hung pod is deleted).",
)
@policy_option
@database_option("The store of the steps (default: the service's SQLite file).")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="How the signals are printed."
)
@click.pass_context
@needs(reaches=("waste", "postgres", "kubernetes"))
@signal_source(recent=True)
def watch_command(
    ctx: click.Context,
    signals: tuple[Path, ...] | PrometheusQuery,
    jobs_file: Path | None,
    jobs_from_slurm: bool,
    jobs_from_kubernetes: bool,
    namespace: str | None,
    now: datetime | None,
    kinds: tuple[str, ...],
    act: str,
    policy_file: Path | None,
    database_url: str | None,
    fmt: str,
    **minutes: float | None,
) -> None:
    """Signals for running jobs by the policy's watch: section: warn, warn again, then release
    idle jobs; flag never-used GPUs; release jobs whose training finished; cancel hung jobs.
    Run it every few minutes (e.g. from cron) with --act slurm or --act kubernetes: each step
    is taken once per idle or hung stretch. SIGNALS, or --prometheus URL: its last --lookback
    before --now. Exit status 1: unreadable signals or jobs, or a Prometheus server
    unreachable or answering an error; 2: usage or policy error; 3: the store cannot be
    opened; 4: a call a step made failed (the step is kept, with the call's error, and not
    taken again in its stretch: `waste steps` shows it)."""
    from failclass.waste.watch import watch_files

    if sum((bool(jobs_file), jobs_from_slurm, jobs_from_kubernetes)) != 1:
        raise click.UsageError("give --jobs FILE, --jobs-from-slurm or --jobs-from-kubernetes, one of them")
    config = configured(lambda: load_policy(policy_file))
    policy = _watch_policy(config.watch, minutes, kinds)
    moment = (now if now is None or now.tzinfo else now.replace(tzinfo=UTC)) or datetime.now(UTC)
    try:
        jobs = _running_jobs(jobs_file, jobs_from_slurm, jobs_from_kubernetes, namespace)
        found = watch_files(signals, jobs, moment.timestamp(), policy)
    except InputError as exc:
        input_failure(ctx, exc)
        return
    ended = [job.end for job in jobs if job.end < moment.timestamp()]
    if ended:
        last = datetime.fromtimestamp(max(ended), UTC).isoformat(timespec="minutes")
        now_text = moment.astimezone(UTC).isoformat(timespec="minutes")
        click.echo(f"{len(ended)} of {len(jobs)} jobs had ended by {now_text} (the last at {last}): not watched", err=True)
    if act == "print":
        for signal in found:
            _print_step(asdict(signal), fmt)
        return
    if not _enforce(found, config, database_url, moment, fmt, _actor(act, jobs)):
        ctx.exit(EXIT_STEP_FAILED)


def _running_jobs(jobs_file: Path | None, slurm: bool, kubernetes: bool, namespace: str | None) -> list[JobAllocation]:
    """The running jobs from the file, from scontrol, or from the Kubernetes API's pods."""
    if slurm:
        from failclass.adapters.slurm_jobs import read_running

        return read_running()
    if kubernetes:
        from kubernetes.client.rest import ApiException
        from urllib3.exceptions import HTTPError

        from failclass.adapters.kubernetes.workloads import Workloads, explain
        from failclass.waste.jobfiles.kubernetes import read_pods

        where = f"namespace {namespace}" if namespace else "every namespace"
        try:
            listed = Workloads(_connect()).pods(namespace)
        except (ApiException, HTTPError) as exc:
            raise InputError(f"cannot list the pods of {where}{explain(exc)}") from None
        return read_pods(listed, Path(f"kubernetes://{namespace or '*'}/pods")).jobs
    from failclass.waste.jobfiles import read_jobs

    assert jobs_file is not None
    return read_jobs(jobs_file)


def _actor(act: str, jobs: Sequence[JobAllocation]) -> Act:
    """What carries a signal out: Slurm's commands, or Kubernetes API calls over the jobs' pods."""
    if act == "slurm":
        from failclass.adapters.slurm_idle import act as act_on_slurm

        return act_on_slurm
    from failclass.adapters.kubernetes.idle import IdleActions
    from failclass.adapters.kubernetes.workloads import Workloads

    return IdleActions(Workloads(_connect()), {job.job: job for job in jobs}).act


def _connect() -> Any:
    """The API client (in a pod: its service account; elsewhere $KUBECONFIG); none: a configuration error."""
    from kubernetes.config import ConfigException

    from failclass.adapters.kubernetes.cluster import connect

    try:
        return connect()
    except (ConfigException, OSError) as exc:
        raise ConfigProblem(f"Kubernetes: {exc}") from None


def _enforce(found: list[Signal], config: PolicyConfig, database_url: str | None, now: datetime, fmt: str, act: Act) -> bool:
    """Take the steps of ``found`` with ``act`` (failclass.waste.enforce), print them, send
    their notices; whether every call the steps made succeeded."""
    from failclass.contracts import to_json
    from failclass.notify.delivery import deliver_after_answer
    from failclass.waste.enforce import FAILED, enforce

    with records_at(database_url) as store:
        taken = enforce(found, store, config, now, act)
        for step in taken:
            _print_step(to_json(step), fmt)
        click.echo(f"{len(found)} signals, {len(taken)} steps taken (the others were taken before in their stretch)", err=True)
        sys.stdout.flush()  # the steps are out before any notice is sent
        for error in deliver_after_answer(store, config.notifications).errors:
            click.echo(f"error: notice: {error}", err=True)
    return not any(FAILED in line for step in taken for line in step.done)


@click.command("steps")
@click.option("--job", "job_id", help="The steps of this job only.")
@click.option("--user", help="The steps of this user's jobs only.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most this many, newest first.")
@database_option("The steps' store (default: the service's SQLite file).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def steps_command(job_id: str | None, user: str | None, limit: int, database_url: str | None, fmt: str) -> None:
    """The steps `waste watch --act slurm|kubernetes` took on running jobs, newest first: when, what,
    to whom, why, and what was run. Exit status 3: the store cannot be opened."""
    from failclass.contracts import to_json

    with records_at(database_url) as store:
        found = store.watch_steps(job_id=job_id, user=user, limit=limit)
    for step in found:
        if fmt == "json":
            click.echo(json.dumps(to_json(step)))
            continue
        what = f"{step.action} {step.step}" if step.action == "warn" else step.action
        audit = "" if step.enforced else " (audit: not enforced)"
        click.echo(f"{step.taken_at:%Y-%m-%d %H:%M} {what} {step.job_id} ({step.user}, {step.vc}): {step.reason}{audit}")
        for line in step.done:
            click.echo(f"    {line}")


def _watch_policy(base: WatchPolicy, minutes: dict[str, float | None], kinds: tuple[str, ...]) -> WatchPolicy:
    """The policy's watch: section with the command's limits over it."""
    from failclass.schema import Invalid

    try:
        return base.with_limits(
            minutes["warn_after"],
            minutes["release_after"],
            kinds,
            minutes["grace"],
            never_used_after_minutes=minutes["never_used_after"],
            unreleased_grace_minutes=minutes["unreleased_grace"],
            hung_after_minutes=minutes["hung_after"],
            hung_cancel_minutes=minutes["hung_cancel_after"],
            stale_after_minutes=minutes["stale_after"],
        )
    except Invalid as exc:
        flag = {"release_minutes": "--release-after", "hung_cancel_minutes": "--hung-cancel-after"}.get(exc.at, exc.at)
        raise click.UsageError(f"{flag}: {exc}") from None


def _print_step(step: dict[str, Any], fmt: str) -> None:
    """A signal or a step taken: its action, job and reason, a hung job's last lines quoted, what was run."""
    if fmt == "json":
        click.echo(json.dumps({**step, "done": step.get("done", [])}))
        return
    job = step.get("job") or step.get("job_id")
    quoted = "".join(f"\n    | {line[:200]}" for line in step["evidence"])
    done = "".join(f"\n    {line}" for line in step.get("done", ()))
    click.echo(f"{step['action']} {job}: {step['reason']}{quoted}{done}")
