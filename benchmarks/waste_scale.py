"""`failclass waste report` at cluster scale, against DuckDB doing the core of the same job.

1. Generate a calibrated trace (`failclass waste generate`) of a 1,000-GPU cluster
   (125 nodes of 8) at 15 s readings: with the default 70,000 jobs over 30 days, about
   178 M readings in one Parquet file, a log per job.
2. `failclass waste report --format json` over it in a child process, on a local process
   pool (`--processes`, all cores by default) and, with --dask N, on a Dask LocalCluster of
   N worker processes: seconds, readings/s, and the peak of the summed RSS of every process
   taking part (the command, its pool's workers or the cluster's), sampled every 0.1 s.
3. DuckDB (what an analyst would reach for) over the same Parquet in a child process, all
   cores: per-GPU time-weighted utilisation and idle-slot time with window functions; its
   per-job U and idle hours are compared with failclass's.

    python benchmarks/waste_scale.py [--jobs 70000] [--work DIR] [--reuse] [--dask 2] [--readme WHAT]

(needs DuckDB: pip install duckdb). With --readme the table goes into the README between
its waste_scale markers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from readme import readme_options, write_table

DUCKDB_SQL = """
WITH ordered AS (
  SELECT job, node, gpu, ts, util, coalesce(mem_used, 0) AS mem,
         lead(ts) OVER w - ts AS gap
  FROM read_parquet('{path}') WINDOW w AS (PARTITION BY job, node, gpu ORDER BY ts)
), usual AS (SELECT median(gap) AS dt FROM ordered WHERE gap IS NOT NULL),
timed AS (
  SELECT o.*, CASE WHEN gap IS NULL OR gap > 300 OR gap < 0 THEN u.dt ELSE gap END AS dt,
         (util = 0 AND mem = 0) AS idle
  FROM ordered o, usual u
), runs AS (
  SELECT *, sum(CASE WHEN idle THEN 0 ELSE 1 END) OVER (PARTITION BY job, node, gpu ORDER BY ts) AS run
  FROM timed
), idle_runs AS (
  SELECT job, node, gpu, run, sum(dt) AS seconds FROM runs WHERE idle GROUP BY ALL HAVING sum(dt) >= 60
), per_gpu AS (
  SELECT t.job, t.node, t.gpu, sum(t.util * t.dt) / sum(t.dt) AS u,
         coalesce(any_value(i.idle_s), 0) AS idle_s
  FROM timed t LEFT JOIN (SELECT job, node, gpu, sum(seconds) AS idle_s FROM idle_runs GROUP BY ALL) i
    USING (job, node, gpu)
  GROUP BY t.job, t.node, t.gpu
)
SELECT job, avg(u) AS u, sum(idle_s) / 3600 AS idle_h FROM per_gpu GROUP BY job
"""

DUCKDB_CHILD = """
import json, sys, time, duckdb
started = time.perf_counter()
connection = duckdb.connect()
connection.execute("SET enable_progress_bar = false")
rows = connection.execute(sys.argv[1]).fetchall()
print(json.dumps({"seconds": time.perf_counter() - started, "jobs": {job: [u, idle] for job, u, idle in rows}}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=70_000)
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--work", type=Path)
    parser.add_argument("--reuse", action="store_true", help="report on the trace already in --work")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="failclass's local pool (default all cores)")
    parser.add_argument("--dask", type=int, default=0, metavar="N", help="also run on a Dask LocalCluster of N worker processes")
    readme_options(parser, "waste_scale")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="waste-scale-"))
    if not args.reuse:
        generate = ["waste", "generate", str(work), "--jobs", str(args.jobs), "--nodes", "125", "--days", str(args.days)]
        subprocess.run([sys.executable, "-m", "failclass", *generate], check=True)
    readings = pq.ParquetFile(str(work / "samples.parquet")).metadata.num_rows
    runs = {f"failclass, local pool of {args.processes}": failclass_run(work, ["--processes", str(args.processes)])}
    if args.dask:
        runs[f"failclass, Dask LocalCluster of {args.dask} workers"] = dask_run(work, args.dask)
    duck = duckdb_run(work / "samples.parquet")
    results = {"jobs": args.jobs, "readings": readings, "parquet_mb": round((work / "samples.parquet").stat().st_size / 2**20)}
    results["runs"] = {name: summary(run, readings, duck) for name, run in runs.items()}
    results["duckdb"] = {
        "seconds": round(duck["seconds"], 1),
        "peak_rss_mb": duck["peak_mb"],
        "per_s": round(readings / duck["seconds"]),
    }
    print(json.dumps(results, indent=2))
    write_table(args, "benchmarks/waste_scale.py", table(results), f"{readings:,} readings, {args.jobs:,} jobs and their logs")


def failclass_run(work: Path, extra: list[str], also: tuple[int, ...] = ()) -> dict[str, object]:
    """The report into work/report.json; the peak RSS adds the processes ``also`` (a cluster's)."""
    out = work / "report.json"
    command = [
        sys.executable,
        "-m",
        "failclass",
        "waste",
        "report",
        str(work / "samples.parquet"),
        "--jobs",
        str(work / "jobs.csv"),
    ]
    command += ["--time-limit", "8", "--format", "json", *extra]
    with out.open("w") as stdout:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=stdout)
        peak = peak_rss(child.pid, child.poll, also)
        seconds = time.perf_counter() - started
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {child.returncode}")
    return {"seconds": seconds, "peak_mb": peak(), "jobs": dict(job_figures(out)), "json_mb": round(out.stat().st_size / 2**20)}


def dask_run(work: Path, workers: int) -> dict[str, object]:
    from distributed import LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        workers = tuple(nanny.process.pid for nanny in cluster.workers.values())  # type: ignore[attr-defined]
        here = os.getpid()  # the scheduler and the nannies run in this process
        return failclass_run(work, ["--executor", "dask", "--scheduler", cluster.scheduler_address], (*workers, here))


def peak_rss(root: int, finished: Callable[[], int | None], also: tuple[int, ...] = ()) -> Callable[[], int]:
    """Samples the summed RSS of ``root``, its descendants and ``also`` every 0.1 s until
    ``finished``; returns a function giving the peak in MB."""
    peak = 0
    while finished() is None:
        total = 0
        try:
            process = psutil.Process(root)
            family = [process, *process.children(recursive=True), *(psutil.Process(pid) for pid in also)]
            total = sum(p.memory_info().rss for p in family)
        except psutil.Error:
            pass  # a process ended between the listing and the reading: this sample is skipped
        peak = max(peak, total)
        time.sleep(0.1)
    return lambda: round(peak / 2**20)


def job_figures(report: Path) -> Iterator[tuple[str, tuple[float, float]]]:
    """Each job's U and idle GPU-hours from the report's jobs section, a row a line."""
    inside = False
    with report.open() as lines:
        for line in lines:
            if line.strip() == '"jobs": [':
                inside = True
            elif inside and line.strip() == "],":
                return
            elif inside:
                row = json.loads(line.strip().rstrip(","))
                yield row["job"], (row["util"], row["idle_gpu_h"])


def duckdb_run(path: Path) -> dict[str, object]:
    child = subprocess.Popen(
        [sys.executable, "-c", DUCKDB_CHILD, DUCKDB_SQL.format(path=path)], stdout=subprocess.PIPE, text=True
    )
    answer: list[str] = []
    reader = threading.Thread(target=lambda: answer.append(child.stdout.read() if child.stdout else ""))
    reader.start()
    peak = peak_rss(child.pid, child.poll)
    reader.join()
    found = json.loads(answer[0].strip().splitlines()[-1])
    return {"seconds": found["seconds"], "peak_mb": peak(), "jobs": found["jobs"]}


def summary(run: dict[str, object], readings: int, duck: dict[str, object]) -> dict[str, object]:
    ours, theirs = run["jobs"], duck["jobs"]
    assert isinstance(ours, dict) and isinstance(theirs, dict)
    return {
        "seconds": round(float(run["seconds"]), 1),  # type: ignore[arg-type]
        "per_s": round(readings / float(run["seconds"])),  # type: ignore[arg-type]
        "peak_rss_mb": run["peak_mb"],
        "json_mb": run["json_mb"],
        "time_vs_duckdb": round(float(run["seconds"]) / float(duck["seconds"]), 2),  # type: ignore[arg-type]
        "jobs_compared": len(set(ours) & set(theirs)),
        "largest_U_difference_points": max(abs(ours[j][0] - theirs[j][0]) for j in set(ours) & set(theirs)),
        "largest_idle_difference_gpu_h": max(abs(ours[j][1] - theirs[j][1]) for j in set(ours) & set(theirs)),
    }


def table(results: dict[str, object]) -> list[str]:
    rows = [
        "| run | what it computes | seconds | readings/s | peak RSS, all its processes | time vs DuckDB |",
        "|---|---|---:|---:|---:|---:|",
    ]
    runs = results["runs"]
    assert isinstance(runs, dict)
    for name, run in runs.items():
        rows.append(
            f"| `waste report --format json`, {name} | U, idle slots, never-used GPUs, phases, drops, causes from the logs,"
            f" loss curves, right-sizing ({run['json_mb']:,} MB of JSON) | {run['seconds']} | {run['per_s'] / 1e6:.2f} M"
            f" | {run['peak_rss_mb']:,} MB | {run['time_vs_duckdb']}x |"
        )
    duck = results["duckdb"]
    assert isinstance(duck, dict)
    rows.append(
        f"| DuckDB {_duckdb_version()} SQL, all cores | per-job U and idle-slot hours only (window functions) | {duck['seconds']}"
        f" | {duck['per_s'] / 1e6:.2f} M | {duck['peak_rss_mb']:,} MB | 1.00x |"
    )
    first = next(iter(runs.values()))
    rows += [
        "",
        f"Per job, failclass's U and idle-slot hours against DuckDB's ({first['jobs_compared']:,} jobs): largest difference"
        f" {first['largest_U_difference_points']:.2g} points of U, {first['largest_idle_difference_gpu_h']:.2g} GPU-hours idle.",
    ]
    return rows


def _duckdb_version() -> str:
    import duckdb

    return str(duckdb.__version__)


if __name__ == "__main__":
    main()
