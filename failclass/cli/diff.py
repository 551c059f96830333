"""`failclass diff`: what a failed attempt printed that a good run never did."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from failclass.cli.common import EXIT_INPUT
from failclass.errors import InputError
from failclass.logs.diff import new_lines
from failclass.logs.ranks import read_lines


@click.command()
@click.argument("failed", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("good", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Show at most this many new templates.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: the new lines, with counts.")
@click.pass_context
def diff(ctx: click.Context, failed: Path, good: tuple[Path, ...], limit: int, as_json: bool) -> None:
    """Lines of the FAILED log whose template (numbers and addresses masked) no GOOD log
    printed: the candidates for the failure's evidence."""
    try:
        lines = read_lines(failed)
        found = new_lines(lines, (read_lines(path) for path in good))
    except (OSError, InputError) as exc:
        click.echo(f"error: {exc}", err=True)
        ctx.exit(EXIT_INPUT)
    if as_json:
        shown = [asdict(n) for n in found[:limit]]
        click.echo(json.dumps({"failed": str(failed), "good": [str(p) for p in good], "lines": len(lines), "new": shown}))
        return
    covered = sum(n.count for n in found)
    click.echo(f"{failed}: {covered} of {len(lines)} lines in {len(found)} templates no good run printed")
    for new in found[:limit]:
        times = f" (x{new.count})" if new.count > 1 else ""
        click.echo(f"    line {new.line}{times}: {new.text[:300]}")
    if len(found) > limit:
        click.echo(f"    ... {len(found) - limit} more (--limit)")
