"""`failclass batch`: classify every attempt in directories and archives of logs."""

from __future__ import annotations

from pathlib import Path

import click

from failclass.cli.common import EXIT_INPUT, classifier, dask_scheduler, executor_options, input_failure, options
from failclass.cli.extras import needs
from failclass.cli.progress import progress
from failclass.errors import InputError
from failclass.matching.taxonomy import builtin_taxonomy


@click.command()
@click.argument("sources", nargs=-1, required=True)
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Results folder (resumed if it exists)."
)
@executor_options("logs are classified")
@click.option("--manifest", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Attempt facts and their logs.")
@click.option("--id-pattern", help="Regex with groups job (and attempt) over a log's path, when there is no manifest.")
@click.pass_context
@needs("batch")
def batch(
    ctx: click.Context,
    sources: tuple[str, ...],
    out: Path,
    executor: str,
    scheduler: str | None,
    manifest: Path | None,
    id_pattern: str | None,
    processes: int,
) -> None:
    """Classify every attempt in directories and archives (tar, zip, gz, zst) of logs;
    SOURCES are local paths or fsspec URLs."""
    from failclass import executors
    from failclass.analytics.records import manifest_rows
    from failclass.batch import ids, output, runner

    missing = [s for s in sources if "://" not in s and not Path(s).exists()]
    if missing:
        raise click.UsageError(f"no such source: {', '.join(missing)}")
    dask = dask_scheduler(executor, scheduler)
    classifier(ctx, with_model=True)  # the options are checked here, once, before any worker builds its own

    facts = owners = None
    if manifest is not None:
        try:
            facts, owners = ids.manifest_maps(dict(row) for _, row in manifest_rows(manifest))
        except InputError as exc:
            input_failure(ctx, exc)
            return
    try:
        with progress("classifying", "attempts") as advance:
            summary = runner.run_batch(
                list(sources),
                out,
                processes,
                id_pattern or ids.DEFAULT_ID_PATTERN,
                facts,
                owners,
                options=options(ctx),
                executor=(lambda: executors.dask_executor(dask)) if dask else None,
                on_progress=advance,
            )
    except InputError as exc:
        input_failure(ctx, exc)
        return
    parquet = output.write_parquet(out) if (out / output.RESULTS).exists() else None
    skipped = f" ({summary.not_logs:,} other files skipped: not named like logs)" if summary.not_logs else ""
    click.echo(
        f"{summary.attempts:,} attempts classified ({summary.skipped_done:,} already done), {summary.members:,} logs{skipped}, "
        f"{summary.bytes / 1e6:,.1f} MB in {summary.seconds} s -> {out / output.RESULTS}" + (f", {parquet}" if parquet else "")
    )
    if manifest is not None and parquet is not None:
        click.echo(f"report: {batch_report(out)}")
    names = builtin_taxonomy().names()
    for reason, count in sorted(summary.reasons.items(), key=lambda item: -item[1]):
        click.echo(f"  {names.get(reason, reason):<24}{count:>8,}")
    for problem in summary.problems:
        click.echo(f"problem: {problem}", err=True)
    if summary.problems:
        ctx.exit(EXIT_INPUT)


def batch_report(out: Path) -> Path:
    """report.md and report.html beside the results, from the manifest's facts."""
    from failclass.analytics.analysis import FileSource, analyse
    from failclass.analytics.html import to_html
    from failclass.analytics.render import to_markdown
    from failclass.analytics.selection import Selection
    from failclass.batch.output import RESULTS

    taxonomy = builtin_taxonomy()
    analysis = analyse(FileSource([out / RESULTS]), Selection(), taxonomy)
    (out / "report.md").write_text(to_markdown(analysis))
    (out / "report.html").write_text(to_html(analysis, taxonomy))
    return out / "report.html"
