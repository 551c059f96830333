"""`failclass evaluate`: how right the classifier is on one side of the corpus, with rules
alone, with rules plus the fallback model (the product), and with the model alone (its
top answer, whatever its confidence: what it would say of logs no rule knows).

For failed logs: per-reason precision, recall and F1, accuracy, macro F1, the confusion
matrix and the share answered "No signature" (Philly: 4.2% of failures). For logs of runs
that did not fail (passed, or killed from outside): the false-fire rate, any answer but
"No signature" (goal: 0).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

from failclass.classifier import Classifier
from failclass.errors import ConfigError
from failclass.logs.text import tail_text
from failclass.matching.taxonomy import NO_SIGNATURE
from failclass.model.corpus import Entry, resolve

CONFIGURATIONS = ("rules", "rules+model", "model alone")


@dataclass(frozen=True)
class Scores:
    """One configuration's results on the failed and the passed logs of a split."""

    truth: list[str]
    predicted: list[str]
    passed_fired: list[str]  # paths of passed logs that got a failure reason
    passed_total: int
    labels: list[str] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        right = sum(t == p for t, p in zip(self.truth, self.predicted, strict=False))
        return right / len(self.truth) if self.truth else 0.0

    def per_reason(self) -> dict[str, dict[str, float]]:
        precision, recall, f1, support = precision_recall_fscore_support(
            self.truth, self.predicted, labels=self.labels, zero_division=0
        )
        return {
            label: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(s)}
            for label, p, r, f, s in zip(self.labels, precision, recall, f1, support, strict=False)
        }

    @property
    def macro_f1(self) -> float:
        rows = [row for label, row in self.per_reason().items() if row["support"] and label != NO_SIGNATURE]
        return sum(row["f1"] for row in rows) / len(rows) if rows else 0.0

    @property
    def no_signature_share(self) -> float:
        return self.predicted.count(NO_SIGNATURE) / len(self.predicted) if self.predicted else 0.0

    @property
    def unexplained_share(self) -> float:
        """Of the logs that name a reason (labelled anything but No signature), the share answered
        No signature: the issue's "<= 3% where the log names a reason"."""
        named = [p for t, p in zip(self.truth, self.predicted, strict=False) if t != NO_SIGNATURE]
        return named.count(NO_SIGNATURE) / len(named) if named else 0.0

    @property
    def false_fire_rate(self) -> float:
        return len(self.passed_fired) / self.passed_total if self.passed_total else 0.0

    def confusion(self) -> list[list[int]]:
        return confusion_matrix(self.truth, self.predicted, labels=self.labels).tolist()

    def mistakes(self) -> Counter[tuple[str, str]]:
        return Counter((t, p) for t, p in zip(self.truth, self.predicted, strict=False) if t != p)

    def to_dict(self) -> dict[str, Any]:
        return {
            "failed_logs": len(self.truth),
            "accuracy": round(self.accuracy, 4),
            "macro_f1": round(self.macro_f1, 4),
            "no_signature_share": round(self.no_signature_share, 4),
            "unexplained_share": round(self.unexplained_share, 4),
            "passed_logs": self.passed_total,
            "false_fire_rate": round(self.false_fire_rate, 4),
            "passed_fired": self.passed_fired,
            "per_reason": self.per_reason(),
            "labels": self.labels,
            "confusion": self.confusion(),
        }


@dataclass(frozen=True)
class Evaluation:
    split: str
    scores: dict[str, Scores]
    model_helped: list[str]  # failed logs right with the model, wrong with rules alone
    model_hurt: list[str]  # the opposite

    @classmethod
    def of(
        cls, split: str, failed: Sequence[Entry], answers: dict[str, list[str]], fired: dict[str, list[str]], passed: int
    ) -> Evaluation:
        truth = [e.reason for e in failed]
        labels = sorted(set(truth).union({NO_SIGNATURE}, *answers.values()))
        scores = {config: Scores(truth, answers[config], fired[config], passed, labels) for config in CONFIGURATIONS}
        helped, hurt = [], []
        for entry, before, after in zip(failed, answers["rules"], answers["rules+model"], strict=False):
            if before != entry.reason and after == entry.reason:
                helped.append(f"{entry.path}: {before} -> {after}")
            elif before == entry.reason and after != entry.reason:
                hurt.append(f"{entry.path}: {before} -> {after}")
        return cls(split, scores, helped, hurt)

    def to_dict(self) -> dict[str, Any]:
        return {
            "split": self.split,
            **{name: score.to_dict() for name, score in self.scores.items()},
            "model_helped": self.model_helped,
            "model_hurt": self.model_hurt,
        }


def evaluate(
    entries: Sequence[Entry],
    rules_only: Classifier,
    with_model: Classifier,
    split: str,
    on_progress: Callable[[int, int], None] | None = None,
) -> Evaluation:
    """The three configurations on one side of the corpus."""
    return score([e for e in entries if e.split == split], rules_only, with_model, split, on_progress)


def score(
    chosen: Sequence[Entry],
    rules_only: Classifier,
    with_model: Classifier,
    name: str,
    on_progress: Callable[[int, int], None] | None = None,
) -> Evaluation:
    """The three configurations on ``chosen`` logs; ``on_progress`` hears (logs done, logs)."""
    if with_model.model is None:
        raise ConfigError("evaluation needs a model")
    model = with_model.model.model
    failed = [e for e in chosen if e.outcome == "failed"]
    passed = [e for e in chosen if e.failure_free]
    answers: dict[str, list[str]] = {config: [] for config in CONFIGURATIONS}
    fired: dict[str, list[str]] = {config: [] for config in CONFIGURATIONS}
    for done, entry in enumerate(failed + passed, 1):
        path = resolve(entry)
        results = [(c.reason, c.source) for c in (rules_only.classify_path(path), with_model.classify_path(path))]
        results.append((str(model.predict([tail_text(path)])[0]), "model"))
        for config, (reason, source) in zip(CONFIGURATIONS, results, strict=False):
            if entry.outcome == "failed":
                answers[config].append(reason)
            elif reason != NO_SIGNATURE:
                fired[config].append(f"{entry.path} -> {reason} ({source})")
        if on_progress is not None:
            on_progress(done, len(failed) + len(passed))
    return Evaluation.of(name, failed, answers, fired, len(passed))


def merged(name: str, parts: Sequence[tuple[Sequence[Entry], Evaluation]]) -> Evaluation:
    """One evaluation of several (a cross-validation's folds)."""
    failed = [e for entries, _ in parts for e in entries if e.outcome == "failed"]
    answers = {config: [p for _, ev in parts for p in ev.scores[config].predicted] for config in CONFIGURATIONS}
    fired = {config: [f for _, ev in parts for f in ev.scores[config].passed_fired] for config in CONFIGURATIONS}
    return Evaluation.of(name, failed, answers, fired, sum(ev.scores["rules"].passed_total for _, ev in parts))


def render(evaluation: Evaluation, names: dict[str, str]) -> str:
    """The report an operator reads: the headline figures side by side, then per reason."""
    rules, both, alone = (evaluation.scores[name] for name in CONFIGURATIONS)
    out = [f"split {evaluation.split}: {len(rules.truth)} failed logs, {rules.passed_total} logs without a failure", ""]
    out.append(f"{'':28}{'rules':>10}{'rules+model':>14}{'model alone':>14}")
    for title, attr, fmt in (
        ("accuracy", "accuracy", "{:.1%}"),
        ("macro F1 (reasons)", "macro_f1", "{:.3f}"),
        ('"No signature" share', "no_signature_share", "{:.1%}"),
        ("  where the log names a reason", "unexplained_share", "{:.1%}"),
        ("false fires, no failure", "false_fire_rate", "{:.1%}"),
    ):
        row = "".join(f"{fmt.format(getattr(score, attr)):>{width}}" for score, width in ((rules, 10), (both, 14), (alone, 14)))
        out.append(f"{title:28}{row}")
    out.append(f"model helped on {len(evaluation.model_helped)} log(s), hurt on {len(evaluation.model_hurt)}")
    out += ["", f"{'reason':28}{'support':>8}  {'P':>5} {'R':>5} {'F1':>5}   {'P':>5} {'R':>5} {'F1':>5}  (rules | rules+model)"]
    before, after = rules.per_reason(), both.per_reason()
    for label in rules.labels:
        a, b = before[label], after[label]
        if not a["support"] and not b["precision"] and not a["precision"]:
            continue
        out.append(
            f"{names.get(label, label):28}{a['support']:>8}  {a['precision']:5.2f} {a['recall']:5.2f} {a['f1']:5.2f}"
            f"   {b['precision']:5.2f} {b['recall']:5.2f} {b['f1']:5.2f}"
        )
    out += ["", "confusions (true -> predicted: count), rules+model:"]
    for (truth, predicted), count in both.mistakes().most_common():
        out.append(f"  {names.get(truth, truth)} -> {names.get(predicted, predicted)}: {count}")
    for name in CONFIGURATIONS[:2]:
        for fired in evaluation.scores[name].passed_fired:
            out.append(f"FALSE FIRE ({name}): {fired}")
    return "\n".join(out)
