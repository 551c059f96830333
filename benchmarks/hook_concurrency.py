"""Many `failclass hook decide` at once on one store, as a cluster-wide incident ends many
jobs within the same seconds (the default store is one SQLite file): each process's wall
time, its exit status, and what the store kept afterwards. It measures; it asserts no
timing. The store is created and migrated before the burst; each decision is about a new
job, with a real log from samples/.

    python benchmarks/hook_concurrency.py [--processes 16 64] [--database-url URL] [--readme WHAT]

With --readme WHAT it writes its table into the README (between the hook_concurrency markers).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from readme import readme_options, write_table

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "gpu_oom--nccl_p2p_setup_cuda_oom.log"


def burst(processes: int, store: str, env: dict[str, str], log: Path) -> dict[str, object]:
    """``processes`` decisions at once on ``store``: each one's wall time and the failures."""
    run = f"{os.getpid()}-{int(time.time())}-{processes}"

    def decide(job: str) -> list[str]:
        facts = ["--job-id", job, "--attempt", "1", "--user", "u-" + job, "--gpus", "8", "--node", "gpu-07"]
        return [sys.executable, "-m", "failclass.cli", "hook", "decide", *facts, "--log", str(log), "--database-url", store]

    subprocess.run(decide(f"setup-{run}"), env=env, capture_output=True, check=False)  # migrates; fills the caches
    started = time.perf_counter()
    launched = [
        (
            time.perf_counter(),
            subprocess.Popen(decide(f"burst-{run}-{n}"), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE),
        )
        for n in range(processes)
    ]
    took, failed = [], []
    for began, process in launched:
        _, err = process.communicate()
        took.append(time.perf_counter() - began)
        if process.returncode not in (0, 10, 11, 12, 13, 14, 15):
            failed.append(f"exit {process.returncode}: {err.decode(errors='replace').strip()[-300:]}")
    whole = time.perf_counter() - started
    return {"processes": processes, "p50": statistics.median(took), "max": max(took), "whole": whole, "failed": failed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[16])
    parser.add_argument("--database-url", help="the store (default: a SQLite file of this run's own)")
    readme_options(parser, "hook_concurrency")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hook-concurrency-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAILCLASS_") and k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"FAILCLASS_CACHE_DIR": str(work / "cache"), "FAILCLASS_RULES_DIR": "", "PYTHONPYCACHEPREFIX": str(work / "bytecode")}
    store = args.database_url or f"sqlite:///{work / 'failclass.db'}"
    dialect = store.split(":", 1)[0].split("+", 1)[0]
    kind = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}.get(dialect, dialect)
    rows = ["| processes at once | p50 s | max s | all done s | failed |", "|---:|---:|---:|---:|---:|"]
    for processes in args.processes:
        found = burst(processes, store, env, SAMPLE)
        rows.append(f"| {processes} | {found['p50']:.2f} | {found['max']:.2f} | {found['whole']:.2f} | {len(found['failed'])} |")
        print(rows[-1], *("  " + line for line in found["failed"]), sep="\n", flush=True)  # type: ignore[attr-defined]
    detail = f"`hook decide` on one {kind} store, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} after"
    write_table(args, "benchmarks/hook_concurrency.py", rows, detail)


if __name__ == "__main__":
    main()
