"""How often `failclass diff` alone, against the job's good run, finds the line a labeller
would point at (docs/TAXONOMY.md), on the corpus's development side (split `train`).

The issue's question is about the logs the rules answer "No signature" or wrongly: for
each, is there a good run of the same job to compare with, and is one of the diff's first
new lines the failure's evidence? A good run is a passing run of the very command that
printed the log before it failed: corpora/produced logs name their prelude's command
(`NAME.json`: `prelude`), corpora/passed/runs theirs (`program`). Public logs are excerpts
of threads and have none.

Because the rules answer every produced log right, that set is small; so the script also
measures the diff alone on every development-side log that has such a pair, as if no rule
knew its failure: the labeller's line is the rules' evidence (right on each of these logs,
which the corpus tests check), and the diff finds it when one of its first K new lines
holds an evidence line's text; and, as a first step past the diff alone, when the first
new line that records a failure (an exception, an error record, a fatal signal) does.

    python benchmarks/goodrun_diff.py [--top 1 3 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from failclass.classifier import Classifier  # noqa: E402
from failclass.contracts import Classification  # noqa: E402
from failclass.logs.diff import NewLine, new_lines, templates_of  # noqa: E402
from failclass.logs.ranks import read_lines  # noqa: E402
from failclass.logs.region import FAILURE_RECORD  # noqa: E402
from failclass.matching.taxonomy import NO_SIGNATURE  # noqa: E402
from failclass.model.corpus import read_manifest, resolve  # noqa: E402

PASSED_RUNS = ROOT / "corpora" / "passed" / "runs"


@dataclass(frozen=True)
class Pair:
    """A development-side log, the rules' answer on it, and its good run (None: none)."""

    log: Path
    label: str
    answer: Classification
    good: Path | None


def good_runs() -> dict[str, Path]:
    """Each passing run's command -> its log."""
    found = {}
    for meta in sorted(PASSED_RUNS.glob("*.json")):
        program = json.loads(meta.read_text()).get("program")
        if program:
            found[program] = meta.with_suffix(".log")
    return found


def pairs(classifier: Classifier) -> list[Pair]:
    runs = good_runs()
    chosen = []
    for entry in read_manifest():
        if entry.split != "train" or entry.origin not in ("public", "produced"):
            continue
        log = resolve(entry)
        meta = log.with_suffix(".json")
        prelude = json.loads(meta.read_text()).get("prelude") if entry.origin == "produced" and meta.is_file() else None
        chosen.append(Pair(log, entry.reason, classifier.classify_path(log), runs.get(prelude) if prelude else None))
    return chosen


def found_at(pair: Pair, new: list[NewLine]) -> int | None:
    """The rank (from 1) of the first new line that holds an evidence line of the rules."""
    wanted = [evidence.text.strip("…").strip() for evidence in pair.answer.evidence]
    return next((rank for rank, line in enumerate(new, 1) if any(text and text in line.text for text in wanted)), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top", type=int, nargs="+", default=[1, 3, 5], help="the diff's first K new lines")
    args = parser.parse_args()
    everything = pairs(Classifier())
    missed = [p for p in everything if p.answer.reason in (NO_SIGNATURE, None) or p.answer.reason != p.label]
    unnamed = [p for p in missed if p.label != NO_SIGNATURE]
    print(f"development side: {len(everything)} logs; answered No signature or wrongly by the rules: {len(missed)}")
    print(
        f"  of them with a failure to find (label not No signature): {len(unnamed)}; with a good run: {sum(p.good is not None for p in unnamed)}"
    )
    paired = [p for p in everything if p.good is not None and p.label != NO_SIGNATURE and p.answer.reason == p.label]
    ranks, shares, recorded = [], [], 0
    for pair in paired:
        assert pair.good is not None
        lines = read_lines(pair.log)
        new = new_lines(lines, templates_of(read_lines(pair.good)))
        ranks.append(found_at(pair, new))
        shares.append(len(new) / len(lines))
        recorded += found_at(pair, [line for line in new if FAILURE_RECORD.search(line.text)][:1]) is not None
    print(f"as if no rule knew them: {len(paired)} development-side logs with a good run of the same command")
    print(f"  new templates to read: median {statistics.median(shares):.0%} of the log's lines")
    for k in args.top:
        hits = sum(rank is not None and rank <= k for rank in ranks)
        print(
            f"  an evidence line among the diff's first {k} new lines: {hits} of {len(paired)} ({hits / max(len(paired), 1):.0%})"
        )
    found = [rank for rank in ranks if rank is not None]
    print(
        f"  among all its new lines: {len(found)} of {len(paired)} (the evidence's rank among them: median {statistics.median(found or [0])})"
    )
    print(f"  the first new line that records a failure (region.FAILURE_RECORD) is evidence: {recorded} of {len(paired)}")


if __name__ == "__main__":
    main()
