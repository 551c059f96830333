"""`failclass report` and `simulate`: Table 7, Table 6 and repeats over classified attempts."""

from __future__ import annotations

from pathlib import Path

import click

from failclass.cli.common import input_failure
from failclass.errors import InputError
from failclass.matching.taxonomy import builtin_taxonomy


@click.command()
@click.argument("manifests", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--database-url", help="Report on the attempts in this store instead of manifests.")
@click.option("--format", "fmt", type=click.Choice(["markdown", "csv", "json", "html"]), default="markdown", show_default=True)
@click.pass_context
def report(ctx: click.Context, manifests: tuple[Path, ...], database_url: str | None, fmt: str) -> None:
    """Table 7, Table 6 and repeats per reason, over classified attempts (CSV or JSON Lines
    manifests with job_id, attempt, user, status, start_time, end_time, gpus, reason)."""
    from failclass.analytics.records import read_records, store_records
    from failclass.analytics.report import build_report, to_csv, to_json, to_markdown

    if bool(manifests) == bool(database_url):
        raise click.UsageError("give manifests or --database-url, one of the two")
    try:
        if database_url:
            from failclass.store.repository import Store

            records = store_records(Store.open(database_url, migrate=False).attempt_rows())
        else:
            records = read_records(manifests)
    except InputError as exc:
        input_failure(ctx, exc)
        return
    taxonomy = builtin_taxonomy()
    unknown = sorted({r.reason for r in records if r.reason} - set(taxonomy.reasons))
    if unknown:
        raise click.UsageError(f"reasons unknown to the taxonomy: {unknown}")
    built = build_report(records, taxonomy)
    if fmt == "html":
        from failclass.analytics.html import to_html  # matplotlib loads only here

        click.echo(to_html(built, records, taxonomy), nl=False)
        return
    click.echo({"markdown": to_markdown, "csv": to_csv, "json": to_json}[fmt](built), nl=False)


@click.command()
@click.option("--fraction", type=click.FloatRange(0.0001, 1.0), default=0.01, show_default=True, help="Of Philly's scale.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Folder for attempts.jsonl and logs/."
)
@click.option("--no-logs", is_flag=True, help="Only the manifest.")
def simulate(fraction: float, seed: int, out: Path, no_logs: bool) -> None:
    """Draw a job/attempt trace (and logs) following the Philly study's Tables 7 and 6."""
    from failclass.analytics.simulate import simulate as draw

    drawn = draw(fraction, seed, out, write_logs=not no_logs)
    failed = sum(a["reason"] is not None for a in drawn.attempts)
    jobs = len({a["job_id"] for a in drawn.attempts})
    click.echo(f"{len(drawn.attempts)} attempts of {jobs} jobs ({failed} failed) in {out / 'attempts.jsonl'}")
