"""`failclass classify`: name the failure reason of each log."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import click

from failclass.cli.common import EXIT_INPUT, classifier
from failclass.contracts import Classification, classification_json
from failclass.errors import InputError
from failclass.logs.text import open_standard_input


def human(path: str, result: Classification, explain: bool) -> str:
    categories = ",".join(result.categories) or "-"
    head = f"{path}: {result.reason_name} [{categories}]"
    if result.rule_id:
        head += f"  (rule {result.rule_id}, confidence {result.confidence:.2f})"
    elif result.source == "model":
        head += f"  (model, confidence {result.confidence:.2f})"
    elif result.also_matched:  # rules matched, but only the end that the log reports without a cause
        head += "  (no rule names a cause; --explain shows what matched)"
    else:
        head += "  (no rule matched)"
    lines = [head] + [f"    line {e.line}: {e.text}" for e in result.evidence]
    if result.why:
        lines.append(f"    why: {result.why}")
    if explain:
        for other in result.also_matched:
            lines.append(f"    also {other.rule_id} ({other.reason}) at line {other.line}: lost, {other.lost_because}")
    return "\n".join(lines)


def summary_table(results: Counter[str], errors: int, names: dict[str, str]) -> str:
    total = sum(results.values()) + errors
    rows = [f"{total} log(s): {sum(results.values())} classified, {errors} unreadable"]
    width = max((len(names[r]) for r in results), default=0)
    for reason, count in results.most_common():
        rows.append(f"  {names[reason]:<{width}}  {count:>5}  {100 * count / max(total, 1):5.1f}%")
    return "\n".join(rows)


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path, allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file, one per line (the classify contract).")
@click.option("--explain", is_flag=True, help="Also show the rules that matched and why they lost.")
@click.option(
    "--summary/--no-summary", default=None, help="Counts per reason at the end (default: on for several files, text mode)."
)
@click.pass_context
def classify(ctx: click.Context, files: tuple[Path, ...], as_json: bool, explain: bool, summary: bool | None) -> None:
    """Classify failed-attempt logs (plain or gzip; '-' reads standard input)."""
    chosen = classifier(ctx, with_model=True)
    counts: Counter[str] = Counter()
    errors = 0
    for path in files:
        name = str(path)
        try:
            result = chosen.classify_stream(open_standard_input()) if name == "-" else chosen.classify_path(path)
        except InputError as exc:
            errors += 1
            if as_json:
                click.echo(json.dumps({"path": name, "error": str(exc)}))
            else:
                click.echo(f"{name}: error: {exc}", err=True)
            continue
        counts[result.reason] += 1
        if as_json:
            click.echo(json.dumps({"path": name, **classification_json(result, explain)}, ensure_ascii=False))
        else:
            click.echo(human(name, result, explain))
    if summary or (summary is None and not as_json and len(files) > 1):
        click.echo("\n" + summary_table(counts, errors, chosen.ruleset.taxonomy.names()))
    if errors:
        ctx.exit(EXIT_INPUT)
