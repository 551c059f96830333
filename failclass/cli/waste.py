"""`failclass waste`: GPU time held but not used, from utilisation signals and job logs."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from failclass.cli.common import (
    ConfigProblem,
    configured,
    database_option,
    executor_at,
    executor_options,
    input_failure,
    records_at,
)
from failclass.cli.extras import needs
from failclass.cli.notify import policy_option
from failclass.cli.signal_source import signal_source
from failclass.cli.watch import steps_command, watch_command
from failclass.errors import ConfigError, InputError
from failclass.policy.config import load_policy
from failclass.waste import PART_ROWS

if TYPE_CHECKING:
    from failclass.policy.config import PolicyConfig
    from failclass.waste.analyse import WasteOptions
    from failclass.waste.formats.prometheus_api import PrometheusQuery
    from failclass.waste.heatmap import HeatMap
    from failclass.waste.report import WasteReport
    from failclass.waste.rightsize import Rightsizing


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
@executor_options("a Parquet table's parts are measured")
@click.option(
    "--part-readings",
    type=click.IntRange(min=1),
    default=PART_ROWS,
    show_default=True,
    help="Readings in a part of a Parquet table (whole row groups and jobs; each part is measured on its own).",
)
@policy_option
@database_option("The notices' store, with --notify (default: the service's).")
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
    executor: str,
    scheduler: str | None,
    processes: int,
    part_readings: int,
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
    from failclass.waste.report import json_chunks, to_text

    thresholds, limit_s = Thresholds(idle_slot_s=idle_slot, low_util_pct=low), time_limit * 3600 if time_limit else None
    options = WasteOptions(
        jobs_file, causes_file or CAUSES, thresholds, limit_s, gpu_memory_mib, logs_dir, part_rows=part_readings
    )
    heat = HeatMap() if fmt == "html" else None
    try:
        with executor_at(executor, scheduler, processes) as runs:
            built = analyse(signals, options, heat, runs)
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
        click.echo(_html(built, heat or HeatMap(), signals, options, top), nl=False)
        return
    _write(json_chunks(built) if fmt == "json" else [to_text(built, top)])


def _write(chunks: Iterable[str]) -> None:
    """The answer to stdout a piece at a time (a month's JSON is larger than it is worth holding)."""
    for chunk in chunks:
        sys.stdout.write(chunk)
    sys.stdout.flush()


def _html(built: WasteReport, heat: HeatMap, signals: tuple[Path, ...] | PrometheusQuery, options: WasteOptions, top: int) -> str:
    """The HTML page, with the series of the ``top`` jobs read again."""
    from failclass.waste.analyse import series_of
    from failclass.waste.html import to_html  # matplotlib and jinja2 load only here

    series = series_of(signals, options, {job.job for job in built.jobs[:top]})
    sources = [str(path) for path in signals] if isinstance(signals, tuple) else [signals.url]
    return to_html(built, heat, series, sources, top)


def _notify_rightsizing(sized: Rightsizing, config: PolicyConfig, database_url: str | None) -> None:
    """Queue the users' right-sizing notices and send them (the errors on stderr, one a line)."""
    from failclass.notify.delivery import deliver_after_answer
    from failclass.notify.notices import enqueue
    from failclass.waste.rightsize import notices

    now = datetime.now(UTC)
    with records_at(database_url) as store:
        queued = enqueue(store, notices(sized, now), config.notifications, now)
        done = deliver_after_answer(store, config.notifications)
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


waste.add_command(watch_command)
waste.add_command(steps_command)
