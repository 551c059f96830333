"""Thin commands over the library. Exit status: 0 success, 1 an input could not be read,
2 a usage or configuration error (click's own usage errors included)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import click

from failclass import __version__
from failclass.classify import Classification, Classifier
from failclass.errors import ConfigError, InputError
from failclass.lint import lint
from failclass.rules import Rule, RuleSet, load_rules
from failclass.ruletest import run_examples
from failclass.scaffold import new_rule
from failclass.taxonomy import BUILTIN_DIR, builtin_taxonomy

EXIT_INPUT = 1
EXIT_USAGE = 2


class ConfigProblem(click.ClickException):
    """Invalid rules, prefixes or taxonomy: reported like a usage error."""

    exit_code = EXIT_USAGE


def _ruleset(ctx: click.Context) -> RuleSet:
    try:
        return load_rules(ctx.obj["rules_dirs"])
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None


def _classifier(ctx: click.Context) -> Classifier:
    ruleset = _ruleset(ctx)
    try:
        return Classifier(ruleset)
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None


@click.group()
@click.version_option(__version__, prog_name="failclass")
@click.option(
    "--rules-dir",
    "rules_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="An extra folder of rule files, loaded after the built-in ones (repeatable; also FAILCLASS_RULES_DIR).",
)
@click.pass_context
def main(ctx: click.Context, rules_dirs: tuple[Path, ...]) -> None:
    """failclass: name why a GPU training attempt failed, from its logs."""
    ctx.obj = {"rules_dirs": rules_dirs}


def _human(path: str, result: Classification, explain: bool) -> str:
    categories = ",".join(result.categories) or "-"
    head = f"{path}: {result.reason_name} [{categories}]"
    if result.rule_id:
        head += f"  (rule {result.rule_id}, confidence {result.confidence:.2f})"
    else:
        head += "  (no rule matched)"
    lines = [head] + [f"    line {e.line}: {e.text}" for e in result.evidence]
    if result.why:
        lines.append(f"    why: {result.why}")
    if explain:
        for other in result.also_matched:
            lines.append(
                f"    also {other['rule_id']} ({other['reason']}) at line {other['line']}: lost, {other['lost_because']}"
            )
    return "\n".join(lines)


def _summary(results: Counter[str], errors: int, names: dict[str, str]) -> str:
    total = sum(results.values()) + errors
    rows = [f"{total} log(s): {sum(results.values())} classified, {errors} unreadable"]
    width = max((len(names[r]) for r in results), default=0)
    for reason, count in results.most_common():
        rows.append(f"  {names[reason]:<{width}}  {count:>5}  {100 * count / max(total, 1):5.1f}%")
    return "\n".join(rows)


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path, allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file, one per line (the classify contract).")
@click.option("--explain", is_flag=True, help="Also show the rules that matched and why they lost.")
@click.option(
    "--summary/--no-summary", default=None, help="Counts per reason at the end (default: on for several files, text mode)."
)
@click.pass_context
def classify(ctx: click.Context, files: tuple[Path, ...], as_json: bool, explain: bool, summary: bool | None) -> None:
    """Classify failed-attempt logs (plain or gzip; '-' reads standard input)."""
    classifier = _classifier(ctx)
    counts: Counter[str] = Counter()
    errors = 0
    for path in files:
        name = str(path)
        try:
            if name == "-":
                result = classifier.classify_bytes(sys.stdin.buffer.read())
            else:
                result = classifier.classify_path(path)
        except InputError as exc:
            errors += 1
            if as_json:
                click.echo(json.dumps({"path": name, "error": str(exc)}))
            else:
                click.echo(f"{name}: error: {exc}", err=True)
            continue
        counts[result.reason] += 1
        if as_json:
            click.echo(json.dumps({"path": name, **result.to_dict(explain)}, ensure_ascii=False))
        else:
            click.echo(_human(name, result, explain))
    if summary or (summary is None and not as_json and len(files) > 1):
        names = {r.id: r.name for r in classifier.ruleset.taxonomy.reasons.values()}
        click.echo("\n" + _summary(counts, errors, names))
    if errors:
        ctx.exit(EXIT_INPUT)


@main.group()
def rules() -> None:
    """List, test and lint the signature rules."""


def _rule_dict(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "reason": rule.reason,
        "kind": rule.kind,
        "priority": rule.priority,
        "patterns": list(rule.patterns),
        "ignore_case": rule.ignore_case,
        "description": rule.description,
        "file": rule.path,
    }


@rules.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per rule, one per line.")
@click.option("--reason", help="Only the rules of this reason id.")
@click.pass_context
def rules_list(ctx: click.Context, as_json: bool, reason: str | None) -> None:
    """Every rule with its reason, kind, priority and patterns."""
    ruleset = _ruleset(ctx)
    if reason and reason not in ruleset.taxonomy:
        raise click.BadParameter(f"unknown reason {reason!r}", param_hint="--reason")
    selected = [r for r in ruleset.rules if reason in (None, r.reason)]
    for rule in selected:
        if as_json:
            click.echo(json.dumps(_rule_dict(rule), ensure_ascii=False))
        else:
            click.echo(f"{rule.id:<52} {rule.kind:<8} {rule.priority:>3}  {rule.description}")
    if not as_json:
        per_reason = Counter(r.reason for r in selected)
        click.echo(f"\n{len(selected)} rules over {len(per_reason)} reasons")


@rules.command("new")
@click.argument("reason")
@click.argument("slug")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path), default=BUILTIN_DIR, show_default=True)
@click.pass_context
def rules_new(ctx: click.Context, reason: str, slug: str, folder: Path) -> None:
    """Append a rule skeleton for REASON to its file; fill in a real example before it loads."""
    try:
        path = new_rule(folder, builtin_taxonomy(), reason, slug)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"added {reason}.{slug} to {path}: fill in its pattern, description and a real example with its source")


@rules.command("test")
@click.pass_context
def rules_test(ctx: click.Context) -> None:
    """Run every rule's examples through the real engine."""
    classifier = _classifier(ctx)
    count, failures = run_examples(classifier)
    for failure in failures:
        click.echo(f"FAIL {failure}")
    click.echo(f"{len(classifier.ruleset.rules)} rules, {count} examples, {len(failures)} failures")
    if failures:
        ctx.exit(EXIT_INPUT)


@rules.command("lint")
@click.option("--strict", is_flag=True, help="Warnings fail too.")
@click.pass_context
def rules_lint(ctx: click.Context, strict: bool) -> None:
    """Catch dangerous, too-broad or overlapping patterns."""
    classifier = _classifier(ctx)
    findings = lint(classifier.ruleset, classifier.engine)
    for finding in findings:
        click.echo(str(finding))
    errors = sum(f.severity == "error" for f in findings)
    warnings = len(findings) - errors
    click.echo(f"{len(classifier.ruleset.rules)} rules: {errors} errors, {warnings} warnings")
    if errors or (strict and warnings):
        ctx.exit(EXIT_INPUT)


if __name__ == "__main__":
    main()
