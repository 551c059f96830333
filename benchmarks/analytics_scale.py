"""Analytics at scale.

1. Table 7 (with Table 6 and repeats) over about a million attempts: a simulated trace
   at 10x Philly's failures (no logs), written as JSON Lines, read back and reported;
   seconds per step and peak RSS.
2. The round trip at full Philly scale: simulate (96,260-job trace, a log per attempt),
   classify every failed attempt's log, report, and compare Table 7 with the
   simulator's truth, reason by reason, with the classification error beside it.

    python benchmarks/analytics_scale.py [--skip-roundtrip] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import tempfile
import time
from pathlib import Path

from failclass.analytics.records import read_records
from failclass.analytics.report import build_report
from failclass.analytics.simulate import simulate
from failclass.classifier import Classifier
from failclass.matching.taxonomy import builtin_taxonomy
from failclass.model.artifact import BUILTIN_MODEL, load

HERE = Path(__file__).resolve().parent


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(label: str, results: dict[str, float], step):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    value = step()
    results[label] = round(time.perf_counter() - started, 2)
    print(f"  {label:48} {results[label]:8.2f} s   peak RSS {peak_mb():7.0f} MB", flush=True)
    return value


def million(work: Path) -> dict[str, float]:
    results: dict[str, float] = {}
    print("Table 7 over a million attempts:")
    drawn = timed(
        "simulate (10x Philly failures, no logs)", results, lambda: simulate(10.3, 1, work / "million", write_logs=False)
    )
    results["attempts"] = len(drawn.attempts)
    del drawn
    records = timed("read the JSON Lines manifest", results, lambda: read_records([work / "million" / "attempts.jsonl"]))
    report = timed("Table 7, Table 6 and repeats", results, lambda: build_report(records, builtin_taxonomy()))
    results["failed_attempts"] = report.failed_attempts
    results["peak_rss_mb"] = round(peak_mb())
    print(f"  {len(records):,} attempts, {report.failed_attempts:,} failed")
    return results


def round_trip(work: Path) -> dict[str, object]:
    results: dict[str, float] = {}
    print("Round trip at full Philly scale:")
    out = work / "philly"
    truth = timed("simulate with logs", results, lambda: simulate(1.0, 2, out))
    taxonomy = builtin_taxonomy()
    classifier = Classifier(model=load(BUILTIN_MODEL, set(taxonomy.reasons)))
    rows = truth.attempts

    def classify_failed() -> tuple[list[dict[str, object]], int, int]:
        classified, right, total = [], 0, 0
        for row in rows:
            if row["status"] == "passed" or (row["status"] == "killed" and row["reason"] is None):
                classified.append(row)
                continue
            predicted = classifier.classify_path(Path(str(row["log"]))).reason
            total += 1
            right += predicted == row["reason"]
            classified.append({**row, "reason": predicted})
        return classified, right, total

    classified, right, total = timed("classify the failed attempts' logs", results, classify_failed)
    manifest = out / "classified.jsonl"
    manifest.write_text("".join(json.dumps(row) + "\n" for row in classified))
    expected = {r.reason_id: r for r in build_report(read_records([out / "attempts.jsonl"]), taxonomy).table7}
    got = {r.reason_id: r for r in build_report(read_records([manifest]), taxonomy).table7}
    log_bytes = sum(Path(str(r["log"])).stat().st_size for r in rows if r["status"] != "passed")
    print(f"  {total:,} failed attempts ({log_bytes / 1e6:,.0f} MB of logs), classification accuracy {right / total:.4f}")
    print(f"  {'reason':22}{'trials':>8}{'reported':>10}{'p50 RTF':>10}{'reported':>10}{'GPU-min %':>11}{'reported':>10}")
    comparison = []
    for reason, row in expected.items():
        other = got.get(reason)
        comparison.append({"reason": reason, "trials": row.trials, "reported": other.trials if other else 0})
        print(
            f"  {reason:22}{row.trials:>8}{(other.trials if other else 0):>10}{row.rtf_p50_min or 0:>10.2f}"
            f"{(other.rtf_p50_min or 0) if other else 0:>10.2f}{row.rtf_x_demand_pct:>11.2f}{(other.rtf_x_demand_pct if other else 0):>10.2f}"
        )
    results_all: dict[str, object] = {
        **results,
        "failed_attempts": total,
        "accuracy": round(right / total, 4),
        "log_mb": round(log_bytes / 1e6),
        "by_reason": comparison,
    }
    return results_all


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-roundtrip", action="store_true")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one, removed after)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="failclass-analytics-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, object] = {"million": million(work)}
    if not args.skip_roundtrip:
        results["round_trip"] = round_trip(work)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "analytics_scale.json").write_text(json.dumps(results, indent=1) + "\n")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
