"""`failclass rules ...`: list, scaffold, test and lint the signature rules."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import click

from failclass.cli.common import EXIT_INPUT, ConfigProblem, classifier, database_option, options, ruleset
from failclass.matching.lint import lint
from failclass.matching.rules import Rule, default_rules_dir, operator_rule_dirs
from failclass.matching.ruletest import run_examples
from failclass.matching.scaffold import new_rule
from failclass.matching.taxonomy import BUILTIN_DIR, builtin_taxonomy
from failclass.resources import CHECKOUT


@click.group()
def rules() -> None:
    """List, test and lint the signature rules."""


def rule_dict(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "reason": rule.reason,
        "kind": rule.kind,
        "priority": rule.priority,
        "patterns": list(rule.patterns),
        "exception": rule.exception.to_dict() if rule.exception else None,
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
    loaded = ruleset(ctx)
    if reason and reason not in loaded.taxonomy:
        raise click.BadParameter(f"unknown reason {reason!r}", param_hint="--reason")
    selected = [r for r in loaded.rules if reason in (None, r.reason)]
    for rule in selected:
        if as_json:
            click.echo(json.dumps(rule_dict(rule), ensure_ascii=False))
        else:
            click.echo(f"{rule.id:<52} {rule.kind:<8} {rule.priority:>3}  {rule.description}")
    if not as_json:
        per_reason = Counter(r.reason for r in selected)
        click.echo(f"\n{len(selected)} rules over {len(per_reason)} reasons")


@rules.command("new")
@click.argument("reason")
@click.argument("slug")
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where (default: the operator's rules folder: the first --rules-dir, else FAILCLASS_RULES_DIR, else "
    "~/.local/share/failclass/rules). In a checkout, failclass/data/signatures adds a built-in rule.",
)
@click.pass_context
def rules_new(ctx: click.Context, reason: str, slug: str, folder: Path | None) -> None:
    """Append a rule skeleton for REASON to its file; fill in a real example before it loads."""
    target = folder or next(iter(operator_rule_dirs(options(ctx).rules_dirs)), default_rules_dir())
    if target is None:
        raise click.UsageError("no home folder to keep your rules in: name one with --dir, --rules-dir or FAILCLASS_RULES_DIR")
    if CHECKOUT is None and target.resolve() == BUILTIN_DIR.resolve():
        raise click.UsageError(
            f"{target} holds the installed package's own rules: add yours to your rules folder (--rules-dir DIR, "
            f"FAILCLASS_RULES_DIR, or {default_rules_dir()} by default)"
        )
    try:
        path = new_rule(target, builtin_taxonomy(), reason, slug)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    except OSError as exc:
        raise ConfigProblem(f"{target}: cannot write the rule: {exc.strerror or exc}") from None
    click.echo(
        f"added {reason}.{slug} to {path}: fill in its pattern, description and a real example with its source "
        "(until then the rules that folder adds are refused, with the field to fill in)"
    )


@rules.command("test")
@click.pass_context
def rules_test(ctx: click.Context) -> None:
    """Run every rule's and every ending's examples through the real engine."""
    chosen = classifier(ctx)
    count, failures = run_examples(chosen)
    for failure in failures:
        click.echo(f"FAIL {failure}")
    endings = len(chosen.ruleset.endings.no_cause) + len(chosen.ruleset.endings.benign)
    click.echo(f"{len(chosen.ruleset.rules)} rules, {endings} endings, {count} examples, {len(failures)} failures")
    if failures:
        ctx.exit(EXIT_INPUT)


@rules.command("propose")
@database_option()
@click.option(
    "--min-jobs",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Only lines printed by failures of at least this many jobs.",
)
@click.option(
    "--top", type=click.IntRange(min=1), default=10, show_default=True, help="At most this many proposals, largest first."
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write them to this file (not into a rules folder).")
@click.pass_context
def rules_propose(ctx: click.Context, database_url: str | None, min_jobs: int, top: int, out: Path | None) -> None:
    """Rule skeletons for the lines that failures no rule named (No signature, or the
    model's answer) printed across jobs and their good runs never did: the template as a
    safe pattern, the real lines as examples with their jobs. Printed, or written to
    --out, for an operator to give a reason and a description and move into a rules file."""
    from failclass.matching.propose import propose
    from failclass.store.reach import default_database_url, masked, reaching
    from failclass.store.repository import Store

    url = database_url or default_database_url()
    if out is not None and any(out.resolve().is_relative_to(folder.resolve()) for folder in _rule_folders(ctx)):
        raise click.UsageError(f"{out} is in a rules folder: write the proposals elsewhere and move the ones you accept")
    with reaching(url):
        clusters = Store.open(url, migrate=False).unseen_clusters(min_jobs)
    chosen = classifier(ctx)
    proposals = propose(clusters, chosen.ruleset, chosen.matcher, top)
    head = (
        f"# failclass rules propose: {len(proposals)} from {masked(url)}, lines of {min_jobs} jobs or more that no rule names.\n"
        "# Give each the reason it shows (docs/TAXONOMY.md) in place of REASON, and a description; move it to that\n"
        "# reason's file in your rules folder (failclass rules new), then run `failclass rules test`.\n"
    )
    text = head + "".join(proposal.yaml() for proposal in proposals)
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigProblem(f"{out}: cannot write: {exc.strerror or exc}") from None
    click.echo(f"{len(proposals)} proposals written to {out}")


def _rule_folders(ctx: click.Context) -> list[Path]:
    """Where rules are loaded from: the built-in folder and the operator's."""
    operator = operator_rule_dirs(options(ctx).rules_dirs)
    default = default_rules_dir()
    return [BUILTIN_DIR, *operator, *([default] if default is not None else [])]


@rules.command("lint")
@click.option("--strict", is_flag=True, help="Warnings fail too.")
@click.pass_context
def rules_lint(ctx: click.Context, strict: bool) -> None:
    """Catch dangerous, too-broad or overlapping patterns."""
    chosen = classifier(ctx)
    findings = lint(chosen.ruleset, chosen.matcher)
    for finding in findings:
        click.echo(str(finding))
    errors = sum(f.severity == "error" for f in findings)
    warnings = len(findings) - errors
    click.echo(f"{len(chosen.ruleset.rules)} rules: {errors} errors, {warnings} warnings")
    if errors or (strict and warnings):
        ctx.exit(EXIT_INPUT)
