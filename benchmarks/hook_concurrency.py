"""Many `failclass hook decide` at once on one store, as a cluster-wide incident ends many
jobs within the same seconds (the default store is one SQLite file): each process's wall
time, its exit status, and what the store kept afterwards. It measures; it asserts no
timing. The store is created and migrated before the burst; each decision is about a new
job, with a real log from samples/.

    python benchmarks/hook_concurrency.py [--processes 16] [--database-url URL]
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

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "gpu_oom--nccl_p2p_setup_cuda_oom.log"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=16)
    parser.add_argument("--database-url", help="the store (default: a SQLite file of this run's own)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hook-concurrency-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAILCLASS_") and k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"FAILCLASS_CACHE_DIR": str(work / "cache"), "FAILCLASS_RULES_DIR": "", "PYTHONPYCACHEPREFIX": str(work / "bytecode")}
    store = args.database_url or f"sqlite:///{work / 'failclass.db'}"
    run = f"{os.getpid()}-{int(time.time())}"

    def decide(job: str) -> list[str]:
        facts = ["--job-id", job, "--attempt", "1", "--user", "u-" + job, "--gpus", "8", "--node", "gpu-07"]
        return [sys.executable, "-m", "failclass.cli", "hook", "decide", *facts, "--log", str(SAMPLE), "--database-url", store]

    subprocess.run(decide(f"setup-{run}"), env=env, capture_output=True, check=False)  # migrates; fills the caches
    started = time.perf_counter()
    burst = [
        (
            time.perf_counter(),
            subprocess.Popen(decide(f"burst-{run}-{n}"), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE),
        )
        for n in range(args.processes)
    ]
    took, failed = [], []
    for began, process in burst:
        _, err = process.communicate()
        took.append(time.perf_counter() - began)
        if process.returncode not in (10, 11, 12, 13, 14, 15, 0):
            failed.append(f"exit {process.returncode}: {err.decode(errors='replace').strip()[-300:]}")
    whole = time.perf_counter() - started
    print(
        f"{args.processes} concurrent `hook decide` on {store.split(':', 1)[0]}: "
        f"p50 {statistics.median(took):.2f} s, max {max(took):.2f} s, all done in {whole:.2f} s; "
        f"{len(failed)} failed; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}"
    )
    for line in failed:
        print("  " + line)


if __name__ == "__main__":
    main()
