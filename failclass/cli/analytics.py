"""`failclass report` and `simulate`: Table 7, Table 6 and repeats over classified attempts."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from failclass.analytics import PART_BYTES
from failclass.attempts import STATUSES
from failclass.cli.common import check_corpus, executor_at, executor_options, input_failure
from failclass.cli.extras import needs
from failclass.errors import InputError
from failclass.matching.taxonomy import Taxonomy, builtin_taxonomy
from failclass.model.corpus import MANIFEST

if TYPE_CHECKING:
    from failclass.analytics.analysis import Analysis, RecordSource
    from failclass.executors import Executor


def arrow_from_the_system_allocator() -> None:
    """Before pyarrow loads: Arrow's readers (Parquet, JSON) allocate from its default pool,
    chosen once then, and the system allocator gives freed memory back (as
    failclass.analytics.columns.give_back_freed_memory arranges for the rest)."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


@click.command()
@click.argument("manifests", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--database-url", help="Report on the attempts in this store instead of manifests.")
@click.option("--since", help="First time kept: ISO 8601 (UTC unless a zone is given) or a span before now: 7d, 12h, 90m.")
@click.option("--until", help="First time left out (same forms as --since); now by default.")
@click.option("--user", "users", multiple=True, help="Only this user's attempts (repeat for several).")
@click.option(
    "--vc", "--partition", "vcs", multiple=True, help="Only this virtual cluster: Slurm partition, Kubernetes namespace."
)
@click.option("--reason", "reasons", multiple=True, help="Only attempts classified with this reason id.")
@click.option("--status", "statuses", multiple=True, type=click.Choice(STATUSES), help="Only attempts with this status.")
@click.option(
    "--compare-to",
    help="Compare with 'previous' (the period of the same length just before --since) or START/END; deltas shown.",
)
@click.option("--format", "fmt", type=click.Choice(["markdown", "csv", "json", "html"]), default="markdown", show_default=True)
@click.option(
    "--export",
    "export_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Also write every table and the attempts (with classification and decision) as Parquet and CSV here.",
)
@click.option(
    "--waste",
    "waste_report",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A `failclass waste report --format json` file: each job's idle GPU-hours count in its ETTR,"
    " and each user's right-sizing advice is shown.",
)
@executor_options("manifests' parts are read", processes=1)  # Arrow's readers use every core already
@click.option(
    "--part-bytes",
    type=click.IntRange(min=1),
    default=PART_BYTES,
    show_default=True,
    help="Bytes of a JSON Lines manifest (whole lines), or of a Parquet one's row groups, read as one part.",
)
@click.pass_context
@needs(reaches=("report", "postgres"))
def report(
    ctx: click.Context,
    manifests: tuple[Path, ...],
    database_url: str | None,
    since: str | None,
    until: str | None,
    users: tuple[str, ...],
    vcs: tuple[str, ...],
    reasons: tuple[str, ...],
    statuses: tuple[str, ...],
    compare_to: str | None,
    fmt: str,
    export_dir: Path | None,
    waste_report: Path | None,
    executor: str,
    scheduler: str | None,
    processes: int,
    part_bytes: int,
) -> None:
    """Table 7, Table 6 and repeats per reason over classified attempts: manifests or
    `failclass batch` results (CSV, JSON Lines, Parquet; job_id, attempt, user, vc, status,
    start_time, end_time, gpus, reason), or the store. Filter them, and compare two periods.
    Per user, the GPU time lost to failures since each attempt's last checkpoint (read from
    its logs) and whole, to idle, restarts and queueing, ETTR and (with --waste) right-sizing advice.
    Manifests are read in parts by a local process pool or a Dask cluster's workers (the
    same report); the tables are computed here."""
    arrow_from_the_system_allocator()
    from failclass.analytics.analysis import analyse
    from failclass.analytics.columns import give_back_freed_memory
    from failclass.analytics.selection import parse_comparison, parse_selection

    give_back_freed_memory()

    if bool(manifests) == bool(database_url):
        raise click.UsageError("give manifests or --database-url, one of the two")
    try:
        selection = parse_selection(since, until, users, vcs, reasons, statuses)
        against = parse_comparison(compare_to, selection)
    except InputError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        source = _source(manifests, database_url, executor_at(executor, scheduler, processes), part_bytes)
        idle = rightsizing = None
        if waste_report is not None:
            from failclass.analytics.goodput import idle_of_waste_report, rightsizing_of_waste_report

            idle, rightsizing = idle_of_waste_report(waste_report), rightsizing_of_waste_report(waste_report)
    except InputError as exc:
        input_failure(ctx, exc)
        return
    taxonomy = builtin_taxonomy()
    try:
        analysis = analyse(
            source, selection, taxonomy, against, idle=idle, rightsizing=rightsizing, per_job=export_dir is not None
        )
    except InputError as exc:
        raise click.UsageError(str(exc)) from None
    if export_dir is not None:
        _export(ctx, analysis, taxonomy, export_dir)
    click.echo(_render(analysis, taxonomy, fmt), nl=False)


def _source(
    manifests: tuple[Path, ...], database_url: str | None, executor: AbstractContextManager[Executor | None], part_bytes: int
) -> RecordSource:
    """The store at ``database_url``, or the manifests (read in parts by ``executor``'s workers)."""
    from failclass.analytics.analysis import FileSource, StoreSource, database_label

    if database_url:
        from failclass.store.repository import Store

        return StoreSource(Store.open(database_url, migrate=False), database_label(database_url))
    with executor as runs:
        return FileSource(manifests, runs, part_bytes)


def _render(analysis: Analysis, taxonomy: Taxonomy, fmt: str) -> str:
    if fmt == "html":
        from failclass.analytics.html import to_html  # matplotlib loads only here

        return to_html(analysis, taxonomy)
    from failclass.analytics.render import to_csv, to_json, to_markdown

    return {"markdown": to_markdown, "csv": to_csv, "json": to_json}[fmt](analysis)


def _export(ctx: click.Context, analysis: Analysis, taxonomy: Taxonomy, folder: Path) -> None:
    from failclass.analytics.export import export

    try:
        written = export(analysis, taxonomy, folder)
    except InputError as exc:
        input_failure(ctx, exc)
        return
    click.echo(f"wrote {len(written)} files ({len(written) // 2} tables, Parquet and CSV) to {folder}", err=True)


@click.command()
@click.option("--fraction", type=click.FloatRange(0.0001, 1.0), default=0.01, show_default=True, help="Of Philly's scale.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Folder for attempts.jsonl and logs/."
)
@click.option("--no-logs", is_flag=True, help="Only the manifest.")
@click.option(
    "--manifest",
    type=click.Path(dir_okay=False, path_type=Path),
    default=MANIFEST,
    show_default=True,
    help="The labelled corpus the logs' failure excerpts come from (corpora/manifest.jsonl of a checkout).",
)
def simulate(fraction: float, seed: int, out: Path, no_logs: bool, manifest: Path) -> None:
    """Draw a job/attempt trace (and logs) following the Philly study's Tables 7 and 6."""
    from failclass.analytics.simulate import simulate as draw
    from failclass.cli.progress import progress

    if not no_logs:
        check_corpus(manifest, "failclass simulate draws each log's failure excerpt (--no-logs: the trace alone) from")
    with progress("drawing", "attempts") as advance:
        drawn = draw(fraction, seed, out, write_logs=not no_logs, on_progress=advance, manifest=manifest)
    failed = sum(a["reason"] is not None for a in drawn.attempts)
    jobs = len({a["job_id"] for a in drawn.attempts})
    click.echo(f"{len(drawn.attempts)} attempts of {jobs} jobs ({failed} failed) in {out / 'attempts.jsonl'}")
