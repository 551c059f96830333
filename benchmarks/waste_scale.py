"""`failclass waste` at cluster scale, against DuckDB doing the core of the same job.

1. Generate a calibrated trace (`failclass waste generate`) of a 1,000-GPU cluster
   (125 nodes of 8) at 15 s readings: with the default 70,000 jobs over 30 days, about
   170 M readings in one Parquet file, a log per job.
2. `failclass waste report` over it in a child process: seconds, readings/s, peak RSS.
3. DuckDB (what an analyst would reach for) over the same Parquet: per-GPU
   time-weighted utilisation and idle-slot time with window functions, in the same run;
   its U_i values are compared with failclass's.

    python benchmarks/waste_scale.py [--jobs 70000] [--work DIR]   (needs: pip install duckdb)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

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
)
SELECT t.job, t.node, t.gpu, sum(t.util * t.dt) / sum(t.dt) AS u,
       coalesce(any_value(i.idle_s), 0) AS idle_s
FROM timed t LEFT JOIN (SELECT job, node, gpu, sum(seconds) AS idle_s FROM idle_runs GROUP BY ALL) i
  USING (job, node, gpu)
GROUP BY t.job, t.node, t.gpu
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=70_000)
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--work", type=Path)
    parser.add_argument("--reuse", action="store_true", help="report on the trace already in --work")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="waste-scale-"))
    cli = [sys.executable, "-m", "failclass"]
    started = time.perf_counter()
    if not args.reuse:
        generate = [*cli, "waste", "generate", str(work), "--jobs", str(args.jobs), "--nodes", "125", "--days", str(args.days)]
        subprocess.run(generate, check=True)
    generated = time.perf_counter() - started
    readings = pq.ParquetFile(str(work / "samples.parquet")).metadata.num_rows
    started = time.perf_counter()
    report = subprocess.run(
        [
            *cli,
            "waste",
            "report",
            str(work / "samples.parquet"),
            "--jobs",
            str(work / "jobs.csv"),
            "--time-limit",
            "8",
            "--format",
            "json",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    answer = json.loads(report.stdout)
    headline = answer["headline"]
    results = {
        "jobs": args.jobs,
        "readings": readings,
        "parquet_mb": round((work / "samples.parquet").stat().st_size / 2**20, 1),
        "generate_s": None if args.reuse else round(generated, 1),
        "failclass_s": round(seconds, 1),
        "failclass_readings_per_s": round(readings / seconds),
        "failclass_peak_rss_mb": round(peak_mb),
        "headline": headline,
    }
    results.update(duckdb_baseline(work / "samples.parquet", readings, seconds, answer["jobs"]))
    print(json.dumps(results, indent=2))


def duckdb_baseline(path: Path, readings: int, failclass_s: float, jobs: list[dict[str, object]]) -> dict[str, object]:
    try:
        import duckdb
    except ImportError:
        return {"duckdb": "not installed (pip install duckdb)"}
    started = time.perf_counter()
    rows = duckdb.connect().execute(DUCKDB_SQL.format(path=path)).fetchall()
    seconds = time.perf_counter() - started
    per_job: dict[str, list[float]] = {}
    idle: dict[str, float] = {}
    for job, _node, _gpu, u, idle_s in rows:
        per_job.setdefault(job, []).append(u)
        idle[job] = idle.get(job, 0.0) + idle_s
    util_gap = max(abs(sum(per_job[j["job"]]) / len(per_job[j["job"]]) - j["util"]) for j in jobs)  # type: ignore[index, operator]
    idle_gap = max(abs(idle[j["job"]] / 3600 - j["idle_gpu_h"]) for j in jobs)  # type: ignore[index, operator]
    return {
        "duckdb_s": round(seconds, 1),
        "duckdb_readings_per_s": round(readings / seconds),
        "duckdb_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "duckdb_gpu_rows": len(rows),
        "failclass_vs_duckdb_speed": round(seconds / failclass_s, 2),
        "largest_job_U_difference_pct_points": round(util_gap, 6),
        "largest_job_idle_difference_gpu_h": round(idle_gap, 6),
        "note": "DuckDB computes only U_i and idle-slot time; failclass adds drops, stable phases, causes, logs and loss",
    }


if __name__ == "__main__":
    main()
