"""`failclass train`, `evaluate` and `label`: the fallback model and its corpus."""

from __future__ import annotations

import json
from pathlib import Path

import click

from failclass.classifier import Classifier
from failclass.cli.common import check_corpus, configured, fallback, input_failure, ruleset
from failclass.cli.extras import needs
from failclass.cli.progress import progress
from failclass.errors import ConfigError, InputError
from failclass.model.artifact import configured_path
from failclass.model.corpus import MANIFEST, read_manifest, scan_labels
from failclass.model.labels import add_label, labels_dir

labels_dir_option = click.option(
    "--labels-dir",
    "labels_dir_",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Operators' labels (default corpora/labels in a checkout, or FAILCLASS_LABELS_DIR).",
)
manifest_option = click.option(
    "--manifest",
    type=click.Path(dir_okay=False, path_type=Path),
    default=MANIFEST,
    show_default=True,
    help="The labelled corpus (corpora/manifest.jsonl of a checkout).",
)


@click.command()
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write the model (default: the built-in failclass/data/models/fallback.npz, or FAILCLASS_MODEL).",
)
@manifest_option
@labels_dir_option
@needs("train")
def train(out: Path | None, manifest: Path, labels_dir_: Path | None) -> None:
    """Fit the fallback model on the corpus's training side and operators' labels."""
    from failclass.model.training import train as fit  # scikit-learn's model selection loads only here

    out = out or configured_path()[0]
    check_corpus(manifest, "failclass train fits the model on")
    entries = configured(lambda: read_manifest(manifest))
    labels = list(scan_labels(labels_dir_ or labels_dir()))
    with progress("training", "fits") as advance:
        metadata = fit(entries, labels, out, on_progress=advance)
    chosen = next(p for p in metadata["threshold_choice"]["curve"] if p["threshold"] == metadata["threshold"])
    click.echo(
        f"trained on {metadata['trained_on']['logs']} logs ({len(labels)} operator labels), "
        f"{len(metadata['classes'])} classes, in {metadata['fit_seconds']} s\n"
        f"threshold {metadata['threshold']}: cross-validated precision {chosen['precision']:.3f}, "
        f"answers {chosen['coverage']:.1%} of failed logs\n"
        f"wrote {out} and {out.with_suffix('.json')}"
    )


@click.command("evaluate")
@click.option("--split", type=click.Choice(["test", "train", "holdout"]), default="test", show_default=True)
@click.option(
    "--folds",
    "by_repository",
    is_flag=True,
    help="Leave-repository-out cross-validation of the development side instead (a model per fold; rules written "
    "only from a fold's repositories are left out of it).",
)
@manifest_option
@click.option("--json", "as_json", is_flag=True, help="Every figure, the confusion matrix included, as JSON.")
@click.pass_context
@needs("train")
def evaluate_command(ctx: click.Context, split: str, by_repository: bool, manifest: Path, as_json: bool) -> None:
    """Rules alone, rules plus the model, and the model alone, on one side of the corpus."""
    from failclass.model.evaluation import evaluate, render  # scikit-learn's metrics load only here

    check_corpus(manifest, "failclass evaluate scores")
    entries = configured(lambda: read_manifest(manifest))
    rules = ruleset(ctx)
    model = fallback(ctx, rules, required=True)
    assert model is not None  # required
    folds: list[dict[str, object]] = []
    with progress("evaluating", "logs") as advance:
        if by_repository:
            from failclass.model.crossval import cross_validate

            result, folds = configured(lambda: cross_validate(entries, rules, model.threshold, on_progress=advance))
        else:
            with_model = Classifier(rules, model=model)
            result = configured(lambda: evaluate(entries, Classifier(rules), with_model, split, advance))
    if as_json:
        click.echo(json.dumps({**result.to_dict(), "folds": folds}, indent=1))
        return
    click.echo(render(result, rules.taxonomy.names()))
    for fold in folds:
        click.echo(
            f"fold {fold['fold']}: {fold['logs']} logs of {fold['repositories']} repositories,"
            f" {fold['rules_left_out']} rules left out"
        )


@click.command()
@click.argument("log", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("reason")
@click.option("--note", default="", help="Why: kept beside the label.")
@labels_dir_option
@click.pass_context
def label(ctx: click.Context, log: Path, reason: str, note: str, labels_dir_: Path | None) -> None:
    """Correct the reason of LOG; the next `failclass train` learns it."""
    taxonomy = ruleset(ctx).taxonomy
    try:
        stored = add_label(log, reason, set(taxonomy.reasons), labels_dir_ or labels_dir(), note)
    except InputError as exc:
        input_failure(ctx, exc)
        return
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="REASON") from None
    click.echo(f"labelled {log} as {taxonomy[reason].name}: kept as {stored}; `failclass train` will learn it")
