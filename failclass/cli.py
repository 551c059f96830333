"""Thin commands over the library. Exit status: 0 success, 1 an input could not be read,
2 a usage or configuration error (click's own usage errors included)."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import click

from failclass import __version__
from failclass.artifact import LoadedModel, ModelError, configured_path, load_configured
from failclass.classify import Classification, Classifier
from failclass.corpus import MANIFEST, read_manifest, scan_labels
from failclass.errors import ConfigError, InputError
from failclass.labels import add_label, labels_dir
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


def _model(ctx: click.Context, ruleset: RuleSet, required: bool = False) -> LoadedModel | None:
    """The fallback model: an explicitly named one must load; the built-in one, if it
    cannot, is reported and classification goes on with rules only."""
    if ctx.obj["no_model"] and not required:
        return None
    try:
        loaded = load_configured(
            ctx.obj["model"], set(ruleset.taxonomy.reasons), lambda text: click.echo(f"warning: {text}", err=True), required
        )
    except ModelError as exc:
        raise ConfigProblem(str(exc)) from None
    threshold = ctx.obj["threshold"]
    return loaded if loaded is None or threshold is None else loaded.with_threshold(threshold)


def _classifier(ctx: click.Context, with_model: bool = False) -> Classifier:
    ruleset = _ruleset(ctx)
    model = _model(ctx, ruleset) if with_model else None
    try:
        return Classifier(ruleset, model=model)
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
@click.option(
    "--model",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The fallback model (a .joblib with its .json); default models/fallback.joblib, or FAILCLASS_MODEL.",
)
@click.option("--no-model", is_flag=True, help="Rules only: do not load the fallback model.")
@click.option(
    "--model-threshold",
    type=click.FloatRange(0, 1),
    help="Answer with the model from this confidence on (default: the threshold chosen by `train`).",
)
@click.pass_context
def main(
    ctx: click.Context, rules_dirs: tuple[Path, ...], model: Path | None, no_model: bool, model_threshold: float | None
) -> None:
    """failclass: name why a GPU training attempt failed, from its logs."""
    ctx.obj = {"rules_dirs": rules_dirs, "model": model, "no_model": no_model, "threshold": model_threshold}


def _human(path: str, result: Classification, explain: bool) -> str:
    categories = ",".join(result.categories) or "-"
    head = f"{path}: {result.reason_name} [{categories}]"
    if result.rule_id:
        head += f"  (rule {result.rule_id}, confidence {result.confidence:.2f})"
    elif result.source == "model":
        head += f"  (model, confidence {result.confidence:.2f})"
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
    classifier = _classifier(ctx, with_model=True)
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


labels_dir_option = click.option(
    "--labels-dir",
    "labels_dir_",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Operators' labels (default corpora/labels, or FAILCLASS_LABELS_DIR).",
)


@main.command()
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write the model (default: models/fallback.joblib, or FAILCLASS_MODEL).",
)
@click.option("--manifest", type=click.Path(dir_okay=False, path_type=Path), default=MANIFEST, show_default=True)
@labels_dir_option
def train(out: Path | None, manifest: Path, labels_dir_: Path | None) -> None:
    """Fit the fallback model on the corpus's training side and operators' labels."""
    from failclass.training import train as fit  # scikit-learn's model selection loads only here

    out = out or configured_path()[0]
    try:
        corpus = read_manifest(manifest)
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None
    labels = list(scan_labels(labels_dir_ or labels_dir()))
    metadata = fit(corpus, labels, out)
    chosen = next(p for p in metadata["threshold_choice"]["curve"] if p["threshold"] == metadata["threshold"])
    click.echo(
        f"trained on {metadata['trained_on']['logs']} logs ({len(labels)} operator labels), "
        f"{len(metadata['classes'])} classes, in {metadata['fit_seconds']} s\n"
        f"threshold {metadata['threshold']}: cross-validated precision {chosen['precision']:.3f}, "
        f"answers {chosen['coverage']:.1%} of failed logs\n"
        f"wrote {out} and {out.with_suffix('.json')}"
    )


@main.command("evaluate")
@click.option("--split", type=click.Choice(["test", "train", "holdout"]), default="test", show_default=True)
@click.option("--manifest", type=click.Path(dir_okay=False, path_type=Path), default=MANIFEST, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Every figure, the confusion matrix included, as JSON.")
@click.pass_context
def evaluate_command(ctx: click.Context, split: str, manifest: Path, as_json: bool) -> None:
    """Rules alone versus rules plus the model on one side of the corpus."""
    from failclass.evaluation import evaluate, render  # scikit-learn's metrics load only here

    ruleset = _ruleset(ctx)
    model = _model(ctx, ruleset, required=True)
    try:
        corpus = read_manifest(manifest)
        result = evaluate(corpus, Classifier(ruleset), Classifier(ruleset, model=model), split)
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=1))
    else:
        click.echo(render(result, {r.id: r.name for r in ruleset.taxonomy.reasons.values()}))


@main.command()
@click.argument("log", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("reason")
@click.option("--note", default="", help="Why: kept beside the label.")
@labels_dir_option
@click.pass_context
def label(ctx: click.Context, log: Path, reason: str, note: str, labels_dir_: Path | None) -> None:
    """Correct the reason of LOG; the next `failclass train` learns it."""
    taxonomy = _ruleset(ctx).taxonomy
    try:
        stored = add_label(log, reason, set(taxonomy.reasons), labels_dir_ or labels_dir(), note)
    except InputError as exc:
        click.echo(f"error: {exc}", err=True)
        ctx.exit(EXIT_INPUT)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="REASON") from None
    click.echo(f"labelled {log} as {taxonomy[reason].name}: kept as {stored}; `failclass train` will learn it")


@main.command()
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
        click.echo(f"error: {exc}", err=True)
        ctx.exit(EXIT_INPUT)
    unknown = sorted({r.reason for r in records if r.reason} - set(builtin_taxonomy().reasons))
    if unknown:
        raise click.UsageError(f"reasons unknown to the taxonomy: {unknown}")
    built = build_report(records, builtin_taxonomy())
    if fmt == "html":
        from failclass.analytics.html import to_html  # matplotlib loads only here

        click.echo(to_html(built, records, builtin_taxonomy()), nl=False)
        return
    click.echo({"markdown": to_markdown, "csv": to_csv, "json": to_json}[fmt](built), nl=False)


@main.command()
@click.argument("sources", nargs=-1, required=True)
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="Results folder (resumed if it exists)."
)
@click.option("--engine", type=click.Choice(["local", "dask"]), default="local", show_default=True)
@click.option("--scheduler", help="Dask scheduler address (tcp://host:8786) for --engine dask.")
@click.option("--manifest", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Attempt facts and their logs.")
@click.option("--id-pattern", help="Regex with groups job (and attempt) over a log's path, when there is no manifest.")
@click.option("--processes", type=click.IntRange(1, 256), default=os.cpu_count() or 1, show_default="all cores")
@click.pass_context
def batch(
    ctx: click.Context,
    sources: tuple[str, ...],
    out: Path,
    engine: str,
    scheduler: str | None,
    manifest: Path | None,
    id_pattern: str | None,
    processes: int,
) -> None:
    """Classify every attempt in directories and archives (tar, zip, gz, zst) of logs;
    SOURCES are local paths or fsspec URLs."""

    from failclass.analytics.records import manifest_rows
    from failclass.batch import DEFAULT_ID_PATTERN, manifest_maps, run_batch, write_parquet

    missing = [s for s in sources if "://" not in s and not Path(s).exists()]
    if missing:
        raise click.UsageError(f"no such source: {', '.join(missing)}")
    if engine == "dask" and not scheduler:
        raise click.UsageError("--engine dask needs --scheduler ADDRESS")

    facts = owners = None
    if manifest is not None:
        try:
            facts, owners = manifest_maps(dict(row) for _, row in manifest_rows(manifest))
        except InputError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(EXIT_INPUT)
    summary = run_batch(
        list(sources), out, processes, id_pattern or DEFAULT_ID_PATTERN, facts, owners, use_model=not ctx.obj["no_model"]
    )
    parquet = write_parquet(out) if (out / "results.jsonl").exists() else None
    click.echo(
        f"{summary.attempts:,} attempts classified ({summary.skipped_done:,} already done), {summary.members:,} logs, "
        f"{summary.bytes / 1e6:,.1f} MB in {summary.seconds} s -> {out / 'results.jsonl'}" + (f", {parquet}" if parquet else "")
    )
    if manifest is not None and parquet is not None:
        click.echo(f"report: {_batch_report(out)}")
    names = {r.id: r.name for r in builtin_taxonomy().reasons.values()}
    for reason, count in sorted(summary.reasons.items(), key=lambda item: -item[1]):
        click.echo(f"  {names.get(reason, reason):<24}{count:>8,}")
    for problem in summary.problems:
        click.echo(f"problem: {problem}", err=True)
    if summary.problems:
        ctx.exit(EXIT_INPUT)


def _batch_report(out: Path) -> Path:
    """report.md and report.html beside the results, from the manifest's facts."""
    from failclass.analytics.html import to_html
    from failclass.analytics.records import record_of
    from failclass.analytics.report import build_report, to_markdown

    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    records = [record_of(row, f"{out}/results.jsonl") for row in rows if row.get("user") and row.get("status")]
    built = build_report(records, builtin_taxonomy())
    (out / "report.md").write_text(to_markdown(built))
    (out / "report.html").write_text(to_html(built, records, builtin_taxonomy()))
    return out / "report.html"


@main.command()
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


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8080, show_default=True, type=int)
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64))
@click.option("--database-url", help="SQLAlchemy URL (default: a SQLite file in ~/.local/share/failclass).")
@click.option("--tokens-file", type=click.Path(dir_okay=False, path_type=Path), help="API tokens; without one, no auth.")
@click.option("--policy", "policy_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Policy overrides.")
@click.pass_context
def serve(
    ctx: click.Context,
    host: str,
    port: int,
    workers: int,
    database_url: str | None,
    tokens_file: Path | None,
    policy_file: Path | None,
) -> None:
    """Run the HTTP service (OpenAPI docs at /docs)."""
    import os

    import uvicorn

    settings = {
        "FAILCLASS_DATABASE_URL": database_url,
        "FAILCLASS_TOKENS_FILE": str(tokens_file) if tokens_file else None,
        "FAILCLASS_POLICY_FILE": str(policy_file) if policy_file else None,
        "FAILCLASS_MODEL": str(ctx.obj["model"]) if ctx.obj["model"] else None,
        "FAILCLASS_NO_MODEL": "true" if ctx.obj["no_model"] else None,
    }
    os.environ.update({k: v for k, v in settings.items() if v is not None})
    if tokens_file is None and host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(f"warning: no --tokens-file: anyone who reaches {host}:{port} can read and write", err=True)
    uvicorn.run("service.app:app_from_environment", factory=True, host=host, port=port, workers=workers)


@main.group()
def db() -> None:
    """The service's database."""


@db.command("upgrade")
@click.option("--database-url", envvar="FAILCLASS_DATABASE_URL", help="SQLAlchemy URL (default: the service's SQLite file).")
def db_upgrade(database_url: str | None) -> None:
    """Apply the schema migrations (the service also does at start)."""
    from failclass.store.migrate import current, upgrade
    from failclass.store.repository import default_database_url, make_engine

    engine = make_engine(database_url or default_database_url())
    upgrade(engine)
    click.echo(f"{engine.url.render_as_string(hide_password=True)}: schema at revision {current(engine)}")


@main.group()
def token() -> None:
    """API tokens for the service."""


@token.command("create")
@click.argument("name")
@click.option("--scopes", default="read", show_default=True, help="Comma-separated: read, write.")
@click.option("--file", "path", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The tokens file.")
def token_create(name: str, scopes: str, path: Path) -> None:
    """Create a token; it is printed once, only its SHA-256 is kept."""
    from service.auth import create_token

    try:
        secret = create_token(path, name, [s.strip() for s in scopes.split(",") if s.strip()])
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(secret)


def _register_hook() -> None:
    from failclass.hook.commands import hook

    main.add_command(hook)


_register_hook()

if __name__ == "__main__":
    main()
