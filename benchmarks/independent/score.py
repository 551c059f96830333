"""How right failclass is on a corpus that `generate.py` wrote (its rules were not written
from it): the share of failures named right, overall and where the root cause is early
under a misleading tail, per reason, and how many logs without a failure (runs killed from
outside, healthy noisy runs) got a reason anyway. The classifier runs in this process, with
the built-in model unless `--no-model`.

    python benchmarks/independent/generate.py --out /tmp/indep --files 400 --seed 11
    python benchmarks/independent/score.py /tmp/indep [--no-model] [--json] [--misses]

Several corpora (seeds) are scored one by one and pooled; `--readme` writes the table into
the README between its `independent_score` markers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from readme import write_between

from failclass.classifier import Classifier
from failclass.matching.rules import load_rules
from failclass.model.artifact import load_configured

GROUPS = ("failure", "early root cause", "no failure")


def classifier_of(with_model: bool) -> Classifier:
    ruleset = load_rules()
    model = (
        load_configured(None, set(ruleset.taxonomy.names()), lambda text: print(text, file=sys.stderr)) if with_model else None
    )
    return Classifier(ruleset, model=model)


def score(corpus: Path, classifier: Classifier) -> dict[str, Any]:
    """The figures of one corpus (see the module's docstring), and each wrong answer."""
    labels = [json.loads(line) for line in (corpus / "labels.jsonl").read_text().splitlines() if line.strip()]
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    per_reason: dict[str, Counter[str]] = {}
    misses = []
    for label in labels:
        result = classifier.classify_path(corpus / label["path"])
        group = "failure" if label["kind"] == "failure" else "no failure"
        groups = [group] + (["early root cause"] if label.get("early") else [])
        ok = result.reason == label["reason"]
        for name in groups:
            total[name] += 1
            right[name] += ok
        counts = per_reason.setdefault(label["reason"], Counter())
        counts["support"] += 1
        counts["right"] += ok
        if not ok:
            misses.append(
                {
                    "path": label["path"],
                    "kind": label["kind"],
                    "truth": label["reason"],
                    "answer": result.reason,
                    "source": result.source,
                }
            )
    return {
        "corpus": str(corpus),
        "model": classifier.model is not None,
        "logs": len(labels),
        "accuracy": {name: right[name] / total[name] for name in total},
        "right": dict(right),
        "support": dict(total),
        "false_fires": total["no failure"] - right["no failure"],
        "per_reason": {reason: counts["right"] / counts["support"] for reason, counts in sorted(per_reason.items())},
        "misses": misses,
    }


def render(result: dict[str, Any], show_misses: bool) -> str:
    out = [f"{result['corpus']}: {result['logs']} logs, model {'on' if result['model'] else 'off'}"]
    for name, accuracy in result["accuracy"].items():
        out.append(f"  {name:18} {accuracy:7.1%} right of {result['support'][name]}")
    out.append(f"  logs without a failure given a reason: {result['false_fires']} of {result['support'].get('no failure', 0)}")
    out.append("  per reason: " + ", ".join(f"{reason} {share:.0%}" for reason, share in result["per_reason"].items()))
    if show_misses:
        out += [f"  MISS {m['path']} ({m['kind']}): {m['truth']} -> {m['answer']} ({m['source']})" for m in result["misses"]]
    return "\n".join(out)


def readme_rows(results: list[dict[str, Any]]) -> list[str]:
    """One row per corpus and the pooled row: right / support per group, false fires."""
    header = ["| corpus | failures named right | root cause early, named right | logs without a failure given a reason |"]
    rows = [*header, "|---|---:|---:|---:|"]

    def cells(right: Counter[str], support: Counter[str]) -> str:
        shares = [f"{right[g] / support[g]:.1%} of {support[g]}" if support[g] else "-" for g in GROUPS[:2]]
        return " | ".join([*shares, f"{support[GROUPS[2]] - right[GROUPS[2]]} of {support[GROUPS[2]]}"])

    pooled_right: Counter[str] = Counter()
    pooled_support: Counter[str] = Counter()
    for result in results:
        right, support = Counter(result["right"]), Counter(result["support"])
        pooled_right += right
        pooled_support += support
        rows.append(f"| {Path(result['corpus']).name} | {cells(right, support)} |")
    rows.append(f"| **all {sum(r['logs'] for r in results)} logs** | {cells(pooled_right, pooled_support)} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, nargs="+", help="folders generate.py wrote (labels.jsonl and logs/)")
    parser.add_argument("--no-model", action="store_true", help="rules only")
    parser.add_argument("--json", action="store_true", help="one JSON object per corpus, misses included")
    parser.add_argument("--misses", action="store_true", help="list every wrong answer")
    parser.add_argument("--readme", metavar="WHAT", help="write the table into README.md, saying WHAT the corpora are")
    args = parser.parse_args()
    classifier = classifier_of(not args.no_model)
    results = [score(corpus, classifier) for corpus in args.corpus]
    for result in results:
        print(json.dumps(result) if args.json else render(result, args.misses))
    if args.readme is not None:
        heading = (
            f"Written by `benchmarks/independent/score.py --readme` ({args.readme}; model {'off' if args.no_model else 'on'}):"
        )
        write_between("independent_score", [heading, "", *readme_rows(results)])


if __name__ == "__main__":
    main()
