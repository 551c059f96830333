"""`failclass classify`: name the failure reason of each log."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import click

from failclass.cli.common import EXIT_INPUT, classifier
from failclass.contracts import AttemptAnswer, Classification, attempt_json, classification_json
from failclass.errors import InputError
from failclass.logs.origin import read_attempt
from failclass.logs.ranks import Layout
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


def attempt_human(answer: AttemptAnswer, explain: bool) -> str:
    """The attempt's answer, then where it started and what followed, one line each."""
    found = answer.classification
    lines = [human("attempt", found, explain)]
    if (origin := answer.origin) is not None:
        rank = "?" if origin.rank is None else origin.rank
        gpu = "?" if origin.gpu is None else origin.gpu
        lines.append(f"origin: rank {rank} on {origin.node or '?'} (GPU {gpu}), {origin.path}:{origin.line}")
        lines.append(f"    how: {origin.how}")
    kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(answer.cascade_kinds.items(), key=lambda kv: -kv[1]))
    lines.append(f"cascade: {len(answer.cascade)} ranks" + (f" ({kinds})" if kinds else ""))
    return "\n".join(lines)


def listed_files(source: str) -> list[Path]:
    """The paths of a --files-from list, one a line ('-': standard input); blank lines skipped."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"{source}: {exc}", param_hint="--files-from") from None
    return [Path(line) for line in text.splitlines() if line.strip()]


def attempt_layout(facts: Path | None) -> Layout:
    """The attempt facts that say where ranks ran (nodes, tasks_per_node, pods, gpus)."""
    if facts is None:
        return Layout()
    try:
        return Layout.of(json.loads(facts.read_text(encoding="utf-8")))
    except (OSError, ValueError, AttributeError) as exc:
        raise click.BadParameter(f"{facts}: {exc}", param_hint="--facts") from None


@click.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path, allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file, one per line (the classify contract).")
@click.option("--explain", is_flag=True, help="Also show the rules that matched and why they lost.")
@click.option(
    "--summary/--no-summary", default=None, help="Counts per reason at the end (default: on for several files, text mode)."
)
@click.option(
    "--attempt",
    is_flag=True,
    help="The files are one attempt's logs (one per rank, or interleaved): one answer, with its origin rank and cascade.",
)
@click.option(
    "--facts",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --attempt: the attempt facts as JSON (nodes in rank order, tasks_per_node, pods, gpus).",
)
@click.option("--files-from", "files_from", help="Read the log paths from this file, one a line ('-': standard input).")
@click.pass_context
def classify(
    ctx: click.Context,
    files: tuple[Path, ...],
    as_json: bool,
    explain: bool,
    summary: bool | None,
    attempt: bool,
    facts: Path | None,
    files_from: str | None,
) -> None:
    """Classify failed-attempt logs (plain or gzip; '-' reads standard input)."""
    paths = [*files, *(listed_files(files_from) if files_from else [])]
    if not paths:
        raise click.UsageError("no log given: name files, or --files-from LIST")
    if facts is not None and not attempt:
        raise click.UsageError("--facts goes with --attempt")
    chosen = classifier(ctx, with_model=True)
    if attempt:
        if any(str(path) == "-" for path in paths):
            raise click.UsageError("--attempt reads files; standard input cannot be one of them")
        layout = attempt_layout(facts)
        try:
            answer = read_attempt(chosen, paths, layout)
        except InputError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(EXIT_INPUT)
        if as_json:
            click.echo(json.dumps(attempt_json(answer, [str(p) for p in paths], explain), ensure_ascii=False))
        else:
            click.echo(attempt_human(answer, explain))
        return
    counts: Counter[str] = Counter()
    errors = 0
    for path in paths:
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
    if summary or (summary is None and not as_json and len(paths) > 1):
        click.echo("\n" + summary_table(counts, errors, chosen.ruleset.taxonomy.names()))
    if errors:
        ctx.exit(EXIT_INPUT)
