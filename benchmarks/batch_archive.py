"""`failclass batch` on an archive of about 40,000 failed-attempt logs of realistic size.

The archive: the analytics simulator's full-scale Philly trace (39,776 failed attempts,
each a log of training progress and a real failure excerpt), packed as one .tar.gz with
a folder per job and attempt. Then, through the real command line, wall time, MB/s
(uncompressed log bytes), attempts/s and the peak RSS of the run's largest process, for:
the local executor with 1 and 2 processes, and Dask on a LocalCluster of 2 worker
processes.

    python benchmarks/batch_archive.py [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from failclass.analytics.simulate import simulate

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def build_archive(work: Path) -> tuple[Path, int, int]:
    drawn = simulate(1.0, 4, work / "sim")
    failed = [row for row in drawn.attempts if row["reason"] is not None and row["status"] != "passed"]
    archive = work / "failed-attempts.tar.gz"
    size = 0
    with tarfile.open(archive, "w:gz") as tar:
        for row in failed:
            path = Path(row["log"])
            size += path.stat().st_size
            tar.add(path, arcname=f"logs/{row['job_id']}/attempt-{row['attempt']}/stdout.log")
    shutil.rmtree(work / "sim" / "logs")
    return archive, len(failed), size


WRAPPER = (
    "import json, resource, subprocess, sys, time;"
    "t = time.perf_counter(); p = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
    "print(json.dumps({'rc': p.returncode, 'err': p.stderr[-2000:], 'seconds': time.perf_counter() - t,"
    " 'peak_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))"
)


def measured(command: list[str]) -> dict[str, float]:
    """Wall time, and the peak RSS of the largest process of the run (runner or worker)."""
    done = subprocess.run([sys.executable, "-c", WRAPPER, *command], cwd=ROOT, capture_output=True, text=True, check=True)
    report = json.loads(done.stdout)
    if report["rc"] != 0:
        raise RuntimeError(report["err"])
    return {"seconds": round(report["seconds"], 1), "peak_rss_mb": round(report["peak_mb"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="failclass-batch-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    archive, attempts, size = build_archive(work)
    print(
        f"archive: {attempts:,} failed attempts, {size / 1e6:,.0f} MB of logs, {archive.stat().st_size / 1e6:,.0f} MB gzipped ({time.perf_counter() - started:.0f} s to build)"
    )
    cli = [sys.executable, "-m", "failclass.cli", "batch", str(archive)]
    results = {}
    print(f"{'executor':28}{'seconds':>9}{'MB/s':>8}{'attempts/s':>12}{'largest RSS MB':>16}")
    runs = [("local, 1 process", ["--processes", "1"]), ("local, 2 processes", ["--processes", "2"])]
    for title, options in runs:
        row = measured([*cli, "--out", str(work / title.replace(" ", "_").replace(",", "")), *options])
        results[title] = row
        print(
            f"{title:28}{row['seconds']:>9}{size / 1e6 / row['seconds']:>8.1f}{attempts / row['seconds']:>12.0f}{row['peak_rss_mb']:>13}"
        )
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        title = "dask, LocalCluster 2 workers"
        row = measured([*cli, "--out", str(work / "dask"), "--executor", "dask", "--scheduler", cluster.scheduler_address])
        workers = set(cluster.scheduler_info["workers"])
    results[title] = row
    print(
        f"{title:28}{row['seconds']:>9}{size / 1e6 / row['seconds']:>8.1f}{attempts / row['seconds']:>12.0f}{row['peak_rss_mb']:>16}  (runner; workers apart)"
    )

    def rows(folder: str) -> list[dict]:
        return [json.loads(line) for line in (work / folder / "results.jsonl").read_text().splitlines()]

    def without_worker(found: list[dict]) -> list[str]:
        return sorted(json.dumps({k: v for k, v in row.items() if k != "classified_by"}, sort_keys=True) for row in found)

    on_dask = rows("dask")
    same = without_worker(on_dask) == without_worker(rows("local_2_processes"))
    by_workers = sum(row.get("classified_by") in workers for row in on_dask)
    print(
        f"dask rows identical to local rows (but for classified_by): {same}; classified by the Dask workers: {by_workers} of {len(on_dask)}"
    )
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "batch_archive.json").write_text(
        json.dumps(
            {"attempts": attempts, "log_bytes": size, "runs": results, "dask_identical": same, "dask_worker_rows": by_workers},
            indent=1,
        )
        + "\n"
    )
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
