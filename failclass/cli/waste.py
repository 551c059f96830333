"""`failclass waste`: GPU time held but not used, from utilisation signals and job logs."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from failclass.cli.common import ConfigProblem, configured, input_failure
from failclass.cli.extras import needs
from failclass.cli.notify import policy_option
from failclass.cli.signal_source import signal_source
from failclass.errors import ConfigError, InputError
from failclass.policy.config import load_policy

if TYPE_CHECKING:
    from failclass.policy.config import PolicyConfig
    from failclass.policy.watch import WatchPolicy
    from failclass.waste.formats.prometheus_api import PrometheusQuery
    from failclass.waste.rightsize import Rightsizing
    from failclass.waste.watch import Signal


@click.group()
def waste() -> None:
    """GPU time jobs hold but do not use: idle slots, never-used GPUs, low utilisation and its causes."""


@waste.command("report")
@click.argument("signals", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--jobs",
    "jobs_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Jobs file, its shape told by content: sacct --json, scontrol show job -d, kubectl get pods -o json, "
    "or CSV / sacct -P / JSON Lines with job, user, cluster, kind, gpus (node:indices or a count beside nodes), start, end, log, "
    "timelimit (for right-sizing advice).",
)
@click.option(
    "--logs",
    "logs_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder of the jobs' logs, for jobs whose jobs file names none: slurm-<job>.out, <namespace>_<pod>.log, <job>.log.",
)
@click.option(
    "--gpu-memory-mib",
    type=click.FloatRange(min=0, min_open=True),
    help="Memory total (MiB) of GPUs whose readings give none and whose model the GPU table lacks.",
)
@click.option(
    "--causes",
    "causes_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Causes file instead of the built-in one (check it first with `failclass waste check-causes FILE`).",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    help="Interactive jobs' time limit in hours (to count those that ran into it).",
)
@click.option(
    "--idle-slot",
    type=click.FloatRange(min=1),
    default=60.0,
    show_default=True,
    help="Seconds of zero utilisation and memory that make an idle slot.",
)
@click.option(
    "--low",
    type=click.FloatRange(0, 100),
    default=50.0,
    show_default=True,
    help="A job with U at or below this (percent) is low.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text", show_default=True)
@click.option(
    "--top", type=click.IntRange(min=1), default=10, show_default=True, help="Rows in the tables (and timelines in HTML)."
)
@click.option(
    "--notify",
    is_flag=True,
    help="Queue each user's right-sizing advice as a notice (kind rightsizing, once a day) for the policy's routes, and send it.",
)
@policy_option
@click.option(
    "--database-url", envvar="FAILCLASS_DATABASE_URL", help="The notices' store, with --notify (default: the service's)."
)
@click.pass_context
@needs("waste")
@signal_source()
def report(
    ctx: click.Context,
    signals: tuple[Path, ...] | PrometheusQuery,
    jobs_file: Path | None,
    logs_dir: Path | None,
    gpu_memory_mib: float | None,
    causes_file: Path | None,
    time_limit: float | None,
    idle_slot: float,
    low: float,
    fmt: str,
    top: int,
    notify: bool,
    policy_file: Path | None,
    database_url: str | None,
) -> None:
    """Report waste from SIGNALS: DCGM exporter scrapes (.prom), Prometheus range-query
    JSON, nvidia-smi CSV logs (named after their node) or failclass Parquet samples; or
    from a Prometheus server (--prometheus URL --start T), asked in chunks of time and
    hosts. Exit status 1: unreadable signals, or a server that is unreachable, slow past
    --timeout or answers an error (one line); 2: usage or configuration error."""
    from failclass.waste.analyse import WasteOptions, analyse
    from failclass.waste.causes import CAUSES
    from failclass.waste.heatmap import HeatMap
    from failclass.waste.measure import Thresholds
    from failclass.waste.report import to_json, to_text

    options = WasteOptions(
        jobs_file,
        causes_file or CAUSES,
        Thresholds(idle_slot_s=idle_slot, low_util_pct=low),
        time_limit * 3600 if time_limit else None,
        gpu_memory_mib,
        logs_dir,
    )
    heat = HeatMap() if fmt == "html" else None
    try:
        built = analyse(signals, options, heat)
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None
    except InputError as exc:
        input_failure(ctx, exc)
        return
    if fmt != "text" or not built.jobs:  # the text report shows them itself
        for line in built.inputs.warnings:
            click.echo(f"warning: {line}", err=True)
    if not built.jobs:
        click.echo("no readings belong to a job: give --jobs with the jobs' GPUs and times, or signals with job labels", err=True)
        ctx.exit(1)
    if notify:
        _notify_rightsizing(built.rightsizing, configured(lambda: load_policy(policy_file)), database_url)
    if fmt == "html":
        from failclass.waste.analyse import series_of
        from failclass.waste.html import to_html  # matplotlib and jinja2 load only here

        series = series_of(signals, options, {job.job for job in built.jobs[:top]})
        sources = [str(path) for path in signals] if isinstance(signals, tuple) else [signals.url]
        click.echo(to_html(built, heat or HeatMap(), series, sources, top), nl=False)
        return
    click.echo(to_json(built) if fmt == "json" else to_text(built, top), nl=False)


def _notify_rightsizing(sized: Rightsizing, config: PolicyConfig, database_url: str | None) -> None:
    """Queue the users' right-sizing notices and send them (the errors on stderr, one a line)."""
    from failclass.notify.delivery import deliver
    from failclass.notify.notices import enqueue
    from failclass.store.direct import open_records
    from failclass.store.reach import default_database_url, reaching
    from failclass.waste.rightsize import notices

    url, now = database_url or default_database_url(), datetime.now(UTC)
    with reaching(url):
        store = open_records(url)
        queued = enqueue(store, notices(sized, now), config.notifications, now)
        done = deliver(store, config.notifications, config.notifications.hook_seconds)
    click.echo(f"right-sizing notices: {queued.count('queued')} queued, {done.sent} sent", err=True)
    for error in done.errors:
        click.echo(f"error: notice: {error}", err=True)


@waste.command("check-causes")
@click.argument("causes_file", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def check_causes(causes_file: Path | None) -> None:
    """Check CAUSES_FILE (default: the built-in causes) as `waste report --causes` loads it:
    every key, type and bound, each pattern compiled and checked for safety. Exit status 0: it
    loads (one line says so); 2: one line `FILE: key.path: problem`."""
    from failclass.waste.causes import CAUSES, load_causes

    path = causes_file or CAUSES
    loaded = configured(lambda: load_causes(path))
    click.echo(f"{path}: ok ({len(loaded)} causes, {sum(len(c.log.patterns) for c in loaded if c.log)} patterns)")


@waste.command("generate")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--jobs", "job_count", type=click.IntRange(1, 10_000_000), default=400, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--interval", type=click.FloatRange(1, 3600), default=15.0, show_default=True, help="Seconds between readings.")
@click.option(
    "--nodes", type=click.IntRange(min=0), default=0, show_default=True, help="8-GPU nodes the jobs share (0: one node per job)."
)
@click.option("--days", type=click.FloatRange(min=0.01), default=7.0, show_default=True, help="Days over which the jobs start.")
@needs("waste")
def generate(folder: Path, job_count: int, seed: int, interval: float, nodes: int, days: float) -> None:
    """Write a trace with planted waste, calibrated to CloudBrain-I and Gao et al., into FOLDER
    (samples.parquet, jobs.csv, logs/, planted.json)."""
    from failclass.waste.generate import TraceSpec, write_trace

    jobs = write_trace(TraceSpec(jobs=job_count, interval_s=interval, seed=seed, nodes=nodes, span_days=days), folder)
    click.echo(f"{len(jobs)} jobs written to {folder}")


F = TypeVar("F", bound=Callable[..., Any])


def minutes_option(name: str, help: str) -> Callable[[F], F]:
    """One of the watch's limits, in minutes (at least 1); not given: the policy's."""
    return click.option(name, type=click.FloatRange(min=1), help=f"{help} (default: the policy's watch: section)")


@waste.command("watch")
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
    type=click.Choice(["print", "slurm"]),
    default="print",
    show_default=True,
    help="print the signals (nothing recorded), or take each step once on Slurm (scontrol notify, scancel or "
    "requeue), recorded in the store with its notices.",
)
@policy_option
@click.option(
    "--database-url", envvar="FAILCLASS_DATABASE_URL", help="The store of the steps (default: the service's SQLite file)."
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="How the signals are printed."
)
@click.pass_context
@needs(reaches=("waste", "postgres"))
@signal_source(recent=True)
def watch_command(
    ctx: click.Context,
    signals: tuple[Path, ...] | PrometheusQuery,
    jobs_file: Path | None,
    jobs_from_slurm: bool,
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
    Run it every few minutes (e.g. from cron) with --act slurm: each step is taken once per
    idle or hung stretch. SIGNALS, or --prometheus URL: its last --lookback before --now.
    Exit status 1: unreadable signals or jobs, or a Prometheus server unreachable or
    answering an error; 2: usage or policy error; 3: the store cannot be opened."""
    from failclass.waste.jobfiles import read_jobs
    from failclass.waste.watch import watch_files

    if bool(jobs_file) == jobs_from_slurm:
        raise click.UsageError("give --jobs FILE or --jobs-from-slurm, one of the two")
    config = configured(lambda: load_policy(policy_file))
    policy = _watch_policy(config.watch, minutes, kinds)
    moment = (now if now is None or now.tzinfo else now.replace(tzinfo=UTC)) or datetime.now(UTC)
    try:
        if jobs_from_slurm:
            from failclass.adapters.slurm_jobs import read_running

            jobs = read_running()
        else:
            assert jobs_file is not None
            jobs = read_jobs(jobs_file)
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
    _enforce(found, config, database_url, moment, fmt)


def _enforce(found: list[Signal], config: PolicyConfig, database_url: str | None, now: datetime, fmt: str) -> None:
    """Take the steps of ``found`` on Slurm (failclass.waste.enforce), print them, send their notices."""
    from failclass.adapters.slurm_idle import act as act_on_slurm
    from failclass.contracts import to_json
    from failclass.notify.delivery import deliver
    from failclass.store.direct import open_records
    from failclass.store.reach import default_database_url, reaching
    from failclass.waste.enforce import enforce

    url = database_url or default_database_url()
    with reaching(url):
        store = open_records(url)
        taken = enforce(found, store, config, now, act_on_slurm)
    for step in taken:
        _print_step(to_json(step), fmt)
    click.echo(f"{len(found)} signals, {len(taken)} steps taken (the others were taken before in their stretch)", err=True)
    sys.stdout.flush()  # the steps are out before any notice is sent
    with reaching(url):
        for error in deliver(store, config.notifications, config.notifications.hook_seconds).errors:
            click.echo(f"error: notice: {error}", err=True)


@waste.command("steps")
@click.option("--job", "job_id", help="The steps of this job only.")
@click.option("--user", help="The steps of this user's jobs only.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most this many, newest first.")
@click.option("--database-url", envvar="FAILCLASS_DATABASE_URL", help="The steps' store (default: the service's SQLite file).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def steps_command(job_id: str | None, user: str | None, limit: int, database_url: str | None, fmt: str) -> None:
    """The steps `waste watch --act slurm` took on running jobs, newest first: when, what,
    to whom, why, and what was run. Exit status 3: the store cannot be opened."""
    from failclass.contracts import to_json
    from failclass.store.direct import open_records
    from failclass.store.reach import default_database_url, reaching

    url = database_url or default_database_url()
    with reaching(url):
        found = open_records(url).watch_steps(job_id=job_id, user=user, limit=limit)
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
