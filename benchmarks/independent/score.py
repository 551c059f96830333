"""How right failclass is on a corpus that `generate.py` wrote (its rules were not written
from it): the share of failures named right, overall and where the root cause is early
under a misleading tail, per reason, and how many logs without a failure (runs killed from
outside, healthy noisy runs) got a reason anyway. The classifier runs in this process, with
the built-in model unless `--no-model`.

    python benchmarks/independent/generate.py --out /tmp/indep --files 400 --seed 11
    python benchmarks/independent/score.py /tmp/indep [--no-model] [--json] [--misses]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from failclass.classifier import Classifier
from failclass.matching.rules import load_rules
from failclass.model.artifact import load_configured


def score(corpus: Path, with_model: bool) -> dict[str, Any]:
    """The figures of one corpus (see the module's docstring), and each wrong answer."""
    ruleset = load_rules()
    model = (
        load_configured(None, set(ruleset.taxonomy.names()), lambda text: print(text, file=sys.stderr)) if with_model else None
    )
    classifier = Classifier(ruleset, model=model)
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
        "model": with_model,
        "logs": len(labels),
        "accuracy": {name: right[name] / total[name] for name in total},
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="a folder generate.py wrote (labels.jsonl and logs/)")
    parser.add_argument("--no-model", action="store_true", help="rules only")
    parser.add_argument("--json", action="store_true", help="one JSON object, misses included")
    parser.add_argument("--misses", action="store_true", help="list every wrong answer")
    args = parser.parse_args()
    result = score(args.corpus, not args.no_model)
    print(json.dumps(result) if args.json else render(result, args.misses))


if __name__ == "__main__":
    main()
