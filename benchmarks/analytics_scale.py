"""Analytics at scale.

1. `failclass report` over about a million attempts: a simulated trace at 10x Philly's
   failures (no logs) as JSON Lines, and the same attempts as Parquet; each reported end to
   end in a subprocess (the Markdown report), its wall time, CPU time and peak RSS
   (wait4); the JSON Lines again with allocators that return freed blocks at once
   (RETURNING). Then the JSON Lines (9 parts of 32 MB) and a copy of the Parquet in row
   groups of 131,072 attempts (read in 9 parts of about 4 MB of data: the Parquet above is
   one part) each in one process, in parts by a local pool of two processes and by a Dask
   LocalCluster of two worker processes (``--executor dask``: its workers' CPU time added,
   their memory not in the peak). With ``--before DIR`` (a checkout of an earlier commit)
   the same command of that checkout too, on the JSON Lines, for the comparison.
2. The round trip at full Philly scale: simulate (96,260-job trace, a log per attempt),
   classify every failed attempt's log, report, and compare Table 7 with the
   simulator's truth, reason by reason, with the classification error beside it.

    python benchmarks/analytics_scale.py [--skip-roundtrip] [--work DIR] [--before DIR]
        [--readme WHAT]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pyarrow import parquet
from readme import readme_options, write_table

from failclass.analytics.columns import Attempts
from failclass.analytics.records import read_attempts
from failclass.analytics.report import build_report
from failclass.analytics.simulate import simulate
from failclass.classifier import Classifier
from failclass.matching.taxonomy import builtin_taxonomy
from failclass.model.artifact import BUILTIN_MODEL, load

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(label: str, results: dict[str, float], step):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    value = step()
    results[label] = round(time.perf_counter() - started, 2)
    print(f"  {label:48} {results[label]:8.2f} s   peak RSS {peak_mb():7.0f} MB", flush=True)
    return value


# Run from a fresh small process: a child forked from this one (grown by the simulation)
# would count this one's pages in its peak RSS.
LAUNCH = """
import os, subprocess, sys, time
started = time.perf_counter()
child = subprocess.Popen([sys.executable, "-m", "failclass.cli", "report", *sys.argv[1:]], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(time.perf_counter() - started, usage.ru_maxrss, os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime)
"""


GROUP_ROWS = 1 << 17  # attempts in a row group of the Parquet copy read in parts
GROUPED_PART_BYTES = 4_000_000  # of its row groups' data in a part: 9 parts
# Allocators that give freed blocks back at once: Arrow's on glibc, whose blocks above
# 256 KB (numpy's arrays too) are mapped apart. Where the rest of the peak RSS goes.
RETURNING = {"ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_MMAP_THRESHOLD_": "262144"}


def report_run(
    manifest: Path, checkout: Path = ROOT, env: dict[str, str] | None = None, options: tuple[str, ...] = ()
) -> tuple[float, float, float]:
    """`failclass report MANIFEST [OPTIONS]` of a checkout, end to end: (wall seconds, peak
    RSS MB, CPU seconds of it and of the processes it waited for)."""
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, str(manifest), *options],
        cwd=checkout,
        env={**os.environ, **(env or {}), "PYTHONPATH": str(checkout)},
        capture_output=True,
        text=True,
        check=True,
    )
    wall, peak_kb, status, cpu = done.stdout.split()
    if int(status):
        raise SystemExit(f"failclass report {manifest} ({checkout}) exited {status}")
    return round(float(wall), 2), round(int(peak_kb) / 1024), float(cpu)


def _cpu_s() -> float:
    """This process's CPU seconds (a Dask worker's, run there)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def executor_runs(manifests: list[tuple[str, Path, tuple[str, ...]]]) -> list[dict[str, object]]:
    """Each manifest (with its options) in one process, then read in parts by a pool of two
    processes and by a Dask LocalCluster of two worker processes (one thread each), their
    CPU time added."""
    from distributed import Client, LocalCluster

    measured = []
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with cluster, Client(cluster) as client:
        for label, path, options in manifests:
            for how, more in (("one process", ()), ("a pool of 2 processes", ("--processes", "2"))):
                measured.append(_measured(f"{label}, {how}", *report_run(path, options=(*options, *more))))
            before = sum(client.run(_cpu_s).values())
            dask = ("--executor", "dask", "--scheduler", cluster.scheduler_address)
            wall, peak, cpu = report_run(path, options=(*options, *dask))
            workers = sum(client.run(_cpu_s).values()) - before
            measured.append(_measured(f"{label}, Dask LocalCluster of 2 workers", wall, peak, cpu + workers))
    return measured


def _measured(label: str, wall: float, peak: float, cpu: float) -> dict[str, object]:
    print(f"  {label:56} {wall:8.2f} s  CPU {cpu:6.2f} s   peak RSS {peak:7.0f} MB", flush=True)
    return {"manifest": label, "wall_s": wall, "cpu_s": round(cpu, 2), "peak_rss_mb": peak}


def million(work: Path, before: Path | None) -> dict[str, object]:
    results: dict[str, object] = {}
    print("`failclass report` over a million attempts:")
    drawn = timed(
        "simulate (10x Philly failures, no logs)", results, lambda: simulate(10.3, 1, work / "million", write_logs=False)
    )
    results["attempts"] = len(drawn.attempts)
    results["failed_attempts"] = sum(a["reason"] is not None for a in drawn.attempts)
    del drawn
    jsonl, parquet_file = work / "million" / "attempts.jsonl", work / "million" / "attempts.parquet"
    parquet.write_table(read_attempts([jsonl]), parquet_file)
    size = {path: f"({path.stat().st_size / 1e6:,.0f} MB)" for path in (jsonl, parquet_file)}
    runs = [(f"JSON Lines {size[jsonl]}", jsonl, ROOT, None), (f"Parquet {size[parquet_file]}", parquet_file, ROOT, None)]
    runs.append((f"JSON Lines, `{' '.join(f'{k}={v}' for k, v in RETURNING.items())}`", jsonl, ROOT, RETURNING))
    runs += [(f"JSON Lines, {before.name} (before)", jsonl, before, None)] if before else []
    measured = [_measured(label, *report_run(path, checkout, env)) for label, path, checkout, env in runs]
    grouped = work / "million" / "attempts-groups.parquet"
    parquet.write_table(parquet.read_table(parquet_file), grouped, row_group_size=GROUP_ROWS)
    in_groups = f"Parquet in row groups of {GROUP_ROWS:,}"
    cut = [("JSON Lines", jsonl, ()), (in_groups, grouped, ("--part-bytes", str(GROUPED_PART_BYTES)))]
    results["report"] = measured + executor_runs(cut)
    return results


def million_table(results: dict[str, object]) -> list[str]:
    rows = ["| manifest | `failclass report` wall time | CPU time | peak RSS |", "|---|---:|---:|---:|"]
    for run in results["report"]:  # type: ignore[attr-defined]
        rows.append(f"| {run['manifest']} | {run['wall_s']:.1f} s | {run['cpu_s']:.1f} s | {run['peak_rss_mb']:,} MB |")
    return rows


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
    expected = {r.reason_id: r for r in build_report(Attempts(read_attempts([out / "attempts.jsonl"])), taxonomy).table7}
    got = {r.reason_id: r for r in build_report(Attempts(read_attempts([manifest])), taxonomy).table7}
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
    parser.add_argument("--before", type=Path, help="a checkout of an earlier commit, whose `failclass report` is run too")
    readme_options(parser, "million_attempts")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="failclass-analytics-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, object] = {"million": million(work, args.before)}
    counted = results["million"]
    detail = f"{counted['attempts']:,} attempts, {counted['failed_attempts']:,} failed"  # type: ignore[index]
    write_table(args, "benchmarks/analytics_scale.py --skip-roundtrip", million_table(counted), detail)  # type: ignore[arg-type]
    if not args.skip_roundtrip:
        results["round_trip"] = round_trip(work)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "analytics_scale.json").write_text(json.dumps(results, indent=1) + "\n")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
