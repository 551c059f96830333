"""`failclass diff`: what a failed attempt printed that a good run never did."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from failclass.cli.common import EXIT_INPUT, database_option
from failclass.errors import InputError
from failclass.logs.diff import new_lines, templates_of
from failclass.logs.ranks import read_lines


@click.command()
@click.argument("failed", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("good", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--job-id", help="Without GOOD: compare with this job's last good run, as the store keeps it.")
@database_option()
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Show at most this many new templates.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: the new lines, with counts.")
@click.pass_context
def diff(
    ctx: click.Context,
    failed: Path,
    good: tuple[Path, ...],
    job_id: str | None,
    database_url: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """Lines of the FAILED log whose template (numbers, addresses and ids masked) no GOOD log
    printed: the candidates for the failure's evidence. Without GOOD, the job's last good
    run in the store (--job-id): exit status 1, with one line, when it has none."""
    if bool(good) == bool(job_id):
        raise click.UsageError("give GOOD logs or --job-id, one of the two")
    try:
        lines = read_lines(failed)
        known, against = _known(good, job_id, database_url)
    except (OSError, InputError) as exc:
        click.echo(f"error: {exc}", err=True)
        ctx.exit(EXIT_INPUT)
    found = new_lines(lines, known)
    if as_json:
        shown = [asdict(n) for n in found[:limit]]
        click.echo(json.dumps({"failed": str(failed), "good": against, "lines": len(lines), "new": shown}))
        return
    covered = sum(n.count for n in found)
    click.echo(f"{failed}: {covered} of {len(lines)} lines in {len(found)} templates no good run printed")
    for new in found[:limit]:
        times = f" (x{new.count})" if new.count > 1 else ""
        click.echo(f"    line {new.line}{times}: {new.text[:300]}")
    if len(found) > limit:
        click.echo(f"    ... {len(found) - limit} more (--limit)")


def _known(good: tuple[Path, ...], job_id: str | None, database_url: str | None) -> tuple[set[str], list[str]]:
    """The good run's templates, and what it was: the GOOD logs, or the job's attempt in the store."""
    if job_id is None:
        return set().union(*(templates_of(read_lines(path)) for path in good)), [str(path) for path in good]
    from failclass.store.reach import default_database_url, masked, reaching
    from failclass.store.repository import Store

    url = database_url or default_database_url()
    with reaching(url):
        run = Store.open(url, migrate=False).good_run(job_id)
    if run is None:
        raise InputError(f"job {job_id!r} has no good run in the store {masked(url)}: no attempt of it passed or progressed")
    return set(run.templates), [f"job {run.job_id} attempt {run.attempt} ({run.status})"]
